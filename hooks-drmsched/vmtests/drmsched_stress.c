// SPDX-License-Identifier: GPL-2.0-only
/*
 * Hammer the mock backend from several processes at once, with lc_be
 * attached half of the time (policies swap under load): entities created and
 * closed with jobs in flight, some owners SIGKILLed mid-queue, several rings.
 * Every job a process waits for completes with its duration; at the end no
 * job or entity is left and the kernel log has no WARN/BUG (the harness
 * checks that).
 */
#include <signal.h>
#include <sys/wait.h>

#include "gx_vmtest.h"

#define NPROC 4
#define ROUNDS 40

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int worker(int idx, unsigned int nr_rings)
{
	static const char *const names[] = { "lc_worker", "infer_w", "trainer", "batch" };
	uint64_t s = 0x9e3779b97f4a7c15ull * (idx + 1), seq[16];
	int bad = 0;

	for (int r = 0; r < ROUNDS; r++) {
		unsigned int ring = rnd(&s) % nr_rings;
		int fd = gx_entity(ring, names[(idx + r) % 4], 0, NULL), n = 1 + rnd(&s) % 12, waited;
		struct gx_ms_wait w;

		if (fd < 0) {
			printf("worker %d: create on ring %u: %s\n", idx, ring, strerror(-fd));
			return 1;
		}
		for (int i = 0; i < n; i++) {
			if (gx_submit(fd, 50000 + rnd(&s) % 450000, &seq[i])) {
				printf("worker %d: submit: %s\n", idx, strerror(errno));
				bad++;
				n = i;
				break;
			}
		}
		/* wait for some, leave the rest in flight for close() */
		waited = n ? (int)(rnd(&s) % (n + 1)) : 0;
		for (int i = 0; i < waited; i++) {
			if (gx_wait(fd, seq[i], &w) || w.status || w.end_ns - w.start_ns < 50000) {
				printf("worker %d: job %d: status %d\n", idx, i, w.status);
				bad++;
			}
		}
		close(fd);
	}
	return bad ? 1 : 0;
}

/* A process that queues a lot and is SIGKILLed while it waits. */
static pid_t victim(unsigned int ring)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = gx_entity(ring, "victim", 0, NULL);

		for (int i = 0; fd >= 0 && i < 16; i++)
			gx_submit(fd, 2000000, NULL);
		pause();
		_exit(0);
	}
	return pid;
}

int main(void)
{
	struct gx_ms_stats st;
	struct gx_policy pol;
	pid_t pids[NPROC], v;
	int status, attached = 0;

	setvbuf(stdout, NULL, _IONBF, 0);
	close(gx_open_dev());
	st = gx_stats();
	printf("%u ring(s), %d processes x %d rounds\n", st.nr_rings, NPROC, ROUNDS);
	for (int i = 0; i < NPROC; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			_exit(worker(i, st.nr_rings));
	}
	/* swap the policy in and out and kill queue owners while they work */
	for (int k = 0; k < 6; k++) {
		v = victim(k % st.nr_rings);
		usleep(30000);
		if (attached) {
			gx_policy_detach(&pol);
			attached = 0;
		} else {
			int err = gx_policy_attach(&pol, "GXVM_POLICIES", "lc_be.bpf.o");

			CHECK(!err, "attach lc_be under load: %d", err);
			attached = !err;
		}
		kill(v, SIGKILL);
		CHECK(waitpid(v, &status, 0) == v, "victim");
	}
	for (int i = 0; i < NPROC; i++)
		CHECK(waitpid(pids[i], &status, 0) == pids[i] && WIFEXITED(status) &&
		      WEXITSTATUS(status) == 0, "worker %d failed", i);
	if (attached)
		gx_policy_detach(&pol);
	st = gx_stats_settled(0);
	for (int i = 0; i < 300 && st.live_jobs; i++) {	/* killed queues drain slowly in TCG */
		usleep(10000);
		st = gx_stats();
	}
	CHECK(st.live_jobs == 0 && st.live_entities == 0, "leaked: %llu jobs %llu entities",
	      (unsigned long long)st.live_jobs, (unsigned long long)st.live_entities);
	return gx_exit_code();
}

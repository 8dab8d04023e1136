// SPDX-License-Identifier: GPL-2.0-only
/*
 * LC/BE latency on the mock ring, measured in the VM: one latency-critical
 * process ("lc_server") submits short jobs one at a time with a think time,
 * while best-effort processes ("trainer") keep the ring flooded with long
 * jobs. Run twice, side by side: no policy, then policies/lc_be.bpf.o.
 * Prints LC P50/P99/max latency (submit -> end) and BE throughput.
 *
 * Asserted: every job completes with status 0 and its duration; an LC job's
 * latency is at least its duration; with lc_be the LC P99 is no worse than
 * without a policy beyond noise. The improvement itself is printed, not
 * asserted (timer noise in a VM).
 */
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "gx_vmtest.h"

#define NBE 3
#define BE_DEPTH 4			/* jobs each BE process keeps queued */
#define BE_DUR_NS (2000 * 1000ull)	/* 2 ms */
#define LC_DUR_NS (200 * 1000ull)	/* 200 us */
#define LC_THINK_US 2000
#define LC_JOBS 150
#define LC_WARMUP_US 50000

struct shared {
	volatile int stop;
	uint64_t be_jobs[NBE];
	uint64_t be_gpu_ns[NBE];
	int be_failed[NBE];
};

/* A BE process: keeps BE_DEPTH long jobs queued until told to stop. */
static int be_main(struct shared *sh, int idx)
{
	uint64_t q[BE_DEPTH], next = 0, done = 0;
	struct gx_ms_wait w;
	int fd, head = 0, n = 0, bad = 0;

	fd = gx_entity(0, "trainer", 0, NULL);
	if (fd < 0) {
		printf("BE %d: create: %s\n", idx, strerror(-fd));
		return 1;
	}
	for (;;) {
		while (n < BE_DEPTH && !sh->stop) {
			if (gx_submit(fd, BE_DUR_NS, &next)) {
				printf("BE %d: submit: %s\n", idx, strerror(errno));
				bad++;
				break;
			}
			q[(head + n++) % BE_DEPTH] = next;
		}
		if (!n)
			break;
		if (gx_wait(fd, q[head], &w) || w.status || w.end_ns - w.start_ns < BE_DUR_NS) {
			printf("BE %d: job %llu: status %d\n", idx, (unsigned long long)q[head],
			       w.status);
			bad++;
		} else {
			done++;
			sh->be_gpu_ns[idx] += w.end_ns - w.start_ns;
		}
		head = (head + 1) % BE_DEPTH;
		n--;
		if (bad)
			break;
	}
	sh->be_jobs[idx] = done;
	sh->be_failed[idx] = bad;
	close(fd);
	return bad ? 1 : 0;
}

struct result {
	uint64_t p50, p99, max, be_jobs;
	double secs;
	int ok;
};

static void run_phase(const char *name, struct shared *sh, struct result *r)
{
	uint64_t lat[LC_JOBS], t0, seq;
	pid_t pids[NBE];
	struct gx_ms_wait w;
	int fd, status;

	memset(sh, 0, sizeof(*sh));
	memset(r, 0, sizeof(*r));
	for (int i = 0; i < NBE; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			_exit(be_main(sh, i));
	}
	usleep(LC_WARMUP_US);	/* the ring is flooded before LC starts */
	fd = gx_entity(0, "lc_server", 0, NULL);
	CHECK(fd >= 0, "%s: create LC", name);
	t0 = gx_now_ns();
	for (int i = 0; fd >= 0 && i < LC_JOBS; i++) {
		int err = gx_submit(fd, LC_DUR_NS, &seq);

		CHECK(!err, "%s: LC submit %d: %d", name, i, err);
		err = err ? err : gx_wait(fd, seq, &w);
		CHECK(!err && !w.status, "%s: LC job %d: %d status %d", name, i, err, w.status);
		if (err)
			break;
		lat[r->ok++] = w.end_ns - w.submit_ns;
		CHECK(w.end_ns - w.submit_ns >= LC_DUR_NS, "%s: LC latency below its duration", name);
		usleep(LC_THINK_US);
	}
	r->secs = (gx_now_ns() - t0) / 1e9;
	sh->stop = 1;
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < NBE; i++) {
		CHECK(waitpid(pids[i], &status, 0) == pids[i] && WIFEXITED(status) &&
		      WEXITSTATUS(status) == 0, "%s: BE %d failed", name, i);
		CHECK(sh->be_jobs[i] > 0, "%s: BE %d ran no job", name, i);
		r->be_jobs += sh->be_jobs[i];
	}
	CHECK(r->ok == LC_JOBS, "%s: %d of %d LC jobs completed", name, r->ok, LC_JOBS);
	qsort(lat, r->ok, sizeof(lat[0]), gx_cmp_u64);
	r->p50 = gx_percentile(lat, r->ok, 50);
	r->p99 = gx_percentile(lat, r->ok, 99);
	r->max = r->ok ? lat[r->ok - 1] : 0;
}

static void print_row(const char *name, const struct result *r)
{
	printf("%-8s %10.3f %10.3f %10.3f %12.1f %8d\n", name, r->p50 / 1e6, r->p99 / 1e6,
	       r->max / 1e6, r->be_jobs / r->secs, r->ok);
}

int main(void)
{
	struct result none, lcbe;
	struct gx_policy pol;
	struct shared *sh;
	char policy[16] = "?";
	FILE *f;
	int err;

	setvbuf(stdout, NULL, _IONBF, 0);
	close(gx_open_dev());
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	f = fopen("/sys/module/gpu_sched/parameters/sched_policy", "r");
	if (f) {
		if (!fgets(policy, sizeof(policy), f))
			strcpy(policy, "?");
		policy[strcspn(policy, "\n")] = 0;
		fclose(f);
	}

	run_phase("none", sh, &none);
	err = gx_policy_attach(&pol, "GXVM_POLICIES", "lc_be.bpf.o");
	CHECK(!err, "attach lc_be: %d", err);
	if (err)
		return gx_exit_code();
	run_phase("lc_be", sh, &lcbe);
	gx_policy_detach(&pol);

	printf("\nLC/BE on the mock ring: %d BE processes x %d queued %.1f ms jobs, LC %d x %.1f ms jobs"
	       " every %.1f ms; drm_sched sched_policy=%s (0 RR, 1 FIFO)\n",
	       NBE, BE_DEPTH, BE_DUR_NS / 1e6, LC_JOBS, LC_DUR_NS / 1e6, LC_THINK_US / 1e3, policy);
	printf("%-8s %10s %10s %10s %12s %8s\n", "policy", "LC P50 ms", "LC P99 ms", "LC max ms",
	       "BE jobs/s", "LC jobs");
	print_row("none", &none);
	print_row("lc_be", &lcbe);
	if (lcbe.p99)
		printf("LC P99 none/lc_be = %.2fx, P50 %.2fx\n", (double)none.p99 / lcbe.p99,
		       (double)none.p50 / lcbe.p50);
	/* must hold: lc_be never makes LC's tail worse, beyond 20 % + 2 ms of noise */
	CHECK(lcbe.p99 <= none.p99 + none.p99 / 5 + 2000000,
	      "lc_be made LC P99 worse: %.3f ms vs %.3f ms", lcbe.p99 / 1e6, none.p99 / 1e6);
	munmap(sh, sizeof(*sh));
	return gx_exit_code();
}

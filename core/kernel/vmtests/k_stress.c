// SPDX-License-Identifier: Apache-2.0
/*
 * Attach and detach under load: three processes keep faulting on the
 * selftest device and one keeps creating, binding and destroying tasks,
 * while this process attaches and detaches memory and scheduling policies
 * 10 times each (each unreg waits for the calls in flight). Afterwards: no
 * ejection, both kinds on the defaults, module refcount as before, every
 * worker exited cleanly; the harness fails the run on any kernel WARN/BUG.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"
#include "tools/kattach/gx_kattach.h"

#define WORKERS 4
#define ROUNDS 10

static char buf[1 << 16];

static void worker(int w)
{
	char out[1024], cmd[64];

	for (unsigned int i = 0;; i++) {
		if (w == WORKERS - 1) {
			unsigned int t = 40 + i % 8;

			snprintf(cmd, sizeof(cmd), "task-init %u %s", t, i % 2 ? "lc_x" : "be_y");
			kt_selftest(cmd, out, sizeof(out));
			snprintf(cmd, sizeof(cmd), "task-bind %u", t);
			kt_selftest(cmd, out, sizeof(out));
			snprintf(cmd, sizeof(cmd), "task-destroy %u", t);
		} else {
			snprintf(cmd, sizeof(cmd), "fault %u %u%s tgid=%d", (i * 5 + w * 11) % 48,
				 (i * 29 + w) % 512, i % 3 ? "" : " w", 200 + w);
		}
		if (kt_selftest(cmd, out, sizeof(out)) && !strstr(out, "does not exist"))
			_exit(2);
		/* Busy, but leave the attaching process some CPU (2 vCPUs). */
		usleep(500);
	}
}

int main(void)
{
	/* Quick to verify: under TCG a big program's verification takes seconds. */
	static const char *const mem[] = { "lru", "mru", "fifo", "prefetch_max" };
	static const char *const sched[] = { "lc_be", "fair_share" };
	pid_t pids[WORKERS];
	int attaches = 0, busy = 0, n_att = 0, n_det = 0, n_ej = 0, n_drop = 0;
	long ref0;
	char old[16];

	kt_require_module();
	kt_require_libbpf();
	kt_st(NULL, 0, "reset 6 48");
	ref0 = kt_settled_refcnt();
	kt_param("trace_hooks", "N", old, sizeof(old));
	kt_events_clear();
	for (int w = 0; w < WORKERS; w++) {
		pids[w] = fork();
		if (pids[w] == 0) {
			/* Never outlive the test (a timeout kills only the parent). */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			worker(w);
		}
	}
	for (int r = 0; r < ROUNDS; r++) {
		struct gx_kattach *m = NULL, *s = NULL;
		int err;

		err = gx_kattach__open(kt_policy(mem[r % 4]), &m);
		KT_CHECK(!err, "round %d: %s: %s\n%s", r, mem[r % 4], strerror(-err), gx_kattach_log);
		err = gx_kattach__open(kt_policy(sched[r % 2]), &s);
		KT_CHECK(!err, "round %d: %s: %s\n%s", r, sched[r % 2], strerror(-err),
			 gx_kattach_log);
		attaches += (m != NULL) + (s != NULL);
		usleep(20 * 1000);
		/* Counters restart at each attach: any non-zero one means calls ran. */
		kt_read(KT_DEBUGFS "/status", buf, sizeof(buf));
		busy += kt_count_lines(buf, " calls ") > kt_count_lines(buf, " calls 0 ");
		gx_kattach__destroy(m);
		gx_kattach__destroy(s);
		/* Drain every round: attr lines of lc_be would fill the ring otherwise. */
		kt_events(buf, sizeof(buf));
		n_att += kt_count_lines(buf, "attached ");
		n_det += kt_count_lines(buf, "detached ");
		n_ej += kt_count_lines(buf, "ejected");
		n_drop += kt_count_lines(buf, "dropped");
		if (r % 5 == 4)
			printf("round %d: %d attached so far\n", r + 1, attaches);
		fflush(stdout);
	}
	for (int w = 0; w < WORKERS; w++) {
		int status;

		kill(pids[w], SIGTERM);
		waitpid(pids[w], &status, 0);
		KT_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM,
			 "worker %d ended with status %#x (a selftest command failed)", w, status);
	}
	kt_param("trace_hooks", old[0] ? old : "Y", NULL, 0);
	KT_CHECK(busy > 0, "no round saw a policy call: the load did not overlap the attaches");
	KT_CHECK(!n_ej, "%d ejection(s) under load", n_ej);
	KT_CHECK(!n_drop, "events dropped: the counts below are not reliable");
	KT_CHECK(n_att == attaches && n_det == attaches,
		 "want %d attach and detach events, got %d and %d", attaches, n_att, n_det);
	kt_read(KT_DEBUGFS "/status", buf, sizeof(buf));
	KT_CHECK(kt_count_lines(buf, "none (defaults)") == 2, "not back to defaults:\n%s", buf);
	for (int t = 0; t < 150 && kt_refcnt() != ref0; t++)
		usleep(20000);
	KT_CHECK(kt_refcnt() == ref0, "refcount %ld, %ld before", kt_refcnt(), ref0);
	printf("%d attaches/detaches under load (%d worker processes; %d/%d rounds with policy "
	       "calls in flight), no ejection, refcount %ld\n", attaches, WORKERS, busy, ROUNDS,
	       kt_refcnt());
	return kt_finish("k_stress");
}

// SPDX-License-Identifier: Apache-2.0
/*
 * Crash safety: a loader that dies while its policy is attached.
 * A child attaches lru (memory) and lc_be (scheduling) and waits; while
 * another thread keeps faulting on the selftest device (so policy calls are
 * in flight), the child is SIGKILLed. Then: both kinds are back to the
 * defaults, the "detached" events are there, the module's refcount is what
 * it was before, and new policies attach. Also: a second memory policy
 * while one is attached gets -EBUSY and a kernel log line.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kt.h"
#include "tools/kattach/gx_kattach.h"

static char buf[1 << 16], ev[1 << 20], klog[1 << 20];
static atomic_int stop;
static atomic_long faults;

static void *hammer(void *arg)
{
	char out[1024], cmd[64];

	(void)arg;
	for (unsigned int i = 0; !atomic_load(&stop); i++) {
		snprintf(cmd, sizeof(cmd), "fault %u %u", (i * 7) % 32, (i * 13) % 512);
		/* Resident pages give no fault; both answers are fine here. */
		kt_selftest(cmd, out, sizeof(out));
		atomic_fetch_add(&faults, 1);
	}
	return NULL;
}

static pid_t spawn_holder(int *rfd)
{
	int p[2];
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		struct gx_kattach *m, *s;

		/* A holder outliving the test would keep its policies attached. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[0]);
		if (gx_kattach__open(kt_policy("lru"), &m) ||
		    gx_kattach__open(kt_policy("lc_be"), &s)) {
			fprintf(stderr, "holder: %s\n", gx_kattach_log);
			_exit(3);
		}
		if (write(p[1], "A", 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	close(p[1]);
	*rfd = p[0];
	return pid;
}

int main(void)
{
	struct gx_kattach *k;
	pthread_t th;
	long ref0, ref1;
	char old[16];
	int rfd, status, err;
	char c;
	pid_t pid;

	kt_require_module();
	kt_require_libbpf();
	kt_st(NULL, 0, "reset 8 40");
	ref0 = kt_settled_refcnt();
	kt_events_clear();

	pid = spawn_holder(&rfd);
	if (!KT_CHECK(pid > 0 && read(rfd, &c, 1) == 1, "the holder did not attach"))
		return kt_finish("k_crash");
	kt_read(KT_DEBUGFS "/status", buf, sizeof(buf));
	KT_CHECK(strstr(buf, "gpu_mem_ops: lru\n") && strstr(buf, "gpu_sched_ops: lc_be\n"),
		 "holder's policies not shown as attached:\n%s", buf);
	ref1 = kt_refcnt();
	KT_CHECK(ref1 >= ref0 + 2, "refcount %ld with two policies attached, %ld before", ref1,
		 ref0);

	/* One memory policy at a time. */
	err = gx_kattach__open(kt_policy("fifo"), &k);
	KT_CHECK(err == -EBUSY, "second memory policy: want -EBUSY, got %d", err);
	if (!err)
		gx_kattach__destroy(k);
	kt_dmesg(klog, sizeof(klog));
	KT_CHECK(strstr(klog, "cannot attach fifo (gpu_mem_ops): lru is attached"),
		 "no kernel log line for the refused second attach");
	printf("second memory policy refused: %s\n", strerror(-err));

	/* The holder's policy runs... */
	kt_events_clear();
	kt_st(NULL, 0, "fault 36 0");
	kt_st(NULL, 0, "fault 36 200");
	kt_events(ev, sizeof(ev));
	KT_CHECK(kt_count_lines(ev, "hook gpu_block_access id=36") == 2,
		 "lru is not called while attached:\n%s", ev);
	/* ...then thousands of calls: keep only attach/detach/eject lines in the ring. */
	kt_param("trace_hooks", "N", old, sizeof(old));
	pthread_create(&th, NULL, hammer, NULL);
	usleep(300 * 1000);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	KT_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "holder did not die by SIGKILL");
	usleep(300 * 1000);
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	printf("holder SIGKILLed after %ld selftest faults in flight\n", atomic_load(&faults));

	KT_CHECK(kt_wait_file(KT_DEBUGFS "/status", "gpu_mem_ops: none (defaults)", true, 3000),
		 "memory policy still attached after its loader died");
	KT_CHECK(kt_wait_file(KT_DEBUGFS "/status", "gpu_sched_ops: none (defaults)", true, 3000),
		 "scheduling policy still attached after its loader died");
	kt_events(ev, sizeof(ev));
	KT_CHECK(kt_count_lines(ev, "detached lru (gpu_mem_ops)") == 1 &&
		 kt_count_lines(ev, "detached lc_be (gpu_sched_ops)") == 1,
		 "no detach events for the dead loader's policies");
	KT_CHECK(!kt_count_lines(ev, "dropped"), "events were dropped:\n%.2000s", ev);
	kt_param("trace_hooks", old[0] ? old : "Y", NULL, 0);
	for (int t = 0; t < 150 && kt_refcnt() != ref0; t++)
		usleep(20000);
	KT_CHECK(kt_refcnt() == ref0, "refcount %ld after the loader died, %ld before", kt_refcnt(),
		 ref0);
	printf("defaults resumed; module refcount back to %ld\n", kt_refcnt());

	/* Defaults really run, then a new attach works and is called. */
	kt_events_clear();
	kt_st(NULL, 0, "fault 38 0");
	kt_events(ev, sizeof(ev));
	KT_CHECK(!kt_count_lines(ev, "hook "), "a policy was called after the detach:\n%s", ev);
	err = gx_kattach__open(kt_policy("fifo"), &k);
	KT_CHECK(!err, "fifo after the crash: %s\n%s", strerror(-err), gx_kattach_log);
	if (!err) {
		kt_events_clear();
		kt_st(NULL, 0, "fault 39 0");
		kt_events(ev, sizeof(ev));
		KT_CHECK(kt_count_lines(ev, "hook gpu_block_activate id=39") == 1,
			 "the new policy is not called:\n%s", ev);
		gx_kattach__destroy(k);
	}
	return kt_finish("k_crash");
}

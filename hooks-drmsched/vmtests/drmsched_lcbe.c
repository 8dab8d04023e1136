// SPDX-License-Identifier: GPL-2.0-only
/*
 * policies/lc_be.bpf.o attached as struct_ops in the real kernel: entities of
 * lc_* / infer* processes get level HIGH, the longest timeslice and the HIGH
 * run queue; the others LOW, 200 us and the LOW run queue -- as on the
 * simulator (conformance/scenarios/lc_be.scn). The creator's comm is taken
 * both from the request and from the calling process. After the detach,
 * new entities get the stock defaults again.
 *
 * Then policies/fair_share.bpf.o with the shape of fair_share.scn: one
 * process's timeslice is split between its groups; a 9th bind is refused.
 */
#include <sys/prctl.h>
#include <sys/wait.h>

#include "gx_vmtest.h"

#define DUR_NS (500 * 1000ull)

struct want {
	const char *comm;
	unsigned int level, timeslice_us, drm_priority;
};

static void check_entity(int fd, const struct want *w, const char *when)
{
	struct gx_ms_info info;

	CHECK(!gx_info(fd, &info), "info");
	CHECK(!strcmp(info.comm, w->comm), "%s: comm '%s', want '%s'", when, info.comm, w->comm);
	CHECK(info.level == w->level, "%s: %s level %u, want %u", when, w->comm, info.level,
	      w->level);
	CHECK(info.timeslice_us == w->timeslice_us, "%s: %s timeslice %u, want %u", when,
	      w->comm, info.timeslice_us, w->timeslice_us);
	CHECK(info.drm_priority == w->drm_priority, "%s: %s drm priority %u, want %u", when,
	      w->comm, info.drm_priority, w->drm_priority);
}

static void run_one_job(int fd)
{
	struct gx_ms_wait w;
	uint64_t seq = 0;

	CHECK(!gx_submit(fd, DUR_NS, &seq), "submit");
	CHECK(!gx_wait(fd, seq, &w) && !w.status && w.end_ns - w.start_ns >= DUR_NS,
	      "job %llu: status %d", (unsigned long long)seq, w.status);
}

/* A child named @comm creates its entity without naming itself. */
static void check_from_current(const char *comm, const struct want *w)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		int fd;

		prctl(PR_SET_NAME, comm);
		fd = gx_entity(0, NULL, 0, NULL);
		CHECK(fd >= 0, "create in %s", comm);
		if (fd >= 0) {
			check_entity(fd, w, "from current");
			run_one_job(fd);
			check_entity(fd, w, "from current, bound");
			close(fd);
		}
		_exit(gx_failures ? 1 : 0);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0, "child %s failed", comm);
}

static void test_lc_be(void)
{
	static const struct want lc = { "lc_server", GX_LEVEL_HIGH, 100000, GX_MS_DRM_PRIO_HIGH };
	static const struct want inf = { "inference", GX_LEVEL_HIGH, 100000, GX_MS_DRM_PRIO_HIGH };
	static const struct want be = { "trainer", GX_LEVEL_LOW, 200, GX_MS_DRM_PRIO_LOW };
	static const struct want lc_child = { "lc_child", GX_LEVEL_HIGH, 100000,
					      GX_MS_DRM_PRIO_HIGH };
	static const struct want be_child = { "be_child", GX_LEVEL_LOW, 200, GX_MS_DRM_PRIO_LOW };
	const struct want *ws[3] = { &lc, &be, &inf };
	struct gx_ms_info info;
	struct gx_policy pol;
	int fd[3], err;

	err = gx_policy_attach(&pol, "GXVM_POLICIES", "lc_be.bpf.o");
	CHECK(!err, "attach lc_be: %d", err);
	if (err)
		return;
	for (int i = 0; i < 3; i++) {
		fd[i] = gx_entity(0, ws[i]->comm, 100 * (i + 1), NULL);
		CHECK(fd[i] >= 0, "create %s", ws[i]->comm);
		if (fd[i] < 0)
			goto out;
		check_entity(fd[i], ws[i], "after task_init");
	}
	for (int i = 0; i < 3; i++) {
		run_one_job(fd[i]);
		check_entity(fd[i], ws[i], "after task_bind");
	}
	check_from_current("lc_child", &lc_child);
	check_from_current("be_child", &be_child);
	for (int i = 0; i < 3; i++)
		close(fd[i]);
out:
	gx_policy_detach(&pol);

	/* detached: the stock defaults again */
	fd[0] = gx_entity(0, "lc_server", 100, NULL);
	CHECK(fd[0] >= 0 && !gx_info(fd[0], &info), "create after detach");
	CHECK(info.level == GX_LEVEL_MEDIUM && info.timeslice_us == 1024 &&
	      info.drm_priority == GX_MS_DRM_PRIO_NORMAL,
	      "after detach: level %u timeslice %u prio %u", info.level, info.timeslice_us,
	      info.drm_priority);
	close(fd[0]);
}

static void test_fair_share(void)
{
	struct gx_ms_info info;
	struct gx_policy pol;
	int one, many[9], err;
	uint64_t seq;

	err = gx_policy_attach(&pol, "GXVM_POLICIES", "fair_share.bpf.o");
	CHECK(!err, "attach fair_share: %d", err);
	if (err)
		return;
	one = gx_entity(0, "one", 100, NULL);
	for (int i = 0; i < 4; i++)
		many[i] = gx_entity(0, "many", 200, NULL);
	CHECK(one >= 0, "create one");
	run_one_job(one);
	for (int i = 0; i < 4; i++)
		run_one_job(many[i]);
	CHECK(!gx_info(one, &info) && info.timeslice_us == 1024, "one: timeslice %u, want 1024",
	      info.timeslice_us);
	/* bound with 4 live groups: 1024 / 4 */
	for (int i = 0; i < 4; i++)
		CHECK(!gx_info(many[i], &info) && info.timeslice_us == 256,
		      "many[%d]: timeslice %u, want 256", i, info.timeslice_us);
	for (int i = 4; i < 9; i++)
		many[i] = gx_entity(0, "many", 200, NULL);
	for (int i = 4; i < 8; i++)
		run_one_job(many[i]);
	/* the 9th group of the process: refused */
	err = gx_submit(many[8], DUR_NS, &seq);
	CHECK(err == -EPERM, "9th bind: %d, want -EPERM", err);
	CHECK(!gx_info(many[8], &info) && (info.flags & GX_MS_INFO_REJECTED), "flags %#x",
	      info.flags);
	/* a group goes, a new one may bind */
	close(many[1]);
	many[1] = gx_entity(0, "many", 200, NULL);
	run_one_job(many[1]);
	CHECK(!gx_info(many[1], &info) && (info.flags & GX_MS_INFO_BOUND), "rebind flags %#x",
	      info.flags);
	close(one);
	for (int i = 0; i < 9; i++)
		close(many[i]);
	gx_policy_detach(&pol);
}

int main(void)
{
	struct gx_ms_stats st;

	setvbuf(stdout, NULL, _IONBF, 0);
	close(gx_open_dev());	/* skips when the module is missing */
	test_lc_be();
	test_fair_share();
	st = gx_stats_settled(0);
	CHECK(st.live_jobs == 0 && st.live_entities == 0, "leaked: %llu jobs %llu entities",
	      (unsigned long long)st.live_jobs, (unsigned long long)st.live_entities);
	return gx_exit_code();
}

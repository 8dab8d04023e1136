// SPDX-License-Identifier: GPL-2.0-only
/*
 * No policy attached: every entity is a task with the stock defaults
 * (1024 us, MEDIUM -> DRM_SCHED_PRIORITY_NORMAL), jobs run one at a time on
 * the ring for their duration with consistent timestamps, bad requests get
 * their errno, and closing the files (or SIGKILLing their owner with jobs
 * queued) frees every job and entity.
 */
#include <signal.h>
#include <sys/wait.h>

#include "gx_vmtest.h"

#define NJOBS 6
#define DUR_NS (2 * 1000 * 1000ull)	/* 2 ms */
#define SLACK_NS (50 * 1000 * 1000ull)	/* hrtimer + scheduling in a VM */

static void test_defaults_and_timestamps(void)
{
	uint64_t tid_a, tid_b, seq[2][NJOBS], t0 = gx_now_ns();
	struct gx_ms_wait w[2][NJOBS];
	struct gx_ms_info info;
	int fd[2];

	fd[0] = gx_entity(0, "trainer", 4242, &tid_a);
	fd[1] = gx_entity(0, NULL, 0, &tid_b);
	CHECK(fd[0] >= 0 && fd[1] >= 0, "create: %d %d", fd[0], fd[1]);
	if (fd[0] < 0 || fd[1] < 0)
		return;
	CHECK(tid_a && tid_b > tid_a, "task ids %llu %llu", (unsigned long long)tid_a,
	      (unsigned long long)tid_b);

	CHECK(!gx_info(fd[0], &info), "info");
	CHECK(info.task_id == tid_a, "task id %llu", (unsigned long long)info.task_id);
	CHECK(info.tgid == 4242 && !strcmp(info.comm, "trainer"), "creator %u %s",
	      info.tgid, info.comm);
	CHECK(info.timeslice_us == 1024, "timeslice %u, want the stock 1024", info.timeslice_us);
	CHECK(info.level == GX_LEVEL_MEDIUM, "level %u, want MEDIUM", info.level);
	CHECK(info.drm_priority == GX_MS_DRM_PRIO_NORMAL, "drm priority %u, want NORMAL",
	      info.drm_priority);
	CHECK(info.flags == GX_MS_INFO_MANAGED, "flags %#x: not bound before a submission",
	      info.flags);

	/* creator taken from the caller when not given */
	CHECK(!gx_info(fd[1], &info), "info");
	CHECK(info.tgid == (unsigned int)getpid(), "tgid %u, want %d", info.tgid, getpid());
	{
		char self[GX_MS_COMM_LEN];

		gx_self_comm(self);
		CHECK(self[0] && !strcmp(info.comm, self), "comm '%s', want '%s'", info.comm, self);
	}

	/* interleave two entities' submissions */
	for (int i = 0; i < NJOBS; i++)
		for (int e = 0; e < 2; e++)
			CHECK(!gx_submit(fd[e], DUR_NS, &seq[e][i]), "submit %d/%d", e, i);
	for (int e = 0; e < 2; e++)
		for (int i = 0; i < NJOBS; i++) {
			CHECK(seq[e][i] == (uint64_t)i + 1, "seq %llu", (unsigned long long)seq[e][i]);
			CHECK(!gx_wait(fd[e], seq[e][i], &w[e][i]), "wait %d/%d", e, i);
		}
	for (int e = 0; e < 2; e++) {
		for (int i = 0; i < NJOBS; i++) {
			struct gx_ms_wait *x = &w[e][i];

			CHECK(x->status == 0, "status %d", x->status);
			CHECK(x->submit_ns >= t0 && x->start_ns >= x->submit_ns &&
			      x->end_ns > x->start_ns, "timestamps %llu %llu %llu",
			      (unsigned long long)x->submit_ns, (unsigned long long)x->start_ns,
			      (unsigned long long)x->end_ns);
			CHECK(x->end_ns - x->start_ns >= DUR_NS &&
			      x->end_ns - x->start_ns < DUR_NS + SLACK_NS,
			      "ran %llu ns for a %llu ns job",
			      (unsigned long long)(x->end_ns - x->start_ns),
			      (unsigned long long)DUR_NS);
			/* an entity's jobs run in order */
			if (i)
				CHECK(x->start_ns >= w[e][i - 1].end_ns, "job %d overlaps its predecessor", i);
		}
	}
	/* the ring runs one job at a time: no two jobs overlap */
	for (int a = 0; a < 2 * NJOBS; a++)
		for (int b = a + 1; b < 2 * NJOBS; b++) {
			struct gx_ms_wait *x = &w[a / NJOBS][a % NJOBS], *y = &w[b / NJOBS][b % NJOBS];

			CHECK(x->end_ns <= y->start_ns || y->end_ns <= x->start_ns,
			      "jobs %d and %d overlap on the ring", a, b);
		}

	CHECK(!gx_info(fd[0], &info), "info");
	CHECK(info.flags == (GX_MS_INFO_MANAGED | GX_MS_INFO_BOUND), "flags %#x after a submission",
	      info.flags);
	CHECK(info.jobs_done == NJOBS, "jobs_done %llu", (unsigned long long)info.jobs_done);
	CHECK(info.gpu_ns >= NJOBS * DUR_NS && info.gpu_ns < NJOBS * (DUR_NS + SLACK_NS),
	      "gpu_ns %llu", (unsigned long long)info.gpu_ns);
	CHECK(info.level == GX_LEVEL_MEDIUM && info.drm_priority == GX_MS_DRM_PRIO_NORMAL,
	      "binding changed the defaults: level %u prio %u", info.level, info.drm_priority);
	close(fd[0]);
	close(fd[1]);
}

static void test_bad_requests(void)
{
	struct gx_ms_create c = { 0 };
	struct gx_ms_stats st = gx_stats();
	struct gx_ms_wait w;
	struct gx_ms_info info;
	uint64_t seq;
	int fd = gx_open_dev(), err;

	CHECK(gx_submit(fd, DUR_NS, &seq) == -ENOENT, "submit before create");
	CHECK(gx_info(fd, &info) == -ENOENT, "info before create");
	c.ring = st.nr_rings;
	CHECK(gx_ioctl(fd, GX_MS_IOC_CREATE, &c) == -EINVAL, "ring %u out of range", c.ring);
	c.ring = 0;
	CHECK(!gx_ioctl(fd, GX_MS_IOC_CREATE, &c), "create");
	CHECK(gx_ioctl(fd, GX_MS_IOC_CREATE, &c) == -EBUSY, "second entity on one file");
	CHECK(gx_submit(fd, 0, &seq) == -EINVAL, "zero duration");
	CHECK(gx_submit(fd, GX_MS_MAX_DURATION_NS + 1, &seq) == -EINVAL, "too long");
	CHECK(gx_wait(fd, 99, &w) == -ENOENT, "wait for an unknown job");
	err = gx_submit(fd, DUR_NS, &seq);
	CHECK(!err && seq == 1, "submit: %d seq %llu", err, (unsigned long long)seq);
	CHECK(!gx_wait(fd, seq, &w) && !w.status, "wait");
	CHECK(gx_wait(fd, seq, &w) == -ENOENT, "a record is consumed by its wait");
	CHECK(ioctl(fd, _IO(GX_MS_IOC_MAGIC, 99)) < 0 && errno == ENOTTY, "unknown ioctl");
	close(fd);
}

/* Scenario replay names its tasks: an explicit id is taken, once at a time. */
static void test_explicit_task_ids(void)
{
	struct gx_ms_create c = { .task_id = 777 };
	struct gx_ms_info info;
	int a = gx_open_dev(), b = gx_open_dev();

	CHECK(!gx_ioctl(a, GX_MS_IOC_CREATE, &c) && c.task_id == 777, "id 777: %llu",
	      (unsigned long long)c.task_id);
	CHECK(!gx_info(a, &info) && info.task_id == 777, "ctx task id %llu",
	      (unsigned long long)info.task_id);
	c.task_id = 777;
	CHECK(gx_ioctl(b, GX_MS_IOC_CREATE, &c) == -EEXIST, "a live id taken twice");
	close(a);
	c.task_id = 777;
	CHECK(!gx_ioctl(b, GX_MS_IOC_CREATE, &c) && c.task_id == 777, "id 777 after its close");
	close(b);
}

/* Closing with jobs queued: they still run, everything is freed. */
static void test_close_with_queued_jobs(void)
{
	struct gx_ms_stats before = gx_stats_settled(0), after;
	uint64_t seq;
	int fd = gx_entity(0, "closer", 0, NULL);

	CHECK(fd >= 0, "create");
	for (int i = 0; i < 8; i++)
		CHECK(!gx_submit(fd, DUR_NS, &seq), "submit %d", i);
	close(fd);
	/* the last jobs may still be on the ring: give them their time */
	after = gx_stats_settled(before.live_jobs);
	CHECK(after.live_jobs == before.live_jobs, "live jobs %llu, was %llu",
	      (unsigned long long)after.live_jobs, (unsigned long long)before.live_jobs);
	CHECK(after.live_entities == before.live_entities, "live entities %llu, was %llu",
	      (unsigned long long)after.live_entities, (unsigned long long)before.live_entities);
}

/*
 * SIGKILL with jobs queued: drm_sched kills them (status -ESRCH), the adapter
 * drops them from its accounting, everything is freed, and the ring is not
 * left believing someone waits (a lone entity afterwards never yields).
 */
static void test_killed_owner(void)
{
	struct gx_ms_stats before = gx_stats_settled(0), after;
	struct gx_ms_info info;
	struct gx_ms_wait w;
	uint64_t seq[10];
	int pipefd[2], status, fd;
	pid_t pid;
	char c;

	CHECK(!pipe(pipefd), "pipe");
	pid = fork();
	if (pid == 0) {
		fd = gx_entity(0, "victim", 0, NULL);
		/* 2 s of work: more than drm_sched's 1 s flush of an exiting owner */
		for (int i = 0; fd >= 0 && i < 20; i++)
			gx_submit(fd, 50 * DUR_NS, NULL);
		(void)!write(pipefd[1], "x", 1);
		pause();
		_exit(0);
	}
	CHECK(pid > 0 && read(pipefd[0], &c, 1) == 1, "child did not submit");
	kill(pid, SIGKILL);
	CHECK(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status), "child not killed");
	close(pipefd[0]);
	close(pipefd[1]);
	after = gx_stats_settled(before.live_jobs);
	CHECK(after.live_jobs == before.live_jobs && after.live_entities == before.live_entities,
	      "after SIGKILL: %llu jobs %llu entities live, was %llu %llu",
	      (unsigned long long)after.live_jobs, (unsigned long long)after.live_entities,
	      (unsigned long long)before.live_jobs, (unsigned long long)before.live_entities);

	fd = gx_entity(0, "survivor", 0, NULL);
	CHECK(fd >= 0, "create after the kill");
	for (int i = 0; i < 10; i++)
		CHECK(!gx_submit(fd, DUR_NS / 2, &seq[i]), "submit");
	for (int i = 0; i < 10; i++)
		CHECK(!gx_wait(fd, seq[i], &w) && !w.status, "wait %d", i);
	CHECK(!gx_info(fd, &info) && info.yields == 0 && info.jobs_done == 10,
	      "lone entity after a kill: %llu yields, %llu jobs", (unsigned long long)info.yields,
	      (unsigned long long)info.jobs_done);
	close(fd);
}

int main(void)
{
	struct gx_ms_stats st;

	setvbuf(stdout, NULL, _IONBF, 0);
	st = gx_stats();
	CHECK(st.live_jobs == 0 && st.live_entities == 0, "leftovers at start: %llu jobs %llu entities",
	      (unsigned long long)st.live_jobs, (unsigned long long)st.live_entities);
	test_defaults_and_timestamps();
	test_bad_requests();
	test_explicit_task_ids();
	test_close_with_queued_jobs();
	test_killed_owner();
	st = gx_stats_settled(0);
	CHECK(st.live_jobs == 0 && st.live_entities == 0, "leaked: %llu jobs %llu entities",
	      (unsigned long long)st.live_jobs, (unsigned long long)st.live_entities);
	return gx_exit_code();
}

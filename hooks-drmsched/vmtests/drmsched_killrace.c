// SPDX-License-Identifier: GPL-2.0-only
/*
 * SIGKILL of a queue owner while the scheduler is busy popping its jobs.
 *
 * An owner that dies with more queued work than drm_sched's 1 s exit flush
 * gets its entity killed (drm_sched_entity_kill) while the scheduler's
 * worker may be in the middle of taking that entity's next job. On Linux
 * 6.12 that worker puts the entity back into its run queue's FIFO tree
 * after the kill took it out, and the tree keeps pointing into the freed
 * entity (README.md, "The kill race"). gx_mocksched checks every entity it
 * frees and says "still queued" in the kernel log (which fails the run);
 * the adapter's destroy holds the entity's jobs back while the kill runs,
 * so it never does.
 *
 * Each round: a victim queues ~1.5 s of 100 us jobs and is killed; a
 * neighbour on the same ring runs jobs throughout (the tree is walked at
 * every selection); after the round every job is freed and every entity.
 */
#include <signal.h>
#include <sys/wait.h>

#include "gx_vmtest.h"

#define ROUNDS 12
#define VICTIM_JOBS 15000
#define VICTIM_DUR_NS (100 * 1000ull)
#define NEIGHBOUR_DUR_NS (50 * 1000ull)

static int victim(int pipefd)
{
	int fd = gx_entity(0, "victim", 0, NULL), n = 0;

	for (int i = 0; fd >= 0 && i < VICTIM_JOBS; i++)
		n += !gx_submit(fd, VICTIM_DUR_NS, NULL);
	(void)!write(pipefd, &n, sizeof(n));
	pause();
	return 0;
}

int main(void)
{
	struct gx_ms_stats st;
	struct gx_ms_wait w;
	uint64_t seq, killed_at;
	int pipefd[2], status, nfd, queued;
	pid_t pid;

	setvbuf(stdout, NULL, _IONBF, 0);
	close(gx_open_dev());
	st = gx_stats_settled(0);
	CHECK(st.live_jobs == 0 && st.live_entities == 0, "leftovers at start: %llu jobs %llu entities",
	      (unsigned long long)st.live_jobs, (unsigned long long)st.live_entities);
	nfd = gx_entity(0, "neighbour", 0, NULL);
	CHECK(nfd >= 0, "neighbour: %d", nfd);
	if (nfd < 0)
		return gx_exit_code();
	for (int r = 0; r < ROUNDS; r++) {
		int jobs = 0;

		CHECK(!pipe(pipefd), "pipe");
		pid = fork();
		if (pid == 0)
			_exit(victim(pipefd[1]));
		CHECK(pid > 0 && read(pipefd[0], &queued, sizeof(queued)) == sizeof(queued),
		      "round %d: the victim did not submit", r);
		CHECK(queued == VICTIM_JOBS, "round %d: %d of %d jobs queued", r, queued, VICTIM_JOBS);
		kill(pid, SIGKILL);
		killed_at = gx_now_ns();
		/* the neighbour keeps the ring's tree in use while the owner's entity dies */
		while (waitpid(pid, &status, WNOHANG) == 0 && gx_now_ns() - killed_at < 20000000000ull) {
			int err = gx_submit(nfd, NEIGHBOUR_DUR_NS, &seq);

			CHECK(!err, "round %d: neighbour submit: %d", r, err);
			if (err)
				break;
			err = gx_wait(nfd, seq, &w);
			CHECK(!err && !w.status, "round %d: neighbour job: %d status %d", r, err, w.status);
			if (err)
				break;
			jobs++;
		}
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "round %d: victim not killed", r);
		close(pipefd[0]);
		close(pipefd[1]);
		/* the killed jobs are freed from a workqueue: give them time */
		st = gx_stats_settled(0);
		CHECK(st.live_jobs == 0 && st.live_entities == 1,
		      "round %d: after the kill %llu jobs %llu entities live", r,
		      (unsigned long long)st.live_jobs, (unsigned long long)st.live_entities);
		printf("round %2d: victim queued %d jobs, killed; neighbour ran %d jobs meanwhile\n", r,
		       queued, jobs);
	}
	close(nfd);
	st = gx_stats_settled(0);
	CHECK(st.live_jobs == 0 && st.live_entities == 0, "leaked: %llu jobs %llu entities",
	      (unsigned long long)st.live_jobs, (unsigned long long)st.live_entities);
	return gx_exit_code();
}

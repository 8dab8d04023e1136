// SPDX-License-Identifier: GPL-2.0-only
/*
 * SIGKILL of a queue owner while the scheduler is busy taking its jobs.
 *
 * An entity destroyed with jobs still queued is killed (drm_sched_entity_kill)
 * while the scheduler's worker may be in the middle of taking that entity's
 * next job. On Linux 6.12 that worker puts the entity back into its run
 * queue's FIFO tree after the kill took it out, and the tree keeps pointing
 * into the freed entity (README.md, "The kill race"). gx_mocksched checks
 * every entity it frees and warns "still queued" in the kernel log (which
 * fails the run); the adapter's destroy holds the entity's jobs back while
 * the kill runs, so it never does.
 *
 * Two ways an entity dies with jobs queued, each round with a neighbour
 * entity running jobs on the same ring (the tree is walked at every
 * selection):
 *  - exit: the owner is SIGKILLed with ~1.5 s of jobs queued; drm_sched's
 *    exit flush waits 1 s, then kills the rest (2 rounds: slow);
 *  - close: the owner closes its file with 2,000 short jobs queued and is
 *    SIGKILLed while the close waits for them (many rounds: the race is a
 *    matter of a few microseconds, so it takes many kills to hit).
 * After each round every job and the entity are freed. Throughout, gx_mocksched
 * stalls each job DELAY_US inside the worker's pop (prepare_delay_us), which
 * makes the race's window most of a job's cycle: without the adapter's hold
 * a kill lands in it within the first rounds.
 */
#include <signal.h>
#include <sys/wait.h>

#include "gx_vmtest.h"

#define EXIT_ROUNDS 2
#define EXIT_JOBS 15000
#define EXIT_DUR_NS (100 * 1000ull)
#define CLOSE_ROUNDS 30
#define CLOSE_JOBS 2000
#define CLOSE_DUR_NS (20 * 1000ull)
#define NEIGHBOUR_DUR_NS (50 * 1000ull)
#define DELAY_PARAM "/sys/module/gx_mocksched/parameters/prepare_delay_us"
#define DELAY_US 200

/* gx_mocksched's prepare_job stall (README.md, "The kill race"): 0 on failure. */
static int set_delay(unsigned int us)
{
	FILE *f = fopen(DELAY_PARAM, "w");
	int ok = f && fprintf(f, "%u\n", us) > 0;

	if (f)
		ok = !fclose(f) && ok;
	CHECK(ok, "write %u to " DELAY_PARAM ": %s", us, strerror(errno));
	return ok;
}

/* Queues @jobs jobs, tells the parent how many, then waits to be killed (or closes first). */
static int victim(int pipefd, int jobs, uint64_t dur, int close_first)
{
	int fd = gx_entity(0, "victim", 0, NULL), n = 0;

	for (int i = 0; fd >= 0 && i < jobs; i++)
		n += !gx_submit(fd, dur, NULL);
	(void)!write(pipefd, &n, sizeof(n));
	if (close_first && fd >= 0)
		close(fd);	/* waits for the queued jobs: the kill lands here */
	pause();
	return 0;
}

static int round_(int nfd, int r, int close_first)
{
	int jobs = close_first ? CLOSE_JOBS : EXIT_JOBS, pipefd[2], status = 0, queued = 0, ran = 0;
	pid_t reaped;
	uint64_t seq, killed_at;
	struct gx_ms_stats st;
	struct gx_ms_wait w;
	pid_t pid;

	if (pipe(pipefd)) {
		CHECK(0, "pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid == 0)
		_exit(victim(pipefd[1], jobs, close_first ? CLOSE_DUR_NS : EXIT_DUR_NS, close_first));
	if (pid < 0) {
		CHECK(0, "round %d: fork: %s", r, strerror(errno));
		close(pipefd[0]);
		close(pipefd[1]);
		return -1;
	}
	CHECK(read(pipefd[0], &queued, sizeof(queued)) == sizeof(queued),
	      "round %d: the victim did not submit", r);
	CHECK(queued == jobs, "round %d: %d of %d jobs queued", r, queued, jobs);
	if (close_first)
		usleep(1000 + (r * 7919) % 20000);	/* somewhere inside its close */
	kill(pid, SIGKILL);
	killed_at = gx_now_ns();
	/* the neighbour keeps the ring's tree in use while the owner's entity dies */
	/*
	 * Until the victim is gone (drm_sched's "1 s" exit flush took up to 8 s
	 * in an emulated guest), or 30 s.
	 */
	while ((reaped = waitpid(pid, &status, WNOHANG)) == 0 &&
	       gx_now_ns() - killed_at < 30000000000ull) {
		int err = gx_submit(nfd, NEIGHBOUR_DUR_NS, &seq);

		err = err ? err : gx_wait(nfd, seq, &w);
		CHECK(!err && !w.status, "round %d: neighbour job: %d status %d", r, err, w.status);
		if (err)
			break;
		ran++;
	}
	if (reaped == 0)	/* still dying: wait for it (the harness's timeout bounds this) */
		reaped = waitpid(pid, &status, 0);
	CHECK(reaped == pid && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	      "round %d: victim not killed", r);
	close(pipefd[0]);
	close(pipefd[1]);
	/* the killed jobs are freed from a workqueue: give them time */
	st = gx_stats_settled(0);
	CHECK(st.live_jobs == 0 && st.live_entities == 1,
	      "round %d: after the kill %llu jobs %llu entities live", r,
	      (unsigned long long)st.live_jobs, (unsigned long long)st.live_entities);
	return gx_failures ? -1 : ran;
}

int main(void)
{
	struct gx_ms_stats st;
	int nfd, ran, total = 0, done = 0;

	setvbuf(stdout, NULL, _IONBF, 0);
	close(gx_open_dev());
	st = gx_stats_settled(0);
	CHECK(st.live_jobs == 0 && st.live_entities == 0, "leftovers at start: %llu jobs %llu entities",
	      (unsigned long long)st.live_jobs, (unsigned long long)st.live_entities);
	/* a job's way through prepare_job takes DELAY_US: most of its cycle is the race's window */
	if (!set_delay(DELAY_US))
		return gx_exit_code();
	nfd = gx_entity(0, "neighbour", 0, NULL);
	CHECK(nfd >= 0, "neighbour: %d", nfd);
	if (nfd < 0) {
		set_delay(0);
		return gx_exit_code();
	}
	for (int r = 0; r < EXIT_ROUNDS; r++) {
		ran = round_(nfd, r, 0);
		if (ran < 0 || gx_failures)
			break;
		printf("exit round %d: victim killed with %d x %.1f ms queued; neighbour ran %d jobs meanwhile\n",
		       r, EXIT_JOBS, EXIT_DUR_NS / 1e6, ran);
	}
	for (int r = 0; r < CLOSE_ROUNDS && !gx_failures; r++) {
		ran = round_(nfd, r, 1);
		if (ran < 0)
			break;
		total += ran;
		done++;
	}
	printf("close rounds: %d of %d victims killed inside close() with %d x %.3f ms queued; neighbour ran %d jobs meanwhile\n",
	       done, CLOSE_ROUNDS, CLOSE_JOBS, CLOSE_DUR_NS / 1e6, total);
	close(nfd);
	set_delay(0);
	st = gx_stats_settled(0);
	CHECK(st.live_jobs == 0 && st.live_entities == 0, "leaked: %llu jobs %llu entities",
	      (unsigned long long)st.live_jobs, (unsigned long long)st.live_entities);
	return gx_exit_code();
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * Admission control in the real kernel: tests/bpf/schedtest_reject.bpf.o
 * refuses to bind processes whose name starts with "bad". Their first
 * submission fails with -EPERM, nothing is queued or leaked, later
 * submissions fail the same way, the entity can still be destroyed, and an
 * accepted neighbour runs normally. Detaching the policy lets a new "bad"
 * entity run.
 */
#include "gx_vmtest.h"

#define DUR_NS (1000 * 1000ull)

static void test_reject(void)
{
	struct gx_ms_stats base = gx_stats_settled(0), st;
	struct gx_ms_info info;
	struct gx_ms_wait w;
	struct gx_policy pol;
	int bad, good, err;
	uint64_t seq = 0;

	err = gx_policy_attach(&pol, "GXVM_TESTBPF", "schedtest_reject.bpf.o");
	CHECK(!err, "attach schedtest_reject: %d", err);
	if (err)
		return;
	bad = gx_entity(0, "bad_tenant", 300, NULL);
	good = gx_entity(0, "good_tenant", 301, NULL);
	CHECK(bad >= 0 && good >= 0, "create: %d %d", bad, good);
	if (bad < 0 || good < 0)
		goto out;

	err = gx_submit(bad, DUR_NS, &seq);
	CHECK(err == -EPERM, "first submission of a refused task: %d, want -EPERM", err);
	CHECK(!gx_info(bad, &info), "info");
	CHECK((info.flags & GX_MS_INFO_REJECTED) && !(info.flags & GX_MS_INFO_BOUND),
	      "flags %#x, want rejected", info.flags);
	CHECK(info.jobs_done == 0, "a refused task ran %llu jobs", (unsigned long long)info.jobs_done);
	err = gx_submit(bad, DUR_NS, &seq);
	CHECK(err == -EPERM, "second submission: %d, want -EPERM", err);
	CHECK(gx_wait(bad, 1, &w) == -ENOENT, "a refused job left a record");
	st = gx_stats();
	CHECK(st.live_jobs == base.live_jobs, "refused jobs leaked: %llu live, was %llu",
	      (unsigned long long)st.live_jobs, (unsigned long long)base.live_jobs);

	err = gx_submit(good, DUR_NS, &seq);
	CHECK(!err, "accepted task: %d", err);
	CHECK(!gx_wait(good, seq, &w) && !w.status && w.end_ns - w.start_ns >= DUR_NS,
	      "accepted job: status %d", w.status);
	CHECK(!gx_info(good, &info) && (info.flags & GX_MS_INFO_BOUND), "good flags %#x",
	      info.flags);
out:
	if (bad >= 0)
		close(bad);
	if (good >= 0)
		close(good);
	gx_policy_detach(&pol);

	st = gx_stats_settled(base.live_jobs);
	CHECK(st.live_jobs == base.live_jobs && st.live_entities == base.live_entities,
	      "after close: %llu jobs %llu entities", (unsigned long long)st.live_jobs,
	      (unsigned long long)st.live_entities);

	/* no policy: the same name binds */
	bad = gx_entity(0, "bad_tenant", 300, NULL);
	CHECK(bad >= 0 && !gx_submit(bad, DUR_NS, &seq), "bad_tenant without the policy");
	CHECK(!gx_wait(bad, seq, &w) && !w.status, "status %d", w.status);
	close(bad);
}

int main(void)
{
	struct gx_ms_stats st;

	setvbuf(stdout, NULL, _IONBF, 0);
	close(gx_open_dev());
	test_reject();
	st = gx_stats_settled(0);
	CHECK(st.live_jobs == 0 && st.live_entities == 0, "leaked: %llu jobs %llu entities",
	      (unsigned long long)st.live_jobs, (unsigned long long)st.live_entities);
	return gx_exit_code();
}

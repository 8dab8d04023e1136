// SPDX-License-Identifier: Apache-2.0
/*
 * The defaults of gpuext.ko's dispatch, driven through the selftest device,
 * against the stock rules hal/sim models (values worked out by hand below):
 *  - eviction: FIFO by activation, accesses to resident blocks never reorder;
 *  - prefetch: the 51 % bitmap tree with 64 KiB big pages;
 *  - scheduling: 1024 us, MEDIUM, binds accepted;
 * then the same steps with policies attached (mru reorders the victim,
 * prefetch_max takes the whole block, lc_be sets attributes by name).
 */
#include <errno.h>
#include <string.h>

#include "kt.h"
#include "tools/kattach/gx_kattach.h"

static char out[4096], ev[1 << 16];

static void expect_out(const char *cmd, const char *want)
{
	kt_st(out, sizeof(out), "%s", cmd);
	KT_CHECK(strstr(out, want), "'%s': want '%s' in the output, got:\n%s", cmd, want, out);
}

static void stock_eviction(void)
{
	kt_st(NULL, 0, "reset 2 16");
	kt_st(NULL, 0, "fault 0 0");
	kt_st(NULL, 0, "fault 1 0");
	expect_out("lists", "used 0 1\n");
	kt_st(NULL, 0, "fault 0 100");		/* resident block: no reorder */
	expect_out("lists", "used 0 1\n");
	expect_out("fault 2 0", "evict 0\n");	/* head of used */
	expect_out("lists", "used 1 2\n");
	expect_out("fault 3 0", "evict 1\n");
	expect_out("evict", "evict 2\n");
	expect_out("lists", "used 3\n");
	printf("stock eviction: FIFO by activation, accesses do not reorder\n");
}

static void stock_prefetch(void)
{
	kt_st(NULL, 0, "reset 4 8");
	/* faulted page 0 grows to its 64 KiB big page (0-15): 16/16 > 51 %, 16/32 not */
	expect_out("fault 0 0", "prefetch 0 1-15\n");
	/* 0-15 resident + 16-31 grown: node 0-31 full, 0-63 at 50 % */
	expect_out("fault 0 16", "prefetch 0 17-31\n");
	/* 0-47 of 0-63: 75 %; of 0-127: 37 % */
	expect_out("fault 0 32", "prefetch 0 33-63\n");
	/* a lone fault far away: only its big page */
	expect_out("fault 0 300", "prefetch 0 288-299\n");
	kt_st(out, sizeof(out), "fault 0 300");
	KT_CHECK(strstr(out, "resident: no fault"), "page 300 should be resident now: %s", out);
	printf("stock prefetch: 51 %% tree with big pages, regions as computed\n");
}

static void stock_sched(void)
{
	expect_out("task-init 5 lc_x", "task 5 timeslice_us=1024 level=1 bound=0 rejected=0");
	expect_out("task-bind 5", "bind 5 0\n");
	expect_out("task-destroy 5", "bound=1");
	printf("stock scheduling: 1024 us, MEDIUM, bind accepted\n");
}

static void with_policies(void)
{
	struct gx_kattach *k;
	int err;

	err = gx_kattach__open(kt_policy("mru"), &k);
	if (KT_CHECK(!err, "mru: %s\n%s", strerror(-err), gx_kattach_log)) {
		kt_st(NULL, 0, "reset 2 16");
		kt_st(NULL, 0, "fault 0 0");
		kt_st(NULL, 0, "fault 1 0");
		kt_events_clear();
		kt_st(out, sizeof(out), "fault 2 0");
		kt_events(ev, sizeof(ev));
		KT_CHECK(strstr(out, "evict 1\n"), "mru should evict the most recent block (1): %s",
			 out);
		/* mru has no gpu_evict_prepare: its access hook put 1 at the head. */
		KT_CHECK(kt_count_lines(ev, "default gpu_evict_prepare") == 1 &&
			 kt_count_lines(ev, "hook gpu_block_access id=2 ret=1") == 1,
			 "want the default evict_prepare and mru's access hook:\n%s", ev);
		gx_kattach__destroy(k);
	}
	err = gx_kattach__open(kt_policy("prefetch_max"), &k);
	if (KT_CHECK(!err, "prefetch_max: %s\n%s", strerror(-err), gx_kattach_log)) {
		kt_st(NULL, 0, "reset 4 8");
		expect_out("fault 0 7", "prefetch 0 0-6\nprefetch 0 8-511\n");
		gx_kattach__destroy(k);
	}
	err = gx_kattach__open(kt_policy("lc_be"), &k);
	if (KT_CHECK(!err, "lc_be: %s\n%s", strerror(-err), gx_kattach_log)) {
		kt_events_clear();
		expect_out("task-init 1 lc_server", "timeslice_us=100000 level=2");
		expect_out("task-init 2 trainer", "timeslice_us=200 level=0");
		kt_events(ev, sizeof(ev));
		KT_CHECK(kt_count_lines(ev, "attr task=1 timeslice_us=100000 level=high") == 1 &&
			 kt_count_lines(ev, "attr task=2 timeslice_us=200 level=low") == 1,
			 "attr events missing:\n%s", ev);
		kt_st(NULL, 0, "task-destroy 1");
		kt_st(NULL, 0, "task-destroy 2");
		gx_kattach__destroy(k);
	}
	printf("with policies: mru victim, prefetch_max region, lc_be attributes\n");
}

int main(void)
{
	kt_require_module();
	stock_eviction();
	stock_prefetch();
	stock_sched();
	kt_require_libbpf();	/* the defaults above need no libbpf */
	with_policies();
	return kt_finish("k_dispatch");
}

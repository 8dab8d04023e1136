/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpuext trace without a GPU (tools/gpuext/trace_lib.c): argument parsing,
 * log2 histogram maths, pairing launches with first-block starts, SM
 * imbalance, kernels.txt, the memtrace -> simulator trace conversion (read
 * back through the simulator's own validating reader), kerneldur's device
 * programs run in the interpreter, and the pack built from the real
 * tools/probes objects.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim/trace_io.h"
#include "testlib.h"
#include "trace_lib.h"

static int parse(struct trace_opts *o, char *err, size_t n, int argc, ...)
{
	static char *argv[32];
	va_list ap;

	va_start(ap, argc);
	for (int i = 0; i < argc; i++)
		argv[i] = va_arg(ap, char *);
	va_end(ap);
	argv[argc] = NULL;
	return trace_parse_args(argc, argv, o, err, n);
}

static void test_args(void)
{
	struct trace_opts o;
	char err[256];

	CHECK_EQ_INT(parse(&o, err, sizeof(err), 4, "trace", "threadhist", "--", "./app"), 0);
	CHECK(!strcmp(o.tool, "threadhist"));
	CHECK_EQ_INT(o.app_argc, 1);
	CHECK(!strcmp(o.app_argv[0], "./app"));
	CHECK_EQ_INT(o.per_thread, -1);
	CHECK_EQ_INT(o.interval_ms, 1000);

	/* Options before and after the tool; the app's own options are the app's. */
	CHECK_EQ_INT(parse(&o, err, sizeof(err), 13, "trace", "--kernel", "*gemm*", "memtrace",
			   "--per-thread", "--out", "t.txt", "--interval", "250", "--", "./app",
			   "--per-warp", "-x"), 0);
	CHECK(!strcmp(o.tool, "memtrace"));
	CHECK(!strcmp(o.kernel_glob, "*gemm*"));
	CHECK_EQ_INT(o.per_thread, 1);
	CHECK(!strcmp(o.out, "t.txt"));
	CHECK_EQ_INT(o.interval_ms, 250);
	CHECK_EQ_INT(o.app_argc, 3);
	CHECK(!strcmp(o.app_argv[1], "--per-warp"));

	CHECK_EQ_INT(parse(&o, err, sizeof(err), 2, "trace", "--list"), 0);
	CHECK(o.list);
	CHECK_EQ_INT(parse(&o, err, sizeof(err), 2, "trace", "--help"), 0);
	CHECK(o.help);

	CHECK_EQ_INT(parse(&o, err, sizeof(err), 2, "trace", "threadhist"), -EINVAL);
	CHECK_STR_CONTAINS(err, "after '--'");
	CHECK_EQ_INT(parse(&o, err, sizeof(err), 3, "trace", "--", "./app"), -EINVAL);
	CHECK_STR_CONTAINS(err, "name a tool");
	CHECK_EQ_INT(parse(&o, err, sizeof(err), 5, "trace", "threadhist", "./app", "--", "x"), -EINVAL);
	CHECK_STR_CONTAINS(err, "unexpected './app'");
	CHECK_EQ_INT(parse(&o, err, sizeof(err), 6, "trace", "--per-thread", "--per-warp", "t", "--", "a"),
		     -EINVAL);
	CHECK_STR_CONTAINS(err, "exclude each other");
	CHECK_EQ_INT(parse(&o, err, sizeof(err), 6, "trace", "--interval", "-5", "t", "--", "a"), -EINVAL);
	CHECK_STR_CONTAINS(err, "--interval '-5'");
	CHECK_EQ_INT(parse(&o, err, sizeof(err), 5, "trace", "--bogus", "t", "--", "a"), -EINVAL);
	CHECK_STR_CONTAINS(err, "unknown option '--bogus'");
	CHECK_EQ_INT(parse(&o, err, sizeof(err), 4, "trace", "t", "--sm", "90"), -EINVAL);
	CHECK_STR_CONTAINS(err, "sm_80");
	CHECK_EQ_INT(parse(&o, err, sizeof(err), 3, "trace", "t", "--pack-only"), -EINVAL);
	CHECK_STR_CONTAINS(err, "--dir");
	CHECK_EQ_INT(parse(&o, err, sizeof(err), 5, "trace", "t", "--pack-only", "--dir", "d"), 0);
	CHECK(o.pack_only);
}

static void test_hist(void)
{
	struct trace_hist h = { 0 };
	uint64_t dev[GX_KDUR_BUCKETS] = { 0 };
	char buf[32];

	CHECK_EQ_INT(trace_log2(0), 0);
	CHECK_EQ_INT(trace_log2(1), 0);
	CHECK_EQ_INT(trace_log2(2), 1);
	CHECK_EQ_INT(trace_log2(1023), 9);
	CHECK_EQ_INT(trace_log2(1024), 10);
	CHECK_EQ_INT(trace_log2(UINT64_MAX), 63);
	/* 90 values in [1024, 2048), 10 in [1 Mi, 2 Mi). */
	for (int i = 0; i < 90; i++)
		trace_hist_add(&h, 1024 + (uint64_t)i);
	for (int i = 0; i < 10; i++)
		trace_hist_add(&h, (1u << 20) + (uint64_t)i);
	CHECK_EQ_U64(h.n, 100);
	CHECK_EQ_U64(h.b[10], 90);
	CHECK_EQ_U64(h.b[20], 10);
	CHECK_EQ_U64(h.min, 1024);
	CHECK_EQ_U64(h.max, (1u << 20) + 9);
	CHECK_EQ_U64(trace_hist_quantile(&h, 0.5), 2048);
	CHECK_EQ_U64(trace_hist_quantile(&h, 0.90), 2048);
	CHECK_EQ_U64(trace_hist_quantile(&h, 0.91), 2u << 20);
	CHECK_EQ_U64(trace_hist_quantile(&h, 1.0), 2u << 20);

	/* The device's buckets (kerneldur) add in as bucket lower bounds. */
	memset(&h, 0, sizeof(h));
	dev[3] = 4;
	dev[12] = 1;
	trace_hist_add_buckets(&h, dev, GX_KDUR_BUCKETS);
	CHECK_EQ_U64(h.n, 5);
	CHECK_EQ_U64(h.b[3], 4);
	CHECK_EQ_U64(h.min, 8);
	CHECK_EQ_U64(h.max, 4096);
	CHECK_EQ_U64(trace_hist_quantile(&h, 0.8), 16);
	CHECK_EQ_U64(trace_hist_quantile(&h, 0.81), 8192);
	CHECK(!strcmp(trace_fmt_ns(1500, buf, sizeof(buf)), "1.5us"));
	CHECK(!strcmp(trace_fmt_ns(2500000, buf, sizeof(buf)), "2.50ms"));
}

static void test_launches(void)
{
	/* Kernels A and B interleaved; B's second start never came; A's starts arrive
	 * out of order (they pair by time, not by arrival). */
	struct gx_launch_rec l[5] = {
		{ .host_ns = 1000, .kernel_id = 0xA }, { .host_ns = 2000, .kernel_id = 0xB },
		{ .host_ns = 3000, .kernel_id = 0xA }, { .host_ns = 4000, .kernel_id = 0xB },
		{ .host_ns = 5000, .kernel_id = 0xC },
	};
	struct gx_rec_start s[4] = {
		{ .kernel_id = 0xA, .timer_ns = 3010 }, { .kernel_id = 0xB, .timer_ns = 2700 },
		{ .kernel_id = 0xA, .timer_ns = 1500 }, { .kernel_id = 0xC, .timer_ns = 4990 },
	};
	int64_t lat[5];

	CHECK_EQ_INT(trace_match_launches(l, 5, s, 4, lat), 4);
	CHECK_EQ_INT(lat[0], 500);
	CHECK_EQ_INT(lat[1], 700);
	CHECK_EQ_INT(lat[2], 10);
	CHECK(lat[3] == INT64_MIN);
	CHECK_EQ_INT(lat[4], -10);	/* clocks that disagree show as negative */
	CHECK_EQ_INT(trace_match_launches(l, 5, NULL, 0, lat), 0);
	CHECK(lat[0] == INT64_MIN);
	{
		/*
		 * One kernel on GPUs 0 and 9 (ring 1), GPU 0's queue deeper: each
		 * launch pairs on its own GPU, not with the other GPU's earlier start.
		 * A launch with no GPU known pairs with nothing.
		 */
		struct gx_launch_rec m[3] = {
			{ .host_ns = 1000, .kernel_id = 0xD, .gpu = 0 },
			{ .host_ns = 1100, .kernel_id = 0xD, .gpu = 9 },
			{ .host_ns = 1200, .kernel_id = 0xD, .gpu = UINT32_MAX },
		};
		struct gx_rec_start t[2] = {
			{ .kernel_id = 0xD, .timer_ns = 1150, .gpu_id = 1 },
			{ .kernel_id = 0xD, .timer_ns = 5000, .gpu_id = 0 },
		};

		CHECK_EQ_INT(trace_match_launches(m, 3, t, 2, lat), 2);
		CHECK_EQ_INT(lat[0], 4000);
		CHECK_EQ_INT(lat[1], 50);
		CHECK(lat[2] == INT64_MIN);
	}
	{
		/*
		 * Processes that share a start ring: one process on GPUs 1 and 9 does
		 * not clash with itself, nor processes on GPUs 1 and 2; a third process
		 * on GPU 9 clashes with the first (ring 1), launch order kept.
		 */
		struct gx_launch_rec p[5] = {
			{ .pid = 10, .gpu = 1 }, { .pid = 10, .gpu = 9 }, { .pid = 11, .gpu = 2 },
			{ .pid = 12, .gpu = UINT32_MAX }, { .pid = 13, .gpu = 9 },
		};
		struct trace_ring_clash rc = { { 0, 0 }, { 0, 0 } };

		CHECK_EQ_INT(trace_ll_ring_clash(p, 4, &rc), 0);
		CHECK_EQ_INT(trace_ll_ring_clash(p, 5, &rc), 1);
		CHECK_EQ_INT(rc.pid[0], 10);
		CHECK_EQ_INT(rc.gpu[0], 1);
		CHECK_EQ_INT(rc.pid[1], 13);
		CHECK_EQ_INT(rc.gpu[1], 9);
		p[4].gpu = 2;	/* the same GPU as process 11 */
		CHECK_EQ_INT(trace_ll_ring_clash(p, 5, &rc), 1);
		CHECK_EQ_INT(rc.pid[0], 11);
		CHECK_EQ_INT(rc.pid[1], 13);
		CHECK(rc.gpu[0] == 2 && rc.gpu[1] == 2);
	}
}

/* Launches moved onto their GPU's clock by the preload library's calibration. */
static void test_launch_clocks(void)
{
	/* pid 7 GPU 0: %globaltimer 65.7 us behind CLOCK_REALTIME; GPU 1 never calibrated. */
	struct gx_launch_rec l[3] = {
		{ .host_ns = 1000000, .kernel_id = 0xA, .pid = 7, .gpu = 0 },
		{ .host_ns = 2000000, .kernel_id = 0xA, .pid = 7, .gpu = 0 },
		{ .host_ns = 3000000, .kernel_id = 0xB, .pid = 7, .gpu = 1 },
	};
	struct gx_rec_start s[3] = {
		{ .kernel_id = 0xA, .timer_ns = 1000000 - 65700 + 4000 },
		{ .kernel_id = 0xA, .timer_ns = 2000000 - 65700 + 9000 },
		{ .kernel_id = 0xB, .timer_ns = 3000000 + 300, .gpu_id = 1 },
	};
	char tmp[] = "/tmp/gpuext-clk-XXXXXX", path[256];
	struct trace_clock *clk = NULL, one;
	size_t n = 0, unc = 99;
	int64_t lat[3];
	FILE *f;

	/* The file format nv_launch.c writes, and bad text. */
	CHECK_EQ_INT(trace_clock_parse("# comment\npid 7 gpu 0 offset_ns -65700 uncertainty_ns 800 rounds 20 cost_ns 9\n", &one), 0);
	CHECK_EQ_INT(one.pid, 7);
	CHECK_EQ_INT(one.gpu, 0);
	CHECK(one.offset_ns == -65700);
	CHECK_EQ_U64(one.uncertainty_ns, 800);
	CHECK_EQ_INT(trace_clock_parse("pid 7 gpu x offset_ns 1", &one), -EINVAL);
	CHECK_EQ_INT(trace_clock_parse("", &one), -EINVAL);

	if (!mkdtemp(tmp)) {
		CHECK(!"mkdtemp");
		return;
	}
	snprintf(path, sizeof(path), "%s/clock-7-0.txt", tmp);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fprintf(f, "# x\npid 7 gpu 0 offset_ns -65700 uncertainty_ns 800 rounds 20 cost_ns 1\n");
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/clock-9-0.txt", tmp);
	f = fopen(path, "w");
	if (f) {
		fprintf(f, "garbage\n");	/* ignored, loudly */
		fclose(f);
	}
	CHECK_EQ_INT(trace_clocks_load(tmp, &clk, &n), 0);
	CHECK_EQ_INT(n, 1);
	CHECK(trace_clock_find(clk, n, 7, 0) != NULL);
	CHECK(trace_clock_find(clk, n, 7, 1) == NULL);
	CHECK(trace_clock_find(clk, n, 8, 0) == NULL);

	CHECK_EQ_INT(trace_match_launches_clk(l, 3, s, 3, clk, n, lat, &unc), 3);
	CHECK_EQ_INT(lat[0], 4000);	/* raw: -61.7 us */
	CHECK_EQ_INT(lat[1], 9000);
	CHECK_EQ_INT(lat[2], 300);	/* no calibration: raw */
	CHECK_EQ_U64(unc, 1);
	/* Without calibrations: the raw (negative) differences. */
	CHECK_EQ_INT(trace_match_launches_clk(l, 3, s, 3, NULL, 0, lat, &unc), 3);
	CHECK_EQ_INT(lat[0], 4000 - 65700);
	CHECK_EQ_U64(unc, 3);
	free(clk);
	CHECK_EQ_INT(trace_clocks_load("/nonexistent/gpuext", &clk, &n), -ENOENT);
	snprintf(path, sizeof(path), "rm -rf '%s'", tmp);
	CHECK_EQ_INT(system(path), 0);
}

static void test_smload(void)
{
	uint64_t v[GX_SMLOAD_SLOTS] = { 0 };
	struct trace_smload s;

	v[0] = 4;
	v[1] = 4;
	v[7] = 8;
	trace_smload(v, GX_SMLOAD_SLOTS, &s);
	CHECK_EQ_U64(s.total, 16);
	CHECK_EQ_INT(s.sms, 3);
	CHECK_EQ_U64(s.max, 8);
	CHECK_EQ_U64(s.min, 4);
	CHECK(s.imbalance > 1.49 && s.imbalance < 1.51);
	memset(v, 0, sizeof(v));
	trace_smload(v, GX_SMLOAD_SLOTS, &s);
	CHECK_EQ_U64(s.total, 0);
	CHECK(s.imbalance == 0);
}

static void test_kernels(void)
{
	char dir[] = "/tmp/gpuext-test-trace.XXXXXX", path[128], buf[64];
	struct trace_kernel *k;
	size_t n;
	FILE *f;

	CHECK(mkdtemp(dir) != NULL);
	CHECK_EQ_INT(trace_kernels_load(dir, &k, &n), 0);	/* absent: none yet */
	CHECK_EQ_INT(n, 0);
	snprintf(path, sizeof(path), "%s/kernels.txt", dir);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fprintf(f, "42 00000000000000ab instrumented _Z6vecaddPKfS0_Pfi\n"
		   "42 00000000000000cd sass-only my kernel with spaces\n"
		   "garbage line\n");
	fclose(f);
	CHECK_EQ_INT(trace_kernels_load(dir, &k, &n), 0);
	CHECK_EQ_INT(n, 2);
	if (n == 2) {
		CHECK_EQ_U64(k[0].id, 0xab);
		CHECK_EQ_INT(k[0].pid, 42);
		CHECK(!strcmp(k[0].status, "instrumented"));
		CHECK(!strcmp(k[1].name, "my kernel with spaces"));
		CHECK(!strcmp(trace_kernel_name(k, n, 0xcd, buf, sizeof(buf)), "my kernel with spaces"));
		CHECK(!strcmp(trace_kernel_name(k, n, 0x99, buf, sizeof(buf)), "kernel:0000000000000099"));
	}
	trace_kernels_free(k, n);
	/* a 5000-character name is read whole; a last line without its newline is still being written */
	f = fopen(path, "a");
	CHECK(f != NULL);
	if (!f)
		return;
	fprintf(f, "43 00000000000000ef instrumented _Z4long");
	for (int i = 0; i < 4993; i++)
		fputc('a' + i % 26, f);
	fprintf(f, "\n43 0000000000000100 instrumented half_writ");
	fclose(f);
	CHECK_EQ_INT(trace_kernels_load(dir, &k, &n), 0);
	CHECK_EQ_INT(n, 3);
	if (n == 3) {
		CHECK_EQ_INT(strlen(k[2].name), 5000);
		CHECK(!strncmp(k[2].name, "_Z4longabc", 10));
		CHECK_EQ_INT(k[2].name[4999], 'a' + 4992 % 26);
		CHECK_EQ_INT(k[2].pid, 43);
	}
	trace_kernels_free(k, n);
	unlink(path);
	rmdir(dir);
}

static void test_memtrace_to_sim(void)
{
	const uint64_t base = 0x7f0000000000ull; /* 2 MiB aligned */
	struct gx_rec_mem r[6] = {
		{ .addr = base + 16, .kernel_id = 0x111, .size = 4 },
		{ .addr = base + (2u << 20) + 8, .kernel_id = 0x111, .size = 4, .flags = GX_MEM_STORE },
		{ .addr = base + (64u << 20), .kernel_id = 0x222, .size = 8 },
		{ .addr = base + 32, .kernel_id = 0x111, .size = 4 },
		{ .addr = base + (64u << 20) + 4096, .kernel_id = 0x222, .size = 8, .flags = GX_MEM_STORE },
		{ .addr = base + 48, .kernel_id = 0x333, .size = 4 },
	};
	struct sim_trace t, back;
	char err[SIM_TRACE_ERR_LEN];
	void *buf = NULL;
	size_t len = 0;

	CHECK_EQ_INT(trace_memtrace_to_sim(r, 6, 4242, NULL, 0, &t, err, sizeof(err)), 0);
	/* Blocks base and base+2M merge; base+64M stands alone. */
	CHECK_EQ_INT(t.range_cnt, 2);
	if (t.range_cnt == 2) {
		CHECK_EQ_U64(t.ranges[0].va, base);
		CHECK_EQ_U64(t.ranges[0].size, 4u << 20);
		CHECK_EQ_U64(t.ranges[1].va, base + (64u << 20));
		CHECK_EQ_U64(t.ranges[1].size, 2u << 20);
		CHECK_EQ_INT(t.ranges[1].tgid, 4242);
	}
	CHECK_EQ_INT(t.acc_cnt, 6);
	CHECK_EQ_U64(t.acc[1].va, base + (2u << 20) + 8);
	CHECK_EQ_INT(t.acc[1].is_write, 1);
	CHECK_EQ_INT(t.acc[0].is_write, 0);
	CHECK_EQ_INT(t.acc[0].kernel, 0);
	CHECK_EQ_INT(t.acc[2].kernel, 1);
	CHECK_EQ_INT(t.acc[3].kernel, 0);	/* kernels numbered by first appearance */
	CHECK_EQ_INT(t.acc[5].kernel, 2);
	/* The simulator's writer and reader validate it (ranges, every access inside). */
	CHECK_EQ_INT(sim_trace__save_mem(&t, SIM_TRACE_BINARY, &buf, &len, err, sizeof(err)), 0);
	CHECK_EQ_INT(sim_trace__load_mem(buf, len, "memtrace", &back, err, sizeof(err)), 0);
	CHECK_EQ_INT(back.acc_cnt, 6);
	CHECK_EQ_INT(back.range_cnt, 2);
	for (size_t i = 0; i < 6 && i < back.acc_cnt; i++) {
		CHECK_EQ_U64(back.acc[i].va, t.acc[i].va);
		CHECK_EQ_INT(back.acc[i].kernel, t.acc[i].kernel);
		CHECK_EQ_INT(back.acc[i].is_write, t.acc[i].is_write);
	}
	free(buf);
	sim_trace__free(&back);
	sim_trace__free(&t);

	CHECK_EQ_INT(trace_memtrace_to_sim(r, 0, 1, NULL, 0, &t, err, sizeof(err)), -ENODATA);
	CHECK_STR_CONTAINS(err, "no accesses");

	/*
	 * 0x333 is a device function (kernels.txt): its accesses count as the
	 * kernel's before them, so kernel 0x111 calling it stays one kernel;
	 * 0x222 is a kernel of its own. A device function's access with no
	 * access before it numbers itself.
	 */
	{
		struct trace_kernel kl[2] = {
			{ .id = 0x333, .status = "device-function", .name = "helper" },
			{ .id = 0x111, .status = "instrumented", .name = "k1" },
		};
		struct gx_rec_mem m[6] = {
			{ .addr = base + 16, .kernel_id = 0x111, .size = 4 },
			{ .addr = base + 48, .kernel_id = 0x333, .size = 4 },
			{ .addr = base + 32, .kernel_id = 0x111, .size = 4 },
			{ .addr = base + 64, .kernel_id = 0x333, .size = 4, .flags = GX_MEM_STORE },
			{ .addr = base + (64u << 20), .kernel_id = 0x222, .size = 8 },
			{ .addr = base + 80, .kernel_id = 0x333, .size = 4 },
		};

		CHECK_EQ_INT(trace_memtrace_to_sim(m, 6, 7, kl, 2, &t, err, sizeof(err)), 0);
		CHECK_EQ_INT(t.acc_cnt, 6);
		if (t.acc_cnt == 6) {
			CHECK_EQ_INT(t.acc[0].kernel, 0);
			CHECK_EQ_INT(t.acc[1].kernel, 0);
			CHECK_EQ_INT(t.acc[2].kernel, 0);
			CHECK_EQ_INT(t.acc[3].kernel, 0);
			CHECK_EQ_INT(t.acc[3].is_write, 1);
			CHECK_EQ_U64(t.acc[3].va, base + 64);
			CHECK_EQ_INT(t.acc[4].kernel, 1);
			CHECK_EQ_INT(t.acc[5].kernel, 1);	/* after 0x222's access */
		}
		sim_trace__free(&t);
		/* the function first: a number of its own */
		CHECK_EQ_INT(trace_memtrace_to_sim(m + 1, 2, 7, kl, 2, &t, err, sizeof(err)), 0);
		CHECK_EQ_INT(t.acc_cnt, 2);
		if (t.acc_cnt == 2) {
			CHECK_EQ_INT(t.acc[0].kernel, 0);
			CHECK_EQ_INT(t.acc[1].kernel, 1);
		}
		sim_trace__free(&t);
	}
}

static void test_mem_expand(void)
{
	struct gx_rec_mem out[32];
	/* a coalesced warp with lanes 3 and 30 idle, relative to its first lane */
	struct gx_rec_mem w = { .addr = 0x1000, .kernel_id = 7, .size = 4, .flags = GX_MEM_STORE,
				.block = 9, .thread = 64, .lanes = 0xbffffff7u, .stride = 4 };
	size_t n = trace_mem_expand(&w, out);

	CHECK_EQ_INT(n, 30);
	CHECK_EQ_U64(out[0].addr, 0x1000);
	CHECK_EQ_INT(out[0].thread, 64);
	CHECK_EQ_U64(out[2].addr, 0x1008);
	CHECK_EQ_U64(out[3].addr, 0x1010);	/* lane 3 skipped */
	CHECK_EQ_INT(out[3].thread, 68);
	CHECK_EQ_U64(out[29].addr, 0x1000 + 31 * 4);
	CHECK_EQ_INT(out[29].thread, 95);
	for (size_t i = 0; i < n; i++) {
		CHECK_EQ_INT(out[i].lanes, 1);
		CHECK_EQ_INT(out[i].stride, 0);
		CHECK_EQ_INT(out[i].block, 9);
		CHECK_EQ_INT(out[i].flags, GX_MEM_STORE);
		CHECK_EQ_U64(out[i].kernel_id, 7);
	}
	/* a negative stride: lanes walking down */
	w.lanes = 0x5;
	w.stride = (uint32_t)-256;
	CHECK_EQ_INT(trace_mem_expand(&w, out), 2);
	CHECK_EQ_U64(out[1].addr, 0x1000 - 512);
	CHECK_EQ_INT(out[1].thread, 66);
	/* one lane alone */
	w.lanes = 1;
	w.stride = 0;
	CHECK_EQ_INT(trace_mem_expand(&w, out), 1);
	CHECK_EQ_U64(out[0].addr, 0x1000);
	/* no first lane: not a record memtrace writes */
	w.lanes = 0;
	CHECK_EQ_INT(trace_mem_expand(&w, out), 0);
	w.lanes = 6;
	CHECK_EQ_INT(trace_mem_expand(&w, out), 0);
}

static void test_mem_account(void)
{
	struct gx_rec_mem w[4] = {
		/* a coalesced warp, lanes 3 and 30 idle */
		{ .addr = 0x1000, .kernel_id = 7, .size = 4, .flags = GX_MEM_STORE, .block = 9,
		  .thread = 64, .lanes = 0xbffffff7u, .stride = 4 },
		/* lanes walking down: its last lane is the lowest address */
		{ .addr = 0x9000, .kernel_id = 7, .size = 8, .block = 1, .thread = 0, .lanes = 0x5,
		  .stride = (uint32_t)-256 },
		/* no first lane: skipped, counts nothing */
		{ .addr = 0x10, .size = 4, .lanes = 6, .stride = 4 },
		/* one lane */
		{ .addr = 0x20000, .kernel_id = 8, .size = 2, .lanes = 1 },
	};
	struct trace_mem_stats st;
	struct gx_rec_mem *one, exp[32];
	size_t n, k = 0;

	trace_mem_stats_init(&st);
	CHECK(st.lo > st.hi);
	CHECK_EQ_INT(trace_mem_account(&w[0], &st), 30);
	CHECK_EQ_INT(trace_mem_account(&w[1], &st), 2);
	CHECK_EQ_INT(trace_mem_account(&w[2], &st), 0);
	CHECK_EQ_INT(trace_mem_account(&w[3], NULL), 1);	/* counted, not added */
	CHECK_EQ_U64(st.accesses, 32);
	CHECK_EQ_U64(st.stores, 30);
	CHECK_EQ_U64(st.loads, 2);
	CHECK_EQ_U64(st.bytes, 30 * 4 + 2 * 8);
	CHECK_EQ_U64(st.lo, 0x1000);
	CHECK_EQ_U64(st.hi, 0x9000);
	CHECK_EQ_INT(trace_mem_account(&w[3], &st), 1);
	CHECK_EQ_U64(st.hi, 0x20000);
	/* a negative stride alone: the range runs from its last lane to its first */
	trace_mem_stats_init(&st);
	trace_mem_account(&w[1], &st);
	CHECK_EQ_U64(st.lo, 0x9000 - 512);
	CHECK_EQ_U64(st.hi, 0x9000);
	/* stats agree with the expansion, which is trace_mem_expand() record by record */
	CHECK_EQ_INT(trace_mem_expand_all(w, 4, &one, &n), 0);
	CHECK_EQ_INT(n, 33);
	for (size_t i = 0; i < 4; i++) {
		size_t m = trace_mem_expand(&w[i], exp);

		for (size_t j = 0; j < m && k < n; j++, k++)
			CHECK(!memcmp(&one[k], &exp[j], sizeof(exp[j])));
	}
	CHECK_EQ_INT(k, 33);
	CHECK_EQ_U64(one[30].addr, 0x9000);
	CHECK_EQ_U64(one[31].addr, 0x9000 - 512);
	CHECK_EQ_U64(one[32].addr, 0x20000);
	free(one);
	CHECK_EQ_INT(trace_mem_expand_all(w + 2, 1, &one, &n), 0);
	CHECK_EQ_INT(n, 0);
	free(one);
}

static void test_pack(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .publish_maps = true);
	static const char *const tools[] = { "threadhist", "memtrace", "kerneldur" };
	static const uint32_t want_events[] = { 1u << GX_PROBE_EXIT,
						(1u << GX_PROBE_LOAD) | (1u << GX_PROBE_STORE),
						(1u << GX_PROBE_ENTRY) | (1u << GX_PROBE_EXIT) };
	char err[512], path[512];

	CHECK_EQ_INT(trace_probe_event("probe/entry"), GX_PROBE_ENTRY);
	CHECK_EQ_INT(trace_probe_event("probe/store/x"), GX_PROBE_STORE);
	CHECK_EQ_INT(trace_probe_event("probe/exits"), -1);
	CHECK_EQ_INT(trace_probe_event("struct_ops/x"), -1);
	if (!trace_have_emitter() || !trace_have_pack_writer()) {
		printf("test_trace_lib: SKIP pack checks: this build lacks the %s\n",
		       !trace_have_emitter() ? "probe emitter (codegen/ptx/ptx_probe.c)"
					     : "pack writer (hal/nvidia/pack.c)");
		return;
	}
	for (size_t i = 0; i < 3; i++) {
		struct gpuext_runtime *rt = NULL;
		struct gpuext_object *obj = NULL;
		struct gx_pack p, q, q2, back;
		char dir[] = "/tmp/gpuext-test-pack.XXXXXX";

		snprintf(path, sizeof(path), "%s/%s.bpf.o", GPUEXT_TEST_PROBE_DIR, tools[i]);
		CHECK_EQ_INT(gpuext_runtime__new(&ro, &rt), 0);
		CHECK_EQ_INT(gpuext_object__open_file(rt, path, NULL, &obj), 0);
		if (!obj) {
			gpuext_runtime__free(rt);
			continue;
		}
		CHECK_EQ_INT(trace_build_pack(obj, "sm_80", i == 1, i == 0 ? "*vec*" : NULL, &p, err,
					      sizeof(err)), 0);
		CHECK_EQ_U64(p.events, want_events[i]);
		CHECK_EQ_INT(p.map_cnt, gpuext_object__map_cnt(obj));
		CHECK_EQ_INT(p.per_thread, i == 1);
		for (uint32_t m = 0; m < p.map_cnt; m++) {
			struct gpuext_map *om = gpuext_object__map(obj, m);
			char shm[160];
			struct stat st;

			CHECK(!strcmp(p.maps[m].name, gpuext_map__name(om)));
			CHECK_EQ_INT(p.maps[m].type, gpuext_map__type(om));
			CHECK_EQ_INT(p.maps[m].value_size, gpuext_map__value_size(om));
			CHECK_EQ_INT(p.maps[m].max_entries, gpuext_map__max_entries(om));
			/* The shm name is a live file of this process. */
			snprintf(shm, sizeof(shm), "/dev/shm%s", p.maps[m].shm);
			CHECK_EQ_INT(stat(shm, &st), 0);
		}
		CHECK_STR_CONTAINS(p.ptx, i == 1 ? "gpuext_probe_load" : "gpuext_probe_exit");
		if (i == 0)
			CHECK(!strcmp(p.kernel_filter, "*vec*"));
		/* Written, and read back by the preload library's reader. */
		CHECK(mkdtemp(dir) != NULL);
		CHECK_EQ_INT(trace_pack_write(dir, &p), 0);
		CHECK_EQ_INT(trace_pack_read(dir, &back, err, sizeof(err)), 0);
		CHECK_EQ_INT(back.map_cnt, p.map_cnt);
		CHECK_EQ_INT(back.events, p.events);
		CHECK_EQ_U64(back.ptx_len, p.ptx_len);
		CHECK(back.ptx && !memcmp(back.ptx, p.ptx, p.ptx_len));
		CHECK(!strcmp(back.maps[0].shm, p.maps[0].shm));
		/* Deterministic: the same object gives the same hash; the mode changes it. */
		CHECK_EQ_INT(trace_build_pack(obj, "sm_80", i == 1, i == 0 ? "*vec*" : NULL, &q, err,
					      sizeof(err)), 0);
		CHECK_EQ_INT(trace_pack_write(dir, &q), 0);
		CHECK_EQ_INT(trace_pack_read(dir, &q2, err, sizeof(err)), 0);
		CHECK(!memcmp(back.hash, q2.hash, 32));
		trace_pack_release(&q);
		trace_pack_release(&q2);
		CHECK_EQ_INT(trace_build_pack(obj, "sm_80", i != 1, i == 0 ? "*vec*" : NULL, &q, err,
					      sizeof(err)), 0);
		CHECK_EQ_INT(trace_pack_write(dir, &q), 0);
		CHECK_EQ_INT(trace_pack_read(dir, &q2, err, sizeof(err)), 0);
		CHECK(memcmp(back.hash, q2.hash, 32) != 0);
		trace_pack_release(&q);
		trace_pack_release(&q2);
		trace_pack_release(&back);
		snprintf(path, sizeof(path), "rm -rf '%s'", dir);
		CHECK_EQ_INT(system(path), 0);
		trace_pack_release(&p);
		gpuext_object__close(obj);
		gpuext_runtime__free(rt);
	}
}

/*
 * The largest ring record reaches the pack (the verifier noted it; the
 * preload library sizes the shards by it), and a ring too small for its
 * record is refused with what to declare.
 */
static void test_pack_records(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .publish_maps = true);
	struct gpuext_runtime *rt = NULL;
	struct gpuext_object *obj = NULL;
	char err[512], path[512], dir[] = "/tmp/gpuext-test-rec.XXXXXX";
	struct gx_pack p, back;

	if (!trace_have_emitter() || !trace_have_pack_writer())
		return;	/* test_pack says why */
	snprintf(path, sizeof(path), "%s/probe_bigrec.bpf.o", GPUEXT_TEST_BPF_DIR);
	CHECK_EQ_INT(gpuext_runtime__new(&ro, &rt), 0);
	CHECK_EQ_INT(gpuext_object__open_file(rt, path, NULL, &obj), 0);
	if (obj) {
		CHECK_EQ_INT(trace_build_pack(obj, "sm_80", false, NULL, &p, err, sizeof(err)), 0);
		CHECK_EQ_INT(p.map_cnt, 2);
		for (uint32_t m = 0; m < p.map_cnt; m++) {
			bool big = !strcmp(p.maps[m].name, "big");

			/* reserve's constant; output's size is 17 + (sm_id & 31): at most 48 */
			CHECK_EQ_INT(p.maps[m].max_record, big ? 12000 : 48);
			CHECK_EQ_INT(gpuext_map__ring_max_record(gpuext_object__map(obj, m)),
				     big ? 12000 : 48);
		}
		CHECK(mkdtemp(dir) != NULL);
		CHECK_EQ_INT(trace_pack_write(dir, &p), 0);
		CHECK_EQ_INT(trace_pack_read(dir, &back, err, sizeof(err)), 0);
		for (uint32_t m = 0; m < back.map_cnt && m < p.map_cnt; m++)
			CHECK_EQ_INT(back.maps[m].max_record, p.maps[m].max_record);
		trace_pack_release(&back);
		trace_pack_release(&p);
		snprintf(path, sizeof(path), "rm -rf '%s'", dir);
		CHECK_EQ_INT(system(path), 0);
		gpuext_object__close(obj);
	}
	obj = NULL;
	snprintf(path, sizeof(path), "%s/probe_bigrec_toobig.bpf.o", GPUEXT_TEST_BPF_DIR);
	CHECK_EQ_INT(gpuext_object__open_file(rt, path, NULL, &obj), 0);
	if (obj) {
		err[0] = '\0';
		CHECK_EQ_INT(trace_build_pack(obj, "sm_80", false, NULL, &p, err, sizeof(err)),
			     -E2BIG);
		CHECK(p.ptx == NULL);
		CHECK_STR_CONTAINS(err, "records of 12000 bytes to ring buffer 'big', which holds "
				   "8192 bytes");
		CHECK_STR_CONTAINS(err, "only from 24008 bytes: declare max_entries of at least 32768");
		gpuext_object__close(obj);
	}
	gpuext_runtime__free(rt);
}

/* One probe run in the reference interpreter, as on a lane of GPU `gpu`. */
static void kdur_run_gpu(struct gpuext_prog *p, uint32_t gpu, uint32_t block_x, uint32_t warp,
			 uint32_t lane, uint64_t timer)
{
	struct gpuext_probe_ctx c = {
		.kernel_id = 69, .timer_ns = timer, .grid_dim = { 64, 1, 1 }, .block_dim = { 64, 1, 1 },
		.block_id = { block_x, 0, 0 }, .thread_id = { warp * 32 + lane, 0, 0 },
		.lane_id = lane, .warp_id = warp, .gpu_id = gpu,
	};
	GPUEXT_OPTS(gpuext_run_opts, ro, .ctx = &c, .ctx_len = sizeof(c));
	uint64_t r0 = 1;

	CHECK_EQ_INT(gpuext_prog__run(p, &ro, &r0), 0);
	CHECK_EQ_U64(r0, 0);
}

static void kdur_run(struct gpuext_prog *p, uint32_t block_x, uint32_t warp, uint32_t lane,
		     uint64_t timer)
{
	kdur_run_gpu(p, 0, block_x, warp, lane, timer);
}

static uint64_t kdur_hist(struct gpuext_object *obj, uint32_t bucket)
{
	uint64_t v = 0;

	CHECK_EQ_INT(gpuext_map__lookup(gpuext_object__find_map(obj, "hist"), &bucket, &v), 0);
	return v;
}

/*
 * kerneldur's device programs, run in the interpreter launch by launch: the
 * next launch's block (0,0,0) folds the previous one (latest end before its
 * own start), the host folds the last (trace_kdur_pending()), and the
 * approximations its header comment states hold as stated.
 */
static void test_kerneldur(void)
{
	struct gpuext_runtime *rt = NULL;
	struct gpuext_object *obj = NULL;
	struct gpuext_prog *in, *out;
	struct gx_kdur_state s, sum;
	uint32_t slot = 69 % GX_KDUR_KSLOTS;
	uint64_t total;
	char path[512];

	snprintf(path, sizeof(path), "%s/kerneldur.bpf.o", GPUEXT_TEST_PROBE_DIR);
	CHECK_EQ_INT(gpuext_runtime__new(NULL, &rt), 0);
	CHECK_EQ_INT(gpuext_object__open_file(rt, path, NULL, &obj), 0);
	if (!obj) {
		gpuext_runtime__free(rt);
		return;
	}
	in = gpuext_object__find_prog(obj, "kerneldur_entry");
	out = gpuext_object__find_prog(obj, "kerneldur_exit");
	CHECK(in && out);
	if (!in || !out)
		goto done;
	/* Launch 1 starts at 1000; only block (0,0,0), warp 0, lane 0 stamps it. */
	kdur_run(in, 1, 0, 0, 900);
	kdur_run(in, 0, 1, 0, 900);
	kdur_run(in, 0, 0, 1, 900);
	kdur_run(in, 0, 0, 0, 1000);
	kdur_run(out, 0, 0, 0, 1500);
	kdur_run(out, 2, 0, 0, 2600);
	kdur_run(out, 1, 0, 0, 2400);
	kdur_run(out, 34, 0, 0, 2500);	/* group 2 again, ending earlier: the max stays */
	kdur_run(out, 1, 1, 0, 9999);	/* warp 1: not the block's exit stamp */
	CHECK_EQ_INT(gpuext_map__lookup(gpuext_object__find_map(obj, "state"), &slot, &s), 0);
	CHECK_EQ_U64(s.pending, 1);
	CHECK_EQ_U64(s.start_ns, 1000);
	CHECK_EQ_U64(s.runs, 0);
	CHECK_EQ_U64(s.end[2].ns, 2600);
	/* The host's view of the launch in flight: 2600 - 1000. */
	CHECK_EQ_U64(trace_kdur_pending(&s, &total), 1);
	CHECK_EQ_U64(total, 1600);
	/* Launch 2 at 10000 folds launch 1; one exit at 13000. */
	kdur_run(in, 0, 0, 0, 10000);
	kdur_run(out, 3, 0, 0, 13000);
	/* Launch 3: a block of it ends (20500) before its block (0,0,0) (20000) folds launch 2. */
	kdur_run(out, 4, 0, 0, 20500);
	kdur_run(in, 0, 0, 0, 20000);
	CHECK_EQ_INT(gpuext_map__lookup(gpuext_object__find_map(obj, "state"), &slot, &s), 0);
	CHECK_EQ_U64(s.runs, 2);
	CHECK_EQ_U64(s.total_ns, 1600 + 3000);
	CHECK_EQ_U64(s.max_ns, 3000);
	CHECK_EQ_U64(s.unfinished, 0);
	CHECK_EQ_U64(s.start_ns, 20000);
	CHECK_EQ_U64(s.end[4].ns, 0);	/* reset by the fold: the early end is not launch 3's last */
	CHECK_EQ_U64(kdur_hist(obj, 10), 1);	/* 1600 ns */
	CHECK_EQ_U64(kdur_hist(obj, 11), 1);	/* 3000 ns */
	/* Nothing of launch 3 has ended yet: no pending launch to show. */
	CHECK_EQ_U64(trace_kdur_pending(&s, &total), 0);
	CHECK_EQ_U64(total, 0);
	/* Launch 4 starts before any block of launch 3 ended: unfinished, not timed. */
	kdur_run(in, 0, 0, 0, 30000);
	kdur_run(out, 7, 0, 0, 30700);
	CHECK_EQ_INT(gpuext_map__lookup(gpuext_object__find_map(obj, "state"), &slot, &s), 0);
	CHECK_EQ_U64(s.runs, 2);
	CHECK_EQ_U64(s.unfinished, 1);
	CHECK_EQ_U64(s.kernel_id, 69);
	/* Two processes that share GPU 0's entries, as the mirror adds them: 700 + 900 ns. */
	sum = s;
	sum.pending = 2;
	sum.start_ns = 30000 + 50000;
	sum.end[7].ns = 30700 + 50900;
	CHECK_EQ_U64(trace_kdur_pending(&sum, &total), 2);
	CHECK_EQ_U64(total, 1600);
	{
		/* the summed id wraps: a top-bit id (slot 69 % 64 = 5) is found in kernels.txt */
		struct trace_kernel ks[2] = { { .id = 0x8000000000000045ull }, { .id = 0x445 } };

		sum.kernel_id = 0x8000000000000045ull * 2;	/* 0x8a after the wrap */
		CHECK_EQ_U64(trace_kdur_kernel_id(&sum, 5, ks, 2), 0x8000000000000045ull);
		sum.kernel_id = 0x445 * 2;
		CHECK_EQ_U64(trace_kdur_kernel_id(&sum, 5, ks, 2), 0x445);
		sum.kernel_id = 0x999 * 2;	/* not listed: the quotient */
		CHECK_EQ_U64(trace_kdur_kernel_id(&sum, 25, ks, 2), 0x999);
		sum.pending = 1;
		CHECK_EQ_U64(trace_kdur_kernel_id(&sum, 5, ks, 2), 0x999 * 2);	/* one GPU: as written */
	}
	/*
	 * %globaltimer ticks coarsely: launch 5 ends in its own start's tick:
	 * timed (0 ns). An end in the tick launch 6 starts in is not taken: it
	 * may be launch 6's own.
	 */
	kdur_run(in, 0, 0, 0, 40000);
	CHECK_EQ_INT(gpuext_map__lookup(gpuext_object__find_map(obj, "state"), &slot, &s), 0);
	CHECK_EQ_U64(s.runs, 3);	/* launch 4: 30000 -> 30700 */
	CHECK_EQ_U64(kdur_hist(obj, 9), 1);
	kdur_run(out, 0, 0, 0, 40000);
	CHECK_EQ_INT(gpuext_map__lookup(gpuext_object__find_map(obj, "state"), &slot, &s), 0);
	CHECK_EQ_U64(trace_kdur_pending(&s, &total), 1);
	CHECK_EQ_U64(total, 0);
	kdur_run(in, 0, 0, 0, 41000);
	CHECK_EQ_INT(gpuext_map__lookup(gpuext_object__find_map(obj, "state"), &slot, &s), 0);
	CHECK_EQ_U64(s.runs, 4);
	CHECK_EQ_U64(s.unfinished, 1);
	CHECK_EQ_U64(kdur_hist(obj, 0), 1);
	/* launch 6 ends only in the tick launch 7 starts in: not taken, unfinished */
	kdur_run(out, 1, 0, 0, 50000);
	kdur_run(in, 0, 0, 0, 50000);
	CHECK_EQ_INT(gpuext_map__lookup(gpuext_object__find_map(obj, "state"), &slot, &s), 0);
	CHECK_EQ_U64(s.runs, 4);
	CHECK_EQ_U64(s.unfinished, 2);
	/*
	 * GPU 1 runs the same kernel meanwhile: its launches have entries of their own
	 * (GX_KDUR_KSLOTS further on), so neither GPU folds or stamps the other's. GPU 9
	 * shares GPU 1's (ids 8 apart).
	 */
	{
		uint32_t slot1 = GX_KDUR_KSLOTS + slot;
		struct gx_kdur_state s1;

		kdur_run_gpu(in, 1, 0, 0, 0, 100000);	/* GPU 1, launch A */
		kdur_run_gpu(out, 1, 0, 0, 0, 101000);
		kdur_run_gpu(out, 0, 5, 0, 0, 101500);	/* GPU 0's launch 7 ends later */
		kdur_run_gpu(in, 9, 0, 0, 0, 102000);	/* GPU 9 = GPU 1's entries: folds A */
		CHECK_EQ_INT(gpuext_map__lookup(gpuext_object__find_map(obj, "state"), &slot1, &s1), 0);
		CHECK_EQ_U64(s1.runs, 1);
		CHECK_EQ_U64(s1.total_ns, 1000);	/* not 1500: GPU 0's end is not GPU 1's */
		CHECK_EQ_U64(s1.unfinished, 0);
		CHECK_EQ_U64(s1.start_ns, 102000);
		CHECK_EQ_U64(s1.pending, 1);
		CHECK_EQ_INT(gpuext_map__lookup(gpuext_object__find_map(obj, "state"), &slot, &s), 0);
		CHECK_EQ_U64(s.start_ns, 50000);	/* GPU 0's launch 7, untouched by GPU 1's */
		CHECK_EQ_U64(s.end[5].ns, 101500);
		CHECK_EQ_U64(s.runs, 4);
		CHECK_EQ_U64(trace_kdur_pending(&s, &total), 1);
		CHECK_EQ_U64(total, 51500);
	}
done:
	gpuext_object__close(obj);
	gpuext_runtime__free(rt);
}

/*
 * A kernel slot over the GPUs' entries (what `gpuext trace kerneldur` shows):
 * sums, each entry's pending launch folded, the largest maximum, and whether
 * it came from an entry processes share (an upper bound, shown as "<=").
 */
static void test_kerneldur_slot(void)
{
	struct gx_kdur_state e[GX_KDUR_GPUS];
	struct trace_kernel ks[1] = { { .id = 69 } };
	struct trace_kdur_slot q;
	struct trace_hist h = { 0 };

	memset(e, 0, sizeof(e));
	/* GPU 0: 3 runs folded, one pending of 400 ns */
	e[0] = (struct gx_kdur_state){ .pending = 1, .start_ns = 1000, .kernel_id = 69, .runs = 3,
				      .total_ns = 300, .max_ns = 150 };
	e[0].end[2].ns = 1400;
	/* GPU 1: 2 runs, one launch overlapped, nothing pending */
	e[1] = (struct gx_kdur_state){ .kernel_id = 69, .runs = 2, .total_ns = 100, .max_ns = 60,
				      .unfinished = 1 };
	/* GPU 2's entry, two processes added up: pending 500 + 600 ns, maxima 400 + 600 */
	e[2] = (struct gx_kdur_state){ .pending = 2, .start_ns = 2000 + 3000, .kernel_id = 69 * 2,
				      .max_ns = 1000 };
	e[2].end[0].ns = 2500 + 3600;
	trace_kdur_slot(e, GX_KDUR_GPUS, 69 % GX_KDUR_KSLOTS, ks, 1, &h, &q);
	CHECK_EQ_U64(q.runs, 3 + 1 + 2 + 2);
	CHECK_EQ_U64(q.total_ns, 300 + 400 + 100 + 1100);
	CHECK_EQ_U64(q.unfinished, 1);
	CHECK_EQ_U64(q.max_ns, 1000);
	CHECK(q.max_shared);
	CHECK_EQ_U64(q.kernel_id, 69);
	CHECK_EQ_U64(h.n, 3);		/* GPU 0's pending launch, GPU 2's two */
	CHECK_EQ_U64(h.sum, 400 + 550 + 550);
	/* A larger maximum from an entry of one process: exact. */
	e[0].max_ns = 2000;
	memset(&h, 0, sizeof(h));
	trace_kdur_slot(e, GX_KDUR_GPUS, 69 % GX_KDUR_KSLOTS, ks, 1, &h, &q);
	CHECK_EQ_U64(q.max_ns, 2000);
	CHECK(!q.max_shared);
	/* Nothing ran: nothing. */
	memset(e, 0, sizeof(e));
	trace_kdur_slot(e, GX_KDUR_GPUS, 5, ks, 1, &h, &q);
	CHECK_EQ_U64(q.runs, 0);
	CHECK_EQ_U64(q.kernel_id, 0);
}

/* ---- launchlate's slot ring --------------------------------------------- */

/* A slot ring held here: what the shm copy of `starts` would show. */
struct fake_ring {
	struct gx_slot_start rec[2 * 8];	/* 2 rings of 8 */
	bool busy[2 * 8];			/* get() says "not now" */
	uint32_t took_ring[64];
	uint64_t took[64];			/* timer_ns of what take() got, in order */
	size_t n;
};

static int fake_get(void *user, uint32_t idx, struct gx_slot_start *rec)
{
	struct fake_ring *f = user;

	if (idx >= 16)
		return -ENOENT;
	*rec = f->rec[idx];
	return f->busy[idx] ? -EAGAIN : 0;
}

static void fake_take(void *user, uint32_t ring, const struct gx_slot_start *rec)
{
	struct fake_ring *f = user;

	if (f->n < 64) {
		f->took_ring[f->n] = ring;
		f->took[f->n++] = rec->timer_ns;
	}
}

/* Writes seq @seq of ring @r as the device does (timer = 1000 x seq + r). */
static void fake_put(struct fake_ring *f, uint32_t r, uint64_t seq)
{
	struct gx_slot_start *x = &f->rec[r * 8 + (seq - 1) % 8];

	x->seq = seq;
	x->kernel_id = 0x77;
	x->timer_ns = 1000 * seq + r;
	x->sm_id = 3;
	x->check = gx_slot_check(x->seq, x->kernel_id, x->timer_ns, x->sm_id);
}

/* The reader: claim order, each record once, laps and half-written copies counted. */
static void test_slots_reader(void)
{
	static struct fake_ring f;
	struct trace_slots s;
	uint64_t ctr[2] = { 0, 0 };

	CHECK_EQ_INT(trace_slots_init(&s, 2, 6), -EINVAL);	/* not a power of 2 */
	CHECK_EQ_INT(trace_slots_init(&s, 0, 8), -EINVAL);
	CHECK_EQ_INT(trace_slots_init(&s, 2, 8), 0);
	/* Nothing claimed: nothing read, even from slots that hold something. */
	fake_put(&f, 0, 1);
	trace_slots_poll(&s, ctr, fake_get, fake_take, &f, false);
	CHECK_EQ_U64(f.n, 0);
	/* Ring 0: 1..3 claimed, 3 not written yet; ring 1: 1 written. */
	fake_put(&f, 0, 2);
	fake_put(&f, 1, 1);
	ctr[0] = 3;
	ctr[1] = 1;
	trace_slots_poll(&s, ctr, fake_get, fake_take, &f, false);
	CHECK_EQ_U64(f.n, 3);
	CHECK_EQ_U64(f.took[0], 1000);
	CHECK_EQ_U64(f.took[1], 2000);
	CHECK_EQ_U64(f.took[2], 1001);
	CHECK_EQ_INT(f.took_ring[2], 1);
	CHECK_EQ_U64(s.next[0], 3);	/* waits for 3 */
	/* Seq 3 copied half-written (its check fails): still waited for, not taken. */
	fake_put(&f, 0, 3);
	f.rec[2].timer_ns ^= 0x100;
	trace_slots_poll(&s, ctr, fake_get, fake_take, &f, false);
	CHECK_EQ_U64(f.n, 3);
	CHECK_EQ_U64(s.stalls[0], 2);
	/* The whole copy comes: taken once; a poll with nothing new takes nothing. */
	fake_put(&f, 0, 3);
	trace_slots_poll(&s, ctr, fake_get, fake_take, &f, false);
	trace_slots_poll(&s, ctr, fake_get, fake_take, &f, false);
	CHECK_EQ_U64(f.n, 4);
	CHECK_EQ_U64(f.took[3], 3000);
	CHECK_EQ_U64(s.stalls[0], 0);
	/* A lap and more: 4..13 claimed, 6..13 still in the slots: 4 and 5 lost. */
	for (uint64_t q = 4; q <= 13; q++)
		fake_put(&f, 0, q);
	ctr[0] = 13;
	trace_slots_poll(&s, ctr, fake_get, fake_take, &f, false);
	CHECK_EQ_U64(s.lost, 2);
	CHECK_EQ_U64(f.n, 12);
	CHECK_EQ_U64(f.took[4], 6000);
	CHECK_EQ_U64(f.took[11], 13000);
	/* 14..22 claimed and written: 14's slot holds 22 now, so 14 goes by the lap rule. */
	ctr[0] = 22;
	for (uint64_t q = 15; q <= 22; q++)
		fake_put(&f, 0, q);
	trace_slots_poll(&s, ctr, fake_get, fake_take, &f, false);
	CHECK_EQ_U64(s.lost, 2 + 1);
	CHECK_EQ_U64(s.next[0], 23);
	CHECK_EQ_U64(f.took[12], 15000);
	CHECK_EQ_U64(f.n, 12 + 8);	/* 15..22 */
	/*
	 * The counter's copy is older than the slots': 23 and 24 claimed, and
	 * 24's slot already holds 32 (a later lap): 24 is lost, not waited for.
	 */
	fake_put(&f, 0, 23);
	fake_put(&f, 0, 32);
	ctr[0] = 24;
	trace_slots_poll(&s, ctr, fake_get, fake_take, &f, false);
	CHECK_EQ_U64(s.lost, 3 + 1);
	CHECK_EQ_U64(s.next[0], 25);
	CHECK_EQ_U64(f.n, 21);
	CHECK_EQ_U64(f.took[20], 23000);
	/* Ring 1: 2 claimed and never readable: waited for TRACE_SLOTS_PATIENCE polls, then counted. */
	ctr[1] = 3;
	f.busy[8 + 1] = true;
	fake_put(&f, 1, 3);
	for (unsigned i = 0; i < TRACE_SLOTS_PATIENCE; i++)
		trace_slots_poll(&s, ctr, fake_get, fake_take, &f, false);
	CHECK_EQ_U64(s.unreadable, 0);
	CHECK_EQ_U64(s.next[1], 2);
	trace_slots_poll(&s, ctr, fake_get, fake_take, &f, false);
	CHECK_EQ_U64(s.unreadable, 1);
	CHECK_EQ_U64(s.next[1], 4);	/* and 3 taken behind it */
	CHECK_EQ_U64(f.took[f.n - 1], 3001);
	/* final: no waiting. */
	ctr[1] = 4;
	trace_slots_poll(&s, ctr, fake_get, fake_take, &f, true);
	CHECK_EQ_U64(s.unreadable, 2);	/* seq 4's slot holds nothing whole */
	CHECK_EQ_U64(s.taken, f.n);
	CHECK_EQ_U64(s.taken + s.lost + s.unreadable, 24 + 4);
	trace_slots_free(&s);
	CHECK(s.next == NULL);
}

/* The reader's give-up rule, and the lap rule where the overwritten slot is not readable. */
static void test_slots_giveup(void)
{
	static struct fake_ring f;
	struct trace_slots s;
	uint64_t ctr[2] = { 0, 0 };

	CHECK_EQ_INT(trace_slots_init(&s, 1u << 20, 1u << 13), -EINVAL);	/* idx would wrap */
	CHECK_EQ_INT(trace_slots_init(&s, 2, 8), 0);
	CHECK_EQ_INT(s.patience, TRACE_SLOTS_PATIENCE);
	s.patience = 3;
	/* Ring 0: 1..3 never readable, 4 whole; all claimed before the wait began. */
	f.busy[0] = f.busy[1] = f.busy[2] = true;
	fake_put(&f, 0, 4);
	ctr[0] = 4;
	for (int i = 0; i < 3; i++)
		trace_slots_poll(&s, ctr, fake_get, fake_take, &f, false);
	CHECK_EQ_U64(s.unreadable, 0);
	CHECK_EQ_U64(f.n, 0);
	/* 5 is claimed (and unreadable) after the wait began: it gets a wait of its own. */
	ctr[0] = 5;
	f.busy[4] = true;
	trace_slots_poll(&s, ctr, fake_get, fake_take, &f, false);
	CHECK_EQ_U64(s.unreadable, 3);	/* 1..3 at once, not one a patience each */
	CHECK_EQ_U64(f.n, 1);
	CHECK_EQ_U64(f.took[0], 4000);
	CHECK_EQ_U64(s.next[0], 5);
	CHECK_EQ_U64(s.stalls[0], 1);
	/* Ring 1: 1..2 unreadable, but 12 claimed: the lap rule skips them, no wait. */
	f.busy[8] = f.busy[9] = true;
	for (uint64_t q = 5; q <= 12; q++)
		if (q != 9 && q != 10)
			fake_put(&f, 1, q);
	ctr[1] = 12;	/* slots of 9 and 10 (= 1 and 2) still busy: not readable yet */
	trace_slots_poll(&s, ctr, fake_get, fake_take, &f, false);
	CHECK_EQ_U64(s.lost, 4);	/* 1..4: their slots were claimed again */
	CHECK_EQ_U64(s.next[1], 9);	/* 5..8 taken, waits for 9 */
	CHECK_EQ_U64(s.stalls[1], 1);
	CHECK_EQ_U64(f.n, 1 + 4);
	CHECK_EQ_U64(f.took[1], 5001);
	CHECK_EQ_U64(f.took[4], 8001);
	trace_slots_free(&s);
}

static void ll_run(struct gpuext_prog *p, uint32_t block_x, uint32_t warp, uint32_t gpu,
		   uint64_t timer)
{
	struct gpuext_probe_ctx c = {
		.kernel_id = 0x4242, .timer_ns = timer, .grid_dim = { 4, 1, 1 },
		.block_dim = { 64, 1, 1 }, .block_id = { block_x, 0, 0 },
		.thread_id = { warp * 32, 0, 0 }, .warp_id = warp, .sm_id = 11 + block_x,
		.gpu_id = gpu,
	};
	GPUEXT_OPTS(gpuext_run_opts, ro, .ctx = &c, .ctx_len = sizeof(c));
	uint64_t r0 = 1;

	CHECK_EQ_INT(gpuext_prog__run(p, &ro, &r0), 0);
	CHECK_EQ_U64(r0, 0);
}

static int obj_get(void *user, uint32_t idx, struct gx_slot_start *rec)
{
	return gpuext_map__lookup(gpuext_object__find_map(user, "starts"), &idx, rec);
}

static uint64_t ll_took[8];
static size_t ll_n;

static void obj_take(void *user, uint32_t ring, const struct gx_slot_start *rec)
{
	(void)user;
	CHECK_EQ_U64(rec->kernel_id, 0x4242);
	CHECK_EQ_INT(rec->sm_id, 11);
	if (ll_n < 8)
		ll_took[ll_n++] = rec->timer_ns + ring;
}

/* launchlate's device program in the interpreter, read by the reader. */
static void test_launchlate_slots(void)
{
	struct gpuext_runtime *rt = NULL;
	struct gpuext_object *obj = NULL;
	struct gpuext_prog *p;
	struct gx_slot_start r;
	struct trace_slots s;
	uint64_t ctr[GX_LL_GPUS];
	uint32_t k;
	char path[512];

	snprintf(path, sizeof(path), "%s/launchlate.bpf.o", GPUEXT_TEST_PROBE_DIR);
	CHECK_EQ_INT(gpuext_runtime__new(NULL, &rt), 0);
	CHECK_EQ_INT(gpuext_object__open_file(rt, path, NULL, &obj), 0);
	p = obj ? gpuext_object__find_prog(obj, "launchlate_entry") : NULL;
	CHECK(p != NULL);
	if (!p)
		goto done;
	/* Only warp 0 of block (0,0,0) writes: 3 launches on GPU 0, 1 on GPU 9 (ring 1). */
	ll_run(p, 1, 0, 0, 500);
	ll_run(p, 0, 1, 0, 500);
	ll_run(p, 0, 0, 0, 1000);
	ll_run(p, 0, 0, 0, 2000);
	ll_run(p, 0, 0, 9, 9000);
	ll_run(p, 0, 0, 0, 3000);
	for (k = 0; k < GX_LL_GPUS; k++)
		CHECK_EQ_INT(gpuext_map__lookup(gpuext_object__find_map(obj, "start_seq"), &k,
						&ctr[k]), 0);
	CHECK_EQ_U64(ctr[0], 3);
	CHECK_EQ_U64(ctr[1], 1);
	CHECK_EQ_U64(ctr[2] + ctr[3] + ctr[4] + ctr[5] + ctr[6] + ctr[7], 0);
	k = 1;	/* seq 2 of GPU 0 */
	CHECK_EQ_INT(gpuext_map__lookup(gpuext_object__find_map(obj, "starts"), &k, &r), 0);
	CHECK_EQ_U64(r.seq, 2);
	CHECK_EQ_U64(r.timer_ns, 2000);
	CHECK_EQ_INT(r.check, gx_slot_check(2, 0x4242, 2000, 11));
	k = GX_LL_SLOTS;	/* GPU 9's first */
	CHECK_EQ_INT(gpuext_map__lookup(gpuext_object__find_map(obj, "starts"), &k, &r), 0);
	CHECK_EQ_U64(r.seq, 1);
	CHECK_EQ_U64(r.timer_ns, 9000);
	CHECK_EQ_INT(trace_slots_init(&s, GX_LL_GPUS, GX_LL_SLOTS), 0);
	trace_slots_poll(&s, ctr, obj_get, obj_take, obj, true);
	CHECK_EQ_U64(s.taken, 4);
	CHECK_EQ_U64(s.lost + s.unreadable, 0);
	/* GPU 0's in claim order, then GPU 9's (its ring number added) */
	CHECK_EQ_U64(ll_n, 4);
	CHECK_EQ_U64(ll_took[0], 1000);
	CHECK_EQ_U64(ll_took[1], 2000);
	CHECK_EQ_U64(ll_took[2], 3000);
	CHECK_EQ_U64(ll_took[3], 9001);
	trace_slots_free(&s);
done:
	gpuext_object__close(obj);
	gpuext_runtime__free(rt);
}

/* threadhist's 32-bit counters, widened across a wrap and left alone when unchanged. */
static void test_widen(void)
{
	uint64_t sum[3] = { 0, 7, 0 };
	uint32_t last[3] = { 0, 0, 0 }, a[3] = { 42, 0, 0xfffffff0u }, b[3] = { 50, 0, 0x10u };

	trace_widen_u32(sum, last, a, 3);
	CHECK_EQ_U64(sum[0], 42);
	CHECK_EQ_U64(sum[1], 7);
	CHECK_EQ_U64(sum[2], 0xfffffff0ull);
	trace_widen_u32(sum, last, b, 3);
	CHECK_EQ_U64(sum[0], 50);
	CHECK_EQ_U64(sum[1], 7);
	CHECK_EQ_U64(sum[2], 0x100000010ull);	/* past 2^32: 0x20 more */
	CHECK_EQ_INT(last[2], 0x10);
}

int main(void)
{
	test_widen();
	test_args();
	test_hist();
	test_launches();
	test_launch_clocks();
	test_smload();
	test_kernels();
	test_memtrace_to_sim();
	test_mem_expand();
	test_mem_account();
	test_kerneldur();
	test_kerneldur_slot();
	test_slots_reader();
	test_slots_giveup();
	test_launchlate_slots();
	test_pack();
	test_pack_records();
	return test_done("test_trace_lib");
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workload generators and trace files: every generator yields exactly the
 * pattern it promises (checked per access, not by eye), deterministically;
 * traces round-trip bit-exact in both forms; malformed traces get an error
 * that says where.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"
#include "../hal/sim/trace_io.h"
#include "../hal/sim/workload.h"

#define GPU_MEM (256ULL << 20)	/* small, so every workload runs in a blink */
#define PAGE 4096ULL

static struct test_log logbuf;
static struct gpuext_runtime *rt;

/* The whole stream of a workload (malloc'd). */
static struct sim_access *drain(struct sim_workload *w, size_t *n)
{
	uint64_t total = sim_workload__total(w);
	struct sim_access *a = malloc((total + 1) * sizeof(*a));
	size_t got = 0, k;

	/* odd chunk sizes, so resuming in the middle of every state is exercised */
	while (a && (k = sim_workload__next(w, a + got, got % 3 ? 1000 : 777)) > 0)
		got += k;
	*n = got;
	return a;
}

static struct sim_workload *mk(const char *spec, uint64_t seed)
{
	GPUEXT_OPTS(sim_workload_opts, o, .gpu_mem_bytes = GPU_MEM, .seed = seed, .rt = rt);
	struct sim_workload *w = NULL;
	int err = sim_workload__new(spec, &o, &w);

	CHECK_EQ_INT(err, 0);
	return w;
}

static uint64_t fnv(const struct sim_access *a, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	const uint8_t *p = (const uint8_t *)a;

	for (size_t i = 0; i < n * sizeof(*a); i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

static const struct sim_range *range_of(const struct sim_range *r, size_t n, uint64_t va)
{
	for (size_t i = 0; i < n; i++)
		if (va >= r[i].va && va < r[i].va + r[i].size)
			return &r[i];
	return NULL;
}

/* Properties every workload has. */
static void check_common(const char *name)
{
	struct sim_workload *w = mk(name, 42), *w2 = mk(name, 42), *w3 = mk(name, 43);
	const struct sim_range *r;
	struct sim_access *a, *b, *c;
	size_t n, nb, nc, nr, bad = 0;
	double over;

	if (!w || !w2 || !w3)
		return;
	nr = sim_workload__ranges(w, &r);
	CHECK(nr >= 1);
	for (size_t i = 0; i < nr; i++) {
		CHECK_EQ_U64(r[i].va % (2ULL << 20), 0);
		CHECK_EQ_U64(r[i].size % (2ULL << 20), 0);
		CHECK(r[i].size > 0);
		if (i)
			CHECK(r[i].va >= r[i - 1].va + r[i - 1].size);	/* sorted, disjoint */
	}
	over = sim_workload__oversub(w);
	if (!(over >= 1.2 && over <= 2.0))
		test_fail(__FILE__, __LINE__, "%s: oversubscription %.3f outside [1.2, 2.0]", name, over);
	/* and close to the workload's stated default (rounding to blocks only) */
	CHECK(fabs(over - sim_workload__desc(w)->default_oversub) < 0.05);
	a = drain(w, &n);
	CHECK_EQ_U64(n, sim_workload__total(w));
	CHECK(n > 100000);
	for (size_t i = 0; a && i < n; i++) {
		const struct sim_range *in = range_of(r, nr, a[i].va);

		if (!in || in->tgid != a[i].tgid || a[i].pad)
			bad++;
	}
	if (bad)
		test_fail(__FILE__, __LINE__, "%s: %zu accesses outside their tgid's ranges", name, bad);
	/* same seed, same stream; rewinding replays it */
	b = drain(w2, &nb);
	CHECK_EQ_U64(nb, n);
	CHECK(a && b && fnv(a, n) == fnv(b, nb));
	sim_workload__rewind(w2);
	free(b);
	b = drain(w2, &nb);
	CHECK(a && b && nb == n && fnv(a, n) == fnv(b, nb));
	/* another seed: a different stream for the randomised ones, the same layout */
	c = drain(w3, &nc);
	if (strcmp(name, "seq-scan") && strcmp(name, "stride") && strcmp(name, "train-epochs") &&
	    strcmp(name, "mix-train-train"))
		CHECK(a && c && (nc != n || fnv(a, n) != fnv(c, nc)));
	else
		CHECK(a && c && nc == n && fnv(a, n) == fnv(c, nc));
	free(a);
	free(b);
	free(c);
	sim_workload__free(w);
	sim_workload__free(w2);
	sim_workload__free(w3);
}

static void test_registry(void)
{
	size_t n;
	const struct sim_workload_desc *d = sim_workload_list(&n);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK_EQ_U64(n, 8);
	for (size_t i = 0; i < n; i++) {
		CHECK(d[i].default_oversub >= 1.2 && d[i].default_oversub <= 2.0);
		CHECK(sim_workload_find(d[i].name) == &d[i]);
		CHECK(d[i].summary && d[i].models && d[i].knob_cnt <= SIM_WORKLOAD_MAX_KNOBS);
		check_common(d[i].name);
	}
	CHECK(sim_workload_find("moe-decode:top_k=3") == sim_workload_find("moe-decode"));
	CHECK(sim_workload_find("moe") == NULL);
	sim_workload_print_help(f);
	fclose(f);
	CHECK_STR_CONTAINS(buf, "gnn-sample");
	CHECK_STR_CONTAINS(buf, "zipf_s");
	free(buf);
}

static void test_seq_scan(void)
{
	struct sim_workload *w = mk("seq-scan:passes=2", 1);
	const struct sim_range *r;
	struct sim_access *a;
	size_t n, pages, bad = 0;

	if (!w)
		return;
	sim_workload__ranges(w, &r);
	pages = r[0].size / PAGE;
	a = drain(w, &n);
	CHECK_EQ_U64(n, 2 * pages);
	/* pass p touches page i at position p * pages + i: full coverage, in order */
	for (size_t i = 0; a && i < n; i++)
		if (a[i].va != r[0].va + (i % pages) * PAGE || a[i].kernel != i / pages ||
		    a[i].is_write)
			bad++;
	CHECK_EQ_U64(bad, 0);
	free(a);
	sim_workload__free(w);
}

static void test_stride(void)
{
	struct sim_workload *w = mk("stride:layers=8,stride_pages=16,passes=1", 1);
	const struct sim_range *r;
	struct sim_access *a;
	size_t n, pages, rows, layer_pages, bad = 0, strided = 0;
	uint8_t *seen;

	if (!w)
		return;
	sim_workload__ranges(w, &r);
	pages = r[0].size / PAGE;
	a = drain(w, &n);
	layer_pages = n / 8;
	rows = layer_pages / 16;
	CHECK_EQ_U64(n, pages);	/* one pass touches every page once */
	seen = calloc(pages, 1);
	for (size_t i = 0; a && seen && i < n; i++) {
		uint64_t p = (a[i].va - r[0].va) / PAGE;

		if (p >= pages || seen[p]++)
			bad++;
		CHECK_EQ_U64(a[i].kernel, i / layer_pages);	/* one kernel per layer */
		/* inside a column walk, the delta is exactly one row pitch */
		if (i && i % rows) {
			strided++;
			if (a[i].va - a[i - 1].va != 16 * PAGE)
				bad++;
		}
	}
	CHECK_EQ_U64(bad, 0);
	CHECK_EQ_U64(strided, n - n / rows);
	free(seen);
	free(a);
	sim_workload__free(w);
}

static void test_random(void)
{
	struct sim_workload *w = mk("random:list_pages=8,queries=40000", 5);
	const struct sim_range *r;
	struct sim_access *a;
	size_t n, lists, bad = 0, bucket[16] = { 0 };

	if (!w)
		return;
	sim_workload__ranges(w, &r);
	/* the footprint is floor(1.3 x GPU pages), cut into whole lists; the range rounds up */
	lists = (size_t)(GPU_MEM / PAGE * 1.3) / 8;
	a = drain(w, &n);
	CHECK_EQ_U64(n, 40000ULL * 4 * 8);
	for (size_t i = 0; a && i < n; i += 8) {
		uint64_t p = (a[i].va - r[0].va) / PAGE;

		if (p % 8)
			bad++;	/* a run starts at a list boundary */
		for (size_t k = 1; k < 8; k++)
			if (a[i + k].va != a[i].va + k * PAGE)
				bad++;
		bucket[p / 8 * 16 / lists]++;
		CHECK(a[i].kernel == (i / 32) / 64);
	}
	CHECK_EQ_U64(bad, 0);
	/* uniform: each sixteenth of the lists gets 1/16 of the probes, within 5 % */
	for (int b = 0; b < 16; b++)
		if (fabs(bucket[b] - n / 8 / 16.0) > 0.05 * n / 8 / 16.0)
			test_fail(__FILE__, __LINE__, "random: bucket %d has %zu probes, want ~%zu", b,
				  bucket[b], n / 8 / 16);
	free(a);
	sim_workload__free(w);
}

/* Share of the top m ranks under Zipf(s) over E ranks: the generator's promise for top_k=1. */
static double zipf_top(unsigned E, double s, unsigned m)
{
	double top = 0, all = 0;

	for (unsigned i = 1; i <= E; i++) {
		all += pow(i, -s);
		if (i <= m)
			top += pow(i, -s);
	}
	return top / all;
}

static int cmp_desc(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? 1 : a > b ? -1 : 0;
}

/* Per layer, the share of expert selections that go to its 10 % most popular experts. */
static double moe_top_share(const char *spec, unsigned *hot_differs)
{
	struct sim_workload *w = mk(spec, 9);
	const struct sim_range *r;
	struct sim_access *a;
	size_t n, dense_pages;
	unsigned L, E, top_k, tokens;
	uint64_t cnt[16][32] = { { 0 } }, picks = 0, top = 0, expert_acc = 0, per, bad = 0;
	uint32_t *dense;
	int hot0 = -1;

	if (!w)
		return 0;
	L = (unsigned)sim_workload__knob(w, "layers");
	E = (unsigned)sim_workload__knob(w, "experts");
	top_k = (unsigned)sim_workload__knob(w, "top_k");
	tokens = (unsigned)sim_workload__knob(w, "tokens");
	CHECK(L <= 16 && E <= 32);
	sim_workload__ranges(w, &r);
	a = drain(w, &n);
	/* every token reads each dense page once; the dense range is all but its rounding */
	dense_pages = r[0].size / PAGE;
	dense = calloc(dense_pages, sizeof(*dense));
	for (size_t i = 0; a && dense && i < n; i++) {
		if (a[i].va < r[1].va)
			dense[(a[i].va - r[0].va) / PAGE]++;
		else
			expert_acc++;
	}
	for (size_t p = 0; dense && p < dense_pages; p++)
		if (dense[p] != tokens && (dense[p] || p < dense_pages - 512 - L))
			bad++;
	CHECK_EQ_U64(bad, 0);
	free(dense);
	/* each selection reads one whole expert */
	per = expert_acc / ((uint64_t)tokens * L * top_k);
	CHECK_EQ_U64(expert_acc % ((uint64_t)tokens * L * top_k), 0);
	for (size_t i = 0; a && per && i < n; i++) {
		uint64_t p;

		if (a[i].va < r[1].va)
			continue;
		p = (a[i].va - r[1].va) / PAGE;
		if (p % per == 0 && p / per < (uint64_t)L * E) {
			cnt[p / per / E][p / per % E]++;
			picks++;
		}
	}
	CHECK_EQ_U64(picks, (uint64_t)tokens * L * top_k);
	for (unsigned l = 0; l < L; l++) {
		unsigned m = E / 10 ? E / 10 : 1, best = 0;

		for (unsigned e = 1; e < E; e++)
			if (cnt[l][e] > cnt[l][best])
				best = e;
		if (l == 0)
			hot0 = (int)best;
		else if ((int)best != hot0)
			(*hot_differs)++;
		qsort(cnt[l], E, sizeof(cnt[l][0]), cmp_desc);
		for (unsigned k = 0; k < m; k++)
			top += cnt[l][k];
	}
	free(a);
	sim_workload__free(w);
	return picks ? (double)top / (double)picks : 0;
}

static void test_moe(void)
{
	unsigned differs = 0;
	/* top_k = 1: every selection is one Zipf draw; E = 32, top 10 % = 3 experts */
	double share = moe_top_share("moe-decode:top_k=1,tokens=400,zipf_s=1.2", &differs);
	double want = zipf_top(32, 1.2, 3);

	if (fabs(share - want) > 0.03)
		test_fail(__FILE__, __LINE__, "moe: top-10%% share %.3f, Zipf(1.2) promises %.3f",
			  share, want);
	CHECK(want > 0.5);	/* the promise itself: top 10 % of experts take > 50 % */
	CHECK(differs > 0);	/* hot experts differ between layers */
	/* top_k = 2 (the default) still concentrates: at least 3x the uniform share */
	share = moe_top_share("moe-decode:tokens=200", &differs);
	CHECK(share > 3 * 3.0 / 32);
	/* zipf_s = 0 is uniform: the top 3 of 32 get about 3/32 (plus sampling noise) */
	share = moe_top_share("moe-decode:top_k=1,tokens=400,zipf_s=0", &differs);
	CHECK(share < 0.2);
}

static void test_epochs(void)
{
	struct sim_workload *w = mk("train-epochs:layers=4,iterations=2", 3);
	const struct sim_range *r;
	struct sim_access *a;
	size_t n, half, bad = 0;

	if (!w)
		return;
	sim_workload__ranges(w, &r);
	a = drain(w, &n);
	half = n / 2;
	CHECK_EQ_U64(n % 2, 0);
	/* periodic: iteration 1 repeats iteration 0 access for access (kernels shifted by 2L) */
	for (size_t i = 0; a && i < half; i++)
		if (a[i].va != a[half + i].va || a[i].is_write != a[half + i].is_write ||
		    a[half + i].kernel != a[i].kernel + 8)
			bad++;
	CHECK_EQ_U64(bad, 0);
	/* forward writes only activations (range 1), backward writes only weights (range 0) */
	for (size_t i = 0; a && i < half; i++) {
		bool fwd = a[i].kernel < 4, act = a[i].va >= r[1].va;

		if (a[i].is_write && fwd != act)
			bad++;
	}
	CHECK_EQ_U64(bad, 0);
	/* every page of both ranges touched twice per iteration (read, then written),
	 * but for the ranges' rounding up to whole blocks */
	CHECK(half <= 2 * (r[0].size + r[1].size) / PAGE);
	CHECK(half > 2 * ((r[0].size + r[1].size) / PAGE - 2 * 512));
	free(a);
	sim_workload__free(w);
}

static void test_gnn(void)
{
	struct sim_workload *w = mk("gnn-sample:fanout=10,p_local=0.8,window=1024,feat_bytes=1024", 11);
	const struct sim_range *r;
	struct sim_access *a;
	size_t n, local = 0, nb = 0;
	uint64_t nodes;
	double want;

	if (!w)
		return;
	sim_workload__ranges(w, &r);
	nodes = r[0].size / 1024;
	a = drain(w, &n);
	for (size_t i = 0; a && i < n; i++) {
		uint64_t seed, node = (a[i].va - r[0].va) / 1024, d;

		CHECK_EQ_U64((a[i].va - r[0].va) % 1024, 0);
		if (i % 11 == 0)
			continue;
		seed = (a[i - i % 11].va - r[0].va) / 1024;
		d = node > seed ? node - seed : seed - node;
		d = d < nodes - d ? d : nodes - d;	/* the window wraps */
		local += d <= 1024;
		nb++;
	}
	want = 0.8 + 0.2 * (2 * 1024 + 1) / (double)nodes;
	if (fabs((double)local / nb - want) > 0.01)
		test_fail(__FILE__, __LINE__, "gnn: %.4f of neighbours local, want %.4f",
			  (double)local / nb, want);
	free(a);
	sim_workload__free(w);
}

static void test_mixes(void)
{
	struct sim_workload *w = mk("mix-infer-train:lc_frac=0.4,lc_share=0.3", 2);
	const struct sim_range *r;
	struct sim_access *a;
	size_t n, nr, lc = 0, window = 0;
	uint64_t lc_bytes = 0;

	if (!w)
		return;
	nr = sim_workload__ranges(w, &r);
	CHECK_EQ_U64(nr, 4);
	for (size_t i = 0; i < nr; i++) {
		CHECK_EQ_U64(r[i].tgid, SIM_TGID_BASE + i / 2);
		CHECK_EQ_U64((r[i].va - SIM_VA_BASE) / SIM_TENANT_VA_STRIDE, i / 2);
		if (r[i].tgid == SIM_TGID_BASE)
			lc_bytes += r[i].size;
	}
	/* the server's footprint is lc_frac of GPU memory (plus block rounding) */
	CHECK(fabs((double)lc_bytes / GPU_MEM - 0.4) < 0.02);
	a = drain(w, &n);
	/* both run side by side: in the first 90 % of the stream, LC makes lc_share of the accesses */
	window = n * 9 / 10;
	for (size_t i = 0; a && i < window; i++)
		lc += a[i].tgid == SIM_TGID_BASE;
	CHECK(fabs((double)lc / window - 0.3) < 0.01);
	free(a);
	sim_workload__free(w);

	w = mk("mix-train-train", 2);
	if (!w)
		return;
	a = drain(w, &n);
	lc = 0;
	for (size_t i = 0; a && i < n; i++)
		lc += a[i].tgid == SIM_TGID_BASE;
	CHECK_EQ_U64(lc, n / 2);	/* equal trainers, equal shares */
	free(a);
	sim_workload__free(w);
}

static void test_bad_specs(void)
{
	GPUEXT_OPTS(sim_workload_opts, o, .gpu_mem_bytes = GPU_MEM, .rt = rt);
	struct sim_workload *w = NULL;
	static const struct {
		const char *spec;
		int err;
		const char *msg;
	} cases[] = {
		{ "nope", -ENOENT, "no workload 'nope'" },
		{ "moe-decode:nope=1", -EINVAL, "no knob 'nope' (knobs: layers, experts" },
		{ "moe-decode:top_k=0", -EINVAL, "knob top_k=0 is invalid (want an integer in 1..16)" },
		{ "moe-decode:top_k=1.5", -EINVAL, "want an integer" },
		{ "moe-decode:zipf_s=abc", -EINVAL, "knob zipf_s=abc is invalid" },
		{ "moe-decode:top_k", -EINVAL, "is not name=value" },
		{ "moe-decode:experts=4,top_k=4", -EINVAL, "top_k (4) must be below experts (4)" },
		{ "stride:layers=1024,stride_pages=512", -EINVAL, "too small for these knobs" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		test_log_clear(&logbuf);
		CHECK_EQ_INT(sim_workload__new(cases[i].spec, &o, &w), cases[i].err);
		CHECK(w == NULL);
		CHECK_STR_CONTAINS(logbuf.buf, cases[i].msg);
	}
	o.oversub = 20;
	CHECK_EQ_INT(sim_workload__new("seq-scan", &o, &w), -EINVAL);
	o.oversub = 0.5;	/* fits: allowed for baselines */
	CHECK_EQ_INT(sim_workload__new("seq-scan", &o, &w), 0);
	CHECK(w && fabs(sim_workload__oversub(w) - 0.5) < 0.01);
	sim_workload__free(w);
	o.oversub = 0;
	o.max_accesses = 1234;
	CHECK_EQ_INT(sim_workload__new("gnn-sample", &o, &w), 0);
	if (w) {
		size_t n;
		struct sim_access *a = drain(w, &n);

		CHECK_EQ_U64(n, 1234);
		free(a);
		sim_workload__free(w);
	}
}

/* Informational: generation speed (not asserted; benchmarks live in bench/). */
static void report_speed(void)
{
	size_t cnt;
	const struct sim_workload_desc *d = sim_workload_list(&cnt);
	static struct sim_access buf[65536];

	for (size_t i = 0; i < cnt; i++) {
		GPUEXT_OPTS(sim_workload_opts, o, .gpu_mem_bytes = 4ULL << 30, .max_accesses = 2000000);
		struct sim_workload *w;
		struct timespec t0, t1;
		uint64_t total = 0;
		size_t k;

		if (sim_workload__new(d[i].name, &o, &w))
			continue;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		while ((k = sim_workload__next(w, buf, 65536)) > 0)
			total += k;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		printf("  %-16s %8.1f M accesses/s (%llu accesses, %.2fx of 4 GiB)\n", d[i].name,
		       total / ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) * 1e3,
		       (unsigned long long)total, sim_workload__oversub(w));
		sim_workload__free(w);
	}
}

/* ---- traces ---- */

static bool same_trace(const struct sim_trace *a, const struct sim_trace *b)
{
	if (a->range_cnt != b->range_cnt || a->acc_cnt != b->acc_cnt)
		return false;
	/* ranges field by field (the struct has padding); accesses bit-exact */
	for (size_t i = 0; i < a->range_cnt; i++)
		if (a->ranges[i].va != b->ranges[i].va || a->ranges[i].size != b->ranges[i].size ||
		    a->ranges[i].tgid != b->ranges[i].tgid)
			return false;
	return !a->acc_cnt || !memcmp(a->acc, b->acc, a->acc_cnt * sizeof(*a->acc));
}

static void roundtrip(const struct sim_trace *t, const char *what)
{
	char err[SIM_TRACE_ERR_LEN] = "";

	for (int fmt = SIM_TRACE_BINARY; fmt <= SIM_TRACE_TEXT; fmt++) {
		void *buf = NULL, *buf2 = NULL;
		size_t len = 0, len2 = 0;
		struct sim_trace back = { 0 };

		CHECK_EQ_INT(sim_trace__save_mem(t, fmt, &buf, &len, err, sizeof(err)), 0);
		CHECK_EQ_INT(sim_trace__load_mem(buf, len, what, &back, err, sizeof(err)), 0);
		if (!same_trace(t, &back))
			test_fail(__FILE__, __LINE__, "%s: %s round trip differs (%s)", what,
				  fmt == SIM_TRACE_TEXT ? "text" : "binary", err);
		/* writing what was read gives the same bytes */
		CHECK_EQ_INT(sim_trace__save_mem(&back, fmt, &buf2, &len2, err, sizeof(err)), 0);
		CHECK(len == len2 && buf && buf2 && !memcmp(buf, buf2, len));
		free(buf);
		free(buf2);
		sim_trace__free(&back);
	}
}

static void test_trace_roundtrip(void)
{
	static const char *files[] = { "two_tenants", "stride" };
	char path[512], err[SIM_TRACE_ERR_LEN] = "";
	struct sim_trace t = { 0 };
	size_t cnt;
	const struct sim_workload_desc *d = sim_workload_list(&cnt);

	for (size_t i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/data/%s.trace.txt", GPUEXT_TEST_DATA_DIR, files[i]);
		CHECK_EQ_INT(sim_trace__load(path, &t, err, sizeof(err)), 0);
		roundtrip(&t, files[i]);
		if (i == 0) {
			/* what the hand-written file says */
			CHECK_EQ_U64(t.range_cnt, 3);
			CHECK_EQ_U64(t.ranges[0].size, 4ULL << 20);
			CHECK_EQ_U64(t.acc_cnt, 8);
			CHECK_EQ_U64(t.acc[1].kernel, 0);
			CHECK_EQ_U64(t.acc[2].is_write, 1);
			CHECK_EQ_U64(t.acc[6].va, 0x100000003000ULL);
			CHECK_EQ_U64(t.acc[7].kernel, 65535);
		}
		sim_trace__free(&t);
	}
	/* every workload, through both forms */
	for (size_t i = 0; i < cnt; i++) {
		GPUEXT_OPTS(sim_workload_opts, o, .gpu_mem_bytes = 64ULL << 20, .seed = 7,
			    .max_accesses = 300000);
		struct sim_workload *w;
		const struct sim_range *r;
		size_t n;

		if (sim_workload__new(d[i].name, &o, &w)) {
			test_fail(__FILE__, __LINE__, "workload %s", d[i].name);
			continue;
		}
		t.range_cnt = sim_workload__ranges(w, &r);
		t.ranges = (struct sim_range *)r;
		t.acc = drain(w, &n);
		t.acc_cnt = n;
		roundtrip(&t, d[i].name);
		if (i == 0) {
			void *buf;
			size_t len;

			/* delta encoding: a sequential scan costs 1 byte an access (+ a kernel
			 * change per pass) */
			CHECK_EQ_INT(sim_trace__save_mem(&t, SIM_TRACE_BINARY, &buf, &len, err, sizeof(err)), 0);
			CHECK(len <= SIM_TRACE_HEADER_SIZE + SIM_TRACE_RANGE_SIZE + n + 8 * 8);
			free(buf);
		}
		if (i == 2) {
			void *buf;
			size_t len;

			/* stride: 2 bytes an access */
			CHECK_EQ_INT(sim_trace__save_mem(&t, SIM_TRACE_BINARY, &buf, &len, err, sizeof(err)), 0);
			CHECK(len <= SIM_TRACE_HEADER_SIZE + SIM_TRACE_RANGE_SIZE + 2 * n + 1024);
			free(buf);
		}
		free(t.acc);
		sim_workload__free(w);
	}
	memset(&t, 0, sizeof(t));
}

static void test_trace_files(void)
{
	char dir[] = "/tmp/gx-trace-XXXXXX", a[300], b[300], c[300], err[SIM_TRACE_ERR_LEN] = "";
	struct sim_trace t1 = { 0 }, t2 = { 0 };
	GPUEXT_OPTS(sim_workload_opts, o, .gpu_mem_bytes = 64ULL << 20, .seed = 3,
		    .max_accesses = 200000);
	struct sim_trace_reader *r;
	FILE *f;

	if (!mkdtemp(dir)) {
		test_fail(__FILE__, __LINE__, "mkdtemp");
		return;
	}
	snprintf(a, sizeof(a), "%s/moe.trace", dir);
	snprintf(b, sizeof(b), "%s/moe.txt", dir);
	snprintf(c, sizeof(c), "%s/moe2.trace", dir);
	CHECK_EQ_INT(sim_trace_record_workload("mix-infer-train", &o, a, SIM_TRACE_AUTO, err, sizeof(err)), 0);
	CHECK_EQ_INT(sim_trace_convert(a, b, SIM_TRACE_AUTO, err, sizeof(err)), 0);
	CHECK_EQ_INT(sim_trace_convert(b, c, SIM_TRACE_AUTO, err, sizeof(err)), 0);
	CHECK_EQ_INT(sim_trace__load(a, &t1, err, sizeof(err)), 0);
	CHECK_EQ_INT(sim_trace__load(c, &t2, err, sizeof(err)), 0);
	CHECK(t1.acc_cnt > 100000 && same_trace(&t1, &t2));
	CHECK_EQ_INT(sim_trace_reader__open(b, &r, err, sizeof(err)), 0);
	if (r) {
		CHECK_EQ_INT(sim_trace_reader__format(r), SIM_TRACE_TEXT);
		CHECK_EQ_U64(sim_trace_reader__count(r), UINT64_MAX);
		sim_trace_reader__close(r);
	}
	CHECK_EQ_INT(sim_trace_reader__open(a, &r, err, sizeof(err)), 0);
	if (r) {
		CHECK_EQ_INT(sim_trace_reader__format(r), SIM_TRACE_BINARY);
		CHECK_EQ_U64(sim_trace_reader__count(r), t1.acc_cnt);
		sim_trace_reader__close(r);
	}
	/* the recorded trace is exactly the generator's stream */
	{
		struct sim_workload *w = NULL;
		size_t n;
		struct sim_access *s;

		CHECK_EQ_INT(sim_workload__new("mix-infer-train", &o, &w), 0);
		s = w ? drain(w, &n) : NULL;
		CHECK(s && n == t1.acc_cnt && !memcmp(s, t1.acc, n * sizeof(*s)));
		free(s);
		sim_workload__free(w);
	}
	/* errors name the file */
	CHECK_EQ_INT(sim_trace__load("/nonexistent/x.trace", &t2, err, sizeof(err)), -ENOENT);
	CHECK_STR_CONTAINS(err, "/nonexistent/x.trace: cannot open");
	f = fopen(b, "a");
	if (f) {
		fputs("access 1000 0x5 r\n", f);
		fclose(f);
	}
	sim_trace__free(&t2);
	CHECK_EQ_INT(sim_trace_convert(b, c, SIM_TRACE_AUTO, err, sizeof(err)), -EINVAL);
	{
		char want[64];

		/* a comment line, 4 range lines, the accesses, then the appended one */
		snprintf(want, sizeof(want), "moe.txt:%zu: access: va 0x5 is outside", t1.acc_cnt + 6);
		CHECK_STR_CONTAINS(err, want);
	}
	CHECK(access(c, F_OK) != 0);	/* a failed conversion leaves no half-written file */
	sim_trace__free(&t1);
	remove(a);
	remove(b);
	rmdir(dir);
}

/* A small valid binary trace to corrupt: 1 range, 3 accesses. */
static size_t good_binary(uint8_t *out)
{
	struct sim_range rg = { 0x200000, 0x400000, 5 };
	struct sim_access acc[3] = {
		{ .va = 0x200000, .tgid = 5 },
		{ .va = 0x201000, .tgid = 5, .kernel = 1 },
		{ .va = 0x200000, .tgid = 5, .kernel = 1, .is_write = 1 },
	};
	struct sim_trace t = { &rg, 1, acc, 3 };
	void *buf = NULL;
	size_t len = 0;

	CHECK_EQ_INT(sim_trace__save_mem(&t, SIM_TRACE_BINARY, &buf, &len, NULL, 0), 0);
	memcpy(out, buf, len);
	free(buf);
	return len;
}

static void expect_bad(const void *buf, size_t len, const char *msg)
{
	char err[SIM_TRACE_ERR_LEN] = "";
	struct sim_trace t = { 0 };
	int e = sim_trace__load_mem(buf, len, "bad", &t, err, sizeof(err));

	CHECK_EQ_INT(e, -EINVAL);
	CHECK(t.acc == NULL && t.ranges == NULL);
	if (!strstr(err, msg))
		test_fail(__FILE__, __LINE__, "want \"%s\" in \"%s\"", msg, err);
}

static void test_trace_malformed_binary(void)
{
	uint8_t g[256], b[256];
	size_t n = good_binary(g);
	/*
	 * layout: header 24, range 24, then records at 48: [48] tag 0x08 (page
	 * delta) + 2-byte delta 0x200 pages; [51] tag 0x14 (kernel, next page) +
	 * kernel 1; [53] tag 0x09 (write, page delta) + 1-byte delta -1 page.
	 * 55 bytes.
	 */
	struct sim_trace ok = { 0 };

	CHECK_EQ_U64(n, 55);
	CHECK_EQ_U64(g[48], 0x08);
	CHECK_EQ_U64(g[51], 0x14);
	CHECK_EQ_U64(g[53], 0x09);
	CHECK_EQ_INT(sim_trace__load_mem(g, n, "good", &ok, NULL, 0), 0);
	CHECK_EQ_U64(ok.acc_cnt, 3);
	CHECK_EQ_U64(ok.acc[1].kernel, 1);
	CHECK_EQ_U64(ok.acc[2].kernel, 1);
	sim_trace__free(&ok);

	expect_bad(g, 10, "bad: byte 0xa: the header is truncated");
	memcpy(b, g, n);
	b[0] = 0x7f;	/* not "GXTR" and not text */
	expect_bad(b, n, "bad: byte 0x0: bad magic: neither a binary trace (starts with \"GXTR\") nor a text trace (byte 0x0 is 0x7f)");
	memcpy(b, g, n);
	b[4] = 2;
	expect_bad(b, n, "byte 0x4: version 2 is not supported");
	memcpy(b, g, n);
	b[6] = 1;
	expect_bad(b, n, "byte 0x6: flags 0x1 are unknown");
	memcpy(b, g, n);
	b[8] = 2;	/* two ranges announced, one present: the table runs into the records */
	expect_bad(b, n, "range 1 of 2 is truncated");
	expect_bad(g, 30, "byte 0x18: range 0 of 1 is truncated");
	memcpy(b, g, n);
	b[24] = 0x01;	/* va 0x200001 */
	expect_bad(b, n, "byte 0x18: range 0: va is not 2 MiB aligned");
	memcpy(b, g, n);
	b[32 + 2] = 0x30;	/* size 0x300000 */
	expect_bad(b, n, "range 0: size is not a positive multiple of 2 MiB");
	expect_bad(g, n - 1, "byte 0x35: record 2 is truncated");
	expect_bad(g, n - 2, "byte 0x35: the file ends after 2 of 3 records (truncated)");
	memcpy(b, g, n);
	b[n] = 0;
	expect_bad(b, n + 1, "byte 0x37: trailing bytes after the 3 records");
	memcpy(b, g, n);
	b[48] = 0x20;
	expect_bad(b, n, "byte 0x30: record 0: tag 0x20 has reserved bits set");
	memcpy(b, g, n);
	b[51] = 0x18;
	expect_bad(b, n, "byte 0x33: record 1: tag 0x18 sets both next-page and page-delta");
	memcpy(b, g, n);
	b[48] = 0x02;	/* tenant switch to index 0x00, then the delta becomes the tenant... */
	memcpy(b + 49, "\x05\x00", 2);	/* tenant 5 of 1 */
	expect_bad(b, n, "record 0: tenant index 5, but the range table has 1 tenants");
	memcpy(b, g, n);
	memset(b + 49, 0xff, 11);	/* a varint that never ends */
	expect_bad(b, 60, "record 0: a varint is longer than 64 bits");
	memcpy(b, g, n);
	b[48] = 0x04;
	memcpy(b + 49, "\x80\x80\x04\x00", 4);	/* kernel 65536 */
	expect_bad(b, n + 2, "record 0: kernel 65536 does not fit 16 bits");
	memcpy(b, g, n);
	b[48] = 0x00;	/* a byte delta ... */
	b[49] = 0x02;	/* ... of +1 from 0: va 0x1 */
	expect_bad(b, 50, "byte 0x30: record 0: va 0x1 is outside every range");
}

static void test_trace_malformed_text(void)
{
	static const struct {
		const char *text, *msg;
	} cases[] = {
		{ "range 1 0x200000 2M\nfoo 1 2 3\n", "bad:2: unknown record 'foo'" },
		{ "range 1 0x2000zz 2M\n", "bad:1: bad va '0x2000zz'" },
		{ "range 1 0x200000 2Q\n", "bad:1: bad size '2Q'" },
		{ "range -1 0x200000 2M\n", "bad:1: bad tgid '-1'" },
		{ "range 1 0x200000\n", "bad:1: range wants 3 fields" },
		{ "# c\n\nrange 1 0x200001 2M\n", "bad:3: range: va is not 2 MiB aligned" },
		{ "range 1 0x200000 3M\n", "bad:1: range: size is not a positive multiple of 2 MiB" },
		{ "range 1 0x200000 4M\nrange 2 0x400000 2M\n", "bad:2: range: range [0x400000, 0x600000) overlaps range #0" },
		{ "range 1 0x200000 2M\naccess 1 0x200000 x\n", "bad:2: bad access kind 'x' (want r or w)" },
		{ "range 1 0x200000 2M\naccess 1 0x200000 r 70000\n", "bad:2: bad kernel '70000'" },
		{ "range 1 0x200000 2M\naccess 1 0x200000\n", "bad:2: access wants 3 or 4 fields" },
		{ "range 1 0x200000 2M\naccess 1 0x200000 r\nrange 1 0x800000 2M\n", "bad:3: range after the first access" },
		{ "range 1 0x200000 2M\naccess 1 0x400000 r\n", "bad:2: access: va 0x400000 is outside every range" },
		{ "range 1 0x200000 2M\naccess 2 0x200000 r\n", "bad:2: access: tgid 2 has no range" },
		{ "range 1 0x200000 2M\nrange 2 0x400000 2M\naccess 2 0x200000 r\n", "bad:3: access: va 0x200000 lies in a range of tgid 1, not of tgid 2" },
		{ "range 1 0x200000 2M\naccess 1 0x200000 r 1 2\n", "bad:2: access wants 3 or 4 fields" },
		{ "range 1 0x200000 2M\naccess 1 99999999999999999999999 r\n", "bad:2: bad va" },
		{ "range 1 0x200000 2M\naccess 1 0x200000 r\x01\n", "bad:2: byte 0x01 is not text" },
	};
	char longline[700];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		expect_bad(cases[i].text, strlen(cases[i].text), cases[i].msg);
	memset(longline, '#', sizeof(longline));
	memcpy(longline, "range 1 0x200000 2M\n", 20);
	expect_bad(longline, sizeof(longline), "bad:2: line longer than 512 characters");
	/* an empty file and a comment-only file are valid empty traces */
	{
		struct sim_trace t = { 0 };

		CHECK_EQ_INT(sim_trace__load_mem("", 0, "empty", &t, NULL, 0), 0);
		CHECK(t.range_cnt == 0 && t.acc_cnt == 0);
		sim_trace__free(&t);
		CHECK_EQ_INT(sim_trace__load_mem("# nothing\n", 10, "c", &t, NULL, 0), 0);
		sim_trace__free(&t);
	}
}

static void test_trace_writer_checks(void)
{
	struct sim_range rg[2] = { { 0x200000, 0x400000, 1 }, { 0x400000, 0x200000, 2 } };
	struct sim_access bad = { .va = 0x900000, .tgid = 1 };
	struct sim_trace_writer *w = NULL;
	char err[SIM_TRACE_ERR_LEN] = "", *p = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&p, &len);

	/* overlapping ranges are refused before anything is written */
	CHECK_EQ_INT(sim_trace_writer__open_file(f, "w", SIM_TRACE_BINARY, rg, 2, &w, err, sizeof(err)),
		     -EINVAL);
	CHECK_STR_CONTAINS(err, "w: range 1: range [0x400000, 0x600000) overlaps range #0");
	rg[1].va = 0x600000;
	CHECK_EQ_INT(sim_trace_writer__open_file(f, "w", SIM_TRACE_BINARY, rg, 2, &w, err, sizeof(err)), 0);
	if (w) {
		CHECK_EQ_INT(sim_trace_writer__write(w, &bad, 1), -EINVAL);
		CHECK_STR_CONTAINS(sim_trace_writer__error(w), "w: access 0: va 0x900000 is outside every range");
		CHECK_EQ_INT(sim_trace_writer__close(w, err, sizeof(err)), -EINVAL);
	}
	fclose(f);
	free(p);
}

int main(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = test_log_print, .print_user = &logbuf);

	if (gpuext_runtime__new(&ro, &rt)) {
		fprintf(stderr, "runtime\n");
		return 1;
	}
	test_registry();
	test_seq_scan();
	test_stride();
	test_random();
	test_moe();
	test_epochs();
	test_gnn();
	test_mixes();
	test_bad_specs();
	test_trace_roundtrip();
	test_trace_files();
	test_trace_malformed_binary();
	test_trace_malformed_text();
	test_trace_writer_checks();
	printf("generation speed (informational):\n");
	report_speed();
	gpuext_runtime__free(rt);
	return test_done("test_sim_workload");
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The simulator's memory model (hal/sim/sim_mem.c): one test per stock UVM
 * rule with values worked out by hand, then the policy hooks, the kfunc
 * checks, attach/detach, ejection and per-process accounting.
 */
#include <errno.h>
#include <stdlib.h>

#include "../hal/sim/sim_mem.h"
#include "testlib.h"

#define MB2 (2ULL << 20)
#define PG 4096ULL
#define BASE 0x7f0000000000ULL	/* 2 MiB aligned */
#define BLK(i) (BASE + (uint64_t)(i) * MB2)
#define BID(i) (BLK(i) >> 21)

static struct test_log logbuf;

/* ---- event recording ---- */

struct rec_ev {
	enum gpuext_hal_event_kind kind;
	unsigned hook;
	uint64_t id, a, b;
	int64_t ret;
	char detail[160];
};

struct recorder {
	struct rec_ev ev[4096];
	size_t n;
};

static void rec_fn(const struct gpuext_hal_event *ev, void *user)
{
	struct recorder *r = user;
	struct rec_ev *e;

	if (r->n >= sizeof(r->ev) / sizeof(r->ev[0]))
		return;
	e = &r->ev[r->n++];
	e->kind = ev->kind;
	e->hook = ev->hook;
	e->id = ev->id;
	e->a = ev->a;
	e->b = ev->b;
	e->ret = ev->ret;
	snprintf(e->detail, sizeof(e->detail), "%s", ev->detail ? ev->detail : "");
}

static size_t count_ev(const struct recorder *r, enum gpuext_hal_event_kind kind, int hook)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n; i++)
		if (r->ev[i].kind == kind && (hook < 0 || r->ev[i].hook == (unsigned)hook))
			n++;
	return n;
}

/* Ids of evicted blocks, in order. */
static size_t evicted(const struct recorder *r, uint64_t *ids, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n; i++)
		if (r->ev[i].kind == GPUEXT_EV_EVICT && n < cap)
			ids[n++] = r->ev[i].id;
	return n;
}

/* ---- setup ---- */

static struct gpuext_runtime *new_rt(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, opts, .print = test_log_print, .print_user = &logbuf);
	struct gpuext_runtime *rt = NULL;

	CHECK_EQ_INT(gpuext_runtime__new(&opts, &rt), 0);
	return rt;
}

static struct sim_mem *mk(struct gpuext_runtime *rt, uint64_t blocks, bool prefetch,
			  uint64_t nblocks_range, uint32_t tgid)
{
	struct sim_mem_config cfg = { .sz = sizeof(cfg), .capacity_blocks = blocks,
				      .prefetch_disable = !prefetch };
	struct sim_range r = { .va = BASE, .size = nblocks_range * MB2, .tgid = tgid };
	struct sim_mem *m = NULL;

	CHECK_EQ_INT(sim_mem__new(rt, &cfg, &m), 0);
	if (m && nblocks_range)
		CHECK_EQ_INT(sim_mem__add_range(m, &r), 0);
	return m;
}

static void acc(struct sim_mem *m, uint64_t va, uint32_t tgid)
{
	struct sim_access a = { .va = va, .tgid = tgid };

	sim_mem__access(m, &a);
}

/* One access, serviced as its own batch. */
static void fault1(struct sim_mem *m, uint64_t va, uint32_t tgid)
{
	acc(m, va, tgid);
	sim_mem__flush(m);
}

static size_t used_ids(struct sim_mem *m, uint64_t *ids, size_t cap)
{
	return sim_mem__list_ids(m, SIM_LIST_USED, ids, cap);
}

static struct gpuext_policy *load(struct gpuext_runtime *rt, const char *name, uint64_t budget,
				  struct gpuext_object **objp)
{
	GPUEXT_OPTS(gpuext_policy_opts, po, .call_budget = budget);
	char path[512];
	struct gpuext_policy *p = NULL;
	int err;

	snprintf(path, sizeof(path), "%s/%s.bpf.o", GPUEXT_TEST_BPF_DIR, name);
	*objp = NULL;
	err = gpuext_object__open_file(rt, path, NULL, objp);
	CHECK_EQ_INT(err, 0);
	if (err)
		return NULL;
	err = gpuext_policy__open(*objp, &po, &p);
	CHECK_EQ_INT(err, 0);
	if (err)
		fprintf(stderr, "policy %s: %s\n", name, logbuf.buf);
	return p;
}

static int64_t result(struct gpuext_object *obj, uint32_t k)
{
	int64_t v = 0x5a5a;

	CHECK_EQ_INT(gpuext_map__lookup(gpuext_object__find_map(obj, "results"), &k, &v), 0);
	return v;
}

static unsigned weight(const uint64_t m[8])
{
	unsigned n = 0;

	for (int i = 0; i < 8; i++)
		n += (unsigned)__builtin_popcountll(m[i]);
	return n;
}

static void set_pages(uint64_t m[8], unsigned first, unsigned last)
{
	for (unsigned p = first; p <= last; p++)
		m[p / 64] |= 1ULL << (p % 64);
}

static bool has_page(const uint64_t m[8], unsigned p)
{
	return m[p / 64] >> (p % 64) & 1;
}

/* ------------------------------------------------------------------ */

static void test_config(void)
{
	struct gpuext_runtime *rt = new_rt();
	struct sim_mem_config c;
	struct sim_mem *m = NULL;
	char err[256];

	CHECK_EQ_INT(sim_mem__new(rt, NULL, &m), 0);
	sim_mem__config(m, &c);
	CHECK_EQ_U64(c.capacity_blocks, 16384);
	CHECK_EQ_INT(c.batch_size, 256);
	CHECK_EQ_INT(c.prefetch_threshold, 51);
	CHECK_EQ_INT(c.big_page_pages, 16);
	CHECK_EQ_U64(c.batch_overhead_ns, 20000);
	CHECK(c.h2d_gbps == 25.0 && c.d2h_gbps == 25.0);
	sim_mem__free(m);

	CHECK_EQ_INT(sim_mem_config__parse("gpu_mem=1G,h2d_gbps=12.5,d2h_gbps=6,batch=64,"
					   "batch_overhead_us=10,compute_ns=2,prefetch=off,"
					   "prefetch_threshold=60,big_page_kb=0,gpu_id=3",
					   &c, err, sizeof(err)), 0);
	CHECK_EQ_U64(c.capacity_blocks, 512);
	CHECK(c.h2d_gbps == 12.5 && c.d2h_gbps == 6.0);
	CHECK_EQ_INT(c.batch_size, 64);
	CHECK_EQ_U64(c.batch_overhead_ns, 10000);
	CHECK_EQ_U64(c.compute_ns, 2);
	CHECK(c.prefetch_disable && c.big_page_disable);
	CHECK_EQ_INT(c.prefetch_threshold, 60);
	CHECK_EQ_INT(c.gpu_id, 3);
	CHECK_EQ_INT(sim_mem_config__parse("big_page_kb=128", &c, err, sizeof(err)), 0);
	CHECK_EQ_INT(c.big_page_pages, 32);
	CHECK_EQ_INT(sim_mem_config__parse("gpu_mem=1G,colour=red", &c, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "unknown key 'colour'");
	CHECK_EQ_INT(sim_mem_config__parse("gpu_mem=1M", &c, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "gpu_mem=1M");
	CHECK_EQ_INT(sim_mem_config__parse("prefetch_threshold=101", &c, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(sim_mem_config__parse("h2d_gbps=-3", &c, err, sizeof(err)), -EINVAL);
	CHECK_EQ_INT(sim_mem_config__parse("batch", &c, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "not key=value");

	/* Bad structural config. */
	{
		struct sim_mem_config bad = { .sz = sizeof(bad), .big_page_pages = 3 };

		CHECK_EQ_INT(sim_mem__new(rt, &bad, &m), -EINVAL);
		CHECK(m == NULL);
	}
	gpuext_runtime__free(rt);
}

static void test_ranges(void)
{
	struct gpuext_runtime *rt = new_rt();
	struct sim_mem *m = mk(rt, 4, false, 2, 7);
	struct sim_range r;
	struct sim_mem_stats st;
	uint64_t mask[8];

	r = (struct sim_range){ .va = BASE + 4096, .size = MB2, .tgid = 7 };
	CHECK_EQ_INT(sim_mem__add_range(m, &r), -EINVAL);
	r = (struct sim_range){ .va = BLK(1), .size = MB2, .tgid = 8 };
	CHECK_EQ_INT(sim_mem__add_range(m, &r), -EEXIST);
	r = (struct sim_range){ .va = BLK(2), .size = 0, .tgid = 8 };
	CHECK_EQ_INT(sim_mem__add_range(m, &r), -EINVAL);
	r = (struct sim_range){ .va = BLK(2), .size = 3 * MB2, .tgid = 8 };
	CHECK_EQ_INT(sim_mem__add_range(m, &r), 0);

	test_log_clear(&logbuf);
	fault1(m, BLK(9), 7);	/* outside */
	fault1(m, BLK(9) + 8, 7);
	sim_mem__stats(m, &st);
	CHECK_EQ_U64(st.unmapped, 2);
	CHECK_EQ_U64(st.accesses, 0);
	CHECK_EQ_U64(st.faults, 0);
	CHECK_STR_CONTAINS(logbuf.buf, "outside every managed range");
	CHECK_EQ_INT(sim_mem__block_resident(m, BLK(9), mask), -ENOENT);
	CHECK_EQ_INT(sim_mem__host_access(m, BLK(4), 2 * MB2), -EINVAL);	/* runs past block 4 */
	CHECK_EQ_INT(sim_mem__tgid_stats(m, 12345, &st), -ENOENT);
	sim_mem__free(m);
	gpuext_runtime__free(rt);
}

/* pick_root_chunk_to_evict(): free chunk, else unused head, else used head. */
static void test_victim_order(void)
{
	struct gpuext_runtime *rt = new_rt();
	struct sim_mem *m = mk(rt, 3, false, 5, 1);
	struct recorder *r = calloc(1, sizeof(*r));
	struct sim_mem_stats st;
	uint64_t ids[8];

	sim_mem__set_event_sink(m, rec_fn, r);
	fault1(m, BLK(0), 1);
	fault1(m, BLK(1), 1);
	fault1(m, BLK(2), 1);
	CHECK_EQ_INT(count_ev(r, GPUEXT_EV_EVICT, -1), 0);	/* free chunks first */
	CHECK_EQ_U64(sim_mem__free_blocks(m), 0);
	CHECK_EQ_INT(used_ids(m, ids, 8), 3);
	CHECK_EQ_U64(ids[0], BID(0));
	CHECK_EQ_U64(ids[2], BID(2));

	/* The host takes block 1's only page back: its chunk goes to the unused list. */
	CHECK_EQ_INT(sim_mem__host_access(m, BLK(1), MB2), 0);
	CHECK_EQ_INT(sim_mem__list_ids(m, SIM_LIST_UNUSED, ids, 8), 1);
	CHECK_EQ_U64(ids[0], BID(1));
	CHECK_EQ_INT(used_ids(m, ids, 8), 2);

	fault1(m, BLK(3), 1);	/* unused head (block 1) before used head (block 0) */
	fault1(m, BLK(4), 1);	/* then the used head: block 0 */
	CHECK_EQ_INT(evicted(r, ids, 8), 2);
	CHECK_EQ_U64(ids[0], BID(1));
	CHECK_EQ_U64(ids[1], BID(0));
	for (size_t i = 0; i < r->n; i++)
		if (r->ev[i].kind == GPUEXT_EV_EVICT)
			CHECK_EQ_U64(r->ev[i].a, r->ev[i].id == BID(1) ? 0 : 1); /* resident pages */
	CHECK_EQ_INT(used_ids(m, ids, 8), 3);
	CHECK_EQ_U64(ids[0], BID(2));
	CHECK_EQ_U64(ids[1], BID(3));
	CHECK_EQ_U64(ids[2], BID(4));
	sim_mem__stats(m, &st);
	CHECK_EQ_U64(st.evictions, 2);
	CHECK_EQ_U64(st.pages_d2h, 2);	/* block 1's page to the host + block 0's page */
	CHECK_EQ_U64(st.bytes_d2h, 2 * PG);
	CHECK_EQ_U64(st.pages_h2d, 5);
	CHECK_EQ_U64(st.bytes_h2d, 5 * PG);
	free(r);
	sim_mem__free(m);
	gpuext_runtime__free(rt);
}

/*
 * Used-tail moves happen on allocation and on first residency only; faults
 * on a resident block and accesses to resident pages never reorder.
 */
static void test_used_tail_rules(void)
{
	struct gpuext_runtime *rt = new_rt();
	struct sim_mem *m = mk(rt, 2, false, 4, 1);
	struct recorder *r = calloc(1, sizeof(*r));
	struct sim_mem_stats st;
	uint64_t ids[8];

	sim_mem__set_event_sink(m, rec_fn, r);
	fault1(m, BLK(0), 1);
	fault1(m, BLK(1), 1);
	fault1(m, BLK(0) + PG, 1);	/* a new fault on block 0: no reorder */
	for (int i = 0; i < 1000; i++)
		acc(m, BLK(0), 1);	/* resident page: hits */
	sim_mem__flush(m);
	CHECK_EQ_INT(used_ids(m, ids, 8), 2);
	CHECK_EQ_U64(ids[0], BID(0));
	CHECK_EQ_U64(ids[1], BID(1));
	sim_mem__stats(m, &st);
	CHECK_EQ_U64(st.faults, 3);
	CHECK_EQ_U64(st.batches, 3);
	CHECK_EQ_U64(st.accesses, 1003);

	fault1(m, BLK(2), 1);	/* FIFO: block 0 goes although it was faulted last */
	CHECK_EQ_INT(evicted(r, ids, 8), 1);
	CHECK_EQ_U64(ids[0], BID(0));
	CHECK_EQ_INT(used_ids(m, ids, 8), 2);
	CHECK_EQ_U64(ids[0], BID(1));
	CHECK_EQ_U64(ids[1], BID(2));

	/* Unused -> used tail when the GPU becomes resident again; no eviction needed. */
	CHECK_EQ_INT(sim_mem__host_access(m, BLK(1), PG), 0);
	CHECK_EQ_INT(used_ids(m, ids, 8), 1);
	fault1(m, BLK(1) + 5 * PG, 1);
	CHECK_EQ_INT(evicted(r, ids, 8), 1);
	CHECK_EQ_INT(sim_mem__list_ids(m, SIM_LIST_UNUSED, ids, 8), 0);
	CHECK_EQ_INT(used_ids(m, ids, 8), 2);
	CHECK_EQ_U64(ids[0], BID(2));
	CHECK_EQ_U64(ids[1], BID(1));
	free(r);
	sim_mem__free(m);
	gpuext_runtime__free(rt);
}

/* Batches of 256 fault entries; kernel boundaries and flushes close a batch. */
static void test_batches(void)
{
	struct gpuext_runtime *rt = new_rt();
	struct sim_mem *m = mk(rt, 1024, false, 600, 1);
	struct sim_mem_stats st;
	uint64_t mask[8], ids[8];

	for (int i = 0; i < 600; i++)
		acc(m, BLK(i), 1);
	sim_mem__stats(m, &st);
	CHECK_EQ_U64(st.faults, 600);
	CHECK_EQ_U64(st.batches, 2);
	CHECK_EQ_U64(st.pages_h2d, 512);
	CHECK_EQ_INT(sim_mem__block_resident(m, BLK(511), mask), 0);
	CHECK_EQ_INT(weight(mask), 1);
	CHECK_EQ_INT(sim_mem__block_resident(m, BLK(512), mask), 0);
	CHECK_EQ_INT(weight(mask), 0);	/* in the open batch */
	sim_mem__flush(m);
	sim_mem__stats(m, &st);
	CHECK_EQ_U64(st.batches, 3);
	CHECK_EQ_U64(st.pages_h2d, 600);
	sim_mem__free(m);

	/* Duplicates: 300 accesses to one page = 256 entries, one batch, 44 hits. */
	m = mk(rt, 4, false, 1, 1);
	for (int i = 0; i < 300; i++)
		acc(m, BLK(0), 1);
	sim_mem__flush(m);
	sim_mem__stats(m, &st);
	CHECK_EQ_U64(st.accesses, 300);
	CHECK_EQ_U64(st.faults, 256);
	CHECK_EQ_U64(st.dup_faults, 255);
	CHECK_EQ_U64(st.batches, 1);
	CHECK_EQ_U64(st.pages_h2d, 1);
	sim_mem__free(m);

	/* A kernel boundary services the open batch. */
	m = mk(rt, 4, false, 2, 1);
	{
		struct sim_access a[3] = { { .va = BLK(0), .tgid = 1, .kernel = 0 },
					   { .va = BLK(0) + PG, .tgid = 1, .kernel = 0 },
					   { .va = BLK(1), .tgid = 1, .kernel = 1 } };

		sim_mem__access_n(m, a, 3);
		sim_mem__stats(m, &st);
		CHECK_EQ_U64(st.batches, 1);
		CHECK_EQ_U64(st.pages_h2d, 2);
	}
	sim_mem__free(m);

	/* Within a batch, blocks are serviced by (process, address), not arrival. */
	m = mk(rt, 8, false, 3, 5);
	{
		struct sim_range r2 = { .va = BLK(3), .size = 2 * MB2, .tgid = 2 };

		CHECK_EQ_INT(sim_mem__add_range(m, &r2), 0);
		acc(m, BLK(2), 5);
		acc(m, BLK(4), 2);
		acc(m, BLK(0), 5);
		acc(m, BLK(3), 2);
		acc(m, BLK(1), 5);
		sim_mem__flush(m);
		CHECK_EQ_INT(used_ids(m, ids, 8), 5);
		CHECK_EQ_U64(ids[0], BID(3));	/* tgid 2 first */
		CHECK_EQ_U64(ids[1], BID(4));
		CHECK_EQ_U64(ids[2], BID(0));
		CHECK_EQ_U64(ids[3], BID(1));
		CHECK_EQ_U64(ids[4], BID(2));
	}
	sim_mem__free(m);

	/* batch_size is configurable. */
	{
		struct sim_mem_config cfg = { .sz = sizeof(cfg), .batch_size = 10,
					      .prefetch_disable = true };
		struct sim_range rr = { .va = BASE, .size = 40 * MB2, .tgid = 1 };

		CHECK_EQ_INT(sim_mem__new(rt, &cfg, &m), 0);
		CHECK_EQ_INT(sim_mem__add_range(m, &rr), 0);
		for (int i = 0; i < 35; i++)
			acc(m, BLK(i), 1);
		sim_mem__stats(m, &st);
		CHECK_EQ_U64(st.batches, 3);
		sim_mem__free(m);
	}
	gpuext_runtime__free(rt);
}

/* The 51 % tree, on its own: regions worked out by hand. */
static void test_prefetch_tree(void)
{
	uint64_t res[8] = { 0 }, flt[8] = { 0 }, tree[8], out[8];
	unsigned f, l;

	/* Empty block, fault on page 0, no big pages: only the leaf qualifies. */
	set_pages(flt, 0, 0);
	sim_prefetch_tree(res, flt, 1, tree);
	CHECK(sim_prefetch_region(tree, 0, 51, &f, &l));
	CHECK_EQ_INT(f, 0);
	CHECK_EQ_INT(l, 0);
	sim_prefetch_stock(res, flt, 51, 1, out);
	CHECK_EQ_INT(weight(out), 0);

	/* Faults 0,1,2: [0,3] is 3/4 = 75 % > 51 %, [0,7] 3/8 is not: prefetch page 3. */
	set_pages(flt, 0, 2);
	sim_prefetch_stock(res, flt, 51, 1, out);
	CHECK_EQ_INT(weight(out), 1);
	CHECK(has_page(out, 3));
	/* Faults 0,1: [0,3] is exactly 50 %: nothing. */
	memset(flt, 0, sizeof(flt));
	set_pages(flt, 0, 1);
	sim_prefetch_stock(res, flt, 51, 1, out);
	CHECK_EQ_INT(weight(out), 0);

	/* 64 KiB growth: a fault on page 0 fills [0,15]; [0,31] is 50 %: prefetch 1..15. */
	memset(flt, 0, sizeof(flt));
	set_pages(flt, 0, 0);
	sim_prefetch_stock(res, flt, 51, 16, out);
	CHECK_EQ_INT(weight(out), 15);
	CHECK(has_page(out, 15) && !has_page(out, 16) && !has_page(out, 0));

	/*
	 * Largest subtree wins past non-qualifying levels: pages 0..255 resident,
	 * fault on 256 -> tree 0..271. [256,271] qualifies, [256,287] .. [256,511]
	 * do not (16/32 .. 16/256), the root does (272/512 = 53 %): all of 272..511.
	 */
	memset(flt, 0, sizeof(flt));
	set_pages(res, 0, 255);
	set_pages(flt, 256, 256);
	sim_prefetch_tree(res, flt, 16, tree);
	CHECK(sim_prefetch_region(tree, 256, 51, &f, &l));
	CHECK_EQ_INT(f, 0);
	CHECK_EQ_INT(l, 511);
	sim_prefetch_stock(res, flt, 51, 16, out);
	CHECK_EQ_INT(weight(out), 255);	/* 257..511 */
	CHECK(!has_page(out, 256) && has_page(out, 257) && has_page(out, 511));

	/* 240 resident + 16 = 256/512 = 50 %: the root fails, only [256,271]. */
	memset(res, 0, sizeof(res));
	set_pages(res, 0, 239);
	sim_prefetch_stock(res, flt, 51, 16, out);
	CHECK_EQ_INT(weight(out), 15);
	CHECK(has_page(out, 257) && has_page(out, 271) && !has_page(out, 272));

	/* A higher threshold shrinks it: 75 % wants [256,271] only even with 0..255. */
	memset(res, 0, sizeof(res));
	set_pages(res, 0, 255);
	sim_prefetch_stock(res, flt, 75, 16, out);
	CHECK_EQ_INT(weight(out), 15);

	/* Strictly more than the threshold: at 50 %, 2 of 4 pages is not enough. */
	memset(res, 0, sizeof(res));
	memset(flt, 0, sizeof(flt));
	set_pages(flt, 0, 1);
	sim_prefetch_stock(res, flt, 50, 1, out);
	CHECK_EQ_INT(weight(out), 0);
	sim_prefetch_stock(res, flt, 49, 1, out);	/* 2/4 > 49 %, 2/8 is not */
	CHECK_EQ_INT(weight(out), 2);
	CHECK(has_page(out, 2) && has_page(out, 3));

	/* Union over faulted pages: faults on 8 and 100 (no growth). 8: [8,8]; 100: [100,100]. */
	memset(res, 0, sizeof(res));
	memset(flt, 0, sizeof(flt));
	set_pages(res, 96, 98);
	set_pages(flt, 100, 100);
	set_pages(flt, 8, 8);
	/* 100 with 96..98 resident: [100,101] 1/2 no; [100,103] 1/4 no; [96,103] 4/8 no. */
	sim_prefetch_stock(res, flt, 51, 1, out);
	CHECK_EQ_INT(weight(out), 0);
	set_pages(res, 99, 99);	/* now [96,103] is 5/8 = 62 %: 101..103 */
	sim_prefetch_stock(res, flt, 51, 1, out);
	CHECK_EQ_INT(weight(out), 3);
	CHECK(has_page(out, 101) && has_page(out, 103));
}

/* The model applies the tree per batch: sequential faults double the region. */
static void test_prefetch_model(void)
{
	struct gpuext_runtime *rt = new_rt();
	struct sim_mem *m = mk(rt, 2, true, 3, 1);
	struct recorder *r = calloc(1, sizeof(*r));
	static const unsigned faults[] = { 0, 16, 32, 64, 128, 256 };
	static const unsigned moved[] = { 16, 16, 32, 64, 128, 256 };
	struct sim_mem_stats st;
	uint64_t prev = 0;

	sim_mem__set_event_sink(m, rec_fn, r);
	for (int i = 0; i < 6; i++) {
		fault1(m, BLK(0) + faults[i] * PG, 1);
		sim_mem__stats(m, &st);
		CHECK_EQ_U64(st.pages_h2d - prev, moved[i]);
		prev = st.pages_h2d;
	}
	CHECK_EQ_U64(st.faults, 6);
	CHECK_EQ_U64(st.pages_h2d, 512);
	CHECK_EQ_U64(st.bytes_h2d, 512 * PG);
	CHECK_EQ_U64(st.prefetched_pages, 506);
	/* Prefetch events: first one is pages 1..15 of block 0. */
	for (size_t i = 0; i < r->n; i++) {
		if (r->ev[i].kind == GPUEXT_EV_PREFETCH) {
			CHECK_EQ_U64(r->ev[i].id, BID(0));
			CHECK_EQ_U64(r->ev[i].a, 1);
			CHECK_EQ_U64(r->ev[i].b, 15);
			break;
		}
	}
	/* Touch every page: the 506 prefetched ones count as used, once. */
	for (int rep = 0; rep < 2; rep++)
		for (unsigned p = 0; p < 512; p++)
			acc(m, BLK(0) + p * PG, 1);
	sim_mem__flush(m);
	sim_mem__stats(m, &st);
	CHECK_EQ_U64(st.prefetch_used, 506);
	CHECK_EQ_U64(st.faults, 6);

	/* Prefetched and never touched, then evicted: unused. */
	fault1(m, BLK(1), 1);	/* 1 + 15 */
	acc(m, BLK(1) + 3 * PG, 1);	/* one used */
	fault1(m, BLK(2), 1);	/* evicts block 0 (512 pages back) */
	fault1(m, BLK(0), 1);	/* evicts block 1: 14 prefetched pages never used */
	sim_mem__stats(m, &st);
	CHECK_EQ_U64(st.evictions, 2);
	CHECK_EQ_U64(st.prefetch_used, 507);
	CHECK_EQ_U64(st.prefetch_unused, 14);
	CHECK_EQ_U64(st.pages_d2h, 512 + 16);
	free(r);
	sim_mem__free(m);
	gpuext_runtime__free(rt);
}

/* Time = compute + batch overhead + bytes / bandwidth, each direction. */
static void test_time_model(void)
{
	struct gpuext_runtime *rt = new_rt();
	struct sim_mem_config cfg = { .sz = sizeof(cfg), .capacity_blocks = 1, .h2d_gbps = 10,
				      .d2h_gbps = 5, .batch_overhead_ns = 1000, .compute_ns = 3,
				      .prefetch_disable = true };
	struct sim_range rr = { .va = BASE, .size = 2 * MB2, .tgid = 1 };
	struct sim_mem *m = NULL;
	struct sim_mem_stats st;

	CHECK_EQ_INT(sim_mem__new(rt, &cfg, &m), 0);
	CHECK_EQ_INT(sim_mem__add_range(m, &rr), 0);
	fault1(m, BLK(0), 1);	/* 3 + 1000 + 4096/10 = 409.6 -> 410 */
	sim_mem__stats(m, &st);
	CHECK_EQ_U64(st.time_ns, 1413);
	fault1(m, BLK(1), 1);	/* + 3 + 1000 + 410 + 4096/5 = 819.2 -> 819 (evicts block 0) */
	acc(m, BLK(1), 1);	/* + 3 */
	sim_mem__stats(m, &st);
	CHECK_EQ_U64(st.compute_ns, 9);
	CHECK_EQ_U64(st.fault_ns, 2000);
	CHECK_EQ_U64(st.h2d_ns, 820);
	CHECK_EQ_U64(st.d2h_ns, 819);
	CHECK_EQ_U64(st.time_ns, 9 + 2000 + 820 + 819);
	CHECK_EQ_U64(st.bytes_h2d, 8192);
	CHECK_EQ_U64(st.bytes_d2h, 4096);
	sim_mem__free(m);
	gpuext_runtime__free(rt);
}

/* An MRU policy changes the victim; detach restores FIFO at once. */
static void test_mru_and_detach(void)
{
	struct gpuext_runtime *rt = new_rt();
	struct sim_mem *m = mk(rt, 2, false, 5, 1);
	struct recorder *r = calloc(1, sizeof(*r));
	struct gpuext_object *obj;
	struct gpuext_policy *p = load(rt, "simtest_mru", 0, &obj);
	uint64_t ids[8];

	if (!p)
		goto out;
	sim_mem__set_event_sink(m, rec_fn, r);
	CHECK_EQ_INT(sim_mem__attach(m, p), 0);
	fault1(m, BLK(0), 1);
	fault1(m, BLK(1), 1);	/* MRU: used = [1, 0] */
	CHECK_EQ_INT(used_ids(m, ids, 8), 2);
	CHECK_EQ_U64(ids[0], BID(1));
	fault1(m, BLK(2), 1);	/* evicts 1 (stock would evict 0) */
	CHECK_EQ_INT(evicted(r, ids, 8), 1);
	CHECK_EQ_U64(ids[0], BID(1));
	CHECK_EQ_INT(count_ev(r, GPUEXT_EV_HOOK, GPUEXT_HOOK_BLOCK_ACCESS), 3);
	for (size_t i = 0; i < r->n; i++) {
		if (r->ev[i].kind == GPUEXT_EV_HOOK)
			CHECK_EQ_INT(r->ev[i].ret, 1);
		if (r->ev[i].kind == GPUEXT_EV_KFUNC) {
			CHECK_STR_CONTAINS(r->ev[i].detail, "bpf_gpu_block_move_head");
			CHECK_EQ_INT(r->ev[i].ret, 0);
		}
	}
	CHECK_EQ_INT(count_ev(r, GPUEXT_EV_KFUNC, -1), 3);
	/* Absent hooks run the default and say so. */
	CHECK(count_ev(r, GPUEXT_EV_DEFAULT, GPUEXT_HOOK_BLOCK_ACTIVATE) == 3);
	CHECK(count_ev(r, GPUEXT_EV_DEFAULT, GPUEXT_HOOK_EVICT_PREPARE) == 1);

	/*
	 * A block whose chunk went unused comes back to the used list when the
	 * GPU is resident again, even when the policy handles the access (list
	 * membership is the driver's); the policy then puts it at the head.
	 */
	CHECK_EQ_INT(sim_mem__host_access(m, BLK(0), MB2), 0);
	CHECK_EQ_INT(sim_mem__list_ids(m, SIM_LIST_UNUSED, ids, 8), 1);
	fault1(m, BLK(0), 1);
	CHECK_EQ_INT(sim_mem__list_ids(m, SIM_LIST_UNUSED, ids, 8), 0);
	CHECK_EQ_INT(used_ids(m, ids, 8), 2);
	CHECK_EQ_U64(ids[0], BID(0));
	CHECK_EQ_U64(ids[1], BID(2));

	/* used = [0, 2]. Detach: stock from the next decision. */
	CHECK_EQ_INT(sim_mem__detach(m, GPUEXT_POLICY_MEM), 0);
	CHECK_EQ_INT(sim_mem__detach(m, GPUEXT_POLICY_MEM), -ENOENT);
	fault1(m, BLK(3), 1);	/* evicts head 0; 3 to the tail: [2, 3] */
	fault1(m, BLK(4), 1);	/* stock evicts 2 (MRU would evict 3) */
	CHECK_EQ_INT(evicted(r, ids, 8), 3);
	CHECK_EQ_U64(ids[1], BID(0));
	CHECK_EQ_U64(ids[2], BID(2));
	CHECK_EQ_INT(count_ev(r, GPUEXT_EV_HOOK, -1), 4);
out:
	free(r);
	sim_mem__free(m);
	gpuext_policy__close(p);
	gpuext_object__close(obj);
	gpuext_runtime__free(rt);
}

static void test_double_attach(void)
{
	struct gpuext_runtime *rt = new_rt();
	struct sim_mem *m = mk(rt, 2, false, 1, 1);
	struct gpuext_object *o1, *o2;
	struct gpuext_policy *p1 = load(rt, "simtest_mru", 0, &o1);
	struct gpuext_policy *p2 = load(rt, "simtest_lists", 0, &o2);

	if (p1 && p2) {
		CHECK_EQ_INT(sim_mem__attach(m, p1), 0);
		test_log_clear(&logbuf);
		CHECK_EQ_INT(sim_mem__attach(m, p2), -EBUSY);
		CHECK_STR_CONTAINS(logbuf.buf, "simtest_mru");
		CHECK_EQ_INT(sim_mem__detach(m, GPUEXT_POLICY_MEM), 0);
		CHECK_EQ_INT(sim_mem__attach(m, p2), 0);
		CHECK_EQ_INT(sim_mem__detach(m, GPUEXT_POLICY_MEM), 0);
	}
	sim_mem__free(m);
	gpuext_policy__close(p1);
	gpuext_policy__close(p2);
	gpuext_object__close(o1);
	gpuext_object__close(o2);
	gpuext_runtime__free(rt);
}

/* Invalid handles get -EINVAL; list_nth walks; the run goes on, policy attached. */
static void test_kfunc_checks(void)
{
	struct gpuext_runtime *rt = new_rt();
	struct sim_mem *m = mk(rt, 2, false, 3, 1);
	struct recorder *r = calloc(1, sizeof(*r));
	struct gpuext_object *obj;
	struct gpuext_policy *p = load(rt, "simtest_lists", 0, &obj);
	struct sim_mem_stats st;
	uint64_t ids[8];

	if (!p)
		goto out;
	sim_mem__set_event_sink(m, rec_fn, r);
	CHECK_EQ_INT(sim_mem__attach(m, p), 0);
	fault1(m, BLK(0), 1);
	fault1(m, BLK(1), 1);
	CHECK_EQ_INT(result(obj, 0), -EINVAL);	/* a block passed as a list */
	CHECK_EQ_INT(result(obj, 1), -EINVAL);	/* a list passed as a block */
	fault1(m, BLK(2), 1);	/* evict_prepare moves block 0 to the tail: block 1 goes */
	CHECK_EQ_INT(result(obj, 2), -EINVAL);	/* block 0 is not on the unused list */
	CHECK_EQ_INT(result(obj, 3), 0);
	CHECK_EQ_U64(result(obj, 4), BID(0));
	CHECK_EQ_INT(result(obj, 5), 0);	/* list_nth past the end: NULL */
	CHECK_EQ_INT(evicted(r, ids, 8), 1);
	CHECK_EQ_U64(ids[0], BID(1));
	CHECK(gpuext_policy__ejected(p) == NULL);
	CHECK_EQ_INT(count_ev(r, GPUEXT_EV_EJECT, -1), 0);
	sim_mem__stats(m, &st);
	CHECK_EQ_U64(st.faults, 3);
	CHECK_EQ_U64(st.evictions, 1);
	sim_mem__detach(m, GPUEXT_POLICY_MEM);
out:
	free(r);
	sim_mem__free(m);
	gpuext_policy__close(p);
	gpuext_object__close(obj);
	gpuext_runtime__free(rt);
}

/* gpu_page_prefetch: the policy's region, clamped; bad regions refused. */
static void test_prefetch_policy(void)
{
	struct gpuext_runtime *rt = new_rt();
	struct sim_mem *m = mk(rt, 4, true, 1, 1);
	struct recorder *r = calloc(1, sizeof(*r));
	struct gpuext_object *obj;
	struct gpuext_policy *p = load(rt, "simtest_prefetch", 0, &obj);
	struct sim_mem_stats st;
	bool seen = false;

	if (!p)
		goto out;
	sim_mem__set_event_sink(m, rec_fn, r);
	CHECK_EQ_INT(sim_mem__attach(m, p), 0);
	fault1(m, BLK(0), 1);	/* region [0,7] instead of the stock [0,15] */
	sim_mem__stats(m, &st);
	CHECK_EQ_U64(st.prefetched_pages, 7);
	CHECK_EQ_INT(result(obj, 0), -EINVAL);	/* first > last */
	CHECK_EQ_INT(result(obj, 1), -EINVAL);	/* all past max_region */
	CHECK_EQ_INT(result(obj, 2), 511);
	fault1(m, BLK(0) + 508 * PG, 1);	/* [508,515] clamped to [508,511] */
	sim_mem__stats(m, &st);
	CHECK_EQ_U64(st.prefetched_pages, 10);
	CHECK_EQ_U64(st.pages_h2d, 12);
	for (size_t i = 0; i < r->n; i++) {
		if (r->ev[i].kind == GPUEXT_EV_PREFETCH && r->ev[i].a == 509) {
			CHECK_EQ_U64(r->ev[i].b, 511);
			seen = true;
		}
	}
	CHECK(seen);
	/* Two faults in one batch: one call per faulted page, union of regions. */
	fault1(m, BLK(0) + 100 * PG, 1);
	acc(m, BLK(0) + 200 * PG, 1);
	acc(m, BLK(0) + 204 * PG, 1);
	sim_mem__flush(m);
	sim_mem__stats(m, &st);
	CHECK_EQ_U64(st.prefetched_pages, 10 + 7 + 10);	/* [201..203],[205..211] */
	sim_mem__detach(m, GPUEXT_POLICY_MEM);
out:
	free(r);
	sim_mem__free(m);
	gpuext_policy__close(p);
	gpuext_object__close(obj);
	gpuext_runtime__free(rt);
}

/* A deterministic, eviction-heavy workload: 16 blocks on a 4-block GPU. */
static void workload(struct sim_mem *m)
{
	uint64_t x = 12345;

	for (int i = 0; i < 20000; i++) {
		struct sim_access a;

		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		a = (struct sim_access){ .va = BLK((x >> 33) % 16) + ((x >> 20) % 512) * PG,
					 .tgid = 1, .kernel = (uint16_t)(i / 3000) };
		sim_mem__access(m, &a);
	}
	sim_mem__flush(m);
}

/* Over budget: ejected with a reason, and the run ends exactly as a stock run. */
static void test_eject(void)
{
	struct gpuext_runtime *rt = new_rt();
	struct sim_mem *stock = mk(rt, 4, true, 16, 1);
	struct sim_mem *m = mk(rt, 4, true, 16, 1);
	struct recorder *r = calloc(1, sizeof(*r));
	struct gpuext_object *obj;
	struct gpuext_policy *p = load(rt, "simtest_eject", 1000, &obj);
	struct gpuext_policy_stats ps;
	struct sim_mem_stats a, b;
	size_t ej = 0;

	if (!p)
		goto out;
	workload(stock);
	sim_mem__set_event_sink(m, rec_fn, r);
	CHECK_EQ_INT(sim_mem__attach(m, p), 0);
	test_log_clear(&logbuf);
	workload(m);
	CHECK(gpuext_policy__ejected(p) != NULL);
	CHECK_STR_CONTAINS(gpuext_policy__ejected(p), "budget");
	CHECK_STR_CONTAINS(logbuf.buf, "ejected");
	CHECK_EQ_INT(count_ev(r, GPUEXT_EV_EJECT, -1), 1);
	for (size_t i = 0; i < r->n; i++)
		if (r->ev[i].kind == GPUEXT_EV_EJECT) {
			CHECK_STR_CONTAINS(r->ev[i].detail, "budget");
			ej = i;
		}
	CHECK_EQ_INT(count_ev(r, GPUEXT_EV_HOOK, -1), 3);	/* the calls before */
	for (size_t i = ej + 1; i < r->n; i++)
		CHECK(r->ev[i].kind != GPUEXT_EV_HOOK);
	gpuext_policy__stats(p, &ps);
	CHECK_EQ_U64(ps.calls[GPUEXT_HOOK_BLOCK_ACCESS], 4);
	sim_mem__stats(stock, &a);
	sim_mem__stats(m, &b);
	CHECK(a.evictions > 100);
	CHECK_EQ_U64(b.faults, a.faults);
	CHECK_EQ_U64(b.evictions, a.evictions);
	CHECK_EQ_U64(b.pages_h2d, a.pages_h2d);
	CHECK_EQ_U64(b.prefetched_pages, a.prefetched_pages);
	CHECK_EQ_U64(b.time_ns, a.time_ns);
	CHECK(memcmp(&a, &b, sizeof(a)) == 0);
	{
		uint64_t ia[8], ib[8];
		size_t na = used_ids(stock, ia, 8), nb = used_ids(m, ib, 8);

		CHECK_EQ_INT(na, nb);
		CHECK(memcmp(ia, ib, na * sizeof(ia[0])) == 0);
	}
	sim_mem__detach(m, GPUEXT_POLICY_MEM);
out:
	free(r);
	sim_mem__free(stock);
	sim_mem__free(m);
	gpuext_policy__close(p);
	gpuext_object__close(obj);
	gpuext_runtime__free(rt);
}

/* Two processes on one GPU: faults, evictions, bytes and time per tgid. */
static void test_multi_process(void)
{
	struct gpuext_runtime *rt = new_rt();
	struct sim_mem_config cfg = { .sz = sizeof(cfg), .capacity_blocks = 4, .h2d_gbps = 4.096,
				      .d2h_gbps = 4.096, .batch_overhead_ns = 1000, .compute_ns = 1,
				      .prefetch_disable = true };
	struct sim_range r1 = { .va = BLK(0), .size = 4 * MB2, .tgid = 100 };
	struct sim_range r2 = { .va = BLK(8), .size = 4 * MB2, .tgid = 200 };
	struct sim_mem_stats s1, s2, all;
	struct sim_mem *m = NULL;

	CHECK_EQ_INT(sim_mem__new(rt, &cfg, &m), 0);
	CHECK_EQ_INT(sim_mem__add_range(m, &r1), 0);
	CHECK_EQ_INT(sim_mem__add_range(m, &r2), 0);
	/* One batch: 3 faults by 100, 1 by 200: the 1000 ns overhead splits 750 / 250. */
	acc(m, BLK(0), 100);
	acc(m, BLK(1), 100);
	acc(m, BLK(2), 100);
	acc(m, BLK(8), 200);
	sim_mem__flush(m);
	CHECK_EQ_INT(sim_mem__tgid_stats(m, 100, &s1), 0);
	CHECK_EQ_INT(sim_mem__tgid_stats(m, 200, &s2), 0);
	CHECK_EQ_U64(s1.fault_ns, 750);
	CHECK_EQ_U64(s2.fault_ns, 250);
	CHECK_EQ_U64(s1.h2d_ns, 3000);	/* 3 pages at 4.096 B/ns */
	CHECK_EQ_U64(s2.h2d_ns, 1000);
	/* 200 takes three more blocks: all three of 100's go (FIFO). */
	for (int i = 9; i < 12; i++) {
		acc(m, BLK(i), 200);
		acc(m, BLK(i), 200);
	}
	sim_mem__flush(m);
	CHECK_EQ_INT(sim_mem__tgid_stats(m, 100, &s1), 0);
	CHECK_EQ_INT(sim_mem__tgid_stats(m, 200, &s2), 0);
	sim_mem__stats(m, &all);
	CHECK_EQ_U64(s1.accesses, 3);
	CHECK_EQ_U64(s2.accesses, 7);
	CHECK_EQ_U64(s1.faults, 3);
	CHECK_EQ_U64(s2.faults, 7);
	CHECK_EQ_U64(s2.dup_faults, 3);
	CHECK_EQ_U64(s1.evictions, 3);
	CHECK_EQ_U64(s2.evictions, 0);
	CHECK_EQ_U64(s1.pages_d2h, 3);
	CHECK_EQ_U64(s2.pages_d2h, 0);
	CHECK_EQ_U64(s1.pages_h2d, 3);
	CHECK_EQ_U64(s2.pages_h2d, 4);
	CHECK_EQ_U64(s1.batches, 1);
	CHECK_EQ_U64(s2.batches, 2);
	CHECK_EQ_U64(s2.d2h_ns, 3000);	/* 200 waited for the evictions */
	CHECK_EQ_U64(all.batches, 2);
	CHECK_EQ_U64(all.faults, s1.faults + s2.faults);
	CHECK_EQ_U64(all.time_ns, s1.time_ns + s2.time_ns);
	CHECK_EQ_U64(all.time_ns, 10 + 2000 + 7000 + 3000);
	sim_mem__free(m);
	gpuext_runtime__free(rt);
}

/* The gpuext_hal_sim backend wraps the model. */
static void test_backend(void)
{
	struct gpuext_runtime *rt = new_rt();
	const struct gpuext_hal_ops *ops = gpuext_hal_find("sim");
	struct gpuext_hal_device *dev = NULL;
	struct sim_mem_config c;
	char detail[128];

	CHECK(ops != NULL);
	if (!ops)
		return;
	CHECK_EQ_INT(ops->probe(detail, sizeof(detail)), 0);
	CHECK_STR_CONTAINS(detail, "built in");
	test_log_clear(&logbuf);
	CHECK_EQ_INT(ops->open(rt, "gpu_mem=1G,bogus=1", &dev), -EINVAL);
	CHECK_STR_CONTAINS(logbuf.buf, "unknown key 'bogus'");
	CHECK_EQ_INT(ops->open(rt, "gpu_mem=4M,prefetch=off,h2d_gbps=12", &dev), 0);
	if (dev) {
		struct sim_mem *m = gpuext_hal_sim__mem(dev);
		struct sim_range rr = { .va = BASE, .size = 4 * MB2, .tgid = 1 };
		struct recorder *r = calloc(1, sizeof(*r));

		sim_mem__config(m, &c);
		CHECK_EQ_U64(c.capacity_blocks, 2);
		CHECK(c.prefetch_disable && c.h2d_gbps == 12.0);
		CHECK_EQ_INT(sim_mem__add_range(m, &rr), 0);
		ops->set_event_sink(dev, rec_fn, r);
		fault1(m, BLK(0), 1);
		fault1(m, BLK(1), 1);
		fault1(m, BLK(2), 1);
		CHECK_EQ_INT(count_ev(r, GPUEXT_EV_EVICT, -1), 1);
		CHECK_EQ_INT(ops->detach(dev, GPUEXT_POLICY_MEM), -ENOENT);
		ops->close(dev);
		free(r);
	}
	gpuext_runtime__free(rt);
}

int main(void)
{
	test_config();
	test_ranges();
	test_victim_order();
	test_used_tail_rules();
	test_batches();
	test_prefetch_tree();
	test_prefetch_model();
	test_time_model();
	test_mru_and_detach();
	test_double_attach();
	test_kfunc_checks();
	test_prefetch_policy();
	test_eject();
	test_multi_process();
	test_backend();
	return test_done("test_sim_mem");
}

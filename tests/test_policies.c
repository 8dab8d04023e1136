/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shipped policies (policies/NAME.bpf.c): every object in GPUEXT_POLICY_DIR
 * opens, binds as a policy, verifies hook by hook and has the kind and hooks
 * this table expects; then each policy's decisions, called hook by hook
 * against a tiny fake driver (an eviction list and recorded kfunc calls), so
 * a policy's logic is tested without any backend. Plus three bad policies
 * (tests/bpf/badpolicy_NAME.bpf.c) and the reason each one gives.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>

#include "gpuext/policy.h"
#include "testlib.h"

static struct test_log logbuf;

/* ------------------------------------------------------------------ */
/* The table: what each shipped policy is                              */
/* ------------------------------------------------------------------ */

#define H(x) (1u << (x))
#define ACT H(GPUEXT_HOOK_BLOCK_ACTIVATE)
#define ACC H(GPUEXT_HOOK_BLOCK_ACCESS)
#define EVP H(GPUEXT_HOOK_EVICT_PREPARE)
#define PF H(GPUEXT_HOOK_PAGE_PREFETCH)
#define INIT H(GPUEXT_HOOK_TASK_INIT)
#define BIND H(GPUEXT_HOOK_TASK_BIND)
#define DESTROY H(GPUEXT_HOOK_TASK_DESTROY)

static const struct {
	const char *file, *name;
	enum gpuext_policy_kind kind;
	unsigned hooks;
} shipped[] = {
	{ "fifo", "fifo", GPUEXT_POLICY_MEM, ACT | ACC | EVP | PF },
	{ "lru", "lru", GPUEXT_POLICY_MEM, ACC },
	{ "mru", "mru", GPUEXT_POLICY_MEM, ACC },
	{ "lfu", "lfu", GPUEXT_POLICY_MEM, ACC | EVP },
	{ "fifo_second_chance", "fifo_2nd_chance", GPUEXT_POLICY_MEM, ACT | ACC | EVP },
	{ "prefetch_max", "prefetch_max", GPUEXT_POLICY_MEM, PF },
	{ "prefetch_seq", "prefetch_seq", GPUEXT_POLICY_MEM, PF },
	{ "prefetch_stride", "prefetch_stride", GPUEXT_POLICY_MEM, PF },
	{ "lfu_stride", "lfu_stride", GPUEXT_POLICY_MEM, ACC | EVP | PF },
	{ "mem_priority", "mem_priority", GPUEXT_POLICY_MEM, ACT | ACC | EVP | PF },
	{ "lc_be", "lc_be", GPUEXT_POLICY_SCHED, INIT },
	{ "fair_share", "fair_share", GPUEXT_POLICY_SCHED, INIT | BIND | DESTROY },
};
#define N_SHIPPED (sizeof(shipped) / sizeof(shipped[0]))

/* ------------------------------------------------------------------ */
/* A fake driver: one used list, the kfuncs recording what they did    */
/* ------------------------------------------------------------------ */

#define BLOCK_H(id) (0x10000ULL + (id))	/* a block handle: never 0 */
#define USED_H 0xA1ULL
#define UNUSED_H 0xA2ULL
#define REGION_H 0xB1ULL

struct fake {
	uint64_t list[64];	/* block ids, head (victim) first */
	size_t n;
	unsigned moves;
	bool pf_set;
	uint32_t pf_first, pf_last;
	uint64_t attr[3];	/* by GPU_ATTR_*; 0 = not set */
	bool rejected;
};

static struct fake *F(struct gpuext_exec *ex) { return gpuext_exec__user(ex); }

static int find(struct fake *f, uint64_t id)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->list[i] == id)
			return (int)i;
	return -1;
}

static uint64_t kf_move(struct gpuext_exec *ex, uint64_t blk, uint64_t list, bool head)
{
	struct fake *f = F(ex);
	int i = find(f, blk - BLOCK_H(0));
	uint64_t id;

	if (list != USED_H || i < 0)
		return (uint64_t)-EINVAL;
	id = f->list[i];
	memmove(&f->list[i], &f->list[i + 1], (f->n - (size_t)i - 1) * sizeof(id));
	if (head) {
		memmove(&f->list[1], &f->list[0], (f->n - 1) * sizeof(id));
		f->list[0] = id;
	} else {
		f->list[f->n - 1] = id;
	}
	f->moves++;
	return 0;
}

static uint64_t kf_move_head(struct gpuext_exec *ex, uint64_t a, uint64_t b, uint64_t c,
			     uint64_t d, uint64_t e)
{
	(void)c, (void)d, (void)e;
	return kf_move(ex, a, b, true);
}

static uint64_t kf_move_tail(struct gpuext_exec *ex, uint64_t a, uint64_t b, uint64_t c,
			     uint64_t d, uint64_t e)
{
	(void)c, (void)d, (void)e;
	return kf_move(ex, a, b, false);
}

static uint64_t kf_nth(struct gpuext_exec *ex, uint64_t list, uint64_t n, uint64_t c,
		       uint64_t d, uint64_t e)
{
	struct fake *f = F(ex);

	(void)c, (void)d, (void)e;
	return list == USED_H && n < f->n ? BLOCK_H(f->list[n]) : 0;
}

static uint64_t kf_block_id(struct gpuext_exec *ex, uint64_t blk, uint64_t b, uint64_t c,
			    uint64_t d, uint64_t e)
{
	(void)ex, (void)b, (void)c, (void)d, (void)e;
	return blk - BLOCK_H(0);
}

static uint64_t kf_prefetch(struct gpuext_exec *ex, uint64_t region, uint64_t first,
			    uint64_t last, uint64_t d, uint64_t e)
{
	struct fake *f = F(ex);

	(void)d, (void)e;
	if (region != REGION_H || first > last || last >= GPU_PAGES_PER_BLOCK)
		return (uint64_t)-EINVAL;
	f->pf_set = true;
	f->pf_first = (uint32_t)first;
	f->pf_last = (uint32_t)last;
	return 0;
}

static uint64_t kf_set_attr(struct gpuext_exec *ex, uint64_t ctx, uint64_t attr, uint64_t val,
			    uint64_t d, uint64_t e)
{
	(void)ctx, (void)d, (void)e;
	if (attr < 1 || attr > 2)
		return (uint64_t)-EINVAL;
	F(ex)->attr[attr] = val;
	return 0;
}

static uint64_t kf_reject(struct gpuext_exec *ex, uint64_t ctx, uint64_t b, uint64_t c,
			  uint64_t d, uint64_t e)
{
	(void)ctx, (void)b, (void)c, (void)d, (void)e;
	F(ex)->rejected = true;
	return 0;
}

static struct gpuext_runtime *new_rt(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, o, .print = test_log_print, .print_user = &logbuf,
		    .prandom_seed = 1);
	struct gpuext_runtime *rt = NULL;

	CHECK_EQ_INT(gpuext_runtime__new(&o, &rt), 0);
	if (!rt)
		return NULL;
	CHECK_EQ_INT(gpuext_runtime__set_func_impl(rt, GPUEXT_FUNC_KFUNC, GPUEXT_KF_MOVE_HEAD, kf_move_head), 0);
	CHECK_EQ_INT(gpuext_runtime__set_func_impl(rt, GPUEXT_FUNC_KFUNC, GPUEXT_KF_MOVE_TAIL, kf_move_tail), 0);
	CHECK_EQ_INT(gpuext_runtime__set_func_impl(rt, GPUEXT_FUNC_KFUNC, GPUEXT_KF_LIST_NTH, kf_nth), 0);
	CHECK_EQ_INT(gpuext_runtime__set_func_impl(rt, GPUEXT_FUNC_KFUNC, GPUEXT_KF_BLOCK_ID, kf_block_id), 0);
	CHECK_EQ_INT(gpuext_runtime__set_func_impl(rt, GPUEXT_FUNC_KFUNC, GPUEXT_KF_SET_PREFETCH, kf_prefetch), 0);
	CHECK_EQ_INT(gpuext_runtime__set_func_impl(rt, GPUEXT_FUNC_KFUNC, GPUEXT_KF_SET_ATTR, kf_set_attr), 0);
	CHECK_EQ_INT(gpuext_runtime__set_func_impl(rt, GPUEXT_FUNC_KFUNC, GPUEXT_KF_REJECT_BIND, kf_reject), 0);
	return rt;
}

/* One policy, opened on its own runtime. */
struct pol {
	struct gpuext_runtime *rt;
	struct gpuext_object *obj;
	struct gpuext_policy *p;
};

static bool pol_open(struct pol *x, const char *dir, const char *file, uint64_t budget)
{
	char path[1024];
	GPUEXT_OPTS(gpuext_policy_opts, po, .call_budget = budget);
	int err;

	memset(x, 0, sizeof(*x));
	snprintf(path, sizeof(path), "%s/%s.bpf.o", dir, file);
	x->rt = new_rt();
	test_log_clear(&logbuf);
	err = x->rt ? gpuext_object__open_file(x->rt, path, NULL, &x->obj) : -ENOMEM;
	if (!err)
		err = gpuext_policy__open(x->obj, &po, &x->p);
	if (err)
		fprintf(stderr, "%s: %s\n%s", path, strerror(-err), logbuf.buf);
	return !err;
}

static void pol_close(struct pol *x)
{
	gpuext_policy__close(x->p);
	gpuext_object__close(x->obj);
	gpuext_runtime__free(x->rt);
}

static void set_list(struct fake *f, const uint64_t *ids, size_t n)
{
	memset(f, 0, sizeof(*f));
	memcpy(f->list, ids, n * sizeof(ids[0]));
	f->n = n;
}

static bool list_is(const struct fake *f, const uint64_t *ids, size_t n)
{
	bool ok = f->n == n && !memcmp(f->list, ids, n * sizeof(ids[0]));

	if (!ok) {
		fprintf(stderr, "  list is:");
		for (size_t i = 0; i < f->n; i++)
			fprintf(stderr, " %llu", (unsigned long long)f->list[i]);
		fprintf(stderr, "\n");
	}
	return ok;
}
#define LIST_IS(f, ...)                                                               \
	do {                                                                          \
		const uint64_t want_[] = { __VA_ARGS__ };                             \
		CHECK(list_is((f), want_, sizeof(want_) / sizeof(want_[0])));        \
	} while (0)
#define SET_LIST(f, ...)                                                              \
	do {                                                                          \
		const uint64_t l_[] = { __VA_ARGS__ };                                \
		set_list((f), l_, sizeof(l_) / sizeof(l_[0]));                        \
	} while (0)

/* Calls a block hook (activate/access) on block @id owned by @owner. Returns the hook's r0. */
static int64_t block_hook(struct pol *x, struct fake *f, unsigned hook, uint64_t id,
			  uint32_t owner, uint32_t page)
{
	struct gpu_mem_ctx mctx = {
		.tgid = owner, .page_index = page, .capacity_blocks = 64, .used_blocks = f->n,
		.block = { .block_id = id, .va_start = id << GPU_BLOCK_SHIFT,
			   .size = GPU_BLOCK_SIZE, .owner_tgid = owner },
	};
	uint64_t args[3] = { (uint64_t)(uintptr_t)&mctx, BLOCK_H(id), USED_H }, ret = ~0ULL;
	struct gpuext_mem_region rg = { &mctx, sizeof(mctx), false };

	CHECK_EQ_INT(gpuext_policy__call(x->p, hook, args, 3, &rg, 1, f, &ret), 0);
	return (int64_t)ret;
}

static void evict_prepare(struct pol *x, struct fake *f)
{
	struct gpu_mem_ctx mctx = { .capacity_blocks = 64, .used_blocks = f->n };
	uint64_t args[3] = { (uint64_t)(uintptr_t)&mctx, USED_H, UNUSED_H }, ret = ~0ULL;
	struct gpuext_mem_region rg = { &mctx, sizeof(mctx), false };

	CHECK_EQ_INT(gpuext_policy__call(x->p, GPUEXT_HOOK_EVICT_PREPARE, args, 3, &rg, 1, f, &ret), 0);
	CHECK_EQ_INT(ret, 0);
}

/* A fault at @page of block @id by @tgid; the max region is [mfirst, mlast]. */
static int64_t prefetch(struct pol *x, struct fake *f, uint64_t id, uint32_t tgid, uint32_t page,
			uint32_t mfirst, uint32_t mlast)
{
	struct gpu_mem_ctx mctx = {
		.tgid = tgid, .page_index = page,
		.block = { .block_id = id, .va_start = id << GPU_BLOCK_SHIFT,
			   .size = GPU_BLOCK_SIZE, .owner_tgid = tgid },
	};
	struct gpu_page_tree tree = { 0 };
	struct gpu_page_range maxr = { mfirst, mlast };
	uint64_t args[5] = { (uint64_t)(uintptr_t)&mctx, page, (uint64_t)(uintptr_t)&tree,
			     (uint64_t)(uintptr_t)&maxr, REGION_H }, ret = ~0ULL;
	struct gpuext_mem_region rg[3] = { { &mctx, sizeof(mctx), false },
					   { &tree, sizeof(tree), false },
					   { &maxr, sizeof(maxr), false } };

	f->pf_set = false;
	CHECK_EQ_INT(gpuext_policy__call(x->p, GPUEXT_HOOK_PAGE_PREFETCH, args, 5, rg, 3, f, &ret), 0);
	return (int64_t)ret;
}

#define PF_IS(f, a, b)                                                                \
	do {                                                                          \
		CHECK((f)->pf_set);                                                   \
		CHECK_EQ_INT((f)->pf_first, (a));                                     \
		CHECK_EQ_INT((f)->pf_last, (b));                                      \
	} while (0)

static void task_hook(struct pol *x, struct fake *f, unsigned hook, uint64_t id, uint32_t tgid,
		      const char *comm)
{
	struct gpu_task_ctx t = { .task_id = id, .tgid = tgid,
				  .timeslice_us = GPU_TIMESLICE_DEFAULT_US,
				  .level = GPU_LEVEL_MEDIUM };
	uint64_t args[1] = { (uint64_t)(uintptr_t)&t }, ret = ~0ULL;
	struct gpuext_mem_region rg = { &t, sizeof(t), false };

	snprintf(t.comm, sizeof(t.comm), "%s", comm);
	memset(f->attr, 0, sizeof(f->attr));
	f->rejected = false;
	CHECK_EQ_INT(gpuext_policy__call(x->p, hook, args, 1, &rg, 1, f, &ret), 0);
	CHECK_EQ_INT(ret, 0);
}

/* ------------------------------------------------------------------ */
/* Every object: opens, binds, verifies, has the expected hooks         */
/* ------------------------------------------------------------------ */

static void test_every_object(void)
{
	DIR *d = opendir(GPUEXT_POLICY_DIR);
	unsigned seen = 0;
	struct dirent *e;

	CHECK(d != NULL);
	if (!d)
		return;
	printf("  %-20s %-6s %-20s %9s  %s\n", "policy", "kind", "hook", "processed", "insns");
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name), k;
		char file[256];
		struct pol x;

		if (len < 7 || strcmp(e->d_name + len - 6, ".bpf.o"))
			continue;
		snprintf(file, sizeof(file), "%.*s", (int)(len - 6), e->d_name);
		for (k = 0; k < N_SHIPPED && strcmp(shipped[k].file, file); k++)
			;
		test_checks++;
		if (k == N_SHIPPED) {
			test_fail(__FILE__, __LINE__, "%s.bpf.o is not in this test's table: add it", file);
			continue;
		}
		seen++;
		CHECK(pol_open(&x, GPUEXT_POLICY_DIR, file, 0));
		if (x.p) {
			unsigned cnt = shipped[k].kind == GPUEXT_POLICY_MEM ? GPUEXT_MEM_HOOK_CNT
									    : GPUEXT_SCHED_HOOK_CNT;
			const struct gpuext_struct_ops *so = gpuext_object__struct_ops(x.obj, 0);

			CHECK_EQ_INT(gpuext_policy__kind(x.p), shipped[k].kind);
			CHECK(!strcmp(gpuext_policy__name(x.p), shipped[k].name));
			for (unsigned h = 0; h < cnt; h++)
				CHECK_EQ_INT(gpuext_policy__has_hook(x.p, h), !!(shipped[k].hooks & H(h)));
			CHECK(gpuext_policy__ejected(x.p) == NULL);
			/* the verifier's statistics, hook by hook (the README table) */
			for (size_t m = 0; so && m < so->member_cnt; m++) {
				GPUEXT_OPTS(gpuext_verify_opts, vo,
					    .type_desc = gpuext_hook_desc(so->type_name, so->members[m].member));
				struct gpuext_verify_result res = { .sz = sizeof(res) };

				CHECK_EQ_INT(gpuext_prog__verify(so->members[m].prog, &vo, &res), 0);
				printf("  %-20s %-6s %-20s %9llu  %zu\n", file,
				       shipped[k].kind == GPUEXT_POLICY_MEM ? "mem" : "sched",
				       so->members[m].member, (unsigned long long)res.insns_processed,
				       gpuext_prog__insn_cnt(so->members[m].prog));
			}
		}
		pol_close(&x);
	}
	closedir(d);
	CHECK_EQ_INT(seen, N_SHIPPED);
}

/* ------------------------------------------------------------------ */
/* Decisions, policy by policy                                          */
/* ------------------------------------------------------------------ */

static void test_fifo(void)
{
	struct fake f;
	struct pol x;

	if (!pol_open(&x, GPUEXT_POLICY_DIR, "fifo", 0))
		{
			CHECK(0);
			return;
		}
	SET_LIST(&f, 1, 2, 3);
	CHECK_EQ_INT(block_hook(&x, &f, GPUEXT_HOOK_BLOCK_ACTIVATE, 3, 7, 0), 0);
	CHECK_EQ_INT(block_hook(&x, &f, GPUEXT_HOOK_BLOCK_ACCESS, 1, 7, 0), 0);
	evict_prepare(&x, &f);
	CHECK_EQ_INT(prefetch(&x, &f, 1, 7, 5, 0, 511), 0);
	CHECK(!f.pf_set);
	CHECK_EQ_INT(f.moves, 0);
	LIST_IS(&f, 1, 2, 3);
	pol_close(&x);
}

static void test_lru_mru(void)
{
	struct fake f;
	struct pol x;

	if (pol_open(&x, GPUEXT_POLICY_DIR, "lru", 0)) {
		SET_LIST(&f, 1, 2, 3);
		CHECK_EQ_INT(block_hook(&x, &f, GPUEXT_HOOK_BLOCK_ACCESS, 1, 7, 0), 1);
		LIST_IS(&f, 2, 3, 1);
		CHECK_EQ_INT(block_hook(&x, &f, GPUEXT_HOOK_BLOCK_ACCESS, 3, 7, 0), 1);
		LIST_IS(&f, 2, 1, 3);
	}
	pol_close(&x);
	if (pol_open(&x, GPUEXT_POLICY_DIR, "mru", 0)) {
		SET_LIST(&f, 1, 2, 3);
		CHECK_EQ_INT(block_hook(&x, &f, GPUEXT_HOOK_BLOCK_ACCESS, 3, 7, 0), 1);
		LIST_IS(&f, 3, 1, 2);
	}
	pol_close(&x);
}

/* lfu and lfu_stride share the eviction rule: hot blocks to the tail, the least used head block first. */
static void check_lfu_eviction(const char *file)
{
	struct fake f;
	struct pol x;

	if (!pol_open(&x, GPUEXT_POLICY_DIR, file, 0))
		{
			CHECK(0);
			return;
		}
	SET_LIST(&f, 1, 2, 3, 4, 5);
	/* counts: 1 -> 1, 2 -> 2, 3 -> 0, 4 -> 5 (hot), 5 -> 1 */
	CHECK_EQ_INT(block_hook(&x, &f, GPUEXT_HOOK_BLOCK_ACCESS, 1, 7, 0), 1);
	for (int i = 0; i < 2; i++)
		CHECK_EQ_INT(block_hook(&x, &f, GPUEXT_HOOK_BLOCK_ACCESS, 2, 7, 0), 1);
	LIST_IS(&f, 1, 2, 3, 4, 5);	/* cold blocks are never promoted */
	for (int i = 0; i < 5; i++)
		block_hook(&x, &f, GPUEXT_HOOK_BLOCK_ACCESS, 4, 7, 0);
	block_hook(&x, &f, GPUEXT_HOOK_BLOCK_ACCESS, 5, 7, 0);
	LIST_IS(&f, 1, 2, 3, 5, 4);	/* 4 became hot on its 3rd access: tail */
	evict_prepare(&x, &f);
	LIST_IS(&f, 3, 1, 2, 5, 4);	/* 3 was never used: the victim */
	/* once 3 is gone, the least used are 1 and 5 (1 access each): the first one found wins */
	f.n--;
	memmove(f.list, f.list + 1, f.n * sizeof(f.list[0]));
	evict_prepare(&x, &f);
	LIST_IS(&f, 1, 2, 5, 4);
	pol_close(&x);
}

static void test_second_chance(void)
{
	struct fake f;
	struct pol x;

	if (!pol_open(&x, GPUEXT_POLICY_DIR, "fifo_second_chance", 0))
		{
			CHECK(0);
			return;
		}
	SET_LIST(&f, 1, 2, 3, 4);
	for (uint64_t b = 1; b <= 4; b++)
		CHECK_EQ_INT(block_hook(&x, &f, GPUEXT_HOOK_BLOCK_ACTIVATE, b, 7, 0), 0);
	CHECK_EQ_INT(block_hook(&x, &f, GPUEXT_HOOK_BLOCK_ACCESS, 1, 7, 0), 1);
	CHECK_EQ_INT(block_hook(&x, &f, GPUEXT_HOOK_BLOCK_ACCESS, 2, 7, 0), 1);
	CHECK_EQ_INT(block_hook(&x, &f, GPUEXT_HOOK_BLOCK_ACCESS, 4, 7, 0), 1);
	LIST_IS(&f, 1, 2, 3, 4);	/* accesses do not reorder */
	evict_prepare(&x, &f);
	LIST_IS(&f, 3, 4, 1, 2);	/* 1 and 2 had their second chance; 3 goes */
	evict_prepare(&x, &f);
	LIST_IS(&f, 3, 4, 1, 2);	/* bits were cleared: no more rotation */
	/* all referenced: the walk is bounded (16) and ends where it started, bits cleared */
	for (uint64_t b = 1; b <= 4; b++)
		block_hook(&x, &f, GPUEXT_HOOK_BLOCK_ACCESS, b, 7, 0);
	evict_prepare(&x, &f);
	LIST_IS(&f, 3, 4, 1, 2);
	evict_prepare(&x, &f);
	LIST_IS(&f, 3, 4, 1, 2);
	pol_close(&x);
}

static void test_prefetch_fixed(void)
{
	struct fake f = { 0 };
	struct pol x;

	if (pol_open(&x, GPUEXT_POLICY_DIR, "prefetch_max", 0)) {
		CHECK_EQ_INT(prefetch(&x, &f, 9, 7, 100, 0, 511), 1);
		PF_IS(&f, 0, 511);
		CHECK_EQ_INT(prefetch(&x, &f, 9, 7, 20, 16, 31), 1);
		PF_IS(&f, 16, 31);
	}
	pol_close(&x);
	if (pol_open(&x, GPUEXT_POLICY_DIR, "prefetch_seq", 0)) {
		CHECK_EQ_INT(prefetch(&x, &f, 9, 7, 10, 0, 511), 1);
		PF_IS(&f, 10, 74);
		CHECK_EQ_INT(prefetch(&x, &f, 9, 7, 500, 0, 511), 1);
		PF_IS(&f, 500, 511);
		CHECK_EQ_INT(prefetch(&x, &f, 9, 7, 40, 0, 63), 1);
		PF_IS(&f, 40, 63);
	}
	pol_close(&x);
}

/* prefetch_stride and lfu_stride: the same detector. */
static void check_stride(const char *file)
{
	struct fake f = { 0 };
	struct pol x;

	if (!pol_open(&x, GPUEXT_POLICY_DIR, file, 0))
		{
			CHECK(0);
			return;
		}
	/* tgid 7: faults at pages 0, 8, 16 of block 5 -> stride 8 confirmed: 24 .. 16+4*8 */
	CHECK_EQ_INT(prefetch(&x, &f, 5, 7, 0, 0, 511), 0);
	CHECK_EQ_INT(prefetch(&x, &f, 5, 7, 8, 0, 511), 0);
	CHECK(!f.pf_set);
	CHECK_EQ_INT(prefetch(&x, &f, 5, 7, 16, 0, 511), 1);
	PF_IS(&f, 24, 48);
	CHECK_EQ_INT(prefetch(&x, &f, 5, 7, 24, 0, 511), 1);
	PF_IS(&f, 32, 56);
	/* 32..56 were prefetched, so the stream faults next at 64: the same stride */
	CHECK_EQ_INT(prefetch(&x, &f, 5, 7, 64, 0, 511), 1);
	PF_IS(&f, 72, 96);
	/* the stride breaks: default until it repeats again */
	CHECK_EQ_INT(prefetch(&x, &f, 5, 7, 100, 0, 511), 0);
	/* another process keeps its own history: backward stride 10 */
	CHECK_EQ_INT(prefetch(&x, &f, 6, 8, 100, 0, 511), 0);
	CHECK_EQ_INT(prefetch(&x, &f, 6, 8, 90, 0, 511), 0);
	CHECK_EQ_INT(prefetch(&x, &f, 6, 8, 80, 0, 511), 1);
	PF_IS(&f, 40, 70);
	/* a wide stride (100 pages): one target, p + s */
	CHECK_EQ_INT(prefetch(&x, &f, 20, 9, 0, 0, 511), 0);
	CHECK_EQ_INT(prefetch(&x, &f, 20, 9, 100, 0, 511), 0);
	CHECK_EQ_INT(prefetch(&x, &f, 20, 9, 200, 0, 511), 1);
	PF_IS(&f, 300, 300);
	/* the stride crosses blocks (pages are counted in the address space): 2 MiB + 4 pages */
	CHECK_EQ_INT(prefetch(&x, &f, 30, 10, 0, 0, 511), 0);
	CHECK_EQ_INT(prefetch(&x, &f, 31, 10, 4, 0, 511), 0);
	CHECK_EQ_INT(prefetch(&x, &f, 32, 10, 8, 0, 511), 0);	/* 516 pages: not in one block */
	/* clipped to the max region */
	CHECK_EQ_INT(prefetch(&x, &f, 40, 11, 0, 0, 511), 0);
	CHECK_EQ_INT(prefetch(&x, &f, 40, 11, 16, 0, 511), 0);
	CHECK_EQ_INT(prefetch(&x, &f, 40, 11, 32, 0, 63), 1);
	PF_IS(&f, 48, 63);
	CHECK_EQ_INT(prefetch(&x, &f, 40, 11, 48, 0, 50), 0);	/* 64.. is outside: default */
	pol_close(&x);
}

static void test_mem_priority(void)
{
	struct fake f;
	struct pol x;
	struct gpuext_map *m;
	uint32_t k, v;

	if (!pol_open(&x, GPUEXT_POLICY_DIR, "mem_priority", 0))
		{
			CHECK(0);
			return;
		}
	m = gpuext_object__find_map(x.obj, "prio");
	CHECK(m != NULL);
	if (!m) {
		pol_close(&x);
		return;
	}
	k = 100, v = 2;	/* high */
	CHECK_EQ_INT(gpuext_map__update(m, &k, &v, 0), 0);
	k = 200, v = 0;	/* low */
	CHECK_EQ_INT(gpuext_map__update(m, &k, &v, 0), 0);
	SET_LIST(&f, 1, 2, 3);
	for (uint64_t b = 1; b <= 3; b++)	/* owners: 1, 2 high; 3 normal */
		block_hook(&x, &f, GPUEXT_HOOK_BLOCK_ACTIVATE, b, b == 3 ? 300 : 100, 0);
	f.list[f.n++] = 4;
	CHECK_EQ_INT(block_hook(&x, &f, GPUEXT_HOOK_BLOCK_ACTIVATE, 4, 200, 0), 0);
	LIST_IS(&f, 4, 1, 2, 3);	/* a low-priority block starts at the head */
	CHECK_EQ_INT(block_hook(&x, &f, GPUEXT_HOOK_BLOCK_ACCESS, 4, 200, 0), 1);
	LIST_IS(&f, 4, 1, 2, 3);	/* ... and is never promoted */
	CHECK_EQ_INT(block_hook(&x, &f, GPUEXT_HOOK_BLOCK_ACCESS, 3, 300, 0), 0);	/* normal: stock */
	CHECK_EQ_INT(block_hook(&x, &f, GPUEXT_HOOK_BLOCK_ACCESS, 1, 100, 0), 1);
	LIST_IS(&f, 4, 2, 3, 1);
	f.n--, memmove(f.list, f.list + 1, 3 * sizeof(f.list[0]));	/* 4 evicted */
	evict_prepare(&x, &f);
	LIST_IS(&f, 3, 1, 2);		/* the high head block 2 rotated away from the head */
	CHECK_EQ_INT(prefetch(&x, &f, 1, 100, 7, 0, 511), 1);
	PF_IS(&f, 0, 511);
	CHECK_EQ_INT(prefetch(&x, &f, 4, 200, 7, 0, 511), 1);
	PF_IS(&f, 7, 7);
	CHECK_EQ_INT(prefetch(&x, &f, 3, 300, 7, 0, 511), 0);
	pol_close(&x);
}

static void test_lc_be(void)
{
	struct fake f = { 0 };
	struct pol x;
	static const struct { const char *comm; bool lc; } cases[] = {
		{ "lc_server", true }, { "inference", true }, { "infer", true },
		{ "trainer", false }, { "lc", false }, { "inf", false }, { "", false },
	};

	if (!pol_open(&x, GPUEXT_POLICY_DIR, "lc_be", 0))
		{
			CHECK(0);
			return;
		}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		task_hook(&x, &f, GPUEXT_HOOK_TASK_INIT, i + 1, 50, cases[i].comm);
		CHECK_EQ_INT(f.attr[GPU_ATTR_LEVEL], cases[i].lc ? GPU_LEVEL_HIGH : GPU_LEVEL_LOW);
		CHECK_EQ_INT(f.attr[GPU_ATTR_TIMESLICE_US], cases[i].lc ? GPU_TIMESLICE_MAX_US : 200);
	}
	pol_close(&x);
}

static void test_fair_share(void)
{
	struct fake f = { 0 };
	struct pol x;

	if (!pol_open(&x, GPUEXT_POLICY_DIR, "fair_share", 0))
		{
			CHECK(0);
			return;
		}
	/* process 10 opens one group, process 20 opens four */
	task_hook(&x, &f, GPUEXT_HOOK_TASK_INIT, 1, 10, "a");
	CHECK_EQ_INT(f.attr[GPU_ATTR_TIMESLICE_US], 1024);
	for (uint64_t t = 2; t <= 5; t++) {
		task_hook(&x, &f, GPUEXT_HOOK_TASK_INIT, t, 20, "b");
		CHECK_EQ_INT(f.attr[GPU_ATTR_TIMESLICE_US], 1024 / (t - 1));
	}
	task_hook(&x, &f, GPUEXT_HOOK_TASK_BIND, 1, 10, "a");
	CHECK_EQ_INT(f.attr[GPU_ATTR_TIMESLICE_US], 1024);
	CHECK(!f.rejected);
	for (uint64_t t = 2; t <= 5; t++) {	/* at bind, every group sees all four siblings */
		task_hook(&x, &f, GPUEXT_HOOK_TASK_BIND, t, 20, "b");
		CHECK_EQ_INT(f.attr[GPU_ATTR_TIMESLICE_US], 256);
		CHECK(!f.rejected);
	}
	/* admission: at most 8 bound groups per process */
	for (uint64_t t = 6; t <= 10; t++)
		task_hook(&x, &f, GPUEXT_HOOK_TASK_INIT, t, 20, "b");
	for (uint64_t t = 6; t <= 9; t++) {
		task_hook(&x, &f, GPUEXT_HOOK_TASK_BIND, t, 20, "b");
		CHECK(!f.rejected);
		CHECK_EQ_INT(f.attr[GPU_ATTR_TIMESLICE_US], 128);
	}
	task_hook(&x, &f, GPUEXT_HOOK_TASK_BIND, 10, 20, "b");
	CHECK(f.rejected);
	/* one admitted group goes: a new one may bind */
	task_hook(&x, &f, GPUEXT_HOOK_TASK_DESTROY, 2, 20, "b");
	task_hook(&x, &f, GPUEXT_HOOK_TASK_INIT, 11, 20, "b");
	task_hook(&x, &f, GPUEXT_HOOK_TASK_BIND, 11, 20, "b");
	CHECK(!f.rejected);
	/* the refused group going away does not free a slot */
	task_hook(&x, &f, GPUEXT_HOOK_TASK_DESTROY, 10, 20, "b");
	task_hook(&x, &f, GPUEXT_HOOK_TASK_INIT, 12, 20, "b");
	task_hook(&x, &f, GPUEXT_HOOK_TASK_BIND, 12, 20, "b");
	CHECK(f.rejected);
	pol_close(&x);
}

/* ------------------------------------------------------------------ */
/* Bad policies                                                         */
/* ------------------------------------------------------------------ */

static void expect_rejected(const char *file, const char *rule, const char *hook)
{
	struct gpuext_runtime *rt = new_rt();
	struct gpuext_object *obj = NULL;
	struct gpuext_policy *p = NULL;
	char path[1024];

	snprintf(path, sizeof(path), "%s/%s.bpf.o", GPUEXT_TEST_BPF_DIR, file);
	test_log_clear(&logbuf);
	CHECK_EQ_INT(gpuext_object__open_file(rt, path, NULL, &obj), 0);
	if (obj) {
		CHECK_EQ_INT(gpuext_policy__open(obj, NULL, &p), -EACCES);
		CHECK(p == NULL);
		CHECK_STR_CONTAINS(logbuf.buf, hook);
		CHECK_STR_CONTAINS(logbuf.buf, rule);
	}
	gpuext_policy__close(p);
	gpuext_object__close(obj);
	gpuext_runtime__free(rt);
}

static void test_bad_policies(void)
{
	struct fake f;
	struct pol x;
	struct gpuext_policy_stats st;

	expect_rejected("badpolicy_call", "rejected by the verifier: bad-call", "gpu_block_access");
	expect_rejected("badpolicy_ret", "rejected by the verifier: ret-range", "gpu_block_access");

	/* verifies, then the first call runs past its budget: ejected, and stays ejected */
	if (!pol_open(&x, GPUEXT_TEST_BPF_DIR, "badpolicy_budget", 0))
		{
			CHECK(0);
			return;
		}
	SET_LIST(&f, 1, 2, 3);
	{
		struct gpu_mem_ctx mctx = { .block = { .block_id = 3 } };
		uint64_t args[3] = { (uint64_t)(uintptr_t)&mctx, BLOCK_H(3), USED_H }, ret = 0;
		struct gpuext_mem_region rg = { &mctx, sizeof(mctx), false };

		test_log_clear(&logbuf);
		CHECK_EQ_INT(gpuext_policy__call(x.p, GPUEXT_HOOK_BLOCK_ACCESS, args, 3, &rg, 1, &f, &ret),
			     -ECANCELED);
		CHECK_STR_CONTAINS(gpuext_policy__ejected(x.p),
				   "hook gpu_block_access exceeded its budget of 100000 instructions");
		CHECK_STR_CONTAINS(logbuf.buf, "ejected");
		LIST_IS(&f, 1, 2, 3);	/* the move_head after the loop never ran */
		CHECK_EQ_INT(gpuext_policy__call(x.p, GPUEXT_HOOK_BLOCK_ACCESS, args, 3, &rg, 1, &f, &ret),
			     -ECANCELED);
		gpuext_policy__stats(x.p, &st);
		CHECK_EQ_INT(st.calls[GPUEXT_HOOK_BLOCK_ACCESS], 1);	/* not run again */
		CHECK(st.max_call_insns >= 100000 && st.max_call_insns <= 100010);
	}
	pol_close(&x);
}

int main(void)
{
	test_every_object();
	test_fifo();
	test_lru_mru();
	check_lfu_eviction("lfu");
	check_lfu_eviction("lfu_stride");
	test_second_chance();
	test_prefetch_fixed();
	check_stride("prefetch_stride");
	check_stride("lfu_stride");
	test_mem_priority();
	test_lc_be();
	test_fair_share();
	test_bad_policies();
	return test_done("test_policies");
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The simulator's GPU memory model: NVIDIA's stock UVM (open kernel modules
 * 575.x) as far as eviction order, fault batching and prefetch go, with the
 * gpu_mem_ops hooks at the driver's decision points. Written from a reading
 * of uvm_pmm_gpu.c, uvm_va_block.c, uvm_gpu_replayable_faults.c and
 * uvm_perf_prefetch.c (see sim_prefetch.c); no driver code is copied.
 *
 * Defaults and where they come from:
 *  - batch_size 256: UVM_PERF_FAULT_BATCH_COUNT_DEFAULT, the module parameter
 *    uvm_perf_fault_batch_count (uvm_gpu_replayable_faults.c).
 *  - prefetch_threshold 51, min faults 1: UVM_PREFETCH_THRESHOLD_DEFAULT and
 *    UVM_PREFETCH_MIN_FAULTS_DEFAULT (uvm_perf_prefetch.c).
 *  - big_page_pages 16: 64 KiB, the big page size UVM assumes when growing
 *    fault granularity (uvm_perf_prefetch.c: UVM_PAGE_SIZE_64K fallback; the
 *    GPU big page size of current GPUs).
 *  - capacity 16384 blocks = 32 GiB: the RTX 5090 of the gpu_ext evaluation
 *    (seeds/lpc2025-talk-outline-zh.txt: "RTX 5090: 32GB").
 *  - h2d/d2h 25 GB/s: PCIe 4.0 x16 is 31.5 GB/s raw per direction (16 GT/s,
 *    128b/130b, 16 lanes); about 25 GB/s is what large pinned copies reach in
 *    practice (CUDA bandwidthTest class numbers). Not from the seeds, which
 *    give no bandwidth figure.
 *  - batch_overhead 20 us: the fixed cost of fetching, sorting and replaying
 *    one fault batch. The seeds give no number; the UVM characterisation
 *    literature (e.g. Allen & Ge, "In-Depth Analyses of Unified Virtual
 *    Memory System for GPU Accelerated Computing", SC'21) reports batch
 *    service costs in the tens of microseconds before data transfer. Tune
 *    with batch_overhead_us= when calibrating against a real GPU.
 *  - compute 1 ns per access: a scale knob for the workload generator.
 *
 * Modelled time = compute_ns * accesses + batch_overhead per batch +
 * bytes_h2d / h2d bandwidth + bytes_d2h / d2h bandwidth (no overlap of
 * transfers with compute or with each other). Per process: compute and fault
 * entries to the accessing process, the batch overhead split by fault
 * entries, H->D time to the owner of the block that moved, eviction D->H time
 * to the process whose fault needed the chunk (the evicted block's owner gets
 * the eviction, bytes and pages).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "sim_mem.h"

#define NIL UINT32_MAX
#define WORDS (GPU_PAGES_PER_BLOCK / 64)
#define PAGE_BYTES (1ULL << GPU_PAGE_SHIFT)
#define SIM_CALL_MAGIC 0x73696d63u /* "simc" */

enum { L_NONE = 0, L_USED = SIM_LIST_USED, L_UNUSED = SIM_LIST_UNUSED };

/* One 2 MiB VA block (and, while it holds one, its root chunk). Owned by the sim_mem. */
struct sim_block {
	uint64_t resident[WORDS];	/* pages resident on the GPU */
	uint64_t prefetched[WORDS];	/* moved by prefetch, not accessed since */
	uint64_t pending[WORDS];	/* faulted in the open batch */
	uint64_t id;			/* va >> 21 */
	uint64_t handed;		/* call generation this handle was last given out in */
	uint32_t prev, next;		/* used / unused list links */
	uint32_t owner;			/* slot in sim_mem.tg of the owning process */
	uint32_t fault_count;		/* fault entries, all batches */
	uint32_t batch_faults;		/* fault entries in the open batch */
	uint32_t batch_tgid;		/* first process to fault on it in the open batch */
	uint16_t resident_cnt;
	uint8_t list;			/* L_NONE (no chunk), L_USED, L_UNUSED */
	uint8_t has_chunk;
	uint8_t in_batch;
	uint8_t batch_write;
};

/* An eviction list (NVIDIA: pmm->root_chunks.alloc_list[]). Its address is the policy's handle. */
struct sim_list {
	uint32_t head, tail, count, which;
};

struct sim_tgid {
	uint32_t tgid;
	bool in_batch;
	struct sim_mem_stats st;
	uint64_t b_faults, b_h2d, b_d2h;	/* the open batch: entries, bytes to charge */
};

struct batch_key {
	uint32_t tgid, idx;
	uint64_t id;
};

/* The backend's state for one policy call; kfuncs get it with gpuext_exec__user(). */
struct sim_call {
	uint32_t magic;
	unsigned hook;
	struct sim_mem *m;
	uint64_t gen;
	struct sim_list *lists[2];	/* the lists this hook was given */
	unsigned nlists;
	struct sim_list *cur_list;	/* list_nth cursor: index cur_n is block cur_idx */
	uint32_t cur_n, cur_idx;
	bool region_ok;			/* gpu_page_prefetch only */
	bool region_set;
	char region_tag;		/* its address is the struct gpu_region handle */
	uint32_t first, last;
	struct gpu_page_range max;
};

struct sim_mem {
	struct gpuext_runtime *rt;
	struct sim_mem_config cfg;
	double h2d_bpns, d2h_bpns;	/* bytes per ns (= GB/s) */

	struct sim_block *blocks;
	uint32_t nblocks, cap_blocks;
	uint32_t *hash;			/* block index by id, open addressing */
	uint32_t hash_bits;
	uint64_t last_bid;
	uint32_t last_blk;

	struct sim_range *ranges;
	size_t nranges, cap_ranges;

	struct sim_tgid *tg;		/* slot 0: catch-all when a slot cannot be allocated */
	uint32_t ntg, cap_tg;
	uint32_t last_tgid, last_slot;
	uint32_t *touched;		/* slots with something in the open batch */
	uint32_t ntouched;

	struct sim_list lists[3];	/* [L_USED], [L_UNUSED] */
	uint64_t allocated;		/* root chunks in use */

	struct batch_key *batch;	/* blocks with faults in the open batch */
	uint32_t batch_nblocks, batch_entries;
	bool have_kernel;
	uint16_t kernel;

	struct sim_mem_stats st;
	struct gpuext_hal_slots slots;
	bool eject_reported;
	uint64_t call_gen;
	gpuext_hal_event_fn sink;
	void *sink_user;
	bool warned_unmapped;
};

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

static unsigned mask_weight(const uint64_t m[WORDS])
{
	unsigned n = 0;

	for (unsigned w = 0; w < WORDS; w++)
		n += sim_pop64(m[w]);
	return n;
}

static unsigned mask_first(const uint64_t m[WORDS])
{
	for (unsigned w = 0; w < WORDS; w++)
		if (m[w])
			return w * 64 + (unsigned)__builtin_ctzll(m[w]);
	return GPU_PAGES_PER_BLOCK;
}

static void mask_fill(uint64_t m[WORDS], unsigned first, unsigned last)
{
	for (unsigned p = first; p <= last && p < GPU_PAGES_PER_BLOCK;) {
		unsigned w = p / 64, lo = p % 64, hi = last / 64 == w ? last % 64 : 63;

		m[w] |= (hi - lo == 63) ? ~0ULL : ((1ULL << (hi - lo + 1)) - 1) << lo;
		p = w * 64 + hi + 1;
	}
}

static void emit(struct sim_mem *m, enum gpuext_hal_event_kind kind, unsigned hook, uint64_t id,
		 uint64_t a, uint64_t b, int64_t ret, const char *detail)
{
	struct gpuext_hal_event ev = {
		.kind = kind, .hook = hook, .policy_kind = GPUEXT_POLICY_MEM, .id = id,
		.a = a, .b = b, .ret = ret, .time_ns = m->st.time_ns, .detail = detail,
	};

	if (m->sink)
		m->sink(&ev, m->sink_user);
}

static uint32_t hash_slot(uint64_t id, uint32_t bits)
{
	return (uint32_t)((id * 0x9E3779B97F4A7C15ULL) >> (64 - bits));
}

static struct sim_block *lookup(struct sim_mem *m, uint64_t bid)
{
	uint32_t mask, i;

	if (bid == m->last_bid && m->last_blk != NIL)
		return &m->blocks[m->last_blk];
	if (!m->hash)
		return NULL;
	mask = (1u << m->hash_bits) - 1;
	for (i = hash_slot(bid, m->hash_bits);; i = (i + 1) & mask) {
		uint32_t b = m->hash[i];

		if (b == NIL)
			return NULL;
		if (m->blocks[b].id == bid) {
			m->last_bid = bid;
			m->last_blk = b;
			return &m->blocks[b];
		}
	}
}

static int rehash(struct sim_mem *m, uint32_t need)
{
	uint32_t bits = 4, *h;

	while ((1ULL << bits) < 2ULL * need)
		bits++;
	if (bits > 31)
		return GPUEXT_ERR(ENOMEM);
	if (m->hash && bits == m->hash_bits)
		return 0;
	h = malloc(sizeof(*h) << bits);
	if (!h)
		return GPUEXT_ERR(ENOMEM);
	memset(h, 0xff, sizeof(*h) << bits);
	for (uint32_t b = 0; b < m->nblocks; b++) {
		uint32_t i = hash_slot(m->blocks[b].id, bits);

		while (h[i] != NIL)
			i = (i + 1) & ((1u << bits) - 1);
		h[i] = b;
	}
	free(m->hash);
	m->hash = h;
	m->hash_bits = bits;
	return 0;
}

static struct sim_tgid *tgid_slot(struct sim_mem *m, uint32_t tgid)
{
	if (m->ntg > 1 && tgid == m->last_tgid)
		return &m->tg[m->last_slot];
	for (uint32_t i = 1; i < m->ntg; i++) {
		if (m->tg[i].tgid == tgid) {
			m->last_tgid = tgid;
			m->last_slot = i;
			return &m->tg[i];
		}
	}
	if (m->ntg == m->cap_tg) {
		uint32_t cap = m->cap_tg * 2;
		struct sim_tgid *t = realloc(m->tg, cap * sizeof(*t));
		uint32_t *touched = realloc(m->touched, cap * sizeof(*touched));

		if (t)
			m->tg = t;
		if (touched)
			m->touched = touched;
		if (!t || !touched)
			return &m->tg[0];
		m->cap_tg = cap;
	}
	memset(&m->tg[m->ntg], 0, sizeof(m->tg[0]));
	m->tg[m->ntg].tgid = tgid;
	m->last_tgid = tgid;
	m->last_slot = m->ntg;
	return &m->tg[m->ntg++];
}

static void touch(struct sim_mem *m, struct sim_tgid *t)
{
	if (!t->in_batch) {
		t->in_batch = true;
		m->touched[m->ntouched++] = (uint32_t)(t - m->tg);
	}
}

/* ---- intrusive lists (indices into m->blocks) ---- */

static void list_del(struct sim_mem *m, struct sim_block *b)
{
	struct sim_list *l = &m->lists[b->list];

	if (b->prev != NIL)
		m->blocks[b->prev].next = b->next;
	else
		l->head = b->next;
	if (b->next != NIL)
		m->blocks[b->next].prev = b->prev;
	else
		l->tail = b->prev;
	l->count--;
	b->prev = b->next = NIL;
	b->list = L_NONE;
}

static void list_add(struct sim_mem *m, struct sim_block *b, unsigned which, bool head)
{
	struct sim_list *l = &m->lists[which];
	uint32_t idx = (uint32_t)(b - m->blocks);

	if (b->list != L_NONE)
		list_del(m, b);
	b->list = (uint8_t)which;
	if (head) {
		b->prev = NIL;
		b->next = l->head;
		if (l->head != NIL)
			m->blocks[l->head].prev = idx;
		else
			l->tail = idx;
		l->head = idx;
	} else {
		b->next = NIL;
		b->prev = l->tail;
		if (l->tail != NIL)
			m->blocks[l->tail].next = idx;
		else
			l->head = idx;
		l->tail = idx;
	}
	l->count++;
}

/* ------------------------------------------------------------------ */
/* Policy calls                                                        */
/* ------------------------------------------------------------------ */

static void fill_ctx(const struct sim_mem *m, struct gpu_mem_ctx *c, const struct sim_block *b,
		     uint32_t tgid, uint32_t page, bool write)
{
	memset(c, 0, sizeof(*c));
	c->now_ns = m->st.time_ns;
	c->gpu_id = m->cfg.gpu_id;
	c->tgid = tgid;
	if (b) {
		c->block.block_id = b->id;
		c->block.va_start = b->id << GPU_BLOCK_SHIFT;
		c->block.size = GPU_BLOCK_SIZE;
		c->block.owner_tgid = m->tg[b->owner].tgid;
		c->block.resident_pages = b->resident_cnt;
		c->block.fault_count = b->fault_count;
		c->block.gpu_id = m->cfg.gpu_id;
	}
	c->page_index = page;
	c->is_write = write;
	c->capacity_blocks = m->cfg.capacity_blocks;
	c->used_blocks = m->allocated;
}

/*
 * The policy to call at @hook, or NULL when the default runs (no policy, the
 * hook is absent, or the policy was ejected); the DEFAULT / EJECT events are
 * sent here for the NULL case.
 */
static struct gpuext_policy *policy_for(struct sim_mem *m, unsigned hook, uint64_t id)
{
	struct gpuext_policy *p = m->slots.mem;

	if (p && gpuext_policy__has_hook(p, hook)) {
		if (!gpuext_policy__ejected(p))
			return p;
		if (!m->eject_reported) {
			m->eject_reported = true;
			emit(m, GPUEXT_EV_EJECT, hook, id, 0, 0, -ECANCELED, gpuext_policy__ejected(p));
		}
	}
	if (m->sink)
		emit(m, GPUEXT_EV_DEFAULT, hook, id, 0, 0, 0, NULL);
	return NULL;
}

static void begin_call(struct sim_mem *m, struct sim_call *call, unsigned hook)
{
	memset(call, 0, sizeof(*call));
	call->magic = SIM_CALL_MAGIC;
	call->hook = hook;
	call->m = m;
	call->gen = ++m->call_gen;
}

/* Runs the hook; true with *ret when the policy decided, false when the default runs. */
static bool run_hook(struct sim_mem *m, struct gpuext_policy *p, struct sim_call *call,
		     const uint64_t *args, unsigned nargs, const struct gpuext_mem_region *regs,
		     size_t nregs, uint64_t id, uint64_t *ret)
{
	int err = gpuext_policy__call(p, call->hook, args, nargs, regs, nregs, call, ret);

	call->magic = 0;	/* handles die with the call */
	if (!err) {
		emit(m, GPUEXT_EV_HOOK, call->hook, id, 0, 0, (int64_t)*ret, NULL);
		return true;
	}
	if (err == -ECANCELED && !m->eject_reported) {
		m->eject_reported = true;
		emit(m, GPUEXT_EV_EJECT, call->hook, id, 0, 0, err, gpuext_policy__ejected(p));
	}
	emit(m, GPUEXT_EV_DEFAULT, call->hook, id, 0, 0, err, NULL);
	return false;
}

/* gpu_block_activate / gpu_block_access: (ctx, block, list the block is on). */
static bool hook_block(struct sim_mem *m, unsigned hook, struct sim_block *b, uint32_t tgid,
		       uint32_t page, bool write, uint64_t *ret)
{
	struct gpuext_policy *p = policy_for(m, hook, b->id);
	struct gpu_mem_ctx c;
	struct sim_call call;
	struct sim_list *l;

	if (!p)
		return false;
	begin_call(m, &call, hook);
	fill_ctx(m, &c, b, tgid, page, write);
	l = &m->lists[b->list];
	b->handed = call.gen;
	call.lists[0] = l;
	call.nlists = 1;
	{
		const uint64_t args[3] = { (uintptr_t)&c, (uintptr_t)b, (uintptr_t)l };
		const struct gpuext_mem_region reg = { &c, sizeof(c), false };

		return run_hook(m, p, &call, args, 3, &reg, 1, b->id, ret);
	}
}

/* gpu_evict_prepare: (ctx, used, unused). */
static void hook_evict_prepare(struct sim_mem *m, uint32_t tgid)
{
	struct gpuext_policy *p = policy_for(m, GPUEXT_HOOK_EVICT_PREPARE, 0);
	struct gpu_mem_ctx c;
	struct sim_call call;
	uint64_t ret;

	if (!p)
		return;
	begin_call(m, &call, GPUEXT_HOOK_EVICT_PREPARE);
	fill_ctx(m, &c, NULL, tgid, 0, false);
	call.lists[0] = &m->lists[L_USED];
	call.lists[1] = &m->lists[L_UNUSED];
	call.nlists = 2;
	{
		const uint64_t args[3] = { (uintptr_t)&c, (uintptr_t)call.lists[0],
					   (uintptr_t)call.lists[1] };
		const struct gpuext_mem_region reg = { &c, sizeof(c), false };

		run_hook(m, p, &call, args, 3, &reg, 1, 0, &ret);
	}
}

/* ---- kfuncs ---- */

static struct sim_call *call_of(struct gpuext_exec *ex)
{
	struct sim_call *c = gpuext_exec__user(ex);

	return c && c->magic == SIM_CALL_MAGIC ? c : NULL;
}

/* A block handle given out in this call (the hook's block or a list_nth result). */
static struct sim_block *block_of(struct sim_call *c, uint64_t h)
{
	uintptr_t base = (uintptr_t)c->m->blocks, p = (uintptr_t)h;
	struct sim_block *b;

	if (p < base || p >= base + (uintptr_t)c->m->nblocks * sizeof(*b) ||
	    (p - base) % sizeof(*b))
		return NULL;
	b = (struct sim_block *)p;
	return b->handed == c->gen ? b : NULL;
}

static struct sim_list *list_of(struct sim_call *c, uint64_t h)
{
	for (unsigned i = 0; i < c->nlists; i++)
		if ((uintptr_t)c->lists[i] == h)
			return c->lists[i];
	return NULL;
}

static uint64_t kf_move(struct gpuext_exec *ex, uint64_t blk, uint64_t lst, bool head)
{
	struct sim_call *c = call_of(ex);
	struct sim_block *b = c ? block_of(c, blk) : NULL;
	struct sim_list *l = c ? list_of(c, lst) : NULL;
	int ret = 0;

	if (!b || !l || b->list != l->which)
		ret = -EINVAL;
	else {
		list_add(c->m, b, l->which, head);
		c->cur_list = NULL;
	}
	if (c)
		emit(c->m, GPUEXT_EV_KFUNC, c->hook, b ? b->id : 0, l ? l->which : 0, 0, ret,
		     head ? GPUEXT_KF_MOVE_HEAD : GPUEXT_KF_MOVE_TAIL);
	return (uint64_t)(int64_t)ret;
}

static uint64_t kf_move_head(struct gpuext_exec *ex, uint64_t r1, uint64_t r2, uint64_t r3,
			     uint64_t r4, uint64_t r5)
{
	(void)r3, (void)r4, (void)r5;
	return kf_move(ex, r1, r2, true);
}

static uint64_t kf_move_tail(struct gpuext_exec *ex, uint64_t r1, uint64_t r2, uint64_t r3,
			     uint64_t r4, uint64_t r5)
{
	(void)r3, (void)r4, (void)r5;
	return kf_move(ex, r1, r2, false);
}

static uint64_t kf_list_nth(struct gpuext_exec *ex, uint64_t lst, uint64_t n, uint64_t r3,
			    uint64_t r4, uint64_t r5)
{
	struct sim_call *c = call_of(ex);
	struct sim_list *l = c ? list_of(c, lst) : NULL;
	struct sim_block *b = NULL;
	uint32_t idx, i;

	(void)r3, (void)r4, (void)r5;
	if (l && n < l->count) {
		/* A walk n = 0, 1, 2 ... costs O(1) per step, not O(n). */
		if (c->cur_list == l && n == (uint64_t)c->cur_n + 1) {
			idx = c->m->blocks[c->cur_idx].next;
		} else {
			for (idx = l->head, i = 0; i < n; i++)
				idx = c->m->blocks[idx].next;
		}
		c->cur_list = l;
		c->cur_n = (uint32_t)n;
		c->cur_idx = idx;
		b = &c->m->blocks[idx];
		b->handed = c->gen;
	}
	if (c)
		emit(c->m, GPUEXT_EV_KFUNC, c->hook, b ? b->id : 0, n, l ? l->which : 0,
		     l ? (b ? 0 : -ENOENT) : -EINVAL, GPUEXT_KF_LIST_NTH);
	return (uintptr_t)b;
}

static uint64_t kf_block_id(struct gpuext_exec *ex, uint64_t blk, uint64_t r2, uint64_t r3,
			    uint64_t r4, uint64_t r5)
{
	struct sim_call *c = call_of(ex);
	struct sim_block *b = c ? block_of(c, blk) : NULL;

	(void)r2, (void)r3, (void)r4, (void)r5;
	if (c && !b)
		emit(c->m, GPUEXT_EV_KFUNC, c->hook, 0, 0, 0, -EINVAL, GPUEXT_KF_BLOCK_ID);
	return b ? b->id : (uint64_t)(int64_t)-EINVAL;
}

static uint64_t kf_set_prefetch(struct gpuext_exec *ex, uint64_t reg, uint64_t first,
				uint64_t last, uint64_t r4, uint64_t r5)
{
	struct sim_call *c = call_of(ex);
	int ret = -EINVAL;

	(void)r4, (void)r5;
	if (c && c->region_ok && reg == (uintptr_t)&c->region_tag && first <= last) {
		/* The driver clamps to max_region. */
		uint64_t f = first < c->max.first_page ? c->max.first_page : first;
		uint64_t l = last > c->max.last_page ? c->max.last_page : last;

		if (f <= l) {
			c->first = (uint32_t)f;
			c->last = (uint32_t)l;
			c->region_set = true;
			ret = 0;
		}
	}
	if (c)
		emit(c->m, GPUEXT_EV_KFUNC, c->hook, 0, first, last, ret, GPUEXT_KF_SET_PREFETCH);
	return (uint64_t)(int64_t)ret;
}

/* ------------------------------------------------------------------ */
/* The model                                                           */
/* ------------------------------------------------------------------ */

/*
 * Models evict_root_chunk() / uvm_va_block_evict_chunks(): every page of the
 * victim resident on the GPU migrates back to the host, the chunk is taken
 * off its list and handed to the faulting block.
 */
static void evict(struct sim_mem *m, struct sim_block *v, struct sim_tgid *cause)
{
	struct sim_tgid *owner = &m->tg[v->owner];
	uint64_t pages = v->resident_cnt, unused = mask_weight(v->prefetched);

	m->st.evictions++;
	owner->st.evictions++;
	m->st.pages_d2h += pages;
	owner->st.pages_d2h += pages;
	m->st.bytes_d2h += pages * PAGE_BYTES;
	owner->st.bytes_d2h += pages * PAGE_BYTES;
	m->st.prefetch_unused += unused;
	owner->st.prefetch_unused += unused;
	cause->b_d2h += pages * PAGE_BYTES;
	touch(m, cause);
	list_del(m, v);
	v->has_chunk = 0;
	v->resident_cnt = 0;
	memset(v->resident, 0, sizeof(v->resident));
	memset(v->prefetched, 0, sizeof(v->prefetched));
	emit(m, GPUEXT_EV_EVICT, GPUEXT_HOOK_EVICT_PREPARE, v->id, pages, owner->tgid, 0, NULL);
}

/*
 * Models uvm_pmm_gpu_alloc_user() for one 2 MiB root chunk: a free chunk if
 * any (PMA has memory), else pick_and_evict_root_chunk(): gpu_evict_prepare,
 * then pick_root_chunk_to_evict() takes the first chunk of the allocation
 * lists in list order -- UVM_PMM_ALLOC_LIST_UNUSED before ..._USED (the
 * DISCARDED list is not modelled: nothing here discards). Then
 * uvm_pmm_gpu_unpin_allocated() -> chunk_update_lists_locked() puts the
 * chunk at the used tail, and the block became evictable: gpu_block_activate.
 */
static void alloc_chunk(struct sim_mem *m, struct sim_block *b, struct sim_tgid *cause,
			uint32_t tgid, unsigned page)
{
	uint64_t ret;

	if (m->allocated < m->cfg.capacity_blocks) {
		m->allocated++;
	} else {
		struct sim_list *unused = &m->lists[L_UNUSED], *used = &m->lists[L_USED];
		uint32_t v;

		hook_evict_prepare(m, tgid);
		v = unused->head != NIL ? unused->head : used->head;
		/* Every allocated chunk is on a list and @b holds none, so v is a block. */
		if (v != NIL)
			evict(m, &m->blocks[v], cause);
		else
			m->allocated++;
	}
	b->has_chunk = 1;
	list_add(m, b, L_USED, false);
	hook_block(m, GPUEXT_HOOK_BLOCK_ACTIVATE, b, tgid, page, b->batch_write, &ret);
}

/*
 * The prefetch hint for one block's faults in this batch
 * (uvm_perf_prefetch_get_hint_va_block()). Stock: sim_prefetch_stock(). With
 * a gpu_page_prefetch hook: one call per faulted page in ascending order, as
 * compute_prefetch_mask() calls compute_prefetch_region(), the union of the
 * regions, stopping once a region reaches the end of the block; a call that
 * returns 0 (or fails) gets the stock region for that page.
 */
static void block_prefetch(struct sim_mem *m, struct sim_block *b, const uint64_t faulted[WORDS],
			   uint32_t tgid, uint64_t pf[WORDS])
{
	unsigned thr = m->cfg.prefetch_threshold;
	unsigned big = m->cfg.big_page_disable ? 1 : m->cfg.big_page_pages;
	struct gpuext_policy *p = policy_for(m, GPUEXT_HOOK_PAGE_PREFETCH, b->id);
	struct gpu_page_tree tree;
	uint64_t grown[WORDS];

	if (!p) {
		if (m->cfg.prefetch_disable)
			memset(pf, 0, WORDS * sizeof(uint64_t));
		else
			sim_prefetch_stock(b->resident, faulted, thr, big, pf);
		return;
	}
	memset(pf, 0, WORDS * sizeof(uint64_t));
	memcpy(tree.resident, b->resident, sizeof(tree.resident));
	memcpy(tree.faulted, faulted, sizeof(tree.faulted));
	sim_prefetch_tree(b->resident, faulted, big, grown);
	for (unsigned w = 0; w < WORDS; w++) {
		for (uint64_t f = faulted[w]; f; f &= f - 1) {
			unsigned page = w * 64 + (unsigned)__builtin_ctzll(f), first = 0, last = 0;
			struct gpu_mem_ctx c;
			struct sim_call call;
			uint64_t ret = 0;
			bool have;

			begin_call(m, &call, GPUEXT_HOOK_PAGE_PREFETCH);
			call.region_ok = true;
			call.max.first_page = 0;
			call.max.last_page = GPU_PAGES_PER_BLOCK - 1;
			fill_ctx(m, &c, b, tgid, page, b->batch_write);
			{
				const uint64_t args[5] = { (uintptr_t)&c, page, (uintptr_t)&tree,
							   (uintptr_t)&call.max,
							   (uintptr_t)&call.region_tag };
				const struct gpuext_mem_region regs[3] = {
					{ &c, sizeof(c), false },
					{ &tree, sizeof(tree), false },
					{ &call.max, sizeof(call.max), false },
				};

				if (p && run_hook(m, p, &call, args, 5, regs, 3, b->id, &ret) &&
				    ret == 1) {
					have = call.region_set;
					first = call.first;
					last = call.last;
				} else {
					have = !m->cfg.prefetch_disable &&
					       sim_prefetch_region(grown, page, thr, &first, &last);
				}
			}
			/* After an ejection the rest of the block runs the default silently. */
			if (p && gpuext_policy__ejected(p))
				p = NULL;
			if (!have)
				continue;
			mask_fill(pf, first, last);
			if (last == GPU_PAGES_PER_BLOCK - 1)
				goto done;
		}
	}
done:
	for (unsigned w = 0; w < WORDS; w++)
		pf[w] &= ~faulted[w] & ~b->resident[w];
}

static void emit_prefetch_runs(struct sim_mem *m, const struct sim_block *b,
			       const uint64_t pf[WORDS])
{
	for (unsigned p = 0; p < GPU_PAGES_PER_BLOCK;) {
		unsigned q;

		if (!(pf[p / 64] >> (p % 64) & 1)) {
			p++;
			continue;
		}
		for (q = p; q + 1 < GPU_PAGES_PER_BLOCK && (pf[(q + 1) / 64] >> ((q + 1) % 64) & 1);)
			q++;
		emit(m, GPUEXT_EV_PREFETCH, GPUEXT_HOOK_PAGE_PREFETCH, b->id, p, q, 0, NULL);
		p = q + 1;
	}
}

/*
 * One block's share of a batch: uvm_va_block_service_locked() for the GPU as
 * the new residency. Order as in the driver: prefetch hint, populate (chunk
 * allocation, maybe eviction), copy, then block_set_resident_processor().
 */
static void service_block(struct sim_mem *m, struct sim_block *b)
{
	struct sim_tgid *cause = tgid_slot(m, b->batch_tgid);	/* may grow m->tg: first */
	struct sim_tgid *owner = &m->tg[b->owner];
	uint64_t faulted[WORDS], pf[WORDS], ret;
	unsigned nf, npf, first_page;
	bool first_residency, handled;

	for (unsigned w = 0; w < WORDS; w++) {
		faulted[w] = b->pending[w] & ~b->resident[w];
		b->pending[w] = 0;
	}
	b->in_batch = 0;
	b->fault_count += b->batch_faults;
	nf = mask_weight(faulted);
	if (!nf)
		return;
	first_page = mask_first(faulted);

	block_prefetch(m, b, faulted, b->batch_tgid, pf);

	/* block_populate_pages(): the block needs its root chunk first. */
	if (!b->has_chunk)
		alloc_chunk(m, b, cause, b->batch_tgid, first_page);

	/* block_copy_resident_pages(): faulted + prefetched pages move H->D. */
	npf = mask_weight(pf);
	first_residency = b->resident_cnt == 0;
	for (unsigned w = 0; w < WORDS; w++) {
		b->resident[w] |= faulted[w] | pf[w];
		b->prefetched[w] |= pf[w];
	}
	b->resident_cnt = (uint16_t)(b->resident_cnt + nf + npf);
	m->st.pages_h2d += nf + npf;
	owner->st.pages_h2d += nf + npf;
	m->st.bytes_h2d += (nf + npf) * PAGE_BYTES;
	owner->st.bytes_h2d += (nf + npf) * PAGE_BYTES;
	m->st.prefetched_pages += npf;
	owner->st.prefetched_pages += npf;
	owner->b_h2d += (nf + npf) * PAGE_BYTES;
	touch(m, owner);
	if (npf && m->sink)
		emit_prefetch_runs(m, b, pf);

	/*
	 * block_set_resident_processor() -> block_mark_memory_used() ->
	 * uvm_pmm_gpu_mark_root_chunk_used(): the chunk moves to the used tail
	 * only when the GPU *becomes* resident for the block; later faults and
	 * accesses to resident pages do not touch the lists. Which list a chunk
	 * is on stays the driver's decision (unused -> used happens first); a
	 * policy that handles gpu_block_access decides the position.
	 */
	if (first_residency && b->list == L_UNUSED)
		list_add(m, b, L_USED, false);
	handled = hook_block(m, GPUEXT_HOOK_BLOCK_ACCESS, b, b->batch_tgid, first_page,
			     b->batch_write, &ret) && ret == 1;
	if (!handled && first_residency)
		list_add(m, b, L_USED, false);
}

static bool key_less(const struct batch_key *a, const struct batch_key *b)
{
	return a->tgid != b->tgid ? a->tgid < b->tgid : a->id < b->id;
}

/* Shell sort: a batch holds at most batch_size keys, and libc qsort's indirect calls cost more. */
static void sort_batch(struct batch_key *k, uint32_t n)
{
	static const uint32_t gaps[] = { 1750, 701, 301, 132, 57, 23, 10, 4, 1 };

	for (size_t g = 0; g < sizeof(gaps) / sizeof(gaps[0]); g++) {
		uint32_t gap = gaps[g];

		for (uint32_t i = gap; i < n; i++) {
			struct batch_key t = k[i];
			uint32_t j = i;

			for (; j >= gap && key_less(&t, &k[j - gap]); j -= gap)
				k[j] = k[j - gap];
			k[j] = t;
		}
	}
}

/*
 * Models service_fault_batch() (uvm_gpu_replayable_faults.c): the batch's
 * fault entries are sorted by VA space, then address
 * (cmp_sort_fault_entry_by_va_space_gpu_address_access_type(); the process
 * id stands in for the VA space pointer), duplicates coalesce, and each VA
 * block is serviced once with all its faulted pages; then one replay.
 */
static void service_batch(struct sim_mem *m)
{
	uint64_t fault_ns_done = 0, cum = 0, entries = m->batch_entries;

	if (!entries)
		return;
	sort_batch(m->batch, m->batch_nblocks);
	for (uint32_t i = 0; i < m->batch_nblocks; i++)
		service_block(m, &m->blocks[m->batch[i].idx]);
	m->st.batches++;

	/* Charge the batch: overhead split by fault entries, transfers by bytes. */
	for (uint32_t i = 0; i < m->ntouched; i++) {
		struct sim_tgid *t = &m->tg[m->touched[i]];
		uint64_t upto, fault_ns, h2d_ns, d2h_ns;

		cum += t->b_faults;
		upto = (uint64_t)((unsigned __int128)m->cfg.batch_overhead_ns * cum / entries);
		fault_ns = upto - fault_ns_done;
		fault_ns_done = upto;
		h2d_ns = (uint64_t)llround((double)t->b_h2d / m->h2d_bpns);
		d2h_ns = (uint64_t)llround((double)t->b_d2h / m->d2h_bpns);
		if (t->b_faults)
			t->st.batches++;
		t->st.fault_ns += fault_ns;
		t->st.h2d_ns += h2d_ns;
		t->st.d2h_ns += d2h_ns;
		t->st.time_ns += fault_ns + h2d_ns + d2h_ns;
		m->st.fault_ns += fault_ns;
		m->st.h2d_ns += h2d_ns;
		m->st.d2h_ns += d2h_ns;
		m->st.time_ns += fault_ns + h2d_ns + d2h_ns;
		t->b_faults = t->b_h2d = t->b_d2h = 0;
		t->in_batch = false;
	}
	m->ntouched = 0;
	m->batch_nblocks = 0;
	m->batch_entries = 0;
}

static inline void access_one(struct sim_mem *m, const struct sim_access *a)
{
	struct sim_block *b;
	struct sim_tgid *t;
	unsigned page, w;
	uint64_t bit;

	if (__builtin_expect(a->kernel != m->kernel || !m->have_kernel, 0)) {
		/* A kernel ends only once all its faults are serviced. */
		service_batch(m);
		m->kernel = a->kernel;
		m->have_kernel = true;
	}
	t = tgid_slot(m, a->tgid);
	b = lookup(m, a->va >> GPU_BLOCK_SHIFT);
	if (__builtin_expect(!b, 0)) {
		m->st.unmapped++;
		t->st.unmapped++;
		if (!m->warned_unmapped) {
			m->warned_unmapped = true;
			gpuext_log(m->rt, GPUEXT_LOG_WARN,
				   "sim: access to 0x%llx by tgid %u is outside every managed range; "
				   "ignored (counted in stats.unmapped)",
				   (unsigned long long)a->va, a->tgid);
		}
		return;
	}
	m->st.accesses++;
	t->st.accesses++;
	m->st.compute_ns += m->cfg.compute_ns;
	m->st.time_ns += m->cfg.compute_ns;
	t->st.compute_ns += m->cfg.compute_ns;
	t->st.time_ns += m->cfg.compute_ns;

	page = (unsigned)(a->va >> GPU_PAGE_SHIFT) & (GPU_PAGES_PER_BLOCK - 1);
	w = page / 64;
	bit = 1ULL << (page % 64);
	if (b->resident[w] & bit) {
		/* A GPU access to a resident page: no fault, no list change. */
		if (__builtin_expect(b->prefetched[w] & bit, 0)) {
			b->prefetched[w] &= ~bit;
			m->st.prefetch_used++;
			m->tg[b->owner].st.prefetch_used++;
		}
		return;
	}

	/* A fault entry in the GPU fault buffer. */
	m->st.faults++;
	t->st.faults++;
	t->b_faults++;
	touch(m, t);
	if (b->pending[w] & bit) {
		m->st.dup_faults++;
		t->st.dup_faults++;
	}
	b->pending[w] |= bit;
	if (!b->in_batch) {
		b->in_batch = 1;
		b->batch_faults = 0;
		b->batch_write = 0;
		b->batch_tgid = a->tgid;
		m->batch[m->batch_nblocks].tgid = m->tg[b->owner].tgid;
		m->batch[m->batch_nblocks].id = b->id;
		m->batch[m->batch_nblocks].idx = (uint32_t)(b - m->blocks);
		m->batch_nblocks++;
	}
	b->batch_faults++;
	b->batch_write |= a->is_write;
	if (++m->batch_entries >= m->cfg.batch_size)
		service_batch(m);
}

/* ------------------------------------------------------------------ */
/* API                                                                 */
/* ------------------------------------------------------------------ */

void sim_mem__access(struct sim_mem *m, const struct sim_access *a)
{
	access_one(m, a);
}

void sim_mem__access_n(struct sim_mem *m, const struct sim_access *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		access_one(m, &a[i]);
}

void sim_mem__flush(struct sim_mem *m)
{
	service_batch(m);
}

/*
 * Models a CPU fault migrating pages back (uvm_va_block_service_locked() with
 * the CPU as new residency, without its prefetch): when the GPU is left with
 * no resident page, block_clear_resident_processor() ->
 * uvm_pmm_gpu_mark_root_chunk_unused() moves the chunk to the unused tail.
 */
int sim_mem__host_access(struct sim_mem *m, uint64_t va, uint64_t len)
{
	uint64_t end = va + len;

	if (!len || end < va)
		return GPUEXT_ERR(EINVAL);
	for (uint64_t bid = va >> GPU_BLOCK_SHIFT; bid <= (end - 1) >> GPU_BLOCK_SHIFT; bid++) {
		if (!lookup(m, bid)) {
			gpuext_log(m->rt, GPUEXT_LOG_WARN,
				   "sim: host access [0x%llx, 0x%llx) leaves the managed ranges",
				   (unsigned long long)va, (unsigned long long)end);
			return GPUEXT_ERR(EINVAL);
		}
	}
	service_batch(m);
	for (uint64_t bid = va >> GPU_BLOCK_SHIFT; bid <= (end - 1) >> GPU_BLOCK_SHIFT; bid++) {
		struct sim_block *b = lookup(m, bid);
		struct sim_tgid *owner = &m->tg[b->owner];
		uint64_t base = bid << GPU_BLOCK_SHIFT, span[WORDS] = { 0 }, pages, unused, ns;
		unsigned first = va > base ? (unsigned)((va - base) >> GPU_PAGE_SHIFT) : 0;
		unsigned last = end - base >= GPU_BLOCK_SIZE ? GPU_PAGES_PER_BLOCK - 1
							     : (unsigned)((end - 1 - base) >> GPU_PAGE_SHIFT);

		mask_fill(span, first, last);
		for (unsigned w = 0; w < WORDS; w++)
			span[w] &= b->resident[w];
		pages = mask_weight(span);
		if (!pages)
			continue;
		for (unsigned w = 0; w < WORDS; w++)
			span[w] &= b->prefetched[w];
		unused = mask_weight(span);
		mask_fill(span, first, last);
		for (unsigned w = 0; w < WORDS; w++) {
			b->resident[w] &= ~span[w];
			b->prefetched[w] &= ~span[w];
		}
		b->resident_cnt = (uint16_t)(b->resident_cnt - pages);
		ns = (uint64_t)llround((double)(pages * PAGE_BYTES) / m->d2h_bpns);
		m->st.pages_d2h += pages;
		owner->st.pages_d2h += pages;
		m->st.bytes_d2h += pages * PAGE_BYTES;
		owner->st.bytes_d2h += pages * PAGE_BYTES;
		m->st.prefetch_unused += unused;
		owner->st.prefetch_unused += unused;
		m->st.d2h_ns += ns;
		m->st.time_ns += ns;
		owner->st.d2h_ns += ns;
		owner->st.time_ns += ns;
		if (!b->resident_cnt && b->list != L_NONE)
			list_add(m, b, L_UNUSED, false);
	}
	return 0;
}

int sim_mem__add_range(struct sim_mem *m, const struct sim_range *r)
{
	uint64_t first = r->va >> GPU_BLOCK_SHIFT, n = r->size >> GPU_BLOCK_SHIFT;
	struct sim_tgid *t;
	uint32_t slot;
	int err;

	if (!r->size || (r->va | r->size) & (GPU_BLOCK_SIZE - 1) || r->va + r->size < r->va) {
		gpuext_log(m->rt, GPUEXT_LOG_WARN,
			   "sim: range [0x%llx, +0x%llx) of tgid %u must be 2 MiB aligned and non-empty",
			   (unsigned long long)r->va, (unsigned long long)r->size, r->tgid);
		return GPUEXT_ERR(EINVAL);
	}
	if (n > UINT32_MAX - 1 - m->nblocks)
		return GPUEXT_ERR(E2BIG);
	for (size_t i = 0; i < m->nranges; i++) {
		const struct sim_range *o = &m->ranges[i];

		if (r->va < o->va + o->size && o->va < r->va + r->size) {
			gpuext_log(m->rt, GPUEXT_LOG_WARN,
				   "sim: range [0x%llx, +0x%llx) of tgid %u overlaps [0x%llx, +0x%llx) of tgid %u",
				   (unsigned long long)r->va, (unsigned long long)r->size, r->tgid,
				   (unsigned long long)o->va, (unsigned long long)o->size, o->tgid);
			return GPUEXT_ERR(EEXIST);
		}
	}
	if (m->nranges == m->cap_ranges) {
		size_t cap = m->cap_ranges ? m->cap_ranges * 2 : 8;
		struct sim_range *rs = realloc(m->ranges, cap * sizeof(*rs));

		if (!rs)
			return GPUEXT_ERR(ENOMEM);
		m->ranges = rs;
		m->cap_ranges = cap;
	}
	if (m->nblocks + n > m->cap_blocks) {
		uint64_t cap = m->cap_blocks ? m->cap_blocks : 64;
		struct sim_block *bs;

		while (cap < m->nblocks + n)
			cap *= 2;
		if (cap > UINT32_MAX - 1)
			cap = UINT32_MAX - 1;
		bs = realloc(m->blocks, cap * sizeof(*bs));
		if (!bs)
			return GPUEXT_ERR(ENOMEM);
		m->blocks = bs;
		m->cap_blocks = (uint32_t)cap;
	}
	err = rehash(m, (uint32_t)(m->nblocks + n));
	if (err)
		return err;
	t = tgid_slot(m, r->tgid);
	slot = (uint32_t)(t - m->tg);
	for (uint64_t i = 0; i < n; i++) {
		struct sim_block *b = &m->blocks[m->nblocks];
		uint32_t h = hash_slot(first + i, m->hash_bits);

		memset(b, 0, sizeof(*b));
		b->id = first + i;
		b->prev = b->next = NIL;
		b->owner = slot;
		while (m->hash[h] != NIL)
			h = (h + 1) & ((1u << m->hash_bits) - 1);
		m->hash[h] = m->nblocks++;
	}
	m->ranges[m->nranges++] = *r;
	return 0;
}

static int set_kfunc(struct gpuext_runtime *rt, const char *name, gpuext_func_fn fn)
{
	return gpuext_runtime__set_func_impl(rt, GPUEXT_FUNC_KFUNC, name, fn);
}

int sim_mem__new(struct gpuext_runtime *rt, const struct sim_mem_config *cfg,
		 struct sim_mem **out)
{
	struct sim_mem_config c = { .sz = sizeof(c) };
	struct sim_mem *m;

	*out = NULL;
	if (cfg) {
		if (cfg->sz < sizeof(size_t))
			return GPUEXT_ERR(EINVAL);
		memcpy(&c, cfg, cfg->sz < sizeof(c) ? cfg->sz : sizeof(c));
		c.sz = sizeof(c);
	}
	if (!c.capacity_blocks)
		c.capacity_blocks = SIM_MEM_DEFAULT_CAPACITY_BLOCKS;
	if (!c.h2d_gbps)
		c.h2d_gbps = SIM_MEM_DEFAULT_GBPS;
	if (!c.d2h_gbps)
		c.d2h_gbps = SIM_MEM_DEFAULT_GBPS;
	if (!c.batch_size)
		c.batch_size = SIM_MEM_DEFAULT_BATCH;
	if (!c.batch_overhead_ns)
		c.batch_overhead_ns = SIM_MEM_DEFAULT_BATCH_OVERHEAD_NS;
	if (!c.compute_ns)
		c.compute_ns = SIM_MEM_DEFAULT_COMPUTE_NS;
	if (!c.prefetch_threshold)
		c.prefetch_threshold = SIM_MEM_DEFAULT_PREFETCH_THRESHOLD;
	if (!c.big_page_pages)
		c.big_page_pages = SIM_MEM_DEFAULT_BIG_PAGE_PAGES;
	if (!(c.h2d_gbps > 0) || !(c.d2h_gbps > 0) || c.prefetch_threshold > 100 ||
	    c.big_page_pages > 64 || (c.big_page_pages & (c.big_page_pages - 1)) ||
	    c.batch_size > (1u << 20)) {
		gpuext_log(rt, GPUEXT_LOG_WARN,
			   "sim: bad memory config (bandwidths must be > 0, prefetch_threshold "
			   "1..100, big_page_pages a power of 2 <= 64, batch_size <= 1048576)");
		return GPUEXT_ERR(EINVAL);
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return GPUEXT_ERR(ENOMEM);
	m->rt = rt;
	m->cfg = c;
	m->h2d_bpns = c.h2d_gbps;
	m->d2h_bpns = c.d2h_gbps;
	m->last_blk = NIL;
	m->lists[L_USED] = (struct sim_list){ NIL, NIL, 0, L_USED };
	m->lists[L_UNUSED] = (struct sim_list){ NIL, NIL, 0, L_UNUSED };
	m->cap_tg = 16;
	m->ntg = 1;	/* slot 0: catch-all */
	m->tg = calloc(m->cap_tg, sizeof(*m->tg));
	m->touched = calloc(m->cap_tg, sizeof(*m->touched));
	m->batch = calloc(c.batch_size, sizeof(*m->batch));
	if (!m->tg || !m->touched || !m->batch) {
		sim_mem__free(m);
		return GPUEXT_ERR(ENOMEM);
	}
	m->tg[0].tgid = UINT32_MAX;
	/* Every runtime declares the gpu_ops.h kfuncs; this backend implements them. */
	if (set_kfunc(rt, GPUEXT_KF_MOVE_HEAD, kf_move_head) ||
	    set_kfunc(rt, GPUEXT_KF_MOVE_TAIL, kf_move_tail) ||
	    set_kfunc(rt, GPUEXT_KF_LIST_NTH, kf_list_nth) ||
	    set_kfunc(rt, GPUEXT_KF_BLOCK_ID, kf_block_id) ||
	    set_kfunc(rt, GPUEXT_KF_SET_PREFETCH, kf_set_prefetch)) {
		sim_mem__free(m);
		return GPUEXT_ERR(ENOENT);
	}
	*out = m;
	return 0;
}

void sim_mem__free(struct sim_mem *m)
{
	if (!m)
		return;
	free(m->blocks);
	free(m->hash);
	free(m->ranges);
	free(m->tg);
	free(m->touched);
	free(m->batch);
	free(m);
}

void sim_mem__config(const struct sim_mem *m, struct sim_mem_config *out)
{
	*out = m->cfg;
}

void sim_mem__stats(const struct sim_mem *m, struct sim_mem_stats *out)
{
	*out = m->st;
}

int sim_mem__tgid_stats(const struct sim_mem *m, uint32_t tgid, struct sim_mem_stats *out)
{
	for (uint32_t i = 1; i < m->ntg; i++) {
		if (m->tg[i].tgid == tgid) {
			*out = m->tg[i].st;
			return 0;
		}
	}
	memset(out, 0, sizeof(*out));
	return GPUEXT_ERR(ENOENT);
}

size_t sim_mem__list_ids(const struct sim_mem *m, enum sim_mem_list which, uint64_t *ids,
			 size_t cap)
{
	const struct sim_list *l;
	size_t n = 0;

	if (which != SIM_LIST_USED && which != SIM_LIST_UNUSED)
		return 0;
	l = &m->lists[which];
	for (uint32_t i = l->head; i != NIL; i = m->blocks[i].next, n++)
		if (n < cap)
			ids[n] = m->blocks[i].id;
	return n;
}

int sim_mem__block_resident(const struct sim_mem *m, uint64_t va, uint64_t mask[8])
{
	struct sim_block *b = lookup((struct sim_mem *)m, va >> GPU_BLOCK_SHIFT);

	if (!b)
		return GPUEXT_ERR(ENOENT);
	memcpy(mask, b->resident, sizeof(b->resident));
	return 0;
}

uint64_t sim_mem__free_blocks(const struct sim_mem *m)
{
	return m->cfg.capacity_blocks - m->allocated;
}

int sim_mem__attach(struct sim_mem *m, struct gpuext_policy *p)
{
	int err = gpuext_hal_slots_attach(m->rt, "sim", &m->slots, p);

	if (!err && gpuext_policy__kind(p) == GPUEXT_POLICY_MEM)
		m->eject_reported = false;
	return err;
}

int sim_mem__detach(struct sim_mem *m, enum gpuext_policy_kind kind)
{
	return gpuext_hal_slots_detach(m->rt, "sim", &m->slots, kind);
}

void sim_mem__set_event_sink(struct sim_mem *m, gpuext_hal_event_fn fn, void *user)
{
	m->sink = fn;
	m->sink_user = user;
}

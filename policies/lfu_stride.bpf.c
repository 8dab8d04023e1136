// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * lfu_stride: LFU eviction and stride prefetch in one policy.
 *
 * Eviction: each block's accesses are counted (halved every DECAY_EVERY
 * accesses); hot blocks move to the tail on access, and before an eviction
 * the least used of the first SCAN head blocks is put at the head.
 * Prefetch: when a process's last two fault distances are equal (p, p+s,
 * p+2s), fetch p+3s onwards, DEPTH strides or SPAN pages, inside the block.
 *
 * Why together: KV-cache and expert-offload workloads read a small hot set
 * (shared layers, recent tokens) plus long strided sweeps over cold data.
 * The prefetch hides the sweep's faults; LFU stops the sweep's blocks, used
 * once, from evicting the hot set. Either alone leaves half the problem.
 */
#include "common.h"

#define HOT 3
#define SCAN 8
#define DECAY_EVERY 4096
#define DEPTH 4
#define SPAN 64

struct freq { __u32 count, epoch; };
struct stride { __u64 last, next; __s64 dist; __u32 repeats; };

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);		/* block id */
	__type(value, struct freq);
} freqs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);		/* tgid */
	__type(value, struct stride);
} strides SEC(".maps");

static __u64 accesses;

static __always_inline __u32 count_at(const struct freq *f, __u32 epoch)
{
	__u32 age = epoch - f->epoch;

	return age >= 32 ? 0 : f->count >> age;
}

SEC("struct_ops/gpu_block_access")
int BPF_PROG(ls_access, struct gpu_mem_ctx *mctx, struct gpu_block *block, struct gpu_list *list)
{
	__u32 epoch = accesses++ / DECAY_EVERY;
	__u64 id = mctx->block.block_id;
	struct freq *f = bpf_map_lookup_elem(&freqs, &id), fresh = { 1, epoch };

	if (!f)
		return bpf_map_update_elem(&freqs, &id, &fresh, BPF_ANY), 1;
	f->count = count_at(f, epoch) + 1;
	f->epoch = epoch;
	if (f->count >= HOT)
		bpf_gpu_block_move_tail(block, list);
	return 1;
}

SEC("struct_ops/gpu_evict_prepare")
int BPF_PROG(ls_evict_prepare, struct gpu_mem_ctx *mctx, struct gpu_list *used,
	     struct gpu_list *unused)
{
	__u32 epoch = accesses / DECAY_EVERY, best = ~0U, victim = 0;
	struct gpu_block *b;

	for (__u32 i = 0; i < SCAN; i++) {
		struct freq *f;
		__u64 id;
		__u32 c;

		b = bpf_gpu_list_nth(used, i);
		if (!b)
			break;
		id = bpf_gpu_block_id(b);
		f = bpf_map_lookup_elem(&freqs, &id);
		c = f ? count_at(f, epoch) : 0;
		if (c < best) {
			best = c;
			victim = i;
		}
	}
	b = victim ? bpf_gpu_list_nth(used, victim) : NULL;
	if (b)
		bpf_gpu_block_move_head(b, used);
	return 0;
}

SEC("struct_ops/gpu_page_prefetch")
int BPF_PROG(ls_prefetch, struct gpu_mem_ctx *mctx, __u32 page_index,
	     const struct gpu_page_tree *tree, const struct gpu_page_range *max_region,
	     struct gpu_region *result_region)
{
	__u64 page = gpu_vpage(mctx, page_index);
	struct stride *st, fresh = { .last = page };
	__u32 tgid = mctx->tgid;
	__s64 d, n, lo, hi;

	st = bpf_map_lookup_elem(&strides, &tgid);
	if (!st)
		return bpf_map_update_elem(&strides, &tgid, &fresh, BPF_ANY), 0;
	d = st->repeats && page == st->next ? st->dist : (__s64)(page - st->last);
	st->repeats = d && d == st->dist ? st->repeats + 1 : 0;
	st->dist = d;
	st->last = page;
	if (!st->repeats || d <= -GPU_PAGES_PER_BLOCK || d >= GPU_PAGES_PER_BLOCK)
		return 0;	/* no stride yet, or the next target is in another block */
	n = (d < 0 ? -d : d) * DEPTH <= SPAN ? DEPTH : SPAN / (d < 0 ? -d : d);
	if (n < 1)
		n = 1;
	lo = d > 0 ? page_index + d : page_index + n * d;
	hi = d > 0 ? page_index + n * d : page_index + d;
	if (lo < max_region->first_page)
		lo = max_region->first_page;
	if (hi > max_region->last_page)
		hi = max_region->last_page;
	if (lo > hi)
		return 0;
	bpf_gpu_set_prefetch_region(result_region, (__u32)lo, (__u32)hi);
	st->next = page + (n + 1) * d;	/* a stream we prefetched for faults next here */
	return 1;
}

SEC(".struct_ops.link")
struct gpu_mem_ops lfu_stride = {
	.gpu_block_access = (void *)ls_access,
	.gpu_evict_prepare = (void *)ls_evict_prepare,
	.gpu_page_prefetch = (void *)ls_prefetch,
	.name = "lfu_stride",
};

char LICENSE[] SEC("license") = "Dual BSD/GPL";

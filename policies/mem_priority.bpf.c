// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * mem_priority: processes sharing a GPU get memory by priority.
 *
 * The loader writes each process's priority into the `prio` map (tgid ->
 * PRIO_LOW / PRIO_NORMAL / PRIO_HIGH; absent = PRIO_NORMAL, the stock
 * behaviour). High priority: the whole block is prefetched on a fault, its
 * blocks move to the tail on every access, and before an eviction high
 * blocks at the head are rotated to the tail (at most ROTATE of them), so
 * they are evicted only when nothing else is left near the head. Low
 * priority: only the faulting page is migrated, its blocks start at the head
 * and are never promoted, so they are the first victims.
 *
 * Why: the stock driver treats every process alike, so a batch job streaming
 * through memory evicts the working set of a latency-critical one sharing
 * the GPU. A priority per process restores the isolation an operator expects.
 */
#include "common.h"

enum { PRIO_LOW = 0, PRIO_NORMAL = 1, PRIO_HIGH = 2 };
#define ROTATE 8	/* high-priority head blocks moved aside per eviction, at most */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);	/* tgid */
	__type(value, __u32);	/* PRIO_* */
} prio SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);	/* block id */
	__type(value, __u32);	/* owner tgid */
} owner SEC(".maps");

static __always_inline __u32 prio_of(__u32 tgid)
{
	__u32 *p = bpf_map_lookup_elem(&prio, &tgid);

	return p ? *p : PRIO_NORMAL;
}

SEC("struct_ops/gpu_block_activate")
int BPF_PROG(prio_activate, struct gpu_mem_ctx *mctx, struct gpu_block *block,
	     struct gpu_list *list)
{
	__u64 id = mctx->block.block_id;
	__u32 tgid = mctx->block.owner_tgid;

	bpf_map_update_elem(&owner, &id, &tgid, BPF_ANY);
	if (prio_of(tgid) == PRIO_LOW)
		bpf_gpu_block_move_head(block, list);
	return 0;
}

SEC("struct_ops/gpu_block_access")
int BPF_PROG(prio_access, struct gpu_mem_ctx *mctx, struct gpu_block *block,
	     struct gpu_list *list)
{
	switch (prio_of(mctx->block.owner_tgid)) {
	case PRIO_HIGH:
		bpf_gpu_block_move_tail(block, list);
		return 1;
	case PRIO_LOW:
		return 1;	/* never promoted */
	default:
		return 0;
	}
}

SEC("struct_ops/gpu_evict_prepare")
int BPF_PROG(prio_evict_prepare, struct gpu_mem_ctx *mctx, struct gpu_list *used,
	     struct gpu_list *unused)
{
	for (int i = 0; i < ROTATE; i++) {
		struct gpu_block *head = bpf_gpu_list_nth(used, 0);
		__u64 id;
		__u32 *tgid;

		if (!head)
			break;
		id = bpf_gpu_block_id(head);
		tgid = bpf_map_lookup_elem(&owner, &id);
		if (!tgid || prio_of(*tgid) != PRIO_HIGH)
			break;
		bpf_gpu_block_move_tail(head, used);
	}
	return 0;
}

SEC("struct_ops/gpu_page_prefetch")
int BPF_PROG(prio_prefetch, struct gpu_mem_ctx *mctx, __u32 page_index,
	     const struct gpu_page_tree *tree, const struct gpu_page_range *max_region,
	     struct gpu_region *result_region)
{
	switch (prio_of(mctx->block.owner_tgid)) {
	case PRIO_HIGH:
		bpf_gpu_set_prefetch_region(result_region, max_region->first_page,
					    max_region->last_page);
		return 1;
	case PRIO_LOW:
		bpf_gpu_set_prefetch_region(result_region, page_index, page_index);
		return 1;
	default:
		return 0;
	}
}

SEC(".struct_ops.link")
struct gpu_mem_ops mem_priority = {
	.gpu_block_activate = (void *)prio_activate,
	.gpu_block_access = (void *)prio_access,
	.gpu_evict_prepare = (void *)prio_evict_prepare,
	.gpu_page_prefetch = (void *)prio_prefetch,
	.name = "mem_priority",
};

char LICENSE[] SEC("license") = "Dual BSD/GPL";

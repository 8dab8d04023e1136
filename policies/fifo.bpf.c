// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * fifo: the driver's stock behaviour, written as a policy.
 *
 * Every hook is present and every hook returns 0 ("driver's default"), so
 * eviction stays first-in-first-out (NVIDIA UVM never reorders a block on a
 * GPU access, so its "LRU" is really allocation order) and prefetch stays the
 * 51 % bitmap-tree rule.
 *
 * Why ship it: it is the baseline every other policy is measured against,
 * and it proves the hook path itself costs nothing — a run with fifo attached
 * must make exactly the decisions of a run with no policy (see
 * conformance/scenarios/stock_victim_order.scn). It never wins; it ties.
 */
#include "common.h"

SEC("struct_ops/gpu_block_activate")
int BPF_PROG(fifo_activate, struct gpu_mem_ctx *mctx, struct gpu_block *block,
	     struct gpu_list *list)
{
	return 0;
}

SEC("struct_ops/gpu_block_access")
int BPF_PROG(fifo_access, struct gpu_mem_ctx *mctx, struct gpu_block *block,
	     struct gpu_list *list)
{
	return 0;
}

SEC("struct_ops/gpu_evict_prepare")
int BPF_PROG(fifo_evict_prepare, struct gpu_mem_ctx *mctx, struct gpu_list *used,
	     struct gpu_list *unused)
{
	return 0;
}

SEC("struct_ops/gpu_page_prefetch")
int BPF_PROG(fifo_prefetch, struct gpu_mem_ctx *mctx, __u32 page_index,
	     const struct gpu_page_tree *tree, const struct gpu_page_range *max_region,
	     struct gpu_region *result_region)
{
	return 0;
}

SEC(".struct_ops.link")
struct gpu_mem_ops fifo = {
	.gpu_block_activate = (void *)fifo_activate,
	.gpu_block_access = (void *)fifo_access,
	.gpu_evict_prepare = (void *)fifo_evict_prepare,
	.gpu_page_prefetch = (void *)fifo_prefetch,
	.name = "fifo",
};

char LICENSE[] SEC("license") = "Dual BSD/GPL";

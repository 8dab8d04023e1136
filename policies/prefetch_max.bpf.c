// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * prefetch_max: on any fault, migrate the whole block.
 *
 * The stock rule (a subtree of the block's bitmap tree more than 51 %
 * populated) needs many faults before it fetches a whole 2 MiB block, and
 * each fault costs a round trip through the fault buffer. Here the first
 * fault in a block asks for all of max_region (the driver's bound, normally
 * the whole block).
 *
 * When it wins: dense access — every page of a block is used soon after the
 * first (tensors streamed in order, weights read whole). When it loses:
 * sparse access (hash tables, graph neighbours) under memory pressure, where
 * it migrates pages nobody reads and evicts useful ones to make room.
 */
#include "common.h"

SEC("struct_ops/gpu_page_prefetch")
int BPF_PROG(max_prefetch, struct gpu_mem_ctx *mctx, __u32 page_index,
	     const struct gpu_page_tree *tree, const struct gpu_page_range *max_region,
	     struct gpu_region *result_region)
{
	bpf_gpu_set_prefetch_region(result_region, max_region->first_page,
				    max_region->last_page);
	return 1;
}

SEC(".struct_ops.link")
struct gpu_mem_ops prefetch_max = {
	.gpu_page_prefetch = (void *)max_prefetch,
	.name = "prefetch_max",
};

char LICENSE[] SEC("license") = "Dual BSD/GPL";

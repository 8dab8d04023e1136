// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * mru: most-recently-used eviction.
 *
 * Every access moves the block to the head of the eviction list, so the next
 * victim is the block touched last.
 *
 * When it wins: a cyclic sweep over more memory than the GPU has (an epoch
 * over a training set, a layer-by-layer pass over offloaded weights). LRU and
 * FIFO then evict each block just before it is needed again and every access
 * misses; MRU keeps the first part of the cycle resident and only the tail of
 * the sweep misses. It loses badly wherever recent blocks are reused soon.
 */
#include "common.h"

SEC("struct_ops/gpu_block_access")
int BPF_PROG(mru_access, struct gpu_mem_ctx *mctx, struct gpu_block *block,
	     struct gpu_list *list)
{
	bpf_gpu_block_move_head(block, list);
	return 1;
}

SEC(".struct_ops.link")
struct gpu_mem_ops mru = {
	.gpu_block_access = (void *)mru_access,
	.name = "mru",
};

char LICENSE[] SEC("license") = "Dual BSD/GPL";

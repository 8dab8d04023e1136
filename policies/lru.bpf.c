// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * lru: true least-recently-used eviction.
 *
 * The stock driver moves a block to the tail of the eviction list when it is
 * allocated and when the GPU first becomes resident on it, but never on later
 * accesses, so a block used on every kernel launch is evicted as early as one
 * touched once. Here every access moves the block to the tail: the head is
 * always the block untouched for longest.
 *
 * When it wins: working sets with temporal locality (a hot set reused while
 * a cold stream passes by). When it loses: cyclic scans larger than memory,
 * where LRU evicts exactly the block needed next (use mru there).
 */
#include "common.h"

SEC("struct_ops/gpu_block_access")
int BPF_PROG(lru_access, struct gpu_mem_ctx *mctx, struct gpu_block *block,
	     struct gpu_list *list)
{
	bpf_gpu_block_move_tail(block, list);
	return 1;
}

SEC(".struct_ops.link")
struct gpu_mem_ops lru = {
	.gpu_block_access = (void *)lru_access,
	.name = "lru",
};

char LICENSE[] SEC("license") = "Dual BSD/GPL";

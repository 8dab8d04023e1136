// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * fifo_second_chance: FIFO with a referenced bit (the CLOCK algorithm).
 *
 * Blocks keep their allocation order, but each access sets a referenced bit
 * in a map. Before an eviction, a head block whose bit is set loses the bit
 * and moves to the tail instead of being evicted; the walk stops at the first
 * unreferenced block or after SC_WALK blocks, so the cost per eviction is
 * bounded however long the list is.
 *
 * Why: true LRU moves a block on every access; second chance touches the
 * list only at eviction time, yet still keeps blocks that were used since
 * they last reached the head. It approximates LRU at a fraction of the list
 * traffic, which matters when the list lives in a driver under a lock.
 */
#include "common.h"

#define SC_WALK 16	/* head blocks given a second chance per eviction, at most */

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);	/* block id */
	__type(value, __u8);	/* referenced since it last reached the head */
} referenced SEC(".maps");

SEC("struct_ops/gpu_block_activate")
int BPF_PROG(sc_activate, struct gpu_mem_ctx *mctx, struct gpu_block *block,
	     struct gpu_list *list)
{
	__u64 id = mctx->block.block_id;
	__u8 no = 0;

	bpf_map_update_elem(&referenced, &id, &no, BPF_ANY);
	return 0;
}

SEC("struct_ops/gpu_block_access")
int BPF_PROG(sc_access, struct gpu_mem_ctx *mctx, struct gpu_block *block,
	     struct gpu_list *list)
{
	__u64 id = mctx->block.block_id;
	__u8 yes = 1;

	bpf_map_update_elem(&referenced, &id, &yes, BPF_ANY);
	return 1;	/* the order stays FIFO */
}

SEC("struct_ops/gpu_evict_prepare")
int BPF_PROG(sc_evict_prepare, struct gpu_mem_ctx *mctx, struct gpu_list *used,
	     struct gpu_list *unused)
{
	for (int i = 0; i < SC_WALK; i++) {
		struct gpu_block *head = bpf_gpu_list_nth(used, 0);
		__u64 id;
		__u8 *ref;

		if (!head)
			break;
		id = bpf_gpu_block_id(head);
		ref = bpf_map_lookup_elem(&referenced, &id);
		if (!ref || !*ref)
			break;		/* unreferenced: this one goes */
		*ref = 0;
		bpf_gpu_block_move_tail(head, used);
	}
	return 0;
}

SEC(".struct_ops.link")
struct gpu_mem_ops fifo_second_chance = {
	.gpu_block_activate = (void *)sc_activate,
	.gpu_block_access = (void *)sc_access,
	.gpu_evict_prepare = (void *)sc_evict_prepare,
	.name = "fifo_2nd_chance",
};

char LICENSE[] SEC("license") = "Dual BSD/GPL";

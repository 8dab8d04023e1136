// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * lfu: least-frequently-used eviction with ageing.
 *
 * Each block's accesses are counted in a map. A block that reaches LFU_HOT
 * accesses moves to the tail of the eviction list on every access; colder
 * blocks are left where they are, nearer the head. Before each eviction the
 * first LFU_SCAN blocks at the head are compared and the least frequently
 * used one is put at the head, so it becomes the victim. Counts halve every
 * LFU_DECAY_EVERY accesses (lazily, when a count is next read), so a block
 * that was hot in an earlier phase does not stay protected for ever.
 *
 * When it wins: a small hot set (LLM attention layers, shared experts, index
 * pages) mixed with a large stream of blocks used once. FIFO and LRU let the
 * stream push the hot set out; LFU keeps it. It loses when the hot set
 * changes faster than the counts decay.
 */
#include "common.h"

#define LFU_HOT 3		/* accesses that make a block hot */
#define LFU_SCAN 8		/* head blocks compared before an eviction */
#define LFU_DECAY_EVERY 4096	/* accesses between halvings of every count */

struct lfu_freq {
	__u32 count;
	__u32 epoch;		/* decay epoch the count was last brought up to */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);	/* 128 GiB of 2 MiB blocks */
	__type(key, __u64);		/* block id */
	__type(value, struct lfu_freq);
} freq SEC(".maps");

static __u64 accesses;

static __always_inline __u32 lfu_count(const struct lfu_freq *f, __u32 epoch)
{
	__u32 age = epoch - f->epoch;

	return age >= 32 ? 0 : f->count >> age;
}

SEC("struct_ops/gpu_block_access")
int BPF_PROG(lfu_access, struct gpu_mem_ctx *mctx, struct gpu_block *block,
	     struct gpu_list *list)
{
	__u32 epoch = accesses++ / LFU_DECAY_EVERY;
	__u64 id = mctx->block.block_id;
	struct lfu_freq *f = bpf_map_lookup_elem(&freq, &id);
	struct lfu_freq fresh = { .count = 1, .epoch = epoch };

	if (f) {
		f->count = lfu_count(f, epoch) + 1;
		f->epoch = epoch;
		if (f->count >= LFU_HOT)
			bpf_gpu_block_move_tail(block, list);
	} else {
		bpf_map_update_elem(&freq, &id, &fresh, BPF_ANY);
	}
	return 1;	/* cold blocks are not promoted */
}

SEC("struct_ops/gpu_evict_prepare")
int BPF_PROG(lfu_evict_prepare, struct gpu_mem_ctx *mctx, struct gpu_list *used,
	     struct gpu_list *unused)
{
	__u32 epoch = accesses / LFU_DECAY_EVERY, best = ~0U, victim = 0;

	for (__u32 i = 0; i < LFU_SCAN; i++) {
		struct gpu_block *b = bpf_gpu_list_nth(used, i);
		struct lfu_freq *f;
		__u64 id;
		__u32 c;

		if (!b)
			break;
		id = bpf_gpu_block_id(b);
		f = bpf_map_lookup_elem(&freq, &id);
		c = f ? lfu_count(f, epoch) : 0;
		if (c < best) {
			best = c;
			victim = i;
		}
	}
	if (victim) {
		struct gpu_block *b = bpf_gpu_list_nth(used, victim);

		if (b)
			bpf_gpu_block_move_head(b, used);
	}
	return 0;
}

SEC(".struct_ops.link")
struct gpu_mem_ops lfu = {
	.gpu_block_access = (void *)lfu_access,
	.gpu_evict_prepare = (void *)lfu_evict_prepare,
	.name = "lfu",
};

char LICENSE[] SEC("license") = "Dual BSD/GPL";

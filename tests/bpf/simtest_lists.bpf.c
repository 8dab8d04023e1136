/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim test policy: kfunc misuse and list walking. gpu_block_access passes a
 * block handle where a list is expected (a list it was not given) and
 * records the result; gpu_evict_prepare moves the used head to the tail
 * (so the second block is evicted), after first trying to move it on the
 * unused list, which it is not on.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <gpuext/gpu_ops.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __s64);
} results SEC(".maps");

static void record(__u32 k, __s64 v)
{
	bpf_map_update_elem(&results, &k, &v, BPF_ANY);
}

SEC("struct_ops/gpu_block_access")
int BPF_PROG(lists_access, struct gpu_mem_ctx *mctx, struct gpu_block *block, struct gpu_list *list)
{
	record(0, bpf_gpu_block_move_head(block, (struct gpu_list *)block));
	record(1, bpf_gpu_block_move_head((struct gpu_block *)list, list));
	return 0;
}

SEC("struct_ops/gpu_evict_prepare")
int BPF_PROG(lists_evict, struct gpu_mem_ctx *mctx, struct gpu_list *used, struct gpu_list *unused)
{
	struct gpu_block *b = bpf_gpu_list_nth(used, 0);
	struct gpu_block *past;

	if (!b)
		return 0;
	record(2, bpf_gpu_block_move_head(b, unused));
	record(3, bpf_gpu_block_move_tail(b, used));
	record(4, bpf_gpu_block_id(b));
	past = bpf_gpu_list_nth(used, 1000000);
	record(5, past ? 1 : 0);
	return 0;
}

SEC(".struct_ops.link")
struct gpu_mem_ops simtest_lists = {
	.gpu_block_access = (void *)lists_access,
	.gpu_evict_prepare = (void *)lists_evict,
	.name = "simtest_lists",
};

char LICENSE[] SEC("license") = "GPL";

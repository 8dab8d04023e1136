/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim test policy: prefetch the 8 pages from the faulting one (clamped by the
 * driver at the end of the block); records what set_prefetch_region returned
 * for a reversed region and for one past the block.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <gpuext/gpu_ops.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __s64);
} results SEC(".maps");

SEC("struct_ops/gpu_page_prefetch")
int BPF_PROG(pf_next8, struct gpu_mem_ctx *mctx, __u32 page, const struct gpu_page_tree *tree,
	     const struct gpu_page_range *max, struct gpu_region *region)
{
	__u32 k;
	__s64 v;

	k = 0;
	v = bpf_gpu_set_prefetch_region(region, 9, 3);
	bpf_map_update_elem(&results, &k, &v, BPF_ANY);
	k = 1;
	v = bpf_gpu_set_prefetch_region(region, 600, 700);
	bpf_map_update_elem(&results, &k, &v, BPF_ANY);
	k = 2;
	v = max->last_page;
	bpf_map_update_elem(&results, &k, &v, BPF_ANY);
	bpf_gpu_set_prefetch_region(region, page, page + 7);
	return 1;
}

SEC(".struct_ops.link")
struct gpu_mem_ops simtest_prefetch = {
	.gpu_page_prefetch = (void *)pf_next8,
	.name = "simtest_prefetch",
};

char LICENSE[] SEC("license") = "GPL";

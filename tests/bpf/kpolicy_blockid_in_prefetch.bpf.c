// SPDX-License-Identifier: Apache-2.0
/*
 * Kernel test object (core/kernel/vmtests/k_misbehave.c): bpf_gpu_block_id
 * from gpu_page_prefetch, whose only kfunc is bpf_gpu_set_prefetch_region.
 * gpuext.ko's kfunc filter refuses it at load; the user-space verifier
 * refuses it too (core/policy.c).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <gpuext/gpu_ops.h>

SEC("struct_ops/gpu_page_prefetch")
int BPF_PROG(blockid_in_prefetch, struct gpu_mem_ctx *mctx, __u32 page_index,
	     const struct gpu_page_tree *tree, const struct gpu_page_range *max_region,
	     struct gpu_region *result_region)
{
	return bpf_gpu_block_id((struct gpu_block *)result_region) == 7;
}

SEC(".struct_ops.link")
struct gpu_mem_ops kp_blockid_in_prefetch = {
	.gpu_page_prefetch = (void *)blockid_in_prefetch,
	.name = "kp_id_prefetch",
};

char LICENSE[] SEC("license") = "GPL";

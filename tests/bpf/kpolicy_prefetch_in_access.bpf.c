// SPDX-License-Identifier: Apache-2.0
/*
 * Kernel test object (core/kernel/vmtests/k_misbehave.c):
 * bpf_gpu_set_prefetch_region from gpu_block_access, which may only reorder
 * blocks. gpuext.ko's kfunc filter refuses it at load (before any argument
 * check); the user-space verifier refuses it too (core/policy.c).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <gpuext/gpu_ops.h>

SEC("struct_ops/gpu_block_access")
int BPF_PROG(prefetch_in_access, struct gpu_mem_ctx *mctx, struct gpu_block *block,
	     struct gpu_list *list)
{
	bpf_gpu_set_prefetch_region((struct gpu_region *)list, 0, 1);
	return 0;
}

SEC(".struct_ops.link")
struct gpu_mem_ops kp_prefetch_in_access = {
	.gpu_block_access = (void *)prefetch_in_access,
	.name = "kp_pf_access",
};

char LICENSE[] SEC("license") = "GPL";

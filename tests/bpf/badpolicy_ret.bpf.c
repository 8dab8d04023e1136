// SPDX-License-Identifier: Apache-2.0
/*
 * Bad policy: gpu_block_access may return 0 (default) or 1 (handled); this
 * one can return 2, so binding it must fail with rule ret-range.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <gpuext/gpu_ops.h>

SEC("struct_ops/gpu_block_access")
int BPF_PROG(bad_ret_access, struct gpu_mem_ctx *mctx, struct gpu_block *block,
	     struct gpu_list *list)
{
	return mctx->is_write ? 2 : 1;
}

SEC(".struct_ops.link")
struct gpu_mem_ops bad_ret = {
	.gpu_block_access = (void *)bad_ret_access,
	.name = "bad_ret",
};

char LICENSE[] SEC("license") = "Dual BSD/GPL";

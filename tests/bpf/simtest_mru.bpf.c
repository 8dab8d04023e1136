/* SPDX-License-Identifier: Apache-2.0 */
/* sim test policy: MRU eviction -- every faulted block goes to the head of its list. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <gpuext/gpu_ops.h>

SEC("struct_ops/gpu_block_access")
int BPF_PROG(mru_access, struct gpu_mem_ctx *mctx, struct gpu_block *block, struct gpu_list *list)
{
	bpf_gpu_block_move_head(block, list);
	return 1;
}

SEC(".struct_ops.link")
struct gpu_mem_ops simtest_mru = {
	.gpu_block_access = (void *)mru_access,
	.name = "simtest_mru",
};

char LICENSE[] SEC("license") = "GPL";

// SPDX-License-Identifier: Apache-2.0
/*
 * Bad policy: a memory hook calling a scheduling kfunc. bpf_gpu_set_attr is
 * allowed only in gpu_sched_ops hooks, so binding this must fail with rule
 * bad-call (tests/test_policies.c).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <gpuext/gpu_ops.h>

SEC("struct_ops/gpu_block_access")
int BPF_PROG(bad_call_access, struct gpu_mem_ctx *mctx, struct gpu_block *block,
	     struct gpu_list *list)
{
	bpf_gpu_set_attr((struct gpu_task_ctx *)mctx, GPU_ATTR_TIMESLICE_US, 100);
	return 0;
}

SEC(".struct_ops.link")
struct gpu_mem_ops bad_call = {
	.gpu_block_access = (void *)bad_call_access,
	.name = "bad_call",
};

char LICENSE[] SEC("license") = "Dual BSD/GPL";

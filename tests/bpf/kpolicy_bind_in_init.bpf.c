// SPDX-License-Identifier: Apache-2.0
/*
 * Kernel test object (core/kernel/vmtests/k_misbehave.c): bpf_gpu_reject_bind
 * from task_init, which only task_bind may call. gpuext.ko's kfunc filter
 * refuses it at load ("calling kernel function bpf_gpu_reject_bind is not
 * allowed"); the user-space verifier refuses it too (core/policy.c).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <gpuext/gpu_ops.h>

SEC("struct_ops/task_init")
int BPF_PROG(bind_in_init, struct gpu_task_ctx *t)
{
	return bpf_gpu_reject_bind(t) ? 0 : 0;
}

SEC(".struct_ops.link")
struct gpu_sched_ops kp_bind_in_init = {
	.task_init = (void *)bind_in_init,
	.name = "kp_bind_init",
};

char LICENSE[] SEC("license") = "GPL";

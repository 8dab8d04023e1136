// SPDX-License-Identifier: Apache-2.0
/*
 * LC/BE by process name, as in the seed (LPC 2025, "LC 1s / BE 200us
 * timeslice, 95% P99 down"): a process whose comm starts with "lc_" is
 * latency-critical and gets the HIGH interleave level and the longest
 * timeslice the ABI allows (its kernels finish without being preempted);
 * everything else is best-effort and gets a 200 us timeslice, so an LC
 * kernel never waits long for the GPU.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <gpuext/gpu_ops.h>

static __always_inline int is_lc(const struct gpu_task_ctx *t)
{
	return t->comm[0] == 'l' && t->comm[1] == 'c' && t->comm[2] == '_';
}

SEC("struct_ops/task_init")
int BPF_PROG(lcbe_task_init, struct gpu_task_ctx *t)
{
	if (is_lc(t)) {
		bpf_gpu_set_attr(t, GPU_ATTR_LEVEL, GPU_LEVEL_HIGH);
		bpf_gpu_set_attr(t, GPU_ATTR_TIMESLICE_US, GPU_TIMESLICE_MAX_US);
	} else {
		bpf_gpu_set_attr(t, GPU_ATTR_TIMESLICE_US, 200);
	}
	return 0;
}

SEC(".struct_ops.link")
struct gpu_sched_ops lcbe = {
	.task_init = (void *)lcbe_task_init,
	.name = "lcbe",
};

char _license[] SEC("license") = "GPL";

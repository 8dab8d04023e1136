// SPDX-License-Identifier: Apache-2.0
/*
 * A policy that gets ejected: task_init promotes "lc_" processes to HIGH
 * (cheap), task_bind does far more work than the small per-call budget the
 * test gives it, so the first bind ejects the policy and the simulator must
 * put every group back on the defaults.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <gpuext/gpu_ops.h>

SEC("struct_ops/task_init")
int BPF_PROG(eject_task_init, struct gpu_task_ctx *t)
{
	if (t->comm[0] == 'l')
		bpf_gpu_set_attr(t, GPU_ATTR_LEVEL, GPU_LEVEL_HIGH);
	return 0;
}

SEC("struct_ops/task_bind")
int BPF_PROG(eject_task_bind, struct gpu_task_ctx *t)
{
	__u64 acc = t->tgid;

#pragma clang loop unroll(disable)
	for (int i = 0; i < 200; i++)
		acc = acc * 31 + t->task_id + i;
	if (acc == 12345)
		bpf_gpu_set_attr(t, GPU_ATTR_LEVEL, GPU_LEVEL_LOW);
	return 0;
}

SEC(".struct_ops.link")
struct gpu_sched_ops ejectme = {
	.task_init = (void *)eject_task_init,
	.task_bind = (void *)eject_task_bind,
	.name = "ejectme",
};

char _license[] SEC("license") = "GPL";

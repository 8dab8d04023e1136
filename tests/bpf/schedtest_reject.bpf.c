// SPDX-License-Identifier: Apache-2.0
/* Admission control: refuse to bind any process whose comm starts with "bad". */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <gpuext/gpu_ops.h>

SEC("struct_ops/task_bind")
int BPF_PROG(reject_task_bind, struct gpu_task_ctx *t)
{
	if (t->comm[0] == 'b' && t->comm[1] == 'a' && t->comm[2] == 'd')
		bpf_gpu_reject_bind(t);
	return 0;
}

SEC(".struct_ops.link")
struct gpu_sched_ops admit = {
	.task_bind = (void *)reject_task_bind,
	.name = "admit",
};

char _license[] SEC("license") = "GPL";

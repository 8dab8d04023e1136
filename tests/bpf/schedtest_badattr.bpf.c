// SPDX-License-Identifier: Apache-2.0
/*
 * Asks for values the driver must refuse (timeslice below/above the limits
 * or past 32 bits, a level past HIGH, an unknown attribute), then one valid
 * timeslice. The kfunc results go to a map the test reads.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <gpuext/gpu_ops.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __s64);
} results SEC(".maps");

static __always_inline void put(__u32 i, __s64 v)
{
	bpf_map_update_elem(&results, &i, &v, BPF_ANY);
}

SEC("struct_ops/task_init")
int BPF_PROG(badattr_task_init, struct gpu_task_ctx *t)
{
	put(0, bpf_gpu_set_attr(t, GPU_ATTR_TIMESLICE_US, GPU_TIMESLICE_MIN_US - 1));
	put(1, bpf_gpu_set_attr(t, GPU_ATTR_TIMESLICE_US, GPU_TIMESLICE_MAX_US + 1));
	put(2, bpf_gpu_set_attr(t, GPU_ATTR_LEVEL, GPU_LEVEL_HIGH + 1));
	put(3, bpf_gpu_set_attr(t, 7, 1));
	put(4, bpf_gpu_set_attr(t, GPU_ATTR_TIMESLICE_US, 1ULL << 40));
	put(5, bpf_gpu_set_attr(t, GPU_ATTR_TIMESLICE_US, 500));
	return 0;
}

SEC(".struct_ops.link")
struct gpu_sched_ops badattr = {
	.task_init = (void *)badattr_task_init,
	.name = "badattr",
};

char _license[] SEC("license") = "GPL";

// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * lc_be: latency-critical vs best-effort GPU scheduling, by process name.
 *
 * A task group whose process name starts with "lc_" or "infer" is latency
 * critical: interleave level HIGH (it appears more often in the runlist) and
 * the longest timeslice (once on the GPU a request runs to completion instead
 * of being preempted mid-way). Everything else is best effort: level LOW and
 * a 200 us timeslice, so when an LC request arrives the BE group in front of
 * it yields within 200 us instead of the stock 1024 us.
 *
 * When it wins: an inference server sharing a GPU with training or batch
 * jobs. gpu_ext measured LC 1 s / BE 200 us slices cutting the LC process's
 * P99 latency by 95 %; the ABI caps a slice at 100 ms, which has the same
 * effect (an LC kernel is far shorter). BE throughput drops a little, from
 * the extra context switches.
 */
#include "common.h"

const volatile __u32 lc_timeslice_us = GPU_TIMESLICE_MAX_US;
const volatile __u32 be_timeslice_us = 200;

static __always_inline int is_latency_critical(const char *comm)
{
	return (comm[0] == 'l' && comm[1] == 'c' && comm[2] == '_') ||
	       (comm[0] == 'i' && comm[1] == 'n' && comm[2] == 'f' && comm[3] == 'e' &&
		comm[4] == 'r');
}

SEC("struct_ops/task_init")
int BPF_PROG(lc_be_init, struct gpu_task_ctx *tctx)
{
	if (is_latency_critical(tctx->comm)) {
		bpf_gpu_set_attr(tctx, GPU_ATTR_LEVEL, GPU_LEVEL_HIGH);
		bpf_gpu_set_attr(tctx, GPU_ATTR_TIMESLICE_US, lc_timeslice_us);
	} else {
		bpf_gpu_set_attr(tctx, GPU_ATTR_LEVEL, GPU_LEVEL_LOW);
		bpf_gpu_set_attr(tctx, GPU_ATTR_TIMESLICE_US, be_timeslice_us);
	}
	return 0;
}

SEC(".struct_ops.link")
struct gpu_sched_ops lc_be = {
	.task_init = (void *)lc_be_init,
	.name = "lc_be",
};

char LICENSE[] SEC("license") = "Dual BSD/GPL";

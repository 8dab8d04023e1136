// SPDX-License-Identifier: Apache-2.0
/*
 * launchlate: how long from the host's launch call to the first block start?
 *
 * On the device, warp 0 of block (0,0,0) - the block the hardware dispatches
 * first - writes {kernel id, %globaltimer, SM} at kernel entry into the next
 * slot of its GPU's slot ring (`starts`, numbered by `start_seq`; probes.h
 * says how the ring works and why it is not a ring buffer: no release, so
 * block 0, on the critical path of a one-block kernel, waits for one atomic
 * round trip and no more). On the host, the preload library appends one
 * record per launch to DIR/launches.bin (CLOCK_REALTIME just before
 * cuLaunchKernel). `gpuext trace launchlate` pairs the n-th start of a kernel
 * with the n-th launch of that kernel and prints a log2 histogram of the
 * differences.
 * %globaltimer counts ns since the epoch but drifts tens of microseconds
 * from CLOCK_REALTIME, so the preload library measures the offset per GPU
 * (DIR/clock-<pid>-<gpu>.txt, hal/nvidia/README.md) and the tool subtracts it.
 * A launch the driver refuses, or one captured into a CUDA graph (it runs
 * nothing then), gets no host record; a graph launch (cuGraphLaunch) gets one
 * per kernel node, at the time of that call, so a node's latency includes the
 * nodes before it in the graph. Starts with no launch are counted and said,
 * and so are starts lost: more than GX_LL_SLOTS launches on one GPU between
 * two copies of the ring (the preload's mirror interval, 100 ms) overwrite
 * the oldest. GPU ids are the system's (hal/nvidia/README.md): processes
 * given one GPU each write rings of their own; two processes tracing on one
 * GPU write the same ring, and the starts they clash on fail their check
 * words and are counted as unreadable.
 */
#include "probes.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, GX_LL_GPUS);
} start_seq SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct gx_slot_start);
	__uint(max_entries, GX_LL_GPUS * GX_LL_SLOTS);
} starts SEC(".maps");

SEC("probe/entry/first")
int launchlate_entry(struct gpuext_probe_ctx *ctx)
{
	struct gx_slot_start *r;
	__u32 gpu, slot;
	__u64 *ctr, seq;

	if (ctx->warp_id != 0 || ctx->block_id[0] | ctx->block_id[1] | ctx->block_id[2])
		return 0;
	gpu = ctx->gpu_id % GX_LL_GPUS;
	ctr = bpf_map_lookup_elem(&start_seq, &gpu);
	if (!ctr)
		return 0;
	seq = __sync_fetch_and_add(ctr, 1) + 1;
	slot = gpu * GX_LL_SLOTS + (__u32)((seq - 1) % GX_LL_SLOTS);
	r = bpf_map_lookup_elem(&starts, &slot);
	if (!r)
		return 0;
	r->seq = seq;
	r->kernel_id = ctx->kernel_id;
	r->timer_ns = ctx->timer_ns;
	r->sm_id = ctx->sm_id;
	r->check = gx_slot_check(seq, ctx->kernel_id, ctx->timer_ns, ctx->sm_id);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

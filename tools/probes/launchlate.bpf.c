// SPDX-License-Identifier: Apache-2.0
/*
 * launchlate: how long from the host's launch call to the first block start?
 *
 * On the device, warp 0 of block (0,0,0) - the block the hardware dispatches
 * first - writes {kernel id, %globaltimer} to the `starts` ring buffer at
 * kernel entry. On the host, the preload library appends one record per
 * launch to DIR/launches.bin (CLOCK_REALTIME just before cuLaunchKernel).
 * `gpuext trace launchlate` pairs the n-th start of a kernel with the n-th
 * launch of that kernel and prints a log2 histogram of the differences.
 * %globaltimer counts ns since the epoch but drifts tens of microseconds
 * from CLOCK_REALTIME, so the preload library measures the offset per GPU
 * (DIR/clock-<pid>-<gpu>.txt, hal/nvidia/README.md) and the tool subtracts it.
 * A launch the driver refuses, or one captured into a CUDA graph (it runs
 * nothing then), gets no host record; a graph launch (cuGraphLaunch) gets one
 * per kernel node, at the time of that call, so a node's latency includes the
 * nodes before it in the graph. Starts with no launch are counted and said.
 */
#include "probes.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} starts SEC(".maps");

SEC("probe/entry/first")
int launchlate_entry(struct gpuext_probe_ctx *ctx)
{
	struct gx_rec_start *r;

	if (ctx->warp_id != 0 || ctx->block_id[0] | ctx->block_id[1] | ctx->block_id[2])
		return 0;
	r = bpf_ringbuf_reserve(&starts, sizeof(*r), 0);
	if (!r)
		return 0;
	r->kernel_id = ctx->kernel_id;
	r->timer_ns = ctx->timer_ns;
	r->sm_id = ctx->sm_id;
	r->gpu_id = ctx->gpu_id;
	bpf_ringbuf_submit(r, 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

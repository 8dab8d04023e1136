// SPDX-License-Identifier: Apache-2.0
/*
 * kernelretsnoop: when did each block of each kernel finish, and where?
 *
 * At every kernel exit, warp 0 of the block (its lane 0, in warp and in
 * per-thread mode) writes one record to the `exits` ring buffer:
 * kernel id, %globaltimer, block index, SM. warp_id is uniform inside a warp,
 * so the submission sits under warp-uniform control as the verifier demands.
 * `gpuext trace kernelretsnoop` prints one line per block as it arrives.
 *
 * Why warp 0 only: one record per block is what "when did the block end"
 * needs; every warp would multiply the ring-buffer traffic by warps/block.
 * Warp 0 may finish a little before the block's last warp (and the record
 * is lane 0's exit, where warp 0's lanes leave by several exits).
 */
#include "probes.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} exits SEC(".maps");

SEC("probe/exit/warp0")
int kernelretsnoop_exit(struct gpuext_probe_ctx *ctx)
{
	struct gx_rec_exit *r;

	if (ctx->warp_id != 0)
		return 0;
	r = bpf_ringbuf_reserve(&exits, sizeof(*r), 0);
	if (!r)
		return 0;
	r->kernel_id = ctx->kernel_id;
	r->timer_ns = ctx->timer_ns;
	r->block[0] = ctx->block_id[0];
	r->block[1] = ctx->block_id[1];
	r->block[2] = ctx->block_id[2];
	r->sm_id = ctx->sm_id;
	r->gpu_id = ctx->gpu_id;
	r->pad = 0;
	bpf_ringbuf_submit(r, 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

// SPDX-License-Identifier: Apache-2.0
/*
 * kerneldur: a log2 histogram of kernel durations, measured on the device.
 *
 * Per kernel (a slot chosen by the kernel id): block (0,0,0), which the
 * hardware dispatches first, stamps the start at its entry; at each block's
 * exit, warp 0 counts the block, and the block that completes the grid
 * (grid_dim[0] x [1] x [2] blocks) is the last one: it adds (now - start) to
 * hist[log2(ns)] and to the kernel's totals, and resets the count for the next
 * launch. That is the time from the first block start to the last block end.
 * Launches of one kernel that overlap in time (several streams) mix their
 * counts; kernels whose ids share a slot likewise. `gpuext trace kerneldur`
 * prints the histogram and a per-kernel table (runs, mean, max).
 *
 * One atomic per block, at exit, on the kernel's slot: the entry side is a
 * plain store by one warp of the grid.
 */
#include "probes.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, GX_KDUR_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} hist SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, GX_KDUR_KSLOTS);
	__type(key, __u32);
	__type(value, struct gx_kdur_state);
} state SEC(".maps");

SEC("probe/entry/first")
int kerneldur_entry(struct gpuext_probe_ctx *ctx)
{
	__u32 key = ctx->kernel_id % GX_KDUR_KSLOTS;
	struct gx_kdur_state *s;

	if (ctx->warp_id != 0 || ctx->block_id[0] | ctx->block_id[1] | ctx->block_id[2])
		return 0;
	s = bpf_map_lookup_elem(&state, &key);
	if (s) {
		s->start_ns = ctx->timer_ns;
		s->kernel_id = ctx->kernel_id;
	}
	return 0;
}

SEC("probe/exit/warp0")
int kerneldur_exit(struct gpuext_probe_ctx *ctx)
{
	__u64 blocks = (__u64)ctx->grid_dim[0] * ctx->grid_dim[1] * ctx->grid_dim[2];
	__u32 key = ctx->kernel_id % GX_KDUR_KSLOTS;
	struct gx_kdur_state *s;
	__u64 dur, *b;

	if (ctx->warp_id != 0)
		return 0;
	s = bpf_map_lookup_elem(&state, &key);
	if (!s)
		return 0;
	if (__sync_fetch_and_add(&s->inflight, 1) + 1 < blocks)
		return 0;
	s->inflight = 0;
	dur = ctx->timer_ns > s->start_ns ? ctx->timer_ns - s->start_ns : 0;
	key = gx_log2(dur);
	b = bpf_map_lookup_elem(&hist, &key);
	if (b)
		__sync_fetch_and_add(b, 1);
	__sync_fetch_and_add(&s->runs, 1);
	__sync_fetch_and_add(&s->total_ns, dur);
	if (s->max_ns < dur)
		s->max_ns = dur;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

// SPDX-License-Identifier: Apache-2.0
/*
 * kerneldur: a log2 histogram of kernel durations, measured on the device.
 *
 * Per kernel (a slot chosen by the kernel id): block (0,0,0), which the
 * hardware dispatches first, stamps the start at its entry; at each block's
 * exit, warp 0 counts the block in one of GX_KDUR_GROUPS counters (block
 * index mod GX_KDUR_GROUPS), the block that completes its group counts the
 * group, and the one that completes the last group is the grid's last block:
 * it adds (now - start) to hist[log2(ns)] and to the kernel's totals, and
 * resets the counts for the next launch. That is the time from the first
 * block start to the last block end. Launches of one kernel that overlap in
 * time (several streams) mix their counts; kernels whose ids share a slot
 * likewise. `gpuext trace kerneldur` prints the histogram and a per-kernel
 * table (runs, mean, max).
 *
 * Why groups: with one counter per kernel every block's exit waited on an
 * atomic at one address, and those serialise in the L2 (GPU run 10, H100: a
 * 1.6 M-block stencil ran 1.55x). Blocks that run at the same time have
 * neighbouring indices, so index mod 64 spreads them over 64 addresses; the
 * per-kernel count sees 64 atomics a launch.
 *
 * The sections' guards (probe/entry/first, probe/exit/warp0) let the splicer
 * skip the other warps before the probe; the warp_id and block_id tests
 * below say the same for a backend that ignores guards.
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

/* Blocks exited per kernel slot and group (slot * GX_KDUR_GROUPS + group). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, GX_KDUR_KSLOTS * GX_KDUR_GROUPS);
	__type(key, __u32);
	__type(value, __u64);
} groups SEC(".maps");

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
	__u32 g = gx_block_linear(ctx) % GX_KDUR_GROUPS, gkey;
	__u64 in_group, ngroups, dur, *b, *c;
	struct gx_kdur_state *s;

	if (ctx->warp_id != 0)
		return 0;
	s = bpf_map_lookup_elem(&state, &key);
	gkey = key * GX_KDUR_GROUPS + g;
	c = bpf_map_lookup_elem(&groups, &gkey);
	if (!s || !c)
		return 0;
	/* blocks b < blocks with b % GROUPS == g; groups that hold any block */
	in_group = blocks / GX_KDUR_GROUPS + (g < blocks % GX_KDUR_GROUPS ? 1 : 0);
	ngroups = blocks < GX_KDUR_GROUPS ? blocks : GX_KDUR_GROUPS;
	if (__sync_fetch_and_add(c, 1) + 1 < in_group)
		return 0;
	*c = 0;
	if (__sync_fetch_and_add(&s->inflight, 1) + 1 < ngroups)
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

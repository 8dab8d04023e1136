// SPDX-License-Identifier: Apache-2.0
/*
 * kerneldur: a log2 histogram of kernel durations, measured on the device.
 *
 * Per GPU and kernel (a slot chosen by the kernel id): block (0,0,0), which the
 * hardware dispatches first, stamps the start at its entry; at every block's
 * exit, warp 0 raises end[%ctaid.x mod GX_KDUR_GROUPS] to %globaltimer with
 * gpuext_atomic_max(), which nothing waits for. The duration of a launch is
 * the latest end before the next launch's start, minus its own start: block
 * (0,0,0) of the NEXT launch of the kernel folds it (hist[log2(ns)], runs,
 * total, max) before it stamps its own start, and `gpuext trace kerneldur`
 * folds the last launch, which no next one follows, when it reads the maps
 * (trace_kdur_pending()). That is the time from the first block start to the
 * last block end.
 *
 * Approximations: a block of the next launch that ends before block (0,0,0)
 * has read the ends hides its group's end of the launch before (the fold
 * skips ends after its own start, so it never counts one; the other groups
 * still hold the launch's last wave). %globaltimer ticks coarsely (about
 * 1 us on many GPUs): a launch that ends in its own start's tick counts
 * (0 ns); ends in the tick the next launch starts in do not, as they may be
 * the next launch's own (taking one would stretch the launch before by the
 * whole gap between the two), so a launch whose last blocks all end there
 * counts from its earlier ones, or in `unfinished`. Launches of one kernel that overlap in
 * time (several streams) are cut at the next start: a launch with no block
 * end before it counts in `unfinished`. Kernels whose ids share a slot mix.
 * Each GPU has entries of its own (state[] has GX_KDUR_GPUS x GX_KDUR_KSLOTS):
 * on NVIDIA every context has its own copy of the map anyway, so this is what
 * lets the host's mirror show each GPU's state as written instead of a sum,
 * and it keeps GPUs apart where one map serves several (the interpreter).
 * GPU ids are the system's (hal/nvidia/README.md), so processes given one
 * GPU each keep apart. Processes on one GPU still add up in the mirror; one
 * that attaches while another has a launch pending starts from that state
 * (uploaded at attach) and may fold it once.
 *
 * Why not exact on the device: the last block can know it is last only from
 * a returning atomic, and waiting for one at every block's exit cost the
 * 1.6 M-block stencil 12% and the decode step 11% (H100). Why a max and not a
 * store: plain stores of the end time to 32 hot addresses cost the stencil
 * 40%, non-returning atomics 6% (same GPU). Why 8 groups: one address that
 * every block's exit updates serialises them in the L2, and the fold reads
 * them all (with 32, decode took 8% longer; with 8, 5%).
 *
 * The sections' guards (probe/entry/first, probe/exit/warp0) let the splicer
 * skip the other warps before the probe; the tests below say the same for a
 * backend that ignores guards (and pick lane 0 in per-thread mode: the fold
 * must run once).
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
	__uint(max_entries, GX_KDUR_GPUS * GX_KDUR_KSLOTS);
	__type(key, __u32);
	__type(value, struct gx_kdur_state);
} state SEC(".maps");

static __always_inline __u32 kdur_key(const struct gpuext_probe_ctx *ctx)
{
	return ctx->gpu_id % GX_KDUR_GPUS * GX_KDUR_KSLOTS + ctx->kernel_id % GX_KDUR_KSLOTS;
}

SEC("probe/entry/first")
int kerneldur_entry(struct gpuext_probe_ctx *ctx)
{
	__u32 key = kdur_key(ctx);
	__u64 now = ctx->timer_ns, end = 0, dur, *b;
	struct gx_kdur_state *s;

	if (ctx->warp_id != 0 || ctx->lane_id != 0 ||
	    ctx->block_id[0] | ctx->block_id[1] | ctx->block_id[2])
		return 0;
	s = bpf_map_lookup_elem(&state, &key);
	if (!s)
		return 0;
	/*
	 * The ends are read whether or not a launch is pending, and what they
	 * give is stored whatever happens (last_end), so the compiler cannot sink
	 * the loads behind the test of `pending`: they go out with it, and this
	 * block waits for one round trip, not two (a 1-block kernel waits for it
	 * whole). Nothing below waits for an atomic.
	 */
#pragma unroll
	for (int g = 0; g < GX_KDUR_GROUPS; g++) {
		__u64 e = s->end[g].ns;

		if (e < now && e > end)
			end = e;
	}
	s->last_end = end;
	if (s->pending) {
		if (end && end >= s->start_ns) {
			dur = end - s->start_ns;
			key = gx_log2(dur);
			b = bpf_map_lookup_elem(&hist, &key);
			if (b)
				__sync_fetch_and_add(b, 1);
			__sync_fetch_and_add(&s->runs, 1);
			__sync_fetch_and_add(&s->total_ns, dur);
			gpuext_atomic_max(&s->max_ns, 8, dur);
		} else {
			__sync_fetch_and_add(&s->unfinished, 1);
		}
	}
#pragma unroll
	for (int g = 0; g < GX_KDUR_GROUPS; g++)
		s->end[g].ns = 0;
	s->start_ns = now;
	s->kernel_id = ctx->kernel_id;
	s->pending = 1;
	return 0;
}

SEC("probe/exit/warp0")
int kerneldur_exit(struct gpuext_probe_ctx *ctx)
{
	__u32 key = kdur_key(ctx);
	struct gx_kdur_state *s;

	if (ctx->warp_id != 0)
		return 0;
	s = bpf_map_lookup_elem(&state, &key);
	if (s)
		gpuext_atomic_max(&s->end[ctx->block_id[0] % GX_KDUR_GROUPS].ns, 8, ctx->timer_ns);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

// SPDX-License-Identifier: Apache-2.0
/*
 * threadhist: how many threads (or warps) ran to an exit, per global warp.
 *
 * At every kernel exit the probe adds 1 to warp_exits[global warp index];
 * global warp index = linear block index x warps per block + warp id. So:
 *   - in warp mode (the default: at an exit, lane 0 runs for its warp, at
 *     whichever exit it takes) each entry counts the warp's launches:
 *     exactly 1 per warp and launch however its lanes leave, and the sum
 *     equals the warps launched;
 *   - with --per-thread every lane runs, each entry counts threads and the
 *     sum equals the threads launched (exactly, whatever the divergence).
 * `gpuext trace threadhist` prints the sum and the distribution of the
 * per-warp counts. Launches add up; indices wrap at GX_THREADHIST_SLOTS.
 *
 * Why no separate total counter: one address that every warp of every block
 * increments serialises them all in the L2 (with one, a 1.5 ms stencil ran
 * 16x slower on an H200, against 8x for a probe that returns at once); the
 * per-warp slots spread the atomics over 65536 addresses and the host sums.
 *
 * Why 32-bit counters: on the GPU the map's 4-byte values lie 4 apart
 * (codegen/ptx/ptx.h, gpuext_ptx_probe_stride), half the lines of 8-byte
 * ones for the same REDs. They wrap after 2^32 exits of one slot; `gpuext
 * trace` widens them, adding each slot's change modulo 2^32 into 64-bit
 * sums every ~200 ms.
 */
#include "probes.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, GX_THREADHIST_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
} warp_exits SEC(".maps");

SEC("probe/exit")
int threadhist_exit(struct gpuext_probe_ctx *ctx)
{
	__u32 gw = gx_block_linear(ctx) * gx_warps_per_block(ctx) + ctx->warp_id;
	__u32 key = gw % GX_THREADHIST_SLOTS;
	__u32 *v;

	v = bpf_map_lookup_elem(&warp_exits, &key);
	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

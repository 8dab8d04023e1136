/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The probe tools' shared definitions: included by every tools/probes/NAME.bpf.c
 * (BPF C) and by `gpuext trace` (tools/gpuext/cmd_trace.c), which reads the
 * maps and ring-buffer records these tools write. Changing a record or a map
 * size here changes both sides at once.
 */
#ifndef GPUEXT_TOOLS_PROBES_H
#define GPUEXT_TOOLS_PROBES_H

#include "gpuext/probe.h"

/* Ring-buffer record of kernelretsnoop: one per block (its warp 0's exit). */
struct gx_rec_exit {
	__gx_u64 kernel_id;
	__gx_u64 timer_ns;	/* %globaltimer at the exit */
	__gx_u32 block[3];
	__gx_u32 sm_id;
	__gx_u32 gpu_id;
	__gx_u32 pad;
};

/* launchlate: block (0,0,0) warp 0 reached its entry (gpuext trace's form of a gx_slot_start). */
struct gx_rec_start {
	__gx_u64 kernel_id;
	__gx_u64 timer_ns;
	__gx_u32 sm_id;
	__gx_u32 gpu_id;
};

/*
 * launchlate's start records, in a "slot ring": an array map of
 * GX_LL_GPUS x GX_LL_SLOTS records (GPU g's in [g x GX_LL_SLOTS, ...)) and a
 * counter per GPU (map `start_seq`). Block (0,0,0) claims the next number
 * s of its GPU's counter with a returning atomic add and writes record
 * (seq = s + 1, ...) into slot s mod GX_LL_SLOTS with plain stores: no
 * fence and no release, which a ring's commit needs (decode step, H100:
 * 2.4 of launchlate's 3.5 points were that release). `gpuext trace` reads
 * the records in counter order (trace_slots_poll()): it takes a slot only
 * when its seq is the one it waits for and its check matches (a copy that
 * caught the record half-written does not), counts the records a full lap
 * overwrote before it read them, and those never readable.
 */
#define GX_LL_GPUS 8u	/* rings; GPUs whose ids differ by a multiple of 8 share one */
#define GX_LL_SLOTS 65536u	/* per GPU, a power of 2: 2 MiB */
struct gx_slot_start {
	__gx_u64 seq;		/* claim number + 1 (0: never written) */
	__gx_u64 kernel_id;
	__gx_u64 timer_ns;
	__gx_u32 sm_id;
	__gx_u32 check;		/* gx_slot_check(seq, kernel_id, timer_ns, sm_id) */
};

/* A record's check word: an all-zero slot fails it, a mix of two records passes 1 in 2^32. */
static inline __gx_u32 gx_slot_check(__gx_u64 seq, __gx_u64 a, __gx_u64 b, __gx_u32 c)
{
	__gx_u64 h = seq * 0x9e3779b97f4a7c15ull ^ a ^ b * 0xc2b2ae3d27d4eb4full ^ c;

	return (__gx_u32)(h ^ h >> 32) ^ 0x5eed1a7eu;
}

/*
 * Ring-buffer record of memtrace: the accesses of one instruction by the lanes
 * of a warp. Bit i of `lanes` set = thread `thread + i` of the block accessed
 * `addr + i * stride` (bit 0 is always set: `thread` and `addr` are the
 * first lane's). A warp whose addresses are affine in the lane (coalesced:
 * stride = size) writes one record; otherwise each lane writes its own with
 * lanes = 1. `gpuext trace` expands records into single accesses
 * (trace_mem_expand(), lanes = 1, stride = 0) before anything else reads them.
 */
#define GX_MEM_STORE 1u
struct gx_rec_mem {
	__gx_u64 addr;
	__gx_u64 kernel_id;
	__gx_u32 size;		/* bytes */
	__gx_u32 flags;		/* GX_MEM_STORE */
	__gx_u32 block;		/* linear block index */
	__gx_u32 thread;	/* linear thread index in the block of the first lane */
	__gx_u32 lanes;		/* bit i: thread + i accessed addr + i * stride */
	__gx_u32 stride;	/* bytes between consecutive lanes' addresses, two's complement */
};

/* threadhist: exits counted per global warp index, modulo this. */
#define GX_THREADHIST_SLOTS 65536

/* smload: blocks started per SM id (index = %smid, modulo this). */
#define GX_SMLOAD_SLOTS 256

/* kerneldur: log2 buckets of kernel durations in ns; slot per kernel hash. */
#define GX_KDUR_BUCKETS 64
#define GX_KDUR_KSLOTS 64
/*
 * kerneldur's state[] is GX_KDUR_GPUS x GX_KDUR_KSLOTS entries: GPU g's kernel
 * slots in [g x GX_KDUR_KSLOTS, ...), so one context writes each (GPUs whose
 * ids differ by a multiple of 8 share one, as launchlate's rings).
 */
#define GX_KDUR_GPUS 8u
/* kerneldur: block exits raise one of this many end times per kernel slot (%ctaid.x mod). */
#ifndef GX_KDUR_GROUPS
#define GX_KDUR_GROUPS 8
#endif
/* One end time, alone in a 32-byte L2 sector: the groups' stores do not share one. */
struct gx_kdur_end {
	__gx_u64 ns;
	__gx_u64 pad[3];
};
/*
 * kerneldur state[] entry per GPU and kernel slot. The launch in flight is
 * "pending" (start_ns, end[]) until the next launch of the slot folds it into
 * runs, total_ns, max_ns and the histogram; `gpuext trace` folds the last one
 * (trace_kdur_pending()). Each GPU has its own entries, so the host's mirror
 * (which adds what each context changed) shows each GPU's values as written;
 * only processes sharing a GPU id add theirs up, and then pending counts them.
 */
struct gx_kdur_state {
	__gx_u64 pending;	/* 1: start_ns and end[] belong to a launch not folded yet */
	__gx_u64 start_ns;	/* entry of block (0,0,0) of the pending launch */
	__gx_u64 kernel_id;
	__gx_u64 runs;		/* folded kernel runs */
	__gx_u64 total_ns;
	__gx_u64 max_ns;
	__gx_u64 unfinished;	/* launches with no block exit before the next one started */
	__gx_u64 last_end;	/* the latest end the last fold found (0: none) */
	struct gx_kdur_end end[GX_KDUR_GROUPS];	/* latest block exit, by %ctaid.x mod GROUPS */
};

#ifdef __bpf__
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* Device helpers every gpuext runtime declares (enum gpuext_dev_helper, gpuext.h). */
static __u64 (* const gpuext_get_globaltimer)(void) = (void *)0x1100;
static __u64 (* const gpuext_get_sm_id)(void) = (void *)0x1101;
/* Warp votes (call them outside lane-dependent branches; the verifier checks). */
static __u64 (* const gpuext_warp_ballot)(__u64 pred) = (void *)0x1106;
static __u64 (* const gpuext_warp_first)(__u64 v) = (void *)0x1107;
static __u64 (* const gpuext_warp_shfl)(__u64 v, __u64 lane) = (void *)0x1108;
/* *(__u64 *)p = max(*p, v) atomically, without waiting (size must be 8, p 8-aligned). */
static long (* const gpuext_atomic_max)(void *p, __u32 size, __u64 v) = (void *)0x1109;

/* A block's linear index in its grid, from the context. */
static __always_inline __u32 gx_block_linear(const struct gpuext_probe_ctx *ctx)
{
	return ctx->block_id[0] + ctx->grid_dim[0] *
	       (ctx->block_id[1] + ctx->grid_dim[1] * ctx->block_id[2]);
}

/* Warps per block (a partial last warp counts). */
static __always_inline __u32 gx_warps_per_block(const struct gpuext_probe_ctx *ctx)
{
	__u32 t = ctx->block_dim[0] * ctx->block_dim[1] * ctx->block_dim[2];

	return (t + 31) / 32;
}

/* floor(log2(v)) for v > 0; 0 for 0. Branch-free enough for the work bound. */
static __always_inline __u32 gx_log2(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) r += 1;
	return r;
}
#endif

#endif

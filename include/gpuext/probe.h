/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The context a device probe sees (r1), on every GPU backend. Includable
 * from BPF C, user space and backends. Fields marked "per lane" differ
 * between the threads of a warp; the verifier treats them as divergent.
 */
#ifndef GPUEXT_PROBE_H
#define GPUEXT_PROBE_H

#ifdef __bpf__
typedef unsigned long long __gx_u64;
typedef unsigned int __gx_u32;
#else
#include <stdint.h>
typedef uint64_t __gx_u64;
typedef uint32_t __gx_u32;
#endif

struct gpuext_probe_ctx {
	__gx_u64 kernel_id;	/* content hash of the kernel's name (uniform) */
	__gx_u64 timer_ns;	/* %globaltimer at the probe (uniform enough: read by the leader) */
	__gx_u64 addr;		/* memory probes: the global address accessed (per lane) */
	__gx_u64 value;		/* memory probes: the stored value (per lane) */
	__gx_u32 size;		/* memory probes: access size in bytes (uniform: same instruction) */
	__gx_u32 event;		/* 0 entry, 1 exit, 2 load, 3 store (uniform) */
	__gx_u32 grid_dim[3];	/* uniform */
	__gx_u32 block_dim[3];	/* uniform */
	__gx_u32 block_id[3];	/* uniform within a warp */
	__gx_u32 thread_id[3];	/* per lane */
	__gx_u32 lane_id;	/* per lane */
	__gx_u32 warp_id;	/* uniform */
	__gx_u32 sm_id;		/* uniform */
	__gx_u32 gpu_id;	/* uniform: NVIDIA: the GPU's number in the system, as nvidia-smi counts */
	__gx_u64 args;		/* generic address of the kernel's parameter buffer (uniform) */
};

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The probe ABI the splicer (ptx_splice.c) writes into a kernel, for the
 * preload library and the tools (private to hal/nvidia; not installed).
 *
 * Per thread of an instrumented kernel, one struct gpuext_probe_ctx
 * (gpuext/probe.h) lives in .local memory (aligned 8, 112 bytes), filled at
 * kernel entry by every thread -- only the fields the probes read: the probe
 * text says which 4-byte words ("// gpuext-ctx-words 0xMASK", computed by
 * codegen/ptx/ptx_probe.c from the verified programs; absent: all). The
 * fields, when read:
 *
 *   kernel_id   gx_kernel_id(mangled .entry name), an immediate
 *   timer_ns    %globaltimer at entry; refreshed before each exit probe
 *               (load/store probes see the last value: call
 *               gpuext_get_globaltimer() for a fresh one)
 *   addr, value 0 at entry; before a load/store probe: the global address
 *               (base register + offset, as the instruction computes it;
 *               a global variable operand through cvta.global) and the value
 *               stored (stores) or loaded (loads): the first element of a
 *               vector, masked to the element size, zero-extended
 *   size        bytes the instruction accesses (a .v4.f32 access: 16)
 *   event       GX_PROBE_ENTRY/EXIT/LOAD/STORE
 *   grid_dim    %nctaid.xyz      block_dim  %ntid.xyz
 *   block_id    %ctaid.xyz       thread_id  %tid.xyz
 *   lane_id     %laneid
 *   warp_id     linear thread index in the block / 32 (tid.x + ntid.x *
 *               (tid.y + ntid.y * tid.z)) >> 5; not %warpid, which names a
 *               hardware warp slot and changes under preemption
 *   sm_id       %smid
 *   gpu_id      the module global `.visible .global .u32 gpuext_rt_gpu_id`
 *               (0 until the preload library writes the device ordinal into
 *               it with cuModuleGetGlobal + cuMemcpyHtoD after the load)
 *   args        generic address of the kernel's parameter buffer (the first
 *               .param, cvta.param: PTX ISA 7.7, sm_70+; the splicer raises
 *               .version to 7.7 when needed); 0 when the kernel has no
 *               parameters or the module's (raised) .target is below sm_70
 *
 * Calls: `call gpuext_probe_<event>, (ctx)` with ctx the generic address of
 * that struct, from every thread that reaches the site (divergent sites
 * included); in warp mode the probe function elects the lowest active lane
 * (ptx.h, gpuext_ptx_probe_emit). Sites: entry once per thread before the
 * kernel's first instruction or label; exit before every ret/exit of the
 * .entry body (predicated ones only when the predicate holds); load/store
 * after every ld.global/ldu.global/st.global (any qualifiers, .v2/.v4/.v8)
 * and every generic ld/st whose address isspacep.global, in the .entry body
 * only: .func bodies (the kernel's callees) are not instrumented.
 */
#ifndef GPUEXT_NV_PTX_SPLICE_H
#define GPUEXT_NV_PTX_SPLICE_H

#include <stddef.h>

#include "gpuext/probe.h"

#define GX_CTX_KERNEL_ID ((unsigned)offsetof(struct gpuext_probe_ctx, kernel_id))
#define GX_CTX_TIMER	 ((unsigned)offsetof(struct gpuext_probe_ctx, timer_ns))
#define GX_CTX_ADDR	 ((unsigned)offsetof(struct gpuext_probe_ctx, addr))
#define GX_CTX_VALUE	 ((unsigned)offsetof(struct gpuext_probe_ctx, value))
#define GX_CTX_SIZE	 ((unsigned)offsetof(struct gpuext_probe_ctx, size))
#define GX_CTX_EVENT	 ((unsigned)offsetof(struct gpuext_probe_ctx, event))
#define GX_CTX_GRID	 ((unsigned)offsetof(struct gpuext_probe_ctx, grid_dim))
#define GX_CTX_BLOCK	 ((unsigned)offsetof(struct gpuext_probe_ctx, block_dim))
#define GX_CTX_BLOCK_ID	 ((unsigned)offsetof(struct gpuext_probe_ctx, block_id))
#define GX_CTX_THREAD_ID ((unsigned)offsetof(struct gpuext_probe_ctx, thread_id))
#define GX_CTX_LANE	 ((unsigned)offsetof(struct gpuext_probe_ctx, lane_id))
#define GX_CTX_WARP	 ((unsigned)offsetof(struct gpuext_probe_ctx, warp_id))
#define GX_CTX_SM	 ((unsigned)offsetof(struct gpuext_probe_ctx, sm_id))
#define GX_CTX_GPU	 ((unsigned)offsetof(struct gpuext_probe_ctx, gpu_id))
#define GX_CTX_ARGS	 ((unsigned)offsetof(struct gpuext_probe_ctx, args))
#define GX_CTX_BYTES	 ((unsigned)sizeof(struct gpuext_probe_ctx))

/* The module global the preload library sets to the device ordinal. */
#define GX_GPU_ID_SYMBOL "gpuext_rt_gpu_id"

#endif

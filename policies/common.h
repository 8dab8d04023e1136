/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * What every shipped policy includes: the BPF basics and the gpuext policy
 * ABI (include/gpuext/gpu_ops.h: hook contexts, opaque handles, kfuncs).
 *
 * Hooks are written with BPF_PROG() so their arguments read like the
 * prototypes in struct gpu_mem_ops / gpu_sched_ops. BPF_PROG names its own
 * hidden argument `ctx`, so a hook's context parameter is called `mctx`
 * (memory) or `tctx` (scheduling).
 */
#ifndef GPUEXT_POLICIES_COMMON_H
#define GPUEXT_POLICIES_COMMON_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <gpuext/gpu_ops.h>

/* A page's number in the process's address space: the unit strides are measured in. */
static __always_inline __u64 gpu_vpage(const struct gpu_mem_ctx *mctx, __u32 page_index)
{
	return (mctx->block.va_start >> GPU_PAGE_SHIFT) + page_index;
}

static __always_inline __u32 min_u32(__u32 a, __u32 b) { return a < b ? a : b; }
static __always_inline __u32 max_u32(__u32 a, __u32 b) { return a > b ? a : b; }

#endif

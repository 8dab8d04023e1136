/* SPDX-License-Identifier: Apache-2.0 */
/* Pure helpers of the preload library (nv_util.c); internal to hal/nvidia. */
#ifndef GPUEXT_NV_UTIL_H
#define GPUEXT_NV_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The .entry names of a PTX module, in order (comments skipped). 0 or -ENOMEM. */
int nv_ptx_entries(const char *ptx, size_t len, char ***names, size_t *cnt);
void nv_free_names(char **names, size_t cnt);
/*
 * The device functions a spliced module's text names on its "@tag NAME"
 * lines (GX_SPLICE_FUNC, hal/nvidia/nvprobe.h), in order. 0 or -ENOMEM.
 */
int nv_tagged_names(const char *text, const char *tag, char ***names, size_t *cnt);

/*
 * How long after the start of the last mirror at a synchronizing call the
 * next may run (preload.c, nv_sync_mirror): at least 2 ms, and @cost_ns (the
 * last one's) x 100 / @share_pct, so those mirrors take at most @share_pct
 * percent of the thread's time. @share_pct 0: never (UINT64_MAX).
 */
uint64_t nv_sync_gap_ns(uint64_t cost_ns, unsigned share_pct);

/* vsnprintf into @err (@len bytes; nothing when NULL or 0). */
void nv_set_err(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The pack's kernel filter: "" or NULL matches all; else an fnmatch(3) glob. */
bool nv_filter_match(const char *glob, const char *name);

/* "<pid> <id 16 hex> <status> <name>\n" (kernels.txt); spaces in status become '_'. */
int nv_kernel_line(char *buf, size_t len, unsigned pid, uint64_t id, const char *status,
		   const char *name);

/*
 * The GPU ids the probes and records carry (ctx->gpu_id, launches.bin,
 * clock files) are the system's: a GPU's rank by PCI address among the
 * GPUs the NVIDIA driver lists, which is how nvidia-smi numbers them, so
 * that processes given different GPUs (CUDA_VISIBLE_DEVICES) do not share
 * ids. NV_GPU_LIST_DEFAULT: the directories whose entries are the GPUs'
 * PCI addresses, the first one readable that lists @bus_id wins
 * (GPUEXT_NV_GPU_LIST overrides it, colon-separated).
 */
#define NV_GPU_LIST_DEFAULT "/proc/driver/nvidia/gpus:/sys/bus/pci/drivers/nvidia"
/* "DDDD:BB:DD.F" (a 4- to 8-digit domain, hex in either case) as one number. -EINVAL if not one. */
int nv_pci_addr(const char *s, uint64_t *addr);
/*
 * @bus_id's rank among the PCI addresses named by the entries of the first
 * directory in @dirs (colon-separated) that lists it; other entries are
 * skipped. -EINVAL (bad @bus_id) or -ENOENT (no directory lists it), with
 * the reason in @err.
 */
int nv_gpu_rank(const char *bus_id, const char *dirs, char *err, size_t len);

/* One versioned export of an interposed entry point. */
struct nv_hook_ver {
	const char *name;	/* exported symbol: "cuCtxCreate_v3" */
	const char *base;	/* what cuGetProcAddress is asked for: "cuCtxCreate" */
	int since;		/* CUDA version that introduced it (cudaTypedefs.h PFN_*_vNNNNN) */
	bool per_thread;	/* a _ptsz/_ptds variant */
};

#define NV_PROC_PER_THREAD 2	/* CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM */

/*
 * The variant a cuGetProcAddress(@base, @cuda_version, @flags) request is
 * answered with: the newest one not newer than @cuda_version, per-thread
 * when asked and one exists. NULL if none.
 */
const struct nv_hook_ver *nv_pick_version(const struct nv_hook_ver *v, size_t n,
					  const char *base, int cuda_version, uint64_t flags);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * State of libgpuext-nvprobe.so shared by its three files (only in the .so):
 *   preload.c    dlsym and cuGetProcAddress interposition, the hook table,
 *                contexts, setup and teardown;
 *   nv_load.c    module/library loads (PTX -> splice -> JIT -> cache),
 *                function/kernel handles, kernels.txt, map tables;
 *   nv_launch.c  launches (launch records) and graph kernel nodes.
 */
#ifndef GPUEXT_NV_PRELOAD_H
#define GPUEXT_NV_PRELOAD_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define NV_L2_PACKS 4	/* GPU kinds of one process with a pack of their own */

#include "nv_impl.h"

#define EXPORT __attribute__((visibility("default")))
#define PFX "gpuext-nvprobe: "
#define NV_BUCKETS 4096
#define NV_MAX_CTX 32
#define NV_LAUNCH_BUF 2048
#define NV_NO_GPU 0xffffffffu

/* ------------------------------------------------------------------ */
/* The interposed entry points                                          */
/* ------------------------------------------------------------------ */

/* X(exported name, cuGetProcAddress name, CUDA version it appeared in, per-thread) */
#define NV_HOOKS(X)                                                              \
	X(cuModuleLoad, cuModuleLoad, 2000, 0)                                   \
	X(cuModuleLoadData, cuModuleLoadData, 2000, 0)                           \
	X(cuModuleLoadDataEx, cuModuleLoadDataEx, 2010, 0)                       \
	X(cuModuleLoadFatBinary, cuModuleLoadFatBinary, 2000, 0)                 \
	X(cuModuleUnload, cuModuleUnload, 2000, 0)                               \
	X(cuModuleGetFunction, cuModuleGetFunction, 2000, 0)                     \
	X(cuLibraryLoadData, cuLibraryLoadData, 12000, 0)                        \
	X(cuLibraryLoadFromFile, cuLibraryLoadFromFile, 12000, 0)                \
	X(cuLibraryUnload, cuLibraryUnload, 12000, 0)                            \
	X(cuLibraryGetKernel, cuLibraryGetKernel, 12000, 0)                      \
	X(cuLibraryGetModule, cuLibraryGetModule, 12000, 0)                      \
	X(cuKernelGetFunction, cuKernelGetFunction, 12000, 0)                    \
	X(cuFuncSetAttribute, cuFuncSetAttribute, 9000, 0)                       \
	X(cuFuncSetCacheConfig, cuFuncSetCacheConfig, 3000, 0)                   \
	X(cuFuncSetSharedMemConfig, cuFuncSetSharedMemConfig, 4020, 0)           \
	X(cuKernelSetAttribute, cuKernelSetAttribute, 12000, 0)                  \
	X(cuKernelSetCacheConfig, cuKernelSetCacheConfig, 12000, 0)              \
	X(cuModuleGetFunctionCount, cuModuleGetFunctionCount, 12040, 0)         \
	X(cuModuleEnumerateFunctions, cuModuleEnumerateFunctions, 12040, 0)     \
	X(cuLibraryGetKernelCount, cuLibraryGetKernelCount, 12040, 0)           \
	X(cuLibraryEnumerateKernels, cuLibraryEnumerateKernels, 12040, 0)       \
	X(cuLaunchKernel, cuLaunchKernel, 4000, 0)                               \
	X(cuLaunchKernel_ptsz, cuLaunchKernel, 7000, 1)                          \
	X(cuLaunchKernelEx, cuLaunchKernelEx, 11060, 0)                          \
	X(cuLaunchKernelEx_ptsz, cuLaunchKernelEx, 11060, 1)                     \
	X(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel, 9000, 0)         \
	X(cuLaunchCooperativeKernel_ptsz, cuLaunchCooperativeKernel, 9000, 1)    \
	X(cuCtxCreate, cuCtxCreate, 2000, 0)                                     \
	X(cuCtxCreate_v2, cuCtxCreate, 3020, 0)                                  \
	X(cuCtxCreate_v3, cuCtxCreate, 11040, 0)                                 \
	X(cuCtxCreate_v4, cuCtxCreate, 12050, 0)                                 \
	X(cuCtxDestroy, cuCtxDestroy, 2000, 0)                                   \
	X(cuCtxDestroy_v2, cuCtxDestroy, 4000, 0)                                \
	X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 7000, 0)           \
	X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease, 7000, 0)         \
	X(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease, 11000, 0)     \
	X(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset, 7000, 0)             \
	X(cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset, 11000, 0)         \
	X(cuGraphAddKernelNode, cuGraphAddKernelNode, 10000, 0)                  \
	X(cuGraphAddKernelNode_v2, cuGraphAddKernelNode, 12000, 0)               \
	X(cuGraphKernelNodeSetParams, cuGraphKernelNodeSetParams, 10000, 0)      \
	X(cuGraphKernelNodeGetParams, cuGraphKernelNodeGetParams, 10000, 0)      \
	X(cuGraphKernelNodeGetParams_v2, cuGraphKernelNodeGetParams, 12000, 0)   \
	X(cuGraphKernelNodeSetParams_v2, cuGraphKernelNodeSetParams, 12000, 0)   \
	X(cuGraphExecKernelNodeSetParams, cuGraphExecKernelNodeSetParams, 10010, 0) \
	X(cuGraphExecKernelNodeSetParams_v2, cuGraphExecKernelNodeSetParams, 12000, 0) \
	X(cuGraphNodeSetEnabled, cuGraphNodeSetEnabled, 11060, 0)                \
	X(cuGraphAddNode, cuGraphAddNode, 12020, 0)                              \
	X(cuGraphAddNode_v2, cuGraphAddNode, 12030, 0)                           \
	X(cuGraphNodeSetParams, cuGraphNodeSetParams, 12020, 0)                  \
	X(cuGraphExecNodeSetParams, cuGraphExecNodeSetParams, 12020, 0)          \
	X(cuStreamBeginCapture, cuStreamBeginCapture, 10000, 0)                  \
	X(cuStreamBeginCapture_ptsz, cuStreamBeginCapture, 10000, 1)             \
	X(cuStreamBeginCapture_v2, cuStreamBeginCapture, 10010, 0)               \
	X(cuStreamBeginCapture_v2_ptsz, cuStreamBeginCapture, 10010, 1)          \
	X(cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph, 12030, 0)    \
	X(cuStreamBeginCaptureToGraph_ptsz, cuStreamBeginCaptureToGraph, 12030, 1) \
	X(cuGraphInstantiate, cuGraphInstantiate, 10000, 0)                      \
	X(cuGraphInstantiate_v2, cuGraphInstantiate, 11000, 0)                   \
	X(cuGraphInstantiateWithFlags, cuGraphInstantiate, 12000, 0)             \
	X(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags, 11040, 0)    \
	X(cuGraphInstantiateWithParams, cuGraphInstantiateWithParams, 12000, 0)  \
	X(cuGraphInstantiateWithParams_ptsz, cuGraphInstantiateWithParams, 12000, 1) \
	X(cuGraphLaunch, cuGraphLaunch, 10000, 0)                                \
	X(cuGraphLaunch_ptsz, cuGraphLaunch, 10000, 1)                           \
	X(cuGraphExecUpdate, cuGraphExecUpdate, 10020, 0)                        \
	X(cuGraphExecUpdate_v2, cuGraphExecUpdate, 12000, 0)                     \
	X(cuGraphExecChildGraphNodeSetParams, cuGraphExecChildGraphNodeSetParams, 11010, 0) \
	X(cuGraphExecDestroy, cuGraphExecDestroy, 10000, 0)                      \
	X(cuGetProcAddress, cuGetProcAddress, 11030, 0)                          \
	X(cuGetProcAddress_v2, cuGetProcAddress, 12000, 0)                      \
	X(cuCtxSynchronize, cuCtxSynchronize, 2000, 0)                           \
	X(cuStreamSynchronize, cuStreamSynchronize, 2000, 0)                     \
	X(cuStreamSynchronize_ptsz, cuStreamSynchronize, 7000, 1)                \
	X(cuEventSynchronize, cuEventSynchronize, 2000, 0)                       \
	X(cuMemcpyDtoH_v2, cuMemcpyDtoH, 3020, 0)                                \
	X(cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH, 7000, 1)                           \
	X(cuMemcpy, cuMemcpy, 4000, 0)                                           \
	X(cuMemcpy_ptds, cuMemcpy, 7000, 1)

/* The real exports, by the exported name (signature types from nv_cuda.h). */
struct nv_real {
	PFN_cuModuleLoad cuModuleLoad;
	PFN_cuModuleLoadData cuModuleLoadData;
	PFN_cuModuleLoadDataEx cuModuleLoadDataEx;
	PFN_cuModuleLoadFatBinary cuModuleLoadFatBinary;
	PFN_cuModuleUnload cuModuleUnload;
	PFN_cuModuleGetFunction cuModuleGetFunction;
	PFN_cuLibraryLoadData cuLibraryLoadData;
	PFN_cuLibraryLoadFromFile cuLibraryLoadFromFile;
	PFN_cuLibraryUnload cuLibraryUnload;
	PFN_cuLibraryGetKernel cuLibraryGetKernel;
	PFN_cuLibraryGetModule cuLibraryGetModule;
	PFN_cuKernelGetFunction cuKernelGetFunction;
	PFN_cuFuncSetAttribute cuFuncSetAttribute;
	PFN_cuFuncSetCacheConfig cuFuncSetCacheConfig;
	PFN_cuFuncSetSharedMemConfig cuFuncSetSharedMemConfig;
	PFN_cuKernelSetAttribute cuKernelSetAttribute;
	PFN_cuKernelSetCacheConfig cuKernelSetCacheConfig;
	PFN_cuModuleGetFunctionCount cuModuleGetFunctionCount;
	PFN_cuModuleEnumerateFunctions cuModuleEnumerateFunctions;
	PFN_cuLibraryGetKernelCount cuLibraryGetKernelCount;
	PFN_cuLibraryEnumerateKernels cuLibraryEnumerateKernels;
	PFN_cuLaunchKernel cuLaunchKernel, cuLaunchKernel_ptsz;
	PFN_cuLaunchKernelEx cuLaunchKernelEx, cuLaunchKernelEx_ptsz;
	PFN_cuLaunchCooperativeKernel cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz;
	PFN_cuCtxCreate_v2 cuCtxCreate, cuCtxCreate_v2;
	PFN_cuCtxCreate_v3 cuCtxCreate_v3;
	PFN_cuCtxCreate_v4 cuCtxCreate_v4;
	PFN_cuCtxDestroy cuCtxDestroy, cuCtxDestroy_v2;
	PFN_cuDevicePrimaryCtxRetain cuDevicePrimaryCtxRetain;
	PFN_cuDevicePrimaryCtxRelease cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2;
	PFN_cuDevicePrimaryCtxReset cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset_v2;
	PFN_cuGraphAddKernelNode cuGraphAddKernelNode, cuGraphAddKernelNode_v2;
	PFN_cuGraphKernelNodeSetParams cuGraphKernelNodeSetParams, cuGraphKernelNodeSetParams_v2;
	PFN_cuGraphKernelNodeGetParams cuGraphKernelNodeGetParams, cuGraphKernelNodeGetParams_v2;
	PFN_cuGraphExecKernelNodeSetParams cuGraphExecKernelNodeSetParams,
		cuGraphExecKernelNodeSetParams_v2;
	PFN_cuGraphNodeSetEnabled cuGraphNodeSetEnabled;
	PFN_cuGraphAddNode cuGraphAddNode;
	PFN_cuGraphAddNode_v2 cuGraphAddNode_v2;
	PFN_cuGraphNodeSetParams cuGraphNodeSetParams;
	PFN_cuGraphExecNodeSetParams cuGraphExecNodeSetParams;
	PFN_cuStreamBeginCapture cuStreamBeginCapture, cuStreamBeginCapture_ptsz;
	PFN_cuStreamBeginCapture_v2 cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz;
	PFN_cuStreamBeginCaptureToGraph cuStreamBeginCaptureToGraph,
		cuStreamBeginCaptureToGraph_ptsz;
	PFN_cuGraphInstantiate cuGraphInstantiate, cuGraphInstantiate_v2;
	PFN_cuGraphInstantiateWithFlags cuGraphInstantiateWithFlags;
	PFN_cuGraphInstantiateWithParams cuGraphInstantiateWithParams,
		cuGraphInstantiateWithParams_ptsz;
	PFN_cuGraphLaunch cuGraphLaunch, cuGraphLaunch_ptsz;
	PFN_cuGraphExecUpdate cuGraphExecUpdate;
	PFN_cuGraphExecUpdate_v2 cuGraphExecUpdate_v2;
	PFN_cuGraphExecChildGraphNodeSetParams cuGraphExecChildGraphNodeSetParams;
	PFN_cuGraphExecDestroy cuGraphExecDestroy;
	PFN_cuGetProcAddress cuGetProcAddress;
	PFN_cuGetProcAddress_v2 cuGetProcAddress_v2;
	PFN_cuCtxSynchronize cuCtxSynchronize;
	PFN_cuStreamSynchronize cuStreamSynchronize, cuStreamSynchronize_ptsz;
	PFN_cuEventSynchronize cuEventSynchronize;
	PFN_cuMemcpyDtoH cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds;
	PFN_cuMemcpy cuMemcpy, cuMemcpy_ptds;
};
extern struct nv_real real;

/* Our wrappers: each has exactly the type of the export it stands for. */
#define NV_DECLARE(n, b, s, pt) EXPORT __typeof__(*((struct nv_real *)0)->n) n;
NV_HOOKS(NV_DECLARE)
#undef NV_DECLARE


enum img_state {
	IMG_INSTR,	/* spliced: names known, status per filter */
	IMG_FILTERED,	/* no kernel matched the filter: loaded unchanged */
	IMG_SASS,	/* no PTX: loaded unchanged; names reported at lookup */
	IMG_ERROR,	/* failed: loaded unchanged (loudly); names reported at lookup */
	IMG_PASS,	/* not traced */
};

/* A loaded module or library (or a library's per-context module, aliased). */
struct nv_img {
	const void *h;
	struct nv_img *lib;		/* alias: the library this module belongs to */
	bool is_lib;
	bool has_table;			/* defines gpuext_rt_maps */
	enum img_state state;
	char status[48];		/* for names first seen at lookup */
	/*
	 * Contexts whose tables are written, by our state object (never freed,
	 * one per context lifetime): a new context that reuses a destroyed
	 * one's handle is a different entry and gets its own tables.
	 */
	_Atomic(struct nv_ctx *) filled[NV_MAX_CTX];
	_Atomic int nfilled;
	struct nv_img *next;
};

/*
 * A CUfunction or CUkernel handle we handed out; immutable once published
 * (but for twin_ok), never freed. twin: the kernel's flat twin in the same
 * module or library (hal/nvidia/ptx_twin.c; a CUkernel when kern), launched
 * in its place when a launch is flat in z and twin_ok says the twin fits
 * (nv_launch.c): 0 not compared yet, 1 fits, -1 never (it needs more of the
 * SM than the kernel, or an attribute the app set did not carry over).
 */
struct nv_handle {
	const void *h;
	uint64_t id;
	struct nv_img *img;
	const void *twin;
	const void *orig;	/* for a twin's own handle: its kernel's */
	bool kern;
	_Atomic int twin_ok;
	_Atomic(struct nv_handle *) next;
};

/*
 * The process's one state object (a preload library has no other owner):
 * set up once by nv_init, read by every wrapper.
 */
struct nv_state {
	pthread_once_t once;
	_Atomic bool active;
	void *libcuda;
	struct nv_api cu;
	int driver_version;
	unsigned sm0;			/* device 0's compute capability (x10) */
	bool uniform_sm;		/* every device has sm0 */
	char dir[PATH_MAX];
	struct gx_pack pack;
	/*
	 * The pack with its map atomics carrying an L2 policy (nv_load.c,
	 * l2keep_pack): one per policy value the process's GPUs gave, never freed.
	 */
	struct gx_pack l2pack[NV_L2_PACKS];
	uint64_t l2pol[NV_L2_PACKS];
	unsigned l2cnt[NV_L2_PACKS];	/* atomics rewritten (nvprobe-PID.txt says) */
	unsigned l2n, l2warned;
	pthread_mutex_t l2lock;
	struct nv_maps maps;
	int kernels_fd, launches_fd;
	unsigned pid;
	bool clock_sync;		/* GPUEXT_CLOCK_SYNC=1: calibrate each context's clock */
	bool jit_only;			/* GPUEXT_NV_JIT_ONLY=1: JIT modules unspliced (a control) */

	pthread_rwlock_t hlock;		/* handles, images, reported ids */
	_Atomic(struct nv_handle *) buckets[NV_BUCKETS];	/* read without the lock */
	struct nv_img *imgs;
	uint64_t *reported;		/* open addressing set of kernels.txt keys */
	size_t rep_cap, rep_cnt;

	pthread_mutex_t llock;		/* launch records not yet written */
	struct gx_launch_rec lbuf[NV_LAUNCH_BUF];
	size_t lcnt;
	_Atomic uint64_t seq;
	_Atomic bool captured;		/* the app began a stream capture: launches may be captured */
	pthread_mutex_t gexec_lock;	/* executable graphs' kernel nodes (nv_launch.c) */
	struct nv_gexec *gexecs;
	_Atomic bool cache_warned;
	_Atomic unsigned splice_hits, splices;	/* modules from the splice cache / spliced now */
	/* launches (not captured) of kernels with a flat twin: the twin ran / the kernel did */
	_Atomic uint64_t twin_launches, kernel_launches;
	_Atomic bool exited;		/* nv_exit ran (it may be registered several times) */
	_Atomic int rearmed;		/* nv_exit_rearm calls that registered nv_exit again */
	_Atomic uint64_t sync_mirror_ns;	/* last mirror after a synchronizing call */
	_Atomic uint64_t sync_mirror_cost_ns;	/* how long that one took (nv_sync_mirror) */
	unsigned sync_share;			/* percent of a thread's time those may take */
};
extern struct nv_state g;

/* nv_launch.c: measures @x's %globaltimer - CLOCK_REALTIME once (current context = @x). */
void nv_clock_calibrate(struct nv_ctx *x);

/* preload.c */
void nv_ensure_init(void);
/* Whether we trace (initialises on first use); false on the initialising thread. */
bool nv_active(void);
uint64_t nv_now_ns(void);
/* Fills driver_version, sm0, uniform_sm once (the driver must be usable by then). */
void nv_devices(void);
void nv_write_all(int fd, const void *buf, size_t len);
/* Registers the exit mirror again, ahead of teardown registered since (see preload.c). */
void nv_exit_rearm(void);
/* After an app's synchronizing call: mirror now if kernels ran since the last one. */
void nv_sync_mirror(void);

/* nv_load.c */
/* The state of the current context (set up on first sight); NULL if none. */
struct nv_ctx *nv_current_ctx(void);
/* Makes sure @img's probes see context @x's maps (libraries: once per context). */
void nv_img_ready(struct nv_img *img, struct nv_ctx *x);
struct nv_handle *nv_handle_find(const void *h);
struct nv_handle *nv_handle_add(const void *h, uint64_t id, struct nv_img *img, const void *twin,
				 bool kern, const void *orig);

/* nv_launch.c */
void nv_flush_launches(void);

/* Every wrapper starts with this: the real entry point, or an error the app can handle. */
#define REAL_OR_FAIL(fn)                                                        \
	do {                                                                    \
		nv_ensure_init();                                                  \
		if (!real.fn)                                                   \
			return CUDA_ERROR_NOT_INITIALIZED;                      \
	} while (0)

#endif

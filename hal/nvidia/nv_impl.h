/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals of libgpuext-nvprobe.so shared by preload.c (interposition,
 * module loads, launches) and nv_maps.c (device maps per context, mirroring
 * into the shared-memory maps of `gpuext trace`). Not installed; tests use
 * the pure parts (shm writer, ring drain, value folding).
 */
#ifndef GPUEXT_NV_IMPL_H
#define GPUEXT_NV_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nv_cuda.h"
#include "nvprobe.h"
#include "ptx/ptx.h"

/* cuMemsetD32Async (CUDA 3.2+); nv_cuda.h has no typedef for it yet. */
typedef CUresult (*nv_pfn_memset_d32_async)(CUdeviceptr, unsigned int, size_t, CUstream);

/*
 * The real driver entry points the library calls itself, resolved from
 * libcuda.so.1 with the real dlsym (never through our own wrappers). Filled
 * once by preload.c; read-only afterwards.
 */
struct nv_api {
	PFN_cuInit Init;
	PFN_cuDriverGetVersion DriverGetVersion;
	PFN_cuDeviceGetCount DeviceGetCount;
	PFN_cuDeviceGet DeviceGet;
	PFN_cuDeviceGetAttribute DeviceGetAttribute;
	PFN_cuDeviceGetPCIBusId DeviceGetPCIBusId;	/* NULL: GPU ids are ordinals (said) */
	PFN_cuCtxGetCurrent CtxGetCurrent;
	PFN_cuCtxGetDevice CtxGetDevice;
	PFN_cuCtxPushCurrent CtxPushCurrent;
	PFN_cuCtxPopCurrent CtxPopCurrent;
	PFN_cuDevicePrimaryCtxGetState DevicePrimaryCtxGetState;
	PFN_cuMemAlloc MemAlloc;
	PFN_cuMemFree MemFree;
	PFN_cuMemHostAlloc MemHostAlloc;
	PFN_cuMemHostGetDevicePointer MemHostGetDevicePointer;
	PFN_cuMemFreeHost MemFreeHost;
	PFN_cuMemcpyHtoDAsync MemcpyHtoDAsync;
	PFN_cuMemcpyDtoHAsync MemcpyDtoHAsync;
	/* Optional: NULL makes the ring drain zero consumed bytes by a copy instead. */
	nv_pfn_memset_d32_async MemsetD32Async;
	PFN_cuStreamCreate StreamCreate;
	PFN_cuStreamSynchronize StreamSynchronize;
	PFN_cuStreamDestroy StreamDestroy;
	PFN_cuGetErrorName GetErrorName;
	PFN_cuModuleGetGlobal ModuleGetGlobal;
	PFN_cuLibraryGetGlobal LibraryGetGlobal;	/* NULL before CUDA 12.0 */
	PFN_cuFuncGetName FuncGetName;			/* NULL before CUDA 12.3 */
	PFN_cuFuncGetAttribute FuncGetAttribute;	/* NULL: no flat twin runs */
	PFN_cuKernelGetAttribute KernelGetAttribute;	/* NULL before CUDA 12.0 */
	PFN_cuKernelGetName KernelGetName;		/* NULL before CUDA 12.3 */
	PFN_cuThreadExchangeStreamCaptureMode ThreadExchangeStreamCaptureMode; /* 10.1+ */
	PFN_cuStreamIsCapturing StreamIsCapturing, StreamIsCapturing_ptsz;	/* 10.0+ */
	PFN_cuGraphGetNodes GraphGetNodes;					/* 10.0+ */
	PFN_cuGraphNodeGetType GraphNodeGetType;				/* 10.0+ */
	PFN_cuGraphKernelNodeGetParams GraphKernelNodeGetParams;		/* _v2: 12.0+ */
	PFN_cuGraphChildGraphNodeGetGraph GraphChildGraphNodeGetGraph;		/* 10.0+ */
	/* The clock calibration kernel (nv_launch.c): the real ones, never our wrappers. */
	PFN_cuModuleLoadData ModuleLoadData;
	PFN_cuModuleGetFunction ModuleGetFunction;
	PFN_cuModuleUnload ModuleUnload;
	PFN_cuLaunchKernel LaunchKernel;
};

/*
 * Our own copies and allocations must not break an app's stream capture: in
 * the default (global) capture mode "potentially unsafe" calls from any
 * thread invalidate it. Around them the calling thread is switched to
 * relaxed mode, and back. Returns the previous mode (-1: not switched).
 */
int nv_capture_relax(const struct nv_api *cu);
void nv_capture_restore(const struct nv_api *cu, int old);

/* "CUDA_ERROR_OUT_OF_MEMORY" or "CUDA error 2". @buf holds the fallback. */
const char *nv_cu_name(const struct nv_api *cu, CUresult r, char *buf, size_t len);

/* ---- one shared-memory map of `gpuext trace` (core/maps_impl.h layout) -- */

/* Opened read-write in this process; owned by struct nv_maps. */
struct nv_shm {
	char name[136];			/* "/gpuext.<pid>.<id>" (pack shm + a leading /) */
	void *base;			/* mmap of the whole file */
	size_t len;
	uint8_t *values;		/* array values or ring data */
	uint32_t type, key_size, value_size, max_entries;
	uint32_t stride;		/* value_size rounded up to 8 */
	uint32_t nr_slots;		/* of the shm map (per-CPU slots per key) */
	uint64_t host_drops;		/* ring: records the shm ring had no room for */
	uint64_t records;		/* ring: records written */
};

/*
 * Opens the shm map @pm->shm and checks that it is the map the pack
 * describes (type, key/value size, entries). -errno with the reason in @err.
 */
int nv_shm_open(struct nv_shm *m, const struct gx_pack_map *pm, char *err, size_t err_len);
void nv_shm_close(struct nv_shm *m);
/* Array maps: bytes of the value area (max_entries x nr_slots x stride). */
size_t nv_shm_values_size(const struct nv_shm *m);
/* Array maps: a consistent copy of / a seqcount-guarded write of all values. */
void nv_shm_read_values(struct nv_shm *m, void *out);
void nv_shm_write_values(struct nv_shm *m, const void *values);
/* Ring maps: one record, as a producer of the shm ring. 0, -EAGAIN (full), -EINVAL. */
int nv_shm_ring_output(struct nv_shm *m, const void *data, uint32_t len);

/*
 * Hash maps (BPF_MAP_TYPE_HASH/LRU_HASH), changed in place (nv_shm.c): begin
 * takes the writers' lock and starts a write for readers, end publishes.
 * Between them, nv_shm_hash_apply() applies one context's change to one key:
 * @delta (may be NULL) added lane-wise into its value; @presence +1 (the key
 * appeared in the context's table) or -1 (it went) moves the element's
 * `refs`, and the key leaves when they reach 0. A key not in the map is
 * inserted with @full (unless @presence < 0; -E2BIG counted in host_drops
 * when the map is full). Keys go into core's buckets (gpuext_shm_hash).
 */
/* "array", "hash", ... for the map types the device supports; "unknown" else. */
const char *nv_map_type_name(uint32_t type);
void nv_shm_hash_begin(struct nv_shm *m);
int nv_shm_hash_apply(struct nv_shm *m, const void *key, const void *delta, const void *full,
		      int presence);
void nv_shm_hash_end(struct nv_shm *m);
/* The lane width values are added in: the value size's largest power-of-2 divisor up to 8. */
unsigned nv_value_lane(uint32_t value_size);
/* @out = @now - @then (@then NULL: 0), lane by lane as nv_shm_hash_apply adds, wrapping. */
void nv_value_sub(uint8_t *out, const uint8_t *now, const uint8_t *then, uint32_t value_size);
/* The device geometry of a hash map (codegen/ptx/ptx.h's layout). 0, -EINVAL, -E2BIG. */
int nv_hash_layout(uint32_t key_size, uint32_t value_size, uint32_t max_entries,
		   uint32_t *nr_buckets, uint32_t *bucket_size, size_t *bytes);

struct nv_dmap;

/*
 * Shards of a device ring of @bytes (a power of 2) on a GPU of @sms SMs whose
 * probes write records of up to @max_record bytes: the largest power of 2
 * <= @sms x 8 and <= 2048 whose shards hold at least 8 KiB and 2 R - 8
 * bytes, R = such a record with its 8-byte header (a record never wraps:
 * so an empty shard takes it wherever its position is); at least 1
 * (codegen/ptx/ptx.h has the layout). A ring too small for that `gpuext
 * trace` refuses.
 */
uint32_t nv_ring_shards(uint32_t bytes, int sms, uint32_t max_record);

/*
 * Places a ring of @bytes in device memory of the current context: headers
 * and data with cuMemAlloc (zeroed through @st), pinned staging of the same
 * size for the drain; fills @m and the ring fields of @d (base, aux,
 * max_entries = bytes per shard, nr_slots = shards). -EINVAL (size not a
 * power of 2 >= 16), -E2BIG, -EIO (a CUDA error, @r set).
 */
int nv_ring_place(const struct nv_api *cu, CUstream st, struct nv_dmap *m, uint32_t bytes,
		  int sms, uint32_t max_record, struct gpuext_ptx_map_desc *d, CUresult *r);

/*
 * One entry of the ring tidy kernel's table (nv_maps.c, gpuext_ring_tidy):
 * block i zeroes [a0, a0 + n0) and [a1, a1 + n1) (device addresses, n
 * multiples of 8), then writes cons to cons_addr (0: none). 48 bytes.
 */
struct nv_tidy_ent {
	uint64_t a0, n0, a1, n1, cons_addr, cons;
};
_Static_assert(sizeof(struct nv_tidy_ent) == 48 && offsetof(struct nv_tidy_ent, n1) == 24 &&
	       offsetof(struct nv_tidy_ent, cons_addr) == 32 && offsetof(struct nv_tidy_ent, cons) == 40,
	       "the layout gpuext_ring_tidy reads (nv_maps.c)");

/* A context's tidy kernel and its table: pinned staging, copied to tab_dev before a launch. */
struct nv_tidy {
	CUmodule mod;
	CUfunction fn;			/* NULL: drains zero with one call per range */
	struct nv_tidy_ent *tab;
	CUdeviceptr tab_dev;
	uint32_t cap;			/* entries; a ring of more shards drains by calls */
	bool warned;			/* a failed launch was said (once) */
};

/*
 * Loads the tidy kernel in the current context and maps a table of @cap
 * entries. 0, or -ENOSYS/-EIO with @why set (@t is then all 0: drains use
 * one call per range, which is slower, not wrong).
 */
int nv_tidy_init(const struct nv_api *cu, struct nv_tidy *t, uint32_t cap, char *why,
		 size_t why_len);
/* Its PTX (tests assemble it with ptxas). */
const char *nv_tidy_ptx(void);
/*
 * An L2 evict_last cache policy as this GPU encodes it: the current context
 * runs nv_l2keep_ptx()'s kernel (createpolicy) once on stream @st. 0 with
 * *@pol set, or -ENOSYS/-EIO with @why set and *@pol 0.
 */
int nv_l2keep_measure(const struct nv_api *cu, CUstream st, uint64_t *pol, char *why,
		      size_t why_len);
const char *nv_l2keep_ptx(void);

/*
 * Moves the committed records of device ring @m (current context) into @out:
 * shard after shard (order is kept within a shard, that is within an SM),
 * each in reservation order up to its first record not yet committed
 * (header BUSY, or 0: reserved, not written). Everything goes through
 * copies on @st (the app's streams are never waited for): the headers, the
 * reserved range of each shard, the committed part once more (a copy
 * engine reads a range in no defined order, so only a copy that starts
 * after the commit was seen is sure to hold the whole payload), then the
 * consumed bytes are zeroed on the device and only after that the new
 * cons is written: the device cannot reuse space before it reads 0 again.
 * Copies of neighbouring shards merge into one; the zeroing and the cons
 * writes of all shards are one launch of @t's tidy kernel (@t NULL, no
 * kernel, or a launch that fails: one call per range and per cons, in
 * stream order, each shard published just before its calls). A corrupt header (length past the shard or the producer)
 * drops the rest of that shard (zeroed, counted in out->host_drops).
 * Records @out has no room for count in out->host_drops. *@moved (may be
 * NULL) gets the records published; m->ring_drops the device drop count
 * (all shards). 0 or -EIO (a CUDA error: the shards not consumed are not
 * published either, so the next drain takes them whole).
 */
int nv_ring_drain(const struct nv_api *cu, CUstream st, struct nv_dmap *m, struct nv_tidy *t,
		  struct nv_shm *out, uint64_t *moved);

/*
 * Adds (@now - @base) into @acc lane by lane: values are @value_size bytes,
 * every @src_stride bytes in @now and @base (the device's layout) and every
 * @dst_stride in @acc (the shm map's), summed as 8/4/2/1-byte little-endian
 * lanes (the widest dividing value_size), wrapping. @src_slots values per key are
 * folded into @dst_slots (slot s adds into s % dst_slots); a value equal
 * in @now and @base adds nothing and is not read lane by lane. The sum of
 * deltas over GPUs is exact for counters; where one GPU alone changes a
 * value, the result is its value whatever it holds.
 */
void nv_fold_values(uint8_t *acc, uint32_t dst_slots, uint32_t dst_stride, const uint8_t *now,
		    const uint8_t *base, uint32_t src_slots, uint32_t src_stride, uint32_t entries,
		    uint32_t value_size);
/*
 * The shm map's array values (@entries x @slots, @shm_stride apart) laid out
 * for the device (@dev_stride apart) into @dev: what a context uploads.
 */
void nv_array_to_device(uint8_t *dev, uint32_t dev_stride, const uint8_t *shm, uint32_t shm_stride,
			uint32_t entries, uint32_t slots, uint32_t value_size);

/* ---- device maps of every context ---------------------------------------- */

/* One pack map in one context. */
struct nv_dmap {
	size_t bytes;			/* array, hash: device bytes; ring: data bytes (all shards) */
	uint32_t nr_buckets, bucket_size;	/* hash */
	uint32_t nr_shards, shard_bytes;	/* ring: codegen/ptx/ptx.h's layout */
	CUdeviceptr dptr;		/* array values / ring data of shard 0 (device address) */
	void *host;			/* pinned staging (ring: a copy of the data, same offsets) */
	struct gpuext_ptx_ringbuf_hdr *rh;	/* ring: pinned staging of the aux block (headers,
						 * drop counters: gpuext_ptx_rb_aux_bytes) */
	CUdeviceptr rh_dev;		/* ring: the aux block on the device */
	uint64_t ring_drops;		/* ring: device drops (all shards) at the last drain */
	uint8_t *init;			/* array, hash: the image uploaded */
	uint8_t *last;			/* array, hash: last snapshot; kept after the context dies */
	uint8_t *pub;			/* array, hash: the snapshot whose change the shm map holds
					 * (init's memory: the upload at first) */
	uint8_t *scratch;		/* hash: a value's change, then a bit per bucket (hash_publish) */
	bool have_last;
};

/* %globaltimer - CLOCK_REALTIME of one context's GPU (nv_launch.c). */
struct nv_clock {
	int64_t offset_ns;
	uint64_t uncertainty_ns;	/* the offset is within +- this */
	uint32_t rounds;		/* round trips measured */
	uint64_t cost_ns;		/* wall time the calibration took */
};

/* Per CUDA context; lives until process exit (dead ones keep their last values). */
struct nv_ctx {
	CUcontext ctx;
	CUdevice dev;
	int ordinal;			/* the process's CUDA device number; -1 unknown */
	/*
	 * The system's number of the GPU (nv_gpu_rank(): as nvidia-smi numbers
	 * it), what the probes (gpuext_rt_gpu_id) and records carry; the
	 * ordinal when it cannot be had (said once); -1 unknown.
	 */
	int gpu;
	unsigned sm;			/* compute capability x 10 + y */
	CUstream stream;		/* ours: non-blocking, for every copy we make */
	bool dead;			/* destroyed: only ->last is used */
	bool broken;			/* setting up failed: probes see no maps */
	struct gpuext_ptx_map_desc desc[GX_PACK_MAX_MAPS];
	struct nv_dmap m[GX_PACK_MAX_MAPS];
	struct nv_tidy tidy;		/* rings: the drain's tidy kernel (nv_tidy_init) */
	uint64_t l2keep;		/* the probes' L2 policy (nv_l2keep_measure); 0: none */
	/* 0 not calibrated, 1 in progress, 2 ->clock valid, 3 failed (preload only). */
	_Atomic int clock_state;
	struct nv_clock clock;
	struct nv_ctx *next;
};

/*
 * Every device map of the process. Owned by the preload state; @lock
 * serialises context setup, teardown and mirroring (a context is never
 * destroyed under a copy).
 */
struct nv_maps {
	const struct nv_api *cu;
	const struct gx_pack *pack;
	struct nv_shm shm[GX_PACK_MAX_MAPS];
	uint8_t *shm_init[GX_PACK_MAX_MAPS];	/* arrays: shm values at attach, what contexts upload */
	bool placed[GX_PACK_MAX_MAPS];		/* false: not on the device (type) */
	pthread_mutex_t lock;
	struct nv_ctx *ctxs;
	/* mirror thread */
	pthread_t thread;
	bool thread_started;
	bool stop;
	pthread_cond_t cond;
	unsigned interval_ms;
	void (*tick)(void *user);	/* called each round (launch records flush) */
	const char *gpu_list;		/* nv_gpu_rank()'s directories; NULL: GPU ids are ordinals */
	uint64_t gpu_said;		/* devices (bit ordinal % 64) whose id fell back, said */
	_Atomic bool dirty;		/* a kernel was launched since the last mirror began */
	void *tick_user;
	uint64_t dev_drops[GX_PACK_MAX_MAPS];	/* ring: device drop counters seen */
	uint64_t dead_drops[GX_PACK_MAX_MAPS];	/* ring: of contexts that are gone */
};

int nv_maps__init(struct nv_maps *mm, const struct gx_pack *pack, const struct nv_api *cu,
		  char *err, size_t err_len);
/* The L2 policy a live context of GPUs of @sm measured (x->l2keep), or 0. */
uint64_t nv_maps__l2keep(struct nv_maps *mm, unsigned sm);
/* The state of context @c, set up (maps allocated) on first sight. NULL: no memory. */
struct nv_ctx *nv_maps__ctx(struct nv_maps *mm, CUcontext c);
/* Writes @x's descriptors into a module's gpuext_rt_maps (@table, @size bytes). */
int nv_maps__fill(struct nv_maps *mm, struct nv_ctx *x, CUdeviceptr table, size_t size);
/* Copies device maps back into the shm maps and drains the rings. */
void nv_maps__mirror(struct nv_maps *mm);
/* Context @c is about to go away: last snapshot, then it is dead. */
void nv_maps__ctx_gone(struct nv_maps *mm, CUcontext c);
/* Context @c went away without notice (primary context found inactive). */
void nv_maps__ctx_lost(struct nv_maps *mm, CUcontext c);
int nv_maps__start(struct nv_maps *mm);
void nv_maps__stop(struct nv_maps *mm);
/*
 * "ring 'events': 10 records, 0 dropped on the device (ring full), 0 dropped
 * on the host (shm ring full)" per ring map; @drops_only: only rings that
 * dropped, prefixed "gpuext-nvprobe: " (for the app's stderr).
 */
void nv_maps__report(struct nv_maps *mm, int fd, bool drops_only);

#endif

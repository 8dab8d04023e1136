/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libgpuext-nvprobe.so: LD_PRELOAD'ed into an unmodified CUDA application by
 * `gpuext trace`; splices the pack's probes into every module the app loads.
 *
 * How calls reach us (README.md has the longer story):
 *   - apps and libraries linked against libcuda call our exported cu*
 *     symbols: a preloaded object comes first in the global lookup scope;
 *   - the CUDA runtime (libcudart.so and nvcc's default static cudart),
 *     PyTorch, CuPy, numba: dlopen("libcuda.so.1") + dlsym(handle,
 *     "cuGetProcAddress_v2"), then every entry point through
 *     cuGetProcAddress. dlsym with a handle skips the global scope, so we
 *     export dlsym itself: names not starting with "cu" go straight (a
 *     sibling call, so glibc still sees the caller's return address for
 *     RTLD_NEXT) to the real dlsym, found with dlvsym(RTLD_NEXT, "dlsym",
 *     GLIBC_x); for cu* names we return our wrapper when the real answer is
 *     libcuda's function. Our cuGetProcAddress(_v2) asks the real one, and
 *     when the pointer it hands out is the driver's export of a function we
 *     interpose (any version: _v2, _v3, _ptsz) gives our wrapper of that
 *     exact export instead; a pointer we do not know is matched by name and
 *     CUDA version (nv_pick_version).
 * Each wrapper calls the real export it stands for, so signatures always match.
 *
 * This file holds that plumbing, the context hooks and setup/teardown;
 * module loads are in nv_load.c, launches in nv_launch.c, maps in nv_maps.c.
 *
 * Nothing here may crash the app: without GPUEXT_TRACE_DIR or with a bad
 * pack we print one line and pass every call through untouched.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nv_preload.h"
#include "nv_util.h"

struct nv_real real;
struct nv_state g = {
	.once = PTHREAD_ONCE_INIT,
	.kernels_fd = -1,
	.launches_fd = -1,
	.hlock = PTHREAD_RWLOCK_INITIALIZER,
	.llock = PTHREAD_MUTEX_INITIALIZER,
	.l2lock = PTHREAD_MUTEX_INITIALIZER,
	.gexec_lock = PTHREAD_MUTEX_INITIALIZER,
};

static void nv_init(void);

/*
 * Set while this thread runs nv_init: loading libcuda may call back into our
 * dlsym, and pthread_once would then wait for itself.
 */
static __thread bool tl_in_init;

void nv_ensure_init(void)
{
	if (!tl_in_init)
		pthread_once(&g.once, nv_init);
}

bool nv_active(void)
{
	nv_ensure_init();
	return !tl_in_init && atomic_load_explicit(&g.active, memory_order_acquire);
}

/* ------------------------------------------------------------------ */
/* dlsym: the real one, and ours                                        */
/* ------------------------------------------------------------------ */

typedef void *(*dlsym_fn)(void *, const char *);
static _Atomic(dlsym_fn) real_dlsym;

/*
 * dlsym runs before anything else is set up: sanitizer runtimes call it
 * while initialising, before their shadow memory exists, so the path up to
 * the real dlsym must not be instrumented.
 */
#define NV_EARLY __attribute__((no_sanitize_address))

static NV_EARLY dlsym_fn boot_dlsym(void)
{
	static const char *const vers[] = { "GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.0" };
	dlsym_fn f = NULL;

	for (size_t i = 0; i < sizeof(vers) / sizeof(vers[0]) && !f; i++)
		f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", vers[i]);
	if (!f) {
		/* Not glibc: nothing sane to forward to. */
		static const char msg[] = PFX "cannot find the C library's dlsym; aborting\n";

		if (write(2, msg, sizeof(msg) - 1) < 0)
			abort();
		abort();
	}
	atomic_store_explicit(&real_dlsym, f, memory_order_release);
	return f;
}

static void *sym(const char *name)
{
	dlsym_fn f = atomic_load_explicit(&real_dlsym, memory_order_acquire);

	if (!f)
		f = boot_dlsym();
	return g.libcuda ? f(g.libcuda, name) : NULL;
}

static void *wrap_symbol(const char *name, void *p);
static void *dlsym_cu(void *handle, const char *name);

/*
 * Both returns must be sibling calls (a jump), so that glibc sees our
 * caller's return address and RTLD_NEXT keeps its meaning. clang can be
 * told so (musttail fails the build otherwise); gcc gets the optimisation
 * forced on this function, even in -O0 builds. tests/test_nv_preload.c
 * checks the result ("rtld_next ok").
 */
#if defined(__clang__)
#define NV_TAILCALL __attribute__((musttail))
#define NV_SIBCALLS
#else
#define NV_TAILCALL
#define NV_SIBCALLS __attribute__((optimize("O2", "optimize-sibling-calls", "omit-frame-pointer")))
#endif

EXPORT NV_SIBCALLS NV_EARLY void *dlsym(void *handle, const char *name)
{
	dlsym_fn f = atomic_load_explicit(&real_dlsym, memory_order_acquire);

	if (__builtin_expect(!f, 0))
		f = boot_dlsym();
	if (name[0] != 'c' || name[1] != 'u')
		NV_TAILCALL return f(handle, name);
	NV_TAILCALL return dlsym_cu(handle, name);
}

static __attribute__((noinline)) void *dlsym_cu(void *handle, const char *name)
{
	dlsym_fn f = atomic_load_explicit(&real_dlsym, memory_order_acquire);
	void *p;

	/* Our callers' RTLD_NEXT would mean "after this library": ask libcuda instead. */
	if (handle == RTLD_NEXT) {
		nv_ensure_init();
		handle = g.libcuda;
		if (!handle)
			return NULL;
	}
	p = f(handle, name);
	if (!p)
		return p;
	return wrap_symbol(name, p);
}

/* ------------------------------------------------------------------ */
/* Small helpers                                                        */
/* ------------------------------------------------------------------ */

uint64_t nv_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void nv_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (fd >= 0 && len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

/* ------------------------------------------------------------------ */
/* Contexts                                                             */
/* ------------------------------------------------------------------ */

static void ctx_created(CUresult r, CUcontext c)
{
	if (r == CUDA_SUCCESS && c && nv_active() && nv_maps__ctx(&g.maps, c)) {
		nv_maps__start(&g.maps);
		nv_exit_rearm();
	}
}

EXPORT CUresult cuCtxCreate(CUcontext *c, unsigned flags, CUdevice dev)
{
	CUresult r;

	REAL_OR_FAIL(cuCtxCreate);
	r = real.cuCtxCreate(c, flags, dev);
	ctx_created(r, c ? *c : NULL);
	return r;
}

EXPORT CUresult cuCtxCreate_v2(CUcontext *c, unsigned flags, CUdevice dev)
{
	CUresult r;

	REAL_OR_FAIL(cuCtxCreate_v2);
	r = real.cuCtxCreate_v2(c, flags, dev);
	ctx_created(r, c ? *c : NULL);
	return r;
}

EXPORT CUresult cuCtxCreate_v3(CUcontext *c, void *aff, int naff, unsigned flags, CUdevice dev)
{
	CUresult r;

	REAL_OR_FAIL(cuCtxCreate_v3);
	r = real.cuCtxCreate_v3(c, aff, naff, flags, dev);
	ctx_created(r, c ? *c : NULL);
	return r;
}

EXPORT CUresult cuCtxCreate_v4(CUcontext *c, void *params, unsigned flags, CUdevice dev)
{
	CUresult r;

	REAL_OR_FAIL(cuCtxCreate_v4);
	r = real.cuCtxCreate_v4(c, params, flags, dev);
	ctx_created(r, c ? *c : NULL);
	return r;
}

static void ctx_going(CUcontext c)
{
	if (c && nv_active())
		nv_maps__ctx_gone(&g.maps, c);
}

EXPORT CUresult cuCtxDestroy(CUcontext c)
{
	REAL_OR_FAIL(cuCtxDestroy);
	ctx_going(c);
	return real.cuCtxDestroy(c);
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext c)
{
	REAL_OR_FAIL(cuCtxDestroy_v2);
	ctx_going(c);
	return real.cuCtxDestroy_v2(c);
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice dev)
{
	CUresult r;

	REAL_OR_FAIL(cuDevicePrimaryCtxRetain);
	r = real.cuDevicePrimaryCtxRetain(c, dev);
	ctx_created(r, c ? *c : NULL);
	return r;
}

/*
 * Release destroys the primary context when the last reference goes, and
 * Reset always does: snapshot first, then ask the driver whether it lives.
 */
static CUresult primary_release(PFN_cuDevicePrimaryCtxRelease fn, CUdevice dev, bool reset)
{
	CUcontext c = NULL;
	unsigned flags = 0;
	int on = 1;
	CUresult r;

	if (!nv_active())
		return fn(dev);
	if (real.cuDevicePrimaryCtxRetain && real.cuDevicePrimaryCtxRelease_v2 &&
	    g.cu.DevicePrimaryCtxGetState && g.cu.DevicePrimaryCtxGetState(dev, &flags, &on) ==
	    CUDA_SUCCESS && on && real.cuDevicePrimaryCtxRetain(&c, dev) == CUDA_SUCCESS) {
		real.cuDevicePrimaryCtxRelease_v2(dev);	/* only to learn the handle */
		nv_maps__mirror(&g.maps);
	} else {
		c = NULL;
	}
	r = fn(dev);
	if (r == CUDA_SUCCESS && c) {
		on = 0;
		if (reset || !g.cu.DevicePrimaryCtxGetState ||
		    g.cu.DevicePrimaryCtxGetState(dev, &flags, &on) != CUDA_SUCCESS || !on)
			nv_maps__ctx_lost(&g.maps, c);
	}
	return r;
}

EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	REAL_OR_FAIL(cuDevicePrimaryCtxRelease);
	return primary_release(real.cuDevicePrimaryCtxRelease, dev, false);
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	REAL_OR_FAIL(cuDevicePrimaryCtxRelease_v2);
	return primary_release(real.cuDevicePrimaryCtxRelease_v2, dev, false);
}

EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
	REAL_OR_FAIL(cuDevicePrimaryCtxReset);
	return primary_release(real.cuDevicePrimaryCtxReset, dev, true);
}

EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	REAL_OR_FAIL(cuDevicePrimaryCtxReset_v2);
	return primary_release(real.cuDevicePrimaryCtxReset_v2, dev, true);
}

/* ------------------------------------------------------------------ */
/* cuGetProcAddress and the hook table                                  */
/* ------------------------------------------------------------------ */

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int ver, cuuint64_t flags);
EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int ver, cuuint64_t flags,
				    int *status);

struct hook {
	void *wrapper;
	void **real;
};

#define HOOK_VER(n, b, s, pt) { #n, #b, s, pt },
#define HOOK_PTR(n, b, s, pt) { (void *)n, (void **)&real.n },
static const struct nv_hook_ver hook_vers[] = { NV_HOOKS(HOOK_VER) };
static const struct hook hooks[] = { NV_HOOKS(HOOK_PTR) };
#define NR_HOOKS (sizeof(hooks) / sizeof(hooks[0]))

/* Our wrapper for the driver function @p, if we interpose it. */
static void *wrapper_of(void *p)
{
	for (size_t i = 0; i < NR_HOOKS; i++)
		if (*hooks[i].real == p)
			return hooks[i].wrapper;
	return NULL;
}

static bool is_wrapper(void *p)
{
	for (size_t i = 0; i < NR_HOOKS; i++)
		if (hooks[i].wrapper == p)
			return true;
	return false;
}

static void *wrap_symbol(const char *name, void *p)
{
	void *w;

	if (!nv_active() || is_wrapper(p))
		return p;
	w = wrapper_of(p);
	(void)name;
	return w ? w : p;
}

static void *wrap_proc(const char *symbol, void *p, int ver, cuuint64_t flags)
{
	const struct nv_hook_ver *v;
	void *w;

	if (!p || !nv_active() || is_wrapper(p))
		return p;
	w = wrapper_of(p);
	if (w)
		return w;
	/* A driver pointer that is not its export (a private entry): match by name. */
	v = nv_pick_version(hook_vers, NR_HOOKS, symbol, ver, flags);
	if (!v)
		return p;
	for (size_t i = 0; i < NR_HOOKS; i++)
		if (&hook_vers[i] == v && *hooks[i].real)
			return hooks[i].wrapper;
	return p;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int ver, cuuint64_t flags)
{
	CUresult r;

	REAL_OR_FAIL(cuGetProcAddress);
	r = real.cuGetProcAddress(symbol, pfn, ver, flags);
	if (r == CUDA_SUCCESS && pfn && symbol)
		*pfn = wrap_proc(symbol, *pfn, ver, flags);
	return r;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int ver, cuuint64_t flags,
				    int *status)
{
	CUresult r;

	REAL_OR_FAIL(cuGetProcAddress_v2);
	r = real.cuGetProcAddress_v2(symbol, pfn, ver, flags, status);
	if (r == CUDA_SUCCESS && pfn && symbol)
		*pfn = wrap_proc(symbol, *pfn, ver, flags);
	return r;
}

/* ------------------------------------------------------------------ */
/* Setup and teardown                                                   */
/* ------------------------------------------------------------------ */

static void tick(void *user)
{
	(void)user;
	nv_flush_launches();
}

static void nv_exit(void)
{
	char path[PATH_MAX + 32];
	int fd;

	if (!atomic_load(&g.active) || atomic_exchange(&g.exited, true))
		return;
	nv_maps__stop(&g.maps);
	nv_maps__mirror(&g.maps);
	nv_flush_launches();
	nv_maps__report(&g.maps, 2, true);
	snprintf(path, sizeof(path), "%s/nvprobe-%u.txt", g.dir, g.pid);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		nv_maps__report(&g.maps, fd, false);
		dprintf(fd, "splice cache: %u modules from the cache, %u spliced\n",
			atomic_load(&g.splice_hits), atomic_load(&g.splices));
		dprintf(fd, "flat twins: %llu launches ran a kernel's flat twin, %llu the kernel "
			"(hal/nvidia/ptx_twin.c)\n",
			(unsigned long long)atomic_load(&g.twin_launches),
			(unsigned long long)atomic_load(&g.kernel_launches));
		pthread_mutex_lock(&g.l2lock);
		for (unsigned i = 0; i < g.l2n; i++)
			dprintf(fd, "L2 policy 0x%016llx: on %u map atomics of the probes\n",
				(unsigned long long)g.l2pol[i], g.l2cnt[i]);
		if (!g.l2n)
			dprintf(fd, "L2 policy: none\n");
		pthread_mutex_unlock(&g.l2lock);
		close(fd);
	}
}

/*
 * atexit handlers run last-registered first. We initialise at the app's first
 * CUDA lookup, which for the CUDA runtime (static or shared) is before its
 * cuInit: the driver's and cudart's own teardown, registered later, then ran
 * before our last mirror and it found every context gone (GPU run 3: arrays
 * read 0 at exit). So nv_exit is registered again once a context exists and at
 * the first launches, after whatever the driver and runtime registered by
 * then; the first of the registrations to run does the work.
 */
void nv_exit_rearm(void)
{
	if (atomic_load_explicit(&g.rearmed, memory_order_relaxed) >= 4 ||
	    atomic_fetch_add(&g.rearmed, 1) >= 4)
		return;
	atexit(nv_exit);
}

/*
 * A mirror on the app's thread after it waited for the GPU: the values are
 * then current even if the process dies without running atexit handlers
 * (_exit, a signal) or its teardown takes the contexts down a way we do not
 * see. Only when kernels ran since the last mirror, and rationed: at most
 * every 2 ms, and at most g.sync_share percent of the thread's time by the
 * last one's cost (the mirror thread and the exit mirror catch what a
 * skipped call left). Without the ration a ring tool cost the app far more
 * than its kernels' slowdown: on an H100, the wall time of a synchronized
 * stencil step was 9.0x under kernelretsnoop (1.07x on the GPU), each drain
 * of its 512 shards taking ~11 ms, and a memtrace step 819x.
 */
/*
 * Percent; GPUEXT_NV_SYNC_SHARE sets it (0: no sync mirrors). 1 rather than 2:
 * A/B on an H100, two rounds each, wall time of a synchronized rep, 2% -> 1%:
 * launchlate on a decode step 1.049-1.053x -> 1.025x and on a stencil
 * 1.025-1.038x -> 1.018-1.019x; kerneldur 1.030-1.038x -> 1.028-1.031x and
 * 1.038-1.043x -> 1.032-1.035x; GPU time unchanged.
 */
#define NV_SYNC_SHARE_DEFAULT 1

void nv_sync_mirror(void)
{
	uint64_t now, last, gap;
	int mode;

	if (!atomic_load_explicit(&g.maps.dirty, memory_order_relaxed) || !nv_active() ||
	    atomic_load(&g.exited))
		return;
	if (!g.sync_share)
		return;
	now = nv_now_ns();
	last = atomic_load_explicit(&g.sync_mirror_ns, memory_order_relaxed);
	gap = nv_sync_gap_ns(atomic_load_explicit(&g.sync_mirror_cost_ns, memory_order_relaxed),
			     g.sync_share);
	if (now - last < gap || !atomic_compare_exchange_strong(&g.sync_mirror_ns, &last, now))
		return;
	mode = nv_capture_relax(&g.cu);
	nv_maps__mirror(&g.maps);
	nv_capture_restore(&g.cu, mode);
	atomic_store_explicit(&g.sync_mirror_cost_ns, nv_now_ns() - now, memory_order_relaxed);
}

EXPORT CUresult cuCtxSynchronize(void)
{
	CUresult r;

	REAL_OR_FAIL(cuCtxSynchronize);
	r = real.cuCtxSynchronize();
	if (r == CUDA_SUCCESS)
		nv_sync_mirror();
	return r;
}

EXPORT CUresult cuStreamSynchronize(CUstream s)
{
	CUresult r;

	REAL_OR_FAIL(cuStreamSynchronize);
	r = real.cuStreamSynchronize(s);
	if (r == CUDA_SUCCESS)
		nv_sync_mirror();
	return r;
}

EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s)
{
	CUresult r;

	REAL_OR_FAIL(cuStreamSynchronize_ptsz);
	r = real.cuStreamSynchronize_ptsz(s);
	if (r == CUDA_SUCCESS)
		nv_sync_mirror();
	return r;
}

EXPORT CUresult cuEventSynchronize(CUevent e)
{
	CUresult r;

	REAL_OR_FAIL(cuEventSynchronize);
	r = real.cuEventSynchronize(e);
	if (r == CUDA_SUCCESS)
		nv_sync_mirror();
	return r;
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
	CUresult r;

	REAL_OR_FAIL(cuMemcpyDtoH_v2);
	r = real.cuMemcpyDtoH_v2(dst, src, n);
	if (r == CUDA_SUCCESS)
		nv_sync_mirror();
	return r;
}

EXPORT CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n)
{
	CUresult r;

	REAL_OR_FAIL(cuMemcpyDtoH_v2_ptds);
	r = real.cuMemcpyDtoH_v2_ptds(dst, src, n);
	if (r == CUDA_SUCCESS)
		nv_sync_mirror();
	return r;
}

EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	CUresult r;

	REAL_OR_FAIL(cuMemcpy);
	r = real.cuMemcpy(dst, src, n);
	if (r == CUDA_SUCCESS)
		nv_sync_mirror();
	return r;
}

EXPORT CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	CUresult r;

	REAL_OR_FAIL(cuMemcpy_ptds);
	r = real.cuMemcpy_ptds(dst, src, n);
	if (r == CUDA_SUCCESS)
		nv_sync_mirror();
	return r;
}

/* A forked child has none of our threads, and CUDA does not survive fork. */
static void at_fork_child(void)
{
	atomic_store(&g.active, false);
	g.maps.thread_started = false;
}

static bool resolve_api(void)
{
	static const struct {
		size_t off;
		const char *name;
		bool optional;
	} api[] = {
#define API(f, n, opt) { offsetof(struct nv_api, f), n, opt }
		API(Init, "cuInit", false),
		API(DriverGetVersion, "cuDriverGetVersion", false),
		API(DeviceGetCount, "cuDeviceGetCount", false),
		API(DeviceGet, "cuDeviceGet", false),
		API(DeviceGetAttribute, "cuDeviceGetAttribute", false),
		API(DeviceGetPCIBusId, "cuDeviceGetPCIBusId", true),
		API(CtxGetCurrent, "cuCtxGetCurrent", false),
		API(CtxGetDevice, "cuCtxGetDevice", false),
		API(CtxPushCurrent, "cuCtxPushCurrent_v2", false),
		API(CtxPopCurrent, "cuCtxPopCurrent_v2", false),
		API(DevicePrimaryCtxGetState, "cuDevicePrimaryCtxGetState", true),
		API(MemAlloc, "cuMemAlloc_v2", false),
		API(MemFree, "cuMemFree_v2", false),
		API(MemHostAlloc, "cuMemHostAlloc", false),
		API(MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", false),
		API(MemFreeHost, "cuMemFreeHost", false),
		API(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", false),
		API(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", false),
		API(MemsetD32Async, "cuMemsetD32Async", true),
		API(StreamCreate, "cuStreamCreate", false),
		API(StreamSynchronize, "cuStreamSynchronize", false),
		API(StreamDestroy, "cuStreamDestroy_v2", false),
		API(GetErrorName, "cuGetErrorName", false),
		API(ModuleGetGlobal, "cuModuleGetGlobal_v2", false),
		API(LibraryGetGlobal, "cuLibraryGetGlobal", true),
		API(FuncGetName, "cuFuncGetName", true),
		API(FuncGetAttribute, "cuFuncGetAttribute", true),
		API(KernelGetAttribute, "cuKernelGetAttribute", true),
		API(KernelGetName, "cuKernelGetName", true),
		API(ThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode", true),
		API(StreamIsCapturing, "cuStreamIsCapturing", true),
		API(StreamIsCapturing_ptsz, "cuStreamIsCapturing_ptsz", true),
		API(GraphGetNodes, "cuGraphGetNodes", true),
		API(GraphNodeGetType, "cuGraphNodeGetType", true),
		API(GraphKernelNodeGetParams, "cuGraphKernelNodeGetParams_v2", true),
		API(GraphChildGraphNodeGetGraph, "cuGraphChildGraphNodeGetGraph", true),
		API(ModuleLoadData, "cuModuleLoadData", false),
		API(ModuleGetFunction, "cuModuleGetFunction", false),
		API(ModuleUnload, "cuModuleUnload", false),
		API(LaunchKernel, "cuLaunchKernel", false),
#undef API
	};

	for (size_t i = 0; i < NR_HOOKS; i++)
		*hooks[i].real = sym(hook_vers[i].name);
	for (size_t i = 0; i < sizeof(api) / sizeof(api[0]); i++) {
		void *p = sym(api[i].name);

		if (!p && !api[i].optional) {
			fprintf(stderr, PFX "libcuda.so.1 lacks %s (driver too old?): CUDA calls "
				"pass through untouched\n", api[i].name);
			return false;
		}
		memcpy((char *)&g.cu + api[i].off, &p, sizeof(p));
	}
	return true;
}

static int open_out(const char *name, int extra)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/%s", g.dir, name);
	return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | extra, 0644);
}

static void init_body(void)
{
	const char *dir = getenv("GPUEXT_TRACE_DIR");
	char err[512] = "";
	int e;

	g.pid = (unsigned)getpid();
	if (!atomic_load(&real_dlsym))
		boot_dlsym();
	g.libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
	if (!g.libcuda)
		g.libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!g.libcuda) {
		fprintf(stderr, PFX "cannot load libcuda.so.1 (%s): nothing to trace\n", dlerror());
		return;
	}
	if (!resolve_api())
		return;
	if (!dir || !dir[0]) {
		fprintf(stderr, PFX "GPUEXT_TRACE_DIR is not set: CUDA calls pass through "
			"untouched (run the app under `gpuext trace`)\n");
		return;
	}
	snprintf(g.dir, sizeof(g.dir), "%s", dir);
	e = gx_pack_read(g.dir, &g.pack, err, sizeof(err));
	if (e) {
		fprintf(stderr, PFX "cannot use the probe pack in %s: %s: CUDA calls pass through "
			"untouched\n", g.dir, err);
		return;
	}
	e = nv_maps__init(&g.maps, &g.pack, &g.cu, err, sizeof(err));
	if (e) {
		fprintf(stderr, PFX "%s: CUDA calls pass through untouched\n", err);
		gx_pack_free(&g.pack);
		return;
	}
	g.maps.tick = tick;
	/* Where the system's GPUs are listed (nv_gpu_rank); tests name their own. */
	if (getenv("GPUEXT_NV_GPU_LIST"))
		g.maps.gpu_list = strdup(getenv("GPUEXT_NV_GPU_LIST"));	/* kept to the end */
	if (!g.maps.gpu_list)
		g.maps.gpu_list = NV_GPU_LIST_DEFAULT;
	g.clock_sync = getenv("GPUEXT_CLOCK_SYNC") && !strcmp(getenv("GPUEXT_CLOCK_SYNC"), "1");
	/*
	 * A control for measuring: every module is JIT-compiled from its PTX as
	 * when instrumented, but unchanged, so "tool / jit-only" is the probes'
	 * own cost and "jit-only / native" the driver JIT's (bench/gpu).
	 */
	g.jit_only = getenv("GPUEXT_NV_JIT_ONLY") && !strcmp(getenv("GPUEXT_NV_JIT_ONLY"), "1");
	/*
	 * The share of an app thread's time the mirrors after its synchronizing
	 * calls may take (nv_sync_mirror): more keeps more ring records (drained
	 * sooner), at that cost in the app's wall time.
	 */
	g.sync_share = NV_SYNC_SHARE_DEFAULT;
	if (getenv("GPUEXT_NV_SYNC_SHARE")) {
		const char *str = getenv("GPUEXT_NV_SYNC_SHARE");
		char *end;
		long v = strtol(str, &end, 10);

		if (end == str || *end || v < 0 || v > 100)
			fprintf(stderr, PFX "GPUEXT_NV_SYNC_SHARE='%s' is not a percentage 0-100: "
				"using %d\n", str, NV_SYNC_SHARE_DEFAULT);
		else
			g.sync_share = (unsigned)v;
	}
	g.kernels_fd = open_out("kernels.txt", 0);
	g.launches_fd = open_out("launches.bin", 0);
	if (g.kernels_fd < 0 || g.launches_fd < 0) {
		fprintf(stderr, PFX "cannot write into %s (%s): CUDA calls pass through "
			"untouched\n", g.dir, strerror(errno));
		return;
	}
	pthread_atfork(NULL, NULL, at_fork_child);
	atexit(nv_exit);
	atomic_store_explicit(&g.active, true, memory_order_release);
}

/*
 * The driver's version and its devices' sm, asked the first time a module
 * is prepared (the app has initialised CUDA by then): never from inside
 * nv_init, where cuInit could wait for driver threads that call dlsym.
 */
static void probe_devices(void)
{
	CUdevice d;
	int count = 0, major = 0, minor = 0;

	if (g.cu.Init(0) != CUDA_SUCCESS)
		return;
	g.cu.DriverGetVersion(&g.driver_version);
	g.cu.DeviceGetCount(&count);
	g.uniform_sm = true;
	for (int i = 0; i < count; i++) {
		unsigned sm;

		if (g.cu.DeviceGet(&d, i) != CUDA_SUCCESS)
			continue;
		g.cu.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);
		g.cu.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);
		sm = (unsigned)(major * 10 + minor);
		if (i == 0)
			g.sm0 = sm;
		else if (sm != g.sm0)
			g.uniform_sm = false;
	}
}

void nv_devices(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, probe_devices);
}

static void nv_init(void)
{
	tl_in_init = true;
	init_body();
	tl_in_init = false;
}

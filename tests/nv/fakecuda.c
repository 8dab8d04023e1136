/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fake libcuda.so.1 for CI machines without a GPU: just enough of the
 * Driver API for libgpuext-nvprobe.so and tests/nv/fakeapp.c, with "device"
 * memory in host memory (a device pointer is a host address), modules that
 * remember the image they were given, a "JIT" of every spliced PTX a
 * module or library load is handed (logged as "jit LEN"; with
 * $FAKECUDA_JIT_FAIL it refuses spliced PTX with a log message, as a driver
 * refusing bad PTX does), and a log of what happened ($FAKECUDA_LOG, one line
 * per event) that tests/test_nv_preload.c checks; with $FAKECUDA_JIT_DUMP=DIR
 * every spliced PTX handed to the JIT is also written to DIR/jit-N.ptx.
 *
 * Deliberate quirk: cuGetProcAddress hands out a private entry (not the
 * export) for cuLaunchKernelEx, as a driver may, so that the preload
 * library's match-by-name path is exercised too.
 *
 * Never installed; knows nothing of the preload library.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nv_cuda.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_DEV 4
#define TABLE_BYTES 640		/* gpuext_rt_maps: 16 descriptors */

struct fctx {
	int dev;
	int alive;
	int primary;
};

struct fmod {
	char *text;		/* PTX (or the PTX inside a FAKECUBIN); NULL for an ELF */
	int elf;
	unsigned char *table;	/* gpuext_rt_maps, when the text declares it */
	unsigned char seed[8];
	unsigned char gpu_id[4];
};

struct ffunc {
	struct fmod *mod;
	char name[256];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct fctx primary[MAX_DEV];
static int primary_refs[MAX_DEV];
static __thread struct fctx *stack[16];
static __thread int depth;

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void ctx_free_all(struct fctx *x);

static void logf_(const char *fmt, ...)
{
	const char *path = getenv("FAKECUDA_LOG");
	va_list ap;
	FILE *f;

	if (!path)
		return;
	pthread_mutex_lock(&lock);
	f = fopen(path, "a");
	if (f) {
		va_start(ap, fmt);
		vfprintf(f, fmt, ap);
		va_end(ap);
		fputc('\n', f);
		fclose(f);
	}
	pthread_mutex_unlock(&lock);
}

static int ndev(void)
{
	const char *s = getenv("FAKECUDA_DEVICES");
	int n = s ? atoi(s) : 1;

	return n < 1 ? 1 : n > MAX_DEV ? MAX_DEV : n;
}

static int sm_of(int dev)
{
	const char *s = getenv("FAKECUDA_SM");

	(void)dev;
	return s ? atoi(s) : 90;
}

/*
 * FAKECUDA_ATEXIT_DEINIT: like the real driver under nvcc's static cudart,
 * cuInit registers a teardown at exit after which the driver answers
 * CUDA_ERROR_DEINITIALIZED (4): whoever mirrors device memory at exit must
 * run before it.
 */
static int deinit;

static void fake_deinit(void)
{
	deinit = 1;
}

EXPORT CUresult cuInit(unsigned flags)
{
	static int registered;

	(void)flags;
	if (getenv("FAKECUDA_ATEXIT_DEINIT") && !registered++)
		atexit(fake_deinit);
	return 0;
}

EXPORT CUresult cuCtxSynchronize(void)
{
	return deinit ? 4 : 0;
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
	*v = 13000;
	return 0;
}

EXPORT CUresult cuDeviceGetCount(int *n)
{
	*n = ndev();
	return 0;
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int i)
{
	if (i < 0 || i >= ndev())
		return CUDA_ERROR_INVALID_VALUE;
	*d = i;
	return 0;
}

EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
	switch (attr) {
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = sm_of(d) / 10; return 0;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = sm_of(d) % 10; return 0;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 8; return 0;
	default: *v = 0; return 0;
	}
}

/*
 * Device d's PCI address: the d-th of FAKECUDA_BUS_IDS (comma-separated),
 * else 0000:1D:00.0 + d (upper case, as the real driver writes hex).
 * FAKECUDA_BUS_ID_FAIL: CUDA_ERROR_NOT_FOUND.
 */
EXPORT CUresult cuDeviceGetPCIBusId(char *buf, int len, CUdevice d)
{
	const char *s = getenv("FAKECUDA_BUS_IDS");

	if (d < 0 || d >= ndev() || len < 13)
		return CUDA_ERROR_INVALID_VALUE;
	if (getenv("FAKECUDA_BUS_ID_FAIL"))
		return CUDA_ERROR_NOT_FOUND;
	if (!s) {
		snprintf(buf, (size_t)len, "0000:%02X:00.0", 0x1d + d);
		return 0;
	}
	for (int i = 0; i < d && s; i++) {
		s = strchr(s, ',');
		s = s ? s + 1 : NULL;
	}
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(buf, (size_t)len, "%.*s", (int)strcspn(s, ","), s);
	return 0;
}

EXPORT CUresult cuGetErrorName(CUresult r, const char **s)
{
	*s = r == 0 ? "CUDA_SUCCESS" : r == CUDA_ERROR_NOT_FOUND ? "CUDA_ERROR_NOT_FOUND" :
							      "CUDA_ERROR_FAKE";
	return 0;
}

/* ---- contexts ---- */

EXPORT CUresult cuCtxGetCurrent(CUcontext *c)
{
	*c = depth ? (CUcontext)stack[depth - 1] : NULL;
	return 0;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext c)
{
	if (!depth)
		depth = 1;
	stack[depth - 1] = (struct fctx *)c;
	if (!c)
		depth = 0;
	return 0;
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext c)
{
	if (deinit)
		return 4;
	if (depth == 16)
		return CUDA_ERROR_INVALID_VALUE;
	stack[depth++] = (struct fctx *)c;
	return 0;
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *c)
{
	if (!depth)
		return CUDA_ERROR_INVALID_CONTEXT;
	depth--;
	if (c)
		*c = (CUcontext)stack[depth];
	return 0;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *d)
{
	if (!depth || !stack[depth - 1])
		return CUDA_ERROR_INVALID_CONTEXT;
	*d = stack[depth - 1]->dev;
	return 0;
}

EXPORT CUresult cuCtxCreate_v2(CUcontext *c, unsigned flags, CUdevice dev)
{
	struct fctx *x = calloc(1, sizeof(*x));

	(void)flags;
	x->dev = dev;
	x->alive = 1;
	*c = (CUcontext)x;
	cuCtxPushCurrent_v2(*c);
	logf_("ctx_create %d", dev);
	return 0;
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext c)
{
	struct fctx *x = (struct fctx *)c;

	logf_("ctx_destroy %d", x ? x->dev : -1);
	for (int i = 0; i < depth; i++)
		if (stack[i] == x)
			stack[i] = NULL;
	/* Its memory goes with it: a later access is a use after free (ASan builds see it). */
	ctx_free_all(x);
	x->alive = 0;	/* the handle itself is leaked on purpose: stale handles must not crash */
	return 0;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice dev)
{
	pthread_mutex_lock(&lock);
	primary[dev].dev = dev;
	primary[dev].alive = 1;
	primary[dev].primary = 1;
	primary_refs[dev]++;
	pthread_mutex_unlock(&lock);
	*c = (CUcontext)&primary[dev];
	return 0;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	pthread_mutex_lock(&lock);
	if (primary_refs[dev] > 0 && --primary_refs[dev] == 0)
		primary[dev].alive = 0;
	pthread_mutex_unlock(&lock);
	return 0;
}

EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned *flags, int *active)
{
	*flags = 0;
	*active = primary[dev].alive;
	return 0;
}

/* ---- memory: freed with its context, as the real driver does ---- */

#define MAX_ALLOCS 1024
static struct {
	struct fctx *ctx;
	void *p;
} allocs[MAX_ALLOCS];

static void *ctx_alloc(size_t n)
{
	void *m = calloc(1, n ? n : 1);

	pthread_mutex_lock(&lock);
	for (int i = 0; m && i < MAX_ALLOCS; i++) {
		if (!allocs[i].p) {
			allocs[i].p = m;
			allocs[i].ctx = depth ? stack[depth - 1] : NULL;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return m;
}

static void ctx_free(void *m)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; m && i < MAX_ALLOCS; i++)
		if (allocs[i].p == m)
			allocs[i].p = NULL;
	pthread_mutex_unlock(&lock);
	free(m);
}

static void ctx_free_all(struct fctx *x)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < MAX_ALLOCS; i++) {
		if (allocs[i].p && allocs[i].ctx == x) {
			free(allocs[i].p);
			allocs[i].p = NULL;
		}
	}
	pthread_mutex_unlock(&lock);
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	void *m = ctx_alloc(n);

	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*p = (CUdeviceptr)(uintptr_t)m;
	return 0;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	ctx_free((void *)(uintptr_t)p);
	return 0;
}

EXPORT CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags)
{
	(void)flags;
	*p = ctx_alloc(n);
	return *p ? 0 : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *d, void *p, unsigned flags)
{
	(void)flags;
	*d = (CUdeviceptr)(uintptr_t)p;
	return 0;
}

EXPORT CUresult cuMemFreeHost(void *p)
{
	ctx_free(p);
	return 0;
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, CUstream st)
{
	(void)st;
	memcpy((void *)(uintptr_t)d, s, n);
	return 0;
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, CUstream st)
{
	(void)st;
	if (deinit)
		return 4;
	memcpy(d, (const void *)(uintptr_t)s, n);
	return 0;
}

/* Device memory is host memory here: a memset is a memset (stream order is program order). */
EXPORT CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream st)
{
	(void)st;
	if (deinit)
		return 4;
	memset((void *)(uintptr_t)d, v, n);
	logf_("memset8 %zu", n);
	return 0;
}

EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream st)
{
	uint32_t *p = (uint32_t *)(uintptr_t)d;

	(void)st;
	if (deinit)
		return 4;
	if (d % 4)
		return CUDA_ERROR_INVALID_VALUE;	/* the driver wants 4-byte alignment too */
	for (size_t i = 0; i < n; i++)
		p[i] = v;
	logf_("memset32 %zu", n * 4);
	return 0;
}

EXPORT CUresult cuStreamCreate(CUstream *s, unsigned flags)
{
	static int dummy;

	(void)flags;
	*s = (CUstream)&dummy;
	return 0;
}

/*
 * The preload library's clock calibration kernel (hal/nvidia/nv_launch.c),
 * played by a thread: it answers each round with "%globaltimer" =
 * CLOCK_REALTIME + FAKECUDA_CLOCK_OFFSET_NS (default 0), so a test can check
 * that the offset comes back and gets subtracted. A stream sync joins it.
 */
struct fclk {
	volatile uint32_t *round, *ack;
	volatile uint64_t *dev_ns;
	uint32_t n;
	int64_t offset;
};
static pthread_mutex_t clk_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t clk_thread;
static int clk_running;

static uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *clk_kernel(void *arg)
{
	struct fclk *k = arg;

	for (uint32_t r = 1; r <= k->n; r++) {
		uint64_t t0 = real_ns();
		uint32_t v;

		/* Like the kernel's clock64 budget: never wait forever. */
		while ((v = __atomic_load_n(k->round, __ATOMIC_ACQUIRE)) != r) {
			if (v == 0x7fffffffu || real_ns() - t0 > 2000000000ull)
				goto out;
		}
		*k->dev_ns = real_ns() + (uint64_t)k->offset;
		__atomic_store_n(k->ack, r, __ATOMIC_RELEASE);
	}
out:
	free(k);
	return NULL;
}

static CUresult clk_launch(void **p)
{
	struct fclk *k = calloc(1, sizeof(*k));
	const char *off = getenv("FAKECUDA_CLOCK_OFFSET_NS");
	uint8_t *base;
	uint32_t n;

	pthread_mutex_lock(&clk_lock);
	if (!k || !p || clk_running) {
		pthread_mutex_unlock(&clk_lock);
		free(k);
		return CUDA_ERROR_INVALID_VALUE;
	}
	base = (uint8_t *)(uintptr_t)*(CUdeviceptr *)p[0];
	k->round = (volatile uint32_t *)base;
	k->ack = (volatile uint32_t *)(base + 4);
	k->dev_ns = (volatile uint64_t *)(base + 8);
	k->n = n = *(uint32_t *)p[1];
	k->offset = off ? strtoll(off, NULL, 10) : 0;
	if (pthread_create(&clk_thread, NULL, clk_kernel, k)) {
		pthread_mutex_unlock(&clk_lock);
		free(k);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	clk_running = 1;
	pthread_mutex_unlock(&clk_lock);
	logf_("clock_sync %u rounds", n);
	return 0;
}

EXPORT CUresult cuStreamSynchronize(CUstream s)
{
	(void)s;
	/* Any thread may sync (the mirror thread too): one of them joins. */
	pthread_mutex_lock(&clk_lock);
	if (clk_running) {
		pthread_join(clk_thread, NULL);
		clk_running = 0;
	}
	pthread_mutex_unlock(&clk_lock);
	return 0;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream s)
{
	(void)s;
	return 0;
}

/* ---- modules, libraries ---- */

static const char *kind_of(const void *image)
{
	const unsigned char *p = image;

	if (!memcmp(p, "\x7f" "ELF", 4))
		return "elf";
	if (!strncmp(image, "FAKECUBIN\n", 10))
		return "cubin";
	return "ptx";
}

static struct fmod *mod_new(const void *image, const char *how)
{
	struct fmod *m = calloc(1, sizeof(*m));
	const char *kind = kind_of(image);

	if (!strcmp(kind, "elf")) {
		m->elf = 1;
	} else {
		m->text = strdup(!strcmp(kind, "cubin") ? (const char *)image + 10 : image);
		if (strstr(m->text, "gpuext_rt_maps"))
			m->table = calloc(1, TABLE_BYTES);
	}
	logf_("%s %s spliced=%d", how, kind, m->text && strstr(m->text, "gpuext_probe_") ? 1 : 0);
	return m;
}

static int has_entry(const struct fmod *m, const char *name)
{
	const char *p;
	size_t n = strlen(name);

	if (m->elf)
		return 1;	/* we cannot read SASS: any name exists */
	for (p = m->text; (p = strstr(p, ".entry ")); p += 7) {
		const char *q = p + 7;

		while (*q == ' ')
			q++;
		if (!strncmp(q, name, n) && (q[n] == '(' || q[n] == ' ' || q[n] == '\n'))
			return 1;
	}
	return 0;
}

/*
 * The "JIT" of PTX that carries probes (the preload library's spliced
 * modules): logged, dumped for ptxas, refused under $FAKECUDA_JIT_FAIL with
 * a message in the JIT error log the caller passed.
 */
static CUresult fake_jit(const void *image, unsigned n, CUjit_option *o, void **v)
{
	const char *t = image;

	if (strcmp(kind_of(image), "ptx") || !strstr(t, "gpuext_probe_"))
		return 0;
	if (getenv("FAKECUDA_JIT_FAIL")) {
		char *log = NULL;
		size_t cap = 0;

		for (unsigned i = 0; i < n; i++) {
			if (o[i] == CU_JIT_ERROR_LOG_BUFFER)
				log = v[i];
			else if (o[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
				cap = (size_t)(uintptr_t)v[i];
		}
		if (log && cap)
			snprintf(log, cap, "ptxas fatal: fake refusal of the spliced PTX\n");
		return CUDA_ERROR_INVALID_IMAGE;
	}
	logf_("jit %zu", strlen(t));
	/* Keep what we were asked to JIT, for tests that assemble it with ptxas. */
	if (getenv("FAKECUDA_JIT_DUMP")) {
		static int seq;
		char path[512];
		FILE *f;

		pthread_mutex_lock(&lock);
		snprintf(path, sizeof(path), "%s/jit-%d.ptx", getenv("FAKECUDA_JIT_DUMP"), seq++);
		pthread_mutex_unlock(&lock);
		f = fopen(path, "w");
		if (f) {
			fputs(t, f);
			fclose(f);
		}
	}
	return 0;
}

EXPORT CUresult cuModuleLoadData(CUmodule *mod, const void *image)
{
	CUresult r = fake_jit(image, 0, NULL, NULL);

	if (r)
		return r;
	*mod = (CUmodule)mod_new(image, "modload");
	return 0;
}

EXPORT CUresult cuModuleLoadDataEx(CUmodule *mod, const void *image, unsigned n,
				   CUjit_option *o, void **v)
{
	CUresult r = fake_jit(image, n, o, v);

	if (r)
		return r;
	*mod = (CUmodule)mod_new(image, "modload_ex");
	return 0;
}

EXPORT CUresult cuModuleLoadFatBinary(CUmodule *mod, const void *image)
{
	*mod = (CUmodule)mod_new(image, "modload_fatbin");
	return 0;
}

EXPORT CUresult cuModuleUnload(CUmodule mod)
{
	(void)mod;
	logf_("modunload");
	return 0;
}

EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule mod, const char *name)
{
	struct fmod *m = (struct fmod *)mod;
	struct ffunc *fn;

	if (!has_entry(m, name))
		return CUDA_ERROR_NOT_FOUND;
	fn = calloc(1, sizeof(*fn));
	fn->mod = m;
	snprintf(fn->name, sizeof(fn->name), "%s", name);
	*f = (CUfunction)fn;
	return 0;
}

/*
 * Function attributes, for the preload library's flat-twin check: 32
 * registers, blocks of up to 1024, no local or static shared memory (for a
 * kernel's flat twin $FAKECUDA_TWIN_REGS, $FAKECUDA_TWIN_THREADS and
 * $FAKECUDA_TWIN_LOCAL say otherwise). Setting one is logged
 * ("setattr NAME ATTR VALUE"); $FAKECUDA_TWIN_SETATTR_FAIL makes a twin
 * refuse it.
 */
static bool is_twin(CUfunction f)
{
	return f && strstr(((struct ffunc *)f)->name, "__gpuext_flat");
}

static CUresult get_attr(int *v, int attr, CUfunction f)
{
	const char *r = getenv("FAKECUDA_TWIN_REGS");

	if (!f)
		return CUDA_ERROR_INVALID_VALUE;
	const char *l = getenv("FAKECUDA_TWIN_LOCAL"), *t = getenv("FAKECUDA_TWIN_THREADS");

	*v = attr == CU_FUNC_ATTRIBUTE_NUM_REGS ? (is_twin(f) && r ? atoi(r) : 32) :
	     attr == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? (is_twin(f) && t ? atoi(t) : 1024) :
	     attr == CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES ? (is_twin(f) && l ? atoi(l) : 0) : 0;
	return 0;
}

static CUresult set_attr(const char *how, int attr, int v, CUfunction f)
{
	if (!f)
		return CUDA_ERROR_INVALID_VALUE;
	if (is_twin(f) && getenv("FAKECUDA_TWIN_SETATTR_FAIL")) {
		logf_("%s %s refused", how, ((struct ffunc *)f)->name);
		return CUDA_ERROR_INVALID_VALUE;
	}
	logf_("%s %s %d %d", how, ((struct ffunc *)f)->name, attr, v);
	return 0;
}

EXPORT CUresult cuFuncGetAttribute(int *v, int attr, CUfunction f)
{
	return get_attr(v, attr, f);
}

EXPORT CUresult cuKernelGetAttribute(int *v, int attr, CUkernel k, CUdevice d)
{
	(void)d;
	return get_attr(v, attr, (CUfunction)k);
}

EXPORT CUresult cuFuncSetAttribute(CUfunction f, int attr, int v)
{
	return set_attr("setattr", attr, v, f);
}

EXPORT CUresult cuKernelSetAttribute(int attr, int v, CUkernel k, CUdevice d)
{
	(void)d;
	return set_attr("ksetattr", attr, v, (CUfunction)k);
}

EXPORT CUresult cuFuncGetName(const char **name, CUfunction f)
{
	*name = ((struct ffunc *)f)->name;
	return 0;
}

static CUresult get_global(CUdeviceptr *d, size_t *n, struct fmod *m, const char *name)
{
	if (m->table && !strcmp(name, "gpuext_rt_maps")) {
		*d = (CUdeviceptr)(uintptr_t)m->table;
		if (n)
			*n = TABLE_BYTES;
		return 0;
	}
	if (m->table && !strcmp(name, "gpuext_rt_gpu_id") && strstr(m->text, name)) {
		*d = (CUdeviceptr)(uintptr_t)m->gpu_id;
		if (n)
			*n = sizeof(m->gpu_id);
		return 0;
	}
	if (m->table && !strcmp(name, "gpuext_rt_prandom_seed")) {
		*d = (CUdeviceptr)(uintptr_t)m->seed;
		if (n)
			*n = sizeof(m->seed);
		return 0;
	}
	return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *d, size_t *n, CUmodule mod, const char *name)
{
	return get_global(d, n, (struct fmod *)mod, name);
}

/* A library is one module here (one copy of its globals for every context). */
EXPORT CUresult cuLibraryLoadData(CUlibrary *lib, const void *code, CUjit_option *jo, void **jv,
				  unsigned jn, CUlibraryOption *lo, void **lv, unsigned ln)
{
	CUresult r = fake_jit(code, jn, jo, jv);

	(void)lo, (void)lv, (void)ln;
	if (r)
		return r;
	*lib = (CUlibrary)mod_new(code, "libload");
	return 0;
}

EXPORT CUresult cuLibraryUnload(CUlibrary lib)
{
	(void)lib;
	logf_("libunload");
	return 0;
}

/* A module's functions (CUDA 12.4's listing): one handle per .entry of its text, in order. */
static unsigned list_entries(struct fmod *m, CUfunction *out, unsigned max)
{
	unsigned n = 0;

	for (const char *p = m->text ? m->text : ""; (p = strstr(p, ".entry ")); p += 7) {
		const char *q = p + 7;
		size_t l;

		while (*q == ' ')
			q++;
		l = strcspn(q, "( \n");
		if (out && n < max) {
			struct ffunc *fn = calloc(1, sizeof(*fn));

			fn->mod = m;
			snprintf(fn->name, sizeof(fn->name), "%.*s", (int)(l < 255 ? l : 255), q);
			out[n] = (CUfunction)fn;
		}
		n++;
	}
	return n;
}

EXPORT CUresult cuModuleGetFunctionCount(unsigned *count, CUmodule mod)
{
	*count = list_entries((struct fmod *)mod, NULL, 0);
	return 0;
}

EXPORT CUresult cuModuleEnumerateFunctions(CUfunction *fns, unsigned n, CUmodule mod)
{
	list_entries((struct fmod *)mod, fns, n);
	return 0;
}

EXPORT CUresult cuLibraryGetKernelCount(unsigned *count, CUlibrary lib)
{
	return cuModuleGetFunctionCount(count, (CUmodule)lib);
}

EXPORT CUresult cuLibraryEnumerateKernels(CUkernel *ks, unsigned n, CUlibrary lib)
{
	return cuModuleEnumerateFunctions((CUfunction *)ks, n, (CUmodule)lib);
}

EXPORT CUresult cuKernelGetName(const char **name, CUkernel k)
{
	*name = ((struct ffunc *)k)->name;
	return 0;
}

EXPORT CUresult cuLibraryGetKernel(CUkernel *k, CUlibrary lib, const char *name)
{
	return cuModuleGetFunction((CUfunction *)k, (CUmodule)lib, name);
}

EXPORT CUresult cuLibraryGetModule(CUmodule *m, CUlibrary lib)
{
	*m = (CUmodule)lib;
	return 0;
}

EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *d, size_t *n, CUlibrary lib, const char *name)
{
	logf_("libglobal %s", name);
	return get_global(d, n, (struct fmod *)lib, name);
}

EXPORT CUresult cuKernelGetFunction(CUfunction *f, CUkernel k)
{
	*f = (CUfunction)k;
	return 0;
}

/* ---- JIT linker ---- */

/* ---- launches ---- */

/*
 * The preload's ring tidy kernel (hal/nvidia/nv_maps.c), as its PTX does it:
 * block i zeroes the two ranges of table entry i, then writes its cons.
 * Device addresses here are host addresses.
 */
static CUresult tidy_launch(unsigned gx, void **p)
{
	const uint64_t *e;

	if (!p || !p[0])
		return CUDA_ERROR_INVALID_VALUE;
	e = (const uint64_t *)(uintptr_t)*(CUdeviceptr *)p[0];
	for (unsigned i = 0; i < gx; i++, e += 6) {
		memset((void *)(uintptr_t)e[0], 0, e[1]);
		memset((void *)(uintptr_t)e[2], 0, e[3]);
		if (e[4])
			memcpy((void *)(uintptr_t)e[4], &e[5], 8);
	}
	logf_("tidy %u", gx);
	return 0;
}

/*
 * gpuext_l2_keep (hal/nvidia/nv_maps.c): writes the "policy" the preload
 * bakes into the probes, $FAKECUDA_L2_KEEP (default 0x14f0000000000000, the
 * H100's evict_last); $FAKECUDA_L2_KEEP_FAIL refuses the launch.
 */
static CUresult l2keep_launch(void **p)
{
	const char *s = getenv("FAKECUDA_L2_KEEP");
	uint64_t v = s ? strtoull(s, NULL, 0) : 0x14f0000000000000ull;

	if (getenv("FAKECUDA_L2_KEEP_FAIL")) {
		logf_("l2keep refused");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (!p || !p[0])
		return CUDA_ERROR_INVALID_VALUE;
	memcpy((void *)(uintptr_t)*(CUdeviceptr *)p[0], &v, sizeof(v));
	logf_("l2keep 0x%llx", (unsigned long long)v);
	return 0;
}

static CUresult launch(const char *how, CUfunction f, unsigned gx, unsigned bx)
{
	struct ffunc *fn = (struct ffunc *)f;

	if (!fn || !gx) {	/* the driver refuses an empty grid */
		logf_("%s refused", how);
		return CUDA_ERROR_INVALID_VALUE;
	}
	/* $FAKECUDA_TWIN_LAUNCH_FAIL: a flat twin is refused where its kernel is not */
	if (is_twin(f) && getenv("FAKECUDA_TWIN_LAUNCH_FAIL")) {
		logf_("%s %s refused", how, fn->name);
		return CUDA_ERROR_INVALID_VALUE;
	}
	logf_("%s %s %u %u", how, fn->name, gx, bx);
	return 0;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			       unsigned by, unsigned bz, unsigned shm, CUstream s, void **p,
			       void **e)
{
	(void)gy, (void)gz, (void)by, (void)bz, (void)shm, (void)s, (void)e;
	if (f && !strcmp(((struct ffunc *)f)->name, "gpuext_clock_sync"))
		return clk_launch(p);
	if (f && !strcmp(((struct ffunc *)f)->name, "gpuext_ring_tidy"))
		return tidy_launch(gx, p);
	if (f && !strcmp(((struct ffunc *)f)->name, "gpuext_l2_keep"))
		return l2keep_launch(p);
	return launch("launch", f, gx, bx);
}

EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
				    unsigned bx, unsigned by, unsigned bz, unsigned shm, CUstream s,
				    void **p, void **e)
{
	(void)gy, (void)gz, (void)by, (void)bz, (void)shm, (void)s, (void)p, (void)e;
	return launch("launch_ptsz", f, gx, bx);
}

EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **p, void **e)
{
	(void)p, (void)e;
	return launch("launch_ex", f, c->gridDimX, c->blockDimX);
}

static CUresult priv_launch_ex(const CUlaunchConfig *c, CUfunction f, void **p, void **e)
{
	(void)p, (void)e;
	return launch("launch_ex_private", f, c->gridDimX, c->blockDimX);
}

/* ---- stream capture: one flag (every stream here is the same dummy) ---- */

static bool capturing;

EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, int mode)
{
	(void)s, (void)mode;
	capturing = true;
	logf_("capture_begin");
	return 0;
}

EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *gr)
{
	(void)s;
	capturing = false;
	*gr = (CUgraph)&capturing;
	logf_("capture_end");
	return 0;
}

EXPORT CUresult cuStreamIsCapturing(CUstream s, int *status)
{
	(void)s;
	*status = capturing ? 1 : 0;
	return 0;
}

/* ---- graphs: one graph of up to 4 kernel nodes, whatever the handle ---- */

static struct {
	CUDA_KERNEL_NODE_PARAMS_v2 node[4];
	bool off[4];	/* disabled in the executable graph (cuGraphNodeSetEnabled) */
	size_t n;
	unsigned gen;	/* cuGraphExecUpdate calls: the graph's node handles change with it */
} fgraph;

/* Node i's handle in the graph of generation @gen, and back. */
static CUgraphNode node_handle(size_t i, unsigned gen)
{
	return (CUgraphNode)(uintptr_t)(0x1000u * (gen + 1) + i + 1);
}

static CUDA_KERNEL_NODE_PARAMS_v2 *node_of(CUgraphNode h)
{
	size_t i = ((uintptr_t)h & 0xfff) - 1;

	return i < fgraph.n ? &fgraph.node[i] : NULL;
}

static const char *node_name(const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	struct ffunc *fn = (struct ffunc *)(p->func ? (void *)p->func : (void *)p->kern);

	return fn ? fn->name : "?";
}

EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *n, CUgraph g, const CUgraphNode *deps,
				       size_t nd, const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	(void)g, (void)deps, (void)nd;
	if (fgraph.n == 4)
		return CUDA_ERROR_INVALID_VALUE;
	logf_("graph_add %s", node_name(p));
	fgraph.node[fgraph.n] = *p;
	*n = node_handle(fgraph.n++, 0);
	return 0;
}

EXPORT CUresult cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n)
{
	(void)g;
	if (nodes)
		for (size_t i = 0; i < fgraph.n && i < *n; i++)
			nodes[i] = node_handle(i, fgraph.gen);
	*n = fgraph.n;
	return 0;
}

EXPORT CUresult cuGraphNodeGetType(CUgraphNode node, int *type)
{
	(void)node;
	*type = 0;	/* CU_GRAPH_NODE_TYPE_KERNEL */
	return 0;
}

EXPORT CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	const CUDA_KERNEL_NODE_PARAMS_v2 *k = node_of(node);

	if (!k)
		return CUDA_ERROR_INVALID_VALUE;
	*p = *k;
	return 0;
}

/* An update to "another" graph of the same shape: new node handles from now on. */
EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec e, CUgraph g, void *info)
{
	(void)e, (void)g, (void)info;
	fgraph.gen++;
	logf_("graph_update");
	return 0;
}

/* Named by the node of the graph first instantiated (generation 0), as the API says. */
EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec e, CUgraphNode n,
						  const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
	(void)e;
	if (((uintptr_t)n >> 12) != 1 || !node_of(n))
		return CUDA_ERROR_INVALID_VALUE;
	logf_("graph_exec_set %s %u", node_name(p), p->gridDimX);
	return 0;
}

/* The generic call (CUDA 12.2): a kernel node's parameters as the call above takes them. */
EXPORT CUresult cuGraphExecNodeSetParams(CUgraphExec e, CUgraphNode n, CUgraphNodeParams *p)
{
	if (!p || p->type != 0)
		return CUDA_ERROR_INVALID_VALUE;
	return cuGraphExecKernelNodeSetParams_v2(e, n, &p->kernel);
}

/* Named by the node of the graph first instantiated, like cuGraphExecKernelNodeSetParams. */
EXPORT CUresult cuGraphNodeSetEnabled(CUgraphExec e, CUgraphNode n, unsigned on)
{
	(void)e;
	if (((uintptr_t)n >> 12) != 1 || !node_of(n))
		return CUDA_ERROR_INVALID_VALUE;
	fgraph.off[((uintptr_t)n & 0xfff) - 1] = !on;
	logf_("graph_enable %u", on);
	return 0;
}

EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long fl)
{
	(void)g, (void)fl;
	*e = (CUgraphExec)&fgraph;
	logf_("graph_instantiate %zu", fgraph.n);
	return 0;
}

EXPORT CUresult cuGraphLaunch(CUgraphExec e, CUstream s)
{
	(void)s;
	if (e != (CUgraphExec)&fgraph)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < fgraph.n; i++)
		if (!fgraph.off[i])
			logf_("graph_launch %s %u %u", node_name(&fgraph.node[i]),
			      fgraph.node[i].gridDimX, fgraph.node[i].blockDimX);
	return 0;
}

EXPORT CUresult cuGraphExecDestroy(CUgraphExec e)
{
	(void)e;
	logf_("graph_destroy");
	return 0;
}

/* ---- cuGetProcAddress ---- */

static const struct {
	const char *name;
	void *fn;
	void *pt;	/* per-thread variant, if any */
} procs[] = {
	{ "cuInit", (void *)cuInit, NULL },
	{ "cuModuleLoadData", (void *)cuModuleLoadData, NULL },
	{ "cuModuleLoadDataEx", (void *)cuModuleLoadDataEx, NULL },
	{ "cuModuleGetFunction", (void *)cuModuleGetFunction, NULL },
	{ "cuLibraryLoadData", (void *)cuLibraryLoadData, NULL },
	{ "cuLibraryGetKernel", (void *)cuLibraryGetKernel, NULL },
	{ "cuKernelGetFunction", (void *)cuKernelGetFunction, NULL },
	{ "cuLaunchKernel", (void *)cuLaunchKernel, (void *)cuLaunchKernel_ptsz },
	{ "cuLaunchKernelEx", (void *)priv_launch_ex, NULL },
	{ "cuDevicePrimaryCtxRetain", (void *)cuDevicePrimaryCtxRetain, NULL },
	{ "cuCtxSetCurrent", (void *)cuCtxSetCurrent, NULL },
	{ "cuCtxGetCurrent", (void *)cuCtxGetCurrent, NULL },
	{ "cuDeviceGet", (void *)cuDeviceGet, NULL },
	{ "cuCtxSynchronize", (void *)cuCtxSynchronize, NULL },
	{ "cuStreamBeginCapture", (void *)cuStreamBeginCapture_v2, NULL },
	{ "cuGraphInstantiate", (void *)cuGraphInstantiateWithFlags, NULL },
	{ "cuGraphLaunch", (void *)cuGraphLaunch, NULL },
	{ "cuGraphExecDestroy", (void *)cuGraphExecDestroy, NULL },
	{ "cuGraphExecUpdate", (void *)cuGraphExecUpdate_v2, NULL },
	{ "cuGraphExecKernelNodeSetParams", (void *)cuGraphExecKernelNodeSetParams_v2, NULL },
	{ "cuGraphKernelNodeGetParams", (void *)cuGraphKernelNodeGetParams_v2, NULL },
	{ "cuGraphNodeSetEnabled", (void *)cuGraphNodeSetEnabled, NULL },
	{ "cuGraphExecNodeSetParams", (void *)cuGraphExecNodeSetParams, NULL },
};

EXPORT CUresult cuGetProcAddress_v2(const char *name, void **pfn, int ver, cuuint64_t flags,
				    int *status);

EXPORT CUresult cuGetProcAddress_v2(const char *name, void **pfn, int ver, cuuint64_t flags,
				    int *status)
{
	(void)ver;
	if (!strcmp(name, "cuGetProcAddress")) {
		*pfn = (void *)cuGetProcAddress_v2;
		if (status)
			*status = 0;
		return 0;
	}
	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
		if (strcmp(procs[i].name, name))
			continue;
		*pfn = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && procs[i].pt ?
			       procs[i].pt : procs[i].fn;
		if (status)
			*status = 0;
		return 0;
	}
	*pfn = NULL;
	if (status)
		*status = 1;
	return CUDA_ERROR_NOT_FOUND;
}

/* ---- test-only ---- */

/* The host address behind a module's global (the fake app plays the GPU with it). */
EXPORT void *fakecuda_global(void *mod, const char *name)
{
	CUdeviceptr d = 0;

	if (get_global(&d, NULL, mod, name))
		return NULL;
	return (void *)(uintptr_t)d;
}

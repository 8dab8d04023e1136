/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ptx_bundle_run: runs a PTX bundle on an NVIDIA GPU. Self-contained on
 * purpose (C17 + libc; libcuda.so.1 is dlopen'ed): a GPU machine needs
 * neither LLVM nor libbpf nor gpuext itself, only a C compiler and the driver.
 *
 * The bundle is written by `ptx_isa_runner --bundle DIR` where gpuext
 * builds: DIR/manifest.txt lists runs (the PTX for sm_80 and sm_90, the input
 * memory, the maps and variables in their device layout, and what to expect,
 * computed by the reference interpreter) and DIR/ptx/ holds the PTX. The
 * device ABI (test kernel parameters, gpuext_rt_maps, gpuext_rt_vars, the
 * ring-buffer layout) is the one codegen/ptx/ptx.h documents.
 *
 *   ptx_bundle_run BUNDLE_DIR [--timeout-ms N] [--case SUBSTR] [--sm sm_80|sm_90]
 *
 * By default the sm_90 PTX runs on sm_90 and newer GPUs, the sm_80 PTX
 * elsewhere; --sm picks one (sm_80 PTX on an sm_90 GPU checks the JIT path).
 *
 * Prints a per-family table and every disagreement with why. Exit status:
 * 0 all agree, 1 a disagreement or failure, 2 no usable GPU, 3 bad bundle.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "warp_votes_expect.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_NOT_READY 600
#define CU_JIT_ERROR_LOG_BUFFER 5
#define CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
#define MEM_LIMIT (64u << 20) /* device bytes one run may allocate */

static struct {
	CUresult (*Init)(unsigned);
	CUresult (*DriverGetVersion)(int *);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*DeviceGetCount)(int *);
	CUresult (*DeviceGetName)(char *, int, CUdevice);
	CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*DevicePrimaryCtxRelease)(CUdevice);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*ModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
	CUresult (*ModuleUnload)(CUmodule);
	CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*ModuleGetGlobal)(CUdeviceptr *, size_t *, CUmodule, const char *);
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);
	CUresult (*MemFree)(CUdeviceptr);
	CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
	CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
	CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
	CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
				 unsigned, unsigned, CUstream, void **, void **);
	CUresult (*StreamQuery)(CUstream);
	CUresult (*GetErrorName)(CUresult, const char **);
} cu;

static CUdevice cu_dev;
static CUcontext cu_ctx;

static const char *cu_name(CUresult r)
{
	const char *s = NULL;

	return cu.GetErrorName && cu.GetErrorName(r, &s) == CUDA_SUCCESS && s ? s : "CUDA_ERROR_?";
}

/* Opens GPU 0; returns its compute capability (e.g. 90) or 0 with @why. */
static int cuda_open(char *why, size_t len, char *desc, size_t dlen)
{
	static const struct { size_t off; const char *n1, *n2; } syms[] = {
#define S(f, a, b) { offsetof(__typeof__(cu), f), a, b }
		S(Init, "cuInit", NULL), S(DriverGetVersion, "cuDriverGetVersion", NULL),
		S(DeviceGet, "cuDeviceGet", NULL), S(DeviceGetCount, "cuDeviceGetCount", NULL),
		S(DeviceGetName, "cuDeviceGetName", NULL),
		S(DeviceGetAttribute, "cuDeviceGetAttribute", NULL),
		S(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL),
		S(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"),
		S(CtxSetCurrent, "cuCtxSetCurrent", NULL),
		S(ModuleLoadDataEx, "cuModuleLoadDataEx", NULL), S(ModuleUnload, "cuModuleUnload", NULL),
		S(ModuleGetFunction, "cuModuleGetFunction", NULL),
		S(ModuleGetGlobal, "cuModuleGetGlobal_v2", NULL), S(MemAlloc, "cuMemAlloc_v2", NULL),
		S(MemFree, "cuMemFree_v2", NULL), S(MemcpyHtoD, "cuMemcpyHtoD_v2", NULL),
		S(MemcpyDtoH, "cuMemcpyDtoH_v2", NULL), S(MemsetD8, "cuMemsetD8_v2", NULL),
		S(LaunchKernel, "cuLaunchKernel", NULL), S(StreamQuery, "cuStreamQuery", NULL),
		S(GetErrorName, "cuGetErrorName", NULL),
#undef S
	};
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	int count = 0, major = 0, minor = 0, drv = 0;
	char name[128] = "?";
	CUresult r;

	if (!lib) {
		snprintf(why, len, "cannot load libcuda.so.1 (%s): no NVIDIA driver here?", dlerror());
		return 0;
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void *p = dlsym(lib, syms[i].n1);

		if (!p && syms[i].n2)
			p = dlsym(lib, syms[i].n2);
		if (!p) {
			snprintf(why, len, "libcuda.so.1 lacks %s", syms[i].n1);
			return 0;
		}
		memcpy((char *)&cu + syms[i].off, &p, sizeof(p));
	}
	if ((r = cu.Init(0)) != CUDA_SUCCESS) {
		snprintf(why, len, "cuInit: %s (%d)", cu_name(r), r);
		return 0;
	}
	cu.DriverGetVersion(&drv);
	if (cu.DeviceGetCount(&count) != CUDA_SUCCESS || count < 1) {
		snprintf(why, len, "the driver sees no GPU");
		return 0;
	}
	cu.DeviceGet(&cu_dev, 0);
	cu.DeviceGetName(name, sizeof(name), cu_dev);
	cu.DeviceGetAttribute(&major, 75, cu_dev);
	cu.DeviceGetAttribute(&minor, 76, cu_dev);
	if ((r = cu.DevicePrimaryCtxRetain(&cu_ctx, cu_dev)) != CUDA_SUCCESS ||
	    (r = cu.CtxSetCurrent(cu_ctx)) != CUDA_SUCCESS) {
		snprintf(why, len, "%s: no context: %s", name, cu_name(r));
		return 0;
	}
	snprintf(desc, dlen, "%s, sm_%d%d, driver CUDA %d.%d", name, major, minor, drv / 1000,
		 drv % 1000 / 10);
	return major * 10 + minor;
}

/* A kernel fault poisons the context: take a fresh one. */
static void renew_ctx(void)
{
	cu.DevicePrimaryCtxRelease(cu_dev);
	if (cu.DevicePrimaryCtxRetain(&cu_ctx, cu_dev) == CUDA_SUCCESS)
		cu.CtxSetCurrent(cu_ctx);
}

/* ------------------------------------------------------------------ */
/* The manifest                                                         */
/* ------------------------------------------------------------------ */

#define MAX_MAPS 16
#define MAX_VARS 16
#define MAX_CHECKS 8

/*
 * A ring's aux block for one shard (the bundle's rings have nr_slots 1):
 * the 32-byte header, then the drop counter on the next 128-byte line
 * (gpuext_ptx_rb_drops_off(1) in codegen/ptx/ptx.h).
 */
#define RING_AUX 136
#define RING_DROPS 16

struct map_desc { /* = struct gpuext_ptx_map_desc */
	uint64_t base, aux;
	uint32_t type, key_size, value_size, max_entries, stride, nr_slots;
};
_Static_assert(sizeof(struct map_desc) == 40, "gpuext_ptx_map_desc layout");

struct bmap {
	struct map_desc d;
	size_t bytes;
	uint8_t *init;		/* NULL = zeros */
	uint8_t *after;		/* device contents after the run */
	uint64_t hdr[RING_AUX / 8];	/* ring buffer: prod, cons, spare, full_mark; drops at [RING_DROPS] */
};

struct bvar {
	uint64_t id;
	size_t size;
	uint8_t *init;
};

struct check {
	char kind[24];
	uint64_t a, b, c;
};

struct brun {
	char family[64], name[128], mode[16];
	uint32_t threads;
	char ptx80[256], ptx90[256];
	size_t in_len;
	uint8_t *in;
	struct bmap maps[MAX_MAPS];
	size_t map_cnt;
	struct bvar vars[MAX_VARS];
	size_t var_cnt;
	bool has_r0, has_mem;
	uint64_t want_r0;
	uint8_t *want_mem;
	char nd[160];
	uint64_t ring_start;	/* "ringpos POS": rings start at POS (prod = cons) */
	struct check checks[MAX_CHECKS];
	size_t check_cnt;
};

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* "-" = NULL (zeros); else exactly @len bytes of hex. */
static bool parse_hex(const char *s, size_t len, uint8_t **out)
{
	uint8_t *b;

	*out = NULL;
	if (!strcmp(s, "-"))
		return true;
	if (strlen(s) != len * 2)
		return false;
	b = malloc(len ? len : 1);
	if (!b)
		return false;
	for (size_t i = 0; i < len; i++) {
		int h = hexval(s[2 * i]), l = hexval(s[2 * i + 1]);

		if (h < 0 || l < 0) {
			free(b);
			return false;
		}
		b[i] = (uint8_t)(h << 4 | l);
	}
	*out = b;
	return true;
}

static void run_free(struct brun *r)
{
	free(r->in);
	free(r->want_mem);
	for (size_t i = 0; i < r->map_cnt; i++) {
		free(r->maps[i].init);
		free(r->maps[i].after);
	}
	for (size_t i = 0; i < r->var_cnt; i++)
		free(r->vars[i].init);
	memset(r, 0, sizeof(*r));
}

/* Reads the next run; 1 = got one, 0 = end of file, -1 = bad line (@why). */
static int next_run(FILE *f, struct brun *r, int *lineno, char *why, size_t wlen)
{
	char *line = NULL, *tok[12];
	size_t cap = 0;
	bool in_run = false;
	int ret = 0;

	memset(r, 0, sizeof(*r));
	while (getline(&line, &cap, f) > 0) {
		size_t n = 0;
		char *save = NULL, *t;

		(*lineno)++;
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "nd ", 3)) {
			snprintf(r->nd, sizeof(r->nd), "%s", line + 3);
			continue;
		}
		for (t = strtok_r(line, " \t", &save); t && n < 12; t = strtok_r(NULL, " \t", &save))
			tok[n++] = t;
		if (!n || tok[0][0] == '#')
			continue;
#define BAD(...) do { snprintf(why, wlen, __VA_ARGS__); ret = -1; goto out; } while (0)
		if (!strcmp(tok[0], "gpuext-ptx-bundle")) {
			if (n != 2 || strcmp(tok[1], "1"))
				BAD("bundle version %s: this runner reads version 1", n > 1 ? tok[1] : "?");
		} else if (!strcmp(tok[0], "case") && n == 5) {
			snprintf(r->family, sizeof(r->family), "%s", tok[1]);
			snprintf(r->name, sizeof(r->name), "%s", tok[2]);
			snprintf(r->mode, sizeof(r->mode), "%s", tok[3]);
			r->threads = (uint32_t)strtoul(tok[4], NULL, 0);
			if (!r->threads || r->threads > 1024 || r->threads % 32)
				BAD("threads %s", tok[4]);
			in_run = true;
		} else if (!in_run) {
			BAD("'%s' outside a case", tok[0]);
		} else if (!strcmp(tok[0], "ptx") && n == 3) {
			snprintf(!strcmp(tok[1], "sm_90") ? r->ptx90 : r->ptx80, sizeof(r->ptx80), "%s",
				 tok[2]);
		} else if (!strcmp(tok[0], "input") && n == 3) {
			r->in_len = strtoull(tok[1], NULL, 0);
			if (r->in_len > 1 << 20 || !parse_hex(tok[2], r->in_len, &r->in))
				BAD("input");
		} else if (!strcmp(tok[0], "map") && n == 9 && r->map_cnt < MAX_MAPS) {
			struct bmap *m = &r->maps[r->map_cnt++];

			m->d.type = (uint32_t)strtoul(tok[1], NULL, 0);
			m->d.key_size = (uint32_t)strtoul(tok[2], NULL, 0);
			m->d.value_size = (uint32_t)strtoul(tok[3], NULL, 0);
			m->d.max_entries = (uint32_t)strtoul(tok[4], NULL, 0);
			m->d.stride = (uint32_t)strtoul(tok[5], NULL, 0);
			m->d.nr_slots = (uint32_t)strtoul(tok[6], NULL, 0);
			m->bytes = strtoull(tok[7], NULL, 0);
			if (m->bytes > MEM_LIMIT || !parse_hex(tok[8], m->bytes, &m->init) ||
			    (m->d.type == 27 && m->d.nr_slots > 1))	/* RING_AUX holds one shard */
				BAD("map");
		} else if (!strcmp(tok[0], "var") && n == 4 && r->var_cnt < MAX_VARS) {
			struct bvar *v = &r->vars[r->var_cnt++];

			v->id = strtoull(tok[1], NULL, 0);
			v->size = strtoull(tok[2], NULL, 0);
			if (!v->size || v->size > 1 << 20 || !parse_hex(tok[3], v->size, &v->init))
				BAD("var");
		} else if (!strcmp(tok[0], "ringpos") && n == 2) {
			r->ring_start = strtoull(tok[1], NULL, 0);
		} else if (!strcmp(tok[0], "expect_r0") && n == 2) {
			r->has_r0 = true;
			r->want_r0 = strtoull(tok[1], NULL, 16);
		} else if (!strcmp(tok[0], "expect_mem") && n == 2) {
			r->has_mem = true;
			if (!parse_hex(tok[1], r->in_len, &r->want_mem))
				BAD("expect_mem");
		} else if (!strcmp(tok[0], "check") && n >= 2 && r->check_cnt < MAX_CHECKS) {
			struct check *c = &r->checks[r->check_cnt++];

			snprintf(c->kind, sizeof(c->kind), "%s", tok[1]);
			c->a = n > 2 ? strtoull(tok[2], NULL, 0) : 0;
			c->b = n > 3 ? strtoull(tok[3], NULL, 0) : 0;
			c->c = n > 4 ? strtoull(tok[4], NULL, 0) : 0;
		} else if (!strcmp(tok[0], "end")) {
			ret = 1;
			goto out;
		} else {
			BAD("unknown line '%s'", tok[0]);
		}
#undef BAD
	}
	if (in_run) {
		snprintf(why, wlen, "the last case has no 'end'");
		ret = -1;
	}
out:
	free(line);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Running one                                                          */
/* ------------------------------------------------------------------ */

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1))) {
		if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		} else {
			buf[n] = '\0';
		}
	}
	fclose(f);
	return buf;
}

struct devmem {
	CUdeviceptr p[2 * MAX_MAPS + MAX_VARS + 2];
	size_t cnt, total;
};

static CUresult dalloc(struct devmem *m, uint64_t *p, size_t bytes)
{
	CUdeviceptr d = 0;
	CUresult r;

	if (!bytes)
		bytes = 8;
	if (m->total + bytes > MEM_LIMIT || m->cnt == sizeof(m->p) / sizeof(m->p[0]))
		return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
	r = cu.MemAlloc(&d, bytes);
	*p = d;
	if (r == CUDA_SUCCESS) {
		m->p[m->cnt++] = d;
		m->total += bytes;
		r = cu.MemsetD8(*p, 0, bytes);
	}
	return r;
}

/*
 * Runs @r; fills r0 (threads) and mem (copies * in_len) and each map's
 * `after`. 0, or -1 with @why (a CUDA or setup failure), or -2 = timeout.
 */
static int launch(const char *dir, struct brun *r, bool sm90, uint32_t timeout_ms, uint64_t *r0,
		  uint8_t *mem, char *why, size_t wlen)
{
	uint32_t copies = !strcmp(r->mode, "warp") ? r->threads / 32 : r->threads;
	uint64_t len = r->in_len, stride = ((len ? len : 8) + 15) & ~15ull;
	char path[600], jit[4096] = "", *ptx;
	int jopt[2] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *jval[2] = { jit, (void *)(uintptr_t)sizeof(jit) };
	struct map_desc descs[MAX_MAPS];
	struct { uint64_t id, addr; } vars[MAX_VARS];
	uint64_t memp = 0, r0p = 0;
	CUdeviceptr g;
	struct devmem dm = { .cnt = 0 };
	CUmodule mod = NULL;
	CUfunction fn;
	uint32_t n = r->threads;
	size_t gsize;
	void *params[5];
	struct timespec t0, now, nap = { 0, 100000 };
	int ret = -1;
	CUresult e;

	snprintf(path, sizeof(path), "%s/%s", dir, sm90 && r->ptx90[0] ? r->ptx90 : r->ptx80);
	ptx = slurp(path);
	if (!ptx) {
		snprintf(why, wlen, "cannot read %s", path);
		return -1;
	}
#define CK(call, what) do { if ((e = (call)) != CUDA_SUCCESS) { \
		snprintf(why, wlen, "%s: %s (%d)", what, cu_name(e), e); goto out; } } while (0)
	e = cu.ModuleLoadDataEx(&mod, ptx, 2, jopt, jval);
	if (e != CUDA_SUCCESS) {
		mod = NULL;
		snprintf(why, wlen, "the driver refused the PTX: %s (%d): %.1500s", cu_name(e), e, jit);
		goto out;
	}
	CK(cu.ModuleGetFunction(&fn, mod, "gpuext_isa_entry"), "gpuext_isa_entry");
	memset(descs, 0, sizeof(descs));
	for (size_t i = 0; i < r->map_cnt; i++) {
		struct bmap *m = &r->maps[i];

		descs[i] = m->d;
		CK(dalloc(&dm, &descs[i].base, m->bytes), "map memory");
		if (m->init)
			CK(cu.MemcpyHtoD(descs[i].base, m->init, m->bytes), "map upload");
		if (m->d.type == 27) { /* ring buffer: its header */
			uint64_t pos[2] = { r->ring_start, r->ring_start };

			CK(dalloc(&dm, &descs[i].aux, RING_AUX), "ring header");
			if (r->ring_start)
				CK(cu.MemcpyHtoD(descs[i].aux, pos, sizeof(pos)), "ring positions");
		}
	}
	if (r->map_cnt) {
		CK(cu.ModuleGetGlobal(&g, &gsize, mod, "gpuext_rt_maps"), "gpuext_rt_maps");
		if (gsize < r->map_cnt * sizeof(descs[0])) {
			snprintf(why, wlen, "gpuext_rt_maps is %zu bytes for %zu maps", gsize, r->map_cnt);
			goto out;
		}
		CK(cu.MemcpyHtoD(g, descs, r->map_cnt * sizeof(descs[0])), "gpuext_rt_maps");
	}
	if (r->var_cnt) {
		memset(vars, 0, sizeof(vars));
		for (size_t i = 0; i < r->var_cnt; i++) {
			vars[i].id = r->vars[i].id;
			CK(dalloc(&dm, &vars[i].addr, r->vars[i].size), "variable memory");
			if (r->vars[i].init)
				CK(cu.MemcpyHtoD(vars[i].addr, r->vars[i].init, r->vars[i].size),
				   "variable upload");
		}
		CK(cu.ModuleGetGlobal(&g, &gsize, mod, "gpuext_rt_vars"), "gpuext_rt_vars");
		CK(cu.MemcpyHtoD(g, vars, gsize < sizeof(vars) ? gsize : sizeof(vars)), "gpuext_rt_vars");
	}
	if (len) {
		uint8_t *stage = calloc(copies, stride);

		if (!stage)
			goto out;
		for (uint32_t c = 0; c < copies; c++)
			memcpy(stage + c * stride, r->in, len);
		e = dalloc(&dm, &memp, stride * copies);
		if (e == CUDA_SUCCESS)
			e = cu.MemcpyHtoD(memp, stage, stride * copies);
		free(stage);
		CK(e, "input copies");
	}
	CK(dalloc(&dm, &r0p, 8 * r->threads), "r0");
	params[0] = &memp;
	params[1] = &len;
	params[2] = &stride;
	params[3] = &r0p;
	params[4] = &n;
	CK(cu.LaunchKernel(fn, 1, 1, 1, r->threads, 1, 1, 0, NULL, params, NULL), "cuLaunchKernel");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((e = cu.StreamQuery(NULL)) == CUDA_ERROR_NOT_READY) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 >
		    (long)timeout_ms) {
			snprintf(why, wlen, "the kernel did not finish in %u ms", timeout_ms);
			free(ptx);
			return -2; /* leave everything: the kernel may still run */
		}
		nanosleep(&nap, NULL);
	}
	if (e != CUDA_SUCCESS) {
		snprintf(why, wlen, "the kernel failed: %s (%d)", cu_name(e), e);
		free(ptx);
		renew_ctx(); /* frees the context's memory and module too */
		return -1;
	}
	CK(cu.MemcpyDtoH(r0, r0p, 8 * r->threads), "reading r0");
	if (len) {
		uint8_t *stage = malloc(stride * copies);

		if (!stage)
			goto out;
		e = cu.MemcpyDtoH(stage, memp, stride * copies);
		for (uint32_t c = 0; e == CUDA_SUCCESS && c < copies; c++)
			memcpy(mem + c * len, stage + c * stride, len);
		free(stage);
		CK(e, "reading the input copies");
	}
	for (size_t i = 0; i < r->map_cnt; i++) {
		struct bmap *m = &r->maps[i];

		m->after = malloc(m->bytes ? m->bytes : 1);
		if (!m->after)
			goto out;
		CK(cu.MemcpyDtoH(m->after, descs[i].base, m->bytes), "reading a map");
		if (m->d.type == 27)
			CK(cu.MemcpyDtoH(m->hdr, descs[i].aux, RING_AUX), "reading a ring header");
	}
	ret = 0;
#undef CK
out:
	for (size_t i = 0; i < dm.cnt; i++)
		cu.MemFree(dm.p[i]);
	if (mod)
		cu.ModuleUnload(mod);
	free(ptx);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Checking                                                             */
/* ------------------------------------------------------------------ */

/* Walks ring buffer @m: the first 8 bytes of each submitted record go to @ids; returns the count. */
static unsigned ring_records(const struct bmap *m, uint64_t *ids, unsigned max_ids)
{
	uint64_t mask = m->bytes - 1, pos = m->hdr[1];
	unsigned n = 0;

	while (pos < m->hdr[0]) {
		uint32_t hdr;

		memcpy(&hdr, m->after + (pos & mask), 4);
		if (hdr & 0x80000000u)
			break;
		if (!(hdr & 0x40000000u)) {
			if (n < max_ids && (hdr & 0x3fffffffu) >= 8)
				memcpy(&ids[n], m->after + (pos & mask) + 8, 8);
			n++;
		}
		pos += ((hdr & 0x3fffffffu) + 8 + 7) & ~7ull;
	}
	return n;
}

/* NULL = as expected, else why not. */
static const char *check_run(const struct brun *r, const uint64_t *r0, const uint8_t *mem,
			     char *buf, size_t len)
{
	bool warp = !strcmp(r->mode, "warp");
	uint32_t copies = warp ? r->threads / 32 : r->threads;

	if (r->has_r0)
		for (uint32_t t = 0; t < r->threads; t++)
			if (r0[t] != r->want_r0) {
				snprintf(buf, len, "r0 = 0x%" PRIx64 " on thread %u, interpreter 0x%" PRIx64,
					 r0[t], t, r->want_r0);
				return buf;
			}
	if (r->has_mem && r->want_mem)
		for (uint32_t c = 0; c < copies; c++)
			for (size_t i = 0; i < r->in_len; i++)
				if (mem[c * r->in_len + i] != r->want_mem[i]) {
					snprintf(buf, len, "memory byte %zu of copy %u = 0x%02x, "
						 "interpreter 0x%02x", i, c, mem[c * r->in_len + i],
						 r->want_mem[i]);
					return buf;
				}
	for (size_t k = 0; k < r->check_cnt; k++) {
		const struct check *c = &r->checks[k];
		uint64_t ids[1024];

		if (!strcmp(c->kind, "r0_lane_thread")) {
			for (uint32_t t = 0; t < r->threads; t++) {
				uint64_t want = warp ? (t & ~31u) : ((uint64_t)(t % 32) << 32 | t);

				if (r0[t] != want) {
					snprintf(buf, len, "r0 = 0x%" PRIx64 " on thread %u, want 0x%" PRIx64,
						 r0[t], t, want);
					return buf;
				}
			}
		} else if (!strcmp(c->kind, "r0_warp_votes")) {
			for (uint32_t t = 0; t < r->threads; t++) {
				uint64_t want = warp_votes_expect(t, r->threads, warp);

				if (r0[t] != want) {
					snprintf(buf, len, "r0 = 0x%" PRIx64 " on thread %u, want 0x%" PRIx64,
						 r0[t], t, want);
					return buf;
				}
			}
		} else if (!strcmp(c->kind, "r0_range")) {
			for (uint32_t t = 0; t < r->threads; t++)
				if ((int64_t)r0[t] < (int64_t)c->a || (int64_t)r0[t] > (int64_t)c->b) {
					snprintf(buf, len, "r0 = %" PRId64 " on thread %u, outside [%" PRId64
						 ", %" PRId64 "]", (int64_t)r0[t], t, (int64_t)c->a,
						 (int64_t)c->b);
					return buf;
				}
		} else if (!strcmp(c->kind, "r0_distinct")) {
			unsigned distinct = 0;

			for (uint32_t t = 0; t < r->threads; t++) {
				bool dup = false;

				for (uint32_t u = 0; u < t && !dup; u++)
					dup = r0[u] == r0[t];
				distinct += !dup;
			}
			if (distinct < c->a) {
				snprintf(buf, len, "%u distinct r0 values, want at least %" PRIu64,
					 distinct, c->a);
				return buf;
			}
		} else if (!strcmp(c->kind, "map_u64")) {
			const struct bmap *m = c->a < r->map_cnt ? &r->maps[c->a] : NULL;
			uint64_t v = 0;

			if (!m || !m->after || c->b + 8 > m->bytes)
				return "map_u64: no such map value";
			memcpy(&v, m->after + c->b, 8);
			if (v != c->c) {
				snprintf(buf, len, "map %" PRIu64 " at %" PRIu64 " = %" PRIu64 ", want %"
					 PRIu64, c->a, c->b, v, c->c);
				return buf;
			}
		} else if (!strcmp(c->kind, "hash_keys")) {
			/* map a's table (codegen/ptx/ptx.h): b FULL buckets, u32 key k -> u64 k * c + 1 */
			const struct bmap *m = c->a < r->map_cnt ? &r->maps[c->a] : NULL;
			uint32_t nb, bs, state, key, full = 0;
			uint64_t v;

			if (!m || !m->after || m->bytes < 16 || m->d.key_size != 4 || m->d.value_size != 8)
				return "hash_keys: no such hash map (u32 -> u64)";
			memcpy(&nb, m->after, 4);
			memcpy(&bs, m->after + 4, 4);
			if (!nb || bs < 24 || 16 + (uint64_t)nb * bs > m->bytes)
				return "hash_keys: the table's header is damaged";
			for (uint32_t i = 0; i < nb; i++) {
				const uint8_t *e = m->after + 16 + (size_t)i * bs;

				memcpy(&state, e, 4);
				if (state != 2)	/* GPUEXT_PTX_HASH_FULL */
					continue;
				full++;
				memcpy(&key, e + 8, 4);
				memcpy(&v, e + 16, 8);
				if (v != (uint64_t)key * c->c + 1 || key >= r->threads) {
					snprintf(buf, len, "key %u holds %" PRIu64 ", want %" PRIu64, key, v,
						 (uint64_t)key * c->c + 1);
					return buf;
				}
			}
			if (full != c->b) {
				snprintf(buf, len, "%u keys in the table, want %" PRIu64, full, c->b);
				return buf;
			}
		} else if (!strcmp(c->kind, "r0_ok_or_e2big")) {
			unsigned ok = 0;

			for (uint32_t t = 0; t < r->threads; t += warp ? 32 : 1) {
				if (r0[t] == 0) {
					ok++;
				} else if (r0[t] != (uint64_t)-7) {	/* -E2BIG */
					snprintf(buf, len, "r0 = %" PRId64 " on thread %u, want 0 or -E2BIG",
						 (int64_t)r0[t], t);
					return buf;
				}
			}
			if (ok != c->a) {
				snprintf(buf, len, "%u runners got 0, want %" PRIu64, ok, c->a);
				return buf;
			}
		} else if (!strcmp(c->kind, "ring_ids")) {
			const struct bmap *m = c->a < r->map_cnt ? &r->maps[c->a] : NULL;
			unsigned got;

			if (!m || !m->after)
				return "ring_ids: no such map";
			got = ring_records(m, ids, 1024);
			if (got != c->b) {
				snprintf(buf, len, "%u records, want %" PRIu64, got, c->b);
				return buf;
			}
			for (unsigned i = 0; i < got && i < 1024; i++)
				for (unsigned j = 0; j < i; j++)
					if (ids[i] == ids[j] || ids[i] >= r->threads ||
					    ids[i] % (warp ? 32 : 1)) {
						snprintf(buf, len, "record ids are not one per runner "
							 "(id %" PRIu64 ")", ids[i]);
						return buf;
					}
		} else if (!strcmp(c->kind, "ring_vs_r0")) {
			const struct bmap *m = c->a < r->map_cnt ? &r->maps[c->a] : NULL;
			unsigned got, ok = 0, eagain = 0, runners = copies;

			if (!m || !m->after)
				return "ring_vs_r0: no such map";
			got = ring_records(m, ids, 1024);
			for (uint32_t t = 0; t < r->threads; t += warp ? 32 : 1) {
				ok += r0[t] == 0;
				eagain += r0[t] == (uint64_t)-11;
			}
			if (ok != got || ok + eagain != runners || ok > c->b ||
			    (runners > c->b && ok != c->b) || m->hdr[RING_DROPS] != eagain) {
				snprintf(buf, len, "%u ok, %u -EAGAIN, %u records, %" PRIu64 " drops "
					 "counted (%u runners, room for %" PRIu64 ")", ok, eagain, got,
					 m->hdr[RING_DROPS], runners, c->b);
				return buf;
			}
		} else {
			snprintf(buf, len, "unknown check '%s'", c->kind);
			return buf;
		}
	}
	return NULL;
}

struct fam {
	char name[64];
	unsigned ok[2], diff[2], expected[2], err[2];
};

int main(int argc, char **argv)
{
	const char *dir = NULL, *filter = NULL, *sm = NULL;
	uint32_t timeout_ms = 10000;
	char why[2048], desc[256], path[600];
	struct fam fams[64];
	size_t fam_cnt = 0;
	unsigned total = 0, failures = 0, expected = 0;
	bool stopped = false;
	int cc, lineno = 0, got;
	struct brun r;
	FILE *f;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--timeout-ms") && i + 1 < argc)
			timeout_ms = (uint32_t)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--case") && i + 1 < argc)
			filter = argv[++i];
		else if (!strcmp(argv[i], "--sm") && i + 1 < argc &&
			 (!strcmp(argv[i + 1], "sm_80") || !strcmp(argv[i + 1], "sm_90")))
			sm = argv[++i];
		else if (argv[i][0] != '-' && !dir)
			dir = argv[i];
		else {
			fprintf(stderr, "usage: %s BUNDLE_DIR [--timeout-ms N] [--case SUBSTR] "
				"[--sm sm_80|sm_90]\n", argv[0]);
			return 3;
		}
	}
	if (!dir) {
		fprintf(stderr, "usage: %s BUNDLE_DIR [--timeout-ms N] [--case SUBSTR]\n", argv[0]);
		return 3;
	}
	snprintf(path, sizeof(path), "%s/manifest.txt", dir);
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "no bundle at %s (make one with ptx_isa_runner --bundle DIR)\n", path);
		return 3;
	}
	cc = cuda_open(why, sizeof(why), desc, sizeof(desc));
	if (!cc) {
		fprintf(stderr, "ptx_bundle_run: no usable GPU: %s\n", why);
		fclose(f);
		return 2;
	}
	if (!sm)
		sm = cc >= 90 ? "sm_90" : "sm_80";
	if (!strcmp(sm, "sm_90") && cc < 90) {
		fprintf(stderr, "ptx_bundle_run: %s cannot run sm_90 PTX\n", desc);
		fclose(f);
		return 2;
	}
	printf("device: %s; running the %s PTX\n", desc, sm);
	while (!stopped && (got = next_run(f, &r, &lineno, why, sizeof(why))) == 1) {
		int mode = !strcmp(r.mode, "warp");
		uint32_t copies = mode ? r.threads / 32 : r.threads;
		uint64_t *r0 = calloc(r.threads, 8);
		uint8_t *mem = calloc(copies, r.in_len ? r.in_len : 1);
		struct fam *fm = NULL;
		char buf[512];
		const char *bad;
		int e;

		if (filter && !strstr(r.name, filter)) {
			free(r0);
			free(mem);
			run_free(&r);
			continue;
		}
		for (size_t i = 0; i < fam_cnt; i++)
			if (!strcmp(fams[i].name, r.family))
				fm = &fams[i];
		if (!fm && fam_cnt < 64) {
			fm = &fams[fam_cnt++];
			memset(fm, 0, sizeof(*fm));
			snprintf(fm->name, sizeof(fm->name), "%s", r.family);
		}
		if (!fm)
			fm = &fams[63];
		total++;
		why[0] = '\0';
		e = r0 && mem ? launch(dir, &r, !strcmp(sm, "sm_90"), timeout_ms, r0, mem, why,
				       sizeof(why)) : -1;
		if (e) {
			printf("  %s/%s [%s]: did not run: %s\n", r.family, r.name, r.mode, why);
			fm->err[mode]++;
			failures++;
			stopped = e == -2;
		} else if ((bad = check_run(&r, r0, mem, buf, sizeof(buf)))) {
			printf("  %s/%s [%s]: %s%s%s%s\n", r.family, r.name, r.mode, bad,
			       r.nd[0] ? " (expected: " : "", r.nd, r.nd[0] ? ")" : "");
			if (r.nd[0]) {
				fm->expected[mode]++;
				expected++;
			} else {
				fm->diff[mode]++;
				failures++;
			}
		} else {
			fm->ok[mode]++;
		}
		free(r0);
		free(mem);
		run_free(&r);
	}
	fclose(f);
	if (got < 0) {
		printf("bad manifest, line %d: %s\n", lineno, why);
		failures++;
	}
	printf("\n%-10s %9s %9s %11s %9s %9s %9s %9s\n", "family", "thread-ok", "warp-ok",
	       "thread-diff", "warp-diff", "expected", "errors", "runs");
	for (size_t i = 0; i < fam_cnt; i++) {
		struct fam *fm = &fams[i];

		printf("%-10s %9u %9u %11u %9u %9u %9u %9u\n", fm->name, fm->ok[0], fm->ok[1],
		       fm->diff[0], fm->diff[1], fm->expected[0] + fm->expected[1],
		       fm->err[0] + fm->err[1], fm->ok[0] + fm->ok[1] + fm->diff[0] + fm->diff[1] +
		       fm->expected[0] + fm->expected[1] + fm->err[0] + fm->err[1]);
	}
	if (stopped)
		printf("\nSTOPPED EARLY: a kernel did not finish; the runs after it did not run\n");
	printf("\nresult: %s (%u runs, %u disagreements or errors, %u expected differences)\n",
	       failures ? "FAIL" : "PASS", total, failures, expected);
	if (!stopped)
		cu.DevicePrimaryCtxRelease(cu_dev);
	return failures ? 1 : 0;
}

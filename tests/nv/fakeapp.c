/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A "CUDA application" for tests/test_nv_preload.c, run against the fake
 * libcuda (tests/nv/fakecuda.c) with and without libgpuext-nvprobe.so
 * preloaded. It reaches the driver both ways real programs do:
 *   - linked: cuCtxCreate_v2, cuModuleLoadData, cuModuleGetFunction,
 *     cuLaunchKernel called directly (an app or library built with -lcuda);
 *   - as the CUDA runtime does: dlopen("libcuda.so.1"), dlsym(h,
 *     "cuGetProcAddress_v2"), then every entry point through it.
 * Then it plays the GPU: where the module got a probe map table
 * (gpuext_rt_maps) it writes array values and produces ring records exactly
 * as the device runtime would, prints "ready", waits for a line on stdin
 * (the test reads the shm maps meanwhile), unloads and destroys its context.
 *
 * Output lines (stdout): "rtld_next ok|bad", "table yes|no", "gpu_id N" (when the
 * module has that global), "ring_shards N" (the ring map's shards), "ready". $FAKEAPP_DEVICE picks the device (default 0).
 * Modes (argv[1]): "basic" (default; tests/cli.sh relies on its map values),
 * "multi" = basic plus a second context that adds 8 to array key 1 and is
 * destroyed before "ready" (tests/test_nv_preload.c), "bench [N]" only times
 * N direct launches (host cost of the wrappers). $FAKEAPP_MODE overrides argv[1];
 * "cudart" and "cudart_sync" play nvcc's static cudart (cudart_like()).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nv_cuda.h"
#include "ptx/ptx.h"

CUresult cuInit(unsigned);
CUresult cuDeviceGet(CUdevice *, int);
CUresult cuCtxCreate_v2(CUcontext *, unsigned, CUdevice);
CUresult cuCtxDestroy_v2(CUcontext);
CUresult cuModuleLoadData(CUmodule *, const void *);
CUresult cuModuleUnload(CUmodule);
CUresult cuModuleGetFunction(CUfunction *, CUmodule, const char *);
CUresult cuFuncSetAttribute(CUfunction, int, int);
CUresult cuModuleGetFunctionCount(unsigned *, CUmodule);
CUresult cuModuleEnumerateFunctions(CUfunction *, unsigned, CUmodule);
CUresult cuFuncGetName(const char **, CUfunction);
CUresult cuKernelGetName(const char **, CUkernel);
CUresult cuCtxSetCurrent(CUcontext);
CUresult cuGraphAddKernelNode_v2(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
				 const CUDA_KERNEL_NODE_PARAMS_v2 *);
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			unsigned, CUstream, void **, void **);
CUresult cuStreamEndCapture(CUstream, CUgraph *);
void *fakecuda_global(void *mod, const char *name);

static const char ptx_vadd_text[] =
	"//\n// test module\n//\n"
	".version 8.0\n.target sm_80\n.address_size 64\n\n"
	".visible .entry vadd(\n\t.param .u64 a\n)\n{\n\tret;\n}\n\n"
	".visible .entry other_kernel(\n\t.param .u64 a\n)\n{\n\tret;\n}\n";
/* + a kernel named like a C++ template instance: FAKEAPP_LONG_NAME characters (kernels.txt) */
#define FAKEAPP_LONG_NAME 3000
static char ptx_vadd[sizeof(ptx_vadd_text) + FAKEAPP_LONG_NAME + 64];

static void build_ptx_vadd(void)
{
	size_t n = sizeof(ptx_vadd_text) - 1;

	memcpy(ptx_vadd, ptx_vadd_text, n);
	n += (size_t)sprintf(ptx_vadd + n, "\n.visible .entry other_long_");
	memset(ptx_vadd + n, 'x', FAKEAPP_LONG_NAME - 11);
	n += FAKEAPP_LONG_NAME - 11;
	sprintf(ptx_vadd + n, "()\n{\n\tret;\n}\n");
}

static const char ptx_lib[] =
	".version 8.0\n.target sm_80\n.address_size 64\n\n"
	".visible .entry libk()\n{\n\tret;\n}\n";

static const char ptx_lib3[] =
	".version 8.0\n.target sm_80\n.address_size 64\n\n"
	".visible .entry lib_graph()\n{\n\tret;\n}\n";

static const char ptx_lib2[] =
	".version 8.0\n.target sm_80\n.address_size 64\n\n"
	".visible .entry lib_noctx()\n{\n\tret;\n}\n";

/* An ELF header is all the fake driver and gx_image_kind look at. */
static const unsigned char sass_only[64] = { 0x7f, 'E', 'L', 'F', 2, 1, 1 };

#define CK(call)                                                                  \
	do {                                                                      \
		CUresult r_ = (call);                                             \
		if (r_) {                                                         \
			fprintf(stderr, "fakeapp: %s failed: %d\n", #call, r_);   \
			exit(1);                                                  \
		}                                                                 \
	} while (0)

/*
 * The device runtime's ring protocol (codegen/ptx/ptx_runtime.c gx.rb_reserve)
 * in shard @shard, as a thread on an SM with %smid & (nr_slots - 1) == shard.
 */
static void ring_put(const struct gpuext_ptx_map_desc *d, uint32_t shard, const void *rec,
		     uint32_t len, int discard)
{
	uint32_t ns = d->nr_slots ? d->nr_slots : 1;
	struct gpuext_ptx_ringbuf_hdr *h = (struct gpuext_ptx_ringbuf_hdr *)(uintptr_t)d->aux +
					   (shard & (ns - 1));
	uint8_t *data = (uint8_t *)(uintptr_t)d->base + (uint64_t)(shard & (ns - 1)) * d->max_entries;
	uint64_t cap = d->max_entries, tot = (len + 15) & ~7ull, prod, off, pad, np;
	_Atomic uint32_t *w;

	prod = atomic_load((_Atomic uint64_t *)&h->prod);
	off = prod & (cap - 1);
	pad = off + tot > cap ? cap - off : 0;
	np = prod + pad + tot;
	if (np - atomic_load((_Atomic uint64_t *)&h->cons) > cap) {
		atomic_fetch_add((_Atomic uint64_t *)(uintptr_t)(d->aux + gpuext_ptx_rb_drops_off(ns) +
								  (uint64_t)(shard & (ns - 1)) * 8), 1);
		return;
	}
	atomic_store((_Atomic uint64_t *)&h->prod, np);
	if (pad) {
		memset(data + off + 4, 0, 4);
		atomic_store((_Atomic uint32_t *)(data + off), (uint32_t)(pad - 8) | (1u << 30));
		off = 0;
	}
	w = (_Atomic uint32_t *)(data + off);
	memset(data + off + 4, 0, 4);
	atomic_store(w, len | (1u << 31));
	memcpy(data + off + 8, rec, len);
	atomic_store(w, len | (discard ? 1u << 30 : 0));
}

/* An array map's value @key set to @v in the device layout the table says (4-byte values 4 apart: ptx.h). */
static void put_count(const struct gpuext_ptx_map_desc *d, uint32_t key, uint64_t v)
{
	uint8_t *p = (uint8_t *)(uintptr_t)d->base + (size_t)key * d->stride;

	if (d->value_size == 4)
		*(uint32_t *)p = (uint32_t)v;
	else
		*(uint64_t *)p = v;
}

static void play_gpu(struct gpuext_ptx_map_desc *t)
{
	/* map 0: array of "counts" (u64, or threadhist's u32): key 1 = 42. */
	if (t[0].type == 2 && t[0].base)
		put_count(&t[0], 1, 42);
	/* map 1: per-SM array: key 1, slots 0..nr_slots-1 = 1..nr_slots. */
	if (t[1].type == 6 && t[1].base)
		for (uint32_t s = 0; s < t[1].nr_slots; s++)
			((uint64_t *)(uintptr_t)t[1].base)[1 * t[1].nr_slots + s] = s + 1;
	/* map 3: hash u32 -> u64: keys 7 and 9 in the device layout (buckets FULL). */
	if (t[3].type == 1 && t[3].base) {
		struct gpuext_ptx_hash_hdr *hh = (void *)(uintptr_t)t[3].base;
		uint8_t *b = (uint8_t *)(hh + 1);
		uint32_t keys[2] = { 7, 9 };

		for (int i = 0; i < 2; i++, b += hh->bucket_size) {
			uint32_t st = GPUEXT_PTX_HASH_FULL;
			uint64_t v = keys[i] * 10ull;

			memcpy(b + 8, &keys[i], 4);
			memcpy(b + 16, &v, 8);
			atomic_store((_Atomic uint32_t *)b, st);
		}
	}
	/*
	 * map 2: ring: 3 records in shards 0, 1, 0 (of nr_slots, 16 here: a 128
	 * KiB ring in 8 KiB shards), one discarded in between in shard 0.
	 */
	if (t[2].type == 27 && t[2].aux) {
		printf("ring_shards %u\n", t[2].nr_slots);
		for (uint32_t i = 0; i < 3; i++) {
			uint64_t v = 100 + i;

			ring_put(&t[2], i % 2, &v, sizeof(v), 0);
			if (i == 0)
				ring_put(&t[2], 0, &v, sizeof(v), 1);
		}
	}
}

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t, int *);
static PFN_cuLibraryLoadData lld;
static CUlibrary lib2, lib3;

/* Libraries loaded on a thread with no current context (as cudart may at startup). */
static void *load_without_ctx(void *arg)
{
	(void)arg;
	CK(lld(&lib2, ptx_lib2, NULL, NULL, 0, NULL, NULL, 0));
	CK(lld(&lib3, ptx_lib3, NULL, NULL, 0, NULL, NULL, 0));
	return NULL;
}

/*
 * As nvcc's static cudart does it: the driver reached only through
 * cuGetProcAddress, cuInit after the preload library initialised, the
 * primary context, and nothing unloaded or released at exit. Array key 1 of
 * map 0 becomes 42 after a launch. "cudart_sync" then calls cuCtxSynchronize
 * before "ready" (the maps must be current at once).
 */
static int cudart_like(bool sync)
{
	PFN_cuInit init = NULL;
	PFN_cuDeviceGet devget = NULL;
	PFN_cuDevicePrimaryCtxRetain retain = NULL;
	CUresult (*setcur)(CUcontext) = NULL;
	CUresult (*ctxsync)(void) = NULL;
	PFN_cuModuleLoadData ld = NULL;
	PFN_cuModuleGetFunction gf = NULL;
	PFN_cuLaunchKernel lk = NULL;
	struct gpuext_ptx_map_desc *t;
	char line[64];
	CUfunction f;
	CUcontext c;
	CUmodule m;
	CUdevice d;
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	gpa_fn gpa = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;

	if (!gpa) {
		fprintf(stderr, "fakeapp: no cuGetProcAddress_v2\n");
		return 1;
	}
	CK(gpa("cuInit", (void **)&init, 12000, 0, NULL));
	CK(gpa("cuDeviceGet", (void **)&devget, 12000, 0, NULL));
	CK(gpa("cuDevicePrimaryCtxRetain", (void **)&retain, 12000, 0, NULL));
	CK(gpa("cuCtxSetCurrent", (void **)&setcur, 12000, 0, NULL));
	CK(gpa("cuCtxSynchronize", (void **)&ctxsync, 12000, 0, NULL));
	CK(gpa("cuModuleLoadData", (void **)&ld, 12000, 0, NULL));
	CK(gpa("cuModuleGetFunction", (void **)&gf, 12000, 0, NULL));
	CK(gpa("cuLaunchKernel", (void **)&lk, 12000, 0, NULL));
	CK(init(0));
	CK(devget(&d, getenv("FAKEAPP_DEVICE") ? atoi(getenv("FAKEAPP_DEVICE")) : 0));
	CK(retain(&c, d));
	CK(setcur(c));
	CK(ld(&m, ptx_vadd));
	CK(gf(&f, m, "vadd"));
	CK(lk(f, 4, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL));
	t = fakecuda_global(m, "gpuext_rt_maps");
	printf("table %s\n", t ? "yes" : "no");
	if (t && t[0].type == 2 && t[0].base)
		put_count(&t[0], 1, 42);
	if (sync)
		CK(ctxsync());
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		line[0] = '\0';
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "basic";
	PFN_cuLaunchKernel lk = NULL;
	PFN_cuLaunchKernelEx lke = NULL;
	PFN_cuModuleLoadData ld = NULL;
	PFN_cuModuleGetFunction gf = NULL;
	PFN_cuLibraryGetKernel lgk = NULL;
	CUlaunchConfig cfg = { 3, 1, 1, 32, 1, 1, 0, NULL, NULL, 0 };
	struct gpuext_ptx_map_desc *t;
	CUfunction fv, fo, fs;
	CUmodule m, ms;
	CUlibrary lib;
	CUkernel k, k2, k3;
	CUDA_KERNEL_NODE_PARAMS_v2 gp = { 0 };
	CUgraphNode node;
	CUcontext c2, c0;
	CUmodule m2;
	pthread_t th;
	CUcontext c;
	CUdevice d;
	char line[64];
	gpa_fn gpa;
	void *h;

	build_ptx_vadd();

	if (getenv("FAKEAPP_MODE"))
		mode = getenv("FAKEAPP_MODE");
	if (!strncmp(mode, "cudart", 6))
		return cudart_like(!strcmp(mode, "cudart_sync"));
	CK(cuInit(0));
	CK(cuDeviceGet(&d, getenv("FAKEAPP_DEVICE") ? atoi(getenv("FAKEAPP_DEVICE")) : 0));
	CK(cuCtxCreate_v2(&c, 0, d));
	CK(cuModuleLoadData(&m, ptx_vadd));
	CK(cuModuleGetFunction(&fv, m, "vadd"));
	CK(cuModuleGetFunction(&fo, m, "other_kernel"));
	CK(cuLaunchKernel(fv, 4, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL));

	if (!strcmp(mode, "bench")) {
		/* Host cost of a launch as the app sees it (run by hand, not by the tests). */
		struct timespec t0, t1;
		long n = argc > 2 ? atol(argv[2]) : 1000000;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (long i = 0; i < n; i++)
			CK(cuLaunchKernel(fv, 4, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL));
		clock_gettime(CLOCK_MONOTONIC, &t1);
		printf("%.1f ns per cuLaunchKernel (%ld launches)\n",
		       ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)n, n);
		return 0;
	}

	/*
	 * Flat twins (hal/nvidia/ptx_twin.c): a grid two deep in z runs the
	 * kernel itself; what the app sets on the kernel its twin gets too.
	 */
	CK(cuLaunchKernel(fv, 5, 1, 2, 128, 1, 1, 0, NULL, NULL, NULL));
	CK(cuLaunchKernel(fv, 7, 1, 1, 128, 1, 2, 0, NULL, NULL, NULL));	/* a block two deep */
	CK(cuFuncSetAttribute(fv, 8, 4096));
	CK(cuLaunchKernel(fv, 6, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL));
	{
		/* the module's functions as the app lists them: its own, not the twins */
		CUfunction fl[16];
		unsigned nf = 0;
		const char *fname;

		CK(cuModuleGetFunctionCount(&nf, m));
		printf("functions %u:", nf);
		CK(cuModuleEnumerateFunctions(fl, nf < 16 ? nf : 16, m));
		for (unsigned i = 0; i < nf && i < 16; i++)
			if (cuFuncGetName(&fname, fl[i]) == 0)
				printf(" %.20s", fname);
		printf("\n");
	}

	/* The runtime's way in. */
	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	gpa = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
	if (!gpa) {
		fprintf(stderr, "fakeapp: no cuGetProcAddress_v2\n");
		return 1;
	}
	CK(gpa("cuLaunchKernel", (void **)&lk, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
	       NULL));
	CK(gpa("cuLaunchKernelEx", (void **)&lke, 12000, 0, NULL));
	/*
	 * Refused (an empty grid) and captured into a graph: neither runs, so no
	 * launch record. The capture begins as the runtime begins one, through
	 * cuGetProcAddress (after "bench": its launches pay for no capture check).
	 */
	if (cuLaunchKernel(fv, 0, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL) == 0)
		return 9;
	{
		CUresult (*begin)(CUstream, int) = NULL;
		CUgraph gr;

		CK(gpa("cuStreamBeginCapture", (void **)&begin, 12000, 0, NULL));
		CK(begin(NULL, 0));
		CK(cuLaunchKernel(fv, 9, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL));
		CK(cuStreamEndCapture(NULL, &gr));
	}
	CK(gpa("cuModuleLoadData", (void **)&ld, 12000, 0, NULL));
	CK(gpa("cuModuleGetFunction", (void **)&gf, 12000, 0, NULL));
	CK(gpa("cuLibraryLoadData", (void **)&lld, 12000, 0, NULL));
	CK(gpa("cuLibraryGetKernel", (void **)&lgk, 12000, 0, NULL));
	CK(lk(fv, 2, 1, 1, 64, 1, 1, 0, NULL, NULL, NULL));
	CK(lke(&cfg, fo, NULL, NULL));
	{
		/* cuLaunchKernelEx: flat, the twin; asked to be cooperative, the kernel */
		CUlaunchConfig c8 = { 8, 1, 1, 32, 1, 1, 0, NULL, NULL, 0 };
		unsigned char coop[72] = { 0 };
		int id = 2, on = 1;

		CK(lke(&c8, fv, NULL, NULL));
		memcpy(coop, &id, sizeof(id));
		memcpy(coop + 8, &on, sizeof(on));
		c8.gridDimX = 9;
		c8.attrs = coop;
		c8.numAttrs = 1;
		CK(lke(&c8, fv, NULL, NULL));
	}
	CK(ld(&ms, sass_only));
	CK(gf(&fs, ms, "sass_kernel"));
	CK(lk(fs, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
	CK(lld(&lib, ptx_lib, NULL, NULL, 0, NULL, NULL, 0));
	CK(lgk(&k, lib, "libk"));
	CK(lk((CUfunction)k, 5, 1, 1, 96, 1, 1, 0, NULL, NULL, NULL));
	if (pthread_create(&th, NULL, load_without_ctx, NULL) || pthread_join(th, NULL))
		return 1;
	CK(lgk(&k2, lib2, "lib_noctx"));
	CK(lk((CUfunction)k2, 6, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
	/*
	 * A graph node of a library kernel never launched directly: its tables must be
	 * ready, in the context the node names (GPU 0; the app's own is on the last GPU):
	 * a node of a multi-GPU graph. Its launch records name GPU 0.
	 */
	CK(lgk(&k3, lib3, "lib_graph"));
	CK(cuCtxCreate_v2(&c0, 0, 0));
	CK(cuCtxSetCurrent(c));
	gp.ctx = c0;
	gp.kern = k3;
	gp.gridDimX = gp.gridDimY = gp.gridDimZ = 1;
	gp.gridDimX = 7;
	gp.blockDimX = 64;
	gp.blockDimY = gp.blockDimZ = 1;
	CK(cuGraphAddKernelNode_v2(&node, NULL, NULL, 0, &gp));
	/* The graph instantiated and launched twice, as the runtime does: two launch records. */
	{
		CUresult (*inst)(CUgraphExec *, CUgraph, unsigned long long) = NULL;
		CUresult (*glaunch)(CUgraphExec, CUstream) = NULL;
		CUresult (*gdestroy)(CUgraphExec) = NULL;
		CUresult (*gupdate)(CUgraphExec, CUgraph, void *) = NULL;
		CUresult (*gset)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS_v2 *) = NULL;
		CUresult (*genable)(CUgraphExec, CUgraphNode, unsigned) = NULL;
		CUresult (*gnset)(CUgraphExec, CUgraphNode, CUgraphNodeParams *) = NULL;
		CUgraphNodeParams np;
		CUgraphExec ge;

		CK(gpa("cuGraphInstantiate", (void **)&inst, 12000, 0, NULL));
		CK(gpa("cuGraphLaunch", (void **)&glaunch, 12000, 0, NULL));
		CK(gpa("cuGraphExecDestroy", (void **)&gdestroy, 12000, 0, NULL));
		CK(gpa("cuGraphExecUpdate", (void **)&gupdate, 12000, 0, NULL));
		CK(gpa("cuGraphExecKernelNodeSetParams", (void **)&gset, 12000, 0, NULL));
		CK(gpa("cuGraphNodeSetEnabled", (void **)&genable, 12000, 0, NULL));
		CK(gpa("cuGraphExecNodeSetParams", (void **)&gnset, 12030, 0, NULL));
		CK(inst(&ge, NULL, 0));
		CK(glaunch(ge, NULL));
		CK(glaunch(ge, NULL));
		/* an update, then the first graph's node given a new grid: the records follow it */
		CK(gupdate(ge, NULL, NULL));
		gp.gridDimX = 11;
		CK(gset(ge, node, &gp));
		CK(glaunch(ge, NULL));
		/* the node disabled: a launch that runs nothing, also after an update; enabled again: one more */
		CK(genable(ge, node, 0));
		CK(glaunch(ge, NULL));
		CK(gupdate(ge, NULL, NULL));
		CK(glaunch(ge, NULL));
		CK(genable(ge, node, 1));
		gp.gridDimX = 13;
		CK(gset(ge, node, &gp));
		CK(glaunch(ge, NULL));
		/* the generic call of CUDA 12.2 (a kernel node's parameters in a CUgraphNodeParams) */
		memset(&np, 0, sizeof(np));
		np.type = CU_GRAPH_NODE_TYPE_KERNEL;
		np.kernel = gp;
		np.kernel.gridDimX = 17;
		CK(gnset(ge, node, &np));
		CK(glaunch(ge, NULL));
		/*
		 * The node's parameters read back name the app's kernel, not its flat
		 * twin; given back with a grid two deep in z, the node runs the kernel.
		 */
		{
			CUresult (*gget)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v2 *) = NULL;
			CUDA_KERNEL_NODE_PARAMS_v2 rp;
			const char *kn = "?";

			CK(gpa("cuGraphKernelNodeGetParams", (void **)&gget, 12000, 0, NULL));
			CK(gget(node, &rp));
			CK(cuKernelGetName(&kn, rp.kern));
			printf("node kernel %s\n", kn);
			rp.gridDimX = 19;
			rp.gridDimZ = 2;
			CK(gset(ge, node, &rp));
			CK(glaunch(ge, NULL));
		}
		CK(gdestroy(ge));
	}

	/* glibc resolves RTLD_NEXT from the caller's address: ours must stay the caller. */
	printf("rtld_next %s\n", dlsym(RTLD_NEXT, "dlsym") == dlsym(RTLD_DEFAULT, "dlsym") ?
	       "ok" : "bad");

	if (fakecuda_global((void *)lib3, "gpuext_rt_gpu_id"))
		printf("lib_graph gpu_id %u\n", *(uint32_t *)fakecuda_global((void *)lib3,
									   "gpuext_rt_gpu_id"));
	t = fakecuda_global(m, "gpuext_rt_maps");
	printf("table %s\n", t ? "yes" : "no");
	if (fakecuda_global(m, "gpuext_rt_gpu_id"))
		printf("gpu_id %u\n", *(uint32_t *)fakecuda_global(m, "gpuext_rt_gpu_id"));
	if (t && (!strcmp(mode, "basic") || !strcmp(mode, "multi")))
		play_gpu(t);
	if (t && !strcmp(mode, "multi")) {
		/*
		 * A second context on the same GPU with its own maps: it adds 8 to
		 * array key 1, then goes away before the test looks. Its last
		 * values must stay in the sum (42 + 8).
		 */
		CK(cuCtxCreate_v2(&c2, 0, d));
		CK(cuModuleLoadData(&m2, ptx_vadd));
		t = fakecuda_global(m2, "gpuext_rt_maps");
		if (t && t[0].base)
			put_count(&t[0], 1, 8);
		CK(cuCtxDestroy_v2(c2));
		CK(cuCtxSetCurrent(c));
	}
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		line[0] = '\0';
	CK(cuModuleUnload(m));
	CK(cuCtxDestroy_v2(c));
	return 0;
}

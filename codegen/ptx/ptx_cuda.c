/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Running emitted PTX on an NVIDIA GPU through the CUDA Driver API.
 * libcuda.so.1 is opened with dlopen at run time (never linked), so
 * libgpuext loads on machines without a GPU and says so when asked to run.
 *
 * One run: emit PTX for the device's sm, cuModuleLoadDataEx (the driver
 * JITs it), upload the program's maps (array, per-CPU array, ring buffer)
 * and variables, launch one block of the test kernel, wait with a deadline,
 * copy r0 and the input copies back, optionally write the device's map state
 * back to the host maps, free everything. Device memory is bounded per run
 * (RUN_MEM_LIMIT).
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "maps_impl.h"
#include "ptx/ptx.h"
#include "ptx/ptx_impl.h"

/* The few Driver API types and constants used here (cuda.h is not needed to build). */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_NOT_FOUND 500
#define CUDA_ERROR_NOT_READY 600
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CU_JIT_INFO_LOG_BUFFER 3
#define CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES 4
#define CU_JIT_ERROR_LOG_BUFFER 5
#define CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6

#define RUN_MEM_LIMIT (64u << 20)	/* device bytes one run may allocate */

struct cuda_api {
	CUresult (*Init)(unsigned);
	CUresult (*DriverGetVersion)(int *);
	CUresult (*DeviceGetCount)(int *);
	CUresult (*DeviceGet)(CUdevice *, int);
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
};

/* Owned by the caller of gpuext_ptx_device__open(); one thread uses it at a time. */
struct gpuext_ptx_device {
	void *lib;
	struct cuda_api cu;
	CUdevice dev;
	CUcontext ctx;
	bool ctx_held;
	bool broken;		/* a kernel outlived its deadline: nothing more runs */
	char sm[8];
	char desc[256];
};

static const char *cu_name(const struct gpuext_ptx_device *d, CUresult r)
{
	const char *s = NULL;

	if (d->cu.GetErrorName && d->cu.GetErrorName(r, &s) == CUDA_SUCCESS && s)
		return s;
	return "CUDA_ERROR_?";
}

static void set_err(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

static int load_api(struct gpuext_ptx_device *d, char *err, size_t err_len)
{
	static const struct {
		size_t off;
		const char *names[2];
	} syms[] = {
#define SYM(f, ...) { offsetof(struct cuda_api, f), { __VA_ARGS__ } }
		SYM(Init, "cuInit"),
		SYM(DriverGetVersion, "cuDriverGetVersion"),
		SYM(DeviceGetCount, "cuDeviceGetCount"),
		SYM(DeviceGet, "cuDeviceGet"),
		SYM(DeviceGetName, "cuDeviceGetName"),
		SYM(DeviceGetAttribute, "cuDeviceGetAttribute"),
		SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
		SYM(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"),
		SYM(CtxSetCurrent, "cuCtxSetCurrent"),
		SYM(ModuleLoadDataEx, "cuModuleLoadDataEx"),
		SYM(ModuleUnload, "cuModuleUnload"),
		SYM(ModuleGetFunction, "cuModuleGetFunction"),
		SYM(ModuleGetGlobal, "cuModuleGetGlobal_v2"),
		SYM(MemAlloc, "cuMemAlloc_v2"),
		SYM(MemFree, "cuMemFree_v2"),
		SYM(MemcpyHtoD, "cuMemcpyHtoD_v2"),
		SYM(MemcpyDtoH, "cuMemcpyDtoH_v2"),
		SYM(MemsetD8, "cuMemsetD8_v2"),
		SYM(LaunchKernel, "cuLaunchKernel"),
		SYM(StreamQuery, "cuStreamQuery"),
		SYM(GetErrorName, "cuGetErrorName"),
#undef SYM
	};

	d->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!d->lib) {
		set_err(err, err_len, "cannot load libcuda.so.1 (%s): no NVIDIA driver on this "
			"machine, or it is not on the loader path", dlerror());
		return -ENODEV;
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void *p = NULL;

		for (int n = 0; n < 2 && !p && syms[i].names[n]; n++)
			p = dlsym(d->lib, syms[i].names[n]);
		if (!p) {
			set_err(err, err_len, "libcuda.so.1 lacks %s: driver too old?",
				syms[i].names[0]);
			return -ENODEV;
		}
		memcpy((char *)&d->cu + syms[i].off, &p, sizeof(p));
	}
	return 0;
}

int gpuext_ptx_device__open(int ordinal, struct gpuext_ptx_device **out, char *err,
			    size_t err_len)
{
	struct gpuext_ptx_device *d;
	int count = 0, major = 0, minor = 0, drv = 0, cc, best = 0;
	char name[128] = "?";
	CUresult r;
	int e;

	if (!out)
		return GPUEXT_ERR(EINVAL);
	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return GPUEXT_ERR(ENOMEM);
	e = load_api(d, err, err_len);
	if (e)
		goto fail;
	e = -ENODEV;
	r = d->cu.Init(0);
	if (r != CUDA_SUCCESS) {
		set_err(err, err_len, "cuInit failed: %s (%d): the driver found no usable GPU",
			cu_name(d, r), r);
		goto fail;
	}
	d->cu.DriverGetVersion(&drv);
	if (d->cu.DeviceGetCount(&count) != CUDA_SUCCESS || count <= ordinal || ordinal < 0) {
		set_err(err, err_len, "no CUDA device %d (the driver sees %d)", ordinal, count);
		goto fail;
	}
	r = d->cu.DeviceGet(&d->dev, ordinal);
	if (r == CUDA_SUCCESS)
		r = d->cu.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
					     d->dev);
	if (r == CUDA_SUCCESS)
		r = d->cu.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
					     d->dev);
	if (r != CUDA_SUCCESS) {
		set_err(err, err_len, "CUDA device %d: %s", ordinal, cu_name(d, r));
		goto fail;
	}
	d->cu.DeviceGetName(name, sizeof(name), d->dev);
	/* The newest sm gpuext emits that this GPU runs (PTX JITs forward). */
	cc = major * 10 + minor;
	for (int s = 75; s <= 90; s++) {
		char sm[8];

		snprintf(sm, sizeof(sm), "sm_%d", s);
		if (s <= cc && gpuext_ptx_sm_supported(sm))
			best = s;
	}
	if (!best) {
		set_err(err, err_len, "%s is sm_%d; gpuext emits PTX for sm_75 and newer", name, cc);
		goto fail;
	}
	snprintf(d->sm, sizeof(d->sm), "sm_%d", best);
	snprintf(d->desc, sizeof(d->desc), "%s, sm_%d (PTX for %s), driver CUDA %d.%d", name, cc,
		 d->sm, drv / 1000, drv % 1000 / 10);
	r = d->cu.DevicePrimaryCtxRetain(&d->ctx, d->dev);
	if (r != CUDA_SUCCESS) {
		set_err(err, err_len, "%s: cannot get its context: %s", name, cu_name(d, r));
		goto fail;
	}
	d->ctx_held = true;
	r = d->cu.CtxSetCurrent(d->ctx);
	if (r != CUDA_SUCCESS) {
		set_err(err, err_len, "%s: cuCtxSetCurrent: %s", name, cu_name(d, r));
		goto fail;
	}
	*out = d;
	return 0;
fail:
	gpuext_ptx_device__close(d);
	return GPUEXT_ERR(-e);
}

void gpuext_ptx_device__close(struct gpuext_ptx_device *d)
{
	if (!d)
		return;
	/* After a timeout the kernel may still run: leave the context to process exit. */
	if (d->ctx_held && !d->broken)
		d->cu.DevicePrimaryCtxRelease(d->dev);
	if (d->lib && !d->broken)
		dlclose(d->lib);
	free(d);
}

const char *gpuext_ptx_device__desc(const struct gpuext_ptx_device *d)
{
	return d ? d->desc : "";
}

const char *gpuext_ptx_device__sm(const struct gpuext_ptx_device *d)
{
	return d ? d->sm : GPUEXT_PTX_DEFAULT_SM;
}

/*
 * A kernel fault (illegal address, trap) poisons the context: drop it and
 * take a fresh primary context so that the next run starts clean.
 */
static void renew_ctx(struct gpuext_ptx_device *d)
{
	if (d->ctx_held)
		d->cu.DevicePrimaryCtxRelease(d->dev);
	d->ctx_held = d->cu.DevicePrimaryCtxRetain(&d->ctx, d->dev) == CUDA_SUCCESS;
	if (d->ctx_held)
		d->cu.CtxSetCurrent(d->ctx);
}

/* ------------------------------------------------------------------ */
/* One run                                                              */
/* ------------------------------------------------------------------ */

struct dev_map {
	struct gpuext_map *map;
	CUdeviceptr data, hdr;
	size_t bytes;
	uint8_t *snap;		/* array: the values uploaded */
};

struct run {
	struct gpuext_ptx_device *d;
	struct gpuext_ptx_run_opts *o;
	struct gpuext_prog *prog;
	CUmodule mod;
	CUdeviceptr mem, r0;
	struct dev_map *maps;
	size_t map_cnt;
	CUdeviceptr vars[GPUEXT_PTX_MAX_VARS];
	size_t var_cnt;
	size_t allocated;
	bool fault;
};

#define CU(run, call, what)                                                           \
	do {                                                                           \
		CUresult r_ = (call);                                                  \
		if (r_ != CUDA_SUCCESS) {                                              \
			set_err((run)->o->err, (run)->o->err_len, "%s: %s (%d)", what,    \
				cu_name((run)->d, r_), r_);                            \
			return -EIO;                                                   \
		}                                                                      \
	} while (0)

static int dev_alloc(struct run *x, CUdeviceptr *p, size_t bytes, const char *what)
{
	if (!bytes)
		bytes = 8;
	if (x->allocated + bytes > RUN_MEM_LIMIT) {
		set_err(x->o->err, x->o->err_len, "%s: %zu bytes would pass the %u MiB a run may "
			"use on the device", what, bytes, RUN_MEM_LIMIT >> 20);
		return -E2BIG;
	}
	CU(x, x->d->cu.MemAlloc(p, bytes), what);
	x->allocated += bytes;
	CU(x, x->d->cu.MemsetD8(*p, 0, bytes), what);
	return 0;
}

static uint32_t round8(uint32_t v)
{
	return (v + 7u) & ~7u;
}

int gpuext_ptx_map_image(struct gpuext_map *m, struct gpuext_ptx_map_desc *dd, uint8_t **image,
			 size_t *bytes)
{
	uint32_t type;

	if (!m || !dd || !image || !bytes)
		return GPUEXT_ERR(EINVAL);
	*image = NULL;
	*bytes = 0;
	type = gpuext_map__type(m);
	memset(dd, 0, sizeof(*dd));
	dd->type = type;
	dd->key_size = gpuext_map__key_size(m);
	dd->value_size = gpuext_map__value_size(m);
	dd->max_entries = gpuext_map__max_entries(m);
	dd->stride = round8(dd->value_size);
	dd->nr_slots = 1;
	if (type == BPF_MAP_TYPE_ARRAY || type == BPF_MAP_TYPE_PERCPU_ARRAY) {
		size_t per_key;

		if (type == BPF_MAP_TYPE_PERCPU_ARRAY)
			dd->nr_slots = gpuext_runtime__nr_cpu_slots(m->rt);
		per_key = (size_t)dd->nr_slots * dd->stride;
		*bytes = per_key * dd->max_entries;
		if (*bytes > RUN_MEM_LIMIT) {
			gpuext_log(m->rt, GPUEXT_LOG_WARN, "ptx: map '%s' (%zu bytes) is too big for "
				   "the device (%u MiB)", gpuext_map__name(m), *bytes, RUN_MEM_LIMIT >> 20);
			return GPUEXT_ERR(E2BIG);
		}
		*image = calloc(1, *bytes ? *bytes : 1);
		if (!*image)
			return GPUEXT_ERR(ENOMEM);
		/* The user-space lookup gives a per-CPU value as nr_slots x stride: the device layout. */
		for (uint32_t k = 0; k < dd->max_entries; k++)
			gpuext_map__lookup(m, &k, *image + k * per_key);
		return 0;
	}
	if (type == BPF_MAP_TYPE_RINGBUF) {
		*bytes = dd->max_entries;
		if (*bytes > RUN_MEM_LIMIT)
			return GPUEXT_ERR(E2BIG);
		return 0;
	}
	if (type == BPF_MAP_TYPE_HASH || type == BPF_MAP_TYPE_LRU_HASH)
		return gpuext_ptx_hash_image(m, dd, image, bytes);
	gpuext_log(m->rt, GPUEXT_LOG_WARN, "ptx: map '%s': %s maps are not placed on the device "
		   "(array, percpu_array, hash, lru_hash and ringbuf are)", gpuext_map__name(m),
		   gpuext_map_type_name(type));
	return GPUEXT_ERR(EOPNOTSUPP);
}

static int upload_maps(struct run *x, CUdeviceptr table, size_t table_size)
{
	struct gpuext_ptx_map_desc *descs;
	int err = 0;

	x->map_cnt = x->prog->map_cnt;
	if (!x->map_cnt)
		return 0;
	if (table_size < x->map_cnt * sizeof(*descs)) {
		set_err(x->o->err, x->o->err_len, "gpuext_rt_maps holds %zu bytes, %zu maps need more",
			table_size, x->map_cnt);
		return -EINVAL;
	}
	x->maps = calloc(x->map_cnt, sizeof(*x->maps));
	descs = calloc(x->map_cnt, sizeof(*descs));
	if (!x->maps || !descs) {
		free(descs);
		return -ENOMEM;
	}
	for (size_t i = 0; i < x->map_cnt && !err; i++) {
		struct gpuext_map *m = x->prog->maps[i];
		struct dev_map *dm = &x->maps[i];

		dm->map = m;
		err = gpuext_ptx_map_image(m, &descs[i], &dm->snap, &dm->bytes);
		if (err) {
			set_err(x->o->err, x->o->err_len, "map '%s' cannot be placed on the device "
				"(%s; array, percpu_array, hash, lru_hash and ringbuf are)",
				gpuext_map__name(m),
				strerror(-err));
			break;
		}
		err = dev_alloc(x, &dm->data, dm->bytes, "map data");
		if (!err && dm->snap && dm->bytes &&
		    x->d->cu.MemcpyHtoD(dm->data, dm->snap, dm->bytes) != CUDA_SUCCESS) {
			set_err(x->o->err, x->o->err_len, "uploading map '%s' failed",
				gpuext_map__name(m));
			err = -EIO;
		}
		descs[i].base = dm->data;
		if (!err && descs[i].type == BPF_MAP_TYPE_RINGBUF) {
			err = dev_alloc(x, &dm->hdr, gpuext_ptx_rb_aux_bytes(descs[i].nr_slots),
					"ring buffer header");
			descs[i].aux = dm->hdr;
			if (!err && x->o->rb_start) {
				uint64_t pos[2] = { x->o->rb_start, x->o->rb_start };

				if (x->d->cu.MemcpyHtoD(dm->hdr, pos, sizeof(pos)) != CUDA_SUCCESS) {
					set_err(x->o->err, x->o->err_len, "writing ring buffer '%s' "
						"positions failed", gpuext_map__name(m));
					err = -EIO;
				}
			}
		}
	}
	if (!err && x->d->cu.MemcpyHtoD(table, descs, x->map_cnt * sizeof(*descs)) != CUDA_SUCCESS) {
		set_err(x->o->err, x->o->err_len, "writing gpuext_rt_maps failed");
		err = -EIO;
	}
	free(descs);
	return err;
}

static int upload_vars(struct run *x, CUdeviceptr table, size_t table_size)
{
	struct gpuext_runtime *rt = x->prog->rt;
	struct gpuext_ptx_var tab[GPUEXT_PTX_MAX_VARS];
	int err;

	memset(tab, 0, sizeof(tab));
	if (rt->var_cnt > GPUEXT_PTX_MAX_VARS || table_size < sizeof(tab)) {
		set_err(x->o->err, x->o->err_len, "%zu variables: the device takes %d", rt->var_cnt,
			GPUEXT_PTX_MAX_VARS);
		return -E2BIG;
	}
	for (size_t i = 0; i < rt->var_cnt; i++) {
		err = dev_alloc(x, &x->vars[i], rt->vars[i].size, "variable");
		if (err)
			return err;
		x->var_cnt = i + 1;
		CU(x, x->d->cu.MemcpyHtoD(x->vars[i], rt->vars[i].addr, rt->vars[i].size),
		   "uploading a variable");
		tab[i].id = rt->vars[i].id;
		tab[i].addr = x->vars[i];
	}
	CU(x, x->d->cu.MemcpyHtoD(table, tab, sizeof(tab)), "writing gpuext_rt_vars");
	return 0;
}

/* Device state back into the host objects (after a successful run). */
static int sync_back(struct run *x)
{
	struct gpuext_runtime *rt = x->prog->rt;

	for (size_t i = 0; i < x->var_cnt; i++)
		if (rt->vars[i].writable)
			CU(x, x->d->cu.MemcpyDtoH(rt->vars[i].addr, x->vars[i], rt->vars[i].size),
			   "reading a variable back");
	for (size_t i = 0; i < x->map_cnt; i++) {
		struct dev_map *dm = &x->maps[i];
		uint32_t type = gpuext_map__type(dm->map);

		if (type == BPF_MAP_TYPE_ARRAY || type == BPF_MAP_TYPE_PERCPU_ARRAY) {
			uint32_t n = gpuext_map__max_entries(dm->map);
			size_t per_key = n ? dm->bytes / n : 0;
			uint8_t *now = malloc(dm->bytes ? dm->bytes : 1);

			if (!now)
				return -ENOMEM;
			if (x->d->cu.MemcpyDtoH(now, dm->data, dm->bytes) != CUDA_SUCCESS) {
				free(now);
				set_err(x->o->err, x->o->err_len, "reading map '%s' back failed",
					gpuext_map__name(dm->map));
				return -EIO;
			}
			for (uint32_t k = 0; k < n; k++)
				if (memcmp(now + k * per_key, dm->snap + k * per_key, per_key))
					gpuext_map__update(dm->map, &k, now + k * per_key, BPF_ANY);
			free(now);
		} else if (type == BPF_MAP_TYPE_HASH || type == BPF_MAP_TYPE_LRU_HASH) {
			uint8_t *now = malloc(dm->bytes ? dm->bytes : 1);
			int err;

			if (!now)
				return -ENOMEM;
			if (x->d->cu.MemcpyDtoH(now, dm->data, dm->bytes) != CUDA_SUCCESS) {
				free(now);
				set_err(x->o->err, x->o->err_len, "reading hash map '%s' back failed",
					gpuext_map__name(dm->map));
				return -EIO;
			}
			err = gpuext_ptx_hash_read_back(dm->map, now, dm->bytes);
			free(now);
			if (err) {
				set_err(x->o->err, x->o->err_len, "hash map '%s' could not be read back "
					"(%s)", gpuext_map__name(dm->map), strerror(-err));
				return err;
			}
		} else if (type == BPF_MAP_TYPE_RINGBUF) {
			struct gpuext_ptx_ringbuf_hdr h;
			uint8_t *data = malloc(dm->bytes);
			uint64_t mask = dm->bytes - 1, dropped;

			if (!data)
				return -ENOMEM;
			/* One shard (nr_slots 1): its header, and its drop counter after it. */
			if (x->d->cu.MemcpyDtoH(&h, dm->hdr, sizeof(h)) != CUDA_SUCCESS ||
			    x->d->cu.MemcpyDtoH(&dropped, dm->hdr + gpuext_ptx_rb_drops_off(1),
						sizeof(dropped)) != CUDA_SUCCESS ||
			    x->d->cu.MemcpyDtoH(data, dm->data, dm->bytes) != CUDA_SUCCESS) {
				free(data);
				set_err(x->o->err, x->o->err_len, "reading ring buffer '%s' back failed",
					gpuext_map__name(dm->map));
				return -EIO;
			}
			for (uint64_t pos = h.cons; pos < h.prod;) {
				uint32_t len;

				memcpy(&len, data + (pos & mask), sizeof(len));
				if (len & GPUEXT_RB_BUSY)
					break;	/* reserved, never submitted */
				if (!(len & GPUEXT_RB_DISCARD))
					gpuext_ringbuf_output(dm->map, data + (pos & mask) + 8,
							      len & GPUEXT_RB_LEN_MASK, 0);
				pos += round8((len & GPUEXT_RB_LEN_MASK) + 8);
			}
			if (dropped)
				gpuext_log(rt, GPUEXT_LOG_INFO, "ptx: ring buffer '%s': %llu records "
					   "dropped on the device (full)", gpuext_map__name(dm->map),
					   (unsigned long long)dropped);
			free(data);
		}
	}
	return 0;
}

/* Waits for the launch with a deadline; a fault renews the context. */
static int wait_kernel(struct run *x, uint32_t timeout_ms)
{
	struct timespec t0, now, nap = { 0, 100000 };
	CUresult r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		r = x->d->cu.StreamQuery(NULL);
		if (r != CUDA_ERROR_NOT_READY)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((uint64_t)(now.tv_sec - t0.tv_sec) * 1000 +
			    (uint64_t)((now.tv_nsec - t0.tv_nsec) / 1000000) > timeout_ms) {
			x->d->broken = true;
			set_err(x->o->err, x->o->err_len, "the kernel did not finish within %u ms "
				"(the GPU is left to process exit)", timeout_ms);
			return -ETIMEDOUT;
		}
		nanosleep(&nap, NULL);
	}
	if (r != CUDA_SUCCESS) {
		set_err(x->o->err, x->o->err_len, "the kernel failed: %s (%d)", cu_name(x->d, r), r);
		x->fault = true;
		return -EIO;
	}
	return 0;
}

static int run_module(struct run *x, const char *ptx)
{
	struct gpuext_ptx_run_opts *o = x->o;
	uint32_t threads = o->threads ? o->threads : (o->per_thread ? 1 : 32);
	uint32_t copies = o->per_thread ? threads : (threads + 31) / 32;
	uint64_t len = o->mem ? o->mem_len : 0, stride = ((len ? len : 8) + 15) & ~15ull;
	char jit_err[4096] = "", jit_info[1024] = "";
	int jopt[4] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
			CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES };
	void *jval[4] = { jit_err, (void *)(uintptr_t)sizeof(jit_err), jit_info,
			  (void *)(uintptr_t)sizeof(jit_info) };
	CUdeviceptr table = 0;
	size_t table_size = 0;
	CUfunction fn;
	uint8_t *stage;
	uint32_t n = threads;
	void *params[5];
	CUresult r;
	int err;

	if (threads > 1024 || (!o->per_thread && threads % 32)) {
		set_err(o->err, o->err_len, "%u threads: one block of 1..1024 (warp mode: a multiple "
			"of 32)", threads);
		return -EINVAL;
	}
	r = x->d->cu.ModuleLoadDataEx(&x->mod, ptx, 4, jopt, jval);
	if (r != CUDA_SUCCESS) {
		x->mod = NULL;
		set_err(o->err, o->err_len, "the driver refused the PTX: %s (%d): %.3000s",
			cu_name(x->d, r), r, jit_err);
		return -EIO;
	}
	CU(x, x->d->cu.ModuleGetFunction(&fn, x->mod, GPUEXT_PTX_KERNEL), "cuModuleGetFunction");
	if (x->prog->map_cnt) {
		CU(x, x->d->cu.ModuleGetGlobal(&table, &table_size, x->mod, "gpuext_rt_maps"),
		   "gpuext_rt_maps");
		err = upload_maps(x, table, table_size);
		if (err)
			return err;
	}
	r = x->d->cu.ModuleGetGlobal(&table, &table_size, x->mod, "gpuext_rt_vars");
	if (r == CUDA_SUCCESS) {
		err = upload_vars(x, table, table_size);
		if (err)
			return err;
	}
	if (len) {
		err = dev_alloc(x, &x->mem, stride * copies, "input copies");
		if (err)
			return err;
		stage = malloc(stride * copies);
		if (!stage)
			return -ENOMEM;
		memset(stage, 0, stride * copies);
		for (uint32_t c = 0; c < copies; c++)
			memcpy(stage + c * stride, o->mem, len);
		r = x->d->cu.MemcpyHtoD(x->mem, stage, stride * copies);
		free(stage);
		CU(x, r, "uploading the input");
	}
	err = dev_alloc(x, &x->r0, sizeof(uint64_t) * threads, "r0");
	if (err)
		return err;
	params[0] = &x->mem;
	params[1] = &len;
	params[2] = &stride;
	params[3] = &x->r0;
	params[4] = &n;
	CU(x, x->d->cu.LaunchKernel(fn, 1, 1, 1, threads, 1, 1, 0, NULL, params, NULL),
	   "cuLaunchKernel");
	err = wait_kernel(x, o->timeout_ms ? o->timeout_ms : 10000);
	if (err)
		return err;
	if (o->r0)
		CU(x, x->d->cu.MemcpyDtoH(o->r0, x->r0, sizeof(uint64_t) * threads), "reading r0");
	if (o->mem_out && len) {
		stage = malloc(stride * copies);
		if (!stage)
			return -ENOMEM;
		r = x->d->cu.MemcpyDtoH(stage, x->mem, stride * copies);
		for (uint32_t c = 0; r == CUDA_SUCCESS && c < copies; c++)
			memcpy((uint8_t *)o->mem_out + (size_t)c * len, stage + c * stride, len);
		free(stage);
		CU(x, r, "reading the input copies");
	}
	if (o->sync_maps)
		return sync_back(x);
	return 0;
}

static void run_free(struct run *x)
{
	const struct cuda_api *cu = &x->d->cu;

	if (x->d->broken)
		goto host; /* a kernel may still run on this memory */
	if (x->mem)
		cu->MemFree(x->mem);
	if (x->r0)
		cu->MemFree(x->r0);
	for (size_t i = 0; i < x->var_cnt; i++)
		cu->MemFree(x->vars[i]);
	for (size_t i = 0; x->maps && i < x->map_cnt; i++) {
		if (x->maps[i].data)
			cu->MemFree(x->maps[i].data);
		if (x->maps[i].hdr)
			cu->MemFree(x->maps[i].hdr);
	}
	if (x->mod)
		cu->ModuleUnload(x->mod);
host:
	for (size_t i = 0; x->maps && i < x->map_cnt; i++)
		free(x->maps[i].snap);
	free(x->maps);
}

int gpuext_ptx_device__run(struct gpuext_ptx_device *dev, struct gpuext_prog *prog,
			   struct gpuext_ptx_run_opts *opts)
{
	struct run x = { .d = dev, .o = opts, .prog = prog };
	char *ptx = NULL;
	size_t len = 0;
	int err;

	if (!dev || !prog || !opts)
		return GPUEXT_ERR(EINVAL);
	if (opts->err && opts->err_len)
		opts->err[0] = '\0';
	if (opts->ptx)
		*opts->ptx = NULL;
	if (dev->broken || !dev->ctx_held) {
		set_err(opts->err, opts->err_len, "the GPU is unusable after an earlier failure");
		return GPUEXT_ERR(EIO);
	}
	dev->cu.CtxSetCurrent(dev->ctx);
	err = gpuext_ptx_emit(prog, opts->sm ? opts->sm : dev->sm, opts->per_thread, &ptx, &len);
	if (err) {
		set_err(opts->err, opts->err_len, "emitting PTX failed (%d): see the log", err);
		return err;
	}
	err = run_module(&x, ptx);
	run_free(&x);
	if (x.fault)
		renew_ctx(dev);
	if (opts->ptx)
		*opts->ptx = ptx;
	else
		free(ptx);
	if (err < 0)
		errno = -err;
	return err;
}

int gpuext_ptx_run(struct gpuext_prog *prog, void *mem, size_t len, bool per_thread,
		   uint64_t *r0)
{
	uint64_t r0s[32] = { 0 };
	char err_msg[1024] = "";
	GPUEXT_OPTS(gpuext_ptx_run_opts, o, .per_thread = per_thread,
		    .threads = per_thread ? 1 : 32, .mem = mem, .mem_len = mem ? len : 0,
		    .r0 = r0s, .mem_out = mem, .sync_maps = true, .err = err_msg,
		    .err_len = sizeof(err_msg));
	struct gpuext_ptx_device *dev = NULL;
	int err;

	if (!prog || !r0)
		return GPUEXT_ERR(EINVAL);
	err = gpuext_ptx_device__open(0, &dev, err_msg, sizeof(err_msg));
	if (!err)
		err = gpuext_ptx_device__run(dev, prog, &o);
	if (err)
		gpuext_log(prog->rt, GPUEXT_LOG_WARN, "ptx: program %s on the GPU: %s", prog->name,
			   err_msg[0] ? err_msg : strerror(-err));
	else
		*r0 = r0s[0];
	gpuext_ptx_device__close(dev);
	if (err < 0)
		errno = -err;
	return err;
}

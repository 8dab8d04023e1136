/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Module and library loads inside the traced app: the PTX of the image
 * (gx_image_ptx, for the context's sm) is spliced (gx_ptx_splice, the
 * result cached on disk by gx_cache_*) and loaded in place of the app's
 * image with cuModuleLoadDataEx, so the driver JIT-compiles it as a whole
 * program (and keeps the result in its own compute cache). SASS-only images load unchanged ("sass-only" in kernels.txt); any
 * failure loads the original with a loud message on stderr and an
 * "error:<what>" status. After each load the module's tables
 * (gpuext_rt_maps, gpuext_rt_gpu_id, gpuext_rt_prandom_seed) get the
 * context's values; a library (context-independent) gets them in each
 * context at its first launch there. Function and kernel handles are
 * remembered with their kernel id for the launch records.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nv_preload.h"
#include "ptx_twin.h"
#include "nv_util.h"
#include "ptx_text.h"

static size_t hslot(const void *h)
{
	uintptr_t x = (uintptr_t)h;

	x ^= x >> 17;
	x *= 0x9e3779b97f4a7c15ull;
	return (size_t)(x >> 40) % NV_BUCKETS;
}

/* ---- kernels.txt --------------------------------------------------------- */

/* Whether (id, status) was not reported yet; marks it. Caller holds hlock (write). */
static bool first_report(uint64_t id, const char *status)
{
	uint64_t key = id ^ gx_kernel_id(status, strlen(status));
	size_t i;

	if (!key)
		key = 1;
	if (g.rep_cnt * 2 >= g.rep_cap) {
		size_t cap = g.rep_cap ? g.rep_cap * 2 : 1024;
		uint64_t *t = calloc(cap, sizeof(*t));

		if (!t)
			return true;	/* a duplicate line is better than a lost one */
		for (size_t j = 0; j < g.rep_cap; j++) {
			if (!g.reported[j])
				continue;
			for (i = g.reported[j] % cap; t[i]; i = (i + 1) % cap)
				;
			t[i] = g.reported[j];
		}
		free(g.reported);
		g.reported = t;
		g.rep_cap = cap;
	}
	for (i = key % g.rep_cap; g.reported[i]; i = (i + 1) % g.rep_cap)
		if (g.reported[i] == key)
			return false;
	g.reported[i] = key;
	g.rep_cnt++;
	return true;
}

static void report_kernel(const char *name, const char *status)
{
	uint64_t id = gx_kernel_id(name, strlen(name));
	char stack[1024], *line = stack;
	bool first;
	int n;

	pthread_rwlock_wrlock(&g.hlock);
	first = first_report(id, status);
	pthread_rwlock_unlock(&g.hlock);
	if (!first)
		return;
	/* C++ template kernels' names run to kilobytes: a line takes the whole name */
	n = nv_kernel_line(stack, sizeof(stack), g.pid, id, status, name);
	if (n >= (int)sizeof(stack)) {
		line = malloc((size_t)n + 1);
		n = line ? nv_kernel_line(line, (size_t)n + 1, g.pid, id, status, name) : -1;
	}
	if (n > 0)
		nv_write_all(g.kernels_fd, line, (size_t)n);
	else
		fprintf(stderr, "gpuext-nvprobe: kernel %s (%zu characters) could not be listed: "
			"out of memory\n", status, strlen(name));
	if (line != stack)
		free(line);
}

/* ---- handle tables --------------------------------------------------------- */

static struct nv_img *img_find_locked(const void *h)
{
	for (struct nv_img *m = g.imgs; m; m = m->next)
		if (m->h == h)
			return m;
	return NULL;
}

static struct nv_img *img_find(const void *h)
{
	struct nv_img *m;

	pthread_rwlock_rdlock(&g.hlock);
	m = img_find_locked(h);
	pthread_rwlock_unlock(&g.hlock);
	return m;
}

static struct nv_img *img_add(const void *h, bool is_lib, enum img_state st, const char *status,
			      bool has_table)
{
	struct nv_img *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->h = h;
	m->is_lib = is_lib;
	m->state = st;
	m->has_table = has_table;
	snprintf(m->status, sizeof(m->status), "%s", status ? status : "");
	pthread_rwlock_wrlock(&g.hlock);
	m->next = g.imgs;
	g.imgs = m;
	pthread_rwlock_unlock(&g.hlock);
	return m;
}

/*
 * Handles are read on every launch without a lock: a node is immutable once
 * published (a changed handle gets a new node in front), readers follow
 * acquire loads, and nothing a reader may hold is ever freed: nodes and
 * images of unloaded modules are unlinked, not freed (a few dozen bytes per
 * kernel of an unloaded module, for the life of the process).
 */
static void drop_handles_of(struct nv_img *m)
{
	for (size_t b = 0; b < NV_BUCKETS; b++) {
		_Atomic(struct nv_handle *) *hp = &g.buckets[b];
		struct nv_handle *x;

		while ((x = atomic_load_explicit(hp, memory_order_relaxed))) {
			if (x->img == m)
				atomic_store_explicit(hp, atomic_load_explicit(&x->next,
							memory_order_relaxed), memory_order_release);
			else
				hp = &x->next;
		}
	}
}

/*
 * Forgets an unloaded module/library, the per-context modules aliasing a
 * library, and every handle from them: the driver may reuse the addresses.
 */
static void img_forget(const void *h)
{
	struct nv_img **pp, *m;

	pthread_rwlock_wrlock(&g.hlock);
	for (int pass = 0; pass < 2; pass++) {
		for (pp = &g.imgs; (m = *pp);) {
			bool gone = pass == 0 ? m->lib && m->lib->h == h : m->h == h;

			if (!gone) {
				pp = &m->next;
				continue;
			}
			*pp = m->next;
			drop_handles_of(m);
			m->h = NULL;	/* unlinked; a launch racing the unload may still read it */
		}
	}
	pthread_rwlock_unlock(&g.hlock);
}

struct nv_handle *nv_handle_find(const void *h)
{
	struct nv_handle *x = atomic_load_explicit(&g.buckets[hslot(h)], memory_order_acquire);

	while (x && x->h != h)
		x = atomic_load_explicit(&x->next, memory_order_acquire);
	return x;
}

struct nv_handle *nv_handle_add(const void *h, uint64_t id, struct nv_img *img, const void *twin,
				 bool kern, const void *orig)
{
	struct nv_handle *x;
	size_t b = hslot(h);

	pthread_rwlock_wrlock(&g.hlock);
	x = atomic_load_explicit(&g.buckets[b], memory_order_relaxed);
	while (x && x->h != h)
		x = atomic_load_explicit(&x->next, memory_order_relaxed);
	if (!x || x->id != id || x->img != img || x->twin != twin || x->kern != kern ||
	    x->orig != orig) {
		x = calloc(1, sizeof(*x));
		if (x) {
			x->h = h;
			x->id = id;
			x->img = img;
			x->twin = twin;
			x->orig = orig;
			x->kern = kern;
			atomic_store_explicit(&x->next, atomic_load_explicit(&g.buckets[b],
					      memory_order_relaxed), memory_order_relaxed);
			atomic_store_explicit(&g.buckets[b], x, memory_order_release);
		}
	}
	pthread_rwlock_unlock(&g.hlock);
	return x;
}

/*
 * The flat twin of kernel @name in @owner (a library when @lib), spliced
 * after it (hal/nvidia/ptx_twin.c); NULL when the splice gave it none.
 */
static const void *flat_twin(const void *owner, bool lib, const char *name)
{
	size_t nl = strlen(name), sl = strlen(GX_FLAT_TWIN_SUFFIX);
	char *tn = malloc(nl + sl + 1);
	const void *tw = NULL;
	CUresult r;

	if (!tn)
		return NULL;
	memcpy(tn, name, nl);
	memcpy(tn + nl, GX_FLAT_TWIN_SUFFIX, sl + 1);
	if (lib) {
		CUkernel k = NULL;

		r = real.cuLibraryGetKernel ? real.cuLibraryGetKernel(&k, (CUlibrary)owner, tn) :
					      CUDA_ERROR_NOT_FOUND;
		tw = r == CUDA_SUCCESS ? (const void *)k : NULL;
	} else {
		CUfunction f = NULL;

		r = real.cuModuleGetFunction(&f, (CUmodule)owner, tn);
		tw = r == CUDA_SUCCESS ? (const void *)f : NULL;
	}
	free(tn);
	return tw;
}

/* A function or kernel (@kern) was looked up by name in @owner (a library when @kern). */
static void saw_kernel(const void *h, const char *name, const void *owner, bool kern)
{
	struct nv_img *img = owner ? img_find(owner) : NULL;
	struct nv_img *top = img && img->lib ? img->lib : img;
	const void *twin = NULL;

	if (!h || !name)
		return;
	/* no twin to look for where the pack made none, or none could be launched */
	if (top && top->state == IMG_INSTR && !g.pack.no_flat_twins &&
	    (kern ? g.cu.KernelGetAttribute != NULL : g.cu.FuncGetAttribute != NULL))
		twin = flat_twin(owner, kern, name);
	/*
	 * The twin's own handle too, under the kernel's id, pointing back at the
	 * kernel: a graph node holds the twin (nv_launch.c), and the launch
	 * records of a graph's nodes are read from the driver.
	 */
	if (twin)
		nv_handle_add(twin, gx_kernel_id(name, strlen(name)), img, NULL, kern, h);
	nv_handle_add(h, gx_kernel_id(name, strlen(name)), img, twin, kern, NULL);
	if (img && img->lib)
		img = img->lib;
	if (img && (img->state == IMG_SASS || img->state == IMG_ERROR))
		report_kernel(name, img->status);
}

/* ------------------------------------------------------------------ */
/* Contexts                                                             */
/* ------------------------------------------------------------------ */

static __thread CUcontext tl_ctx;
static __thread struct nv_ctx *tl_state;

/* The state of the current context (set up on first sight); NULL if none. */
struct nv_ctx *nv_current_ctx(void)
{
	CUcontext c = NULL;

	if (g.cu.CtxGetCurrent(&c) != CUDA_SUCCESS || !c)
		return NULL;
	if (c != tl_ctx || !tl_state || tl_state->dead) {
		tl_state = nv_maps__ctx(&g.maps, c);
		tl_ctx = c;
		if (tl_state) {
			nv_maps__start(&g.maps);
			/* Before its first launch, so every launch record can be corrected. */
			nv_clock_calibrate(tl_state);
		}
	}
	return tl_state;
}

/* A module global of @img in the current context (libraries: per context). */
static CUresult img_global(struct nv_img *img, const char *name, CUdeviceptr *p, size_t *size)
{
	if (img->is_lib)
		return g.cu.LibraryGetGlobal ?
			       g.cu.LibraryGetGlobal(p, size, (CUlibrary)img->h, name) :
			       CUDA_ERROR_NOT_SUPPORTED;
	return g.cu.ModuleGetGlobal(p, size, (CUmodule)img->h, name);
}

/* Writes a small value into a module global, if the module has it. */
static void put_global(struct nv_img *img, struct nv_ctx *x, const char *name, const void *v,
		       size_t len)
{
	CUdeviceptr p = 0;
	size_t size = 0;
	int mode;

	if (img_global(img, name, &p, &size) != CUDA_SUCCESS || size < len)
		return;
	mode = nv_capture_relax(&g.cu);
	if (g.cu.MemcpyHtoDAsync(p, v, len, x->stream) == CUDA_SUCCESS)
		g.cu.StreamSynchronize(x->stream);
	nv_capture_restore(&g.cu, mode);
}

/*
 * Writes what a loaded module/library's probes read from the host in
 * context @x: the map descriptors (gpuext_rt_maps), the GPU id
 * (gpuext_rt_gpu_id, ptx_splice.h) and a random seed.
 */
static int fill_table(struct nv_img *img, struct nv_ctx *x)
{
	CUdeviceptr table = 0;
	size_t size = 0;
	uint32_t gpu = x->gpu >= 0 ? (uint32_t)x->gpu : 0;
	uint64_t seed = nv_now_ns() ^ ((uint64_t)g.pid << 32) ^ (uint64_t)(uintptr_t)img;
	int e = 0;

	if (img_global(img, "gpuext_rt_maps", &table, &size) == CUDA_SUCCESS)
		e = nv_maps__fill(&g.maps, x, table, size);
	else if (g.pack.map_cnt)
		e = -ENOENT;
	put_global(img, x, "gpuext_rt_gpu_id", &gpu, sizeof(gpu));
	put_global(img, x, "gpuext_rt_prandom_seed", &seed, sizeof(seed));
	return e;
}

/* Makes sure @img's probes see this context's maps (libraries: once per context). */
void nv_img_ready(struct nv_img *img, struct nv_ctx *x)
{
	int n;

	if (img->lib)
		img = img->lib;
	if (!img->has_table || !x || x->broken)
		return;
	n = atomic_load_explicit(&img->nfilled, memory_order_acquire);
	for (int i = 0; i < n && i < NV_MAX_CTX; i++)
		if (atomic_load_explicit(&img->filled[i], memory_order_relaxed) == x)
			return;
	pthread_rwlock_wrlock(&g.hlock);
	n = atomic_load_explicit(&img->nfilled, memory_order_relaxed);
	for (int i = 0; i < n && i < NV_MAX_CTX; i++)
		if (atomic_load_explicit(&img->filled[i], memory_order_relaxed) == x)
			goto out;
	if (fill_table(img, x)) {
		fprintf(stderr, PFX "ERROR: cannot write the probe map table of a %s in GPU %d's "
			"context: its probes see no maps\n", img->is_lib ? "library" : "module",
			x->gpu);
	}
	if (n < NV_MAX_CTX) {
		atomic_store_explicit(&img->filled[n], x, memory_order_relaxed);
		atomic_store_explicit(&img->nfilled, n + 1, memory_order_release);
	}
out:
	pthread_rwlock_unlock(&g.hlock);
}

/* ------------------------------------------------------------------ */
/* Module images: PTX -> splice (cached) -> the driver's JIT            */
/* ------------------------------------------------------------------ */

/*
 * What to load in place of an app image: always PTX text, which the driver
 * JIT-compiles as a whole program when it is loaded. Not a cubin of our own
 * through cuLink: cuLink compiles relocatable code, which ptxas optimizes
 * less (GPU run 6, H100: a tiled GEMM went from 384 to 472 SASS
 * instructions and ran 1.26x slower with no probe at all, jit-only). The
 * driver keeps its own cache of JIT results (~/.nv/ComputeCache, by PTX
 * content), so a second run does not compile again either.
 */
struct prep {
	void *image;		/* malloc'd NUL-terminated PTX; NULL: the original */
	enum img_state state;
	char status[48];	/* IMG_SASS / IMG_ERROR: for kernels.txt */
	char why[512];		/* IMG_ERROR: the whole story, for stderr */
	char **names;
	size_t nnames;
};

static void prep_free(struct prep *p)
{
	free(p->image);
	nv_free_names(p->names, p->nnames);
	memset(p, 0, sizeof(*p));
}

static void prep_error(struct prep *p, const char *status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void prep_error(struct prep *p, const char *status, const char *fmt, ...)
{
	va_list ap;

	p->state = IMG_ERROR;
	snprintf(p->status, sizeof(p->status), "%s", status);
	va_start(ap, fmt);
	vsnprintf(p->why, sizeof(p->why), fmt, ap);
	va_end(ap);
}

/*
 * Decides what to load for @image on a device of @sm: the spliced PTX (from
 * the cache, keyed by the module's PTX, the pack, the sm and the driver, or
 * spliced now and cached), or nothing (the original: SASS only, filtered,
 * or an error reported by name).
 */
static const char *first_name(const struct prep *p)
{
	return p->nnames ? p->names[0] : "?";
}

/* What a splice whose probes' table had to leave the constant bank declares (ptx_splice.c). */
#define GLOBAL_TABLE ".visible .global .align 8 .b8 gpuext_rt_maps["

/* A memory trace would miss these without a word: say so (from a splice or the cache). */
static void say_untraced(const struct prep *p, unsigned n)
{
	if (n && (g.pack.events & (1u << GX_PROBE_LOAD | 1u << GX_PROBE_STORE)))
		fprintf(stderr, PFX "module with kernel %s: %u global loads/stores in its device "
			"functions (.func, not inlined) are not traced: --kernel leaves out some of "
			"the module's kernels, and device functions are shared by all of them\n",
			first_name(p), n);
}

static void say_table_in_global(const struct prep *p)
{
	fprintf(stderr, PFX "module with kernel %s: its own constant data leaves no room in the "
		"64 KiB constant bank: the probes read their map table from global memory here "
		"(a load more per probe)\n", first_name(p));
}

/*
 * The pack whose probes' map atomics carry policy @pol (the current
 * context's x->l2keep, nv_maps.c): made once per value and kept; its hash,
 * and so the splice cache key, covers the value. &g.pack when @pol is 0 or
 * the rewrite fails (said once).
 */
static const struct gx_pack *l2keep_pack(uint64_t pol)
{
	const struct gx_pack *r = &g.pack;
	struct gx_sha256 h;
	unsigned n = 0;
	char *t = NULL;
	size_t tl = 0;

	if (!pol || !g.pack.ptx)
		return r;
	pthread_mutex_lock(&g.l2lock);
	for (unsigned i = 0; i < g.l2n; i++)
		if (g.l2pol[i] == pol) {
			r = &g.l2pack[i];
			goto out;
		}
	if (g.l2n == NV_L2_PACKS ||
	    gx_ptx_probes_l2keep(g.pack.ptx, g.pack.ptx_len, pol, &t, &tl, &n)) {
		if (!g.l2warned++)
			fprintf(stderr, PFX "warning: the probes run without an L2 policy on "
				"their map atomics (%s)\n",
				g.l2n == NV_L2_PACKS ? "too many kinds of GPU" : "no memory");
		goto out;
	}
	if (!n) {	/* no map atomic in these probes: the pack as it is */
		free(t);
		goto out;
	}
	g.l2pack[g.l2n] = g.pack;
	g.l2pack[g.l2n].ptx = t;
	g.l2pack[g.l2n].ptx_len = tl;
	gx_sha256_init(&h);
	gx_sha256_update(&h, g.pack.hash, sizeof(g.pack.hash));
	gx_sha256_update(&h, "gpuext-l2keep 1", 15);	/* 1: the rewrite's rules */
	gx_sha256_update(&h, &pol, sizeof(pol));
	gx_sha256_final(&h, g.l2pack[g.l2n].hash);
	g.l2pol[g.l2n] = pol;
	g.l2cnt[g.l2n] = n;
	r = &g.l2pack[g.l2n++];
out:
	pthread_mutex_unlock(&g.l2lock);
	return r;
}

static void prepare(const void *image, size_t len, unsigned sm, bool lib, struct prep *p)
{
	char err[512] = "";
	char *ptx = NULL, *out = NULL;
	size_t ptx_len = 0, out_len = 0, cached_len = 0;
	struct gx_splice_stats st;
	const struct gx_pack *pack;
	struct nv_ctx *x;
	uint8_t key[32];
	void *cached = NULL;
	bool any = false;
	int e;

	memset(p, 0, sizeof(*p));
	nv_devices();
	if (gx_image_kind(image, len) == GX_IMAGE_CUBIN) {
		p->state = IMG_SASS;
		snprintf(p->status, sizeof(p->status), "sass-only");
		return;
	}
	e = gx_image_ptx(image, len, sm, &ptx, &ptx_len, err, sizeof(err));
	if (e == -ENOENT) {
		p->state = IMG_SASS;
		snprintf(p->status, sizeof(p->status), "sass-only");
		return;
	}
	if (e) {
		prep_error(p, "error:image", "cannot read the module image: %s", err);
		return;
	}
	if (nv_ptx_entries(ptx, ptx_len, &p->names, &p->nnames)) {
		free(ptx);
		prep_error(p, "error:memory", "out of memory listing its kernels");
		return;
	}
	for (size_t i = 0; i < p->nnames && !any; i++)
		any = nv_filter_match(g.pack.kernel_filter, p->names[i]);
	if (!any) {
		p->state = IMG_FILTERED;
		free(ptx);
		return;
	}
	if (g.jit_only) {
		/* The control: the module's own PTX through the same JIT, no probes. */
		snprintf(p->status, sizeof(p->status), "jit-only");
		p->image = ptx;
		p->state = IMG_INSTR;
		return;
	}
	/*
	 * A module JITs for the current context's GPU: its policy, else one a
	 * GPU of its kind gave. A library JITs for every GPU: a policy only
	 * when they are all of one kind.
	 */
	x = nv_current_ctx();
	pack = l2keep_pack(lib && !g.uniform_sm ? 0 :
			   x && x->sm == sm ? x->l2keep : nv_maps__l2keep(&g.maps, sm));
	gx_cache_key(ptx, ptx_len, pack->hash, sm, g.driver_version, key);
	if (gx_cache_get(key, "ptx", &cached, &cached_len) == 0 && cached_len &&
	    ((char *)cached)[cached_len - 1] == '\0') {
		free(ptx);
		p->image = cached;
		p->state = IMG_INSTR;
		atomic_fetch_add(&g.splice_hits, 1);
		/* the splice moved a table the pack keeps in the constant space */
		if (strstr(cached, GLOBAL_TABLE) && g.pack.ptx && !strstr(g.pack.ptx, GLOBAL_TABLE))
			say_table_in_global(p);
		{
			const char *u = strstr(cached, GX_SPLICE_UNTRACED " ");
			unsigned nu = 0;

			if (u && sscanf(u + strlen(GX_SPLICE_UNTRACED) + 1, "%u", &nu) == 1)
				say_untraced(p, nu);
		}
		return;
	}
	free(cached);
	e = gx_ptx_splice(ptx, ptx_len, pack, &out, &out_len, &st, err, sizeof(err));
	free(ptx);
	if (e) {
		prep_error(p, "error:splice", "splicing the probes in failed: %s", err);
		return;
	}
	atomic_fetch_add(&g.splices, 1);
	if (st.probes_in_global)
		say_table_in_global(p);
	say_untraced(p, st.func_accesses);
	e = gx_cache_put(key, "ptx", out, out_len + 1);
	if (e && !atomic_exchange(&g.cache_warned, true))
		fprintf(stderr, PFX "warning: cannot write the splice cache (%s): every run splices "
			"again\n", strerror(-e));
	p->image = out;
	p->state = IMG_INSTR;
}

/*
 * The device functions the splice gave load/store sites (its GX_SPLICE_FUNC
 * lines, from a splice or the cache): kernels.txt names them, as records of
 * their accesses carry their id.
 */
static void report_funcs(const char *spliced)
{
	char **names;
	size_t n;

	if (nv_tagged_names(spliced, GX_SPLICE_FUNC, &names, &n)) {
		fprintf(stderr, PFX "out of memory listing the device functions of a module\n");
		return;
	}
	for (size_t i = 0; i < n; i++)
		report_kernel(names[i], "device-function");
	nv_free_names(names, n);
}

/* After the real load: the image table, kernels.txt, loud errors, the maps. */
static void loaded(const void *h, bool is_lib, struct prep *p)
{
	struct nv_img *img;

	if (p->state == IMG_ERROR)
		fprintf(stderr, PFX "ERROR: module with kernel %s (%zu kernels): %s; it runs "
			"UNINSTRUMENTED\n", first_name(p), p->nnames, p->why);
	for (size_t i = 0; i < p->nnames; i++) {
		const char *st = p->status;

		if (p->state == IMG_INSTR && g.jit_only)
			st = "jit-only";
		else if (p->state == IMG_INSTR || p->state == IMG_FILTERED)
			st = p->state == IMG_INSTR &&
			     nv_filter_match(g.pack.kernel_filter, p->names[i]) ? "instrumented" :
										   "filtered";
		report_kernel(p->names[i], st);
	}
	if (p->state == IMG_INSTR && !g.jit_only && p->image)
		report_funcs(p->image);
	img = img_add(h, is_lib, p->state, p->status, p->state == IMG_INSTR && !g.jit_only);
	if (img && img->has_table) {
		struct nv_ctx *x = nv_current_ctx();

		if (x)
			nv_img_ready(img, x);
	}
}

static unsigned ctx_sm(void)
{
	struct nv_ctx *x = nv_current_ctx();

	nv_devices();
	return x && x->sm ? x->sm : g.sm0;
}

/* Reads a whole file (cuModuleLoad, cuLibraryLoadFromFile). NULL on any error. */
static void *read_file(const char *path, size_t *len)
{
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && st.st_size > 0 && st.st_size < (1ll << 31))
		buf = malloc((size_t)st.st_size + 1);
	while (buf && got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n <= 0) {
			free(buf);
			buf = NULL;
			break;
		}
		got += (size_t)n;
	}
	close(fd);
	if (buf) {
		buf[got] = '\0';	/* PTX text is loaded as a C string */
		*len = got;
	}
	return buf;
}

/* Loads a module through @load_fn with @p's replacement, falling back loudly. */
typedef CUresult (*mod_load_fn)(CUmodule *m, const void *image, void *arg);

struct ex_args {
	unsigned n;
	CUjit_option *o;
	void **v;
};

/*
 * The spliced PTX through the driver's JIT: with the app's own JIT options
 * when it gave some (cuModuleLoadDataEx), else with an error log, so that a
 * refusal says why.
 */
static CUresult load_ptx(CUmodule *m, const char *ptx, const struct ex_args *a, char *log,
			 size_t log_len)
{
	CUjit_option o[2] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *v[2] = { log, (void *)(uintptr_t)log_len };

	log[0] = '\0';
	if (a && a->n)
		return real.cuModuleLoadDataEx(m, ptx, a->n, a->o, a->v);
	return real.cuModuleLoadDataEx(m, ptx, 2, o, v);
}

static CUresult module_load(CUmodule *m, const void *image, size_t len, mod_load_fn load,
			    const struct ex_args *ex, void *arg)
{
	struct prep p;
	CUresult r;

	prepare(image, len, ctx_sm(), false, &p);
	if (p.image) {
		char log[2048], nb[32];

		r = load_ptx(m, p.image, ex, log, sizeof(log));
		if (r != CUDA_SUCCESS) {
			char *nl = strchr(log, '\n');

			if (nl && nl[1] == '\0')
				*nl = '\0';
			prep_error(&p, "error:jit", "the driver's JIT refused the spliced PTX: %s%s%.300s",
				   nv_cu_name(&g.cu, r, nb, sizeof(nb)), log[0] ? ": " : "", log);
			free(p.image);
			p.image = NULL;
		}
	}
	if (!p.image) {
		r = load(m, image, arg);
		if (r != CUDA_SUCCESS) {
			prep_free(&p);
			return r;	/* the app's own failure: nothing to report */
		}
	}
	loaded(*m, false, &p);
	prep_free(&p);
	return CUDA_SUCCESS;
}

static CUresult load_data(CUmodule *m, const void *image, void *arg)
{
	(void)arg;
	return real.cuModuleLoadData(m, image);
}

static CUresult load_data_ex(CUmodule *m, const void *image, void *arg)
{
	struct ex_args *a = arg;

	return real.cuModuleLoadDataEx(m, image, a->n, a->o, a->v);
}

static CUresult load_fatbin(CUmodule *m, const void *image, void *arg)
{
	(void)arg;
	return real.cuModuleLoadFatBinary(m, image);
}

/* ------------------------------------------------------------------ */
/* Wrappers: modules and libraries                                      */
/* ------------------------------------------------------------------ */

EXPORT CUresult cuModuleLoadData(CUmodule *m, const void *image)
{
	REAL_OR_FAIL(cuModuleLoadData);
	if (!nv_active() || !m || !image)
		return real.cuModuleLoadData(m, image);
	return module_load(m, image, 0, load_data, NULL, NULL);
}

EXPORT CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned n, CUjit_option *o,
				   void **v)
{
	struct ex_args a = { n, o, v };

	REAL_OR_FAIL(cuModuleLoadDataEx);
	if (!nv_active() || !m || !image)
		return real.cuModuleLoadDataEx(m, image, n, o, v);
	return module_load(m, image, 0, load_data_ex, &a, &a);
}

EXPORT CUresult cuModuleLoadFatBinary(CUmodule *m, const void *image)
{
	REAL_OR_FAIL(cuModuleLoadFatBinary);
	if (!nv_active() || !m || !image)
		return real.cuModuleLoadFatBinary(m, image);
	return module_load(m, image, 0, load_fatbin, NULL, NULL);
}

EXPORT CUresult cuModuleLoad(CUmodule *m, const char *path)
{
	void *image;
	size_t len = 0;
	CUresult r;

	REAL_OR_FAIL(cuModuleLoad);
	if (!nv_active() || !m || !path || !real.cuModuleLoadData)
		return real.cuModuleLoad(m, path);
	image = read_file(path, &len);
	if (!image)
		return real.cuModuleLoad(m, path);	/* let the driver say what is wrong */
	r = module_load(m, image, len, load_data, NULL, NULL);
	free(image);
	return r;
}

EXPORT CUresult cuModuleUnload(CUmodule m)
{
	REAL_OR_FAIL(cuModuleUnload);
	if (nv_active()) {
		/* cudart unloads at exit: the last values its kernels left, before they go. */
		if (atomic_load_explicit(&g.maps.dirty, memory_order_relaxed))
			nv_maps__mirror(&g.maps);
		img_forget(m);
	}
	return real.cuModuleUnload(m);
}

EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
	CUresult r;

	REAL_OR_FAIL(cuModuleGetFunction);
	r = real.cuModuleGetFunction(f, m, name);
	if (r == CUDA_SUCCESS && f && nv_active())
		saw_kernel(*f, name, m, false);
	return r;
}

/*
 * Libraries: the spliced PTX, JIT-compiled by the driver per device (with its
 * own compute cache). No context is created here: a temporary one would cost
 * hundreds of ms per library and could change what the app's own primary
 * context setup sees.
 */
/*
 * The sm whose PTX member a library's image gives: the current device's,
 * or, when the GPUs differ or no context is current, g.sm0 (a library is
 * loaded into every context, and PTX JITs for each of them).
 */
static unsigned library_sm(void)
{
	CUcontext c = NULL;
	CUdevice d;
	int major = 0, minor = 0;

	nv_devices();
	if (!g.uniform_sm || g.cu.CtxGetCurrent(&c) != CUDA_SUCCESS || !c ||
	    g.cu.CtxGetDevice(&d) != CUDA_SUCCESS)
		return g.sm0;
	g.cu.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);
	g.cu.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);
	return (unsigned)(major * 10 + minor);
}

static CUresult library_load(CUlibrary *lib, const void *code, size_t len, CUjit_option *jo,
			     void **jv, unsigned jn, CUlibraryOption *lo, void **lv, unsigned ln)
{
	struct prep p;
	unsigned sm = library_sm();
	CUresult r;

	prepare(code, len, sm, true, &p);
	if (p.image) {
		r = real.cuLibraryLoadData(lib, p.image, jo, jv, jn, lo, lv, ln);
		if (r != CUDA_SUCCESS) {
			char nb[32];

			prep_error(&p, "error:jit", "the driver refused the spliced PTX: %s",
				   nv_cu_name(&g.cu, r, nb, sizeof(nb)));
			free(p.image);
			p.image = NULL;
		}
	}
	if (!p.image) {
		r = real.cuLibraryLoadData(lib, code, jo, jv, jn, lo, lv, ln);
		if (r != CUDA_SUCCESS) {
			prep_free(&p);
			return r;
		}
	}
	loaded(*lib, true, &p);
	prep_free(&p);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryLoadData(CUlibrary *lib, const void *code, CUjit_option *jo, void **jv,
				  unsigned jn, CUlibraryOption *lo, void **lv, unsigned ln)
{
	REAL_OR_FAIL(cuLibraryLoadData);
	if (!nv_active() || !lib || !code)
		return real.cuLibraryLoadData(lib, code, jo, jv, jn, lo, lv, ln);
	return library_load(lib, code, 0, jo, jv, jn, lo, lv, ln);
}

EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *lib, const char *path, CUjit_option *jo,
				      void **jv, unsigned jn, CUlibraryOption *lo, void **lv,
				      unsigned ln)
{
	void *code;
	size_t len = 0;
	CUresult r;

	REAL_OR_FAIL(cuLibraryLoadFromFile);
	if (!nv_active() || !lib || !path || !real.cuLibraryLoadData)
		return real.cuLibraryLoadFromFile(lib, path, jo, jv, jn, lo, lv, ln);
	code = read_file(path, &len);
	if (!code)
		return real.cuLibraryLoadFromFile(lib, path, jo, jv, jn, lo, lv, ln);
	r = library_load(lib, code, len, jo, jv, jn, lo, lv, ln);
	free(code);
	return r;
}

EXPORT CUresult cuLibraryUnload(CUlibrary lib)
{
	REAL_OR_FAIL(cuLibraryUnload);
	if (nv_active()) {
		/* cudart unloads at exit: the last values its kernels left, before they go. */
		if (atomic_load_explicit(&g.maps.dirty, memory_order_relaxed))
			nv_maps__mirror(&g.maps);
		img_forget(lib);
	}
	return real.cuLibraryUnload(lib);
}

EXPORT CUresult cuLibraryGetKernel(CUkernel *k, CUlibrary lib, const char *name)
{
	CUresult r;

	REAL_OR_FAIL(cuLibraryGetKernel);
	r = real.cuLibraryGetKernel(k, lib, name);
	if (r == CUDA_SUCCESS && k && nv_active())
		saw_kernel(*k, name, lib, true);
	return r;
}

EXPORT CUresult cuLibraryGetModule(CUmodule *m, CUlibrary lib)
{
	struct nv_img *li, *a;
	CUresult r;

	REAL_OR_FAIL(cuLibraryGetModule);
	r = real.cuLibraryGetModule(m, lib);
	if (r != CUDA_SUCCESS || !m || !nv_active())
		return r;
	li = img_find(lib);
	if (li && !img_find(*m)) {
		a = img_add(*m, false, li->state, li->status, false);
		if (a) {
			pthread_rwlock_wrlock(&g.hlock);
			a->lib = li;
			pthread_rwlock_unlock(&g.hlock);
		}
	}
	return r;
}

EXPORT CUresult cuKernelGetFunction(CUfunction *f, CUkernel k)
{
	struct nv_handle *x;
	CUresult r;

	REAL_OR_FAIL(cuKernelGetFunction);
	r = real.cuKernelGetFunction(f, k);
	if (r == CUDA_SUCCESS && f && nv_active()) {
		x = nv_handle_find(k);
		if (x) {
			CUfunction tf = NULL;

			/* the twin's function in this context goes with it */
			if (!x->twin || atomic_load(&x->twin_ok) < 0 ||
			    real.cuKernelGetFunction(&tf, (CUkernel)x->twin) != CUDA_SUCCESS)
				tf = NULL;
			if (tf)
				nv_handle_add(tf, x->id, x->img, NULL, false, *f);
			nv_handle_add(*f, x->id, x->img, tf, false, NULL);
		}
	}
	return r;
}


/*
 * Kernel attributes: what the app sets on a kernel (the dynamic shared
 * memory it may use, a cache preference, cluster settings) its flat twin
 * gets too, since launches may run the twin in its place (nv_launch.c); a
 * twin that refuses one is never run.
 */
static struct nv_handle *twin_of(const void *f, CUresult r)
{
	struct nv_handle *h;

	if (r != CUDA_SUCCESS || !f || !nv_active())
		return NULL;
	h = nv_handle_find(f);
	return h && h->twin ? h : NULL;
}

static void twin_refused(struct nv_handle *h, CUresult tr)
{
	if (tr != CUDA_SUCCESS)
		atomic_store_explicit(&h->twin_ok, -1, memory_order_relaxed);
}

EXPORT CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v)
{
	struct nv_handle *h;
	CUresult r;

	REAL_OR_FAIL(cuFuncSetAttribute);
	r = real.cuFuncSetAttribute(f, a, v);
	h = twin_of(f, r);
	if (h)
		twin_refused(h, real.cuFuncSetAttribute((CUfunction)h->twin, a, v));
	return r;
}

EXPORT CUresult cuFuncSetCacheConfig(CUfunction f, CUfunc_cache c)
{
	struct nv_handle *h;
	CUresult r;

	REAL_OR_FAIL(cuFuncSetCacheConfig);
	r = real.cuFuncSetCacheConfig(f, c);
	h = twin_of(f, r);
	if (h)
		twin_refused(h, real.cuFuncSetCacheConfig((CUfunction)h->twin, c));
	return r;
}

EXPORT CUresult cuFuncSetSharedMemConfig(CUfunction f, CUsharedconfig c)
{
	struct nv_handle *h;
	CUresult r;

	REAL_OR_FAIL(cuFuncSetSharedMemConfig);
	r = real.cuFuncSetSharedMemConfig(f, c);
	h = twin_of(f, r);
	if (h)
		twin_refused(h, real.cuFuncSetSharedMemConfig((CUfunction)h->twin, c));
	return r;
}

EXPORT CUresult cuKernelSetAttribute(CUfunction_attribute a, int v, CUkernel k, CUdevice d)
{
	struct nv_handle *h;
	CUresult r;

	REAL_OR_FAIL(cuKernelSetAttribute);
	r = real.cuKernelSetAttribute(a, v, k, d);
	h = twin_of(k, r);
	if (h)
		twin_refused(h, real.cuKernelSetAttribute(a, v, (CUkernel)h->twin, d));
	return r;
}

EXPORT CUresult cuKernelSetCacheConfig(CUkernel k, CUfunc_cache c, CUdevice d)
{
	struct nv_handle *h;
	CUresult r;

	REAL_OR_FAIL(cuKernelSetCacheConfig);
	r = real.cuKernelSetCacheConfig(k, c, d);
	h = twin_of(k, r);
	if (h)
		twin_refused(h, real.cuKernelSetCacheConfig((CUkernel)h->twin, c, d));
	return r;
}

/*
 * Listing a module's functions or a library's kernels (CUDA 12.4): the flat
 * twins are ours, not the app's, so they are left out of the list and the
 * count. @all holds @n handles of @owner (a library when @kern); they are
 * compacted in place to the app's own, whose number is returned. A handle
 * whose name cannot be read is kept.
 */
static unsigned drop_twins(void **all, unsigned n, bool kern)
{
	size_t sl = strlen(GX_FLAT_TWIN_SUFFIX);
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++) {
		const char *name = NULL;
		CUresult r = kern ? (g.cu.KernelGetName ?
				     g.cu.KernelGetName(&name, (CUkernel)all[i]) : CUDA_ERROR_NOT_FOUND) :
				    (g.cu.FuncGetName ?
				     g.cu.FuncGetName(&name, (CUfunction)all[i]) : CUDA_ERROR_NOT_FOUND);
		size_t nl = r == CUDA_SUCCESS && name ? strlen(name) : 0;

		if (nl > sl && !strcmp(name + nl - sl, GX_FLAT_TWIN_SUFFIX))
			continue;
		all[k++] = all[i];
	}
	return k;
}

/* Whether @owner's functions include flat twins: an instrumented image (or a library's module). */
static bool has_twins(const void *owner)
{
	struct nv_img *img = owner && nv_active() ? img_find(owner) : NULL;

	if (img && img->lib)
		img = img->lib;
	return img && img->state == IMG_INSTR;
}

/* The driver's count of @owner's functions (a library's kernels when @kern), and its list. */
static CUresult driver_count(const void *owner, bool kern, unsigned *count)
{
	if (kern)
		return real.cuLibraryGetKernelCount ?
			       real.cuLibraryGetKernelCount(count, (CUlibrary)owner) : CUDA_ERROR_NOT_FOUND;
	return real.cuModuleGetFunctionCount ?
		       real.cuModuleGetFunctionCount(count, (CUmodule)owner) : CUDA_ERROR_NOT_FOUND;
}

static CUresult driver_list(const void *owner, bool kern, void **out, unsigned n)
{
	if (kern)
		return real.cuLibraryEnumerateKernels ?
			       real.cuLibraryEnumerateKernels((CUkernel *)out, n, (CUlibrary)owner) :
			       CUDA_ERROR_NOT_FOUND;
	return real.cuModuleEnumerateFunctions ?
		       real.cuModuleEnumerateFunctions((CUfunction *)out, n, (CUmodule)owner) :
		       CUDA_ERROR_NOT_FOUND;
}

/*
 * The app's own handles of @owner into @out (at most @max; NULL: none, the
 * count only), their number in *@count. @total is the driver's count.
 */
static CUresult list_own(const void *owner, bool kern, unsigned total, void **out, unsigned max,
			 unsigned *count)
{
	void **all = calloc(total ? total : 1, sizeof(*all));
	unsigned k;
	CUresult r;

	if (!all)	/* no room to filter: the driver's own answer, twins and all */
		return out ? driver_list(owner, kern, out, max) : CUDA_SUCCESS;
	r = driver_list(owner, kern, all, total);
	if (r == CUDA_SUCCESS) {
		k = drop_twins(all, total, kern);
		if (out)
			memcpy(out, all, (size_t)(k < max ? k : max) * sizeof(*all));
		*count = k;
	}
	free(all);
	return r;
}

/* The counts and lists the app asks for: the driver's, less our flat twins. */
static CUresult count_own(const void *owner, bool kern, unsigned *count)
{
	CUresult r = driver_count(owner, kern, count);

	if (r != CUDA_SUCCESS || !count || !has_twins(owner))
		return r;
	/* a list that cannot be had leaves the driver's count */
	list_own(owner, kern, *count, NULL, 0, count);
	return CUDA_SUCCESS;
}

static CUresult enumerate_own(const void *owner, bool kern, void **out, unsigned n)
{
	unsigned total = 0, k = 0;

	if (!out || !has_twins(owner) || driver_count(owner, kern, &total) != CUDA_SUCCESS)
		return driver_list(owner, kern, out, n);
	return list_own(owner, kern, total, out, n, &k);
}

EXPORT CUresult cuModuleGetFunctionCount(unsigned *count, CUmodule m)
{
	REAL_OR_FAIL(cuModuleGetFunctionCount);
	return count_own(m, false, count);
}

EXPORT CUresult cuModuleEnumerateFunctions(CUfunction *fns, unsigned n, CUmodule m)
{
	REAL_OR_FAIL(cuModuleEnumerateFunctions);
	return enumerate_own(m, false, (void **)fns, n);
}

EXPORT CUresult cuLibraryGetKernelCount(unsigned *count, CUlibrary lib)
{
	REAL_OR_FAIL(cuLibraryGetKernelCount);
	return count_own(lib, true, count);
}

EXPORT CUresult cuLibraryEnumerateKernels(CUkernel *ks, unsigned n, CUlibrary lib)
{
	REAL_OR_FAIL(cuLibraryEnumerateKernels);
	return enumerate_own(lib, true, (void **)ks, n);
}

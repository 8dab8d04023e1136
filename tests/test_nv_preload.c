/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libgpuext-nvprobe.so without a GPU.
 *
 * Unit parts (hal/nvidia/nv_util.c, nv_maps.c): .entry names of PTX, the
 * kernel filter, kernels.txt lines, which versioned entry point a
 * cuGetProcAddress request means, folding per-GPU values, writing the shm
 * maps of another process (array + ring producer, read back through
 * libgpuext's own reader and consumer), and placing and draining a sharded
 * device ring through a fake driver in this process.
 *
 * End to end (when the build has the preload library): this process plays
 * `gpuext trace` (publishes maps, writes a pack) and runs tests/nv/fakeapp
 * with LD_PRELOAD against the fake libcuda (tests/nv/fakecuda.c), then checks
 * what the app's driver saw (the fake's log), kernels.txt, launches.bin and
 * the shm maps, live and after exit; again with a warm JIT cache, without
 * GPUEXT_TRACE_DIR, with a bad pack, and with a JIT that fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "maps_impl.h"
#include "ptx/ptx.h"
#include "nv_impl.h"
#include "nv_util.h"
#include "testlib.h"

/* ------------------------------------------------------------------ */
/* Pure parts                                                           */
/* ------------------------------------------------------------------ */

static void test_entries(void)
{
	static const char ptx[] =
		"// .entry not_me(\n/* .entry nor_me( */\n.version 8.0\n"
		".visible .entry vadd(\n.param .u64 a)\n{ ret; }\n"
		".func helper() { ret; }\n"
		".entry _Z3fooPf$x ( ) { ret; }\n"
		".file 1 \".entry quoted\"\n";
	char **names;
	size_t n;

	CHECK_EQ_INT(nv_ptx_entries(ptx, sizeof(ptx) - 1, &names, &n), 0);
	CHECK_EQ_INT(n, 2);
	if (n == 2) {
		CHECK(!strcmp(names[0], "vadd"));
		CHECK(!strcmp(names[1], "_Z3fooPf$x"));
	}
	nv_free_names(names, n);

	/* The device functions a splice gave sites (GX_SPLICE_FUNC lines), for kernels.txt. */
	{
		static const char sp[] = "// gpuext-device-function-x not_a_tag\n"
			"\tld.u32 %r1, [a]; // gpuext-device-function mid_line\n"
			"\n" GX_SPLICE_UNTRACED " 2\n"
			GX_SPLICE_FUNC " _Z7axpy_atPKfPfi\n" GX_SPLICE_FUNC " last";

		CHECK_EQ_INT(nv_tagged_names(sp, GX_SPLICE_FUNC, &names, &n), 0);
		CHECK_EQ_INT(n, 2);
		if (n == 2) {
			CHECK(!strcmp(names[0], "_Z7axpy_atPKfPfi"));
			CHECK(!strcmp(names[1], "last"));
		}
		nv_free_names(names, n);
		CHECK_EQ_INT(nv_tagged_names("nothing here", GX_SPLICE_FUNC, &names, &n), 0);
		CHECK_EQ_INT(n, 0);
		CHECK(names == NULL);
	}
}

static void test_filter_and_line(void)
{
	char buf[256];

	CHECK(nv_filter_match("", "anything"));
	CHECK(nv_filter_match(NULL, "anything"));
	CHECK(nv_filter_match("vadd*", "vadd_f32"));
	CHECK(!nv_filter_match("vadd*", "other"));
	CHECK(nv_filter_match("[vl]*", "libk"));
	nv_kernel_line(buf, sizeof(buf), 42, 0xabcull, "error:jit failed", "k");
	CHECK(!strcmp(buf, "42 0000000000000abc error:jit_failed k\n"));
}

/* The ration of mirrors at synchronizing calls (preload.c, nv_sync_mirror). */
static void test_sync_gap(void)
{
	CHECK_EQ_U64(nv_sync_gap_ns(0, 1), 2000000);		/* the 2 ms floor */
	CHECK_EQ_U64(nv_sync_gap_ns(10000, 1), 2000000);	/* 10 us x 100 = 1 ms: the floor */
	CHECK_EQ_U64(nv_sync_gap_ns(100000, 1), 10000000);	/* 100 us at 1%: 10 ms */
	CHECK_EQ_U64(nv_sync_gap_ns(100000, 2), 5000000);	/* at 2%: 5 ms */
	CHECK_EQ_U64(nv_sync_gap_ns(11000000, 1), 1100000000);	/* an 11 ms drain: 1.1 s */
	CHECK_EQ_U64(nv_sync_gap_ns(11000000, 100), 11000000);	/* 100%: right after it */
	CHECK_EQ_U64(nv_sync_gap_ns(1000, 0), UINT64_MAX);	/* 0: never */
	CHECK_EQ_U64(nv_sync_gap_ns(UINT64_MAX / 50, 1), UINT64_MAX);	/* no overflow */
}

static void test_pick_version(void)
{
	static const struct nv_hook_ver v[] = {
		{ "cuLaunchKernel", "cuLaunchKernel", 4000, false },
		{ "cuLaunchKernel_ptsz", "cuLaunchKernel", 7000, true },
		{ "cuCtxCreate", "cuCtxCreate", 2000, false },
		{ "cuCtxCreate_v2", "cuCtxCreate", 3020, false },
		{ "cuCtxCreate_v3", "cuCtxCreate", 11040, false },
		{ "cuCtxCreate_v4", "cuCtxCreate", 12050, false },
	};
	const struct nv_hook_ver *p;
	size_t n = sizeof(v) / sizeof(v[0]);

	p = nv_pick_version(v, n, "cuLaunchKernel", 12000, NV_PROC_PER_THREAD);
	CHECK(p && !strcmp(p->name, "cuLaunchKernel_ptsz"));
	p = nv_pick_version(v, n, "cuLaunchKernel", 12000, 0);
	CHECK(p && !strcmp(p->name, "cuLaunchKernel"));
	p = nv_pick_version(v, n, "cuCtxCreate", 12080, 0);
	CHECK(p && !strcmp(p->name, "cuCtxCreate_v4"));
	p = nv_pick_version(v, n, "cuCtxCreate", 12000, 0);
	CHECK(p && !strcmp(p->name, "cuCtxCreate_v3"));
	p = nv_pick_version(v, n, "cuCtxCreate", 4000, 0);
	CHECK(p && !strcmp(p->name, "cuCtxCreate_v2"));
	CHECK(!nv_pick_version(v, n, "cuCtxCreate", 1000, 0));
	CHECK(!nv_pick_version(v, n, "cuMemAlloc", 12000, 0));
}

static void test_fold(void)
{
	/* Two "GPUs", 2 entries x 4 device slots of u64, folded into 2 shm slots. */
	uint64_t acc[4] = { 1000, 0, 0, 5 }, base[8] = { 0 }, a[8], b[8];
	/* u32 values in 8-byte strides, with a base to subtract. */
	uint32_t acc32[4] = { 7, 0, 0, 0 }, now32[4] = { 10, 0, 3, 0 }, base32[4] = { 4, 0, 1, 0 };

	for (int i = 0; i < 8; i++) {
		a[i] = (uint64_t)i + 1;
		b[i] = 10ull * ((uint64_t)i + 1);
	}
	nv_fold_values((uint8_t *)acc, 2, (uint8_t *)a, (uint8_t *)base, 4, 2, 8, 8);
	nv_fold_values((uint8_t *)acc, 2, (uint8_t *)b, (uint8_t *)base, 4, 2, 8, 8);
	/* entry 0: slot 0 <- dev slots 0,2; slot 1 <- 1,3 */
	CHECK_EQ_U64(acc[0], 1000 + (1 + 3) + (10 + 30));
	CHECK_EQ_U64(acc[1], 0 + (2 + 4) + (20 + 40));
	CHECK_EQ_U64(acc[2], (5 + 7) + (50 + 70));
	CHECK_EQ_U64(acc[3], 5 + (6 + 8) + (60 + 80));
	nv_fold_values((uint8_t *)acc32, 1, (uint8_t *)now32, (uint8_t *)base32, 1, 2, 4, 8);
	CHECK_EQ_INT(acc32[0], 7 + 6);
	CHECK_EQ_INT(acc32[1], 0);	/* padding lane untouched */
	CHECK_EQ_INT(acc32[2], 2);
}

/* ------------------------------------------------------------------ */
/* shm maps of "gpuext trace" (this process) written through nv_shm     */
/* ------------------------------------------------------------------ */

struct ring_seen {
	uint64_t v[64];
	uint32_t len[64];
	int n;
};

static int on_rec(void *user, const void *data, size_t size)
{
	struct ring_seen *s = user;

	if (s->n < 64) {
		memset(&s->v[s->n], 0, 8);
		memcpy(&s->v[s->n], data, size < 8 ? size : 8);
		s->len[s->n] = (uint32_t)size;
		s->n++;
	}
	return 0;
}

static void pack_map(struct gx_pack_map *pm, struct gpuext_map *m, uint32_t nr_slots)
{
	memset(pm, 0, sizeof(*pm));
	snprintf(pm->name, sizeof(pm->name), "%s", gpuext_map__name(m));
	snprintf(pm->shm, sizeof(pm->shm), "%s", m->shm_name);
	pm->type = gpuext_map__type(m);
	pm->key_size = gpuext_map__key_size(m);
	pm->value_size = gpuext_map__value_size(m);
	pm->max_entries = gpuext_map__max_entries(m);
	pm->nr_slots = nr_slots;
}

static void test_shm(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .publish_maps = true, .nr_cpu_slots = 2);
	GPUEXT_OPTS(gpuext_map_def, ad, .name = "arr", .type = BPF_MAP_TYPE_ARRAY, .key_size = 4,
		    .value_size = 8, .max_entries = 4);
	GPUEXT_OPTS(gpuext_map_def, rd, .name = "rb", .type = BPF_MAP_TYPE_RINGBUF,
		    .max_entries = 4096);
	struct gpuext_ringbuf_consumer *cons = NULL;
	struct gpuext_runtime *rt = NULL;
	struct gpuext_map *arr = NULL, *rb = NULL;
	struct gx_pack_map pm;
	struct nv_shm s, r;
	struct ring_seen seen = { 0 };
	uint64_t vals[4] = { 1, 2, 3, 4 }, got = 0, big[128];
	char err[256] = "";
	uint32_t key = 2;
	int n, total = 0;

	CHECK_EQ_INT(gpuext_runtime__new(&ro, &rt), 0);
	CHECK_EQ_INT(gpuext_map__create(rt, &ad, &arr), 0);
	CHECK_EQ_INT(gpuext_map__create(rt, &rd, &rb), 0);
	if (!arr || !rb)
		goto out;

	pack_map(&pm, arr, 1);
	CHECK_EQ_INT(nv_shm_open(&s, &pm, err, sizeof(err)), 0);
	CHECK_EQ_INT(nv_shm_values_size(&s), 32);
	nv_shm_write_values(&s, vals);
	CHECK_EQ_INT(gpuext_map__lookup(arr, &key, &got), 0);
	CHECK_EQ_U64(got, 3);
	nv_shm_close(&s);

	/* A pack that disagrees with the map is refused, saying how. */
	pm.value_size = 16;
	CHECK_EQ_INT(nv_shm_open(&s, &pm, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "the pack wants array");
	snprintf(pm.shm, sizeof(pm.shm), "/gpuext.999999999.1");
	CHECK_EQ_INT(nv_shm_open(&s, &pm, err, sizeof(err)), -ENOENT);
	CHECK_STR_CONTAINS(err, "cannot open shared memory");

	pack_map(&pm, rb, 1);
	CHECK_EQ_INT(nv_shm_open(&r, &pm, err, sizeof(err)), 0);
	CHECK_EQ_INT(gpuext_ringbuf_consumer__new(rb, on_rec, &seen, &cons), 0);
	/* Records of 1000 bytes: the 5th one wraps past the end of the 4096-byte ring. */
	for (int i = 0; i < 12; i++) {
		memset(big, 0, sizeof(big));
		big[0] = 500 + (uint64_t)i;
		CHECK_EQ_INT(nv_shm_ring_output(&r, big, 1000), 0);
		n = gpuext_ringbuf_consumer__consume(cons);
		total += n > 0 ? n : 0;
	}
	CHECK_EQ_INT(total, 12);
	CHECK_EQ_INT(seen.n, 12);
	for (int i = 0; i < seen.n; i++) {
		CHECK_EQ_U64(seen.v[i], 500 + (uint64_t)i);
		CHECK_EQ_INT(seen.len[i], 1000);
	}
	/* Full: refused and counted. */
	for (int i = 0; i < 4; i++)
		nv_shm_ring_output(&r, big, 1000);
	CHECK_EQ_INT(nv_shm_ring_output(&r, big, 1000), -EAGAIN);
	CHECK(r.host_drops >= 1);
	CHECK_EQ_INT(r.records, 12 + 4);

	nv_shm_close(&r);
out:
	gpuext_ringbuf_consumer__free(cons);
	gpuext_runtime__free(rt);
}

/* ------------------------------------------------------------------ */
/* Device rings: placement, shards, drain through a fake driver         */
/* ------------------------------------------------------------------ */

/*
 * A driver whose "device" memory is host memory, like tests/nv/fakecuda.c,
 * but in this process so the test can look at every step: the cons write
 * checks that the space it frees is already zero on the device, a DtoH can
 * fail, and one DtoH can read its range backwards with the device
 * committing a record half-way (as a copy engine may interleave with a
 * kernel).
 */
static struct {
	struct nv_dmap *m;
	void *allocs[32];
	int nallocs;
	int cons_writes, cons_dirty, memsets, fail_dtoh, dtohs, launches, fail_launch;
	void (*mid_copy)(void);	/* one shot, in the next data DtoH */
} fk;

/* The drain's tidy kernel in test_ring_drain_with(): NULL, or the fake below. */
static struct nv_tidy *fk_t;

static CUresult fk_alloc(CUdeviceptr *p, size_t n)
{
	void *m = calloc(1, n);

	if (!m || fk.nallocs == 32) {
		free(m);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	fk.allocs[fk.nallocs++] = m;
	*p = (CUdeviceptr)(uintptr_t)m;
	return 0;
}

static CUresult fk_host_alloc(void **p, size_t n, unsigned flags)
{
	CUdeviceptr d = 0;
	CUresult r = fk_alloc(&d, n);

	(void)flags;
	*p = (void *)(uintptr_t)d;
	return r;
}

/* A new cons for the header at @d: [old cons, new cons) must already read 0 on the device. */
static void fk_cons_check(CUdeviceptr d, uint64_t to)
{
	struct nv_dmap *m = fk.m;
	uint32_t k = (uint32_t)((d - m->rh_dev) / sizeof(struct gpuext_ptx_ringbuf_hdr));
	const struct gpuext_ptx_ringbuf_hdr *h = (void *)(uintptr_t)(m->rh_dev + k * 32);
	const uint8_t *data = (uint8_t *)(uintptr_t)m->dptr + (size_t)k * m->shard_bytes;

	for (uint64_t p = h->cons; p < to; p++)
		if (data[p & (m->shard_bytes - 1)])
			fk.cons_dirty++;
	fk.cons_writes++;
}

static bool fk_is_cons(CUdeviceptr d, size_t n)
{
	struct nv_dmap *m = fk.m;

	return m && m->rh_dev && n == 8 && d >= m->rh_dev &&
	       d < m->rh_dev + m->nr_shards * sizeof(struct gpuext_ptx_ringbuf_hdr);
}

static CUresult fk_htod(CUdeviceptr d, const void *s, size_t n, CUstream st)
{
	(void)st;
	if (fk_is_cons(d, n)) {
		uint64_t to;

		memcpy(&to, s, 8);
		fk_cons_check(d, to);
	}
	memcpy((void *)(uintptr_t)d, s, n);
	return 0;
}

static CUresult fk_dtoh(void *d, CUdeviceptr s, size_t n, CUstream st)
{
	(void)st;
	fk.dtohs++;
	if (fk.fail_dtoh)
		return CUDA_ERROR_INVALID_VALUE;
	if (fk.mid_copy && fk.m && s >= fk.m->dptr && n > 8) {
		void (*f)(void) = fk.mid_copy;

		/* Backwards in 8-byte pieces; the device acts before the first piece. */
		fk.mid_copy = NULL;
		for (size_t o = n - 8; o >= 8; o -= 8)
			memcpy((uint8_t *)d + o, (uint8_t *)(uintptr_t)s + o, 8);
		f();
		memcpy(d, (void *)(uintptr_t)s, 8);
		return 0;
	}
	memcpy(d, (void *)(uintptr_t)s, n);
	return 0;
}

static CUresult fk_memset32(CUdeviceptr d, unsigned v, size_t n, CUstream st)
{
	(void)st;
	for (size_t i = 0; i < n; i++)
		((uint32_t *)(uintptr_t)d)[i] = v;
	fk.memsets++;
	return 0;
}

/* The tidy kernel as nv_maps.c's PTX does it: per block, zero both ranges, then cons. */
static CUresult fk_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			  unsigned by, unsigned bz, unsigned shm, CUstream st, void **params,
			  void **extra)
{
	const struct nv_tidy_ent *e;

	(void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shm, (void)st, (void)extra;
	if (fk.fail_launch || !fk_t || f != fk_t->fn || !params)
		return CUDA_ERROR_NOT_SUPPORTED;
	e = (const void *)(uintptr_t)*(CUdeviceptr *)params[0];
	for (unsigned i = 0; i < gx; i++) {
		memset((void *)(uintptr_t)e[i].a0, 0, e[i].n0);
		memset((void *)(uintptr_t)e[i].a1, 0, e[i].n1);
		if (e[i].cons_addr) {
			if (fk_is_cons(e[i].cons_addr, 8))
				fk_cons_check(e[i].cons_addr, e[i].cons);
			memcpy((void *)(uintptr_t)e[i].cons_addr, &e[i].cons, 8);
		}
	}
	fk.launches++;
	return 0;
}

static CUresult fk_load(CUmodule *mod, const void *img)
{
	*mod = (CUmodule)(uintptr_t)0x40d;
	return img == nv_tidy_ptx() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_IMAGE;
}

static CUresult fk_getfn(CUfunction *f, CUmodule mod, const char *name)
{
	*f = (CUfunction)(uintptr_t)0xf17;
	return mod && !strcmp(name, "gpuext_ring_tidy") ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

static CUresult fk_sync(CUstream st)
{
	(void)st;
	return 0;
}

static void fk_free(void)
{
	for (int i = 0; i < fk.nallocs; i++)
		free(fk.allocs[i]);
	memset(&fk, 0, sizeof(fk));
}

/* The drop counters of a ring, after its headers (codegen/ptx/ptx.h). */
static uint64_t *dev_drops(const struct gpuext_ptx_map_desc *d)
{
	return (uint64_t *)(uintptr_t)(d->aux + gpuext_ptx_rb_drops_off(d->nr_slots));
}

/* The device runtime's reserve + commit (ptx_runtime.c) on shard @k; -1: full (dropped). */
static uint64_t *dev_put_busy(const struct gpuext_ptx_map_desc *d, uint32_t k, uint32_t len,
			      int discard, bool commit, const void *payload)
{
	struct gpuext_ptx_ringbuf_hdr *h = (struct gpuext_ptx_ringbuf_hdr *)(uintptr_t)d->aux + k;
	uint8_t *data = (uint8_t *)(uintptr_t)d->base + (size_t)k * d->max_entries;
	uint64_t cap = d->max_entries, tot = (len + 15) & ~7ull, off = h->prod & (cap - 1), pad;
	uint32_t w;

	pad = off + tot > cap ? cap - off : 0;
	if (h->prod + pad + tot - h->cons > cap) {
		dev_drops(d)[k]++;
		return NULL;
	}
	h->prod += pad + tot;
	if (pad) {
		w = (uint32_t)(pad - 8) | GPUEXT_RB_DISCARD;
		memcpy(data + off, &w, 4);
		off = 0;
	}
	w = len | GPUEXT_RB_BUSY;
	memcpy(data + off, &w, 4);
	if (commit) {
		memcpy(data + off + 8, payload, len);
		w = len | (discard ? GPUEXT_RB_DISCARD : 0);
		memcpy(data + off, &w, 4);
	}
	return (uint64_t *)(data + off);
}

static int dev_put(const struct gpuext_ptx_map_desc *d, uint32_t k, const void *p, uint32_t len,
		   int discard)
{
	return dev_put_busy(d, k, len, discard, true, p) ? 0 : -1;
}

/* What the shm ring's consumer got: (shard << 32 | seq) first 8 bytes of each record. */
struct ring_log {
	uint64_t seen[2][8192];		/* [shard][seq]: times seen */
	uint64_t next[2];		/* next seq expected per shard: order kept within one */
	int out_of_order, bad_len, n, other;
	uint64_t last;
};

static int on_log(void *user, const void *data, size_t size)
{
	struct ring_log *l = user;
	uint64_t v = 0;

	memcpy(&v, data, size < 8 ? size : 8);
	l->n++;
	l->last = v;
	if (size != 40)
		l->bad_len++;
	if ((v >> 32) < 2 && (v & 0xffffffffu) < 8192) {
		uint32_t k = (uint32_t)(v >> 32), q = (uint32_t)v;

		if (q != l->next[k])
			l->out_of_order++;
		l->next[k] = q + 1;
		l->seen[k][q]++;
	} else {
		l->other++;
	}
	return 0;
}

static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

static struct gpuext_ptx_map_desc *mid_desc;

/* The device finishes the BUSY record at the start of shard 0 (payload, then commit). */
static void commit_first(void)
{
	uint8_t *rec = (uint8_t *)(uintptr_t)mid_desc->base;
	uint64_t v = 0xfeedull;
	uint32_t w = 40;

	memcpy(rec + 8, &v, 8);
	memcpy(rec, &w, 4);
}

enum drain_mode { DRAIN_MEMSET, DRAIN_COPY, DRAIN_TIDY };

static void test_ring_drain_with(enum drain_mode mode)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .publish_maps = true);
	GPUEXT_OPTS(gpuext_map_def, rd, .name = "rbdev", .type = BPF_MAP_TYPE_RINGBUF,
		    .max_entries = 256 << 10);
	struct nv_api cu = { 0 };
	struct nv_dmap m = { 0 };
	struct gpuext_ptx_map_desc d = { 0 };
	struct gpuext_ringbuf_consumer *cons = NULL;
	struct gpuext_runtime *rt = NULL;
	struct gpuext_map *rb = NULL;
	struct ring_log *log = calloc(1, sizeof(*log));
	struct gx_pack_map pm;
	struct nv_shm s = { 0 };
	struct gpuext_ptx_ringbuf_hdr *hd;
	uint64_t rec[5] = { 0 }, moved = 0, total = 0, seq[2] = { 0, 0 };
	char err[256] = "";
	CUresult r;
	int drops, filled;

	cu.MemAlloc = fk_alloc;
	cu.MemHostAlloc = fk_host_alloc;
	cu.MemcpyHtoDAsync = fk_htod;
	cu.MemcpyDtoHAsync = fk_dtoh;
	cu.StreamSynchronize = fk_sync;
	cu.MemsetD32Async = mode == DRAIN_MEMSET ? fk_memset32 : NULL;
	fk.m = &m;
	fk_t = NULL;
	if (mode == DRAIN_TIDY) {
		static struct nv_tidy tidy;

		cu.ModuleLoadData = fk_load;
		cu.ModuleGetFunction = fk_getfn;
		cu.LaunchKernel = fk_launch;
		CHECK_EQ_INT(nv_tidy_init(&cu, &tidy, 2048, err, sizeof(err)), 0);
		CHECK_EQ_U64(tidy.cap, 2048);
		fk_t = &tidy;
	}
	CHECK_EQ_INT(gpuext_runtime__new(&ro, &rt), 0);
	CHECK_EQ_INT(gpuext_map__create(rt, &rd, &rb), 0);
	if (!rb || !log)
		goto out;
	pack_map(&pm, rb, 1);
	CHECK_EQ_INT(nv_shm_open(&s, &pm, err, sizeof(err)), 0);
	CHECK_EQ_INT(gpuext_ringbuf_consumer__new(rb, on_log, log, &cons), 0);

	/* Bad sizes are refused before anything is allocated (the tidy table aside). */
	CHECK_EQ_INT(nv_ring_place(&cu, NULL, &m, 3000, 8, 0, &d, &r), -EINVAL);
	CHECK_EQ_INT(nv_ring_place(&cu, NULL, &m, 512u << 20, 8, 0, &d, &r), -E2BIG);
	CHECK_EQ_INT(fk.nallocs, mode == DRAIN_TIDY ? 2 : 0);	/* its staging and device copy */
	/* 256 KiB on 1 SM: eight shards of 32 KiB, headers contiguous (the test uses two). */
	CHECK_EQ_INT(nv_ring_place(&cu, NULL, &m, 256 << 10, 1, 0, &d, &r), 0);
	CHECK_EQ_INT(d.nr_slots, 8);
	CHECK_EQ_INT(d.max_entries, 32 << 10);
	CHECK_EQ_U64(d.base, m.dptr);
	CHECK_EQ_U64(d.aux, m.rh_dev);
	hd = (struct gpuext_ptx_ringbuf_hdr *)(uintptr_t)d.aux;
	if (d.nr_slots < 2)
		goto out;

	/*
	 * 100 rounds of 40 records of 40 bytes (48 with the header) per shard,
	 * and 6 discarded ones in between: 2208 bytes a round, 6.7 times the 32
	 * KiB of a shard in all (wrap-around, with padding records at the tail).
	 */
	for (int round = 0; round < 100; round++) {
		for (uint32_t k = 0; k < 2; k++)
			for (int i = 0; i < 40; i++) {
				rec[0] = (uint64_t)k << 32 | seq[k];
				if (i % 7 == 3)
					CHECK_EQ_INT(dev_put(&d, k, rec, 40, 1), 0);
				CHECK_EQ_INT(dev_put(&d, k, rec, 40, 0), 0);
				seq[k]++;
			}
		fk.dtohs = 0;
		CHECK_EQ_INT(nv_ring_drain(&cu, NULL, &m, fk_t, &s, &moved), 0);
		CHECK_EQ_U64(moved, 80);
		/* the headers, then both shards' ranges in one copy, twice (they are neighbours) */
		CHECK_EQ_INT(fk.dtohs, 3);
		total += moved;
		gpuext_ringbuf_consumer__consume(cons);
		/* Everything consumed: both shards' data read 0 again on the device. */
		CHECK(all_zero((void *)(uintptr_t)d.base, 2 * (size_t)d.max_entries));
		CHECK_EQ_U64(hd[0].cons, hd[0].prod);
		CHECK_EQ_U64(hd[1].cons, hd[1].prod);
	}
	CHECK_EQ_U64(total, 8000);
	CHECK(hd[0].prod > 6ull * d.max_entries);	/* wrapped around several times */
	CHECK_EQ_INT(log->n, 8000);
	CHECK_EQ_INT(log->out_of_order, 0);
	CHECK_EQ_INT(log->bad_len, 0);
	CHECK_EQ_INT(log->other, 0);
	for (uint32_t k = 0; k < 2; k++)
		for (uint64_t q = 0; q < seq[k]; q++)
			if (log->seen[k][q] != 1) {
				CHECK_EQ_U64(log->seen[k][q], 1);	/* exactly once */
				break;
			}
	CHECK(fk.cons_writes >= 80);
	CHECK_EQ_INT(fk.cons_dirty, 0);	/* zeroed before every cons write */
	CHECK(mode == DRAIN_MEMSET ? fk.memsets > 0 : fk.memsets == 0);
	/* the tidy kernel: one launch a drain, for both shards */
	CHECK_EQ_INT(fk.launches, mode == DRAIN_TIDY ? 100 : 0);
	if (mode == DRAIN_TIDY) {
		/*
		 * A launch that fails: that drain zeroes call by call (each record
		 * once), and the next one launches the kernel again.
		 */
		for (int i = 0; i < 2; i++) {
			rec[0] = seq[0]++;
			CHECK_EQ_INT(dev_put(&d, 0, rec, 40, 0), 0);
			rec[0] = (uint64_t)1 << 32 | seq[1]++;
			CHECK_EQ_INT(dev_put(&d, 1, rec, 40, 0), 0);
			fk.fail_launch = i == 0;
			CHECK_EQ_INT(nv_ring_drain(&cu, NULL, &m, fk_t, &s, &moved), 0);
			CHECK_EQ_U64(moved, 2);
			CHECK(fk_t->fn != NULL && fk_t->warned);
			CHECK_EQ_U64(hd[0].cons, hd[0].prod);
			CHECK_EQ_U64(hd[1].cons, hd[1].prod);
			CHECK(all_zero((void *)(uintptr_t)d.base, 2 * (size_t)d.max_entries));
			CHECK_EQ_INT(fk.cons_dirty, 0);
			CHECK_EQ_INT(fk.launches, 100 + i);
			gpuext_ringbuf_consumer__consume(cons);
		}
		fk.fail_launch = 0;
		CHECK_EQ_INT(log->out_of_order, 0);
		CHECK_EQ_U64(log->next[0], seq[0]);
		CHECK_EQ_U64(log->next[1], seq[1]);
	}

	/* A full shard drops only there; the other one keeps taking records. */
	rec[0] = (uint64_t)1 << 32 | seq[1];
	for (drops = 0, filled = 0; drops < 3;) {
		if (dev_put(&d, 1, rec, 40, 0) == 0) {
			rec[0] = (uint64_t)1 << 32 | ++seq[1];
			filled++;
		} else {
			drops++;
		}
	}
	CHECK(filled >= (int)(d.max_entries / 48) - 1 && filled <= (int)(d.max_entries / 48));
	rec[0] = seq[0]++;
	CHECK_EQ_INT(dev_put(&d, 0, rec, 40, 0), 0);
	CHECK_EQ_U64(dev_drops(&d)[0], 0);
	CHECK_EQ_U64(dev_drops(&d)[1], 3);
	/* the counters are on their own 128-byte line, after every header */
	CHECK_EQ_U64(gpuext_ptx_rb_drops_off(d.nr_slots) % 128, 0);
	CHECK(gpuext_ptx_rb_drops_off(d.nr_slots) >= d.nr_slots * sizeof(*hd));
	/* one shard, as tools/gpu/ptx_bundle_run.c lays it out (RING_AUX, RING_DROPS x 8) */
	CHECK_EQ_U64(gpuext_ptx_rb_drops_off(1), 16 * 8);
	CHECK_EQ_U64(gpuext_ptx_rb_aux_bytes(1), 136);
	CHECK_EQ_U64(gpuext_ptx_rb_drops_off(0), gpuext_ptx_rb_drops_off(1));	/* 0 reads as 1 */
	CHECK_EQ_U64(gpuext_ptx_rb_drops_off(8), 256);
	CHECK_EQ_U64(gpuext_ptx_rb_aux_bytes(1024), 1024 * 40);
	CHECK_EQ_INT(nv_ring_drain(&cu, NULL, &m, fk_t, &s, &moved), 0);
	CHECK_EQ_U64(m.ring_drops, 3);
	CHECK_EQ_U64(moved, 1 + filled);
	gpuext_ringbuf_consumer__consume(cons);
	CHECK_EQ_INT(log->out_of_order, 0);
	CHECK_EQ_U64(log->next[1], seq[1]);

	/*
	 * A BUSY record holds back its own shard only; 0 (reserved, header not
	 * yet written) too. Committed later, both come through.
	 */
	{
		uint64_t *busy, *unwritten, n0 = (uint64_t)log->n;

		rec[0] = seq[0]++;
		busy = dev_put_busy(&d, 0, 40, 0, false, NULL);
		rec[0] = (uint64_t)1 << 32 | seq[1]++;
		CHECK_EQ_INT(dev_put(&d, 1, rec, 40, 0), 0);
		CHECK_EQ_INT(nv_ring_drain(&cu, NULL, &m, fk_t, &s, &moved), 0);
		CHECK_EQ_U64(moved, 1);
		CHECK(busy != NULL);
		if (!busy)
			goto out;
		rec[0] = seq[0] - 1;
		memcpy(busy + 1, rec, 40);
		*(uint32_t *)busy = 40;	/* committed */
		/* Reserved past it with the header still 0. */
		unwritten = dev_put_busy(&d, 0, 40, 0, false, NULL);
		CHECK(unwritten != NULL);
		if (!unwritten)
			goto out;
		*(uint32_t *)unwritten = 0;
		CHECK_EQ_INT(nv_ring_drain(&cu, NULL, &m, fk_t, &s, &moved), 0);
		CHECK_EQ_U64(moved, 1);
		CHECK_EQ_U64(hd[0].cons + 48, hd[0].prod);	/* waits at the unwritten one */
		rec[0] = seq[0]++;
		memcpy(unwritten + 1, rec, 40);
		*(uint32_t *)unwritten = 40;
		CHECK_EQ_INT(nv_ring_drain(&cu, NULL, &m, fk_t, &s, &moved), 0);
		CHECK_EQ_U64(moved, 1);
		gpuext_ringbuf_consumer__consume(cons);
		CHECK_EQ_U64((uint64_t)log->n, n0 + 3);
		CHECK_EQ_INT(log->out_of_order, 0);
	}

	/*
	 * The copy engine reads the payload, the device commits, the copy reads
	 * the committed header: the record must still arrive whole.
	 */
	{
		struct nv_dmap m2 = { 0 };
		struct gpuext_ptx_map_desc d2 = { 0 };

		CHECK_EQ_INT(nv_ring_place(&cu, NULL, &m2, 64 << 10, 0, 0, &d2, &r), 0);
		CHECK_EQ_INT(d2.nr_slots, 1);	/* one shard: no SM count */
		fk.m = &m2;
		mid_desc = &d2;
		CHECK(dev_put_busy(&d2, 0, 40, 0, false, NULL) != NULL);
		fk.mid_copy = commit_first;
		CHECK_EQ_INT(nv_ring_drain(&cu, NULL, &m2, fk_t, &s, &moved), 0);
		CHECK_EQ_U64(moved, 1);
		gpuext_ringbuf_consumer__consume(cons);
		CHECK_EQ_U64(log->last, 0xfeedull);
		CHECK(fk.mid_copy == NULL);

		/* A copy that fails consumes nothing. */
		rec[0] = 0x5eed;
		CHECK_EQ_INT(dev_put(&d2, 0, rec, 40, 0), 0);
		fk.fail_dtoh = 1;
		CHECK_EQ_INT(nv_ring_drain(&cu, NULL, &m2, fk_t, &s, &moved), -EIO);
		fk.fail_dtoh = 0;
		CHECK_EQ_U64(((struct gpuext_ptx_ringbuf_hdr *)(uintptr_t)d2.aux)->cons, 48);
		CHECK_EQ_INT(nv_ring_drain(&cu, NULL, &m2, fk_t, &s, &moved), 0);
		CHECK_EQ_U64(moved, 1);
		gpuext_ringbuf_consumer__consume(cons);
		CHECK_EQ_U64(log->last, 0x5eed);

		/* A header claiming more than was produced: the shard's rest is dropped, zeroed. */
		{
			struct gpuext_ptx_ringbuf_hdr *h2 = (void *)(uintptr_t)d2.aux;
			uint8_t *data = (uint8_t *)(uintptr_t)d2.base;
			uint32_t w = 4000;
			uint64_t hd0 = s.host_drops;

			rec[0] = 0xabc;
			CHECK_EQ_INT(dev_put(&d2, 0, rec, 40, 0), 0);
			memcpy(data + (h2->prod & 0xffff), &w, 4);
			memset(data + (h2->prod & 0xffff) + 8, 0x55, 16);
			h2->prod += 32;
			CHECK_EQ_INT(nv_ring_drain(&cu, NULL, &m2, fk_t, &s, &moved), 0);
			CHECK_EQ_U64(moved, 1);	/* the good one before it */
			CHECK_EQ_U64(s.host_drops, hd0 + 1);
			CHECK_EQ_U64(h2->cons, h2->prod);
			CHECK(all_zero(data, 64 << 10));
		}
		fk.m = &m;
	}
	/*
	 * Shards far apart (4 MiB on one SM: eight of 512 KiB): records in shards
	 * 0, 2 and 7 are three copies in each copy step, not one over the span.
	 */
	{
		struct nv_dmap m4 = { 0 };
		struct gpuext_ptx_map_desc d4 = { 0 };
		static const uint32_t at[3] = { 0, 2, 7 };
		uint64_t n0;

		gpuext_ringbuf_consumer__consume(cons);	/* what the blocks above left */
		n0 = (uint64_t)log->n;

		CHECK_EQ_INT(nv_ring_place(&cu, NULL, &m4, 4u << 20, 1, 0, &d4, &r), 0);
		CHECK_EQ_INT(d4.nr_slots, 8);
		fk.m = &m4;
		for (int i = 0; i < 3; i++) {
			rec[0] = seq[0]++;
			CHECK_EQ_INT(dev_put(&d4, at[i], rec, 40, 0), 0);
		}
		fk.dtohs = 0;
		CHECK_EQ_INT(nv_ring_drain(&cu, NULL, &m4, fk_t, &s, &moved), 0);
		CHECK_EQ_U64(moved, 3);
		CHECK_EQ_INT(fk.dtohs, 1 + 3 + 3);
		CHECK(all_zero((void *)(uintptr_t)d4.base, (size_t)8 * d4.max_entries));
		for (int i = 0; i < 3; i++)
			CHECK_EQ_U64(((struct gpuext_ptx_ringbuf_hdr *)(uintptr_t)d4.aux)[at[i]].cons, 48);
		gpuext_ringbuf_consumer__consume(cons);
		CHECK_EQ_U64((uint64_t)log->n, n0 + 3);
		CHECK_EQ_U64(log->last, seq[0] - 1);	/* shard 7's, published last */
		fk.m = &m;
	}
	/* A probe writing 12,000-byte records: shards of 16 KiB, and such a record arrives whole. */
	{
		static uint64_t big[1500];
		struct nv_dmap m3 = { 0 };
		struct gpuext_ptx_map_desc d3 = { 0 };
		uint32_t bad = log->bad_len;

		CHECK_EQ_INT(nv_ring_place(&cu, NULL, &m3, 128 << 10, 132, 12000, &d3, &r), 0);
		CHECK_EQ_INT(d3.nr_slots, 4);	/* not 16 shards of 8 KiB */
		CHECK_EQ_INT(d3.max_entries, 32 << 10);
		fk.m = &m3;
		/* small records first, then the large one, in one shard */
		rec[0] = 0x5a11;
		CHECK_EQ_INT(dev_put(&d3, 3, rec, 40, 0), 0);
		CHECK_EQ_INT(dev_put(&d3, 3, rec, 40, 0), 0);
		big[0] = 0xb16b16;
		big[1499] = 0xe2d;
		CHECK_EQ_INT(dev_put(&d3, 3, big, 12000, 0), 0);
		CHECK_EQ_INT(nv_ring_drain(&cu, NULL, &m3, fk_t, &s, &moved), 0);
		CHECK_EQ_U64(moved, 3);
		gpuext_ringbuf_consumer__consume(cons);
		CHECK_EQ_U64(log->last, 0xb16b16);
		CHECK_EQ_INT(log->bad_len, bad + 1);	/* its length: 12000, not the usual 40 */
		fk.m = &m;
	}
out:
	nv_shm_close(&s);
	gpuext_ringbuf_consumer__free(cons);
	gpuext_runtime__free(rt);
	free(log);
	fk_free();
}

static void test_ring_drain(void)
{
	CHECK_EQ_INT(nv_ring_shards(4096, 132, 0), 1);
	CHECK_EQ_INT(nv_ring_shards(8 << 10, 132, 0), 1);	/* shards of 8 KiB at least */
	CHECK_EQ_INT(nv_ring_shards(12 << 10, 132, 0), 1);
	CHECK_EQ_INT(nv_ring_shards(32 << 10, 132, 0), 4);
	CHECK_EQ_INT(nv_ring_shards(64 << 10, 132, 0), 8);
	CHECK_EQ_INT(nv_ring_shards(128 << 10, 8, 0), 16);
	CHECK_EQ_INT(nv_ring_shards(1 << 20, 132, 0), 128);
	/* 8 per SM, rounded down to a power of 2: 1056 -> 1024 */
	CHECK_EQ_INT(nv_ring_shards(64 << 20, 132, 0), 1024);
	CHECK_EQ_INT(nv_ring_shards(64 << 20, 1000, 0), 2048);	/* the drain's bound */
	CHECK_EQ_INT(nv_ring_shards(256 << 10, 3, 0), 16);
	CHECK_EQ_INT(nv_ring_shards(1 << 20, 1, 0), 8);
	CHECK_EQ_INT(nv_ring_shards(64 << 20, 0, 0), 1);
	/*
	 * Large records: every shard holds 2 R - 8 bytes, R = the largest record
	 * with its 8-byte header, so an empty shard takes one at any position.
	 */
	CHECK_EQ_INT(nv_ring_shards(4 << 20, 132, 0), 512);
	CHECK_EQ_INT(nv_ring_shards(4 << 20, 132, 4088), 512);	/* R 4096: 2 R - 8 <= 8 KiB */
	CHECK_EQ_INT(nv_ring_shards(4 << 20, 132, 4089), 256);	/* R 4104: 16 KiB shards */
	CHECK_EQ_INT(nv_ring_shards(4 << 20, 132, 12000), 128);	/* 12008: 32 KiB */
	CHECK_EQ_INT(nv_ring_shards(4 << 20, 132, 100000), 16);	/* 256 KiB */
	CHECK_EQ_INT(nv_ring_shards(64 << 10, 132, 40000), 1);	/* the whole ring, one shard */
	/* The property itself: from every 8-aligned position an empty shard takes the record. */
	{
		static const uint32_t recs[] = { 0, 1, 40, 4088, 4089, 8184, 8185, 12000, 16376, 30000 };
		unsigned bad = 0;

		for (size_t i = 0; i < sizeof(recs) / sizeof(recs[0]); i++) {
			uint64_t shard = (4u << 20) / nv_ring_shards(4 << 20, 132, recs[i]);
			uint64_t tot = ((uint64_t)recs[i] + 7) / 8 * 8 + 8;

			for (uint64_t off = 0; off < shard; off += 8)
				bad += !(off + tot <= shard || off >= tot);
		}
		CHECK_EQ_INT(bad, 0);
	}
	test_ring_drain_with(DRAIN_MEMSET);
	test_ring_drain_with(DRAIN_COPY);	/* no cuMemsetD32Async: zeroed by a copy */
	test_ring_drain_with(DRAIN_TIDY);	/* one tidy launch a drain */
	fk_t = NULL;
}

static void test_shm_hash(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .publish_maps = true);
	GPUEXT_OPTS(gpuext_map_def, hd, .name = "h", .type = BPF_MAP_TYPE_HASH, .key_size = 12,
		    .value_size = 4, .max_entries = 3);
	GPUEXT_OPTS(gpuext_map_def, ld, .name = "l", .type = BPF_MAP_TYPE_LRU_HASH, .key_size = 4,
		    .value_size = 8, .max_entries = 4);
	struct gpuext_runtime *rt = NULL;
	struct gpuext_map *h = NULL, *l = NULL;
	struct gx_pack_map pm;
	struct nv_shm s;
	char err[256];
	uint32_t key[3] = { 1, 2, 3 }, v = 0, nb, bs, nb2, bs2;
	size_t bytes, bytes2;

	CHECK_EQ_INT(gpuext_runtime__new(&ro, &rt), 0);
	CHECK_EQ_INT(gpuext_map__create(rt, &hd, &h), 0);
	CHECK_EQ_INT(gpuext_map__create(rt, &ld, &l), 0);
	if (!h || !l)
		goto out;
	/* Our bucket hash is core's. */
	for (uint32_t i = 0; i < 64; i++) {
		key[0] = i * 2654435761u;
		CHECK_EQ_INT(nv_shm_hash(key, 12, h->hdr->hash_seed) & (h->hdr->nr_buckets - 1),
			     gpuext_map_hash_bucket(h, key));
	}
	/* Our device geometry is codegen's. */
	CHECK_EQ_INT(nv_hash_layout(12, 4, 3, &nb, &bs, &bytes), 0);
	CHECK_EQ_INT(gpuext_ptx_hash_layout(12, 4, 3, &nb2, &bs2, &bytes2), 0);
	CHECK(nb == nb2 && bs == bs2 && bytes == bytes2);
	CHECK_EQ_INT(nv_hash_layout(8, 256, 10000, &nb, &bs, &bytes), 0);
	CHECK_EQ_INT(gpuext_ptx_hash_layout(8, 256, 10000, &nb2, &bs2, &bytes2), 0);
	CHECK(nb == nb2 && bs == bs2 && bytes == bytes2);
	CHECK_EQ_INT(nv_hash_layout(8, 256, 100000, &nb, &bs, &bytes), -E2BIG);
	CHECK_EQ_INT(gpuext_ptx_hash_layout(8, 256, 100000, &nb2, &bs2, &bytes2), -E2BIG);
	CHECK_EQ_INT(nv_hash_layout(8, 8, 0, &nb, &bs, &bytes), -EINVAL);

	/* An entry from before is gone after a round; a key seen twice adds up. */
	key[0] = 99;
	v = 5;
	CHECK_EQ_INT(gpuext_map__update(h, key, &v, BPF_ANY), 0);
	pack_map(&pm, h, 1);
	CHECK_EQ_INT(nv_shm_open(&s, &pm, err, sizeof(err)), 0);
	nv_shm_hash_begin(&s);
	key[0] = 1;
	v = 10;
	CHECK_EQ_INT(nv_shm_hash_add(&s, key, &v), 0);
	v = 32;
	CHECK_EQ_INT(nv_shm_hash_add(&s, key, &v), 0);
	key[0] = 2;
	CHECK_EQ_INT(nv_shm_hash_add(&s, key, &v), 0);
	key[0] = 3;
	CHECK_EQ_INT(nv_shm_hash_add(&s, key, &v), 0);
	key[0] = 4;
	CHECK_EQ_INT(nv_shm_hash_add(&s, key, &v), -E2BIG);
	nv_shm_hash_end(&s);
	CHECK_EQ_INT(s.host_drops, 1);
	key[0] = 99;
	CHECK_EQ_INT(gpuext_map__lookup(h, key, &v), -ENOENT);
	key[0] = 1;
	CHECK_EQ_INT(gpuext_map__lookup(h, key, &v), 0);
	CHECK_EQ_INT(v, 42);
	key[0] = 3;
	CHECK_EQ_INT(gpuext_map__lookup(h, key, &v), 0);
	CHECK_EQ_INT(v, 32);
	/* The owner can still change the map afterwards (free list and buckets intact). */
	key[0] = 2;
	CHECK_EQ_INT(gpuext_map__delete(h, key), 0);
	key[0] = 7;
	CHECK_EQ_INT(gpuext_map__update(h, key, &v, BPF_NOEXIST), 0);
	nv_shm_close(&s);

	/* LRU: entries are on the LRU list, so the owner can evict. */
	pack_map(&pm, l, 1);
	CHECK_EQ_INT(nv_shm_open(&s, &pm, err, sizeof(err)), 0);
	nv_shm_hash_begin(&s);
	for (uint32_t k = 0; k < 4; k++) {
		uint64_t lv = k + 100;

		CHECK_EQ_INT(nv_shm_hash_add(&s, &k, &lv), 0);
	}
	nv_shm_hash_end(&s);
	{
		uint32_t k = 50;
		uint64_t lv = 1;

		CHECK_EQ_INT(gpuext_map__update(l, &k, &lv, BPF_ANY), 0);	/* evicts one */
		k = 3;
		CHECK_EQ_INT(gpuext_map__lookup(l, &k, &lv), 0);
		CHECK_EQ_U64(lv, 103);
	}
	nv_shm_close(&s);
out:
	gpuext_runtime__free(rt);
}

/* ------------------------------------------------------------------ */
/* End to end with the fake libcuda                                     */
/* ------------------------------------------------------------------ */

#ifdef GPUEXT_NVPROBE_SO

static const char pack_ptx[] =
	"// gpuext probes for test_nv_preload\n"
	"// gpuext-ptx-version 8.0\n"
	".visible .global .align 8 .b8 gpuext_rt_maps[160];\n"
	".visible .global .align 8 .u64 gpuext_rt_prandom_seed;\n"
	".visible .global .align 4 .u32 gpuext_rt_gpu_id;\n"
	".func gpuext_probe_entry(.param .b64 k, .param .b64 g, .param .b64 a, "
	".param .b64 v, .param .b32 s)\n{\n\tret;\n}\n";

/* Removes a test's scratch directory, unless GPUEXT_KEEP_TMP asks to keep it. */
static void remove_tmp(const char *tmp)
{
	char cmd[700];

	if (getenv("GPUEXT_KEEP_TMP"))
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
}

static char *slurp(const char *path, size_t *len)
{
	char *buf = NULL;
	size_t cap = 0, n = 0;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	for (;;) {
		ssize_t r;

		if (n + 4096 + 1 > cap) {
			char *t = realloc(buf, cap = cap * 2 + 8192);

			if (!t)
				break;
			buf = t;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (buf)
		buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

struct run {
	int status;
	pid_t pid;
	char out[4096];
	char *err;
	char *log;
};

/*
 * Runs the fake app. @trace_dir NULL: no GPUEXT_TRACE_DIR. @during, if set,
 * runs after the app printed "ready" and before it is told to finish.
 */
static void run_app(const char *trace_dir, const char *cache, const char *tmp, bool jit_fail,
		    void (*during)(void *), void *arg, struct run *res)
{
	char logp[512], errp[512];
	int in[2], out[2];
	size_t n = 0;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	snprintf(logp, sizeof(logp), "%s/fake.log", tmp);
	snprintf(errp, sizeof(errp), "%s/stderr.txt", tmp);
	unlink(logp);
	if (pipe(in) || pipe(out)) {
		CHECK(!"pipe");
		return;
	}
	pid = fork();
	if (pid == 0) {
		int fd = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(fd, 2);
		close(in[1]);
		close(out[0]);
		setenv("LD_PRELOAD", GPUEXT_NVPROBE_SO, 1);
		setenv("LD_LIBRARY_PATH", GPUEXT_NV_FAKECUDA_DIR, 1);
		setenv("FAKECUDA_LOG", logp, 1);
		/* Two GPUs, the app on the second: device ordinals must reach the records. */
		setenv("FAKECUDA_DEVICES", "2", 1);
		setenv("FAKEAPP_DEVICE", "1", 1);
		setenv("GPUEXT_CACHE_DIR", cache, 1);
		setenv("FAKECUDA_JIT_DUMP", tmp, 1);
		if (trace_dir)
			setenv("GPUEXT_TRACE_DIR", trace_dir, 1);
		else
			unsetenv("GPUEXT_TRACE_DIR");
		/* Sanitizer builds: the fake driver leaks its modules on purpose. */
		setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
		if (jit_fail)
			setenv("FAKECUDA_JIT_FAIL", "1", 1);
		else
			unsetenv("FAKECUDA_JIT_FAIL");
		execl(GPUEXT_NV_FAKEAPP, GPUEXT_NV_FAKEAPP, "multi", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	res->pid = pid;
	/* Read until "ready" (or EOF), with a deadline. */
	for (int waited = 0; waited < 100 && !strstr(res->out, "ready\n");) {
		struct pollfd p = { out[0], POLLIN, 0 };
		ssize_t r;

		if (poll(&p, 1, 100) == 0) {
			waited++;
			continue;
		}
		r = read(out[0], res->out + n, sizeof(res->out) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		res->out[n] = '\0';
	}
	if (strstr(res->out, "ready\n") && during)
		during(arg);
	if (write(in[1], "go\n", 3) != 3)
		CHECK(!"write to app");
	close(in[1]);
	for (;;) {
		ssize_t r = read(out[0], res->out + n, sizeof(res->out) - 1 - n);

		if (r <= 0)
			break;
		n += (size_t)r;
		res->out[n] = '\0';
	}
	close(out[0]);
	waitpid(pid, &res->status, 0);
	res->err = slurp(errp, NULL);
	res->log = slurp(logp, NULL);
}

static void run_free(struct run *r)
{
	free(r->err);
	free(r->log);
}

static int count_lines(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = s; p && (p = strstr(p, needle)); p++)
		n++;
	return n;
}

struct live {
	struct gpuext_map *arr, *pcpu;
	uint64_t arr_v, pcpu_v[4];
	bool seen;
};

/* While the app waits: the mirror thread must bring device values into the shm maps. */
static void watch_live(void *arg)
{
	struct live *l = arg;
	uint32_t key = 1;
	struct timespec nap = { 0, 20 * 1000000 };

	for (int i = 0; i < 150 && !l->seen; i++) {
		gpuext_map__lookup(l->arr, &key, &l->arr_v);
		gpuext_map__lookup(l->pcpu, &key, l->pcpu_v);
		l->seen = l->arr_v == 42 + 8 && l->pcpu_v[3] != 0;
		if (!l->seen)
			nanosleep(&nap, NULL);
	}
}

/* A launch record of @name's @gx x @bx launch by @pid on GPU 1 (lib_graph: GPU 0, its node's). */
static bool has_launch(const struct gx_launch_rec *r, size_t n, const char *name, uint32_t gx,
		       uint32_t bx, pid_t pid)
{
	uint64_t id = gx_kernel_id(name, strlen(name));
	uint32_t gpu = strcmp(name, "lib_graph") ? 1 : 0;

	for (size_t i = 0; i < n; i++)
		if (r[i].kernel_id == id && r[i].grid[0] == gx && r[i].block[0] == bx &&
		    r[i].grid[1] == 1 && r[i].block[2] == 1 && r[i].pid == (uint32_t)pid &&
		    r[i].gpu == gpu)
			return true;
	return false;
}

struct sync_seen {
	struct gpuext_map *arr;
	uint64_t v;
};

static void read_key1(void *arg)
{
	struct sync_seen *ss = arg;
	uint32_t key = 1;

	gpuext_map__lookup(ss->arr, &key, &ss->v);
}

/*
 * nvcc's static cudart: libcuda reached through cuGetProcAddress only, cuInit
 * after our library initialised, a driver whose exit teardown (registered in
 * cuInit) leaves nothing readable, and nothing unloaded by the app. GPU run 3
 * read 0 from every array here. The exit mirror must run before that
 * teardown; a synchronizing call must mirror at once (the periodic mirror is
 * stretched to 10 minutes so it cannot be the one that did it).
 */
static void test_cudart_exit(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .publish_maps = true, .nr_cpu_slots = 4);
	GPUEXT_OPTS(gpuext_map_def, ad, .name = "counts", .type = BPF_MAP_TYPE_ARRAY, .key_size = 4,
		    .value_size = 8, .max_entries = 4);
	char tmp[] = "/tmp/gpuext-nvcudart-XXXXXX", dir[600], cache[600];
	struct gpuext_runtime *rt = NULL;
	struct gpuext_map *arr = NULL;
	struct sync_seen ss = { 0 };
	uint32_t key = 1;
	uint64_t v = 0;
	struct gx_pack pack;
	struct run run;

	if (!mkdtemp(tmp)) {
		CHECK(!"mkdtemp");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/trace", tmp);
	snprintf(cache, sizeof(cache), "%s/cache", tmp);
	mkdir(dir, 0755);
	CHECK_EQ_INT(gpuext_runtime__new(&ro, &rt), 0);
	CHECK_EQ_INT(gpuext_map__create(rt, &ad, &arr), 0);
	if (!arr)
		goto out;
	memset(&pack, 0, sizeof(pack));
	pack.events = 1u << GX_PROBE_ENTRY;
	snprintf(pack.kernel_filter, sizeof(pack.kernel_filter), "[vl]*");
	pack.map_cnt = 1;
	pack_map(&pack.maps[0], arr, 1);
	pack.ptx = (char *)pack_ptx;
	pack.ptx_len = sizeof(pack_ptx) - 1;
	CHECK_EQ_INT(gx_pack_write(dir, &pack), 0);

	setenv("FAKECUDA_ATEXIT_DEINIT", "1", 1);
	setenv("GPUEXT_NV_MIRROR_MS", "600000", 1);
	setenv("FAKEAPP_MODE", "cudart", 1);
	run_app(dir, cache, tmp, false, NULL, NULL, &run);
	if (getenv("NV_DEBUG"))
		fprintf(stderr, "--- out:\n%s--- err:\n%s--- log:\n%s", run.out, run.err, run.log);
	CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CHECK_STR_CONTAINS(run.out, "table yes");
	CHECK_EQ_INT(gpuext_map__lookup(arr, &key, &v), 0);
	CHECK_EQ_U64(v, 42);	/* mirrored at exit, ahead of the driver's teardown */
	run_free(&run);

	v = 0;
	CHECK_EQ_INT(gpuext_map__update(arr, &key, &v, BPF_ANY), 0);
	ss.arr = arr;
	setenv("FAKEAPP_MODE", "cudart_sync", 1);
	run_app(dir, cache, tmp, false, read_key1, &ss, &run);
	CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CHECK_EQ_U64(ss.v, 42);	/* while the app still runs: the cuCtxSynchronize mirror */
	run_free(&run);

	/* GPUEXT_NV_SYNC_SHARE=0: no mirror after a synchronizing call, only at exit. */
	v = 0;
	CHECK_EQ_INT(gpuext_map__update(arr, &key, &v, BPF_ANY), 0);
	ss.v = 7;
	setenv("GPUEXT_NV_SYNC_SHARE", "0", 1);
	run_app(dir, cache, tmp, false, read_key1, &ss, &run);
	CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CHECK_EQ_U64(ss.v, 0);
	CHECK_EQ_INT(gpuext_map__lookup(arr, &key, &v), 0);
	CHECK_EQ_U64(v, 42);
	run_free(&run);
	/* Not a percentage: said, and the default share (the mirror happens). */
	v = 0;
	CHECK_EQ_INT(gpuext_map__update(arr, &key, &v, BPF_ANY), 0);
	setenv("GPUEXT_NV_SYNC_SHARE", "lots", 1);
	run_app(dir, cache, tmp, false, read_key1, &ss, &run);
	CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CHECK_STR_CONTAINS(run.err, "GPUEXT_NV_SYNC_SHARE='lots' is not a percentage 0-100");
	CHECK_EQ_U64(ss.v, 42);
	run_free(&run);
out:
	unsetenv("GPUEXT_NV_SYNC_SHARE");
	unsetenv("FAKECUDA_ATEXIT_DEINIT");
	unsetenv("GPUEXT_NV_MIRROR_MS");
	unsetenv("FAKEAPP_MODE");
	gpuext_runtime__free(rt);
	remove_tmp(tmp);
}

static void kernel_line(char *buf, size_t len, pid_t pid, const char *status, const char *name)
{
	nv_kernel_line(buf, len, (unsigned)pid, gx_kernel_id(name, strlen(name)), status, name);
}

static void test_e2e(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .publish_maps = true, .nr_cpu_slots = 4);
	GPUEXT_OPTS(gpuext_map_def, ad, .name = "counts", .type = BPF_MAP_TYPE_ARRAY, .key_size = 4,
		    .value_size = 8, .max_entries = 4);
	GPUEXT_OPTS(gpuext_map_def, pd, .name = "per_sm", .type = BPF_MAP_TYPE_PERCPU_ARRAY,
		    .key_size = 4, .value_size = 8, .max_entries = 2);
	/* 128 KiB: two shards of 64 KiB on the fake's 8 SMs. */
	GPUEXT_OPTS(gpuext_map_def, rd, .name = "events", .type = BPF_MAP_TYPE_RINGBUF,
		    .max_entries = 128 << 10);
	GPUEXT_OPTS(gpuext_map_def, hd, .name = "hits", .type = BPF_MAP_TYPE_HASH, .key_size = 4,
		    .value_size = 8, .max_entries = 16);
	struct gpuext_map *hits = NULL;
	char tmp[] = "/tmp/gpuext-nvpreload-XXXXXX", dir[600], cache[600], bad[600], path[700];
	char line[512], *txt, *stats;
	struct gpuext_ringbuf_consumer *cons = NULL;
	struct gpuext_runtime *rt = NULL;
	struct gpuext_map *arr = NULL, *pcpu = NULL, *rb = NULL;
	struct ring_seen seen = { 0 };
	struct gx_launch_rec *lr;
	struct live live = { 0 };
	struct gx_pack pack;
	struct run run;
	size_t len = 0, nl;

	if (!mkdtemp(tmp)) {
		CHECK(!"mkdtemp");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/trace", tmp);
	snprintf(cache, sizeof(cache), "%s/cache", tmp);
	snprintf(bad, sizeof(bad), "%s/bad", tmp);
	mkdir(dir, 0755);
	mkdir(bad, 0755);

	CHECK_EQ_INT(gpuext_runtime__new(&ro, &rt), 0);
	CHECK_EQ_INT(gpuext_map__create(rt, &ad, &arr), 0);
	CHECK_EQ_INT(gpuext_map__create(rt, &pd, &pcpu), 0);
	CHECK_EQ_INT(gpuext_map__create(rt, &rd, &rb), 0);
	CHECK_EQ_INT(gpuext_map__create(rt, &hd, &hits), 0);
	if (!arr || !pcpu || !rb || !hits)
		goto out;
	{
		uint32_t k0 = 0;
		uint64_t v0 = 7;

		/* A value gpuext trace put in before the run: the mirror keeps it. */
		CHECK_EQ_INT(gpuext_map__update(arr, &k0, &v0, BPF_ANY), 0);
	}
	memset(&pack, 0, sizeof(pack));
	pack.events = 1u << GX_PROBE_ENTRY;
	snprintf(pack.kernel_filter, sizeof(pack.kernel_filter), "[vl]*");
	pack.map_cnt = 4;
	pack_map(&pack.maps[0], arr, 1);
	pack_map(&pack.maps[1], pcpu, 8);	/* 8 slots per key on the GPU, 4 in shm */
	pack_map(&pack.maps[2], rb, 1);
	pack_map(&pack.maps[3], hits, 1);
	pack.ptx = (char *)pack_ptx;
	pack.ptx_len = sizeof(pack_ptx) - 1;
	CHECK_EQ_INT(gx_pack_write(dir, &pack), 0);

	/* 1. Cold: splice, JIT, cache; live mirror; ring records; files. */
	live.arr = arr;
	live.pcpu = pcpu;
	run_app(dir, cache, tmp, false, watch_live, &live, &run);
	if (getenv("NV_DEBUG"))
		fprintf(stderr, "--- out:\n%s--- err:\n%s--- log:\n%s", run.out, run.err, run.log);
	CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CHECK_STR_CONTAINS(run.out, "rtld_next ok");
	CHECK_STR_CONTAINS(run.out, "table yes");
	CHECK_STR_CONTAINS(run.out, "gpu_id 1");
	CHECK(live.seen);
	/* 42 from the first context + 8 from the second, destroyed one */
	CHECK_EQ_U64(live.arr_v, 42 + 8);
	/* device slots s (value s+1) fold into shm slot s % 4: (s+1) + (s+5) */
	CHECK_EQ_U64(live.pcpu_v[0], 1 + 5);
	CHECK_EQ_U64(live.pcpu_v[3], 4 + 8);
	/* The spliced PTX is what the driver loads (and JITs as a whole program). */
	CHECK_STR_CONTAINS(run.log, "modload_ex ptx spliced=1");
	CHECK_STR_CONTAINS(run.log, "libload ptx spliced=1");
	CHECK_STR_CONTAINS(run.log, "launch_ptsz lib_noctx 6 32");
	/* libk, lib_noctx at their launches, lib_graph when its graph node was added */
	CHECK_EQ_INT(count_lines(run.log, "libglobal gpuext_rt_maps"), 3);
	CHECK_STR_CONTAINS(run.log, "libglobal gpuext_rt_maps\nlibglobal gpuext_rt_gpu_id\n"
			   "libglobal gpuext_rt_prandom_seed\ngraph_add lib_graph");
	/*
	 * The module in two contexts, three libraries: five spliced loads the driver
	 * JITs; the module's second load comes from the splice cache (below).
	 */
	CHECK_EQ_INT(count_lines(run.log, "modload_ex ptx spliced=1"), 2);
	CHECK_STR_CONTAINS(run.log, "modload elf spliced=0");
	CHECK_STR_CONTAINS(run.log, "libglobal gpuext_rt_maps");
	CHECK_EQ_INT(count_lines(run.log, "jit "), 5);
	CHECK_STR_CONTAINS(run.log, "launch vadd 4 128");
	/* the refused launch and the captured one reached the driver (no record: below) */
	CHECK_STR_CONTAINS(run.log, "launch refused");
	CHECK_STR_CONTAINS(run.log, "capture_begin\nlaunch vadd 9 128\ncapture_end");
	/* the graph through the runtime's way in (cuGetProcAddress): instantiated, launched twice */
	CHECK_STR_CONTAINS(run.log, "graph_instantiate 1\ngraph_launch lib_graph 7 64\n"
			   "graph_launch lib_graph 7 64\ngraph_update\ngraph_exec_set 11\n"
			   "graph_launch lib_graph 7 64\ngraph_enable 0\ngraph_update\ngraph_enable 1\n"
			   "graph_exec_set 13\ngraph_launch lib_graph 7 64\ngraph_exec_set 17\n"
			   "graph_launch lib_graph 7 64\ngraph_destroy");
	CHECK_STR_CONTAINS(run.log, "launch_ptsz vadd 2 64");
	/* The private pointer was matched by name: the export ran. */
	CHECK_STR_CONTAINS(run.log, "launch_ex other_kernel 3 32");
	CHECK(!strstr(run.log ? run.log : "", "launch_ex_private"));
	CHECK(run.err && !run.err[0]);	/* nothing to say on the app's stderr */

	snprintf(path, sizeof(path), "%s/kernels.txt", dir);
	txt = slurp(path, NULL);
	kernel_line(line, sizeof(line), run.pid, "instrumented", "vadd");
	CHECK_STR_CONTAINS(txt, line);
	kernel_line(line, sizeof(line), run.pid, "filtered", "other_kernel");
	CHECK_STR_CONTAINS(txt, line);
	kernel_line(line, sizeof(line), run.pid, "sass-only", "sass_kernel");
	CHECK_STR_CONTAINS(txt, line);
	kernel_line(line, sizeof(line), run.pid, "instrumented", "libk");
	CHECK_STR_CONTAINS(txt, line);
	kernel_line(line, sizeof(line), run.pid, "instrumented", "lib_noctx");
	CHECK_STR_CONTAINS(txt, line);
	kernel_line(line, sizeof(line), run.pid, "instrumented", "lib_graph");
	CHECK_STR_CONTAINS(txt, line);
	{
		/* a name of 3000 characters (tests/nv/fakeapp.c) has its whole line */
		char name[3001], big[3200];

		memcpy(name, "other_long_", 11);
		memset(name + 11, 'x', sizeof(name) - 12);
		name[sizeof(name) - 1] = '\0';
		kernel_line(big, sizeof(big), run.pid, "filtered", name);
		CHECK(strlen(big) > 3000 && big[strlen(big) - 1] == '\n');
		CHECK_STR_CONTAINS(txt, big);
	}
	CHECK_EQ_INT(count_lines(txt, "\n"), 7);	/* no duplicates from the second load */
	free(txt);

	snprintf(path, sizeof(path), "%s/launches.bin", dir);
	lr = (struct gx_launch_rec *)slurp(path, &len);
	nl = len / sizeof(*lr);
	CHECK_EQ_INT(len % sizeof(*lr), 0);
	/*
	 * 6 launches and the graph's 4 (one kernel node, launched twice, then once
	 * more after an update and a new grid, twice while disabled (once after
	 * another update): no record,
	 * once more enabled with another grid, once more after cuGraphExecNodeSetParams
	 * gave it another); not the refused launch, nor the captured one.
	 */
	CHECK_EQ_INT(nl, 11);
	if (lr && nl == 11) {
		uint64_t gid = gx_kernel_id("lib_graph", 9);
		unsigned ng = 0;

		CHECK(!has_launch(lr, nl, "vadd", 0, 128, run.pid));
		CHECK(!has_launch(lr, nl, "vadd", 9, 128, run.pid));
		CHECK(has_launch(lr, nl, "lib_graph", 7, 64, run.pid));
		CHECK(has_launch(lr, nl, "lib_graph", 11, 64, run.pid));
		CHECK(has_launch(lr, nl, "lib_graph", 13, 64, run.pid));
		CHECK(has_launch(lr, nl, "lib_graph", 17, 64, run.pid));
		for (size_t i = 0; i < nl; i++)
			ng += lr[i].kernel_id == gid;
		CHECK_EQ_INT(ng, 5);
		CHECK(has_launch(lr, nl, "vadd", 4, 128, run.pid));
		CHECK(has_launch(lr, nl, "vadd", 2, 64, run.pid));
		CHECK(has_launch(lr, nl, "other_kernel", 3, 32, run.pid));
		CHECK(has_launch(lr, nl, "sass_kernel", 1, 32, run.pid));
		CHECK(has_launch(lr, nl, "libk", 5, 96, run.pid));
		CHECK(has_launch(lr, nl, "lib_noctx", 6, 32, run.pid));
		for (size_t i = 0; i < nl; i++) {
			CHECK_EQ_U64(lr[i].seq, i);
			CHECK(lr[i].host_ns > 1600000000ull * 1000000000ull);
			CHECK(i == 0 || lr[i].host_ns >= lr[i - 1].host_ns);
		}
	}
	free(lr);

	/*
	 * The ring: 3 records in shards 0, 1, 0 (of 16: 128 KiB in 8 KiB shards),
	 * each exactly once, the discarded one left out. Shards drain one after
	 * the other, so only the order within shard 0 (100 before 102) is kept.
	 */
	/* the graph node's library kernel got its tables in the node's context (GPU 0) */
	CHECK_STR_CONTAINS(run.out, "lib_graph gpu_id 0\n");
	CHECK_STR_CONTAINS(run.out, "ring_shards 16");
	CHECK_EQ_INT(gpuext_ringbuf_consumer__new(rb, on_rec, &seen, &cons), 0);
	if (cons)
		gpuext_ringbuf_consumer__consume(cons);
	CHECK_EQ_INT(seen.n, 3);
	{
		int at[3] = { -1, -1, -1 };

		for (int i = 0; i < seen.n && i < 3; i++) {
			CHECK(seen.v[i] >= 100 && seen.v[i] <= 102);
			if (seen.v[i] >= 100 && seen.v[i] <= 102) {
				CHECK_EQ_INT(at[seen.v[i] - 100], -1);	/* not twice */
				at[seen.v[i] - 100] = i;
			}
		}
		CHECK(at[0] >= 0 && at[1] >= 0 && at[2] > at[0]);
	}
	{
		uint32_t k0 = 0, k1 = 1;
		uint64_t v = 0;

		gpuext_map__lookup(arr, &k0, &v);
		CHECK_EQ_U64(v, 7);
		gpuext_map__lookup(arr, &k1, &v);
		CHECK_EQ_U64(v, 42 + 8);
		/* The device hash table's entries, in the shm hash map. */
		k0 = 7;
		v = 0;
		CHECK_EQ_INT(gpuext_map__lookup(hits, &k0, &v), 0);
		CHECK_EQ_U64(v, 70);
		k0 = 9;
		CHECK_EQ_INT(gpuext_map__lookup(hits, &k0, &v), 0);
		CHECK_EQ_U64(v, 90);
		k0 = 8;
		CHECK_EQ_INT(gpuext_map__lookup(hits, &k0, &v), -ENOENT);
	}
	snprintf(path, sizeof(path), "%s/nvprobe-%d.txt", dir, (int)run.pid);
	stats = slurp(path, NULL);
	CHECK_STR_CONTAINS(stats, "ring 'events': 3 records, 0 dropped on the device (ring "
			   "full), 0 dropped on the host (shm ring full)");
	/* The module's load in the second context found the first one's splice. */
	CHECK_STR_CONTAINS(stats, "splice cache: 1 modules from the cache, 4 spliced");
	free(stats);
	run_free(&run);

	/* What the driver was asked to JIT is PTX that ptxas (when present) assembles. */
	if (GPUEXT_PTXAS[0] && access(GPUEXT_PTXAS, X_OK) == 0) {
		for (int i = 0; i < 2; i++) {
			char cmd[2048];

			snprintf(cmd, sizeof(cmd), "'%s' -arch=sm_90 '%s/jit-%d.ptx' -o '%s/jit-%d.cubin'",
				 GPUEXT_PTXAS, tmp, i, tmp, i);
			CHECK_EQ_INT(system(cmd), 0);
		}
	} else {
		fprintf(stderr, "test_nv_preload: no ptxas: the spliced PTX is not assembled\n");
	}

	/* 2. Warm cache: every module and library comes spliced from the cache. */
	run_app(dir, cache, tmp, false, NULL, NULL, &run);
	CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CHECK_STR_CONTAINS(run.log, "modload_ex ptx spliced=1");
	CHECK_EQ_INT(count_lines(run.log, "jit "), 5);
	snprintf(path, sizeof(path), "%s/nvprobe-%d.txt", dir, (int)run.pid);
	stats = slurp(path, NULL);
	CHECK_STR_CONTAINS(stats, "splice cache: 5 modules from the cache, 0 spliced");
	free(stats);
	run_free(&run);

	/* 3. No GPUEXT_TRACE_DIR: one line, everything passes through. */
	run_app(NULL, cache, tmp, false, NULL, NULL, &run);
	CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CHECK_STR_CONTAINS(run.err, "GPUEXT_TRACE_DIR is not set");
	CHECK_EQ_INT(count_lines(run.err, "\n"), 1);
	CHECK_STR_CONTAINS(run.log, "modload ptx spliced=0");
	CHECK_STR_CONTAINS(run.log, "launch_ex_private other_kernel 3 32");
	CHECK_STR_CONTAINS(run.out, "table no");
	CHECK_STR_CONTAINS(run.out, "rtld_next ok");
	run_free(&run);

	/* 4. A directory without a pack: one clear line, pass through. */
	run_app(bad, cache, tmp, false, NULL, NULL, &run);
	CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CHECK_STR_CONTAINS(run.err, "cannot use the probe pack");
	CHECK_EQ_INT(count_lines(run.err, "\n"), 1);
	CHECK_STR_CONTAINS(run.log, "modload ptx spliced=0");
	run_free(&run);

	/* 5. The JIT fails (fresh cache): original modules, loudly, and error: in kernels.txt. */
	snprintf(cache, sizeof(cache), "%s/cache2", tmp);
	run_app(dir, cache, tmp, true, NULL, NULL, &run);
	CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CHECK_STR_CONTAINS(run.err, "UNINSTRUMENTED");
	CHECK_STR_CONTAINS(run.err, "JIT refused");
	CHECK_STR_CONTAINS(run.err, "fake refusal of the spliced PTX");
	CHECK_STR_CONTAINS(run.log, "modload ptx spliced=0");
	snprintf(path, sizeof(path), "%s/kernels.txt", dir);
	txt = slurp(path, NULL);
	kernel_line(line, sizeof(line), run.pid, "error:jit", "vadd");
	CHECK_STR_CONTAINS(txt, line);
	free(txt);
	run_free(&run);

	/*
	 * 6. Clock calibration (GPUEXT_CLOCK_SYNC=1, as `gpuext trace launchlate` sets):
	 * the fake's "%globaltimer" runs 65.7001 ms behind CLOCK_REALTIME; the
	 * offset measured must hold it within its stated uncertainty. Without the
	 * switch (runs 1-5) no calibration kernel ran.
	 */
	snprintf(path, sizeof(path), "%s/clock-%d-1.txt", dir, (int)run.pid);
	CHECK(access(path, F_OK) != 0);
	setenv("GPUEXT_CLOCK_SYNC", "1", 1);
	setenv("FAKECUDA_CLOCK_OFFSET_NS", "-65700123", 1);
	run_app(dir, cache, tmp, false, NULL, NULL, &run);
	unsetenv("GPUEXT_CLOCK_SYNC");
	unsetenv("FAKECUDA_CLOCK_OFFSET_NS");
	CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CHECK_STR_CONTAINS(run.log, "clock_sync 20 rounds");
	CHECK(!strstr(run.err, "clock calibration failed"));
	snprintf(path, sizeof(path), "%s/clock-%d-1.txt", dir, (int)run.pid);
	txt = slurp(path, NULL);
	CHECK(txt != NULL);
	if (txt) {
		const char *p = strstr(txt, "\npid ");
		unsigned cpid = 0, rounds = 0;
		int gpu = -1;
		long long off = 0;
		unsigned long long unc = ~0ull;

		CHECK(p && sscanf(p + 1, "pid %u gpu %d offset_ns %lld uncertainty_ns %llu rounds %u",
				  &cpid, &gpu, &off, &unc, &rounds) == 5);
		CHECK_EQ_INT(cpid, (unsigned)run.pid);
		CHECK_EQ_INT(gpu, 1);
		CHECK_EQ_INT(rounds, 20);
		CHECK(unc < 20000000ull);	/* a round trip between two threads */
		CHECK(off >= -65700123ll - (long long)unc && off <= -65700123ll + (long long)unc);
		if (off < -65700123ll - (long long)unc || off > -65700123ll + (long long)unc)
			fprintf(stderr, "clock offset %lld +- %llu, want -65700123\n", off, unc);
	}
	free(txt);
	run_free(&run);
out:
	gpuext_ringbuf_consumer__free(cons);
	gpuext_runtime__free(rt);
	remove_tmp(tmp);
}
#endif

int main(void)
{
	test_entries();
	test_filter_and_line();
	test_sync_gap();
	test_pick_version();
	test_fold();
	test_shm();
	test_shm_hash();
	test_ring_drain();
#ifdef GPUEXT_NVPROBE_SO
	test_e2e();
	test_cudart_exit();
#else
	fprintf(stderr, "test_nv_preload: libgpuext-nvprobe.so is not built here (see "
		"hal/nvidia/nvidia.cmake): end-to-end part skipped\n");
#endif
	return test_done("test_nv_preload");
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device rings of libgpuext-nvprobe.so without a GPU (hal/nvidia/nv_maps.c):
 * how a ring is split into shards, and placing and draining one through a
 * fake driver in this process: merged copies, the tidy kernel's table, the
 * fallback by calls, failures half-way, records committed during a copy;
 * and two processes' mirrors of one array map.
 * Split from tests/test_nv_preload.c, which tests the rest of the library.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "maps_impl.h"
#include "ptx/ptx.h"
#include "nv_impl.h"
#include "nv_util.h"
#include "testlib.h"
#include "nv/nv_test.h"

/* ------------------------------------------------------------------ */
/* Device rings: placement, shards, drain through a fake driver         */
/* ------------------------------------------------------------------ */

/*
 * A driver whose "device" memory is host memory, like tests/nv/fakecuda.c,
 * but in this process so the test can look at every step: the cons write
 * checks that the space it frees is already zero on the device, a DtoH can
 * fail, and one DtoH can read its range backwards with the device
 * committing a record half-way (as a copy engine may interleave with a
 * kernel). The same fake also runs two processes' array mirrors.
 */
static struct {
	struct nv_dmap *m;
	void *allocs[32];
	int nallocs;
	int cons_writes, cons_dirty, memsets, fail_dtoh, dtohs, launches, fail_launch;
	int mark_clears, mark_early;	/* tidy_by_calls: mark copies, and those not right after cons */
	CUdeviceptr cons_at;		/* the header whose cons was copied last */
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
		fk.cons_at = d;
	} else if (fk_is_cons(d - 8, 8) && n == 16) {
		/* spare and full_mark cleared: only after this header's cons was written */
		fk.mark_clears++;
		fk.mark_early += fk.cons_at != d - 8;
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

/* The tidy kernel as nv_maps.c's PTX does it: per block, zero both ranges, then cons, the mark. */
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
			memset((void *)(uintptr_t)(e[i].cons_addr + 16), 0, 8);	/* full_mark */
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
	nv_test_pack_map(&pm, rb, 1);
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
		/* a writer saw shard 0 full: its mark goes when cons moves (ptx.h, full_mark) */
		hd[0].full_mark = (uint64_t)(1000 + round) << 32 | 48;
		fk.dtohs = 0;
		CHECK_EQ_INT(nv_ring_drain(&cu, NULL, &m, fk_t, &s, &moved), 0);
		CHECK_EQ_U64(hd[0].full_mark, 0);
		CHECK_EQ_U64(hd[0].spare, 0);
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
	/* without the tidy kernel: a mark cleared with every cons, each right after it */
	CHECK(mode == DRAIN_TIDY ? fk.mark_clears == 0 : fk.mark_clears == fk.cons_writes);
	CHECK_EQ_INT(fk.mark_early, 0);
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
			hd[1].full_mark = (uint64_t)7 << 32 | 48;
			CHECK_EQ_INT(nv_ring_drain(&cu, NULL, &m, fk_t, &s, &moved), 0);
			CHECK_EQ_U64(moved, 2);
			CHECK_EQ_U64(hd[1].full_mark, 0);
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

/* ------------------------------------------------------------------ */
/* Array maps: two processes' mirrors into one shm map                  */
/* ------------------------------------------------------------------ */

static CUcontext fk_cur;

static CUresult fk_push(CUcontext c)
{
	fk_cur = c;
	return 0;
}

static CUresult fk_pop(CUcontext *c)
{
	*c = fk_cur;
	fk_cur = NULL;
	return 0;
}

/* Contexts are the addresses 0x100 + ordinal. */
static CUresult fk_getdev(CUdevice *d)
{
	*d = (CUdevice)((uintptr_t)fk_cur - 0x100);
	return 0;
}

static CUresult fk_attr(int *v, int attr, CUdevice d)
{
	(void)attr, (void)d;
	*v = 9;
	return 0;
}

static CUresult fk_stream(CUstream *st, unsigned flags)
{
	(void)flags;
	*st = (CUstream)(uintptr_t)0x55;
	return 0;
}

/*
 * Each process's mirror adds only what its own contexts changed: counters
 * from two processes add up, a value only one process writes (a slot of
 * launchlate's ring in its GPU's region) is its value, whatever the other
 * process's mirror does, and a value gpuext trace wrote meanwhile stays.
 * (Before, each mirror wrote its attach-time copy plus its own change over
 * the whole map, and the last one to copy won.)
 */
/* The calls the mirror of array and hash maps makes, on the fake device. */
static void fk_mirror_api(struct nv_api *cu)
{
	cu->MemAlloc = fk_alloc;
	cu->MemHostAlloc = fk_host_alloc;
	cu->MemcpyHtoDAsync = fk_htod;
	cu->MemcpyDtoHAsync = fk_dtoh;
	cu->StreamSynchronize = fk_sync;
	cu->CtxPushCurrent = fk_push;
	cu->CtxPopCurrent = fk_pop;
	cu->CtxGetDevice = fk_getdev;
	cu->DeviceGetAttribute = fk_attr;
	cu->StreamCreate = fk_stream;
	fk.m = NULL;
}

/* What two "processes" (nv_maps instances) of a test hold of the shm maps. */
static void fk_procs_done(struct nv_maps *a, struct nv_maps *b)
{
	for (uint32_t i = 0; i < GX_PACK_MAX_MAPS; i++) {
		nv_shm_close(&a->shm[i]);
		nv_shm_close(&b->shm[i]);
		free(a->shm_init[i]);
		free(b->shm_init[i]);
	}
}

static void test_array_two_processes(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .publish_maps = true);
	GPUEXT_OPTS(gpuext_map_def, ad, .name = "twoproc", .type = BPF_MAP_TYPE_ARRAY,
		    .key_size = 4, .value_size = 8, .max_entries = 4);
	static struct nv_maps mm1, mm2;
	struct nv_api cu = { 0 };
	struct gpuext_runtime *rt = NULL;
	struct gpuext_map *arr = NULL;
	struct gx_pack pack;
	struct nv_ctx *x1, *x2;
	uint64_t *d1, *d2, v[4];
	char err[256] = "";

	fk_mirror_api(&cu);
	CHECK_EQ_INT(gpuext_runtime__new(&ro, &rt), 0);
	CHECK_EQ_INT(gpuext_map__create(rt, &ad, &arr), 0);
	if (!arr)
		goto out;
	memset(&pack, 0, sizeof(pack));
	pack.map_cnt = 1;
	nv_test_pack_map(&pack.maps[0], arr, 1);
	for (uint32_t k = 0; k < 4; k++) {
		v[0] = k == 0 ? 7 : 0;
		CHECK_EQ_INT(gpuext_map__update(arr, &k, &v[0], BPF_ANY), 0);
	}
	/* Process 1 on GPU 0, process 2 on GPU 1: both upload 7 into entry 0. */
	CHECK_EQ_INT(nv_maps__init(&mm1, &pack, &cu, err, sizeof(err)), 0);
	CHECK_EQ_INT(nv_maps__init(&mm2, &pack, &cu, err, sizeof(err)), 0);
	x1 = nv_maps__ctx(&mm1, (CUcontext)(uintptr_t)0x100);
	x2 = nv_maps__ctx(&mm2, (CUcontext)(uintptr_t)0x101);
	CHECK(x1 && x2 && !x1->broken && !x2->broken);
	if (!x1 || !x2 || x1->broken || x2->broken)
		goto done;
	d1 = (uint64_t *)(uintptr_t)x1->m[0].dptr;
	d2 = (uint64_t *)(uintptr_t)x2->m[0].dptr;
	CHECK_EQ_U64(d1[0], 7);
	CHECK_EQ_U64(d2[0], 7);
	/* The devices count into entry 0, and each writes an entry of its own. */
	d1[0] += 5;
	d1[1] = 100;
	d2[0] += 3;
	d2[2] = 200;
	nv_maps__mirror(&mm1);
	nv_maps__mirror(&mm2);
	for (uint32_t k = 0; k < 4; k++)
		CHECK_EQ_INT(gpuext_map__lookup(arr, &k, &v[k]), 0);
	CHECK_EQ_U64(v[0], 7 + 5 + 3);
	CHECK_EQ_U64(v[1], 100);	/* process 2's mirror left it */
	CHECK_EQ_U64(v[2], 200);
	CHECK_EQ_U64(v[3], 0);
	/* gpuext trace writes entry 3; mirrors with nothing new change nothing. */
	{
		uint32_t k = 3;

		v[3] = 9;
		CHECK_EQ_INT(gpuext_map__update(arr, &k, &v[3], BPF_ANY), 0);
	}
	nv_maps__mirror(&mm2);
	nv_maps__mirror(&mm1);
	nv_maps__mirror(&mm2);
	/* Process 1 overwrites its own entry: the shm holds its new value exactly. */
	d1[1] = 77;
	nv_maps__mirror(&mm1);
	for (uint32_t k = 0; k < 4; k++)
		CHECK_EQ_INT(gpuext_map__lookup(arr, &k, &v[k]), 0);
	CHECK_EQ_U64(v[0], 15);
	CHECK_EQ_U64(v[1], 77);
	CHECK_EQ_U64(v[2], 200);
	CHECK_EQ_U64(v[3], 9);
	/*
	 * A context set up later starts from what process 1 found at attach (7
	 * in entry 0, nothing in entry 3), not from the values now, which hold
	 * other contexts' state; its change still adds.
	 */
	{
		struct nv_ctx *x3 = nv_maps__ctx(&mm1, (CUcontext)(uintptr_t)0x102);

		CHECK(x3 && !x3->broken);
		if (x3 && !x3->broken) {
			uint64_t *d3 = (uint64_t *)(uintptr_t)x3->m[0].dptr;

			CHECK_EQ_U64(d3[0], 7);
			CHECK_EQ_U64(d3[1], 0);
			CHECK_EQ_U64(d3[3], 0);
			d3[0] += 1;
			nv_maps__mirror(&mm1);
			CHECK_EQ_INT(gpuext_map__lookup(arr, &(uint32_t){ 0 }, &v[0]), 0);
			CHECK_EQ_U64(v[0], 16);
		}
	}
done:
	fk_procs_done(&mm1, &mm2);
out:
	gpuext_runtime__free(rt);
}

/* A device hash table (codegen/ptx/ptx.h) as the probes leave it: @key -> @val in bucket state @state. */
static void dev_hash_put(const struct nv_dmap *m, uint32_t key, uint64_t val, uint32_t state)
{
	uint8_t *img = (uint8_t *)(uintptr_t)m->dptr;
	uint32_t h = gpuext_ptx_hash_key(&key, 4), mask = m->nr_buckets - 1;

	for (uint32_t n = 0, k = h & mask; n < m->nr_buckets; n++, k = (k + 1) & mask) {
		uint8_t *b = img + sizeof(struct gpuext_ptx_hash_hdr) + (size_t)k * m->bucket_size;
		uint32_t st, bk;

		memcpy(&st, b, 4);
		memcpy(&bk, b + 8, 4);
		if (st == GPUEXT_PTX_HASH_EMPTY || bk == key) {
			memcpy(b, &state, 4);
			memcpy(b + 4, &h, 4);
			memcpy(b + 8, &key, 4);
			memcpy(b + 16, &val, 8);
			return;
		}
	}
	CHECK(!"device table full");
}

/* The same in bucket @k itself, probing aside (a snapshot taken mid-update may show a key twice). */
static void dev_hash_put_at(const struct nv_dmap *m, uint32_t k, uint32_t key, uint64_t val,
			    uint32_t state)
{
	uint8_t *b = (uint8_t *)(uintptr_t)m->dptr + sizeof(struct gpuext_ptx_hash_hdr) +
		     (size_t)k * m->bucket_size;
	uint32_t h = gpuext_ptx_hash_key(&key, 4);

	memcpy(b, &state, 4);
	memcpy(b + 4, &h, 4);
	memcpy(b + 8, &key, 4);
	memcpy(b + 16, &val, 8);
}

static int64_t shm_hash_get(struct gpuext_map *h, uint32_t key)
{
	uint64_t v;

	return gpuext_map__lookup(h, &key, &v) ? -1 : (int64_t)v;
}

/*
 * Two processes (two nv_maps) mirror one hash map: their keys and values
 * add up, the key gpuext trace wrote stays, and a key leaves the shared map
 * only when every context that had it deleted it.
 */
static void test_hash_two_processes(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .publish_maps = true);
	GPUEXT_OPTS(gpuext_map_def, hd, .name = "twoproch", .type = BPF_MAP_TYPE_HASH,
		    .key_size = 4, .value_size = 8, .max_entries = 8);
	static struct nv_maps mm1, mm2;
	struct nv_api cu = { 0 };
	struct gpuext_runtime *rt = NULL;
	struct gpuext_map *hm = NULL;
	struct gx_pack pack;
	struct nv_ctx *x1, *x2;
	char err[256] = "";

	fk_mirror_api(&cu);
	CHECK_EQ_INT(gpuext_runtime__new(&ro, &rt), 0);
	CHECK_EQ_INT(gpuext_map__create(rt, &hd, &hm), 0);
	if (!hm)
		goto out;
	memset(&pack, 0, sizeof(pack));
	pack.map_cnt = 1;
	nv_test_pack_map(&pack.maps[0], hm, 1);
	CHECK_EQ_INT(gpuext_map__update(hm, &(uint32_t){ 50 }, &(uint64_t){ 1 }, BPF_ANY), 0);
	CHECK_EQ_INT(nv_maps__init(&mm1, &pack, &cu, err, sizeof(err)), 0);
	CHECK_EQ_INT(nv_maps__init(&mm2, &pack, &cu, err, sizeof(err)), 0);
	x1 = nv_maps__ctx(&mm1, (CUcontext)(uintptr_t)0x200);
	x2 = nv_maps__ctx(&mm2, (CUcontext)(uintptr_t)0x201);
	CHECK(x1 && x2 && !x1->broken && !x2->broken);
	if (!x1 || !x2 || x1->broken || x2->broken)
		goto done;
	/* Process 1 counts key 7 to 5 and writes key 8; process 2 counts 7 to 3, writes 9. */
	dev_hash_put(&x1->m[0], 7, 5, GPUEXT_PTX_HASH_FULL);
	dev_hash_put(&x1->m[0], 8, 100, GPUEXT_PTX_HASH_FULL);
	dev_hash_put(&x2->m[0], 7, 3, GPUEXT_PTX_HASH_FULL);
	dev_hash_put(&x2->m[0], 9, 200, GPUEXT_PTX_HASH_FULL);
	dev_hash_put(&x2->m[0], 10, 1, GPUEXT_PTX_HASH_BUSY);	/* being inserted: not yet */
	nv_maps__mirror(&mm1);
	nv_maps__mirror(&mm2);
	nv_maps__mirror(&mm1);	/* nothing new: nothing moves */
	CHECK_EQ_U64(shm_hash_get(hm, 7), 8);
	CHECK_EQ_U64(shm_hash_get(hm, 8), 100);
	CHECK_EQ_U64(shm_hash_get(hm, 9), 200);
	CHECK_EQ_U64(shm_hash_get(hm, 50), 1);
	CHECK_EQ_U64(shm_hash_get(hm, 10), -1);
	/* Process 1 counts 7 once more and deletes 8 (a tombstone); key 10 is done in process 2. */
	dev_hash_put(&x1->m[0], 7, 6, GPUEXT_PTX_HASH_FULL);
	dev_hash_put(&x1->m[0], 8, 100, GPUEXT_PTX_HASH_DELETED);
	dev_hash_put(&x2->m[0], 10, 1, GPUEXT_PTX_HASH_FULL);
	nv_maps__mirror(&mm1);
	nv_maps__mirror(&mm2);
	CHECK_EQ_U64(shm_hash_get(hm, 7), 9);
	CHECK_EQ_U64(shm_hash_get(hm, 8), -1);
	CHECK_EQ_U64(shm_hash_get(hm, 10), 1);
	/* Process 2 deletes 7: process 1 still has it, with its 6. */
	dev_hash_put(&x2->m[0], 7, 3, GPUEXT_PTX_HASH_DELETED);
	nv_maps__mirror(&mm2);
	CHECK_EQ_U64(shm_hash_get(hm, 7), 6);
	/* Process 1 deletes it too: gone. The owner's key never moved. */
	dev_hash_put(&x1->m[0], 7, 6, GPUEXT_PTX_HASH_DELETED);
	nv_maps__mirror(&mm1);
	CHECK_EQ_U64(shm_hash_get(hm, 7), -1);
	CHECK_EQ_U64(shm_hash_get(hm, 9), 200);
	CHECK_EQ_U64(shm_hash_get(hm, 50), 1);
	CHECK_EQ_INT(mm1.shm[0].host_drops + mm2.shm[0].host_drops, 0);
	/*
	 * The shm map (8 entries: 9, 10, 50 held) has room for 5 of process 1's
	 * 6 new keys: one is dropped (counted) and comes in as soon as process 2's
	 * deletion of 10 makes room, though process 1 changed nothing since.
	 */
	for (uint32_t k = 20; k < 26; k++)
		dev_hash_put(&x1->m[0], k, k * 10, GPUEXT_PTX_HASH_FULL);
	nv_maps__mirror(&mm1);
	CHECK_EQ_INT(mm1.shm[0].host_drops, 1);
	dev_hash_put(&x2->m[0], 10, 1, GPUEXT_PTX_HASH_DELETED);
	nv_maps__mirror(&mm2);
	nv_maps__mirror(&mm1);
	for (uint32_t k = 20; k < 26; k++)
		CHECK_EQ_U64(shm_hash_get(hm, k), k * 10);
	CHECK_EQ_U64(shm_hash_get(hm, 10), -1);
	/* ... and its deletion takes out what it put in, nothing of another's. */
	dev_hash_put(&x1->m[0], 25, 250, GPUEXT_PTX_HASH_DELETED);
	nv_maps__mirror(&mm1);
	CHECK_EQ_U64(shm_hash_get(hm, 25), -1);
	CHECK_EQ_U64(shm_hash_get(hm, 24), 240);
	/*
	 * A snapshot that shows key 9 twice (copied while the device deleted it
	 * and inserted it again further on): only its first copy on the probe
	 * path counts, 201; once the old one is a tombstone, the new one, 202.
	 */
	{
		uint32_t nb = x2->m[0].nr_buckets, k9 = gpuext_ptx_hash_key(&(uint32_t){ 9 }, 4) & (nb - 1);

		dev_hash_put_at(&x2->m[0], k9, 9, 201, GPUEXT_PTX_HASH_FULL);
		for (uint32_t k = (k9 + 1) & (nb - 1); k != k9; k = (k + 1) & (nb - 1)) {
			uint32_t st;

			memcpy(&st, (uint8_t *)(uintptr_t)x2->m[0].dptr +
			       sizeof(struct gpuext_ptx_hash_hdr) + (size_t)k * x2->m[0].bucket_size, 4);
			if (st == GPUEXT_PTX_HASH_EMPTY) {
				dev_hash_put_at(&x2->m[0], k, 9, 202, GPUEXT_PTX_HASH_FULL);
				break;
			}
		}
		nv_maps__mirror(&mm2);
		CHECK_EQ_U64(shm_hash_get(hm, 9), 201);
		dev_hash_put_at(&x2->m[0], k9, 9, 201, GPUEXT_PTX_HASH_DELETED);
		nv_maps__mirror(&mm2);
		CHECK_EQ_U64(shm_hash_get(hm, 9), 202);
	}
	/* The key gpuext trace wrote: a device's value adds in and goes out again; the key stays. */
	dev_hash_put(&x1->m[0], 50, 5, GPUEXT_PTX_HASH_FULL);
	nv_maps__mirror(&mm1);
	CHECK_EQ_U64(shm_hash_get(hm, 50), 6);
	dev_hash_put(&x1->m[0], 50, 5, GPUEXT_PTX_HASH_DELETED);
	nv_maps__mirror(&mm1);
	CHECK_EQ_U64(shm_hash_get(hm, 50), 1);
done:
	fk_procs_done(&mm1, &mm2);
out:
	gpuext_runtime__free(rt);
}

int main(void)
{
	test_ring_drain();
	test_array_two_processes();
	test_hash_two_processes();
	return test_done("test_nv_ring");
}

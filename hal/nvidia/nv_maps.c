/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device maps of the probes, per CUDA context, and their mirror into the
 * shared-memory maps that `gpuext trace` created and reads while the app runs.
 *
 *   array, percpu_array  device memory (cuMemAlloc), uploaded from the shm
 *                        map's values as this process found them at attach
 *                        (percpu: zeros; not the values now, which hold other
 *                        contexts' state, e.g. kerneldur's pending launch,
 *                        that a new GPU must not fold as its own), copied
 *                        back every interval on our own
 *                        non-blocking stream into pinned staging. What each
 *                        context changed since its last copy (now - then) is
 *                        added into the shm values in place, under the map's
 *                        lock: counters add up over GPUs, contexts and
 *                        processes (each process adds only its own change),
 *                        a value `gpuext trace` wrote meanwhile stays, and a
 *                        value one context alone writes is its value exactly
 *                        (launchlate's slot ring, a region per GPU, relies on
 *                        that). Per-GPU slots (pack nr_slots, e.g. per SM)
 *                        fold into the shm map's slots (s mod n).
 *   ringbuf              headers and data in device memory (cuMemAlloc),
 *                        split into per-SM shards (codegen/ptx/ptx.h): the
 *                        device reserves by a device-scope CAS on its shard's
 *                        header; every interval the mirror thread copies the
 *                        headers and the reserved ranges back on our stream,
 *                        re-publishes committed records into the shm ring,
 *                        zeroes what it consumed on the device, then moves
 *                        cons (nv_ring_drain: copies of neighbouring shards
 *                        merged, the zeroing and cons writes of all shards
 *                        one launch of a small kernel of ours, instead of
 *                        several calls per shard that cost ~11 ms a drain
 *                        of 512 full shards on an H100). They used to live in mapped
 *                        pinned host memory, read in place: on an H200 every
 *                        reservation was then a system-scope CAS over PCIe,
 *                        ~170 us per record under contention (one record per
 *                        block took a 1.5 ms stencil kernel past 15 s, and a
 *                        tiny kernel writing one record went from 4.4 to
 *                        7.7 us). Shards spread the CAS and drop counter over
 *                        up to 8 addresses per SM (ptx.h says which warp uses
 *                        which; a floor of 8 KiB per shard); order across
 *                        shards is not kept.
 *   hash, lru_hash       device memory in codegen/ptx/ptx.h's layout (open
 *                        addressing, claimed by CAS), empty at start; each
 *                        round the whole table is copied back and, as for
 *                        arrays, what each context changed since it last
 *                        published is applied to the shm map key by key
 *                        (hash_publish): values added (a key on several GPUs
 *                        or in several processes: values added up), keys a
 *                        device added inserted, keys every device that had
 *                        them deleted removed, keys `gpuext trace` wrote
 *                        left alone.
 *
 * The shm side (nv_shm.c) is a small writer of core/maps_impl.h's layout, so
 * the preload library links neither libbpf nor LLVM.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "maps_impl.h"
#include "nv_impl.h"
#include "nv_util.h"

#define NV_MAP_BYTES_MAX (256u << 20)	/* one device map, per context */

const char *nv_cu_name(const struct nv_api *cu, CUresult r, char *buf, size_t len)
{
	const char *s = NULL;

	if (cu && cu->GetErrorName && cu->GetErrorName(r, &s) == CUDA_SUCCESS && s)
		return s;
	snprintf(buf, len, "CUDA error %d", r);
	return buf;
}

int nv_capture_relax(const struct nv_api *cu)
{
	int mode = CU_STREAM_CAPTURE_MODE_RELAXED;

	if (!cu->ThreadExchangeStreamCaptureMode ||
	    cu->ThreadExchangeStreamCaptureMode(&mode) != CUDA_SUCCESS)
		return -1;
	return mode;
}

void nv_capture_restore(const struct nv_api *cu, int old)
{
	if (old >= 0 && cu->ThreadExchangeStreamCaptureMode)
		cu->ThreadExchangeStreamCaptureMode(&old);
}

/* ------------------------------------------------------------------ */
/* Device rings                                                         */
/* ------------------------------------------------------------------ */

/*
 * Smallest shard worth splitting off. Smaller shards mean more of them, so
 * fewer warps on each CAS: on an H100, 8 KiB and 8 an SM against 32 KiB and 4
 * took kernelretsnoop on the stencil from 1.41x to 1.16x and memtrace on the
 * 2^22 kernel from 16.6x to 11.4x. A record must fit one shard: a probe
 * whose records are larger gets fewer, larger shards (nv_ring_shards).
 */
#define NV_RING_SHARD_MIN (8u << 10)
/* Shards per SM the device spreads over (GPUEXT_PTX_RB_SHARDS_PER_SM, ptx.h). */
#define NV_RING_PER_SM GPUEXT_PTX_RB_SHARDS_PER_SM
/* 8 per SM for more SMs than any GPU has (256): bounds the drain's work */
#define NV_RING_MAX_SHARDS 2048

uint32_t nv_ring_shards(uint32_t bytes, int sms, uint32_t max_record)
{
	uint64_t want = sms > 0 ? (uint64_t)sms * NV_RING_PER_SM : 0;
	uint64_t rec = ((uint64_t)max_record + 7) / 8 * 8 + 8;	/* with its header */
	/*
	 * A record never wraps: at a position past shard - rec it pads to the
	 * end and starts over at 0, so an empty shard takes it only if that
	 * position is also >= rec. Positions are 8-aligned: a shard of
	 * 2 rec - 8 bytes leaves no position where neither holds.
	 */
	uint64_t need = max_record ? 2 * rec - 8 : 0;
	uint64_t shard_min = need > NV_RING_SHARD_MIN ? need : NV_RING_SHARD_MIN;
	uint32_t n = 1;

	/* Doubling while every limit allows it: powers of 2 below all of them. */
	while (2ull * n <= want && 2ull * n * shard_min <= bytes && 2 * n <= NV_RING_MAX_SHARDS)
		n *= 2;
	return n;
}

static bool pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

int nv_ring_place(const struct nv_api *cu, CUstream st, struct nv_dmap *m, uint32_t bytes,
		  int sms, uint32_t max_record, struct gpuext_ptx_map_desc *d, CUresult *r)
{
	size_t hb;

	*r = CUDA_SUCCESS;
	if (!pow2(bytes) || bytes < 16)
		return -EINVAL;
	if (bytes > NV_MAP_BYTES_MAX)
		return -E2BIG;
	m->bytes = bytes;
	m->nr_shards = nv_ring_shards(bytes, sms, max_record);
	m->shard_bytes = bytes / m->nr_shards;
	hb = gpuext_ptx_rb_aux_bytes(m->nr_shards);	/* headers, then drop counters */
	*r = cu->MemAlloc(&m->dptr, m->bytes);
	if (*r == CUDA_SUCCESS)
		*r = cu->MemAlloc(&m->rh_dev, hb);
	if (*r == CUDA_SUCCESS)
		*r = cu->MemHostAlloc(&m->host, m->bytes, 0);
	if (*r == CUDA_SUCCESS)
		*r = cu->MemHostAlloc((void **)&m->rh, hb, 0);
	if (*r != CUDA_SUCCESS)
		return -EIO;
	/* Zero headers and data: a 0 record header is "not written yet" to the drain. */
	memset(m->host, 0, m->bytes);
	memset(m->rh, 0, hb);
	*r = cu->MemcpyHtoDAsync(m->dptr, m->host, m->bytes, st);
	if (*r == CUDA_SUCCESS)
		*r = cu->MemcpyHtoDAsync(m->rh_dev, m->rh, hb, st);
	if (*r == CUDA_SUCCESS)
		*r = cu->StreamSynchronize(st);
	if (*r != CUDA_SUCCESS)
		return -EIO;
	m->ring_drops = 0;
	d->base = m->dptr;
	d->aux = m->rh_dev;
	d->max_entries = m->shard_bytes;
	d->nr_slots = m->nr_shards;
	return 0;
}

/*
 * The device bytes of positions [@from, @to) of shard @k, as offsets from
 * m->dptr: at most two pieces (the range may wrap), in ascending order
 * (the wrapped piece is at the shard's start). Returns how many.
 */
static int ring_pieces(const struct nv_dmap *m, uint32_t k, uint64_t from, uint64_t to,
		       uint64_t piece[2][2])
{
	uint64_t sb = m->shard_bytes, off = from & (sb - 1), len = to - from;
	uint64_t first = len < sb - off ? len : sb - off;
	int n = 0;

	if (len > first) {
		piece[n][0] = (uint64_t)k * sb;
		piece[n++][1] = len - first;
	}
	if (first) {
		piece[n][0] = (uint64_t)k * sb + off;
		piece[n++][1] = first;
	}
	return n;
}

/*
 * Device -> staging copies of ascending byte ranges, merged while the gap
 * between two is at most NV_RING_COPY_GAP: with a few calls per shard a drain
 * of 512 full shards took ~11 ms on an H100, where one copy of the whole ring
 * is well under 1 ms. The bytes in a gap land in staging unread.
 */
#define NV_RING_COPY_GAP (256u << 10)

struct ring_run {
	uint64_t a, b;
	bool open;
};

static CUresult run_flush(const struct nv_api *cu, CUstream st, struct nv_dmap *m,
			  struct ring_run *c)
{
	if (!c->open)
		return CUDA_SUCCESS;
	c->open = false;
	return cu->MemcpyDtoHAsync((uint8_t *)m->host + c->a, m->dptr + c->a, c->b - c->a, st);
}

static CUresult run_add(const struct nv_api *cu, CUstream st, struct nv_dmap *m,
			struct ring_run *c, uint32_t k, uint64_t from, uint64_t to)
{
	uint64_t piece[2][2];
	int n = ring_pieces(m, k, from, to, piece);
	CUresult r = CUDA_SUCCESS;

	for (int i = 0; i < n && r == CUDA_SUCCESS; i++) {
		uint64_t a = piece[i][0], b = a + piece[i][1];

		if (c->open && a <= c->b + NV_RING_COPY_GAP) {
			if (b > c->b)
				c->b = b;
			continue;
		}
		r = run_flush(cu, st, m, c);
		c->a = a;
		c->b = b;
		c->open = true;
	}
	return r;
}

/* Zeroes device bytes [@off, @off + @n) of ring @m (offsets from m->dptr), one call. */
static CUresult ring_zero(const struct nv_api *cu, CUstream st, struct nv_dmap *m, uint64_t off,
			  uint64_t n)
{
	uint8_t *host = (uint8_t *)m->host + off;

	if (!n)
		return CUDA_SUCCESS;
	/* Records are 8-aligned multiples of 8: whole u32 words. */
	if (cu->MemsetD32Async)
		return cu->MemsetD32Async(m->dptr + off, 0, n / 4, st);
	/* No memset entry point: the staging copy, zeroed, goes back. */
	memset(host, 0, n);
	return cu->MemcpyHtoDAsync(m->dptr + off, host, n, st);
}

/*
 * The tidy kernel: one block per table entry zeroes the entry's (at most two)
 * byte ranges, waits for its threads (bar.sync), and only then, after a
 * fence, thread 0 writes the shard's new cons: the device sees cons move only
 * once the space it frees reads 0. Then, after another fence, it clears the
 * header's full_mark (16 bytes past cons, ptx.h), so writers that read the
 * header afresh do not drop by a mark from before the drain, and one that
 * sees the mark cleared sees the new cons. It replaces two or three calls per
 * consumed shard (memsets and a cons copy) with one launch per drain. The
 * table (struct nv_tidy_ent) is filled in pinned staging and copied to the
 * device before the launch, in stream order; the addresses in it are device
 * addresses.
 */
static const char tidy_ptx[] =
	".version 6.0\n"
	".target sm_52\n"
	".address_size 64\n"
	"\n"
	".visible .entry gpuext_ring_tidy(.param .u64 p_tab)\n"
	"{\n"
	"	.reg .pred %p<4>;\n"
	"	.reg .b32 %r<4>;\n"
	"	.reg .b64 %rd<16>;\n"
	"\n"
	"	ld.param.u64 %rd1, [p_tab];\n"
	"	cvta.to.global.u64 %rd1, %rd1;\n"
	"	mov.u32 %r1, %ctaid.x;\n"
	"	mul.wide.u32 %rd2, %r1, 48;\n"
	"	add.s64 %rd1, %rd1, %rd2;\n"
	"	ld.volatile.global.u64 %rd3, [%rd1];\n"
	"	ld.volatile.global.u64 %rd4, [%rd1+8];\n"
	"	ld.volatile.global.u64 %rd5, [%rd1+16];\n"
	"	ld.volatile.global.u64 %rd6, [%rd1+24];\n"
	"	cvta.to.global.u64 %rd3, %rd3;\n"
	"	cvta.to.global.u64 %rd5, %rd5;\n"
	"	mov.u32 %r2, %tid.x;\n"
	"	mul.wide.u32 %rd7, %r2, 8;\n"
	"	mov.u32 %r3, %ntid.x;\n"
	"	mul.wide.u32 %rd8, %r3, 8;\n"
	"	mov.u64 %rd15, 0;\n"
	"	mov.u64 %rd9, %rd7;\n"
	"ZERO0:\n"
	"	setp.ge.u64 %p1, %rd9, %rd4;\n"
	"	@%p1 bra START1;\n"
	"	add.s64 %rd10, %rd3, %rd9;\n"
	"	st.global.u64 [%rd10], %rd15;\n"
	"	add.s64 %rd9, %rd9, %rd8;\n"
	"	bra.uni ZERO0;\n"
	"START1:\n"
	"	mov.u64 %rd9, %rd7;\n"
	"ZERO1:\n"
	"	setp.ge.u64 %p1, %rd9, %rd6;\n"
	"	@%p1 bra ZEROED;\n"
	"	add.s64 %rd10, %rd5, %rd9;\n"
	"	st.global.u64 [%rd10], %rd15;\n"
	"	add.s64 %rd9, %rd9, %rd8;\n"
	"	bra.uni ZERO1;\n"
	"ZEROED:\n"
	"	bar.sync 0;\n"
	"	setp.ne.u32 %p2, %r2, 0;\n"
	"	@%p2 bra DONE;\n"
	"	ld.volatile.global.u64 %rd11, [%rd1+32];\n"
	"	ld.volatile.global.u64 %rd12, [%rd1+40];\n"
	"	setp.eq.u64 %p3, %rd11, 0;\n"
	"	@%p3 bra DONE;\n"
	"	cvta.to.global.u64 %rd11, %rd11;\n"
	"	membar.gl;\n"
	"	st.volatile.global.u64 [%rd11], %rd12;\n"
	"	membar.gl;\n"	/* a writer that sees the mark cleared sees the new cons */
	"	st.volatile.global.u64 [%rd11+16], %rd15;\n"	/* full_mark: ptx.h */
	"DONE:\n"
	"	ret;\n"
	"}\n";

const char *nv_tidy_ptx(void)
{
	return tidy_ptx;
}

#define NV_TIDY_THREADS 256

int nv_tidy_init(const struct nv_api *cu, struct nv_tidy *t, uint32_t cap, char *why,
		 size_t why_len)
{
	char nb[32];
	CUresult r;

	memset(t, 0, sizeof(*t));
	if (!cu->ModuleLoadData || !cu->ModuleGetFunction || !cu->LaunchKernel) {
		snprintf(why, why_len, "the driver lacks an entry point it needs");
		return -ENOSYS;
	}
	r = cu->ModuleLoadData(&t->mod, tidy_ptx);
	if (r == CUDA_SUCCESS)
		r = cu->ModuleGetFunction(&t->fn, t->mod, "gpuext_ring_tidy");
	if (r == CUDA_SUCCESS)
		r = cu->MemHostAlloc((void **)&t->tab, (size_t)cap * sizeof(*t->tab), 0);
	if (r == CUDA_SUCCESS)
		r = cu->MemAlloc(&t->tab_dev, (size_t)cap * sizeof(*t->tab));
	if (r != CUDA_SUCCESS) {
		snprintf(why, why_len, "%s", nv_cu_name(cu, r, nb, sizeof(nb)));
		if (t->tab && cu->MemFreeHost)
			cu->MemFreeHost(t->tab);
		if (t->mod && cu->ModuleUnload)
			cu->ModuleUnload(t->mod);
		memset(t, 0, sizeof(*t));
		return -EIO;
	}
	t->cap = cap;
	return 0;
}

/*
 * The L2 policy the probes' map atomics carry (ptx_text.h,
 * gx_ptx_probes_l2keep): evict_last, made by createpolicy on this GPU, so
 * its bits are what this GPU's JIT means by it. A counter a probe bumps once
 * per warp is touched again only after the kernel's own data streamed through
 * the L2, and each such RED then read and wrote DRAM: threadhist on the decode
 * step (64 GEMVs of 4,096 blocks, each warp one RED to its own slot) 1.032x
 * without, 1.023-1.026x with (H100). Written as an immediate it costs one
 * uniform instruction a site (the stencil 1.027x against 1.026x); made by
 * createpolicy at every site it cost six (1.034x), and read from a constant
 * and tested, five (1.039x). sm_80 and up.
 */
static const char l2keep_ptx[] =
	".version 7.4\n"
	".target sm_80\n"
	".address_size 64\n"
	"\n"
	".visible .entry gpuext_l2_keep(.param .u64 p_out)\n"
	"{\n"
	"	.reg .b64 %rd<3>;\n"
	"\n"
	"	ld.param.u64 %rd1, [p_out];\n"
	"	cvta.to.global.u64 %rd1, %rd1;\n"
	"	createpolicy.fractional.L2::evict_last.b64 %rd2, 1.0;\n"
	"	st.global.u64 [%rd1], %rd2;\n"
	"	ret;\n"
	"}\n";

const char *nv_l2keep_ptx(void)
{
	return l2keep_ptx;
}

int nv_l2keep_measure(const struct nv_api *cu, CUstream st, uint64_t *pol, char *why,
		      size_t why_len)
{
	CUmodule mod = NULL;
	CUfunction fn = NULL;
	CUdeviceptr out = 0;
	void *params[1];
	uint64_t v = 0;
	char nb[32];
	const char *what = "loading the policy kernel";
	CUresult r;

	*pol = 0;
	if (!cu->ModuleLoadData || !cu->ModuleGetFunction || !cu->LaunchKernel ||
	    !cu->MemAlloc || !cu->MemcpyDtoHAsync || !cu->MemFree || !cu->StreamSynchronize) {
		snprintf(why, why_len, "the driver lacks an entry point it needs");
		return -ENOSYS;
	}
	r = cu->ModuleLoadData(&mod, l2keep_ptx);
	if (r == CUDA_SUCCESS)
		r = cu->ModuleGetFunction(&fn, mod, "gpuext_l2_keep");
	if (r == CUDA_SUCCESS && (what = "device memory", true))
		r = cu->MemAlloc(&out, sizeof(v));
	if (r == CUDA_SUCCESS && (what = "launching the policy kernel", true)) {
		params[0] = &out;
		r = cu->LaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, st, params, NULL);
	}
	if (r == CUDA_SUCCESS && (what = "reading the policy", true))
		r = cu->MemcpyDtoHAsync(&v, out, sizeof(v), st);
	if (r == CUDA_SUCCESS)
		r = cu->StreamSynchronize(st);
	if (out)
		cu->MemFree(out);
	if (mod && cu->ModuleUnload)
		cu->ModuleUnload(mod);
	if (r != CUDA_SUCCESS) {
		snprintf(why, why_len, "%s: %s", what, nv_cu_name(cu, r, nb, sizeof(nb)));
		return -EIO;
	}
	if (!v) {
		snprintf(why, why_len, "the policy kernel gave 0");
		return -EIO;
	}
	*pol = v;
	return 0;
}

/*
 * The end of the committed prefix of shard image @data between @cons and
 * @prod (stops at a BUSY or 0 header). *@bad: a header that cannot be
 * right (a length past the shard end or the producer) stops it too.
 */
static uint64_t ring_committed(const uint8_t *data, uint64_t size, uint64_t cons, uint64_t prod,
			       bool *bad)
{
	*bad = prod < cons || prod - cons > size;
	if (*bad)
		return cons;
	while (cons < prod) {
		uint64_t off = cons & (size - 1), step;
		uint32_t w;

		memcpy(&w, data + off, sizeof(w));
		if ((w & GPUEXT_RB_BUSY) || w == 0)
			break;	/* reserved, not committed yet (0: header not even written) */
		step = gpuext_round8((uint64_t)(w & GPUEXT_RB_LEN_MASK) + GPUEXT_RB_HDR_SZ);
		if (off + step > size || step > prod - cons) {
			*bad = true;	/* records never wrap on the device: garbage */
			break;
		}
		cons += step;
	}
	return cons;
}

/* Publishes shard @k's committed records [cons, end) from staging into @out; how many. */
static uint64_t ring_publish(struct nv_dmap *m, uint32_t k, uint64_t cons, uint64_t end,
			     struct nv_shm *out)
{
	uint32_t sb = m->shard_bytes;
	const uint8_t *data = (uint8_t *)m->host + (size_t)k * sb;
	uint64_t recs = 0;

	for (uint64_t pos = cons; pos < end;) {
		uint32_t w, len;

		memcpy(&w, data + (pos & (sb - 1)), sizeof(w));
		len = w & GPUEXT_RB_LEN_MASK;
		if (!(w & GPUEXT_RB_DISCARD) &&
		    nv_shm_ring_output(out, data + (pos & (sb - 1)) + GPUEXT_RB_HDR_SZ, len) == 0)
			recs++;
		pos += gpuext_round8((uint64_t)len + GPUEXT_RB_HDR_SZ);
	}
	return recs;
}

/*
 * Step 4 without the tidy kernel (none, or its launch failed): entry by
 * entry, publish the shard's records, then zero its ranges (a memset, or
 * the staging zeroed and copied back: hence after publishing) and write its
 * cons from the pinned header staging, in stream order. A call that fails
 * stops it there: the shards not reached are neither published nor
 * consumed, so the next drain takes them whole and nothing arrives twice.
 */
static CUresult tidy_by_calls(const struct nv_api *cu, CUstream st, struct nv_dmap *m,
			      const struct nv_tidy_ent *e, const uint32_t *shard, uint32_t n,
			      const uint64_t *cons, const uint64_t *end, const bool *bad,
			      struct nv_shm *out, uint64_t *recs)
{
	CUresult r = CUDA_SUCCESS;

	for (uint32_t i = 0; i < n && r == CUDA_SUCCESS; i++) {
		uint32_t k = shard[i];

		*recs += ring_publish(m, k, cons[k], end[k], out);
		out->host_drops += bad[k];
		r = ring_zero(cu, st, m, e[i].a0 - m->dptr, e[i].n0);
		if (r == CUDA_SUCCESS)
			r = ring_zero(cu, st, m, e[i].a1 - m->dptr, e[i].n1);
		if (r != CUDA_SUCCESS)
			break;
		/*
		 * Pinned: read by the copies below, after the zeroing. cons, then
		 * (spare and) the mark cleared, in stream order: a writer that sees
		 * the mark cleared sees the new cons, as with the tidy kernel.
		 */
		m->rh[k].cons = e[i].cons;
		m->rh[k].spare = 0;
		m->rh[k].full_mark = 0;
		r = cu->MemcpyHtoDAsync(e[i].cons_addr, &m->rh[k].cons, sizeof(m->rh[k].cons), st);
		if (r == CUDA_SUCCESS)
			r = cu->MemcpyHtoDAsync(e[i].cons_addr + 8, &m->rh[k].spare,
						sizeof(m->rh[k].spare) + sizeof(m->rh[k].full_mark),
						st);
	}
	return r;
}

/* nv_ring_drain() with its per-shard arrays (n entries each) from the caller. */
static int ring_drain(const struct nv_api *cu, CUstream st, struct nv_dmap *m, struct nv_tidy *t,
		      struct nv_shm *out, uint64_t *moved, uint64_t *cons, uint64_t *prod,
		      uint64_t *end, bool *bad, struct nv_tidy_ent *ents, uint32_t *shard)
{
	uint32_t n = m->nr_shards, sb = m->shard_bytes, nent = 0;
	uint64_t drops = 0, recs = 0;
	struct ring_run run = { 0 };
	bool again = false;
	CUresult r;

	/* 1. The headers: where each shard's producer and consumer are; and the drop counters. */
	r = cu->MemcpyDtoHAsync(m->rh, m->rh_dev, gpuext_ptx_rb_aux_bytes(n), st);
	if (r == CUDA_SUCCESS)
		r = cu->StreamSynchronize(st);
	if (r != CUDA_SUCCESS)
		return -EIO;
	for (uint32_t k = 0; k < n; k++) {
		uint64_t d;

		memcpy(&d, (uint8_t *)m->rh + gpuext_ptx_rb_drops_off(n) + (size_t)k * 8, sizeof(d));
		cons[k] = m->rh[k].cons;
		prod[k] = m->rh[k].prod;
		drops += d;
	}
	m->ring_drops = drops;
	/* 2. The reserved range of each shard: which records are committed. */
	for (uint32_t k = 0; k < n && r == CUDA_SUCCESS; k++)
		if (prod[k] > cons[k] && prod[k] - cons[k] <= sb)
			r = run_add(cu, st, m, &run, k, cons[k], prod[k]);
	if (r == CUDA_SUCCESS)
		r = run_flush(cu, st, m, &run);
	if (r == CUDA_SUCCESS)
		r = cu->StreamSynchronize(st);
	if (r != CUDA_SUCCESS)
		return -EIO;
	for (uint32_t k = 0; k < n; k++) {
		end[k] = ring_committed((uint8_t *)m->host + (size_t)k * sb, sb, cons[k], prod[k],
					&bad[k]);
		again |= end[k] > cons[k];
	}
	/*
	 * 3. The committed records once more: this copy starts after the one
	 * that saw them committed, so it holds every payload byte the device
	 * wrote before its release store of the header.
	 */
	for (uint32_t k = 0; k < n && r == CUDA_SUCCESS; k++)
		if (end[k] > cons[k])
			r = run_add(cu, st, m, &run, k, cons[k], end[k]);
	if (r == CUDA_SUCCESS)
		r = run_flush(cu, st, m, &run);
	if (again && r == CUDA_SUCCESS)
		r = cu->StreamSynchronize(st);
	if (r != CUDA_SUCCESS)
		return -EIO;
	/*
	 * 4. What each shard consumes: its ranges to zero and its new cons. Then
	 * the tidy kernel's one launch (table copied first) and the records
	 * published, in shard order; or, without it, entry by entry.
	 */
	for (uint32_t k = 0; k < n; k++) {
		uint64_t to = bad[k] ? prod[k] : end[k], piece[2][2] = { { 0, 0 }, { 0, 0 } };
		struct nv_tidy_ent *e = &ents[nent];

		if (to == cons[k])
			continue;
		if (bad[k]) {
			/* Whatever lies past a corrupt header cannot be trusted: drop the shard's rest. */
			piece[0][0] = (uint64_t)k * sb;
			piece[0][1] = sb;
		} else {
			ring_pieces(m, k, cons[k], to, piece);
		}
		e->a0 = m->dptr + piece[0][0];
		e->n0 = piece[0][1];
		e->a1 = m->dptr + piece[1][0];
		e->n1 = piece[1][1];
		e->cons_addr = m->rh_dev + (CUdeviceptr)k * sizeof(*m->rh) +
			       offsetof(struct gpuext_ptx_ringbuf_hdr, cons);
		e->cons = to;
		shard[nent++] = k;
	}
	r = CUDA_ERROR_NOT_SUPPORTED;
	if (nent && t && t->fn && nent <= t->cap) {
		void *params[] = { &t->tab_dev };

		r = cu->MemcpyHtoDAsync(t->tab_dev, t->tab, (size_t)nent * sizeof(*t->tab), st);
		if (r == CUDA_SUCCESS)
			r = cu->LaunchKernel(t->fn, nent, 1, 1, NV_TIDY_THREADS, 1, 1, 0, st, params,
					     NULL);
		if (r == CUDA_SUCCESS) {
			for (uint32_t i = 0; i < nent; i++) {
				recs += ring_publish(m, shard[i], cons[shard[i]], end[shard[i]], out);
				out->host_drops += bad[shard[i]];
			}
		} else if (!t->warned) {
			char nb[32];

			/* Nothing ran: the same entries one call at a time; the kernel is tried again next time. */
			t->warned = true;
			fprintf(stderr, "gpuext-nvprobe: the ring tidy kernel could not be launched "
				"(%s); this drain zeroes consumed records with one call per range\n",
				nv_cu_name(cu, r, nb, sizeof(nb)));
		}
	}
	if (r != CUDA_SUCCESS)
		r = nent ? tidy_by_calls(cu, st, m, ents, shard, nent, cons, end, bad, out, &recs) :
			   CUDA_SUCCESS;
	if (r == CUDA_SUCCESS)
		r = cu->StreamSynchronize(st);
	if (moved)
		*moved = recs;
	return r == CUDA_SUCCESS ? 0 : -EIO;
}

int nv_ring_drain(const struct nv_api *cu, CUstream st, struct nv_dmap *m, struct nv_tidy *t,
		  struct nv_shm *out, uint64_t *moved)
{
	uint32_t n = m->nr_shards;
	struct nv_tidy_ent *ents;
	uint64_t *a;
	int err;

	if (moved)
		*moved = 0;
	if (!n || n > NV_RING_MAX_SHARDS || !pow2(m->shard_bytes) || !m->rh || !m->host)
		return -EINVAL;
	/* 60 KiB at 2048 shards: not on the stack of whatever app thread drains */
	a = malloc((size_t)n * (3 * sizeof(uint64_t) + sizeof(uint32_t) + sizeof(bool)));
	ents = t && t->fn && t->cap >= n ? t->tab : calloc(n, sizeof(*ents));
	if (!a || !ents) {
		free(a);
		if (!(t && ents == t->tab))
			free(ents);
		return -ENOMEM;
	}
	err = ring_drain(cu, st, m, t, out, moved, a, a + n, a + 2 * (size_t)n,
			 (bool *)((uint32_t *)(a + 3 * (size_t)n) + n), ents,
			 (uint32_t *)(a + 3 * (size_t)n));
	free(a);
	if (ents != (t ? t->tab : NULL))
		free(ents);
	return err;
}

/* ------------------------------------------------------------------ */
/* Folding per-context values into the shm image                       */
/* ------------------------------------------------------------------ */

void nv_array_to_device(uint8_t *dev, uint32_t dev_stride, const uint8_t *shm, uint32_t shm_stride,
			uint32_t entries, uint32_t slots, uint32_t value_size)
{
	for (size_t v = 0; v < (size_t)entries * slots; v++)
		memcpy(dev + v * dev_stride, shm + v * shm_stride, value_size);
}

void nv_fold_values(uint8_t *acc, uint32_t dst_slots, uint32_t dst_stride, const uint8_t *now,
		    const uint8_t *base, uint32_t src_slots, uint32_t src_stride, uint32_t entries,
		    uint32_t value_size)
{
	unsigned lane = nv_value_lane(value_size);

	if (!dst_slots || !src_slots)
		return;
	for (uint32_t k = 0; k < entries; k++) {
		for (uint32_t s = 0; s < src_slots; s++) {
			size_t so = ((size_t)k * src_slots + s) * src_stride;
			size_t d = ((size_t)k * dst_slots + s % dst_slots) * dst_stride;

			if (!memcmp(now + so, base + so, value_size))
				continue;
			for (uint32_t b = 0; b < value_size; b += lane) {
				uint64_t a = 0, x = 0, y = 0;

				memcpy(&a, acc + d + b, lane);
				memcpy(&x, now + so + b, lane);
				memcpy(&y, base + so + b, lane);
				a += x - y;	/* wraps at the lane width once stored back */
				memcpy(acc + d + b, &a, lane);
			}
		}
	}
}

/* ------------------------------------------------------------------ */
/* Per-context device maps                                             */
/* ------------------------------------------------------------------ */

static bool is_array(uint32_t t)
{
	return t == BPF_MAP_TYPE_ARRAY || t == BPF_MAP_TYPE_PERCPU_ARRAY;
}

static bool is_hash(uint32_t t)
{
	return t == BPF_MAP_TYPE_HASH || t == BPF_MAP_TYPE_LRU_HASH;
}

/* Maps whose device state is copied back (arrays and hash tables). */
static bool copied_back(uint32_t t)
{
	return is_array(t) || is_hash(t);
}

int nv_hash_layout(uint32_t key_size, uint32_t value_size, uint32_t max_entries,
		   uint32_t *nr_buckets, uint32_t *bucket_size, size_t *bytes)
{
	uint64_t nb = 2, bs, total;

	if (!key_size || !value_size || !max_entries || key_size > 512 || value_size > 65536)
		return -EINVAL;
	while (nb < 2ull * max_entries)
		nb <<= 1;
	bs = 8ull + gpuext_round8(key_size) + gpuext_round8(value_size);
	total = sizeof(struct gpuext_ptx_hash_hdr) + nb * bs;
	if (nb > (1ull << 31) || total > (64ull << 20))
		return -E2BIG;
	*nr_buckets = (uint32_t)nb;
	*bucket_size = (uint32_t)bs;
	*bytes = (size_t)total;
	return 0;
}

int nv_maps__init(struct nv_maps *mm, const struct gx_pack *pack, const struct nv_api *cu,
		  char *err, size_t err_len)
{
	int e = 0;

	memset(mm, 0, sizeof(*mm));
	mm->cu = cu;
	mm->pack = pack;
	mm->interval_ms = 100;
	/* Tests stretch it to tell the other mirrors (exit, sync, unload) from this one. */
	if (getenv("GPUEXT_NV_MIRROR_MS") && atoi(getenv("GPUEXT_NV_MIRROR_MS")) > 0)
		mm->interval_ms = (unsigned)atoi(getenv("GPUEXT_NV_MIRROR_MS"));
	pthread_mutex_init(&mm->lock, NULL);
	pthread_cond_init(&mm->cond, NULL);
	if (pack->map_cnt > GX_PACK_MAX_MAPS) {
		nv_set_err(err, err_len, "the pack has %u maps, at most %d are supported",
			pack->map_cnt, GX_PACK_MAX_MAPS);
		return -E2BIG;
	}
	for (uint32_t i = 0; i < pack->map_cnt && !e; i++) {
		const struct gx_pack_map *pm = &pack->maps[i];
		struct nv_shm *s = &mm->shm[i];

		e = nv_shm_open(s, pm, err, err_len);
		if (e)
			break;
		if (is_array(pm->type)) {
			size_t n = nv_shm_values_size(s);

			mm->shm_init[i] = malloc(n ? n : 1);
			if (!mm->shm_init[i]) {
				e = -ENOMEM;
				break;
			}
			nv_shm_read_values(s, mm->shm_init[i]);
			mm->placed[i] = true;
		} else if (pm->type == BPF_MAP_TYPE_RINGBUF || is_hash(pm->type)) {
			mm->placed[i] = true;
		} else {
			fprintf(stderr, "gpuext-nvprobe: map '%s' is a %s map: not placed on the "
				"GPU (array, percpu_array, hash, lru_hash and ringbuf are); probes "
				"see it empty\n",
				pm->name, nv_map_type_name(pm->type));
		}
	}
	if (e) {
		for (uint32_t i = 0; i < GX_PACK_MAX_MAPS; i++) {
			nv_shm_close(&mm->shm[i]);
			free(mm->shm_init[i]);
			mm->shm_init[i] = NULL;
		}
	}
	return e;
}

static uint32_t dev_slots(const struct gx_pack_map *pm)
{
	return pm->type == BPF_MAP_TYPE_PERCPU_ARRAY && pm->nr_slots ? pm->nr_slots : 1;
}

/* Allocates and uploads the maps of one context (current on this thread). */
static int ctx_setup(struct nv_maps *mm, struct nv_ctx *x)
{
	const struct nv_api *cu = mm->cu;
	const struct gx_pack *p = mm->pack;
	char nb[32];
	CUresult r;

	r = cu->StreamCreate(&x->stream, CU_STREAM_NON_BLOCKING);
	if (r != CUDA_SUCCESS)
		goto cuda_fail;
	for (uint32_t i = 0; i < p->map_cnt; i++) {
		const struct gx_pack_map *pm = &p->maps[i];
		struct gpuext_ptx_map_desc *d = &x->desc[i];
		struct nv_dmap *m = &x->m[i];
		uint32_t slots = dev_slots(pm);

		if (!mm->placed[i])
			continue;
		d->type = pm->type;
		d->key_size = pm->key_size;
		d->value_size = pm->value_size;
		d->max_entries = pm->max_entries;
		d->stride = gpuext_ptx_probe_stride(pm->type, pm->value_size);
		d->nr_slots = slots;
		if (is_array(pm->type)) {
			struct nv_shm *s = &mm->shm[i];

			m->bytes = (size_t)pm->max_entries * slots * d->stride;
			if (m->bytes > NV_MAP_BYTES_MAX) {
				fprintf(stderr, "gpuext-nvprobe: map '%s': %zu bytes per GPU is more "
					"than %u MiB\n", pm->name, m->bytes, NV_MAP_BYTES_MAX >> 20);
				return -E2BIG;
			}
			m->init = calloc(1, m->bytes ? m->bytes : 1);
			m->last = malloc(m->bytes ? m->bytes : 1);
			if (!m->init || !m->last)
				return -ENOMEM;
			/* A plain array starts from what the shm map held at attach; per-GPU slots from 0. */
			if (pm->type == BPF_MAP_TYPE_ARRAY && s->nr_slots == 1)
				nv_array_to_device(m->init, d->stride, mm->shm_init[i], s->stride,
						   pm->max_entries, 1, pm->value_size);
			memcpy(m->last, m->init, m->bytes);
			/* Published so far: the upload. It is init's memory, not read again after setup. */
			m->pub = m->init;
			r = cu->MemAlloc(&m->dptr, m->bytes ? m->bytes : 8);
			if (r == CUDA_SUCCESS)
				r = cu->MemHostAlloc(&m->host, m->bytes ? m->bytes : 8, 0);
			if (r == CUDA_SUCCESS)
				r = cu->MemcpyHtoDAsync(m->dptr, m->init, m->bytes, x->stream);
			if (r != CUDA_SUCCESS)
				goto cuda_fail;
			d->base = m->dptr;
		} else if (is_hash(pm->type)) {
			struct gpuext_ptx_hash_hdr *hh;
			int e = nv_hash_layout(pm->key_size, pm->value_size, pm->max_entries,
					       &m->nr_buckets, &m->bucket_size, &m->bytes);

			if (e) {
				fprintf(stderr, "gpuext-nvprobe: hash map '%s' does not fit the device "
					"layout (%s)\n", pm->name, strerror(-e));
				return e;
			}
			m->init = calloc(1, m->bytes);	/* all buckets EMPTY */
			m->last = calloc(1, m->bytes);
			m->scratch = malloc(gpuext_round8(pm->value_size) + m->nr_buckets / 8 + 1);
			if (!m->init || !m->last || !m->scratch)
				return -ENOMEM;
			hh = (struct gpuext_ptx_hash_hdr *)m->init;
			hh->nr_buckets = m->nr_buckets;
			hh->bucket_size = m->bucket_size;
			hh->max_entries = pm->max_entries;
			memcpy(m->last, m->init, m->bytes);
			m->pub = m->init;	/* published so far: the empty table */
			r = cu->MemAlloc(&m->dptr, m->bytes);
			if (r == CUDA_SUCCESS)
				r = cu->MemHostAlloc(&m->host, m->bytes, 0);
			if (r == CUDA_SUCCESS)
				r = cu->MemcpyHtoDAsync(m->dptr, m->init, m->bytes, x->stream);
			if (r != CUDA_SUCCESS)
				goto cuda_fail;
			d->base = m->dptr;
		} else {
			int sms = 0, e;

			if (cu->DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
						   x->dev) != CUDA_SUCCESS)
				sms = 1;	/* one shard: correct, only more contended */
			e = nv_ring_place(cu, x->stream, m, pm->max_entries, sms, pm->max_record, d,
					  &r);
			if (e == -EIO)
				goto cuda_fail;
			if (e) {
				fprintf(stderr, "gpuext-nvprobe: ring '%s': %u bytes %s\n", pm->name,
					pm->max_entries, e == -E2BIG ? "is more than a device ring may "
					"hold (256 MiB)" : "is not a power of 2 of at least 16");
				return e;
			}
		}
	}
	r = cu->StreamSynchronize(x->stream);
	if (r != CUDA_SUCCESS)
		goto cuda_fail;
	for (uint32_t i = 0; i < p->map_cnt; i++)
		if (mm->placed[i] && p->maps[i].type == BPF_MAP_TYPE_RINGBUF) {
			char why[96];

			if (nv_tidy_init(cu, &x->tidy, NV_RING_MAX_SHARDS, why, sizeof(why)))
				fprintf(stderr, "gpuext-nvprobe: GPU %d: the ring tidy kernel is not "
					"available (%s): each drain zeroes consumed records with one "
					"call per range, which is slower\n", x->gpu, why);
			break;
		}
	return 0;
cuda_fail:
	fprintf(stderr, "gpuext-nvprobe: placing the probe maps on GPU %d failed: %s; kernels "
		"of this context run with probes that see no maps\n", x->gpu,
		nv_cu_name(cu, r, nb, sizeof(nb)));
	return -EIO;
}

/*
 * x->l2keep for a new context: sm_80 and up, unless GPUEXT_NV_L2_KEEP=0. A
 * failure is said (the probes then carry no hint, which is slower, not wrong).
 */
static void l2keep_setup(struct nv_maps *mm, struct nv_ctx *x)
{
	const char *env = getenv("GPUEXT_NV_L2_KEEP");
	char why[160];

	x->l2keep = 0;
	if (x->sm < 80 || (env && !strcmp(env, "0")))
		return;
	if (nv_l2keep_measure(mm->cu, x->stream, &x->l2keep, why, sizeof(why)))
		fprintf(stderr, "gpuext-nvprobe: GPU %d: no L2 policy for the probes' map "
			"atomics (%s): they run without it, which can be slower\n", x->gpu, why);
}

static struct nv_ctx *find_live(struct nv_maps *mm, CUcontext c)
{
	for (struct nv_ctx *x = mm->ctxs; x; x = x->next)
		if (x->ctx == c && !x->dead)
			return x;
	return NULL;
}

/*
 * The system's number of @x's GPU (nv_gpu_rank()), else its ordinal: then
 * stderr says why, once per device, as processes given different GPUs by
 * CUDA_VISIBLE_DEVICES then share GPU ids. Under mm->lock.
 */
static int system_gpu(struct nv_maps *mm, struct nv_ctx *x)
{
	uint64_t bit = 1ull << ((unsigned)x->ordinal % 64);
	char bus[64] = "", why[768];
	int r;

	if (!mm->gpu_list)
		return x->ordinal;
	if (!mm->cu->DeviceGetPCIBusId) {
		snprintf(why, sizeof(why), "the driver has no cuDeviceGetPCIBusId");
	} else if ((r = mm->cu->DeviceGetPCIBusId(bus, (int)sizeof(bus), x->dev)) != CUDA_SUCCESS) {
		char nb[32];

		snprintf(why, sizeof(why), "cuDeviceGetPCIBusId: %s",
			 nv_cu_name(mm->cu, (CUresult)r, nb, sizeof(nb)));
	} else {
		bus[sizeof(bus) - 1] = '\0';
		r = nv_gpu_rank(bus, mm->gpu_list, why, sizeof(why));
		if (r >= 0)
			return r;
	}
	if (!(mm->gpu_said & bit))
		fprintf(stderr, "gpuext-nvprobe: CUDA device %d's GPU id is its device number, not the "
			"system's (%s): processes given different GPUs may share ids\n", x->ordinal,
			why);
	mm->gpu_said |= bit;
	return x->ordinal;
}

uint64_t nv_maps__l2keep(struct nv_maps *mm, unsigned sm)
{
	uint64_t pol = 0;

	pthread_mutex_lock(&mm->lock);
	for (struct nv_ctx *x = mm->ctxs; x && !pol; x = x->next)
		if (!x->dead && x->sm == sm)
			pol = x->l2keep;
	pthread_mutex_unlock(&mm->lock);
	return pol;
}

struct nv_ctx *nv_maps__ctx(struct nv_maps *mm, CUcontext c)
{
	const struct nv_api *cu = mm->cu;
	struct nv_ctx *x;
	CUcontext popped;
	int major = 0, minor = 0, mode;

	if (!c)
		return NULL;
	pthread_mutex_lock(&mm->lock);
	x = find_live(mm, c);
	if (x)
		goto out;
	x = calloc(1, sizeof(*x));
	if (!x)
		goto out;
	x->ctx = c;
	x->ordinal = -1;
	mode = nv_capture_relax(cu);
	if (cu->CtxPushCurrent(c) != CUDA_SUCCESS) {
		nv_capture_restore(cu, mode);
		free(x);
		x = NULL;
		goto out;
	}
	x->gpu = -1;
	if (cu->CtxGetDevice(&x->dev) == CUDA_SUCCESS) {
		x->ordinal = x->dev;	/* CUdevice values are ordinals */
		x->gpu = system_gpu(mm, x);
		cu->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, x->dev);
		cu->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, x->dev);
		x->sm = (unsigned)(major * 10 + minor);
	}
	x->broken = ctx_setup(mm, x) != 0;
	if (x->broken)
		memset(x->desc, 0, sizeof(x->desc));
	else
		l2keep_setup(mm, x);
	cu->CtxPopCurrent(&popped);
	nv_capture_restore(cu, mode);
	x->next = mm->ctxs;
	mm->ctxs = x;
out:
	pthread_mutex_unlock(&mm->lock);
	return x;
}

int nv_maps__fill(struct nv_maps *mm, struct nv_ctx *x, CUdeviceptr table, size_t size)
{
	size_t need = (size_t)mm->pack->map_cnt * sizeof(struct gpuext_ptx_map_desc);
	CUresult r;
	int mode;

	if (!need)
		return 0;
	if (size < need)
		return -EINVAL;
	/* Our stream: the app's streams never wait on us, and we never wait on them. */
	mode = nv_capture_relax(mm->cu);
	r = mm->cu->MemcpyHtoDAsync(table, x->desc, need, x->stream);
	if (r == CUDA_SUCCESS)
		r = mm->cu->StreamSynchronize(x->stream);
	nv_capture_restore(mm->cu, mode);
	return r == CUDA_SUCCESS ? 0 : -EIO;
}

/* Copies one live context's arrays into ->last. Called with mm->lock held. */
static void snapshot(struct nv_maps *mm, struct nv_ctx *x)
{
	const struct nv_api *cu = mm->cu;
	CUcontext popped;
	bool any = false;
	CUresult r = CUDA_SUCCESS;

	if (x->dead || x->broken)
		return;
	for (uint32_t i = 0; i < mm->pack->map_cnt; i++)
		any |= mm->placed[i] && copied_back(mm->pack->maps[i].type);
	if (!any || cu->CtxPushCurrent(x->ctx) != CUDA_SUCCESS)
		return;
	for (uint32_t i = 0; i < mm->pack->map_cnt && r == CUDA_SUCCESS; i++)
		if (mm->placed[i] && copied_back(mm->pack->maps[i].type))
			r = cu->MemcpyDtoHAsync(x->m[i].host, x->m[i].dptr, x->m[i].bytes,
						x->stream);
	if (r == CUDA_SUCCESS)
		r = cu->StreamSynchronize(x->stream);
	cu->CtxPopCurrent(&popped);
	if (r != CUDA_SUCCESS)
		return;	/* a faulted context: keep the previous snapshot */
	for (uint32_t i = 0; i < mm->pack->map_cnt; i++)
		if (mm->placed[i] && copied_back(mm->pack->maps[i].type)) {
			memcpy(x->m[i].last, x->m[i].host, x->m[i].bytes);
			x->m[i].have_last = true;
		}
}

/*
 * A FULL bucket's key in a device hash image (codegen/ptx/ptx.h), and the
 * hash the device stored with it (gpuext_ptx_hash_key, which the preload
 * does not link), or NULL.
 */
static const uint8_t *img_key(const struct nv_dmap *m, const uint8_t *img, uint32_t k,
			      uint32_t *hash)
{
	const uint8_t *b = img + sizeof(struct gpuext_ptx_hash_hdr) + (size_t)k * m->bucket_size;
	uint32_t state;

	memcpy(&state, b, sizeof(state));
	memcpy(hash, b + 4, sizeof(*hash));
	return state == GPUEXT_PTX_HASH_FULL ? b + 8 : NULL;
}

/* The value of @key (its hash @hash) in a device hash image, by linear probing, or NULL. */
static const uint8_t *img_find(const struct nv_dmap *m, const uint8_t *img, const void *key,
			       uint32_t key_size, uint32_t hash)
{
	uint32_t mask = m->nr_buckets - 1, k = hash & mask;

	for (uint32_t n = 0; n < m->nr_buckets; n++, k = (k + 1) & mask) {
		const uint8_t *b = img + sizeof(struct gpuext_ptx_hash_hdr) + (size_t)k * m->bucket_size;
		uint32_t state;

		memcpy(&state, b, sizeof(state));
		if (state == GPUEXT_PTX_HASH_EMPTY)
			return NULL;
		if (state == GPUEXT_PTX_HASH_FULL && !memcmp(b + 8, key, key_size))
			return b + 8 + gpuext_round8(key_size);
	}
	return NULL;
}

/*
 * The bucket of @img holding @key's live copy: a device table holds a key
 * once, but a snapshot copied while a kernel deleted and inserted it again
 * (into a new bucket: tombstones are never reused) may show it twice. Only
 * the copy probing finds first counts.
 */
static bool img_live(const struct nv_dmap *m, const uint8_t *img, const uint8_t *key,
		     uint32_t key_size, uint32_t hash)
{
	return img_find(m, img, key, key_size, hash) == key + gpuext_round8(key_size);
}

/*
 * One context's change to a hash map since it last published (m->pub to
 * m->last), applied to the shm map key by key: a changed value adds its
 * difference, a new key comes in (or is counted once more), a deleted key
 * takes its published value back out and is counted once less. Then pub
 * becomes last, except that a key the shm map had no room for stays out of
 * pub (its bucket a tombstone there), so the next round tries it again as
 * new and a later deletion does not take out what was never put in.
 */
static void hash_publish(struct nv_shm *s, const struct gx_pack_map *pm, struct nv_dmap *m)
{
	uint32_t ks = (uint32_t)gpuext_round8(pm->key_size), vs = pm->value_size;
	uint8_t *delta = m->scratch, *failed = m->scratch + gpuext_round8(vs);

	memset(failed, 0, m->nr_buckets / 8 + 1);
	for (uint32_t k = 0; k < m->nr_buckets; k++) {
		uint32_t hash;
		const uint8_t *key = img_key(m, m->last, k, &hash), *then;

		if (!key || !img_live(m, m->last, key, pm->key_size, hash))
			continue;
		then = img_find(m, m->pub, key, pm->key_size, hash);
		if (then && !memcmp(key + ks, then, vs))
			continue;
		nv_value_sub(delta, key + ks, then, vs);
		if (nv_shm_hash_apply(s, key, delta, key + ks, then ? 0 : 1) == -E2BIG)
			failed[k / 8] |= (uint8_t)(1u << (k % 8));
	}
	for (uint32_t k = 0; k < m->nr_buckets; k++) {
		uint32_t hash;
		const uint8_t *key = img_key(m, m->pub, k, &hash);

		if (!key || !img_live(m, m->pub, key, pm->key_size, hash) ||
		    img_find(m, m->last, key, pm->key_size, hash))
			continue;
		memset(delta, 0, vs);
		nv_value_sub(delta, delta, key + ks, vs);
		nv_shm_hash_apply(s, key, delta, NULL, -1);
	}
	memcpy(m->pub, m->last, m->bytes);
	for (uint32_t k = 0; k < m->nr_buckets; k++)
		if (failed[k / 8] & (1u << (k % 8))) {
			uint32_t tomb = GPUEXT_PTX_HASH_DELETED;

			memcpy(m->pub + sizeof(struct gpuext_ptx_hash_hdr) + (size_t)k * m->bucket_size,
			       &tomb, sizeof(tomb));
		}
}

static void publish(struct nv_maps *mm)
{
	for (uint32_t i = 0; i < mm->pack->map_cnt; i++) {
		const struct gx_pack_map *pm = &mm->pack->maps[i];
		struct nv_shm *s = &mm->shm[i];

		if (!mm->placed[i])
			continue;
		if (is_array(pm->type)) {
			struct gpuext_shm_hdr *h = s->base;
			bool any = false;

			for (struct nv_ctx *x = mm->ctxs; x && !any; x = x->next)
				any = !x->broken && x->m[i].have_last &&
				      memcmp(x->m[i].last, x->m[i].pub, x->m[i].bytes);
			if (!any)
				continue;
			/* Each context's change since its last publication, added in place. */
			gpuext_shm_lock(h);
			gpuext_shm_write_begin(h);
			for (struct nv_ctx *x = mm->ctxs; x; x = x->next) {
				if (x->broken || !x->m[i].have_last)
					continue;
				nv_fold_values(s->values, s->nr_slots, s->stride, x->m[i].last,
					       x->m[i].pub, dev_slots(pm), x->desc[i].stride,
					       pm->max_entries, pm->value_size);
				memcpy(x->m[i].pub, x->m[i].last, x->m[i].bytes);
			}
			gpuext_shm_write_end(h);
			gpuext_shm_unlock(h);
		} else if (is_hash(pm->type)) {
			bool any = false;

			for (struct nv_ctx *x = mm->ctxs; x && !any; x = x->next)
				any = !x->broken && x->m[i].have_last &&
				      memcmp(x->m[i].last, x->m[i].pub, x->m[i].bytes);
			if (!any)
				continue;
			nv_shm_hash_begin(s);
			for (struct nv_ctx *x = mm->ctxs; x; x = x->next) {
				if (!x->broken && x->m[i].have_last &&
				    memcmp(x->m[i].last, x->m[i].pub, x->m[i].bytes))
					hash_publish(s, pm, &x->m[i]);
			}
			nv_shm_hash_end(s);
		} else if (pm->type == BPF_MAP_TYPE_RINGBUF) {
			uint64_t drops = 0;

			for (struct nv_ctx *x = mm->ctxs; x; x = x->next) {
				const struct nv_api *cu = mm->cu;
				CUcontext popped;
				int mode;

				if (x->broken || !x->m[i].rh)
					continue;
				/* Copies: never into an app's stream capture. */
				mode = nv_capture_relax(cu);
				if (cu->CtxPushCurrent(x->ctx) == CUDA_SUCCESS) {
					nv_ring_drain(cu, x->stream, &x->m[i], &x->tidy, s, NULL);
					cu->CtxPopCurrent(&popped);
				}
				nv_capture_restore(cu, mode);
				drops += x->m[i].ring_drops;
			}
			mm->dev_drops[i] = mm->dead_drops[i] + drops;
		}
	}
}

void nv_maps__mirror(struct nv_maps *mm)
{
	pthread_mutex_lock(&mm->lock);
	/* Cleared before the copies: a launch racing with them marks the maps dirty again. */
	atomic_store_explicit(&mm->dirty, false, memory_order_relaxed);
	for (struct nv_ctx *x = mm->ctxs; x; x = x->next)
		snapshot(mm, x);
	publish(mm);
	pthread_mutex_unlock(&mm->lock);
}

/*
 * The device memory and pinned staging of @x go with its context: nothing
 * of it may be touched again. Its last array/hash values stay in the sums,
 * its ring drop count (as of its last drain) in the totals. Called with
 * mm->lock held.
 */
static void retire(struct nv_maps *mm, struct nv_ctx *x)
{
	x->dead = true;
	for (uint32_t i = 0; i < GX_PACK_MAX_MAPS; i++) {
		if (x->m[i].rh)
			mm->dead_drops[i] += x->m[i].ring_drops;
		x->m[i].rh = NULL;
		x->m[i].rh_dev = 0;
		x->m[i].host = NULL;
		x->m[i].dptr = 0;
	}
	memset(&x->tidy, 0, sizeof(x->tidy));	/* module and table went with the context */
}

void nv_maps__ctx_gone(struct nv_maps *mm, CUcontext c)
{
	struct nv_ctx *x;

	pthread_mutex_lock(&mm->lock);
	x = find_live(mm, c);
	if (x) {
		snapshot(mm, x);
		publish(mm);	/* rings too: their device memory goes with the context */
		retire(mm, x);
	}
	pthread_mutex_unlock(&mm->lock);
}

void nv_maps__ctx_lost(struct nv_maps *mm, CUcontext c)
{
	struct nv_ctx *x;

	pthread_mutex_lock(&mm->lock);
	x = find_live(mm, c);
	if (x)
		retire(mm, x);	/* already freed: what its rings held since the last drain is lost */
	pthread_mutex_unlock(&mm->lock);
}

static void *mirror_main(void *arg)
{
	struct nv_maps *mm = arg;
	struct timespec until;

	/* This thread only copies: it must never invalidate an app's stream capture. */
	nv_capture_relax(mm->cu);
	pthread_mutex_lock(&mm->lock);
	while (!mm->stop) {
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += (long)mm->interval_ms * 1000000L;
		until.tv_sec += until.tv_nsec / 1000000000L;
		until.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&mm->cond, &mm->lock, &until);
		if (mm->stop)
			break;
		pthread_mutex_unlock(&mm->lock);
		nv_maps__mirror(mm);
		if (mm->tick)
			mm->tick(mm->tick_user);
		pthread_mutex_lock(&mm->lock);
	}
	pthread_mutex_unlock(&mm->lock);
	return NULL;
}

int nv_maps__start(struct nv_maps *mm)
{
	pthread_condattr_t ca;
	int e;

	pthread_mutex_lock(&mm->lock);
	if (mm->thread_started) {
		pthread_mutex_unlock(&mm->lock);
		return 0;
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_destroy(&mm->cond);
	pthread_cond_init(&mm->cond, &ca);
	pthread_condattr_destroy(&ca);
	e = pthread_create(&mm->thread, NULL, mirror_main, mm);
	mm->thread_started = e == 0;
	pthread_mutex_unlock(&mm->lock);
	return -e;
}

void nv_maps__stop(struct nv_maps *mm)
{
	bool joined;

	pthread_mutex_lock(&mm->lock);
	mm->stop = true;
	joined = mm->thread_started;
	mm->thread_started = false;
	pthread_cond_broadcast(&mm->cond);
	pthread_mutex_unlock(&mm->lock);
	if (joined)
		pthread_join(mm->thread, NULL);
}

void nv_maps__report(struct nv_maps *mm, int fd, bool drops_only)
{
	for (uint32_t i = 0; i < mm->pack->map_cnt; i++) {
		char line[256];
		int n;

		if (mm->pack->maps[i].type != BPF_MAP_TYPE_RINGBUF || !mm->placed[i])
			continue;
		if (drops_only && !mm->dev_drops[i] && !mm->shm[i].host_drops)
			continue;
		n = snprintf(line, sizeof(line), "%sring '%s': %llu records, %llu dropped on the "
			     "device (ring full), %llu dropped on the host (shm ring full)\n",
			     drops_only ? "gpuext-nvprobe: " : "",
			     mm->pack->maps[i].name, (unsigned long long)mm->shm[i].records,
			     (unsigned long long)mm->dev_drops[i],
			     (unsigned long long)mm->shm[i].host_drops);
		if (n > 0 && write(fd, line, (size_t)n) < 0)
			return;
	}
}

// SPDX-License-Identifier: Apache-2.0
/*
 * LZ4 block and Zstandard (RFC 8878) decoders for compressed fatbin members.
 *
 * Written for robustness first: every read of the compressed stream and every
 * write of the output is checked against its buffer, so a malformed member is
 * an -EINVAL naming the offset, never an out-of-bounds access (the preload
 * library runs this inside the user's process). The output is one flat
 * buffer holding the whole member, so zstd's window is simply "everything
 * decoded so far"; dictionaries are not supported (nvcc uses none).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decompress.h"

static int fail(char *err, size_t err_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;

	if (err && err_len) {
		va_start(ap, fmt);
		vsnprintf(err, err_len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static uint32_t rd_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd_le64(const uint8_t *p)
{
	return (uint64_t)rd_le32(p) | (uint64_t)rd_le32(p + 4) << 32;
}

static int highbit32(uint32_t v) /* v != 0 */
{
	return 31 - __builtin_clz(v);
}

/* ------------------------------------------------------------------------ */
/* LZ4 block format                                                          */
/* ------------------------------------------------------------------------ */

/* Adds LZ4's 255-continued length bytes to @len; false if the input ends. */
static bool lz4_len(const uint8_t *src, size_t src_len, size_t *ip, size_t *len)
{
	uint8_t b;

	do {
		if (*ip >= src_len)
			return false;
		b = src[(*ip)++];
		*len += b;
	} while (b == 255);
	return true;
}

ssize_t gx_lz4_decode(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_cap,
		      char *err, size_t err_len)
{
	size_t ip = 0, op = 0;

	while (ip < src_len) {
		size_t tok_at = ip, lit, mlen, off;
		uint8_t tok = src[ip++];

		lit = tok >> 4;
		if (lit == 15 && !lz4_len(src, src_len, &ip, &lit))
			return fail(err, err_len, "lz4: literal length runs past the end (token at %zu)",
				    tok_at);
		if (lit > src_len - ip)
			return fail(err, err_len, "lz4: %zu literals at %zu run past the end (%zu bytes)",
				    lit, ip, src_len);
		if (lit > dst_cap - op)
			return fail(err, err_len, "lz4: literals at %zu overflow the declared size %zu",
				    ip, dst_cap);
		memcpy(dst + op, src + ip, lit);
		ip += lit, op += lit;
		if (ip == src_len)
			break; /* the last sequence has literals only */
		if (src_len - ip < 2)
			return fail(err, err_len, "lz4: match offset at %zu truncated", ip);
		off = (size_t)src[ip] | (size_t)src[ip + 1] << 8;
		if (off == 0 || off > op)
			return fail(err, err_len, "lz4: match offset %zu at %zu points before the output start (%zu bytes decoded)",
				    off, ip, op);
		ip += 2;
		mlen = (tok & 15) + 4;
		if ((tok & 15) == 15 && !lz4_len(src, src_len, &ip, &mlen))
			return fail(err, err_len, "lz4: match length runs past the end (token at %zu)",
				    tok_at);
		if (mlen > dst_cap - op)
			return fail(err, err_len, "lz4: match of %zu bytes (token at %zu) overflows the declared size %zu",
				    mlen, tok_at, dst_cap);
		for (; mlen; mlen--, op++) /* byte-wise: matches may overlap themselves */
			dst[op] = dst[op - off];
	}
	return (ssize_t)op;
}

/* ------------------------------------------------------------------------ */
/* XXH64                                                                     */
/* ------------------------------------------------------------------------ */

#define XXP1 0x9E3779B185EBCA87ull
#define XXP2 0xC2B2AE3D27D4EB4Full
#define XXP3 0x165667B19E3779F9ull
#define XXP4 0x85EBCA77C2B2AE63ull
#define XXP5 0x27D4EB2F165667C5ull

static uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static uint64_t xxh_round(uint64_t acc, uint64_t in)
{
	acc += in * XXP2;
	return rotl64(acc, 31) * XXP1;
}

static uint64_t xxh_merge(uint64_t h, uint64_t v)
{
	h ^= xxh_round(0, v);
	return h * XXP1 + XXP4;
}

uint64_t gx_xxh64(const void *data, size_t len, uint64_t seed)
{
	const uint8_t *p = data, *end = p + len;
	uint64_t h;

	if (len >= 32) {
		uint64_t v1 = seed + XXP1 + XXP2, v2 = seed + XXP2, v3 = seed, v4 = seed - XXP1;

		for (; end - p >= 32; p += 32) {
			v1 = xxh_round(v1, rd_le64(p));
			v2 = xxh_round(v2, rd_le64(p + 8));
			v3 = xxh_round(v3, rd_le64(p + 16));
			v4 = xxh_round(v4, rd_le64(p + 24));
		}
		h = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
		h = xxh_merge(h, v1);
		h = xxh_merge(h, v2);
		h = xxh_merge(h, v3);
		h = xxh_merge(h, v4);
	} else {
		h = seed + XXP5;
	}
	h += len;
	for (; end - p >= 8; p += 8)
		h = rotl64(h ^ xxh_round(0, rd_le64(p)), 27) * XXP1 + XXP4;
	if (end - p >= 4) {
		h = rotl64(h ^ (uint64_t)rd_le32(p) * XXP1, 23) * XXP2 + XXP3;
		p += 4;
	}
	for (; p < end; p++)
		h = rotl64(h ^ *p * XXP5, 11) * XXP1;
	h ^= h >> 33;
	h *= XXP2;
	h ^= h >> 29;
	h *= XXP3;
	h ^= h >> 32;
	return h;
}

/* ------------------------------------------------------------------------ */
/* Zstandard: bit readers                                                    */
/* ------------------------------------------------------------------------ */

/*
 * Forward reader (FSE table descriptions): little-endian, LSB first. Reads
 * past the end yield zeros and set @over, checked by the caller.
 */
struct fwd_bits {
	const uint8_t *p;
	size_t len;
	size_t bit; /* bits consumed */
};

static uint32_t fwd_read(struct fwd_bits *b, int n)
{
	uint32_t v = 0;
	int i;

	for (i = 0; i < n; i++, b->bit++) {
		size_t byte = b->bit >> 3;

		if (byte < b->len && (b->p[byte] >> (b->bit & 7)) & 1)
			v |= 1u << i;
	}
	return v;
}

/*
 * Backward reader (Huffman and FSE streams): the stream is one little-endian
 * number read from its top; the highest set bit of the last byte marks the
 * start. @pos counts the bits still unread and goes negative when a read
 * asks for more than remain (the missing low bits read as zero), which the
 * decoders treat as corruption, or as the end where the format says so.
 */
struct back_bits {
	const uint8_t *p;
	size_t len;
	long pos;
};

static int back_init(struct back_bits *b, const uint8_t *p, size_t len)
{
	if (!len || !p[len - 1])
		return -1;
	b->p = p;
	b->len = len;
	b->pos = (long)(len - 1) * 8 + highbit32(p[len - 1]);
	return 0;
}

/* Bits [start, start + n) of the stream, n <= 32, 0 <= start. */
static uint32_t back_window(const struct back_bits *b, long start, int n)
{
	size_t byte = (size_t)start >> 3, i;
	uint64_t w = 0;

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (byte + 8 <= b->len) { /* the hot path: one load */
		memcpy(&w, b->p + byte, 8);
	} else
#endif
	{
		for (i = 0; i < 8 && byte + i < b->len; i++)
			w |= (uint64_t)b->p[byte + i] << (8 * i);
	}
	w >>= start & 7;
	return n == 32 ? (uint32_t)w : (uint32_t)(w & ((1ull << n) - 1));
}

static uint32_t back_peek(const struct back_bits *b, int n)
{
	long start = b->pos - n;

	if (n == 0)
		return 0;
	if (start >= 0)
		return back_window(b, start, n);
	if (b->pos <= 0)
		return 0;
	return back_window(b, 0, (int)b->pos) << (-start);
}

static uint32_t back_read(struct back_bits *b, int n)
{
	uint32_t v = back_peek(b, n);

	b->pos -= n;
	return v;
}

/* ------------------------------------------------------------------------ */
/* Zstandard: FSE tables                                                     */
/* ------------------------------------------------------------------------ */

#define FSE_MAX_LOG 9
#define FSE_MAX_SYMS 256

struct fse_cell {
	uint16_t base;
	uint8_t sym;
	uint8_t bits;
};

struct fse_table {
	int log;
	struct fse_cell cell[1 << FSE_MAX_LOG];
};

/* Builds the decoding table from normalised counts (-1 = "less than one"). */
static int fse_build(struct fse_table *t, const int16_t *norm, int nsyms, int log)
{
	uint16_t next[FSE_MAX_SYMS];
	int size = 1 << log, high = size - 1, pos = 0, step, s, i;

	step = (size >> 1) + (size >> 3) + 3;
	t->log = log;
	for (s = 0; s < nsyms; s++) {
		if (norm[s] == -1) {
			t->cell[high--].sym = (uint8_t)s;
			next[s] = 1;
		} else {
			next[s] = (uint16_t)norm[s];
		}
	}
	for (s = 0; s < nsyms; s++) {
		for (i = 0; i < norm[s]; i++) {
			t->cell[pos].sym = (uint8_t)s;
			do
				pos = (pos + step) & (size - 1);
			while (pos > high);
		}
	}
	if (pos != 0)
		return -1; /* counts did not fill the table exactly */
	for (i = 0; i < size; i++) {
		uint16_t n = next[t->cell[i].sym]++;
		int bits = log - highbit32(n);

		t->cell[i].bits = (uint8_t)bits;
		t->cell[i].base = (uint16_t)((n << bits) - size);
	}
	return 0;
}

/*
 * Reads an FSE table description (RFC 8878 4.1.1) at @p; returns the bytes
 * it used or -1. @max_sym / @max_log are the limits for this table's role.
 */
static long fse_read_table(struct fse_table *t, const uint8_t *p, size_t len, int max_sym,
			   int max_log, char *why, size_t why_len)
{
	int16_t norm[FSE_MAX_SYMS] = { 0 };
	struct fwd_bits b = { p, len, 0 };
	int log, remaining, threshold, nbits, sym = 0;

	log = (int)fwd_read(&b, 4) + 5;
	if (log > max_log) {
		snprintf(why, why_len, "accuracy log %d above the maximum %d", log, max_log);
		return -1;
	}
	remaining = (1 << log) + 1;
	threshold = 1 << log;
	nbits = log + 1;
	while (remaining > 1) {
		int max = 2 * threshold - 1 - remaining, v;

		if (sym > max_sym) {
			snprintf(why, why_len, "probabilities for more than %d symbols", max_sym + 1);
			return -1;
		}
		v = (int)fwd_read(&b, nbits - 1);
		if (v >= max) {
			v |= (int)fwd_read(&b, 1) << (nbits - 1);
			if (v >= threshold)
				v -= max;
		}
		v -= 1;
		remaining -= v < 0 ? -v : v;
		norm[sym++] = (int16_t)v;
		if (v == 0) {
			uint32_t rep;

			do {
				rep = fwd_read(&b, 2);
				sym += (int)rep;
			} while (rep == 3 && sym <= max_sym + 1);
		}
		while (remaining < threshold && threshold > 1) {
			nbits--;
			threshold >>= 1;
		}
	}
	if (remaining != 1 || sym > max_sym + 1) {
		snprintf(why, why_len, "probabilities do not sum to %d", 1 << log);
		return -1;
	}
	if ((b.bit + 7) / 8 > len) {
		snprintf(why, why_len, "table description runs past the end");
		return -1;
	}
	if (fse_build(t, norm, sym, log)) {
		snprintf(why, why_len, "probabilities do not fill the table");
		return -1;
	}
	return (long)((b.bit + 7) / 8);
}

static void fse_rle(struct fse_table *t, uint8_t sym)
{
	t->log = 0;
	t->cell[0].sym = sym;
	t->cell[0].bits = 0;
	t->cell[0].base = 0;
}

/* ------------------------------------------------------------------------ */
/* Zstandard: Huffman literals                                               */
/* ------------------------------------------------------------------------ */

#define HUF_MAX_BITS 11

struct huf_table {
	int max_bits; /* 0: no table yet */
	uint8_t sym[1 << HUF_MAX_BITS];
	uint8_t bits[1 << HUF_MAX_BITS];
};

/* Huffman tree description (RFC 8878 4.2.1); returns bytes used or -1. */
static long huf_read_table(struct huf_table *h, const uint8_t *p, size_t len, char *why,
			   size_t why_len)
{
	uint8_t w[256];
	int n = 0, i, max_bits, pos;
	uint32_t total = 0, left;
	long used;

	if (!len) {
		snprintf(why, why_len, "Huffman tree description missing");
		return -1;
	}
	if (p[0] >= 128) { /* weights stored directly, 4 bits each */
		n = p[0] - 127;
		used = 1 + (n + 1) / 2;
		if ((size_t)used > len) {
			snprintf(why, why_len, "Huffman weights run past the end");
			return -1;
		}
		for (i = 0; i < n; i++)
			w[i] = i & 1 ? p[1 + i / 2] & 15 : p[1 + i / 2] >> 4;
	} else { /* FSE-compressed weights, two interleaved states */
		struct fse_table t;
		struct back_bits b;
		size_t csize = p[0];
		long tl;
		uint32_t s1, s2;

		if (csize + 1 > len || csize == 0) {
			snprintf(why, why_len, "Huffman weights (%zu bytes) run past the end", csize);
			return -1;
		}
		tl = fse_read_table(&t, p + 1, csize, 255, 6, why, why_len);
		if (tl < 0)
			return -1;
		if (back_init(&b, p + 1 + tl, csize - (size_t)tl)) {
			snprintf(why, why_len, "Huffman weight stream empty or unterminated");
			return -1;
		}
		s1 = back_read(&b, t.log);
		s2 = back_read(&b, t.log);
		for (;;) {
			if (n >= 255)
				goto too_many;
			w[n++] = t.cell[s1].sym;
			s1 = t.cell[s1].base + back_read(&b, t.cell[s1].bits);
			if (b.pos < 0) {
				if (n >= 255)
					goto too_many;
				w[n++] = t.cell[s2].sym;
				break;
			}
			if (n >= 255)
				goto too_many;
			w[n++] = t.cell[s2].sym;
			s2 = t.cell[s2].base + back_read(&b, t.cell[s2].bits);
			if (b.pos < 0) {
				if (n >= 255)
					goto too_many;
				w[n++] = t.cell[s1].sym;
				break;
			}
		}
		used = 1 + (long)csize;
	}
	for (i = 0; i < n; i++) {
		if (w[i] > HUF_MAX_BITS) {
			snprintf(why, why_len, "Huffman weight %d above %d", w[i], HUF_MAX_BITS);
			return -1;
		}
		if (w[i])
			total += 1u << (w[i] - 1);
	}
	if (!total) {
		snprintf(why, why_len, "Huffman weights all zero");
		return -1;
	}
	/* The last symbol's weight is implied: it completes a power of two. */
	max_bits = highbit32(total) + 1;
	left = (1u << max_bits) - total;
	if (max_bits > HUF_MAX_BITS || (left & (left - 1))) {
		snprintf(why, why_len, "Huffman weights do not form a prefix code");
		return -1;
	}
	w[n++] = (uint8_t)(highbit32(left) + 1);
	h->max_bits = max_bits;
	/* Codes in order of weight, then symbol: a weight-k symbol owns 2^(k-1) slots. */
	pos = 0;
	for (int wt = 1; wt <= max_bits; wt++) {
		for (i = 0; i < n; i++) {
			int cnt = 1 << (wt - 1), j;

			if (w[i] != wt)
				continue;
			for (j = 0; j < cnt; j++) {
				h->sym[pos + j] = (uint8_t)i;
				h->bits[pos + j] = (uint8_t)(max_bits + 1 - wt);
			}
			pos += cnt;
		}
	}
	return used;
too_many:
	snprintf(why, why_len, "more than 255 Huffman weights");
	return -1;
}

static int huf_stream(const struct huf_table *h, const uint8_t *p, size_t len, uint8_t *out,
		      size_t n)
{
	struct back_bits b;
	size_t i;

	if (back_init(&b, p, len))
		return -1;
	for (i = 0; i < n; i++) {
		uint32_t v = back_peek(&b, h->max_bits);

		out[i] = h->sym[v];
		b.pos -= h->bits[v];
		if (b.pos < 0)
			return -1;
	}
	return b.pos == 0 ? 0 : -1;
}

/* ------------------------------------------------------------------------ */
/* Zstandard: frames, blocks, sequences                                      */
/* ------------------------------------------------------------------------ */

#define ZSTD_BLOCK_MAX (128 * 1024)

struct zstd_ctx {
	const uint8_t *src; /* whole input, for offsets in messages */
	uint8_t *dst;
	size_t cap, op;
	uint8_t lit[ZSTD_BLOCK_MAX];
	struct huf_table huf;
	struct fse_table ll, of, ml;
	bool have_ll, have_of, have_ml;
	uint32_t rep[3];
	char *err;
	size_t err_len;
};

static const int16_t ll_default[36] = {
	4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1,
	2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1,
	-1, -1, -1, -1,
};
static const int16_t ml_default[53] = {
	1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1,
	-1, -1, -1, -1, -1,
};
static const int16_t of_default[29] = {
	1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1,
};

static const uint32_t ll_base[36] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	16, 18, 20, 22, 24, 28, 32, 40, 48, 64, 128, 256, 512, 1024, 2048, 4096,
	8192, 16384, 32768, 65536,
};
static const uint8_t ll_extra[36] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	1, 1, 1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12,
	13, 14, 15, 16,
};
static const uint32_t ml_base[53] = {
	3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
	19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34,
	35, 37, 39, 41, 43, 47, 51, 59, 67, 83, 99, 131, 259, 515, 1027, 2051,
	4099, 8195, 16387, 32771, 65539,
};
static const uint8_t ml_extra[53] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11,
	12, 13, 14, 15, 16,
};

#define ZFAIL(z, at, fmt, ...)                                                     \
	fail((z)->err, (z)->err_len, "zstd: " fmt " at offset %zu", ##__VA_ARGS__, \
	     (size_t)((at) - (z)->src))

/* Literals section; returns bytes used, *nlit the regenerated size. */
static long zstd_literals(struct zstd_ctx *z, const uint8_t *p, size_t len, size_t *nlit)
{
	int type, fmt;
	size_t regen, csize, hdr;
	char why[96];

	if (len < 1)
		return ZFAIL(z, p, "literals section missing");
	type = p[0] & 3;
	fmt = (p[0] >> 2) & 3;
	if (type < 2) { /* raw or RLE */
		if (!(fmt & 1)) {
			hdr = 1, regen = p[0] >> 3;
		} else if (fmt == 1) {
			hdr = 2;
			if (len < hdr)
				return ZFAIL(z, p, "literals header truncated");
			regen = (p[0] >> 4) | (size_t)p[1] << 4;
		} else {
			hdr = 3;
			if (len < hdr)
				return ZFAIL(z, p, "literals header truncated");
			regen = (p[0] >> 4) | (size_t)p[1] << 4 | (size_t)p[2] << 12;
		}
		if (regen > ZSTD_BLOCK_MAX)
			return ZFAIL(z, p, "%zu literals exceed the block maximum", regen);
		if (type == 0) {
			if (regen > len - hdr)
				return ZFAIL(z, p, "raw literals (%zu bytes) run past the block", regen);
			memcpy(z->lit, p + hdr, regen);
			*nlit = regen;
			return (long)(hdr + regen);
		}
		if (len < hdr + 1)
			return ZFAIL(z, p, "RLE literal byte missing");
		memset(z->lit, p[hdr], regen);
		*nlit = regen;
		return (long)(hdr + 1);
	}

	/* Huffman-coded: one stream (fmt 0) or four. */
	{
		uint32_t v;
		int streams = fmt == 0 ? 1 : 4;
		const uint8_t *q;
		size_t qlen, sz[4], each, i, done = 0;

		hdr = fmt < 2 ? 3 : fmt == 2 ? 4 : 5;
		if (len < hdr)
			return ZFAIL(z, p, "literals header truncated");
		if (fmt < 2) {
			v = p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
			regen = (v >> 4) & 0x3ff, csize = v >> 14;
		} else if (fmt == 2) {
			v = rd_le32(p);
			regen = (v >> 4) & 0x3fff, csize = v >> 18;
		} else {
			uint64_t w = rd_le32(p) | (uint64_t)p[4] << 32;

			regen = (size_t)(w >> 4) & 0x3ffff, csize = (size_t)(w >> 22);
		}
		if (regen > ZSTD_BLOCK_MAX)
			return ZFAIL(z, p, "%zu literals exceed the block maximum", regen);
		if (csize > len - hdr)
			return ZFAIL(z, p, "compressed literals (%zu bytes) run past the block", csize);
		q = p + hdr;
		qlen = csize;
		if (type == 2) {
			long tl = huf_read_table(&z->huf, q, qlen, why, sizeof(why));

			if (tl < 0)
				return ZFAIL(z, q, "bad Huffman table: %s", why);
			q += tl, qlen -= (size_t)tl;
		} else if (!z->huf.max_bits) {
			return ZFAIL(z, p, "treeless literals without a previous Huffman table");
		}
		if (streams == 1) {
			if (huf_stream(&z->huf, q, qlen, z->lit, regen))
				return ZFAIL(z, q, "corrupt Huffman literal stream");
		} else {
			if (qlen < 6)
				return ZFAIL(z, q, "literal jump table truncated");
			sz[0] = q[0] | (size_t)q[1] << 8;
			sz[1] = q[2] | (size_t)q[3] << 8;
			sz[2] = q[4] | (size_t)q[5] << 8;
			if (sz[0] + sz[1] + sz[2] > qlen - 6)
				return ZFAIL(z, q, "literal streams run past the block");
			sz[3] = qlen - 6 - sz[0] - sz[1] - sz[2];
			each = (regen + 3) / 4;
			if (regen < 3 * each)
				return ZFAIL(z, q, "%zu literals cannot fill four streams", regen);
			q += 6;
			for (i = 0; i < 4; i++) {
				size_t n = i < 3 ? each : regen - 3 * each;

				if (huf_stream(&z->huf, q, sz[i], z->lit + done, n))
					return ZFAIL(z, q, "corrupt Huffman literal stream %zu", i + 1);
				q += sz[i], done += n;
			}
		}
		*nlit = regen;
		return (long)(hdr + csize);
	}
}

/* One of the three sequence tables, per its mode (RFC 8878 3.1.1.3.2.1). */
static long zstd_seq_table(struct zstd_ctx *z, int mode, struct fse_table *t, bool *have,
			   const int16_t *def, int def_n, int def_log, int max_sym, int max_log,
			   const uint8_t *p, size_t len, const char *name)
{
	char why[96];
	long used;

	switch (mode) {
	case 0:
		fse_build(t, def, def_n, def_log);
		*have = true;
		return 0;
	case 1:
		if (len < 1)
			return ZFAIL(z, p, "%s RLE symbol missing", name);
		if (p[0] > max_sym)
			return ZFAIL(z, p, "%s RLE symbol %d above %d", name, p[0], max_sym);
		fse_rle(t, p[0]);
		*have = true;
		return 1;
	case 2:
		used = fse_read_table(t, p, len, max_sym, max_log, why, sizeof(why));
		if (used < 0)
			return ZFAIL(z, p, "bad %s table: %s", name, why);
		*have = true;
		return used;
	default:
		if (!*have)
			return ZFAIL(z, p, "%s table repeated but none was defined", name);
		return 0;
	}
}

static int zstd_block(struct zstd_ctx *z, const uint8_t *p, size_t len)
{
	const uint8_t *end = p + len, *at;
	size_t nlit = 0, lp = 0, nseq;
	struct back_bits b;
	uint32_t sll, sof, sml;
	long used;
	int modes;

	used = zstd_literals(z, p, len, &nlit);
	if (used < 0)
		return (int)used;
	p += used;
	if (p >= end)
		return ZFAIL(z, p, "sequences section missing");
	at = p;
	if (p[0] < 128) {
		nseq = p[0], p += 1;
	} else if (p[0] < 255) {
		if (end - p < 2)
			return ZFAIL(z, at, "sequence count truncated");
		nseq = ((size_t)(p[0] - 128) << 8) + p[1], p += 2;
	} else {
		if (end - p < 3)
			return ZFAIL(z, at, "sequence count truncated");
		nseq = p[1] + ((size_t)p[2] << 8) + 0x7f00, p += 3;
	}
	if (nseq == 0) {
		if (p != end)
			return ZFAIL(z, p, "%zu bytes after an empty sequences section",
				     (size_t)(end - p));
		goto tail;
	}
	if (p >= end)
		return ZFAIL(z, p, "symbol compression modes missing");
	modes = *p++;
	if (modes & 3)
		return ZFAIL(z, p - 1, "reserved bits set in compression modes");
	used = zstd_seq_table(z, modes >> 6, &z->ll, &z->have_ll, ll_default, 36, 6, 35, 9,
			      p, (size_t)(end - p), "literal-length");
	if (used < 0)
		return (int)used;
	p += used;
	used = zstd_seq_table(z, (modes >> 4) & 3, &z->of, &z->have_of, of_default, 29, 5, 31, 8,
			      p, (size_t)(end - p), "offset");
	if (used < 0)
		return (int)used;
	p += used;
	used = zstd_seq_table(z, (modes >> 2) & 3, &z->ml, &z->have_ml, ml_default, 53, 6, 52, 9,
			      p, (size_t)(end - p), "match-length");
	if (used < 0)
		return (int)used;
	p += used;
	if (back_init(&b, p, (size_t)(end - p)))
		return ZFAIL(z, p, "sequence bitstream empty or unterminated");
	sll = back_read(&b, z->ll.log);
	sof = back_read(&b, z->of.log);
	sml = back_read(&b, z->ml.log);
	for (size_t i = 0; i < nseq; i++) {
		unsigned llc = z->ll.cell[sll].sym, mlc = z->ml.cell[sml].sym;
		unsigned ofc = z->of.cell[sof].sym;
		size_t ll, ml, off, k;
		uint32_t ofv;

		if (ofc > 31 || llc > 35 || mlc > 52)
			return ZFAIL(z, p, "sequence %zu: code out of range", i);
		ofv = (1u << ofc) + back_read(&b, (int)ofc);
		ml = ml_base[mlc] + back_read(&b, ml_extra[mlc]);
		ll = ll_base[llc] + back_read(&b, ll_extra[llc]);
		if (ofv > 3) {
			off = ofv - 3;
			z->rep[2] = z->rep[1], z->rep[1] = z->rep[0], z->rep[0] = (uint32_t)off;
		} else {
			unsigned idx = ofv - 1 + (ll == 0);

			if (idx == 0) {
				off = z->rep[0];
			} else {
				off = idx == 3 ? z->rep[0] - 1 : z->rep[idx];
				if (off == 0)
					return ZFAIL(z, p, "sequence %zu: repeat offset of zero", i);
				if (idx != 1)
					z->rep[2] = z->rep[1];
				z->rep[1] = z->rep[0];
				z->rep[0] = (uint32_t)off;
			}
		}
		if (i + 1 < nseq) {
			sll = z->ll.cell[sll].base + back_read(&b, z->ll.cell[sll].bits);
			sml = z->ml.cell[sml].base + back_read(&b, z->ml.cell[sml].bits);
			sof = z->of.cell[sof].base + back_read(&b, z->of.cell[sof].bits);
		}
		if (b.pos < 0)
			return ZFAIL(z, p, "sequence bitstream exhausted at sequence %zu of %zu", i,
				     nseq);
		if (ll > nlit - lp)
			return ZFAIL(z, p, "sequence %zu: %zu literals, only %zu left", i, ll,
				     nlit - lp);
		if (ll > z->cap - z->op || ml > z->cap - z->op - ll)
			return ZFAIL(z, p, "sequence %zu overflows the declared size %zu", i,
				     z->cap);
		memcpy(z->dst + z->op, z->lit + lp, ll);
		z->op += ll, lp += ll;
		if (off > z->op)
			return ZFAIL(z, p, "sequence %zu: offset %zu before the output start", i, off);
		for (k = 0; k < ml; k++, z->op++)
			z->dst[z->op] = z->dst[z->op - off];
	}
	if (b.pos != 0)
		return ZFAIL(z, p, "%ld bits left over in the sequence bitstream", b.pos);
tail:
	if (nlit - lp > z->cap - z->op)
		return ZFAIL(z, p, "literals overflow the declared size %zu", z->cap);
	memcpy(z->dst + z->op, z->lit + lp, nlit - lp);
	z->op += nlit - lp;
	return 0;
}

/* One frame at @p; returns bytes used. */
static long zstd_frame(struct zstd_ctx *z, const uint8_t *p, size_t len)
{
	const uint8_t *start = p, *end = p + len;
	size_t fcs_len, did_len, frame_start = z->op;
	uint64_t fcs = 0;
	bool single, check, has_fcs;
	uint8_t fhd;

	if (len < 5)
		return ZFAIL(z, p, "frame header truncated");
	fhd = p[4];
	p += 5;
	if (fhd & 8)
		return ZFAIL(z, p - 1, "reserved bit set in the frame header");
	single = fhd & 0x20;
	check = fhd & 4;
	did_len = (size_t[]){ 0, 1, 2, 4 }[fhd & 3];
	fcs_len = (size_t[]){ 0, 2, 4, 8 }[fhd >> 6];
	if (!fcs_len && single)
		fcs_len = 1;
	has_fcs = fcs_len != 0;
	if ((size_t)(end - p) < (single ? 0 : 1) + did_len + fcs_len)
		return ZFAIL(z, p, "frame header truncated");
	if (!single)
		p++; /* window descriptor: the whole output is the window here */
	for (size_t i = 0; i < did_len; i++) {
		if (p[i])
			return ZFAIL(z, p, "frame needs a dictionary (unsupported)");
	}
	p += did_len;
	for (size_t i = 0; i < fcs_len; i++)
		fcs |= (uint64_t)p[i] << (8 * i);
	if (fcs_len == 2)
		fcs += 256;
	p += fcs_len;
	if (has_fcs && fcs > z->cap - z->op)
		return ZFAIL(z, start, "frame content size %llu exceeds the declared size %zu",
			     (unsigned long long)fcs, z->cap - z->op);

	z->rep[0] = 1, z->rep[1] = 4, z->rep[2] = 8;
	z->huf.max_bits = 0;
	z->have_ll = z->have_of = z->have_ml = false;
	for (;;) {
		uint32_t bh, bsize;
		int type, rc;

		if (end - p < 3)
			return ZFAIL(z, p, "block header truncated");
		bh = p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
		type = (bh >> 1) & 3;
		bsize = bh >> 3;
		p += 3;
		if (type == 3)
			return ZFAIL(z, p - 3, "reserved block type");
		if (bsize > ZSTD_BLOCK_MAX)
			return ZFAIL(z, p - 3, "block size %u above 128 KiB", bsize);
		if (type == 1) {
			if (end - p < 1)
				return ZFAIL(z, p, "RLE block byte missing");
			if (bsize > z->cap - z->op)
				return ZFAIL(z, p, "RLE block overflows the declared size %zu", z->cap);
			memset(z->dst + z->op, p[0], bsize);
			z->op += bsize;
			p += 1;
		} else {
			if (bsize > (size_t)(end - p))
				return ZFAIL(z, p - 3, "block of %u bytes runs past the end", bsize);
			if (type == 0) {
				if (bsize > z->cap - z->op)
					return ZFAIL(z, p, "raw block overflows the declared size %zu",
						     z->cap);
				memcpy(z->dst + z->op, p, bsize);
				z->op += bsize;
			} else {
				rc = zstd_block(z, p, bsize);
				if (rc)
					return rc;
			}
			p += bsize;
		}
		if (bh & 1)
			break;
	}
	if (has_fcs && z->op - frame_start != fcs)
		return ZFAIL(z, start, "frame decoded to %zu bytes, header says %llu",
			     z->op - frame_start, (unsigned long long)fcs);
	if (check) {
		uint32_t want;

		if (end - p < 4)
			return ZFAIL(z, p, "content checksum truncated");
		want = rd_le32(p);
		if ((uint32_t)gx_xxh64(z->dst + frame_start, z->op - frame_start, 0) != want)
			return ZFAIL(z, p, "content checksum mismatch");
		p += 4;
	}
	return (long)(p - start);
}

ssize_t gx_zstd_decode(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_cap,
		       char *err, size_t err_len)
{
	struct zstd_ctx *z;
	size_t ip = 0;
	ssize_t ret;

	z = malloc(sizeof(*z));
	if (!z)
		return -ENOMEM;
	memset(z, 0, offsetof(struct zstd_ctx, lit));
	z->src = src;
	z->dst = dst;
	z->cap = dst_cap;
	z->err = err;
	z->err_len = err_len;
	z->huf.max_bits = 0;
	if (src_len < 4) {
		ret = fail(err, err_len, "zstd: stream of %zu bytes has no frame", src_len);
		goto out;
	}
	while (ip < src_len) {
		uint32_t magic;
		long used;

		if (src_len - ip < 4) {
			ret = fail(err, err_len, "zstd: %zu stray bytes at offset %zu", src_len - ip,
				   ip);
			goto out;
		}
		magic = rd_le32(src + ip);
		if ((magic & 0xfffffff0u) == 0x184d2a50u) { /* skippable frame */
			uint32_t n;

			if (src_len - ip < 8) {
				ret = fail(err, err_len, "zstd: skippable frame truncated at offset %zu",
					   ip);
				goto out;
			}
			n = rd_le32(src + ip + 4);
			if (n > src_len - ip - 8) {
				ret = fail(err, err_len,
					   "zstd: skippable frame at offset %zu runs past the end", ip);
				goto out;
			}
			ip += 8 + (size_t)n;
			continue;
		}
		if (magic != 0xfd2fb528u) {
			ret = fail(err, err_len, "zstd: bad frame magic 0x%08x at offset %zu", magic, ip);
			goto out;
		}
		used = zstd_frame(z, src + ip, src_len - ip);
		if (used < 0) {
			ret = used;
			goto out;
		}
		ip += (size_t)used;
	}
	ret = (ssize_t)z->op;
out:
	free(z);
	return ret;
}

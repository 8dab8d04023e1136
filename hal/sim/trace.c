/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Trace files: the binary and text forms described in trace_io.h, read and
 * written in streaming fashion (a 64 KiB buffer either way), with every
 * malformed input reported by line (text) or byte offset (binary).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "trace_io.h"

#define BUF_SIZE 65536
#define TAG_WRITE 0x1
#define TAG_TENANT 0x2
#define TAG_KERNEL 0x4
#define TAG_PAGES 0x8		/* the delta varint counts 4 KiB pages */
#define TAG_NEXT_PAGE 0x10	/* va = previous + 4 KiB, no delta varint */
#define TAG_RESERVED 0xe0

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void set_err(char *err, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!err || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

/* ---- the range table: validation, tenants, "is this access inside a range of its tgid" ---- */

struct span {
	uint64_t va, end;
	uint32_t tgid;
	uint32_t idx;
};

struct tenant_ix {
	uint32_t tgid, idx;
};

struct rtab {
	struct sim_range *ranges;	/* file order */
	size_t n;
	struct span *sorted;		/* by va */
	uint32_t *tenants;		/* distinct tgids, order of first appearance */
	size_t ntenants;
	struct tenant_ix *by_tgid;	/* sorted by tgid */
	uint64_t *last_va;		/* per tenant: the base of the next delta */
};

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->va < y->va ? -1 : x->va > y->va;
}

static int cmp_tix(const void *a, const void *b)
{
	const struct tenant_ix *x = a, *y = b;

	return x->tgid < y->tgid ? -1 : x->tgid > y->tgid;
}

static void rtab_free(struct rtab *t)
{
	free(t->ranges);
	free(t->sorted);
	free(t->tenants);
	free(t->by_tgid);
	free(t->last_va);
	memset(t, 0, sizeof(*t));
}

/* Checks one range on its own; NULL if fine, else why not. */
static const char *range_problem(const struct sim_range *r)
{
	if (r->va % SIM_BLOCK_SIZE)
		return "va is not 2 MiB aligned";
	if (!r->size || r->size % SIM_BLOCK_SIZE)
		return "size is not a positive multiple of 2 MiB";
	if (r->va + r->size < r->va)
		return "va + size wraps around the address space";
	return NULL;
}

/*
 * Takes a copy of @r and indexes it. On a problem returns -EINVAL, sets
 * *bad to the index of the offending range and writes why into @why.
 */
static int rtab_build(struct rtab *t, const struct sim_range *r, size_t n, size_t *bad,
		      char *why, size_t whylen)
{
	size_t i;

	memset(t, 0, sizeof(*t));
	if (n > SIM_TRACE_MAX_RANGES) {
		*bad = n - 1;
		snprintf(why, whylen, "%zu ranges, more than the %d allowed", n, SIM_TRACE_MAX_RANGES);
		return -EINVAL;
	}
	t->n = n;
	t->ranges = malloc((n ? n : 1) * sizeof(*t->ranges));
	t->sorted = malloc((n ? n : 1) * sizeof(*t->sorted));
	t->tenants = malloc((n ? n : 1) * sizeof(*t->tenants));
	t->by_tgid = malloc((n ? n : 1) * sizeof(*t->by_tgid));
	t->last_va = calloc(n ? n : 1, sizeof(*t->last_va));
	if (!t->ranges || !t->sorted || !t->tenants || !t->by_tgid || !t->last_va) {
		rtab_free(t);
		*bad = 0;
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		/* field by field, so the struct's padding is zero and copies compare bit-exact */
		memset(&t->ranges[i], 0, sizeof(t->ranges[i]));
		t->ranges[i].va = r[i].va;
		t->ranges[i].size = r[i].size;
		t->ranges[i].tgid = r[i].tgid;
	}
	for (i = 0; i < n; i++) {
		const char *p = range_problem(&r[i]);

		if (p) {
			*bad = i;
			snprintf(why, whylen, "%s (va 0x%llx, size 0x%llx)", p,
				 (unsigned long long)r[i].va, (unsigned long long)r[i].size);
			rtab_free(t);
			return -EINVAL;
		}
		t->sorted[i] = (struct span){ r[i].va, r[i].va + r[i].size, r[i].tgid, (uint32_t)i };
	}
	qsort(t->sorted, n, sizeof(*t->sorted), cmp_span);
	for (i = 1; i < n; i++) {
		const struct span *a = &t->sorted[i - 1], *b = &t->sorted[i];

		if (b->va < a->end) {
			size_t later = a->idx > b->idx ? a->idx : b->idx;
			size_t earlier = a->idx > b->idx ? b->idx : a->idx;

			*bad = later;
			snprintf(why, whylen,
				 "range [0x%llx, 0x%llx) overlaps range #%zu [0x%llx, 0x%llx); the "
				 "simulator has one address space, relocate one of them",
				 (unsigned long long)r[later].va,
				 (unsigned long long)(r[later].va + r[later].size), earlier,
				 (unsigned long long)r[earlier].va,
				 (unsigned long long)(r[earlier].va + r[earlier].size));
			rtab_free(t);
			return -EINVAL;
		}
	}
	for (i = 0; i < n; i++) {
		size_t j;

		for (j = 0; j < t->ntenants; j++)
			if (t->tenants[j] == r[i].tgid)
				break;
		if (j == t->ntenants) {
			t->by_tgid[t->ntenants] = (struct tenant_ix){ r[i].tgid, (uint32_t)j };
			t->tenants[t->ntenants++] = r[i].tgid;
		}
	}
	qsort(t->by_tgid, t->ntenants, sizeof(*t->by_tgid), cmp_tix);
	return 0;
}

static long rtab_tenant(const struct rtab *t, uint32_t tgid)
{
	size_t lo = 0, hi = t->ntenants;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t->by_tgid[mid].tgid == tgid)
			return t->by_tgid[mid].idx;
		if (t->by_tgid[mid].tgid < tgid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* The range containing @va, or NULL. */
static const struct span *rtab_find(const struct rtab *t, uint64_t va)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t->sorted[mid].va <= va)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || va >= t->sorted[lo - 1].end)
		return NULL;
	return &t->sorted[lo - 1];
}

/* NULL if @a is a valid access under @t, else why not. */
static const char *access_problem(const struct rtab *t, const struct sim_access *a, char *buf,
				  size_t len)
{
	const struct span *s = rtab_find(t, a->va);

	if (rtab_tenant(t, a->tgid) < 0) {
		snprintf(buf, len, "tgid %u has no range (declare its ranges first)", a->tgid);
		return buf;
	}
	if (!s) {
		snprintf(buf, len, "va 0x%llx is outside every range", (unsigned long long)a->va);
		return buf;
	}
	if (s->tgid != a->tgid) {
		snprintf(buf, len, "va 0x%llx lies in a range of tgid %u, not of tgid %u",
			 (unsigned long long)a->va, s->tgid, a->tgid);
		return buf;
	}
	return NULL;
}

/* ---- input: a file or a buffer, read through one 64 KiB window ---- */

struct src {
	FILE *f;		/* NULL: reading a caller's buffer */
	uint8_t *buf;		/* file window */
	const uint8_t *p, *end;
	uint64_t base;		/* file offset of the window's first byte */
	const uint8_t *start;
	bool io_error;
};

static bool src_fill(struct src *s)
{
	size_t n;

	if (!s->f)
		return false;
	s->base += (uint64_t)(s->end - s->start);
	n = fread(s->buf, 1, BUF_SIZE, s->f);
	if (!n && ferror(s->f))
		s->io_error = true;
	s->start = s->p = s->buf;
	s->end = s->buf + n;
	return n > 0;
}

static inline int src_getc(struct src *s)
{
	if (s->p == s->end && !src_fill(s))
		return -1;
	return *s->p++;
}

static inline uint64_t src_off(const struct src *s)
{
	return s->base + (uint64_t)(s->p - s->start);
}

/* Reads exactly @n bytes; false at a short read. */
static bool src_read(struct src *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int c = src_getc(s);

		if (c < 0)
			return false;
		out[i] = (uint8_t)c;
	}
	return true;
}

/* ---- the reader ---- */

struct sim_trace_reader {
	struct src in;
	char name[128];
	enum sim_trace_format fmt;
	struct rtab tab;
	uint64_t count, done;	/* binary: announced / read so far */
	uint32_t tenant;	/* binary decode state */
	uint16_t kernel;
	/* text */
	unsigned line;
	bool have_pending;	/* the first access line, read while looking for ranges */
	struct sim_access pending;
	int err;
	char msg[SIM_TRACE_ERR_LEN];
};

static int rd_fail(struct sim_trace_reader *r, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int rd_fail(struct sim_trace_reader *r, int err, const char *fmt, ...)
{
	size_t n;
	va_list ap;

	if (r->in.io_error) {
		snprintf(r->msg, sizeof(r->msg), "%s: read error: %s", r->name, strerror(errno));
		return r->err = -EIO;
	}
	if (r->fmt == SIM_TRACE_TEXT)
		n = (size_t)snprintf(r->msg, sizeof(r->msg), "%s:%u: ", r->name, r->line);
	else
		n = (size_t)snprintf(r->msg, sizeof(r->msg), "%s: ", r->name);
	if (n < sizeof(r->msg)) {
		va_start(ap, fmt);
		vsnprintf(r->msg + n, sizeof(r->msg) - n, fmt, ap);
		va_end(ap);
	}
	r->err = err;
	return err;
}

/* LEB128; -1 at the end of input, -2 when longer than 10 bytes / over 64 bits. */
static int read_varint(struct src *s, uint64_t *out)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 70; shift += 7) {
		int c = src_getc(s);

		if (c < 0)
			return -1;
		if (shift == 63 && (c & 0x7e))
			return -2;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -2;
}

static int bin_open(struct sim_trace_reader *r)
{
	uint8_t h[SIM_TRACE_HEADER_SIZE];
	struct sim_range *rg;
	char why[200];
	size_t bad, n;
	int err;

	if (!src_read(&r->in, h, sizeof(h)))
		return rd_fail(r, -EINVAL,
			       "byte 0x%llx: the header is truncated (a binary trace starts with "
			       "%d header bytes, the file has %llu)",
			       (unsigned long long)src_off(&r->in), SIM_TRACE_HEADER_SIZE,
			       (unsigned long long)src_off(&r->in));
	if (get_le(h + 4, 2) != SIM_TRACE_VERSION)
		return rd_fail(r, -EINVAL, "byte 0x4: version %u is not supported (this reader knows %d)",
			       (unsigned)get_le(h + 4, 2), SIM_TRACE_VERSION);
	if (get_le(h + 6, 2))
		return rd_fail(r, -EINVAL, "byte 0x6: flags 0x%x are unknown (must be 0)",
			       (unsigned)get_le(h + 6, 2));
	if (get_le(h + 12, 4))
		return rd_fail(r, -EINVAL, "byte 0xc: reserved field is 0x%x (must be 0)",
			       (unsigned)get_le(h + 12, 4));
	n = (size_t)get_le(h + 8, 4);
	if (n > SIM_TRACE_MAX_RANGES)
		return rd_fail(r, -EINVAL, "byte 0x8: range count %zu exceeds the limit of %d", n,
			       SIM_TRACE_MAX_RANGES);
	r->count = get_le(h + 16, 8);
	rg = malloc((n ? n : 1) * sizeof(*rg));
	if (!rg)
		return rd_fail(r, -ENOMEM, "out of memory for %zu ranges", n);
	for (size_t i = 0; i < n; i++) {
		uint8_t b[SIM_TRACE_RANGE_SIZE];
		uint64_t off = src_off(&r->in);

		if (!src_read(&r->in, b, sizeof(b))) {
			free(rg);
			return rd_fail(r, -EINVAL,
				       "byte 0x%llx: range %zu of %zu is truncated (file ends inside "
				       "the range table)", (unsigned long long)off, i, n);
		}
		if (get_le(b + 20, 4)) {
			free(rg);
			return rd_fail(r, -EINVAL, "byte 0x%llx: range %zu: reserved field is not 0",
				       (unsigned long long)(off + 20), i);
		}
		rg[i] = (struct sim_range){ get_le(b, 8), get_le(b + 8, 8), (uint32_t)get_le(b + 16, 4) };
	}
	err = rtab_build(&r->tab, rg, n, &bad, why, sizeof(why));
	free(rg);
	if (err)
		return rd_fail(r, err, "byte 0x%llx: range %zu: %s",
			       (unsigned long long)(SIM_TRACE_HEADER_SIZE + bad * SIM_TRACE_RANGE_SIZE),
			       bad, why);
	return 0;
}

static long bin_next(struct sim_trace_reader *r, struct sim_access *buf, size_t max)
{
	struct src *s = &r->in;
	size_t n = 0;

	while (n < max && r->done < r->count) {
		uint64_t off = src_off(s), v, delta;
		struct sim_access *a = &buf[n];
		int c = src_getc(s), e = 0;

		if (c < 0)
			return rd_fail(r, -EINVAL,
				       "byte 0x%llx: the file ends after %llu of %llu records (truncated)",
				       (unsigned long long)off, (unsigned long long)r->done,
				       (unsigned long long)r->count);
		if (c & TAG_RESERVED)
			return rd_fail(r, -EINVAL,
				       "byte 0x%llx: record %llu: tag 0x%02x has reserved bits set "
				       "(only bits 0-4 are defined)", (unsigned long long)off,
				       (unsigned long long)r->done, c);
		if (c & TAG_TENANT) {
			e = read_varint(s, &v);
			if (!e && v >= r->tab.ntenants)
				return rd_fail(r, -EINVAL,
					       "byte 0x%llx: record %llu: tenant index %llu, but the "
					       "range table has %zu tenants", (unsigned long long)off,
					       (unsigned long long)r->done, (unsigned long long)v,
					       r->tab.ntenants);
			if (!e)
				r->tenant = (uint32_t)v;
		}
		if (!e && (c & TAG_KERNEL)) {
			e = read_varint(s, &v);
			if (!e && v > UINT16_MAX)
				return rd_fail(r, -EINVAL,
					       "byte 0x%llx: record %llu: kernel %llu does not fit 16 bits",
					       (unsigned long long)off, (unsigned long long)r->done,
					       (unsigned long long)v);
			if (!e)
				r->kernel = (uint16_t)v;
		}
		if (!e && (c & TAG_NEXT_PAGE) && (c & TAG_PAGES))
			return rd_fail(r, -EINVAL,
				       "byte 0x%llx: record %llu: tag 0x%02x sets both next-page and "
				       "page-delta", (unsigned long long)off, (unsigned long long)r->done, c);
		if (!e && !(c & TAG_NEXT_PAGE))
			e = read_varint(s, &delta);
		if (e == -1)
			return rd_fail(r, -EINVAL,
				       "byte 0x%llx: record %llu is truncated (the file ends inside it)",
				       (unsigned long long)off, (unsigned long long)r->done);
		if (e == -2)
			return rd_fail(r, -EINVAL,
				       "byte 0x%llx: record %llu: a varint is longer than 64 bits",
				       (unsigned long long)off, (unsigned long long)r->done);
		if (r->tab.ntenants == 0)
			return rd_fail(r, -EINVAL,
				       "byte 0x%llx: record %llu: the trace has accesses but no ranges",
				       (unsigned long long)off, (unsigned long long)r->done);
		if (c & TAG_NEXT_PAGE) {
			r->tab.last_va[r->tenant] += SIM_PAGE_SIZE;
		} else {
			/* zigzag: 0, -1, 1, -2, ... */
			delta = (delta >> 1) ^ (0 - (delta & 1));
			r->tab.last_va[r->tenant] += c & TAG_PAGES ? delta * SIM_PAGE_SIZE : delta;
		}
		a->va = r->tab.last_va[r->tenant];
		a->tgid = r->tab.tenants[r->tenant];
		a->kernel = r->kernel;
		a->is_write = c & TAG_WRITE;
		a->pad = 0;
		{
			char why[160];
			const char *p = access_problem(&r->tab, a, why, sizeof(why));

			if (p)
				return rd_fail(r, -EINVAL, "byte 0x%llx: record %llu: %s",
					       (unsigned long long)off, (unsigned long long)r->done, p);
		}
		r->done++;
		n++;
	}
	if (r->done == r->count && n < max) {
		uint64_t off = src_off(s);

		if (src_getc(s) >= 0)
			return rd_fail(r, -EINVAL,
				       "byte 0x%llx: trailing bytes after the %llu records the header "
				       "announces", (unsigned long long)off,
				       (unsigned long long)r->count);
	}
	return (long)n;
}

/* Parses an unsigned number (decimal or 0x-hex, optional K/M/G when @suffix). */
static bool parse_num(const char *s, bool suffix, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!*s || *s == '-' || *s == '+')
		return false;
	errno = 0;
	/* 0x-hex or decimal; no octal, so "010" is ten */
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		v = strtoull(s + 2, &end, 16), end = end == s + 2 ? (char *)s : end;
	else
		v = strtoull(s, &end, 10);
	if (end == s || errno)
		return false;
	if (suffix && *end) {
		unsigned shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;

		if (!shift || end[1] || v > (~0ULL >> shift))
			return false;
		v <<= shift;
		end++;
	}
	if (*end)
		return false;
	*out = v;
	return true;
}

/* Reads one line into @line (comment stripped); 0 ok, 1 end of input, <0 error. */
static int text_line(struct sim_trace_reader *r, char *line, size_t cap)
{
	size_t n = 0;
	int c;

	c = src_getc(&r->in);
	if (c < 0)
		return r->in.io_error ? rd_fail(r, -EIO, "read error") : 1;
	r->line++;
	for (; c >= 0 && c != '\n'; c = src_getc(&r->in)) {
		if (c == 0 || (c < 0x20 && c != '\t' && c != '\r'))
			return rd_fail(r, -EINVAL, "byte 0x%02x is not text", c);
		if (n + 1 >= cap)
			return rd_fail(r, -EINVAL, "line longer than %zu characters", cap - 1);
		line[n++] = (char)c;
	}
	line[n] = '\0';
	line[strcspn(line, "#")] = '\0';
	return 0;
}

/*
 * Parses one text record. Returns 0 for a blank line, 1 for a range (in
 * *rg), 2 for an access (in *a), or a negative errno.
 */
static int text_record(struct sim_trace_reader *r, char *line, struct sim_range *rg,
		       struct sim_access *a)
{
	char *tok[6], *save = NULL;
	int nt = 0;
	uint64_t v[3];

	for (char *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
		if (nt == 6)
			return rd_fail(r, -EINVAL, "too many fields");
		tok[nt++] = t;
	}
	if (!nt)
		return 0;
	if (!strcmp(tok[0], "range")) {
		if (nt != 4)
			return rd_fail(r, -EINVAL, "range wants 3 fields (range <tgid> <va> <size>), got %d",
				       nt - 1);
		if (!parse_num(tok[1], false, &v[0]) || v[0] > UINT32_MAX)
			return rd_fail(r, -EINVAL, "bad tgid '%s' (want a 32-bit number)", tok[1]);
		if (!parse_num(tok[2], false, &v[1]))
			return rd_fail(r, -EINVAL, "bad va '%s' (want a number, e.g. 0x200000)", tok[2]);
		if (!parse_num(tok[3], true, &v[2]))
			return rd_fail(r, -EINVAL, "bad size '%s' (want a number, e.g. 4M)", tok[3]);
		*rg = (struct sim_range){ v[1], v[2], (uint32_t)v[0] };
		return 1;
	}
	if (!strcmp(tok[0], "access")) {
		uint64_t k = r->kernel;

		if (nt != 4 && nt != 5)
			return rd_fail(r, -EINVAL,
				       "access wants 3 or 4 fields (access <tgid> <va> r|w [kernel]), got %d",
				       nt - 1);
		if (!parse_num(tok[1], false, &v[0]) || v[0] > UINT32_MAX)
			return rd_fail(r, -EINVAL, "bad tgid '%s' (want a 32-bit number)", tok[1]);
		if (!parse_num(tok[2], false, &v[1]))
			return rd_fail(r, -EINVAL, "bad va '%s' (want a number)", tok[2]);
		if (strcmp(tok[3], "r") && strcmp(tok[3], "w"))
			return rd_fail(r, -EINVAL, "bad access kind '%s' (want r or w)", tok[3]);
		if (nt == 5 && (!parse_num(tok[4], false, &k) || k > UINT16_MAX))
			return rd_fail(r, -EINVAL, "bad kernel '%s' (want 0..65535)", tok[4]);
		*a = (struct sim_access){ .va = v[1], .tgid = (uint32_t)v[0], .kernel = (uint16_t)k,
					  .is_write = tok[3][0] == 'w' };
		r->kernel = (uint16_t)k;
		return 2;
	}
	return rd_fail(r, -EINVAL, "unknown record '%.32s' (want 'range' or 'access')", tok[0]);
}

static int text_open(struct sim_trace_reader *r)
{
	struct sim_range *rg = NULL;
	unsigned *lines = NULL;
	size_t n = 0, cap = 0, bad;
	char line[SIM_TRACE_MAX_LINE + 1], why[200];
	int err;

	for (;;) {
		struct sim_range one;
		int k = text_line(r, line, sizeof(line));

		if (k < 0) {
			err = k;
			goto out;
		}
		if (k == 1)
			break;
		k = text_record(r, line, &one, &r->pending);
		if (k < 0) {
			err = k;
			goto out;
		}
		if (k == 2) {
			r->have_pending = true;
			break;
		}
		if (k == 1) {
			const char *p = range_problem(&one);

			if (p) {
				err = rd_fail(r, -EINVAL, "range: %s", p);
				goto out;
			}
			if (n == cap) {
				void *a = realloc(rg, (cap = cap ? 2 * cap : 16) * sizeof(*rg));
				void *b = realloc(lines, cap * sizeof(*lines));

				if (a)
					rg = a;
				if (b)
					lines = b;
				if (!a || !b) {
					err = rd_fail(r, -ENOMEM, "out of memory");
					goto out;
				}
			}
			lines[n] = r->line;
			rg[n++] = one;
		}
	}
	err = rtab_build(&r->tab, rg, n, &bad, why, sizeof(why));
	if (err) {
		r->line = lines[bad];
		err = rd_fail(r, err, "range: %s", why);
	}
out:
	free(rg);
	free(lines);
	return err;
}

static long text_next(struct sim_trace_reader *r, struct sim_access *buf, size_t max)
{
	char line[SIM_TRACE_MAX_LINE + 1], why[160];
	size_t n = 0;

	while (n < max) {
		struct sim_range rg;
		const char *p;
		int k;

		if (r->have_pending) {
			buf[n] = r->pending;
			r->have_pending = false;
		} else {
			k = text_line(r, line, sizeof(line));
			if (k < 0)
				return k;
			if (k == 1)
				break;
			k = text_record(r, line, &rg, &buf[n]);
			if (k < 0)
				return k;
			if (k == 0)
				continue;
			if (k == 1)
				return rd_fail(r, -EINVAL,
					       "range after the first access (put every range line first)");
		}
		p = access_problem(&r->tab, &buf[n], why, sizeof(why));
		if (p)
			return rd_fail(r, -EINVAL, "access: %s", p);
		n++;
	}
	return (long)n;
}

static int reader_start(struct sim_trace_reader *r, char *err, size_t errlen)
{
	int e;

	src_fill(&r->in);
	if (r->in.end - r->in.p >= 4 && !memcmp(r->in.p, SIM_TRACE_MAGIC, 4)) {
		r->fmt = SIM_TRACE_BINARY;
		e = bin_open(r);
	} else {
		/* not binary: it must look like text from its first bytes */
		size_t look = (size_t)(r->in.end - r->in.p);

		r->fmt = SIM_TRACE_TEXT;
		for (size_t i = 0; i < look && i < 4; i++) {
			uint8_t c = r->in.p[i];

			if (c == 0 || (c < 0x20 && c != '\t' && c != '\r' && c != '\n') || c >= 0x7f) {
				r->fmt = SIM_TRACE_BINARY;
				set_err(r->msg, sizeof(r->msg),
					"%s: byte 0x0: bad magic: neither a binary trace (starts with "
					"\"%s\") nor a text trace (byte 0x%zx is 0x%02x)", r->name,
					SIM_TRACE_MAGIC, i, c);
				r->err = -EINVAL;
				set_err(err, errlen, "%s", r->msg);
				return -EINVAL;
			}
		}
		e = text_open(r);
	}
	if (e)
		set_err(err, errlen, "%s", r->msg);
	return e;
}

static int reader_new(const char *name, struct sim_trace_reader **out)
{
	struct sim_trace_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	snprintf(r->name, sizeof(r->name), "%s", name ? name : "trace");
	*out = r;
	return 0;
}

int sim_trace_reader__open(const char *path, struct sim_trace_reader **out, char *err,
			   size_t errlen)
{
	struct sim_trace_reader *r;
	int e;

	*out = NULL;
	if ((e = reader_new(path, &r)))
		return e;
	r->in.f = fopen(path, "rb");
	if (!r->in.f) {
		e = -errno;
		set_err(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		free(r);
		return e;
	}
	r->in.buf = malloc(BUF_SIZE);
	if (!r->in.buf) {
		sim_trace_reader__close(r);
		return -ENOMEM;
	}
	r->in.start = r->in.p = r->in.end = r->in.buf;
	e = reader_start(r, err, errlen);
	if (e) {
		sim_trace_reader__close(r);
		return e;
	}
	*out = r;
	return 0;
}

int sim_trace_reader__open_mem(const void *buf, size_t len, const char *name,
			       struct sim_trace_reader **out, char *err, size_t errlen)
{
	struct sim_trace_reader *r;
	int e;

	*out = NULL;
	if ((e = reader_new(name, &r)))
		return e;
	r->in.start = r->in.p = buf;
	r->in.end = r->in.p + len;
	e = reader_start(r, err, errlen);
	if (e) {
		sim_trace_reader__close(r);
		return e;
	}
	*out = r;
	return 0;
}

void sim_trace_reader__close(struct sim_trace_reader *r)
{
	if (!r)
		return;
	if (r->in.f)
		fclose(r->in.f);
	free(r->in.buf);
	rtab_free(&r->tab);
	free(r);
}

enum sim_trace_format sim_trace_reader__format(const struct sim_trace_reader *r) { return r->fmt; }
const char *sim_trace_reader__error(const struct sim_trace_reader *r) { return r->err ? r->msg : NULL; }

size_t sim_trace_reader__ranges(const struct sim_trace_reader *r, const struct sim_range **out)
{
	*out = r->tab.ranges;
	return r->tab.n;
}

uint64_t sim_trace_reader__count(const struct sim_trace_reader *r)
{
	return r->fmt == SIM_TRACE_BINARY ? r->count : UINT64_MAX;
}

long sim_trace_reader__next(struct sim_trace_reader *r, struct sim_access *buf, size_t max)
{
	if (r->err)
		return r->err;
	return r->fmt == SIM_TRACE_BINARY ? bin_next(r, buf, max) : text_next(r, buf, max);
}

/* ---- the writer ---- */

struct sim_trace_writer {
	FILE *f;
	bool own;
	char name[128];
	enum sim_trace_format fmt;
	struct rtab tab;
	uint64_t count;
	uint32_t tenant;
	uint16_t kernel;
	uint8_t buf[BUF_SIZE];
	size_t len;
	int err;
	char msg[SIM_TRACE_ERR_LEN];
};

static int wr_fail(struct sim_trace_writer *w, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int wr_fail(struct sim_trace_writer *w, int err, const char *fmt, ...)
{
	size_t n;
	va_list ap;

	if (w->err)
		return err;	/* keep the first message */
	n = (size_t)snprintf(w->msg, sizeof(w->msg), "%s: ", w->name);
	if (n < sizeof(w->msg)) {
		va_start(ap, fmt);
		vsnprintf(w->msg + n, sizeof(w->msg) - n, fmt, ap);
		va_end(ap);
	}
	w->err = err;
	return err;
}

static int wr_flush(struct sim_trace_writer *w)
{
	if (w->len && fwrite(w->buf, 1, w->len, w->f) != w->len)
		return wr_fail(w, -EIO, "write failed: %s", strerror(errno));
	w->len = 0;
	return 0;
}

static inline void put_varint(uint8_t *p, size_t *len, uint64_t v)
{
	while (v >= 0x80) {
		p[(*len)++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[(*len)++] = (uint8_t)v;
}

int sim_trace_writer__open_file(FILE *f, const char *name, enum sim_trace_format fmt,
				const struct sim_range *ranges, size_t range_cnt,
				struct sim_trace_writer **out, char *err, size_t errlen)
{
	struct sim_trace_writer *w;
	char why[200];
	size_t bad;
	int e;

	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->f = f;
	w->fmt = fmt == SIM_TRACE_TEXT ? SIM_TRACE_TEXT : SIM_TRACE_BINARY;
	snprintf(w->name, sizeof(w->name), "%s", name ? name : "trace");
	e = rtab_build(&w->tab, ranges, range_cnt, &bad, why, sizeof(why));
	if (e) {
		set_err(err, errlen, "%s: range %zu: %s", w->name, bad, why);
		free(w);
		return e;
	}
	if (w->fmt == SIM_TRACE_BINARY) {
		uint8_t *h = w->buf;

		memcpy(h, SIM_TRACE_MAGIC, 4);
		put_le(h + 4, SIM_TRACE_VERSION, 2);
		put_le(h + 6, 0, 2);
		put_le(h + 8, range_cnt, 4);
		put_le(h + 12, 0, 4);
		put_le(h + 16, 0, 8);	/* patched at close */
		w->len = SIM_TRACE_HEADER_SIZE;
		for (size_t i = 0; i < range_cnt; i++) {
			uint8_t *b;

			if (w->len + SIM_TRACE_RANGE_SIZE > BUF_SIZE && wr_flush(w))
				break;
			b = w->buf + w->len;
			put_le(b, ranges[i].va, 8);
			put_le(b + 8, ranges[i].size, 8);
			put_le(b + 16, ranges[i].tgid, 4);
			put_le(b + 20, 0, 4);
			w->len += SIM_TRACE_RANGE_SIZE;
		}
	} else {
		w->len = (size_t)snprintf((char *)w->buf, BUF_SIZE,
					  "# gpuext access trace (text form, see hal/sim/trace_io.h)\n");
		for (size_t i = 0; i < range_cnt; i++) {
			if (w->len + 96 > BUF_SIZE && wr_flush(w))
				break;
			w->len += (size_t)snprintf((char *)w->buf + w->len, BUF_SIZE - w->len,
						   "range %u 0x%llx 0x%llx\n", ranges[i].tgid,
						   (unsigned long long)ranges[i].va,
						   (unsigned long long)ranges[i].size);
		}
	}
	if (w->err) {
		set_err(err, errlen, "%s", w->msg);
		e = w->err;
		rtab_free(&w->tab);
		free(w);
		return e;
	}
	*out = w;
	return 0;
}

int sim_trace_writer__open(const char *path, enum sim_trace_format fmt,
			   const struct sim_range *ranges, size_t range_cnt,
			   struct sim_trace_writer **out, char *err, size_t errlen)
{
	FILE *f;
	int e;

	if (fmt == SIM_TRACE_AUTO) {
		size_t n = strlen(path);

		fmt = n >= 4 && !strcmp(path + n - 4, ".txt") ? SIM_TRACE_TEXT : SIM_TRACE_BINARY;
	}
	f = fopen(path, fmt == SIM_TRACE_TEXT ? "w" : "wb");
	if (!f) {
		e = -errno;
		set_err(err, errlen, "%s: cannot create: %s", path, strerror(errno));
		return e;
	}
	e = sim_trace_writer__open_file(f, path, fmt, ranges, range_cnt, out, err, errlen);
	if (e) {
		fclose(f);
		remove(path);
		return e;
	}
	(*out)->own = true;
	return 0;
}

int sim_trace_writer__write(struct sim_trace_writer *w, const struct sim_access *acc, size_t n)
{
	char why[160];

	if (w->err)
		return w->err;
	for (size_t i = 0; i < n; i++) {
		const struct sim_access *a = &acc[i];
		const char *p = access_problem(&w->tab, a, why, sizeof(why));

		if (p)
			return wr_fail(w, -EINVAL, "access %llu: %s", (unsigned long long)w->count, p);
		if (w->len + 64 > BUF_SIZE && wr_flush(w))
			return w->err;
		if (w->fmt == SIM_TRACE_TEXT) {
			w->len += (size_t)snprintf((char *)w->buf + w->len, BUF_SIZE - w->len,
						   "access %u 0x%llx %c %u\n", a->tgid,
						   (unsigned long long)a->va, a->is_write ? 'w' : 'r',
						   a->kernel);
		} else {
			uint32_t t = (uint32_t)rtab_tenant(&w->tab, a->tgid);
			uint8_t tag = a->is_write ? TAG_WRITE : 0;
			size_t at = w->len++;
			uint64_t d = a->va - w->tab.last_va[t];

			if (t != w->tenant) {
				tag |= TAG_TENANT;
				put_varint(w->buf, &w->len, t);
				w->tenant = t;
			}
			if (a->kernel != w->kernel) {
				tag |= TAG_KERNEL;
				put_varint(w->buf, &w->len, a->kernel);
				w->kernel = a->kernel;
			}
			if (d == SIM_PAGE_SIZE) {
				tag |= TAG_NEXT_PAGE;
			} else {
				if (d % SIM_PAGE_SIZE == 0) {
					/* arithmetic shift keeps the sign of the difference */
					d = (uint64_t)((int64_t)d >> 12);
					tag |= TAG_PAGES;
				}
				/* zigzag of the signed difference */
				put_varint(w->buf, &w->len, (d << 1) ^ (0 - (d >> 63)));
			}
			w->buf[at] = tag;
			w->tab.last_va[t] = a->va;
		}
		w->count++;
	}
	return 0;
}

const char *sim_trace_writer__error(const struct sim_trace_writer *w) { return w->err ? w->msg : NULL; }

int sim_trace_writer__close(struct sim_trace_writer *w, char *err, size_t errlen)
{
	int e;

	if (!w)
		return 0;
	if (!w->err)
		wr_flush(w);
	if (!w->err && w->fmt == SIM_TRACE_BINARY) {
		uint8_t c[8];

		put_le(c, w->count, 8);
		if (fseek(w->f, 16, SEEK_SET) || fwrite(c, 1, 8, w->f) != 8 ||
		    fseek(w->f, 0, SEEK_END))
			wr_fail(w, -EIO, "cannot patch the access count at byte 0x10 (%s); binary "
				"traces need a seekable file", strerror(errno));
	}
	if (!w->err && fflush(w->f))
		wr_fail(w, -EIO, "write failed: %s", strerror(errno));
	if (w->own && fclose(w->f) && !w->err)
		wr_fail(w, -EIO, "close failed: %s", strerror(errno));
	e = w->err;
	if (e)
		set_err(err, errlen, "%s", w->msg);
	rtab_free(&w->tab);
	free(w);
	return e;
}

/* ---- whole traces ---- */

void sim_trace__free(struct sim_trace *t)
{
	if (!t)
		return;
	free(t->ranges);
	free(t->acc);
	memset(t, 0, sizeof(*t));
}

static int load_from(struct sim_trace_reader *r, struct sim_trace *t, char *err, size_t errlen)
{
	const struct sim_range *rg;
	size_t cap = 0;
	long got;

	memset(t, 0, sizeof(*t));
	t->range_cnt = sim_trace_reader__ranges(r, &rg);
	t->ranges = malloc((t->range_cnt ? t->range_cnt : 1) * sizeof(*rg));
	if (!t->ranges)
		return -ENOMEM;
	if (t->range_cnt)
		memcpy(t->ranges, rg, t->range_cnt * sizeof(*rg));
	/* the header's count is a hint only: a lying header must not make us allocate a lot */
	if (sim_trace_reader__count(r) != UINT64_MAX)
		cap = (size_t)(sim_trace_reader__count(r) < (1u << 20) ? sim_trace_reader__count(r)
									: (1u << 20));
	cap = cap ? cap : 4096;
	do {
		if (!t->acc || t->acc_cnt == cap) {
			void *p;

			if (t->acc)
				cap *= 2;
			p = realloc(t->acc, cap * sizeof(*t->acc));

			if (!p) {
				sim_trace__free(t);
				return -ENOMEM;
			}
			t->acc = p;
		}
		got = sim_trace_reader__next(r, t->acc + t->acc_cnt, cap - t->acc_cnt);
		if (got < 0) {
			set_err(err, errlen, "%s", sim_trace_reader__error(r));
			sim_trace__free(t);
			return (int)got;
		}
		t->acc_cnt += (size_t)got;
	} while (got > 0);
	return 0;
}

int sim_trace__load(const char *path, struct sim_trace *out, char *err, size_t errlen)
{
	struct sim_trace_reader *r;
	int e = sim_trace_reader__open(path, &r, err, errlen);

	if (e)
		return e;
	e = load_from(r, out, err, errlen);
	sim_trace_reader__close(r);
	return e;
}

int sim_trace__load_mem(const void *buf, size_t len, const char *name, struct sim_trace *out,
			char *err, size_t errlen)
{
	struct sim_trace_reader *r;
	int e = sim_trace_reader__open_mem(buf, len, name, &r, err, errlen);

	if (e)
		return e;
	e = load_from(r, out, err, errlen);
	sim_trace_reader__close(r);
	return e;
}

static int save_to(struct sim_trace_writer *w, const struct sim_trace *t, char *err,
		   size_t errlen)
{
	int e = sim_trace_writer__write(w, t->acc, t->acc_cnt);

	if (e) {
		set_err(err, errlen, "%s", sim_trace_writer__error(w));
		sim_trace_writer__close(w, NULL, 0);
		return e;
	}
	return sim_trace_writer__close(w, err, errlen);
}

int sim_trace__save(const struct sim_trace *t, const char *path, enum sim_trace_format fmt,
		    char *err, size_t errlen)
{
	struct sim_trace_writer *w;
	int e = sim_trace_writer__open(path, fmt, t->ranges, t->range_cnt, &w, err, errlen);

	return e ? e : save_to(w, t, err, errlen);
}

int sim_trace__save_mem(const struct sim_trace *t, enum sim_trace_format fmt, void **buf,
			size_t *len, char *err, size_t errlen)
{
	struct sim_trace_writer *w;
	FILE *f = tmpfile();	/* seekable, unlike a memstream, whose size follows fseek */
	long size;
	char *p = NULL;
	int e;

	*buf = NULL;
	*len = 0;
	if (!f) {
		e = -errno;
		set_err(err, errlen, "cannot create a temporary file: %s", strerror(errno));
		return e;
	}
	e = sim_trace_writer__open_file(f, "memory", fmt == SIM_TRACE_AUTO ? SIM_TRACE_BINARY : fmt,
					t->ranges, t->range_cnt, &w, err, errlen);
	if (!e)
		e = save_to(w, t, err, errlen);
	if (!e && (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)))
		e = -EIO;
	if (!e && !(p = malloc(size ? (size_t)size : 1)))
		e = -ENOMEM;
	if (!e && size && fread(p, 1, (size_t)size, f) != (size_t)size)
		e = -EIO;
	fclose(f);
	if (e) {
		free(p);
		return e;
	}
	*buf = p;
	*len = (size_t)size;
	return 0;
}

/* ---- CLI entry points ---- */

#define CHUNK 65536

int sim_trace_convert(const char *in, const char *out, enum sim_trace_format fmt, char *err,
		      size_t errlen)
{
	struct sim_trace_reader *r;
	struct sim_trace_writer *w;
	const struct sim_range *rg;
	struct sim_access *buf;
	size_t n;
	long got;
	int e;

	e = sim_trace_reader__open(in, &r, err, errlen);
	if (e)
		return e;
	n = sim_trace_reader__ranges(r, &rg);
	e = sim_trace_writer__open(out, fmt, rg, n, &w, err, errlen);
	if (e) {
		sim_trace_reader__close(r);
		return e;
	}
	buf = malloc(CHUNK * sizeof(*buf));
	if (!buf) {
		e = -ENOMEM;
		goto done;
	}
	while ((got = sim_trace_reader__next(r, buf, CHUNK)) > 0) {
		e = sim_trace_writer__write(w, buf, (size_t)got);
		if (e) {
			set_err(err, errlen, "%s", sim_trace_writer__error(w));
			break;
		}
	}
	if (got < 0) {
		e = (int)got;
		set_err(err, errlen, "%s", sim_trace_reader__error(r));
	}
done:
	free(buf);
	if (e) {
		sim_trace_writer__close(w, NULL, 0);
		remove(out);
	} else {
		e = sim_trace_writer__close(w, err, errlen);
	}
	sim_trace_reader__close(r);
	return e;
}

int sim_trace_record_workload(const char *spec, const struct sim_workload_opts *opts,
			      const char *out, enum sim_trace_format fmt, char *err, size_t errlen)
{
	struct sim_trace_writer *w;
	const struct sim_range *rg;
	struct sim_workload *wl;
	struct sim_access *buf;
	size_t n;
	int e;

	e = sim_workload__new(spec, opts, &wl);
	if (e) {
		set_err(err, errlen, "workload '%s': %s", spec, strerror(-e));
		return e;
	}
	n = sim_workload__ranges(wl, &rg);
	e = sim_trace_writer__open(out, fmt, rg, n, &w, err, errlen);
	if (e) {
		sim_workload__free(wl);
		return e;
	}
	buf = malloc(CHUNK * sizeof(*buf));
	if (!buf)
		e = -ENOMEM;
	while (!e && (n = sim_workload__next(wl, buf, CHUNK)) > 0) {
		e = sim_trace_writer__write(w, buf, n);
		if (e)
			set_err(err, errlen, "%s", sim_trace_writer__error(w));
	}
	free(buf);
	sim_workload__free(wl);
	if (e) {
		sim_trace_writer__close(w, NULL, 0);
		remove(out);
		return e;
	}
	return sim_trace_writer__close(w, err, errlen);
}

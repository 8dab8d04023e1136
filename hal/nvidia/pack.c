// SPDX-License-Identifier: Apache-2.0
/*
 * The pack: what `gpuext trace` hands the preload library through the trace
 * directory (DIR/pack): which probes exist, how they run, the maps to
 * place, and the probes' PTX. A small text file a person can read with
 * `head`, parsed strictly: the preload library runs inside someone else's
 * application and must refuse a pack it does not fully understand.
 *
 *   gpuext-pack 3
 *   hash <64 hex>                       SHA-256, see pack_hash()
 *   events <u32>
 *   per_thread <0|1>
 *   flat_twins <0|1>                    ptx_twin.c; gpuext trace --no-flat-twins: 0
 *   kernel_filter <len> <bytes>         may hold spaces, hence the length
 *   maps <n>
 *   map <name> <shm> <type> <key_size> <value_size> <max_entries> <nr_slots> <max_record>
 *   ...
 *   ptx <len>
 *   <len bytes of PTX>
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nvprobe.h"

/*
 * 2: map lines end in max_record (the largest ring record the probes write); 3: flat_twins;
 * 4: the probes' PTX lays arrays of 4-byte values 4 apart (gpuext_ptx_probe_stride), which a
 * library of before reads at 8 and one of after would allocate half of for an older pack
 */
#define PACK_VERSION 4
#define PACK_PTX_MAX (256u << 20)

static int errf(char *err, size_t err_len, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int errf(char *err, size_t err_len, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && err_len) {
		va_start(ap, fmt);
		vsnprintf(err, err_len, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static void hash_u32(struct gx_sha256 *s, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };

	gx_sha256_update(s, b, 4);
}

static void hash_bytes(struct gx_sha256 *s, const void *p, size_t len)
{
	hash_u32(s, (uint32_t)len);
	gx_sha256_update(s, p, len);
}

/*
 * The pack's identity, an input of every JIT cache key: everything that
 * changes the spliced code. The maps' shared-memory names are left out on
 * purpose: they differ from run to run (they carry gpuext's pid) while the
 * code does not, and a cached attach must still hit.
 */
static void pack_hash(const struct gx_pack *p, uint8_t out[32])
{
	static const char domain[] = "gpuext-pack-hash 1";
	struct gx_sha256 s;
	uint32_t i;

	gx_sha256_init(&s);
	gx_sha256_update(&s, domain, sizeof(domain));
	hash_u32(&s, p->events);
	hash_u32(&s, p->per_thread);
	hash_u32(&s, !p->no_flat_twins);
	hash_bytes(&s, p->kernel_filter, strnlen(p->kernel_filter, sizeof(p->kernel_filter)));
	hash_u32(&s, p->map_cnt);
	for (i = 0; i < p->map_cnt && i < GX_PACK_MAX_MAPS; i++) {
		const struct gx_pack_map *m = &p->maps[i];

		hash_bytes(&s, m->name, strnlen(m->name, sizeof(m->name)));
		hash_u32(&s, m->type);
		hash_u32(&s, m->key_size);
		hash_u32(&s, m->value_size);
		hash_u32(&s, m->max_entries);
		hash_u32(&s, m->nr_slots);
		hash_u32(&s, m->max_record);
	}
	hash_bytes(&s, p->ptx ? p->ptx : "", p->ptx_len);
	gx_sha256_final(&s, out);
}

/* A name field for a space-separated line: printable, no spaces, NUL-terminated in @cap. */
static bool token_ok(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	if (n == 0 || n == cap)
		return false;
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
			return false;
	}
	return true;
}

int gx_pack_write(const char *dir, const struct gx_pack *p)
{
	char path[PATH_MAX], tmp[PATH_MAX], hex[65];
	size_t flen;
	uint8_t h[32];
	FILE *f;
	int fd, rc = 0;
	uint32_t i;

	if (!dir || !p || p->map_cnt > GX_PACK_MAX_MAPS || (!p->ptx && p->ptx_len) ||
	    p->ptx_len > PACK_PTX_MAX)
		return -EINVAL;
	flen = strnlen(p->kernel_filter, sizeof(p->kernel_filter));
	if (flen == sizeof(p->kernel_filter) || memchr(p->kernel_filter, '\n', flen))
		return -EINVAL;
	for (i = 0; i < p->map_cnt; i++) {
		if (!token_ok(p->maps[i].name, sizeof(p->maps[i].name)) ||
		    !token_ok(p->maps[i].shm, sizeof(p->maps[i].shm)))
			return -EINVAL;
	}
	if (snprintf(path, sizeof(path), "%s/pack", dir) >= (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s/.pack.tmp.%d.%d", dir, (int)getpid(), (int)gettid()) >=
		    (int)sizeof(tmp))
		return -ENAMETOOLONG;

	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		rc = -errno;
		close(fd);
		unlink(tmp);
		return rc;
	}
	pack_hash(p, h);
	gx_hex32(h, hex);
	fprintf(f, "gpuext-pack %d\nhash %s\nevents %u\nper_thread %d\nflat_twins %d\n", PACK_VERSION,
		hex, p->events, p->per_thread ? 1 : 0, p->no_flat_twins ? 0 : 1);
	fprintf(f, "kernel_filter %zu %s\nmaps %u\n", flen, p->kernel_filter, p->map_cnt);
	for (i = 0; i < p->map_cnt; i++) {
		const struct gx_pack_map *m = &p->maps[i];

		fprintf(f, "map %s %s %u %u %u %u %u %u\n", m->name, m->shm, m->type, m->key_size,
			m->value_size, m->max_entries, m->nr_slots, m->max_record);
	}
	fprintf(f, "ptx %zu\n", p->ptx_len);
	if (p->ptx_len && fwrite(p->ptx, 1, p->ptx_len, f) != p->ptx_len)
		rc = -EIO;
	if (ferror(f) && !rc)
		rc = -EIO;
	if (fclose(f) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

/* ---- reading ------------------------------------------------------------ */

struct cursor {
	const char *buf;
	size_t len, pos;
	int line;
};

/* The next line (without its '\n') or NULL at a truncated end. */
static const char *next_line(struct cursor *c, size_t *n)
{
	const char *s = c->buf + c->pos, *nl;

	if (c->pos >= c->len)
		return NULL;
	nl = memchr(s, '\n', c->len - c->pos);
	if (!nl)
		return NULL;
	*n = (size_t)(nl - s);
	c->pos += *n + 1;
	c->line++;
	return s;
}

/* Decimal u32 at *s (digits only, no sign, no overflow); advances *s. */
static bool parse_u32(const char **s, const char *end, uint32_t *v)
{
	uint64_t x = 0;
	const char *p = *s;

	if (p >= end || *p < '0' || *p > '9')
		return false;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		x = x * 10 + (uint64_t)(*p - '0');
		if (x > UINT32_MAX)
			return false;
	}
	*s = p;
	*v = (uint32_t)x;
	return true;
}

/* "KEY <u32>" exactly. */
static bool line_u32(const char *s, size_t n, const char *key, uint32_t *v)
{
	size_t k = strlen(key);
	const char *p = s + k + 1, *end = s + n;

	if (n <= k + 1 || memcmp(s, key, k) || s[k] != ' ')
		return false;
	return parse_u32(&p, end, v) && p == end;
}

/* A space-terminated token copied into @out (capacity @cap). */
static bool take_token(const char **s, const char *end, char *out, size_t cap)
{
	const char *p = *s, *sp;
	size_t n;

	sp = memchr(p, ' ', (size_t)(end - p));
	n = (size_t)((sp ? sp : end) - p);
	if (n == 0 || n >= cap)
		return false;
	memcpy(out, p, n);
	out[n] = '\0';
	*s = sp ? sp + 1 : end;
	return true;
}

static int read_whole(const char *path, char **buf, size_t *len)
{
	struct stat st;
	size_t got = 0;
	char *b;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if ((uint64_t)st.st_size > PACK_PTX_MAX + 65536ull) {
		close(fd);
		return -E2BIG;
	}
	b = malloc((size_t)st.st_size + 1);
	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, b + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	b[got] = '\0';
	*buf = b;
	*len = got;
	return 0;
}

#define BAD(rc, ...)                                         \
	do {                                                  \
		ret = errf(err, err_len, rc, __VA_ARGS__); \
		goto fail;                                    \
	} while (0)

int gx_pack_read(const char *dir, struct gx_pack *p, char *err, size_t err_len)
{
	char path[PATH_MAX], hex[65], want_hex[65];
	struct cursor c = { 0 };
	const char *s, *end;
	uint8_t h[32];
	uint32_t v, i, ptx_len;
	size_t n;
	char *buf = NULL;
	int ret;

	if (err && err_len)
		err[0] = '\0';
	memset(p, 0, sizeof(*p));
	if (snprintf(path, sizeof(path), "%s/pack", dir) >= (int)sizeof(path))
		return errf(err, err_len, -ENAMETOOLONG, "pack path too long");
	ret = read_whole(path, &buf, &c.len);
	if (ret == -ENOENT)
		return errf(err, err_len, ret, "%s: missing (gpuext trace writes it)", path);
	if (ret)
		return errf(err, err_len, ret, "%s: %s", path, strerror(-ret));
	c.buf = buf;

	s = next_line(&c, &n);
	if (!s || n < 12 || memcmp(s, "gpuext-pack ", 12))
		BAD(-EINVAL, "%s: not a gpuext pack (no \"gpuext-pack\" line)", path);
	if (!line_u32(s, n, "gpuext-pack", &v))
		BAD(-EINVAL, "%s: bad version line", path);
	if (v != PACK_VERSION)
		BAD(-EPROTO, "%s: bad version %u (this library reads version %d)", path, v,
		    PACK_VERSION);

	s = next_line(&c, &n);
	if (!s)
		BAD(-EINVAL, "%s:%d: truncated before the hash line", path, c.line + 1);
	if (n != 5 + 64 || memcmp(s, "hash ", 5))
		BAD(-EINVAL, "%s:%d: expected \"hash <64 hex digits>\"", path, c.line);
	memcpy(want_hex, s + 5, 64);
	want_hex[64] = '\0';

	s = next_line(&c, &n);
	if (!s || !line_u32(s, n, "events", &p->events))
		BAD(-EINVAL, "%s:%d: %s", path, c.line + !s, s ? "expected \"events <u32>\"" : "truncated");
	if (p->events >> GX_PROBE_NR)
		BAD(-EINVAL, "%s:%d: unknown probe events 0x%x", path, c.line, p->events);

	s = next_line(&c, &n);
	if (!s || !line_u32(s, n, "per_thread", &v) || v > 1)
		BAD(-EINVAL, "%s:%d: %s", path, c.line + !s, s ? "expected \"per_thread 0|1\"" : "truncated");
	p->per_thread = v;

	s = next_line(&c, &n);
	if (!s || !line_u32(s, n, "flat_twins", &v) || v > 1)
		BAD(-EINVAL, "%s:%d: %s", path, c.line + !s, s ? "expected \"flat_twins 0|1\"" : "truncated");
	p->no_flat_twins = !v;

	s = next_line(&c, &n);
	if (!s || n < 15 || memcmp(s, "kernel_filter ", 14))
		BAD(-EINVAL, "%s:%d: %s", path, c.line + !s,
		    s ? "expected \"kernel_filter <len> <glob>\"" : "truncated");
	end = s + n;
	s += 14;
	if (!parse_u32(&s, end, &v) || s >= end || *s != ' ' || (size_t)(end - s - 1) != v ||
	    v >= sizeof(p->kernel_filter))
		BAD(-EINVAL, "%s:%d: kernel_filter length does not match its text (or >= %zu)", path,
		    c.line, sizeof(p->kernel_filter));
	memcpy(p->kernel_filter, s + 1, v);
	if (memchr(p->kernel_filter, '\0', v))
		BAD(-EINVAL, "%s:%d: NUL in kernel_filter", path, c.line);

	s = next_line(&c, &n);
	if (!s || !line_u32(s, n, "maps", &p->map_cnt))
		BAD(-EINVAL, "%s:%d: %s", path, c.line + !s, s ? "expected \"maps <n>\"" : "truncated");
	if (p->map_cnt > GX_PACK_MAX_MAPS)
		BAD(-E2BIG, "%s:%d: map count %u too high (at most %d)", path, c.line, p->map_cnt,
		    GX_PACK_MAX_MAPS);
	for (i = 0; i < p->map_cnt; i++) {
		struct gx_pack_map *m = &p->maps[i];
		uint32_t *f[6] = { &m->type, &m->key_size, &m->value_size, &m->max_entries,
				   &m->nr_slots, &m->max_record };

		s = next_line(&c, &n);
		if (!s)
			BAD(-EINVAL, "%s:%d: truncated: %u of %u map lines", path, c.line + 1, i,
			    p->map_cnt);
		end = s + n;
		if (n < 4 || memcmp(s, "map ", 4))
			BAD(-EINVAL, "%s:%d: expected map line %u of %u", path, c.line, i + 1,
			    p->map_cnt);
		s += 4;
		if (!take_token(&s, end, m->name, sizeof(m->name)) ||
		    !take_token(&s, end, m->shm, sizeof(m->shm)))
			BAD(-EINVAL, "%s:%d: map name or shm name missing or too long", path, c.line);
		for (int k = 0; k < 6; k++) {
			if (!parse_u32(&s, end, f[k]) || (k < 5 ? s >= end || *s++ != ' ' : s != end))
				BAD(-EINVAL, "%s:%d: map %s: expected 6 numbers (type key value max slots "
				    "max_record)", path, c.line, m->name);
		}
		if (!m->nr_slots)
			BAD(-EINVAL, "%s:%d: map %s: nr_slots 0", path, c.line, m->name);
	}

	s = next_line(&c, &n);
	if (!s || !line_u32(s, n, "ptx", &ptx_len))
		BAD(-EINVAL, "%s:%d: %s", path, c.line + !s,
		    s ? "expected \"ptx <len>\"" : "truncated before the ptx line");
	if (ptx_len > PACK_PTX_MAX)
		BAD(-E2BIG, "%s:%d: PTX of %u bytes too large", path, c.line, ptx_len);
	if (c.len - c.pos != ptx_len)
		BAD(-EINVAL, "%s: PTX length mismatch: header says %u bytes, file has %zu (%s)", path,
		    ptx_len, c.len - c.pos, c.len - c.pos < ptx_len ? "truncated" : "trailing bytes");
	p->ptx = malloc((size_t)ptx_len + 1);
	if (!p->ptx)
		BAD(-ENOMEM, "out of memory");
	memcpy(p->ptx, c.buf + c.pos, ptx_len);
	p->ptx[ptx_len] = '\0';
	p->ptx_len = ptx_len;

	pack_hash(p, h);
	gx_hex32(h, hex);
	memcpy(p->hash, h, 32);
	if (strcmp(hex, want_hex))
		BAD(-EBADMSG, "%s: hash mismatch: file says %.16s..., content hashes to %.16s...",
		    path, want_hex, hex);
	free(buf);
	return 0;
fail:
	free(buf);
	gx_pack_free(p);
	return ret;
}

void gx_pack_free(struct gx_pack *p)
{
	if (!p)
		return;
	free(p->ptx);
	p->ptx = NULL;
	p->ptx_len = 0;
}

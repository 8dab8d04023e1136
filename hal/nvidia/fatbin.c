// SPDX-License-Identifier: Apache-2.0
/*
 * Module images as cuModuleLoadData / cuModuleLoadFatBinary /
 * cuLibraryLoadData receive them: PTX text, an ELF cubin, a fatbin, or the
 * wrapper nvcc's host code registers. We only need the PTX: the splicer
 * works on PTX and the driver JITs the result. The layout is described in
 * README-fatbin.md (learned from nvcc 13's output, checked by the tests).
 *
 * Everything here runs inside the traced application, on images we do not
 * trust: every field is checked against the image length before use.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decompress.h"
#include "nvprobe.h"

#define FATBIN_MAGIC 0xBA55ED50u
#define WRAPPER_MAGIC 0x466243B1u
#define ELF_MAGIC 0x464C457Fu /* 0x7f "ELF" */
#define FATBIN_HDR_MIN 16
#define ENTRY_HDR_MIN 0x40

/* Member kinds (entry +0x00). */
#define KIND_PTX 1
#define KIND_ELF 2
#define KIND_LTOIR 8

/* Member flags (entry +0x28) that matter here. */
#define FLAG_LZ4 0x2000ull
#define FLAG_ZSTD 0x8000ull
#define FLAG_ARCH_SPECIFIC 0x100000ull	/* compute_90a: that exact sm only */
#define FLAG_FAMILY_SPECIFIC 0x200000ull /* compute_100f: same major, >= arch */

/*
 * Upper bound on a member's decompressed size: a member claims it, and we
 * allocate it before decoding, so a hostile header must not make us ask
 * for terabytes. Real PTX modules run to tens of MiB.
 */
#define MEMBER_MAX (1ull << 30)

struct entry {
	size_t off;		/* of the entry header, from the fatbin start */
	uint16_t kind;
	uint32_t hdr_size;
	uint64_t payload_size;
	uint32_t csize;
	uint32_t arch;
	uint64_t flags;
	uint64_t usize;
};

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

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/*
 * PTX text: optional whitespace and // or block comments, then a
 * directive. Scans at most @len bytes (or up to the NUL when @len is 0, as
 * the driver API promises for PTX).
 */
static bool looks_like_ptx(const char *s, size_t len)
{
	size_t i = 0, lim = len ? len : (size_t)-1;

	while (i < lim && s[i]) {
		char c = s[i];

		if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			i++;
		} else if (c == '/' && i + 1 < lim && s[i + 1] == '/') {
			while (i < lim && s[i] && s[i] != '\n')
				i++;
		} else if (c == '/' && i + 1 < lim && s[i + 1] == '*') {
			for (i += 2; i < lim && s[i]; i++) {
				if (s[i] == '*' && i + 1 < lim && s[i + 1] == '/') {
					i += 2;
					break;
				}
			}
		} else {
			return c == '.';
		}
	}
	return false;
}

/*
 * Whether @p starts with the 4 bytes of @magic (little-endian), comparing
 * byte by byte: with @len 0 the image may be a PTX string shorter than 4
 * bytes, and none of the magics contains a NUL, so we stop before reading
 * past its terminator.
 */
static bool has_magic(const uint8_t *p, size_t len, uint32_t magic)
{
	int i;

	if (len && len < 4)
		return false;
	for (i = 0; i < 4; i++) {
		if (p[i] != (uint8_t)(magic >> (8 * i)))
			return false;
	}
	return true;
}

enum gx_image_kind gx_image_kind(const void *image, size_t len)
{
	const uint8_t *p = image;

	if (!p)
		return GX_IMAGE_UNKNOWN;
	if (has_magic(p, len, FATBIN_MAGIC) || has_magic(p, len, WRAPPER_MAGIC))
		return GX_IMAGE_FATBIN;
	if (has_magic(p, len, ELF_MAGIC))
		return GX_IMAGE_CUBIN;
	return looks_like_ptx(image, len) ? GX_IMAGE_PTX : GX_IMAGE_UNKNOWN;
}

static int copy_ptx(const char *s, size_t len, char **ptx, size_t *ptx_len)
{
	size_t n = len ? strnlen(s, len) : strlen(s);
	char *out = malloc(n + 1);

	if (!out)
		return -ENOMEM;
	memcpy(out, s, n);
	out[n] = '\0';
	*ptx = out;
	if (ptx_len)
		*ptx_len = n;
	return 0;
}

/* The sm an ELF cubin was built for (e_flags; its place moved in ABI 8). */
static unsigned cubin_sm(const uint8_t *p, size_t len)
{
	uint32_t flags;

	if (len && len < 52)
		return 0;
	flags = le32(p + 48); /* e_flags of Elf64_Ehdr */
	return p[8] >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
}

static void arch_list_add(char *list, size_t list_len, const char *prefix, unsigned arch)
{
	char one[24];
	size_t n = strlen(list);

	snprintf(one, sizeof(one), "%s%s%u", n ? " " : "", prefix, arch);
	if (!strstr(list, one + (n ? 1 : 0)) && n + strlen(one) < list_len)
		strcat(list, one);
}

static bool ptx_usable(const struct entry *e, unsigned sm)
{
	if (e->arch > sm)
		return false;
	if (e->flags & FLAG_ARCH_SPECIFIC)
		return e->arch == sm;
	if (e->flags & FLAG_FAMILY_SPECIFIC)
		return e->arch / 10 == sm / 10;
	return true;
}

/* Decompresses (or copies) member @e, payload at @pl, into a NUL-terminated string. */
static int member_ptx(const struct entry *e, const uint8_t *pl, char **ptx, size_t *ptx_len,
		      char *err, size_t err_len)
{
	char why[160] = "";
	size_t in_len, out_len;
	uint8_t *out;
	ssize_t n;

	if (!(e->flags & (FLAG_LZ4 | FLAG_ZSTD)))
		return copy_ptx((const char *)pl, (size_t)e->payload_size, ptx, ptx_len);
	if ((e->flags & FLAG_LZ4) && (e->flags & FLAG_ZSTD))
		return errf(err, err_len, -EINVAL,
			    "fatbin member at %zu: both LZ4 and zstd flags set (flags 0x%llx)",
			    e->off, (unsigned long long)e->flags);
	in_len = e->csize ? e->csize : (size_t)e->payload_size;
	if (in_len > e->payload_size)
		return errf(err, err_len, -EINVAL,
			    "fatbin member at %zu: compressed size %zu larger than its payload %llu",
			    e->off, in_len, (unsigned long long)e->payload_size);
	if (e->usize == 0 || e->usize > MEMBER_MAX)
		return errf(err, err_len, e->usize ? -E2BIG : -EINVAL,
			    "fatbin member at %zu: implausible uncompressed size %llu", e->off,
			    (unsigned long long)e->usize);
	out_len = (size_t)e->usize;
	out = malloc(out_len + 1);
	if (!out)
		return -ENOMEM;
	if (e->flags & FLAG_LZ4)
		n = gx_lz4_decode(pl, in_len, out, out_len, why, sizeof(why));
	else
		n = gx_zstd_decode(pl, in_len, out, out_len, why, sizeof(why));
	if (n < 0) {
		free(out);
		return errf(err, err_len, (int)n,
			    "fatbin member at %zu (payload at %zu): %s", e->off,
			    e->off + e->hdr_size, why);
	}
	if ((size_t)n != out_len) {
		free(out);
		return errf(err, err_len, -EINVAL,
			    "fatbin member at %zu: decompressed to %zd bytes, header says %zu",
			    e->off, n, out_len);
	}
	out[out_len] = '\0';
	*ptx = (char *)out;
	if (ptx_len)
		*ptx_len = strnlen((char *)out, out_len); /* members are NUL-padded */
	return 0;
}

static int fatbin_ptx(const uint8_t *fb, size_t len, unsigned sm, char **ptx, size_t *ptx_len,
		      char *err, size_t err_len)
{
	struct entry best = { 0 }, e;
	char arches[256] = "";
	uint16_t hdr_size;
	uint64_t fat_size, end;
	size_t off;
	bool found = false;
	int nmembers = 0;

	if (len && len < FATBIN_HDR_MIN)
		return errf(err, err_len, -EINVAL, "fatbin header truncated: %zu of %d bytes", len,
			    FATBIN_HDR_MIN);
	if (le32(fb) != FATBIN_MAGIC)
		return errf(err, err_len, -EINVAL, "bad fatbin magic 0x%08x (want 0x%08x)", le32(fb),
			    FATBIN_MAGIC);
	hdr_size = le16(fb + 6);
	fat_size = le64(fb + 8);
	if (hdr_size < FATBIN_HDR_MIN || hdr_size > 4096)
		return errf(err, err_len, -EINVAL, "fatbin header size %u implausible", hdr_size);
	if (fat_size > (1ull << 40))
		return errf(err, err_len, -E2BIG, "fatbin size %llu implausible",
			    (unsigned long long)fat_size);
	end = hdr_size + fat_size;
	if (!len)
		len = (size_t)end; /* the caller vouches for what the header says */
	if (end > len)
		return errf(err, err_len, -EINVAL,
			    "fatbin truncated: header says %llu bytes, image has %zu",
			    (unsigned long long)end, len);

	for (off = hdr_size; off < end; nmembers++) {
		const uint8_t *h = fb + off;

		if (end - off < ENTRY_HDR_MIN)
			return errf(err, err_len, -EINVAL,
				    "fatbin member header at %zu truncated (%llu bytes left)", off,
				    (unsigned long long)(end - off));
		e.off = off;
		e.kind = le16(h);
		e.hdr_size = le32(h + 4);
		e.payload_size = le64(h + 8);
		e.csize = le32(h + 0x10);
		e.arch = le32(h + 0x1c);
		e.flags = le64(h + 0x28);
		e.usize = le64(h + 0x38);
		if (e.hdr_size < ENTRY_HDR_MIN || e.hdr_size > end - off)
			return errf(err, err_len, -EINVAL,
				    "fatbin member at %zu: header size %u runs past the fatbin end %llu",
				    off, e.hdr_size, (unsigned long long)end);
		if (e.payload_size > end - off - e.hdr_size)
			return errf(err, err_len, -EINVAL,
				    "fatbin member at %zu: payload of %llu bytes runs past the fatbin end %llu",
				    off, (unsigned long long)e.payload_size, (unsigned long long)end);
		if (e.kind == KIND_PTX) {
			arch_list_add(arches, sizeof(arches), "compute_", e.arch);
			if (ptx_usable(&e, sm) &&
			    (!found || e.arch > best.arch ||
			     (e.arch == best.arch && (e.flags & ~best.flags &
						      (FLAG_ARCH_SPECIFIC | FLAG_FAMILY_SPECIFIC))))) {
				best = e;
				found = true;
			}
		} else if (e.kind == KIND_ELF) {
			arch_list_add(arches, sizeof(arches), "sm_", e.arch);
		} else if (e.kind == KIND_LTOIR) {
			arch_list_add(arches, sizeof(arches), "lto_", e.arch);
		}
		off += e.hdr_size + (size_t)e.payload_size;
	}
	if (!nmembers)
		return errf(err, err_len, -ENOENT, "fatbin has no members");
	if (!found) {
		if (strstr(arches, "compute_"))
			return errf(err, err_len, -ENOENT,
				    "no PTX member usable on sm_%u (arches: %s)", sm, arches);
		return errf(err, err_len, -ENOENT, "SASS only: no PTX member (arches: %s)", arches);
	}
	return member_ptx(&best, fb + best.off + best.hdr_size, ptx, ptx_len, err, err_len);
}

int gx_image_ptx(const void *image, size_t image_len, unsigned sm, char **ptx, size_t *ptx_len,
		 char *err, size_t err_len)
{
	const uint8_t *p = image;

	if (err && err_len)
		err[0] = '\0';
	if (!p || !ptx)
		return errf(err, err_len, -EINVAL, "no image");
	*ptx = NULL;
	if (ptx_len)
		*ptx_len = 0;
	switch (gx_image_kind(image, image_len)) {
	case GX_IMAGE_PTX:
		return copy_ptx(image, image_len, ptx, ptx_len);
	case GX_IMAGE_CUBIN:
		return errf(err, err_len, -ENOENT, "SASS only: ELF cubin (arches: sm_%u)",
			    cubin_sm(p, image_len));
	case GX_IMAGE_FATBIN:
		break;
	default:
		if (image_len && image_len < 4)
			return errf(err, err_len, -EINVAL, "image of %zu bytes is too short",
				    image_len);
		return errf(err, err_len, -EINVAL,
			    "unknown image (first byte 0x%02x): not PTX, a cubin or a fatbin", p[0]);
	}
	if (le32(p) == WRAPPER_MAGIC) {
		/* nvcc's __fatBinC_Wrapper_t: magic, version, then a pointer to the fatbin. */
		uint32_t version;
		const uint8_t *data;

		if (image_len && image_len < 16)
			return errf(err, err_len, -EINVAL, "fatbin wrapper truncated: %zu of 16 bytes",
				    image_len);
		version = le32(p + 4);
		if (version != 1 && version != 2)
			return errf(err, err_len, -EINVAL, "fatbin wrapper version %u unknown",
				    version);
		memcpy(&data, p + 8, sizeof(data));
		if (!data)
			return errf(err, err_len, -EINVAL, "fatbin wrapper has a NULL fatbin pointer");
		/* The pointee's length is whatever its own header says. */
		return fatbin_ptx(data, 0, sm, ptx, ptx_len, err, err_len);
	}
	return fatbin_ptx(p, image_len, sm, ptx, ptx_len, err, err_len);
}

// SPDX-License-Identifier: Apache-2.0
/*
 * Module images (hal/nvidia/fatbin.c + decompress.c): the PTX we take out of
 * what nvcc 13 builds must be the PTX nvcc emits for that arch, for every
 * member layout and compression mode, and malformed images must fail with
 * a message naming the problem, never read outside the buffer (each input
 * lives in its own exact-size allocation, so ASan sees any overread).
 *
 * Inputs come from the CUDA sources in tests/nv/, compiled by tests/nv/gen.sh with nvcc;
 * without nvcc the test says so and exits 77 (skipped).
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"

#ifdef GPUEXT_NV_IMAGE_LINKED
#include "nvidia/decompress.h"
#include "nvidia/nvprobe.h"

#ifndef GPUEXT_NV_TEST_OUT
#define GPUEXT_NV_TEST_OUT "/tmp/gpuext-nv-test"
#endif

static char out_dir[512];

static const char *find_nvcc(void)
{
	static const char *cands[] = { "/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc" };
	const char *env = getenv("NVCC");

	if (env && !access(env, X_OK))
		return env;
	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
		if (!access(cands[i], X_OK))
			return cands[i];
	}
	return NULL;
}

/* A file of the generated set, in an exact-size allocation. */
static uint8_t *load(const char *name, size_t *len)
{
	char path[1024];
	struct stat st;
	uint8_t *buf;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", out_dir, name);
	f = fopen(path, "rb");
	if (!f || fstat(fileno(f), &st)) {
		test_fail(__FILE__, __LINE__, "cannot open %s: %s", path, strerror(errno));
		if (f)
			fclose(f);
		return NULL;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
		test_fail(__FILE__, __LINE__, "short read of %s", path);
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = (size_t)st.st_size;
	return buf;
}

/*
 * fatbinary stores PTX with comments dropped and each line's whitespace
 * squeezed (README-fatbin.md); the tokens are nvcc's, one for one. So the
 * ground truth comparison is over the token sequence with // comments cut.
 */
static char *ptx_tokens(const char *s, size_t len)
{
	char *out = malloc(len + 2), *o = out;
	size_t i = 0;
	bool space = false;

	while (i < len && s[i]) {
		if (s[i] == '/' && i + 1 < len && s[i + 1] == '/') {
			while (i < len && s[i] && s[i] != '\n')
				i++;
			continue;
		}
		if (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			space = o != out;
			i++;
			continue;
		}
		if (space)
			*o++ = ' ';
		space = false;
		*o++ = s[i++];
	}
	*o = '\0';
	return out;
}

/* Extracted PTX @got equals the nvcc --ptx file @truth token for token. */
static void check_same_ptx(const char *got, size_t got_len, const char *truth, int line)
{
	size_t tlen = 0;
	uint8_t *t = load(truth, &tlen);
	char *a, *b;

	if (!t || !got) {
		test_fail(__FILE__, line, "no PTX to compare with %s", truth);
		free(t);
		return;
	}
	a = ptx_tokens(got, got_len);
	b = ptx_tokens((char *)t, tlen);
	test_checks++;
	if (strcmp(a, b) || strlen(b) < 100) {
		size_t k = 0;

		while (a[k] && a[k] == b[k])
			k++;
		test_fail(__FILE__, line, "PTX differs from %s at token char %zu: got \"%.40s\" want \"%.40s\"",
			  truth, k, a + k, b + k);
	}
	free(a);
	free(b);
	free(t);
}

static int extract(const char *name, unsigned sm, char **ptx, size_t *len, char *err, size_t err_len)
{
	size_t n = 0;
	uint8_t *img = load(name, &n);
	int rc;

	if (!img)
		return -999;
	rc = gx_image_ptx(img, n, sm, ptx, len, err, err_len);
	free(img);
	return rc;
}

static void test_ptx_text(void)
{
	size_t n = 0, len = 0;
	uint8_t *raw = load("vadd_80.ptx", &n);
	char *txt, *ptx = NULL, err[256];

	if (!raw)
		return;
	txt = malloc(n + 1);
	memcpy(txt, raw, n);
	txt[n] = '\0';
	CHECK_EQ_INT(gx_image_kind(txt, n), GX_IMAGE_PTX);
	CHECK_EQ_INT(gx_image_kind(txt, 0), GX_IMAGE_PTX);
	CHECK_EQ_INT(gx_image_ptx(txt, 0, 80, &ptx, &len, err, sizeof(err)), 0);
	CHECK_EQ_U64(len, n);
	CHECK(ptx && !memcmp(ptx, raw, n) && ptx[n] == '\0');
	free(ptx);
	/* Given a length, the copy stops there even without a NUL in range. */
	CHECK_EQ_INT(gx_image_ptx(raw, n, 80, &ptx, &len, err, sizeof(err)), 0);
	CHECK_EQ_U64(len, n);
	free(ptx);
	/* Short strings must not be read past their NUL when the length is unknown. */
	CHECK_EQ_INT(gx_image_kind("", 0), GX_IMAGE_UNKNOWN);
	CHECK_EQ_INT(gx_image_kind(".v", 0), GX_IMAGE_PTX);
	CHECK_EQ_INT(gx_image_kind("/* c */ \n// x\n\t.version 8.0", 0), GX_IMAGE_PTX);
	CHECK_EQ_INT(gx_image_kind("hello", 0), GX_IMAGE_UNKNOWN);
	CHECK_EQ_INT(gx_image_ptx("hello", 5, 80, &ptx, &len, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "unknown image");
	free(txt);
	free(raw);
}

static void test_ptx_only(void)
{
	static const char *modes[] = { "default", "size", "speed", "balance" };
	char *none = NULL, *ptx = NULL, err[256] = "", name[64];
	size_t none_len = 0, len = 0, n;
	uint8_t *img;

	CHECK_EQ_INT(extract("vadd_ptx_none.fatbin", 80, &none, &none_len, err, sizeof(err)), 0);
	check_same_ptx(none, none_len, "vadd_80.ptx", __LINE__);
	for (size_t i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "vadd_ptx_%s.fatbin", modes[i]);
		img = load(name, &n);
		if (!img)
			continue;
		CHECK_EQ_INT(gx_image_kind(img, n), GX_IMAGE_FATBIN);
		/* The member really is compressed: it is smaller than the stored one. */
		CHECK(n < 968);
		CHECK_EQ_INT(gx_image_ptx(img, n, 80, &ptx, &len, err, sizeof(err)), 0);
		/* Decompressed bytes equal the uncompressed member exactly. */
		CHECK_EQ_U64(len, none_len);
		CHECK(ptx && none && !memcmp(ptx, none, none_len));
		free(ptx);
		ptx = NULL;
		/* Length 0: the fatbin header gives it. */
		CHECK_EQ_INT(gx_image_ptx(img, 0, 90, &ptx, &len, err, sizeof(err)), 0);
		CHECK_EQ_U64(len, none_len);
		free(ptx);
		ptx = NULL;
		free(img);
	}
	free(none);
}

static void test_big(void)
{
	static const char *modes[] = { "none", "default", "size", "speed" };
	char *first = NULL, *ptx = NULL, err[256] = "", name[64], path[700], cmd[2048];
	size_t first_len = 0, len = 0;
	FILE *f;

	for (size_t i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "big_ptx_%s.fatbin", modes[i]);
		CHECK_EQ_INT(extract(name, 80, &ptx, &len, err, sizeof(err)), 0);
		if (!ptx) {
			test_fail(__FILE__, __LINE__, "%s: %s", name, err);
			continue;
		}
		/* Past 128 KiB: the zstd member spans several blocks. */
		CHECK(len > 256 * 1024);
		if (!first) {
			first = ptx, first_len = len;
			check_same_ptx(ptx, len, "big_80.ptx", __LINE__);
			continue;
		}
		CHECK_EQ_U64(len, first_len);
		CHECK(!memcmp(ptx, first, first_len));
		free(ptx);
	}
	/* ptxas accepts what we extracted. */
	snprintf(path, sizeof(path), "%s/big_extracted.ptx", out_dir);
	f = fopen(path, "w");
	if (f && first) {
		fwrite(first, 1, first_len, f);
		fclose(f);
		snprintf(cmd, sizeof(cmd), "%s -arch=sm_80 -o /dev/null %s", GPUEXT_PTXAS, path);
		if (GPUEXT_PTXAS[0] && !access(GPUEXT_PTXAS, X_OK))
			CHECK_EQ_INT(system(cmd), 0);
	}
	free(first);
}

static void test_sass_only(void)
{
	char *ptx = (char *)1, err[256] = "";
	size_t len = 7;

	CHECK_EQ_INT(extract("vadd_sass.fatbin", 90, &ptx, &len, err, sizeof(err)), -ENOENT);
	CHECK(ptx == NULL);
	CHECK_EQ_U64(len, 0);
	CHECK_STR_CONTAINS(err, "SASS only");
	CHECK_STR_CONTAINS(err, "sm_80 sm_90");
	err[0] = '\0';
	CHECK_EQ_INT(extract("vadd_sass_compressed.fatbin", 80, &ptx, &len, err, sizeof(err)),
		     -ENOENT);
	CHECK_STR_CONTAINS(err, "SASS only: no PTX member (arches: sm_80 sm_90)");
}

static void test_mixed(void)
{
	static const char *files[] = { "vadd_mixed.fatbin", "vadd_mixed_speed.fatbin" };
	char *ptx = NULL, err[256] = "";
	size_t len = 0;

	for (size_t i = 0; i < 2; i++) {
		CHECK_EQ_INT(extract(files[i], 80, &ptx, &len, err, sizeof(err)), 0);
		check_same_ptx(ptx, len, "vadd_80.ptx", __LINE__);
		free(ptx);
		ptx = NULL;
		CHECK_EQ_INT(extract(files[i], 86, &ptx, &len, err, sizeof(err)), 0);
		CHECK_STR_CONTAINS(ptx, ".target sm_80");
		free(ptx);
		ptx = NULL;
		CHECK_EQ_INT(extract(files[i], 90, &ptx, &len, err, sizeof(err)), 0);
		check_same_ptx(ptx, len, "vadd_90.ptx", __LINE__);
		free(ptx);
		ptx = NULL;
		CHECK_EQ_INT(extract(files[i], 120, &ptx, &len, err, sizeof(err)), 0);
		CHECK_STR_CONTAINS(ptx, ".target sm_90");
		free(ptx);
		ptx = NULL;
		CHECK_EQ_INT(extract(files[i], 75, &ptx, &len, err, sizeof(err)), -ENOENT);
		CHECK_STR_CONTAINS(err, "no PTX member usable on sm_75");
		CHECK_STR_CONTAINS(err, "compute_80 sm_80 compute_90");
	}
}

static void test_arch_specific(void)
{
	char *ptx = NULL, err[256] = "";
	size_t len = 0;

	CHECK_EQ_INT(extract("vadd_arch.fatbin", 90, &ptx, &len, err, sizeof(err)), 0);
	check_same_ptx(ptx, len, "vadd_90a.ptx", __LINE__);
	free(ptx);
	ptx = NULL;
	/* compute_90a PTX is for sm_90 only: sm_100 gets the portable compute_80. */
	CHECK_EQ_INT(extract("vadd_arch.fatbin", 100, &ptx, &len, err, sizeof(err)), 0);
	check_same_ptx(ptx, len, "vadd_80.ptx", __LINE__);
	free(ptx);
}

/*
 * The real in-process case: nvcc's host code in a shared object registers a
 * __fatBinC_Wrapper_t placed in .nvFatBinSegment. Find that section in the
 * file, dlopen the object and hand the wrapper in memory to gx_image_ptx
 * (length 0, as the preload library sees it), then do the same for the raw
 * .nv_fatbin section bytes read from the file.
 */
static void test_embedded(void)
{
	uint64_t seg_addr = 0, seg_size = 0, fb_off = 0, fb_size = 0;
	char path[700], *ptx = NULL, err[256] = "";
	size_t n = 0, len = 0, found = 0;
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;
	const char *names;
	uint8_t *file = load("libapp.so", &n);
	Dl_info info;
	void *h, *sym;

	if (!file)
		return;
	eh = (const Elf64_Ehdr *)file;
	CHECK(n > sizeof(*eh) && eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(*sh) <= n);
	sh = (const Elf64_Shdr *)(file + eh->e_shoff);
	names = (const char *)file + sh[eh->e_shstrndx].sh_offset;
	for (int i = 0; i < eh->e_shnum; i++) {
		if (!strcmp(names + sh[i].sh_name, ".nvFatBinSegment"))
			seg_addr = sh[i].sh_addr, seg_size = sh[i].sh_size;
		if (!strcmp(names + sh[i].sh_name, ".nv_fatbin"))
			fb_off = sh[i].sh_offset, fb_size = sh[i].sh_size;
	}
	CHECK(seg_size >= 24 && fb_size > 16);

	snprintf(path, sizeof(path), "%s/libapp.so", out_dir);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		test_fail(__FILE__, __LINE__, "dlopen %s: %s", path, dlerror());
		free(file);
		return;
	}
	sym = dlsym(h, "gpuext_test_app_marker");
	CHECK(sym && dladdr(sym, &info));
	/* Every wrapper in the segment: ours carries the PTX of scale(). */
	for (uint64_t off = 0; sym && off + 24 <= seg_size; off += 24) {
		const uint8_t *w = (const uint8_t *)info.dli_fbase + seg_addr + off;

		if (memcmp(w, "\xb1\x43\x62\x46", 4))
			continue;
		CHECK_EQ_INT(gx_image_kind(w, 0), GX_IMAGE_FATBIN);
		if (gx_image_ptx(w, 0, 80, &ptx, &len, err, sizeof(err)) == 0 &&
		    strstr(ptx, ".entry scale")) {
			check_same_ptx(ptx, len, "app_80.ptx", __LINE__);
			found++;
		}
		free(ptx);
		ptx = NULL;
	}
	CHECK_EQ_INT(found, 1);
	dlclose(h);

	/*
	 * The section as bytes: fatbins of every linked object (ours, cudart's)
	 * back to back, each 8-aligned, each sized by its own header.
	 */
	found = 0;
	for (uint64_t off = 0; off + 16 <= fb_size;) {
		const uint8_t *fb = file + fb_off + off;
		uint64_t fat, hdr = fb[6] | fb[7] << 8;

		memcpy(&fat, fb + 8, 8);
		CHECK_EQ_INT(gx_image_kind(fb, fb_size - off), GX_IMAGE_FATBIN);
		if (gx_image_ptx(fb, fb_size - off, 80, &ptx, &len, err, sizeof(err)) == 0 &&
		    strstr(ptx, ".entry scale")) {
			check_same_ptx(ptx, len, "app_80.ptx", __LINE__);
			found++;
		}
		free(ptx);
		ptx = NULL;
		off = (off + hdr + fat + 7) & ~7ull;
	}
	CHECK_EQ_INT(found, 1);
	free(file);
}

/* ---- malformed images ----------------------------------------------------- */

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static int try_image(const uint8_t *img, size_t n, unsigned sm, char *err, size_t err_len)
{
	uint8_t *copy = malloc(n ? n : 1);
	char *ptx = NULL;
	size_t len = 0;
	int rc;

	memcpy(copy, img, n);
	err[0] = '\0';
	rc = gx_image_ptx(copy, n, sm, &ptx, &len, err, err_len);
	if (rc == 0)
		CHECK(ptx && strlen(ptx) == len);
	else
		CHECK(ptx == NULL && err[0]);
	free(ptx);
	free(copy);
	return rc;
}

static void test_malformed(void)
{
	size_t n = 0, ns = 0, i;
	uint8_t *good = load("vadd_ptx_default.fatbin", &n);
	uint8_t *lz4 = load("vadd_ptx_speed.fatbin", &ns);
	uint8_t *bad;
	char err[256];
	uint32_t seed = 12345;

	if (!good || !lz4)
		goto out;
	bad = malloc(n);

	/* Header and entry layout (README-fatbin.md): entry at 16, payload at 16 + 0x50. */
	CHECK_EQ_INT(try_image(good, 10, 80, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "fatbin header truncated");

	memcpy(bad, good, n);
	put32(bad, 0xBA55ED51);
	CHECK_EQ_INT(gx_image_kind(bad, n), GX_IMAGE_UNKNOWN);
	CHECK_EQ_INT(try_image(bad, n, 80, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "unknown image");

	CHECK_EQ_INT(try_image(good, n - 1, 80, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "fatbin truncated: header says 480 bytes, image has 479");

	memcpy(bad, good, n);
	put32(bad + 16 + 4, 0x10000); /* entry header size */
	CHECK_EQ_INT(try_image(bad, n, 80, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "member at 16: header size 65536 runs past the fatbin end");

	memcpy(bad, good, n);
	put64(bad + 16 + 8, 0x1000); /* payload size */
	CHECK_EQ_INT(try_image(bad, n, 80, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "payload of 4096 bytes runs past the fatbin end");

	memcpy(bad, good, n);
	put64(bad + 8, 40); /* fat size: an entry header cut short */
	CHECK_EQ_INT(try_image(bad, n, 80, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "member header at 16 truncated");

	memcpy(bad, good, n);
	put64(bad + 16 + 0x38, 866); /* uncompressed size one short */
	CHECK_EQ_INT(try_image(bad, n, 80, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "frame content size 867 exceeds the declared size 866");

	memcpy(bad, good, n);
	put64(bad + 16 + 0x38, 5ull << 30);
	CHECK_EQ_INT(try_image(bad, n, 80, err, sizeof(err)), -E2BIG);
	CHECK_STR_CONTAINS(err, "implausible uncompressed size");

	memcpy(bad, good, n);
	bad[0x60] ^= 0xff; /* zstd magic */
	CHECK_EQ_INT(try_image(bad, n, 80, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "zstd: bad frame magic");

	memcpy(bad, good, n);
	put32(bad + 16 + 0x10, 40); /* compressed size cuts the stream */
	CHECK_EQ_INT(try_image(bad, n, 80, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "zstd: ");
	CHECK_STR_CONTAINS(err, "offset");

	memcpy(bad, good, n);
	memset(bad + 0x70, 0x5a, 64); /* garbage inside the compressed block */
	CHECK_EQ_INT(try_image(bad, n, 80, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "fatbin member at 16 (payload at 96): zstd: ");

	/* LZ4: a match offset pointing before the start of the output. */
	{
		uint8_t *b2 = malloc(ns);

		memcpy(b2, lz4, ns);
		CHECK_EQ_U64(b2[0x60], 0x13); /* 1 literal, then a match at offset 1 */
		b2[0x62] = 0x09;
		CHECK_EQ_INT(try_image(b2, ns, 80, err, sizeof(err)), -EINVAL);
		CHECK_STR_CONTAINS(err, "lz4: match offset 9 at 2 points before the output start");
		free(b2);
	}

	/* Every prefix fails cleanly; random corruptions never crash. */
	for (i = 1; i < n; i++)
		CHECK(try_image(good, i, 80, err, sizeof(err)) < 0);
	for (i = 1; i < ns; i++)
		CHECK(try_image(lz4, i, 80, err, sizeof(err)) < 0);
	for (i = 0; i < 3000; i++) {
		const uint8_t *src = i & 1 ? lz4 : good;
		size_t len = i & 1 ? ns : n, flips, k;
		uint8_t *c = malloc(len);

		memcpy(c, src, len);
		seed = seed * 1103515245 + 12345;
		flips = 1 + (seed >> 16) % 4;
		for (k = 0; k < flips; k++) {
			seed = seed * 1103515245 + 12345;
			/* Mostly the compressed stream, sometimes the headers. */
			size_t at = (seed >> 8) % 8 ? 0x60 + (seed >> 12) % (len - 0x60)
						    : (seed >> 12) % 0x60;
			c[at] ^= (uint8_t)(1u << ((seed >> 4) & 7));
		}
		try_image(c, len, 80, err, sizeof(err));
		free(c);
	}

	/* Wrappers. */
	{
		uint8_t w[24];
		const void *ptr = good;
		char *ptx = NULL;
		size_t len = 0;

		put32(w, 0x466243B1);
		put32(w + 4, 1);
		memcpy(w + 8, &ptr, 8);
		memset(w + 16, 0, 8);
		CHECK_EQ_INT(gx_image_ptx(w, sizeof(w), 80, &ptx, &len, err, sizeof(err)), 0);
		CHECK_EQ_U64(len, 866);
		free(ptx);
		ptx = NULL;
		put32(w + 4, 7);
		CHECK_EQ_INT(gx_image_ptx(w, sizeof(w), 80, &ptx, &len, err, sizeof(err)), -EINVAL);
		CHECK_STR_CONTAINS(err, "fatbin wrapper version 7 unknown");
		put32(w + 4, 2);
		memset(w + 8, 0, 8);
		CHECK_EQ_INT(gx_image_ptx(w, sizeof(w), 80, &ptx, &len, err, sizeof(err)), -EINVAL);
		CHECK_STR_CONTAINS(err, "NULL fatbin pointer");
		CHECK_EQ_INT(gx_image_ptx(w, 12, 80, &ptx, &len, err, sizeof(err)), -EINVAL);
		CHECK_STR_CONTAINS(err, "fatbin wrapper truncated");
	}
	free(bad);
out:
	free(good);
	free(lz4);
}

/* The decoders on their own, against the zstd CLI where the machine has one. */
static void test_decoders(void)
{
	uint8_t out[64];
	char err[128];

	/* XXH64 of "" and "abc" with seed 0 (the reference's published values). */
	CHECK_EQ_U64(gx_xxh64("", 0, 0), 0xEF46DB3751D8E999ull);
	CHECK_EQ_U64(gx_xxh64("abc", 3, 0), 0x44BC2CF5AD770999ull);
	/* LZ4: 4 literals "abcd", match offset 4 length 8, then 1 literal "!" ends. */
	{
		static const uint8_t blk[] = { 0x44, 'a', 'b', 'c', 'd', 4, 0, 0x10, '!' };

		CHECK_EQ_INT(gx_lz4_decode(blk, sizeof(blk), out, sizeof(out), err, sizeof(err)), 13);
		CHECK(!memcmp(out, "abcdabcdabcd!", 13));
		CHECK_EQ_INT(gx_lz4_decode(blk, sizeof(blk), out, 12, err, sizeof(err)), -EINVAL);
		CHECK_STR_CONTAINS(err, "lz4: literals at 8 overflow the declared size 12");
		CHECK_EQ_INT(gx_lz4_decode(blk, 6, out, sizeof(out), err, sizeof(err)), -EINVAL);
		CHECK_STR_CONTAINS(err, "match offset at 5 truncated");
	}
	/* zstd: a frame with one raw block "hi" and one RLE block "zzz", checksum. */
	{
		uint8_t f[] = { 0x28, 0xb5, 0x2f, 0xfd, 0x24, 5, /* single segment, fcs 5, checksum */
				0x10, 0, 0, 'h', 'i',			/* raw, 2 bytes */
				0x1b, 0, 0, 'z',			/* RLE, 3, last */
				0, 0, 0, 0 };
		uint32_t c = (uint32_t)gx_xxh64("hizzz", 5, 0);

		memcpy(f + 15, &c, 4);
		CHECK_EQ_INT(gx_zstd_decode(f, sizeof(f), out, sizeof(out), err, sizeof(err)), 5);
		CHECK(!memcmp(out, "hizzz", 5));
		f[15] ^= 1;
		CHECK_EQ_INT(gx_zstd_decode(f, sizeof(f), out, sizeof(out), err, sizeof(err)), -EINVAL);
		CHECK_STR_CONTAINS(err, "content checksum mismatch at offset 15");
		f[15] ^= 1;
		f[4] = 0x2c; /* reserved bit */
		CHECK_EQ_INT(gx_zstd_decode(f, sizeof(f), out, sizeof(out), err, sizeof(err)), -EINVAL);
		CHECK_STR_CONTAINS(err, "reserved bit");
	}
	/* Cross-check with the zstd CLI (levels exercise different table modes). */
	if (!system("command -v zstd >/dev/null 2>&1")) {
		static const char *levels[] = { "-1", "-3", "-19", "--ultra -22", "--fast=3" };
		char cmd[2048], path[700];
		size_t slen = 0, zlen = 0;
		uint8_t *src = load("big_80.ptx", &slen), *z, *dec;

		for (size_t i = 0; src && i < 5; i++) {
			snprintf(path, sizeof(path), "%s/big_80.ptx.zst", out_dir);
			snprintf(cmd, sizeof(cmd), "zstd -q -f %s %s/big_80.ptx -o %s", levels[i],
				 out_dir, path);
			CHECK_EQ_INT(system(cmd), 0);
			z = load("big_80.ptx.zst", &zlen);
			dec = malloc(slen);
			CHECK_EQ_INT(gx_zstd_decode(z, zlen, dec, slen, err, sizeof(err)), (long)slen);
			CHECK(!memcmp(dec, src, slen));
			free(dec);
			free(z);
		}
		free(src);
	} else {
		printf("test_nv_fatbin: no zstd CLI, cross-check skipped (nvcc streams still tested)\n");
	}
}

int main(void)
{
	const char *nvcc = find_nvcc(), *o = getenv("GPUEXT_NV_TEST_OUT");
	char cmd[2048];

	if (!nvcc) {
		printf("test_nv_fatbin: SKIP: nvcc not found (set NVCC or install the CUDA toolkit "
		       "at /usr/local/cuda); fatbin inputs are built from tests/nv/*.cu\n");
		return 77;
	}
	snprintf(out_dir, sizeof(out_dir), "%s", o && *o ? o : GPUEXT_NV_TEST_OUT);
	snprintf(cmd, sizeof(cmd), "NVCC='%s' '%s/nv/gen.sh' '%s'", nvcc, GPUEXT_TEST_DATA_DIR,
		 out_dir);
	if (system(cmd)) {
		test_fail(__FILE__, __LINE__, "%s failed", cmd);
		return test_done("test_nv_fatbin");
	}
	test_ptx_text();
	test_ptx_only();
	test_big();
	test_sass_only();
	test_mixed();
	test_arch_specific();
	test_embedded();
	test_malformed();
	test_decoders();
	return test_done("test_nv_fatbin");
}
#else
int main(void)
{
	printf("test_nv_fatbin: SKIP: not linked with gpuext_nv_image; hal/nvidia/nvidia.cmake "
	       "must include hal/nvidia/image.cmake\n");
	return 77;
}
#endif

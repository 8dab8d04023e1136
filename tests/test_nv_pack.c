// SPDX-License-Identifier: Apache-2.0
/*
 * The pack file (hal/nvidia/pack.c): write/read round trip, the hash moves
 * with everything that changes the spliced code (and not with shm names),
 * and every malformed pack is refused with the reason.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"

#ifdef GPUEXT_NV_IMAGE_LINKED
#include "nvidia/nvprobe.h"

static char dir[256];
static const char probe_ptx[] =
	".visible .func gpuext_probe_entry(.param .b64 ctx)\n{\n\tret;\n}\n";

static void sample(struct gx_pack *p)
{
	memset(p, 0, sizeof(*p));
	p->events = 1u << GX_PROBE_ENTRY | 1u << GX_PROBE_EXIT;
	p->per_thread = false;
	snprintf(p->kernel_filter, sizeof(p->kernel_filter), "vadd* gemm_?");
	p->map_cnt = 2;
	snprintf(p->maps[0].name, 64, "counts");
	snprintf(p->maps[0].shm, 128, "/gpuext-1234-counts");
	p->maps[0].type = 2, p->maps[0].key_size = 4, p->maps[0].value_size = 8;
	p->maps[0].max_entries = 1024, p->maps[0].nr_slots = 1;
	snprintf(p->maps[1].name, 64, "events");
	snprintf(p->maps[1].shm, 128, "/gpuext-1234-events");
	p->maps[1].type = 27, p->maps[1].key_size = 0, p->maps[1].value_size = 0;
	p->maps[1].max_entries = 1 << 20, p->maps[1].nr_slots = 132, p->maps[1].max_record = 12000;
	p->ptx = (char *)probe_ptx;
	p->ptx_len = sizeof(probe_ptx) - 1;
}

static int hash_of(const struct gx_pack *p, uint8_t h[32])
{
	struct gx_pack r;
	char err[256];
	int rc = gx_pack_write(dir, p);

	if (rc)
		return rc;
	rc = gx_pack_read(dir, &r, err, sizeof(err));
	if (rc)
		return rc;
	memcpy(h, r.hash, 32);
	gx_pack_free(&r);
	return 0;
}

static void test_roundtrip(void)
{
	struct gx_pack p, r;
	char err[256] = "";
	char path[600];

	sample(&p);
	CHECK_EQ_INT(gx_pack_write(dir, &p), 0);
	CHECK_EQ_INT(gx_pack_read(dir, &r, err, sizeof(err)), 0);
	CHECK_EQ_U64(r.events, p.events);
	CHECK(r.per_thread == p.per_thread);
	CHECK(r.no_flat_twins == p.no_flat_twins);
	CHECK(!strcmp(r.kernel_filter, "vadd* gemm_?"));
	CHECK_EQ_U64(r.map_cnt, 2);
	for (int i = 0; i < 2; i++) {
		CHECK(!strcmp(r.maps[i].name, p.maps[i].name));
		CHECK(!strcmp(r.maps[i].shm, p.maps[i].shm));
		CHECK_EQ_U64(r.maps[i].type, p.maps[i].type);
		CHECK_EQ_U64(r.maps[i].key_size, p.maps[i].key_size);
		CHECK_EQ_U64(r.maps[i].value_size, p.maps[i].value_size);
		CHECK_EQ_U64(r.maps[i].max_entries, p.maps[i].max_entries);
		CHECK_EQ_U64(r.maps[i].nr_slots, p.maps[i].nr_slots);
		CHECK_EQ_U64(r.maps[i].max_record, p.maps[i].max_record);
	}
	CHECK_EQ_U64(r.ptx_len, p.ptx_len);
	CHECK(r.ptx && !memcmp(r.ptx, probe_ptx, p.ptx_len) && r.ptx[r.ptx_len] == '\0');
	{
		uint8_t zero[32] = { 0 };

		CHECK(memcmp(r.hash, zero, 32));
	}
	gx_pack_free(&r);
	CHECK(r.ptx == NULL);
	/* The temp file is gone; only "pack" is left. */
	snprintf(path, sizeof(path), "test $(ls -A %s | wc -l) -eq 1 && test -f %s/pack", dir, dir);
	CHECK_EQ_INT(system(path), 0);

	/* Empty filter, no maps, no PTX. */
	memset(&p, 0, sizeof(p));
	p.per_thread = true;
	CHECK_EQ_INT(gx_pack_write(dir, &p), 0);
	CHECK_EQ_INT(gx_pack_read(dir, &r, err, sizeof(err)), 0);
	CHECK(r.per_thread && r.kernel_filter[0] == '\0' && r.map_cnt == 0 && r.ptx_len == 0);
	CHECK(r.ptx && r.ptx[0] == '\0');
	gx_pack_free(&r);
}

static void test_hash(void)
{
	struct gx_pack p;
	uint8_t base[32], h[32], again[32];
	char ptx2[sizeof(probe_ptx)];

	sample(&p);
	CHECK_EQ_INT(hash_of(&p, base), 0);
	CHECK_EQ_INT(hash_of(&p, again), 0);
	CHECK(!memcmp(base, again, 32));

#define CHANGED(stmt)                                         \
	do {                                                  \
		sample(&p);                                   \
		stmt;                                         \
		CHECK_EQ_INT(hash_of(&p, h), 0);              \
		test_checks++;                                \
		if (!memcmp(h, base, 32))                     \
			test_fail(__FILE__, __LINE__, "hash unchanged by %s", #stmt); \
	} while (0)
	CHANGED(p.events |= 1u << GX_PROBE_LOAD);
	CHANGED(p.per_thread = true);
	CHANGED(p.no_flat_twins = true);
	CHANGED(p.kernel_filter[0] = 'V');
	CHANGED(p.map_cnt = 1);
	CHANGED(p.maps[1].name[0] = 'E');
	CHANGED(p.maps[0].type = 1);
	CHANGED(p.maps[0].key_size = 8);
	CHANGED(p.maps[0].value_size = 16);
	CHANGED(p.maps[0].max_entries = 1);
	CHANGED(p.maps[1].nr_slots = 64);
	CHANGED(p.maps[1].max_record = 12001);
	CHANGED(p.ptx_len--);
	memcpy(ptx2, probe_ptx, sizeof(ptx2));
	ptx2[5] = 'X';
	CHANGED(p.ptx = ptx2);
#undef CHANGED
	/* The shm names change every run; the code does not: same hash. */
	sample(&p);
	snprintf(p.maps[0].shm, 128, "/gpuext-99999-counts");
	CHECK_EQ_INT(hash_of(&p, h), 0);
	CHECK(!memcmp(h, base, 32));
}

static void write_raw(const char *text, size_t len)
{
	char path[600];
	FILE *f;

	snprintf(path, sizeof(path), "%s/pack", dir);
	f = fopen(path, "w");
	if (!f) {
		test_fail(__FILE__, __LINE__, "cannot write %s", path);
		return;
	}
	fwrite(text, 1, len, f);
	fclose(f);
}

static char *good_text(size_t *len)
{
	struct gx_pack p;
	char path[600];
	char *buf;
	FILE *f;

	sample(&p);
	CHECK_EQ_INT(gx_pack_write(dir, &p), 0);
	snprintf(path, sizeof(path), "%s/pack", dir);
	f = fopen(path, "r");
	buf = calloc(1, 65536);
	*len = f ? fread(buf, 1, 65535, f) : 0;
	if (f)
		fclose(f);
	return buf;
}

/* Replaces the first @from in the good pack with @to and expects @rc + @msg. */
static void expect_bad(const char *from, const char *to, int rc, const char *msg, int line)
{
	size_t len;
	char *t = good_text(&len), *at = strstr(t, from), *out;
	struct gx_pack r;
	char err[256] = "";
	int got;

	if (!at) {
		test_fail(__FILE__, line, "\"%s\" not in the sample pack", from);
		free(t);
		return;
	}
	out = calloc(1, len + strlen(to) + 1);
	memcpy(out, t, (size_t)(at - t));
	strcpy(out + (at - t), to);
	strcat(out, at + strlen(from));
	write_raw(out, strlen(out));
	got = gx_pack_read(dir, &r, err, sizeof(err));
	test_checks++;
	if (got != rc || !strstr(err, msg))
		test_fail(__FILE__, line, "replacing \"%s\": rc %d err \"%s\", want %d \"%s\"", from,
			  got, err, rc, msg);
	CHECK(r.ptx == NULL);
	free(out);
	free(t);
}

static void test_malformed(void)
{
	struct gx_pack r, p;
	char err[256] = "", sub[600];
	size_t len;
	char *t;

	/* Missing. */
	snprintf(sub, sizeof(sub), "%s/none", dir);
	CHECK(!mkdir(sub, 0700));
	CHECK_EQ_INT(gx_pack_read(sub, &r, err, sizeof(err)), -ENOENT);
	CHECK_STR_CONTAINS(err, "missing");

	expect_bad("gpuext-pack 4", "gpuext-pack 3", -EPROTO, "bad version 3 (this library reads version 4)", __LINE__);
	expect_bad("gpuext-pack 4", "ELF", -EINVAL, "not a gpuext pack", __LINE__);
	expect_bad("maps 2", "maps 17", -E2BIG, "map count 17 too high (at most 16)", __LINE__);
	expect_bad("maps 2", "maps 3", -EINVAL, "expected map line 3 of 3", __LINE__);
	expect_bad("ptx 61\n", "ptx 62\n", -EINVAL, "PTX length mismatch: header says 62 bytes, file has 61 (truncated)", __LINE__);
	expect_bad("ptx 61\n", "ptx 60\n", -EINVAL, "file has 61 (trailing bytes)", __LINE__);
	expect_bad("events 3", "events 3x", -EINVAL, ":3: expected \"events <u32>\"", __LINE__);
	expect_bad("events 3", "events 99", -EINVAL, "unknown probe events 0x63", __LINE__);
	expect_bad("events 3", "events 99999999999", -EINVAL, "expected \"events", __LINE__);
	expect_bad("per_thread 0", "per_thread 2", -EINVAL, "per_thread 0|1", __LINE__);
	expect_bad("flat_twins 1", "flat_twins 2", -EINVAL, "flat_twins 0|1", __LINE__);
	expect_bad("flat_twins 1", "flat_twins", -EINVAL, "flat_twins 0|1", __LINE__);
	/* the twins change the spliced code: the hash covers them */
	expect_bad("flat_twins 1", "flat_twins 0", -EBADMSG, "hash mismatch", __LINE__);
	expect_bad("kernel_filter 12 ", "kernel_filter 13 ", -EINVAL, "kernel_filter length does not match", __LINE__);
	expect_bad(" 1024 1 0\n", " 1024 1\n", -EINVAL, "map counts: expected 6 numbers", __LINE__);
	expect_bad(" 1024 1 0\n", " 1024 0 0\n", -EINVAL, "map counts: nr_slots 0", __LINE__);
	expect_bad(" 132 12000\n", " 132 12000 7\n", -EINVAL, "map events: expected 6 numbers", __LINE__);
	expect_bad("map counts ", "map  ", -EINVAL, "map name or shm name missing", __LINE__);
	expect_bad("per_thread 0", "per_thread 1", -EBADMSG, "hash mismatch", __LINE__);
	expect_bad("gpuext_probe_entry", "gpuext_probe_entrx", -EBADMSG, "hash mismatch", __LINE__);

	/* Every truncation of a good pack is refused. */
	t = good_text(&len);
	for (size_t n = 0; n < len; n++) {
		write_raw(t, n);
		CHECK(gx_pack_read(dir, &r, err, sizeof(err)) < 0 && err[0]);
	}
	write_raw(t, len);
	CHECK_EQ_INT(gx_pack_read(dir, &r, err, sizeof(err)), 0);
	gx_pack_free(&r);
	free(t);

	/* What the writer refuses: names that would break the line format. */
	sample(&p);
	snprintf(p.maps[0].name, 64, "two words");
	CHECK_EQ_INT(gx_pack_write(dir, &p), -EINVAL);
	sample(&p);
	p.map_cnt = GX_PACK_MAX_MAPS + 1;
	CHECK_EQ_INT(gx_pack_write(dir, &p), -EINVAL);
	sample(&p);
	snprintf(p.kernel_filter, sizeof(p.kernel_filter), "a\nb");
	CHECK_EQ_INT(gx_pack_write(dir, &p), -EINVAL);
	snprintf(sub, sizeof(sub), "%s/absent/dir", dir);
	sample(&p);
	CHECK_EQ_INT(gx_pack_write(sub, &p), -ENOENT);
}

int main(void)
{
	char cmd[600];

	snprintf(dir, sizeof(dir), "/tmp/gpuext-pack-test-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_roundtrip();
	test_hash();
	test_malformed();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		printf("test_nv_pack: could not remove %s\n", dir);
	return test_done("test_nv_pack");
}
#else
int main(void)
{
	printf("test_nv_pack: SKIP: not linked with gpuext_nv_image; hal/nvidia/nvidia.cmake "
	       "must include hal/nvidia/image.cmake\n");
	return 77;
}
#endif

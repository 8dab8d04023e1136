// SPDX-License-Identifier: Apache-2.0
/*
 * Content hashes and the on-disk JIT cache (hal/nvidia/hash.c, cache.c):
 * SHA-256 against the FIPS 180-4 examples and coreutils' sha256sum, FNV-1a
 * against the published vectors; cache keys that move with each input; a
 * put/get round trip; corrupt entries rejected; concurrent writers that
 * never let a reader see half an entry; clear errors for unusable dirs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"

#ifdef GPUEXT_NV_IMAGE_LINKED
#include "nvidia/nvprobe.h"

static void check_sha(const void *data, size_t len, const char *want, int line)
{
	uint8_t d[32];
	char hex[65];

	gx_sha256(data, len, d);
	gx_hex32(d, hex);
	test_checks++;
	if (strcmp(hex, want))
		test_fail(__FILE__, line, "sha256 of %zu bytes = %s, want %s", len, hex, want);
}

static void test_sha256(void)
{
	static const char m448[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	struct gx_sha256 s;
	uint8_t d[32], d2[32];
	char *mil = malloc(1000000), hex[65], cmd[256], line[128];
	uint8_t *buf = malloc(5000);
	uint32_t seed = 7;

	/* FIPS 180-4 / NIST example values. */
	check_sha("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", __LINE__);
	check_sha(m448, strlen(m448),
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", __LINE__);
	memset(mil, 'a', 1000000);
	check_sha(mil, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
		  __LINE__);
	check_sha("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", __LINE__);
	/* Streaming in odd pieces gives the one-shot result. */
	gx_sha256_init(&s);
	for (size_t i = 0, step = 1; i < 1000000; i += step, step = step * 7 % 131 + 1)
		gx_sha256_update(&s, mil + i, i + step > 1000000 ? 1000000 - i : step);
	gx_sha256_final(&s, d);
	gx_sha256(mil, 1000000, d2);
	CHECK(!memcmp(d, d2, 32));
	free(mil);

	/* Lengths around the padding boundaries (55, 56, 63, 64, ...) against sha256sum. */
	for (size_t i = 0; i < 5000; i++) {
		seed = seed * 1103515245 + 12345;
		buf[i] = (uint8_t)(seed >> 16);
	}
	for (size_t len = 0; len < 300; len += len < 130 ? 1 : 37) {
		char path[] = "/tmp/gpuext-sha-XXXXXX";
		int fd = mkstemp(path);
		FILE *p;

		CHECK(fd >= 0 && write(fd, buf, len) == (ssize_t)len);
		close(fd);
		snprintf(cmd, sizeof(cmd), "sha256sum %s", path);
		p = popen(cmd, "r");
		CHECK(p && fgets(line, sizeof(line), p));
		if (p)
			pclose(p);
		unlink(path);
		line[64] = '\0';
		gx_sha256(buf, len, d);
		gx_hex32(d, hex);
		test_checks++;
		if (strcmp(hex, line))
			test_fail(__FILE__, __LINE__, "len %zu: %s, sha256sum says %s", len, hex, line);
	}
	free(buf);
}

static void test_fnv(void)
{
	/* FNV-1a 64 test vectors (Fowler/Noll/Vo). */
	CHECK_EQ_U64(gx_kernel_id("", 0), 0xcbf29ce484222325ull);
	CHECK_EQ_U64(gx_kernel_id("a", 1), 0xaf63dc4c8601ec8cull);
	CHECK_EQ_U64(gx_kernel_id("foobar", 6), 0x85944171f73967e8ull);
	/* Only @len bytes count. */
	CHECK_EQ_U64(gx_kernel_id("foobarbaz", 6), 0x85944171f73967e8ull);
}

static void test_keys(void)
{
	static const char ptx[] = ".version 8.0\n.target sm_80\n";
	uint8_t ph[32] = { 1 }, ph2[32] = { 2 }, k[6][32];

	gx_cache_key(ptx, sizeof(ptx) - 1, ph, 90, 12080, k[0]);
	gx_cache_key(ptx, sizeof(ptx) - 1, ph, 90, 12080, k[1]);
	CHECK(!memcmp(k[0], k[1], 32)); /* deterministic */
	gx_cache_key(ptx, sizeof(ptx) - 2, ph, 90, 12080, k[1]); /* module */
	gx_cache_key(ptx, sizeof(ptx) - 1, ph2, 90, 12080, k[2]); /* pack */
	gx_cache_key(ptx, sizeof(ptx) - 1, ph, 80, 12080, k[3]); /* sm */
	gx_cache_key(ptx, sizeof(ptx) - 1, ph, 90, 12090, k[4]); /* driver */
	gx_cache_key("", 0, ph, 90, 12080, k[5]);
	for (int i = 0; i < 6; i++) {
		for (int j = i + 1; j < 6; j++)
			CHECK(memcmp(k[i], k[j], 32));
	}
}

static char dir[256];

static void set_dir(const char *sub)
{
	char d[512];

	snprintf(d, sizeof(d), "%s/%s", dir, sub);
	setenv("GPUEXT_CACHE_DIR", d, 1);
}

static void test_roundtrip(void)
{
	uint8_t key[32], key2[32], ph[32] = { 0 };
	char path[700], hex[65];
	struct stat st;
	void *data = NULL;
	size_t len = 0;
	int fd;

	/* Nested and absent: created 0700 on the first put. */
	set_dir("a/b/cache");
	gx_cache_key("x", 1, ph, 90, 1, key);
	gx_cache_key("y", 1, ph, 90, 1, key2);
	CHECK_EQ_INT(gx_cache_get(key, ".cubin", &data, &len), -ENOENT);
	CHECK(data == NULL && len == 0);
	CHECK_EQ_INT(gx_cache_put(key, ".cubin", "hello cubin", 11), 0);
	snprintf(path, sizeof(path), "%s/a/b/cache", dir);
	CHECK(!stat(path, &st) && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
	CHECK_EQ_INT(gx_cache_get(key, ".cubin", &data, &len), 0);
	CHECK_EQ_U64(len, 11);
	CHECK(data && !memcmp(data, "hello cubin", 11));
	free(data);
	/* Suffix and key are part of the name. */
	CHECK_EQ_INT(gx_cache_get(key, ".ptx", &data, &len), -ENOENT);
	CHECK_EQ_INT(gx_cache_get(key2, ".cubin", &data, &len), -ENOENT);
	/* The file is named by the hex key. */
	gx_hex32(key, hex);
	snprintf(path, sizeof(path), "%s/a/b/cache/%s.cubin", dir, hex);
	CHECK(!stat(path, &st) && st.st_size == 56 + 11);
	/* Overwrite; empty entries are fine. */
	CHECK_EQ_INT(gx_cache_put(key, ".cubin", "", 0), 0);
	CHECK_EQ_INT(gx_cache_get(key, ".cubin", &data, &len), 0);
	CHECK_EQ_U64(len, 0);
	free(data);
	CHECK_EQ_INT(gx_cache_put(key, ".cubin", "hello cubin", 11), 0);

	/* Corruption: a flipped data byte, a short file, an entry under another key's name. */
	fd = open(path, O_WRONLY);
	CHECK(fd >= 0 && pwrite(fd, "J", 1, 56) == 1);
	close(fd);
	CHECK_EQ_INT(gx_cache_get(key, ".cubin", &data, &len), -EBADMSG);
	CHECK(data == NULL);
	CHECK_EQ_INT(gx_cache_put(key, ".cubin", "hello cubin", 11), 0);
	CHECK(!truncate(path, 56 + 5));
	CHECK_EQ_INT(gx_cache_get(key, ".cubin", &data, &len), -EBADMSG);
	CHECK(!truncate(path, 10));
	CHECK_EQ_INT(gx_cache_get(key, ".cubin", &data, &len), -EBADMSG);
	CHECK_EQ_INT(gx_cache_put(key2, ".cubin", "other", 5), 0);
	{
		char path2[700], hex2[65];

		gx_hex32(key2, hex2);
		snprintf(path2, sizeof(path2), "%s/a/b/cache/%s.cubin", dir, hex2);
		CHECK(!rename(path2, path));
	}
	CHECK_EQ_INT(gx_cache_get(key, ".cubin", &data, &len), -EBADMSG);

	/* Bad suffixes never leave the directory. */
	CHECK_EQ_INT(gx_cache_put(key, "/../../x", "a", 1), -EINVAL);
	CHECK_EQ_INT(gx_cache_get(key, "/x", &data, &len), -EINVAL);

	/* XDG_CACHE_HOME, then HOME, when GPUEXT_CACHE_DIR is unset. */
	unsetenv("GPUEXT_CACHE_DIR");
	snprintf(path, sizeof(path), "%s/xdg", dir);
	setenv("XDG_CACHE_HOME", path, 1);
	CHECK_EQ_INT(gx_cache_put(key, ".ptx", "p", 1), 0);
	gx_hex32(key, hex);
	snprintf(path, sizeof(path), "%s/xdg/gpuext/%s.ptx", dir, hex);
	CHECK(!access(path, R_OK));
	unsetenv("XDG_CACHE_HOME");
	snprintf(path, sizeof(path), "%s/home", dir);
	setenv("HOME", path, 1);
	CHECK_EQ_INT(gx_cache_put(key, ".ptx", "p", 1), 0);
	snprintf(path, sizeof(path), "%s/home/.cache/gpuext/%s.ptx", dir, hex);
	CHECK(!access(path, R_OK));
}

static void test_unwritable(void)
{
	uint8_t key[32] = { 9 };
	char path[700];
	FILE *f;

	/* A path through a regular file: ENOTDIR, whoever we run as. */
	snprintf(path, sizeof(path), "%s/plainfile", dir);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (f)
		fclose(f);
	set_dir("plainfile/cache");
	CHECK_EQ_INT(gx_cache_put(key, ".ptx", "x", 1), -ENOTDIR);
	/* A read-only directory: EACCES, unless we are root (who may write anyway). */
	snprintf(path, sizeof(path), "%s/ro", dir);
	CHECK(!mkdir(path, 0500));
	set_dir("ro");
	if (geteuid() != 0) {
		CHECK_EQ_INT(gx_cache_put(key, ".ptx", "x", 1), -EACCES);
	} else {
		/* Root writes anywhere: try as nobody in a child instead. */
		pid_t pid = fork();
		int status = -1;

		if (pid == 0) {
			if (setgid(65534) || setuid(65534))
				_exit(2);
			_exit(gx_cache_put(key, ".ptx", "x", 1) == -EACCES ? 0 : 1);
		}
		waitpid(pid, &status, 0);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	chmod(path, 0700);
}

/*
 * Writers in several processes put entries of different lengths (each byte
 * says which writer and which round) under one key while a reader gets it
 * in a loop: every successful read must be one whole entry.
 */
static void test_concurrent(void)
{
	enum { WRITERS = 4, ROUNDS = 150 };
	uint8_t key[32] = { 0x42 };
	pid_t pids[WRITERS];
	int status[WRITERS];
	bool done[WRITERS] = { false };
	unsigned hits = 0, misses = 0, torn = 0;

	set_dir("conc");
	for (int w = 0; w < WRITERS; w++) {
		pids[w] = fork();
		if (pids[w] == 0) {
			uint8_t *buf = malloc(70000);
			int bad = 0;

			for (int r = 0; r < ROUNDS; r++) {
				size_t len = 1000 + (size_t)w * 15000 + (size_t)r * 37;

				memset(buf, 'A' + w, len);
				buf[0] = (uint8_t)r;
				bad |= gx_cache_put(key, ".bin", buf, len) != 0;
			}
			free(buf);
			_exit(bad);
		}
	}
	/* Read for as long as any writer runs (and at least 200 times). */
	for (int i = 0, alive = WRITERS; alive || i < 200; i++) {
		void *data = NULL;
		size_t len = 0;
		int rc = gx_cache_get(key, ".bin", &data, &len);

		if (i % 64 == 0) {
			alive = 0;
			for (int w = 0; w < WRITERS; w++) {
				if (!done[w] && waitpid(pids[w], &status[w], WNOHANG) == pids[w])
					done[w] = true;
				alive += !done[w];
			}
		}
		if (rc == -ENOENT) {
			misses++;
			continue;
		}
		if (rc) {
			torn++;
			continue;
		}
		{
			uint8_t *p = data, c = p[1];
			int w = c - 'A', r = p[0];

			if (w < 0 || w >= WRITERS || len != 1000 + (size_t)w * 15000 + (size_t)r * 37)
				torn++;
			for (size_t k = 1; k < len; k++) {
				if (p[k] != c) {
					torn++;
					break;
				}
			}
		}
		hits++;
		free(data);
	}
	for (int w = 0; w < WRITERS; w++)
		CHECK(done[w] && WIFEXITED(status[w]) && WEXITSTATUS(status[w]) == 0);
	printf("test_nv_cache: concurrent: %u whole reads, %u misses, %u torn\n", hits, misses, torn);
	CHECK_EQ_INT(torn, 0);
	CHECK(hits > 0);
	/* No temp files left behind. */
	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "test $(ls -A %s/conc | wc -l) -eq 1", dir);
		CHECK_EQ_INT(system(cmd), 0);
	}
}

int main(void)
{
	char cmd[600];

	snprintf(dir, sizeof(dir), "/tmp/gpuext-cache-test-XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_sha256();
	test_fnv();
	test_keys();
	test_roundtrip();
	test_unwritable();
	test_concurrent();
	snprintf(cmd, sizeof(cmd), "chmod -R u+rwx %s; rm -rf %s", dir, dir);
	if (system(cmd))
		printf("test_nv_cache: could not remove %s\n", dir);
	return test_done("test_nv_cache");
}
#else
int main(void)
{
	printf("test_nv_cache: SKIP: not linked with gpuext_nv_image; hal/nvidia/nvidia.cmake "
	       "must include hal/nvidia/image.cmake\n");
	return 77;
}
#endif

// SPDX-License-Identifier: Apache-2.0
/*
 * On-disk cache of JIT results (spliced PTX, cubins), so a second run of the
 * same application attaches without splicing or JIT again.
 *
 * One file per entry, named by the hex key plus the caller's suffix. Many
 * processes (every rank of an MPI job, every worker of a data loader) may
 * fill the same entry at once, so entries are written to a private temp
 * file and renamed into place: a reader sees the old file, the new file or
 * none, never a mix. A crash can still leave a short or zeroed file behind
 * (we do not fsync: losing an entry only costs a JIT), so each entry
 * carries a header with its length, a checksum and its key, and a reader
 * rejects anything that does not match.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "decompress.h"
#include "nvprobe.h"

/* GX_SPLICE_VERSION (nvprobe.h) is in every key: bumping it invalidates every cached entry. */

#define ENTRY_MAGIC "GXCACHE1"
#define ENTRY_HDR 56 /* magic 8, length 8, xxh64 8, key 32 */
#define ENTRY_MAX (1ull << 31)

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

void gx_cache_key(const void *module_ptx, size_t ptx_len, const uint8_t pack_hash[32],
		  unsigned sm, int driver_version, uint8_t key[32])
{
	static const char domain[] = "gpuext-jit-cache-key 1";
	struct gx_sha256 s;
	uint8_t b[8];

	/* Every field is fixed-size or length-prefixed, so no two inputs collide by shifting. */
	gx_sha256_init(&s);
	gx_sha256_update(&s, domain, sizeof(domain));
	put_le64(b, ptx_len);
	gx_sha256_update(&s, b, 8);
	gx_sha256_update(&s, module_ptx, ptx_len);
	gx_sha256_update(&s, pack_hash, 32);
	put_le32(b, sm);
	gx_sha256_update(&s, b, 4);
	put_le32(b, (uint32_t)driver_version);
	gx_sha256_update(&s, b, 4);
	put_le32(b, GX_SPLICE_VERSION);
	gx_sha256_update(&s, b, 4);
	gx_sha256_final(&s, key);
}

/* mkdir -p with mode 0700 for what we create; an existing directory is fine. */
static int mkdir_p(char *path)
{
	char *p;

	for (p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0700) && errno != EEXIST) {
			int rc = -errno;

			*p = '/';
			return rc;
		}
		*p = '/';
	}
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

static int cache_dir(char *buf, size_t len)
{
	const char *d = getenv("GPUEXT_CACHE_DIR"), *x, *home;
	int n;

	if (d && *d) {
		n = snprintf(buf, len, "%s", d);
	} else if ((x = getenv("XDG_CACHE_HOME")) && *x == '/') {
		n = snprintf(buf, len, "%s/gpuext", x);
	} else if ((home = getenv("HOME")) && *home) {
		n = snprintf(buf, len, "%s/.cache/gpuext", home);
	} else {
		return -ENOENT;
	}
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

static int entry_path(const uint8_t key[32], const char *suffix, char *buf, size_t len,
		      size_t *dir_len)
{
	char hex[65];
	size_t d;
	int rc;

	/* The suffix names a kind of entry (".ptx", ".cubin"); it must not leave the directory. */
	if (!suffix || strchr(suffix, '/') || strlen(suffix) > 32)
		return -EINVAL;
	rc = cache_dir(buf, len);
	if (rc)
		return rc;
	d = strlen(buf);
	gx_hex32(key, hex);
	if ((size_t)snprintf(buf + d, len - d, "/%s%s", hex, suffix) >= len - d)
		return -ENAMETOOLONG;
	if (dir_len)
		*dir_len = d;
	return 0;
}

static int write_all(int fd, const void *data, size_t len)
{
	const uint8_t *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n, len -= (size_t)n;
	}
	return 0;
}

int gx_cache_put(const uint8_t key[32], const char *suffix, const void *data, size_t len)
{
	char path[PATH_MAX], tmp[PATH_MAX + 64];
	uint8_t hdr[ENTRY_HDR];
	struct timespec ts;
	size_t dlen;
	int fd, rc;

	if (!data && len)
		return -EINVAL;
	if (len > ENTRY_MAX)
		return -E2BIG;
	rc = entry_path(key, suffix, path, sizeof(path), &dlen);
	if (rc)
		return rc;
	path[dlen] = '\0';
	rc = mkdir_p(path);
	path[dlen] = '/';
	if (rc)
		return rc;

	/* A name no other writer uses (process, thread, clock), created exclusively. */
	for (int attempt = 0;; attempt++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		snprintf(tmp, sizeof(tmp), "%.*s/.tmp.%d.%d.%ld.%ld.%d", (int)dlen, path,
			 (int)getpid(), (int)gettid(), (long)ts.tv_sec, ts.tv_nsec, attempt);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd >= 0)
			break;
		if (errno != EEXIST || attempt == 8)
			return -errno;
	}
	memcpy(hdr, ENTRY_MAGIC, 8);
	put_le64(hdr + 8, len);
	put_le64(hdr + 16, gx_xxh64(data, len, 0));
	memcpy(hdr + 24, key, 32);
	rc = write_all(fd, hdr, sizeof(hdr));
	if (!rc)
		rc = write_all(fd, data, len);
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

int gx_cache_get(const uint8_t key[32], const char *suffix, void **data, size_t *len)
{
	char path[PATH_MAX];
	uint8_t hdr[ENTRY_HDR];
	uint8_t *buf = NULL;
	struct stat st;
	uint64_t want_len;
	size_t got = 0;
	int fd, rc;

	*data = NULL;
	*len = 0;
	rc = entry_path(key, suffix, path, sizeof(path), NULL);
	if (rc)
		return rc;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		rc = -errno;
		goto out;
	}
	/* An entry that does not check out is as good as absent, but says why. */
	rc = -EBADMSG;
	if (st.st_size < ENTRY_HDR || pread(fd, hdr, ENTRY_HDR, 0) != ENTRY_HDR)
		goto out;
	want_len = get_le64(hdr + 8);
	if (memcmp(hdr, ENTRY_MAGIC, 8) || memcmp(hdr + 24, key, 32) || want_len > ENTRY_MAX ||
	    (uint64_t)st.st_size != ENTRY_HDR + want_len)
		goto out;
	buf = malloc(want_len ? (size_t)want_len : 1);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	while (got < want_len) {
		ssize_t n = pread(fd, buf + got, (size_t)want_len - got, (off_t)(ENTRY_HDR + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			goto out;
		}
		if (n == 0)
			goto out; /* shrank under us: -EBADMSG */
		got += (size_t)n;
	}
	if (gx_xxh64(buf, got, 0) != get_le64(hdr + 16))
		goto out;
	*data = buf;
	*len = got;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	close(fd);
	return rc;
}

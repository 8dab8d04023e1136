/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the gx_mockgpu VM tests (one static binary each, run by
 * tools/vm inside a guest whose kernel has CONFIG_DEVICE_PRIVATE). Exit
 * codes: 0 pass, 77 skip (the reason printed), anything else fail.
 */
#ifndef GXTEST_H
#define GXTEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../gx_mockgpu_uapi.h"

#define GX_BLOCK (2ull << 20)
#define GX_PAGE 4096ull
#define GX_SKIP 77

static const char *gx_test_name = "gxtest";
static int gx_failures;

#define GX_CHECK(cond, ...)                                                            \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "%s: FAIL %s:%d: %s: ", gx_test_name, __FILE__, \
				__LINE__, #cond);                                      \
			fprintf(stderr, __VA_ARGS__);                                  \
			fputc('\n', stderr);                                           \
			gx_failures++;                                                 \
		}                                                                      \
	} while (0)

static inline void gx_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: FAIL: ", gx_test_name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* Opens a fresh mock GPU instance, or exits 77 when the module is not there. */
static inline int gx_open(void)
{
	int fd = open(GX_MOCKGPU_PATH, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ENOENT || errno == ENODEV || errno == ENXIO) {
			printf("%s: SKIP: no %s (gx_mockgpu.ko creates it only on a kernel with "
			       "CONFIG_DEVICE_PRIVATE, which the stock Debian kernel lacks; "
			       "the VM harness's HMM track has it)\n",
			       gx_test_name, GX_MOCKGPU_PATH);
			exit(GX_SKIP);
		}
		gx_die("open %s: %s", GX_MOCKGPU_PATH, strerror(errno));
	}
	return fd;
}

static inline void gx_config(int fd, unsigned cap, unsigned batch, unsigned flags)
{
	struct gx_config c = { .capacity_blocks = cap, .batch_size = batch, .flags = flags };

	if (ioctl(fd, GX_IOC_CONFIG, &c))
		gx_die("GX_IOC_CONFIG capacity %u: %s", cap, strerror(errno));
}

/* @size bytes of private anonymous memory, 2 MiB aligned. */
static inline uint8_t *gx_map(size_t size, int hugepages)
{
	uint8_t *p = mmap(NULL, size + GX_BLOCK, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t a;

	if (p == MAP_FAILED)
		gx_die("mmap %zu: %s", size, strerror(errno));
	a = ((uintptr_t)p + GX_BLOCK - 1) & ~(uintptr_t)(GX_BLOCK - 1);
	if (a > (uintptr_t)p)
		munmap(p, a - (uintptr_t)p);
	munmap((uint8_t *)a + size, (uintptr_t)p + GX_BLOCK - a);
	if (!hugepages)
		madvise((void *)a, size, MADV_NOHUGEPAGE);
	return (uint8_t *)a;
}

static inline int gx_range_add(int fd, void *cpu, uint64_t gpu_va, uint64_t size, uint32_t tgid)
{
	struct gx_range r = { .cpu_va = (uintptr_t)cpu, .gpu_va = gpu_va, .size = size,
			      .tgid = tgid };

	return ioctl(fd, GX_IOC_RANGE_ADD, &r) ? -errno : 0;
}

/* @count accesses from @va, one page apart; returns faults queued or -errno. */
static inline int gx_access(int fd, uint64_t va, unsigned count, unsigned flags)
{
	struct gx_access a = { .gpu_va = va, .count = count, .flags = flags };

	return ioctl(fd, GX_IOC_ACCESS, &a) ? -errno : (int)a.faults;
}

static inline int gx_dev_rw(int fd, uint64_t va, void *buf, uint64_t len, int write)
{
	struct gx_rw rw = { .gpu_va = va, .len = len, .buf = (uintptr_t)buf };

	return ioctl(fd, write ? GX_IOC_DEV_WRITE : GX_IOC_DEV_READ, &rw) ? -errno : 0;
}

static inline struct gx_block_state gx_block(int fd, uint64_t id)
{
	struct gx_block_state s = { .block_id = id };

	if (ioctl(fd, GX_IOC_BLOCK, &s))
		gx_die("GX_IOC_BLOCK %llu: %s", (unsigned long long)id, strerror(errno));
	return s;
}

static inline struct gx_stats gx_stats(int fd)
{
	struct gx_stats s;

	if (ioctl(fd, GX_IOC_STATS, &s))
		gx_die("GX_IOC_STATS: %s", strerror(errno));
	return s;
}

/* The used list, head first, as "a b c" in @out; returns the count. */
static inline unsigned gx_used_list(int fd, uint64_t base_id, char *out, size_t len)
{
	uint64_t ids[64];
	struct gx_list l = { .which = GX_LIST_USED, .cap = 64, .ids = (uintptr_t)ids };
	size_t o = 0;

	if (ioctl(fd, GX_IOC_LIST, &l))
		gx_die("GX_IOC_LIST: %s", strerror(errno));
	out[0] = 0;
	for (unsigned i = 0; i < l.count && i < 64; i++)
		o += (size_t)snprintf(out + o, o < len ? len - o : 0, "%s%llu", i ? " " : "",
				      (unsigned long long)(ids[i] - base_id));
	return l.count;
}

/* The byte every test expects at @va for generation @gen: cheap, address-dependent. */
static inline uint8_t gx_pattern(uint64_t va, unsigned gen)
{
	uint64_t x = (va >> 3) * 0x9E3779B97F4A7C15ull + gen * 0xBF58476D1CE4E5B9ull;

	return (uint8_t)(x >> 56) ^ (uint8_t)va;
}

#define GX_EVENTS "/sys/kernel/debug/gpuext/events"

/* Empties gpuext.ko's event ring (debugfs; writing clears it). */
static inline void gx_events_clear(void)
{
	FILE *f = fopen(GX_EVENTS, "w");

	if (!f || fputs("x", f) < 0 || fclose(f))
		gx_die("clear %s: %s", GX_EVENTS, strerror(errno));
}

/*
 * The events since the last read, only lines starting with @prefix
 * ("evict ", "prefetch "), joined with ';' into @out.
 */
static inline void gx_events(const char *prefix, char *out, size_t len)
{
	FILE *f = fopen(GX_EVENTS, "r");
	char line[256];
	size_t o = 0;

	if (!f)
		gx_die("open %s: %s", GX_EVENTS, strerror(errno));
	out[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (strncmp(line, prefix, strlen(prefix)))
			continue;
		o += (size_t)snprintf(out + o, o < len ? len - o : 0, "%s%s", o ? ";" : "", line);
	}
	fclose(f);
}

static inline int gx_finish(void)
{
	if (gx_failures) {
		fprintf(stderr, "%s: %d check(s) failed\n", gx_test_name, gx_failures);
		return 1;
	}
	printf("%s: PASS\n", gx_test_name);
	return 0;
}

#endif /* GXTEST_H */

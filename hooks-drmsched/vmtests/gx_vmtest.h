/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers of the hooks-drmsched VM tests (static programs run in the guest
 * by tools/vm): /dev/gx_mocksched wrappers, policy attach/detach through
 * libbpf, checks that count failures. Exit 0 = pass, 77 = skip (with a line
 * saying "SKIP: why"), anything else = fail.
 */
#ifndef GX_VMTEST_H
#define GX_VMTEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "../gx_mocksched_uapi.h"

/* GPU_LEVEL_* of include/gpuext/gpu_ops.h */
#define GX_LEVEL_LOW 0
#define GX_LEVEL_MEDIUM 1
#define GX_LEVEL_HIGH 2

static int gx_failures;

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		printf("FAIL %s:%d: ", __func__, __LINE__);		\
		printf(__VA_ARGS__);					\
		printf("\n");						\
		gx_failures++;						\
	}								\
} while (0)

static inline void gx_skip(const char *why)
{
	printf("SKIP: %s\n", why);
	exit(77);
}

static inline int gx_exit_code(void)
{
	printf("%s: %d failure(s)\n", gx_failures ? "FAILED" : "PASSED", gx_failures);
	return gx_failures ? 1 : 0;
}

static inline uint64_t gx_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Opens the device, skipping the test when the module is not there. */
static inline int gx_open_dev(void)
{
	int fd = open(GX_MS_DEV, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ENOENT)
			gx_skip(GX_MS_DEV " missing: gx_mocksched.ko not loaded");
		printf("FAIL open %s: %s\n", GX_MS_DEV, strerror(errno));
		exit(1);
	}
	return fd;
}

/* ioctl returning 0 or -errno */
static inline int gx_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

/* A new fd with an entity for @comm/@tgid (NULL/0: the caller's) on @ring. */
static inline int gx_entity(unsigned int ring, const char *comm, unsigned int tgid,
			    uint64_t *task_id)
{
	struct gx_ms_create c = { .ring = ring, .tgid = tgid };
	int fd = gx_open_dev(), err;

	if (comm)
		strncpy(c.comm, comm, sizeof(c.comm) - 1);
	err = gx_ioctl(fd, GX_MS_IOC_CREATE, &c);
	if (err) {
		close(fd);
		return err;
	}
	if (task_id)
		*task_id = c.task_id;
	return fd;
}

static inline int gx_submit(int fd, uint64_t duration_ns, uint64_t *seq)
{
	struct gx_ms_submit s = { .duration_ns = duration_ns };
	int err = gx_ioctl(fd, GX_MS_IOC_SUBMIT, &s);

	if (!err && seq)
		*seq = s.seq;
	return err;
}

static inline int gx_wait(int fd, uint64_t seq, struct gx_ms_wait *w)
{
	memset(w, 0, sizeof(*w));
	w->seq = seq;
	w->timeout_ns = 30ll * 1000 * 1000 * 1000;
	return gx_ioctl(fd, GX_MS_IOC_WAIT, w);
}

static inline int gx_info(int fd, struct gx_ms_info *i)
{
	memset(i, 0, sizeof(*i));
	return gx_ioctl(fd, GX_MS_IOC_INFO, i);
}

static inline struct gx_ms_stats gx_stats(void)
{
	struct gx_ms_stats s = { 0 };
	int fd = gx_open_dev();

	if (gx_ioctl(fd, GX_MS_IOC_STATS, &s))
		printf("FAIL GX_MS_IOC_STATS: %s\n", strerror(errno));
	close(fd);
	return s;
}

/*
 * Module-wide counts once freed jobs have drained (free_job runs on a
 * workqueue after completion): polls up to 2 s for live_jobs <= @jobs.
 */
static inline struct gx_ms_stats gx_stats_settled(uint64_t jobs)
{
	struct gx_ms_stats s = gx_stats();

	for (int i = 0; i < 200 && s.live_jobs > jobs; i++) {
		usleep(10000);
		s = gx_stats();
	}
	return s;
}

/* The caller's comm, as the kernel has it. */
static inline void gx_self_comm(char comm[GX_MS_COMM_LEN])
{
	FILE *f = fopen("/proc/self/comm", "r");

	memset(comm, 0, GX_MS_COMM_LEN);
	if (f) {
		if (fgets(comm, GX_MS_COMM_LEN, f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
}

/* An attached struct_ops policy: its object and links. */
struct gx_policy {
	struct bpf_object *obj;
	struct bpf_link *links[4];
	int nlinks;
};

static inline void gx_policy_detach(struct gx_policy *p)
{
	for (int i = 0; i < p->nlinks; i++)
		bpf_link__destroy(p->links[i]);
	bpf_object__close(p->obj);
	memset(p, 0, sizeof(*p));
}

/*
 * Loads @name (a file under $GXVM_POLICIES, or @dir_env's directory) into the
 * kernel and attaches its struct_ops maps. 0, or -errno with a message.
 */
static inline int gx_policy_attach(struct gx_policy *p, const char *dir_env, const char *name)
{
	const char *dir = getenv(dir_env);
	struct bpf_map *map;
	char path[512];
	int err;

	memset(p, 0, sizeof(*p));
	if (!dir)
		dir = strcmp(dir_env, "GXVM_TESTBPF") ? "/gx/policies" : "/gx/testbpf";
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	p->obj = bpf_object__open_file(path, NULL);
	if (!p->obj) {
		err = -errno;
		printf("open %s: %s\n", path, strerror(-err));
		return err;
	}
	err = bpf_object__load(p->obj);
	if (err) {
		printf("load %s: %s (is gpuext.ko loaded?)\n", path, strerror(-err));
		goto err_close;
	}
	bpf_object__for_each_map(map, p->obj) {
		if (bpf_map__type(map) != BPF_MAP_TYPE_STRUCT_OPS)
			continue;
		if (p->nlinks == 4) {
			err = -E2BIG;
			goto err_close;
		}
		p->links[p->nlinks] = bpf_map__attach_struct_ops(map);
		if (!p->links[p->nlinks]) {
			err = -errno;
			printf("attach %s of %s: %s\n", bpf_map__name(map), path, strerror(-err));
			goto err_close;
		}
		p->nlinks++;
	}
	if (!p->nlinks) {
		printf("%s has no struct_ops map\n", path);
		err = -ENOENT;
		goto err_close;
	}
	return 0;
err_close:
	gx_policy_detach(p);
	return err;
}

static inline int gx_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The @pct-th percentile (nearest rank) of @n sorted values. */
static inline uint64_t gx_percentile(const uint64_t *sorted, size_t n, unsigned int pct)
{
	size_t rank = (n * pct + 99) / 100;

	return n ? sorted[rank ? rank - 1 : 0] : 0;
}

#endif /* GX_VMTEST_H */

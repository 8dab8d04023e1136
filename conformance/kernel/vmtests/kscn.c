// SPDX-License-Identifier: Apache-2.0
/*
 * kscn: replays lowered conformance scenarios (gpuext-scn-lower) against the
 * kernel backends inside a VM — memory commands on the hooks-hmm mock GPU
 * (/dev/gx_mockgpu), task commands on the drm_sched mock backend
 * (/dev/gx_mocksched), policies attached through libbpf as struct_ops (the
 * kernel's verifier checks them) — and prints the decisions gpuext.ko logged
 * (debugfs gpuext/events) in the lowered format, so the host compares them
 * with the simulator's (gpuext-scn-diff).
 *
 *   kscn [DIR]      DIR (default $GXVM_DATA/lowered) holds NAME.lowered files
 *
 * Output: per variant the `variant` line, each command line, the events it
 * led to ("ev ..."), then `end`; a variant the kernel cannot run here (no
 * mock GPU on a kernel without DEVICE_PRIVATE, no drm_sched) prints
 * `skipped WHY` before `end`. Task ids in events are translated back to the
 * script's ids. Exit 0 when every variant ran or was skipped for a missing
 * device; 1 when a command failed in an unexpected way; 77 when nothing ran.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "../../../hooks-hmm/gx_mockgpu_uapi.h"
#include "../../../hooks-drmsched/gx_mocksched_uapi.h"

#define EVENTS "/sys/kernel/debug/gpuext/events"
#define MAX_TASKS 32
#define MAX_RANGES 16
#define MAX_WORDS 16

struct task {
	uint64_t id;		/* the script's */
	uint64_t kid;		/* gpuext.ko's */
	int fd;
};

struct range {
	void *mem;
	size_t len;
};

struct replay {
	const char *policy_dirs[3];
	/* gpu line */
	uint32_t capacity, batch, flags;
	bool gpu_seen;
	char unsupported[128];	/* a gpu key the mock device has no equivalent for */
	int gpu_fd;
	struct range ranges[MAX_RANGES];
	unsigned nranges;
	struct task tasks[MAX_TASKS];
	unsigned ntasks;
	struct bpf_object *obj;
	struct bpf_link *link[2];	/* 0 mem, 1 sched */
	char skipped[256];
	int errors;
};

static int write_events_clear(void)
{
	int fd = open(EVENTS, O_WRONLY);

	if (fd < 0)
		return -errno;
	if (write(fd, "\n", 1) != 1) {
		close(fd);
		return -EIO;
	}
	close(fd);
	return 0;
}

/* A gpuext.ko module parameter (the default prefetch rule's knobs). */
static void set_param(const char *name, uint64_t value)
{
	char path[128], buf[32];
	int fd, n;

	snprintf(path, sizeof(path), "/sys/module/gpuext/parameters/%s", name);
	fd = open(path, O_WRONLY);
	n = snprintf(buf, sizeof(buf), "%llu\n", (unsigned long long)value);
	if (fd < 0 || write(fd, buf, (size_t)n) != n)
		printf("# cannot set %s=%llu: %s\n", path, (unsigned long long)value, strerror(errno));
	if (fd >= 0)
		close(fd);
}

static uint64_t script_task(struct replay *r, uint64_t kid, bool *found)
{
	/* newest first: a destroyed task's id may be handed out again */
	for (unsigned i = r->ntasks; i-- > 0;)
		if (r->tasks[i].kid == kid) {
			*found = true;
			return r->tasks[i].id;
		}
	*found = false;
	return kid;
}

/* One kernel event line → the lowered vocabulary (or nothing). */
static void print_event(struct replay *r, char *line)
{
	static const char *const keep[] = { "hook ", "default ", "evict ", "prefetch ", "attr ",
					     "bind-rejected ", "ejected" };
	bool ok = false, found;
	char *p;

	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
		ok |= !strncmp(line, keep[i], strlen(keep[i]));
	if (!ok)
		return;
	if (!strncmp(line, "ejected", 7)) {
		printf("ev ejected\n");
		return;
	}
	/* task ids: "hook task_* id=K", "default task_* id=K", "attr task=K", "bind-rejected K" */
	if ((!strncmp(line, "hook task_", 10) || !strncmp(line, "default task_", 13)) &&
	    (p = strstr(line, " id="))) {
		uint64_t k = strtoull(p + 4, NULL, 10), id = script_task(r, k, &found);

		*p = '\0';
		printf("ev %s id=%llu%s\n", line, (unsigned long long)id,
		       strchr(p + 4, ' ') ? strchr(p + 4, ' ') : "");
		return;
	}
	if (!strncmp(line, "attr task=", 10)) {
		uint64_t k = strtoull(line + 10, &p, 10), id = script_task(r, k, &found);

		printf("ev attr task=%llu%s\n", (unsigned long long)id, p);
		return;
	}
	if (!strncmp(line, "bind-rejected ", 14)) {
		uint64_t id = script_task(r, strtoull(line + 14, NULL, 10), &found);

		printf("ev bind-rejected %llu\n", (unsigned long long)id);
		return;
	}
	printf("ev %s\n", line);
}

static void drain_events(struct replay *r)
{
	FILE *f = fopen(EVENTS, "r");
	char buf[512];

	if (!f) {
		printf("# cannot read %s: %s\n", EVENTS, strerror(errno));
		r->errors++;
		return;
	}
	while (fgets(buf, sizeof(buf), f)) {
		buf[strcspn(buf, "\n")] = '\0';
		print_event(r, buf);
	}
	fclose(f);
}

static bool parse_num(const char *s, uint64_t *out)
{
	char *end;
	uint64_t v, mul = 1;

	if (!s || !*s)
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return false;
	switch (*end) {
	case 'K': case 'k': mul = 1ULL << 10; end++; break;
	case 'M': case 'm': mul = 1ULL << 20; end++; break;
	case 'G': case 'g': mul = 1ULL << 30; end++; break;
	}
	if (*end)
		return false;
	*out = v * mul;
	return true;
}

/* BLOCK:PAGE or a byte address (the .scn grammar). */
static bool parse_addr(const char *s, uint64_t *va)
{
	const char *colon = strchr(s, ':');
	uint64_t b, p;

	if (!colon)
		return parse_num(s, va);
	{
		char blk[32];

		snprintf(blk, sizeof(blk), "%.*s", (int)(colon - s), s);
		if (!parse_num(blk, &b) || !parse_num(colon + 1, &p) || p > 511)
			return false;
	}
	*va = (b << 21) | (p << 12);
	return true;
}

static const char *kv(const char *tok, const char *key)
{
	size_t n = strlen(key);

	return !strncmp(tok, key, n) && tok[n] == '=' ? tok + n + 1 : NULL;
}

static void detach_kind(struct replay *r, int k)
{
	if (r->link[k]) {
		bpf_link__destroy(r->link[k]);
		r->link[k] = NULL;
	}
}

static void policy_close(struct replay *r)
{
	detach_kind(r, 0);
	detach_kind(r, 1);
	bpf_object__close(r->obj);
	r->obj = NULL;
}

static int policy_open(struct replay *r, const char *name)
{
	char path[512];
	struct bpf_map *map;
	int err = -ENOENT;

	for (int i = 0; r->policy_dirs[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s.bpf.o", r->policy_dirs[i], name);
		if (!access(path, R_OK)) {
			err = 0;
			break;
		}
	}
	if (err) {
		printf("# policy %s: no %s.bpf.o in the policy directories\n", name, name);
		return err;
	}
	r->obj = bpf_object__open_file(path, NULL);
	if (!r->obj) {
		err = -errno;
		printf("# policy %s: open: %s\n", name, strerror(-err));
		return err;
	}
	err = bpf_object__load(r->obj);
	if (err) {
		printf("# policy %s: the kernel refused it: %s\n", name, strerror(-err));
		bpf_object__close(r->obj);
		r->obj = NULL;
		return err;
	}
	bpf_object__for_each_map(map, r->obj) {
		const struct btf *btf = bpf_object__btf(r->obj);
		const struct btf_type *t;
		const char *tn;
		int k;

		if (bpf_map__type(map) != BPF_MAP_TYPE_STRUCT_OPS)
			continue;
		t = btf__type_by_id(btf, bpf_map__btf_value_type_id(map));
		tn = t ? btf__name_by_offset(btf, t->name_off) : "";
		k = strstr(tn, "sched") ? 1 : 0;
		r->link[k] = bpf_map__attach_struct_ops(map);
		if (!r->link[k]) {
			err = -errno;
			printf("# policy %s: attaching %s failed: %s\n", name, bpf_map__name(map),
			       strerror(-err));
			policy_close(r);
			return err;
		}
	}
	return 0;
}

static int map_write(struct replay *r, const char *name, uint64_t key, uint64_t value)
{
	struct bpf_map *map = r->obj ? bpf_object__find_map_by_name(r->obj, name) : NULL;
	uint8_t k[64] = { 0 }, v[256] = { 0 };
	uint32_t ks, vs;

	if (!map) {
		printf("# map %s: no such map in the attached policy\n", name);
		return -ENOENT;
	}
	ks = bpf_map__key_size(map);
	vs = bpf_map__value_size(map);
	if (ks > sizeof(k) || vs > sizeof(v))
		return -E2BIG;
	memcpy(k, &key, ks < 8 ? ks : 8);	/* little-endian, as on the simulator */
	memcpy(v, &value, vs < 8 ? vs : 8);
	return bpf_map__update_elem(map, k, ks, v, vs, BPF_ANY) ? -errno : 0;
}

static int gpu_open(struct replay *r)
{
	struct gx_config cfg = { .capacity_blocks = r->capacity, .batch_size = r->batch,
				 .flags = r->flags };

	if (r->gpu_fd >= 0)
		return 0;
	if (r->unsupported[0]) {
		snprintf(r->skipped, sizeof(r->skipped),
			 "the mock GPU has no equivalent of the simulator option %s", r->unsupported);
		return -EOPNOTSUPP;
	}
	r->gpu_fd = open(GX_MOCKGPU_PATH, O_RDWR | O_CLOEXEC);
	if (r->gpu_fd < 0) {
		snprintf(r->skipped, sizeof(r->skipped), "%s: %s (the mock GPU needs "
			 "CONFIG_DEVICE_PRIVATE: the hmm track)", GX_MOCKGPU_PATH, strerror(errno));
		return -ENODEV;
	}
	if (ioctl(r->gpu_fd, GX_IOC_CONFIG, &cfg)) {
		printf("# GX_IOC_CONFIG: %s\n", strerror(errno));
		return -errno;
	}
	return 0;
}

static int cmd_range(struct replay *r, char **w, int n)
{
	uint64_t tgid, va, size;
	struct gx_range rg;
	void *mem;
	size_t len;
	int err;

	if (n != 4 || !parse_num(w[1], &tgid) || !parse_addr(w[2], &va) || !parse_num(w[3], &size))
		return -EINVAL;
	if ((err = gpu_open(r)))
		return err;
	if (r->nranges == MAX_RANGES)
		return -E2BIG;
	/* 2 MiB aligned anonymous memory: over-allocate, then align */
	len = size + (2u << 20);
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return -errno;
	r->ranges[r->nranges++] = (struct range){ .mem = mem, .len = len };
	rg = (struct gx_range){ .cpu_va = ((uintptr_t)mem + (2u << 20) - 1) & ~((uint64_t)(2u << 20) - 1),
				.gpu_va = va, .size = size, .tgid = (uint32_t)tgid };
	memset((void *)(uintptr_t)rg.cpu_va, 0x5a, size);	/* populated: migrations move data */
	return ioctl(r->gpu_fd, GX_IOC_RANGE_ADD, &rg) ? -errno : 0;
}

static int cmd_access(struct replay *r, char **w, int n)
{
	struct gx_access a = { .count = 1 };
	uint64_t tgid, v, va;
	int err;

	if (n < 3 || !parse_num(w[1], &tgid) || !parse_addr(w[2], &va))
		return -EINVAL;
	a.gpu_va = va;
	a.tgid = (uint32_t)tgid;
	for (int i = 3; i < n; i++) {
		const char *x;

		if (!strcmp(w[i], "w"))
			a.flags |= GX_ACC_WRITE;
		else if (!strcmp(w[i], "r"))
			;
		else if ((x = kv(w[i], "count")) && parse_num(x, &v))
			a.count = (uint32_t)v;
		else if ((x = kv(w[i], "step")) && (x[0] == 'P' || x[0] == 'p') && parse_num(x + 1, &v))
			a.step = v << 12;
		else if ((x = kv(w[i], "step")) && parse_num(x, &v))
			a.step = v;
		else
			return -EINVAL;
	}
	if ((err = gpu_open(r)))
		return err;
	return ioctl(r->gpu_fd, GX_IOC_ACCESS, &a) ? -errno : 0;
}

static struct task *task_find(struct replay *r, uint64_t id)
{
	for (unsigned i = 0; i < r->ntasks; i++)
		if (r->tasks[i].id == id)
			return &r->tasks[i];
	return NULL;
}

static int cmd_task(struct replay *r, char **w, int n)
{
	uint64_t id, tgid;
	struct task *t;

	if (n < 3 || !parse_num(w[2], &id))
		return -EINVAL;
	if (!strcmp(w[1], "create")) {
		struct gx_ms_create c = { 0 };
		int fd;

		if (n != 5 || !parse_num(w[3], &tgid) || r->ntasks == MAX_TASKS)
			return -EINVAL;
		fd = open(GX_MS_DEV, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			snprintf(r->skipped, sizeof(r->skipped), "%s: %s (the drm_sched mock needs "
				 "CONFIG_DRM_SCHED: the stock track)", GX_MS_DEV, strerror(errno));
			return -ENODEV;
		}
		c.tgid = (uint32_t)tgid;
		c.task_id = id;		/* the script's id: events need no translation */
		snprintf(c.comm, sizeof(c.comm), "%s", w[4]);
		if (ioctl(fd, GX_MS_IOC_CREATE, &c)) {
			int err = -errno;

			close(fd);
			return err;
		}
		r->tasks[r->ntasks++] = (struct task){ .id = id, .kid = c.task_id, .fd = fd };
		return 0;
	}
	if (!(t = task_find(r, id)))
		return -ENOENT;
	if (!strcmp(w[1], "bind")) {
		struct gx_ms_submit s = { .duration_ns = 1000 };
		struct gx_ms_wait wt = { .timeout_ns = 5000000000LL };

		if (ioctl(t->fd, GX_MS_IOC_SUBMIT, &s))
			return errno == EPERM ? 0 : -errno;	/* a refused bind is a decision */
		wt.seq = s.seq;
		return ioctl(t->fd, GX_MS_IOC_WAIT, &wt) ? -errno : 0;
	}
	if (!strcmp(w[1], "destroy")) {
		if (t->fd >= 0)
			close(t->fd);
		t->fd = -1;
		return 0;
	}
	return -EINVAL;
}

/* Runs one command; 0, or -errno (r->skipped set: the variant cannot run here). */
static int exec_cmd(struct replay *r, char **w, int n)
{
	uint64_t a, b;

	if (!strcmp(w[0], "gpu")) {
		for (int i = 1; i < n; i++) {
			const char *x;

			if ((x = kv(w[i], "capacity")) && parse_num(x, &a))
				r->capacity = (uint32_t)a;
			else if ((x = kv(w[i], "batch")) && parse_num(x, &a))
				r->batch = (uint32_t)a;
			/*
			 * The simulator's prefetch=off turns off the default rule only (a
			 * policy's prefetch hook still runs): on gpuext.ko that is a
			 * threshold no subtree can pass. (The mock's GX_CFG_PREFETCH_OFF
			 * would skip the hook too.)
			 */
			else if ((x = kv(w[i], "prefetch")) && !strcmp(x, "off"))
				set_param("prefetch_threshold", 100);
			else if ((x = kv(w[i], "prefetch")) && !strcmp(x, "on"))
				;
			else if ((x = kv(w[i], "big_page_kb")) && parse_num(x, &a) && a <= 256)
				set_param("big_page_pages", a <= 4 ? 1 : a / 4);
			else
				snprintf(r->unsupported, sizeof(r->unsupported), "%s", w[i]);
		}
		r->gpu_seen = true;
		return 0;
	}
	if (!strcmp(w[0], "policy")) {
		policy_close(r);
		if (n == 2 && strcmp(w[1], "none") && policy_open(r, w[1]))
			printf("ev policy-refused %s\n", w[1]);	/* a difference, not a crash */
		return 0;
	}
	if (!strcmp(w[0], "detach") && n == 2) {
		detach_kind(r, !strcmp(w[1], "sched"));
		return 0;
	}
	if (!strcmp(w[0], "map") && n == 4 && parse_num(w[2], &a) && parse_num(w[3], &b))
		return map_write(r, w[1], a, b);
	if (!strcmp(w[0], "range"))
		return cmd_range(r, w, n);
	if (!strcmp(w[0], "access"))
		return cmd_access(r, w, n);
	if (!strcmp(w[0], "flush") || !strcmp(w[0], "sync"))
		return r->gpu_fd >= 0 && ioctl(r->gpu_fd, GX_IOC_FLUSH) ? -errno : 0;
	if (!strcmp(w[0], "task"))
		return cmd_task(r, w, n);
	return -EINVAL;
}

static void variant_end(struct replay *r)
{
	if (r->gpu_fd >= 0 && !r->skipped[0])
		ioctl(r->gpu_fd, GX_IOC_FLUSH);
	/*
	 * What the script's last command led to; the teardown below (tasks
	 * destroyed, ranges gone) is not part of the script: the simulator
	 * logs none of it.
	 */
	if (!r->skipped[0])
		drain_events(r);
	policy_close(r);
	for (unsigned i = 0; i < r->ntasks; i++)
		if (r->tasks[i].fd >= 0)
			close(r->tasks[i].fd);
	if (r->gpu_fd >= 0)
		close(r->gpu_fd);
	for (unsigned i = 0; i < r->nranges; i++)
		munmap(r->ranges[i].mem, r->ranges[i].len);
	write_events_clear();
	if (r->skipped[0])
		printf("skipped %s\n", r->skipped);
	printf("end\n");
	fflush(stdout);
}

static void variant_begin(struct replay *r, const char *name)
{
	int errors = r->errors;

	/* gpuext.ko's defaults, as the simulator's (a `gpu` line may change them) */
	set_param("prefetch_threshold", 51);
	set_param("big_page_pages", 16);

	*r = (struct replay){ .policy_dirs = { r->policy_dirs[0], r->policy_dirs[1], NULL },
			      .gpu_fd = -1, .errors = errors };
	write_events_clear();
	printf("variant %s\n", name);
}

static int replay_file(struct replay *r, const char *path)
{
	FILE *f = fopen(path, "r");
	char buf[1024];
	bool in = false;

	if (!f) {
		printf("# %s: %s\n", path, strerror(errno));
		return -errno;
	}
	while (fgets(buf, sizeof(buf), f)) {
		char *w[MAX_WORDS], *p = buf, *save = NULL;
		unsigned line;
		int n = 0, err, off = 0;

		buf[strcspn(buf, "\n")] = '\0';
		if (!strncmp(buf, "variant ", 8)) {
			variant_begin(r, buf + 8);
			in = true;
			continue;
		}
		if (!in || !strncmp(buf, "ev ", 3))
			continue;	/* the simulator's decisions: the host compares */
		if (!strcmp(buf, "end")) {
			variant_end(r);
			in = false;
			continue;
		}
		if (sscanf(buf, "%u %n", &line, &off) != 1 || !off)
			continue;
		if (r->skipped[0])
			continue;
		printf("%s\n", buf);
		p = buf + off;
		for (char *t = strtok_r(p, " \t", &save); t && n < MAX_WORDS;
		     t = strtok_r(NULL, " \t", &save))
			w[n++] = t;
		if (!n)
			continue;
		err = exec_cmd(r, w, n);
		if (err && !r->skipped[0]) {
			printf("# line %u: %s: %s\n", line, w[0], strerror(-err));
			r->errors++;
		}
		if (!r->skipped[0])
			drain_events(r);
	}
	fclose(f);
	if (in)
		variant_end(r);
	return 0;
}

/* libbpf's warnings (why the kernel refused a policy) go into the log as comments. */
static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char buf[1024];

	if (level != LIBBPF_WARN)
		return 0;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = '\0';
	return printf("# libbpf: %s\n", buf);
}

static int cmp_names(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int lowered_only(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return n > 8 && !strcmp(d->d_name + n - 8, ".lowered");
}

int main(int argc, char **argv)
{
	const char *data = getenv("GXVM_DATA");
	struct replay r = { .gpu_fd = -1 };
	struct dirent **ents;
	char dir[512];
	int n;

	r.policy_dirs[0] = getenv("GXVM_POLICIES") ? getenv("GXVM_POLICIES") : "/gx/policies";
	r.policy_dirs[1] = getenv("GXVM_TESTBPF") ? getenv("GXVM_TESTBPF") : "/gx/testbpf";
	snprintf(dir, sizeof(dir), "%s", argc > 1 ? argv[1] : data ? data : ".");
	if (argc == 1)
		strncat(dir, "/lowered", sizeof(dir) - strlen(dir) - 1);
	if (access(EVENTS, R_OK)) {
		printf("SKIP: %s: %s (gpuext.ko not loaded?)\n", EVENTS, strerror(errno));
		return 77;
	}
	n = scandir(dir, &ents, lowered_only, cmp_names);
	if (n <= 0) {
		printf("SKIP: no .lowered files in %s\n", dir);
		return 77;
	}
	libbpf_set_print(libbpf_log);
	for (int i = 0; i < n; i++) {
		char path[1024];

		snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
		replay_file(&r, path);
		free(ents[i]);
	}
	free(ents);
	/* leave gpuext.ko's defaults behind: later tests expect them */
	set_param("prefetch_threshold", 51);
	set_param("big_page_pages", 16);
	printf("# kscn: %d unexpected command failure(s)\n", r.errors);
	return r.errors ? 1 : 0;
}

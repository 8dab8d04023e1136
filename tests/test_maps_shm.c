/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Published maps seen from another process: a forked reader interprets the
 * files from their headers alone, snapshots stay consistent while the owner
 * keeps changing the map, stale maps are found and cleaned, garbage files
 * are refused, and `gpuext maps` prints what the maps hold.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "maps_impl.h"
#include "testlib.h"

static struct test_log logbuf;

static struct gpuext_map *mk(struct gpuext_runtime *rt, const char *name, uint32_t type,
			     uint32_t ks, uint32_t vs, uint32_t max)
{
	GPUEXT_OPTS(gpuext_map_def, def, .name = name, .type = type, .key_size = ks,
		    .value_size = vs, .max_entries = max);
	struct gpuext_map *map = NULL;

	CHECK_EQ_INT(gpuext_map__create(rt, &def, &map), 0);
	return map;
}

static void shm_file(char *buf, size_t len, int pid, uint32_t id)
{
	snprintf(buf, len, "/dev/shm/gpuext.%d.%u", pid, id);
}

/* Runs @fn in a child; returns its exit status (0 = all its checks passed). */
static int in_child(int (*fn)(void *), void *arg)
{
	int status = 0;
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn(arg));
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

struct ids {
	uint32_t hash, arr, pc, rb;
};

static int sum_entries(void *user, const void *key, const void *value)
{
	uint64_t *acc = user, k = 0, v;

	memcpy(&k, key, 4);
	memcpy(&v, value, 8);
	acc[0]++;
	acc[1] += k * 1000003 + v;
	return 0;
}

/* The child: everything it knows comes from the files. */
static int child_read(void *arg)
{
	const struct ids *ids = arg;
	struct gpuext_shm_snapshot s;
	struct gpuext_shm_info *v;
	int32_t parent = (int32_t)getppid();
	uint64_t acc[2] = { 0 }, want = 0;
	size_t n;
	int bad = 0;

	if (gpuext_shm_snapshot(parent, ids->hash, &s))
		return 100;
	bad += s.info.type != BPF_MAP_TYPE_HASH || strcmp(s.info.name, "counts") ||
	       s.info.key_size != 4 || s.info.value_size != 8 || s.info.max_entries != 64 ||
	       s.info.count != 10 || s.info.stale;
	gpuext_shm_foreach(&s, sum_entries, acc);
	for (uint64_t k = 0; k < 10; k++)
		want += k * 1000003 + k * k + 5;
	bad += acc[0] != 10 || acc[1] != want;
	gpuext_shm_snapshot_free(&s);

	if (gpuext_shm_snapshot(parent, ids->arr, &s))
		return 101;
	acc[0] = acc[1] = 0;
	gpuext_shm_foreach(&s, sum_entries, acc);
	/* arr: 3 entries, value[i] = 0x1111 * (i + 1) */
	bad += acc[0] != 3 || acc[1] != (0 + 1000003 + 2000006) + 0x1111 * 6;
	gpuext_shm_snapshot_free(&s);

	if (gpuext_shm_snapshot(parent, ids->pc, &s))
		return 102;
	bad += s.info.nr_slots != 3 || s.info.type != BPF_MAP_TYPE_PERCPU_ARRAY;
	{
		const struct gpuext_shm_hdr *h = (const void *)s.buf;
		const uint32_t *e1 = (const void *)(s.buf + h->values_off + h->elem_size);

		/* key 1: slot values 10, 11, 12, 8 bytes apart */
		bad += h->value_stride != 8 || e1[0] != 10 || e1[2] != 11 || e1[4] != 12;
	}
	gpuext_shm_snapshot_free(&s);

	if (gpuext_shm_snapshot(parent, ids->rb, &s))
		return 103;
	bad += s.info.type != BPF_MAP_TYPE_RINGBUF || s.info.max_entries != 4096 ||
	       s.info.prod_pos != 24 + 32 || s.info.cons_pos != 24;
	gpuext_shm_snapshot_free(&s);

	if (gpuext_shm_list(parent, &v, &n))
		return 104;
	bad += n != 4;
	for (size_t i = 0; i < n; i++)
		bad += v[i].stale || v[i].err || v[i].pid != parent;
	if (n == 4)
		bad += strcmp(v[0].name, "counts") || strcmp(v[3].name, "events");
	free(v);
	return bad;
}

static int child_destroy(void *arg)
{
	gpuext_map__destroy(arg);
	return 0;
}

/* Reads snapshots while the parent rewrites the map; each must be consistent. */
static int child_torn(void *arg)
{
	const struct ids *ids = arg;
	int bad = 0, ok = 0;

	for (int i = 0; i < 300; i++) {
		struct gpuext_shm_snapshot s;
		uint64_t acc[2] = { 0 };
		const struct gpuext_shm_hdr *h;
		int err = gpuext_shm_snapshot((int32_t)getppid(), ids->hash, &s);

		if (err == -EAGAIN)
			continue;
		if (err)
			return 100;
		h = (const void *)s.buf;
		/*
		 * The owner swaps keys k and k+10 one operation at a time, so 9 or
		 * 10 are present; a torn copy would disagree with itself: the
		 * count, the in_use flags and the bucket chains must all match.
		 */
		gpuext_shm_foreach(&s, sum_entries, acc);
		bad += acc[0] != h->count || h->count < 9 || h->count > 10;
		for (uint32_t e = 0; e < h->max_entries; e++) {
			const uint8_t *el = s.buf + h->values_off + (uint64_t)e * h->elem_size;
			uint32_t k;
			uint64_t val;

			if (((const struct gpuext_shm_elem *)el)->in_use != 1)
				continue;
			memcpy(&k, el + h->key_off, 4);
			memcpy(&val, el + h->val_off, 8);
			bad += val < (uint64_t)k * k || k >= 20;
		}
		uint64_t chained = 0;
		const uint32_t *buckets = (const void *)(s.buf + h->buckets_off);
		for (uint32_t b = 0; b < h->nr_buckets; b++) {
			for (uint32_t e = buckets[b]; e != GPUEXT_SHM_NIL && chained <= h->max_entries;
			     e = ((const struct gpuext_shm_elem *)(s.buf + h->values_off +
								    (uint64_t)e * h->elem_size))->next) {
				if (e >= h->max_entries) {
					bad++;
					break;
				}
				chained++;
			}
		}
		bad += chained != h->count;
		ok++;
		gpuext_shm_snapshot_free(&s);
	}
	return bad ? 1 : ok == 0 ? 2 : 0;
}

static void test_cross_process(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, opts, .print = test_log_print, .print_user = &logbuf,
		    .publish_maps = true, .nr_cpu_slots = 3);
	struct gpuext_runtime *rt = NULL;
	struct gpuext_map *h, *a, *pc, *rb;
	struct ids ids = { 0 };
	char path[64], path2[64];
	struct stat st;

	CHECK_EQ_INT(gpuext_runtime__new(&opts, &rt), 0);
	if (!rt)
		return;
	h = mk(rt, "counts", BPF_MAP_TYPE_HASH, 4, 8, 64);
	a = mk(rt, "arr", BPF_MAP_TYPE_ARRAY, 4, 8, 3);
	pc = mk(rt, "pc", BPF_MAP_TYPE_PERCPU_ARRAY, 4, 4, 2);
	rb = mk(rt, "events", BPF_MAP_TYPE_RINGBUF, 0, 0, 4096);
	if (!h || !a || !pc || !rb)
		goto out;
	ids = (struct ids){ gpuext_map__id(h), gpuext_map__id(a), gpuext_map__id(pc),
			    gpuext_map__id(rb) };
	for (uint32_t k = 0; k < 10; k++) {
		uint64_t v = (uint64_t)k * k + 5;

		CHECK_EQ_INT(gpuext_map__update(h, &k, &v, BPF_ANY), 0);
	}
	for (uint32_t k = 0; k < 3; k++) {
		uint64_t v = 0x1111 * (k + 1);

		CHECK_EQ_INT(gpuext_map__update(a, &k, &v, BPF_ANY), 0);
	}
	for (uint32_t cpu = 0, k = 1; cpu < 3; cpu++) {
		uint32_t v = 10 + cpu;

		CHECK_EQ_INT(gpuext_map_prog_update(pc, &k, &v, BPF_ANY, cpu), 0);
	}
	CHECK_EQ_INT(gpuext_ringbuf_output(rb, "sixteen bytes..", 16, 0), 0);
	CHECK_EQ_INT(gpuext_ringbuf_output(rb, "twenty-four bytes......", 24, 0), 0);
	/* Consume the first record by hand: cons_pos 24, prod_pos 56. */
	atomic_store(&rb->hdr->cons_pos, 24);

	shm_file(path, sizeof(path), getpid(), ids.hash);
	CHECK_EQ_INT(stat(path, &st), 0);
	CHECK_EQ_INT(st.st_mode & 0777, 0600);	/* map contents are private to the user */

	CHECK_EQ_INT(in_child(child_read, &ids), 0);
	/* A forked child that cleans up its copy must not unlink the parent's names. */
	CHECK_EQ_INT(in_child(child_destroy, a), 0);
	CHECK_EQ_INT(stat(path, &st), 0);
	shm_file(path2, sizeof(path2), getpid(), ids.arr);
	CHECK_EQ_INT(stat(path2, &st), 0);

	/* A writer that keeps changing the map against a reader that snapshots it. */
	pid_t pid = fork();
	if (pid == 0)
		_exit(child_torn(&ids));
	int status = 0;
	for (uint64_t gen = 0; waitpid(pid, &status, WNOHANG) == 0; gen++) {
		uint32_t k = (uint32_t)(gen % 10), k2 = k + 10;
		uint64_t v = (uint64_t)k2 * k2 + gen;

		/* Swap k for k+10 (and back): the count stays 10 between operations. */
		if (gpuext_map__delete(h, &k) == 0) {
			CHECK_EQ_INT(gpuext_map__update(h, &k2, &v, BPF_NOEXIST), 0);
		} else {
			CHECK_EQ_INT(gpuext_map__delete(h, &k2), 0);
			v = (uint64_t)k * k + gen;
			CHECK_EQ_INT(gpuext_map__update(h, &k, &v, BPF_NOEXIST), 0);
		}
	}
	CHECK(WIFEXITED(status));
	CHECK_EQ_INT(WEXITSTATUS(status), 0);

	/* Destroy removes the name from /dev/shm. */
	gpuext_map__destroy(h);
	CHECK_EQ_INT(stat(path, &st), -1);
	CHECK_EQ_INT(errno, ENOENT);
	struct gpuext_shm_snapshot s;
	CHECK_EQ_INT(gpuext_shm_snapshot(getpid(), ids.hash, &s), -ENOENT);
	h = NULL;
out:
	gpuext_map__destroy(h);
	gpuext_map__destroy(a);
	gpuext_map__destroy(pc);
	gpuext_map__destroy(rb);
	gpuext_runtime__free(rt);
	/* Maps left to runtime__free are unlinked too. */
	shm_file(path, sizeof(path), getpid(), ids.rb);
	CHECK_EQ_INT(access(path, F_OK), -1);
}

/* A process that dies with its maps still published. */
static int child_leave_stale(void *arg)
{
	GPUEXT_OPTS(gpuext_runtime_opts, opts, .publish_maps = true);
	GPUEXT_OPTS(gpuext_map_def, def, .name = "leftover", .type = BPF_MAP_TYPE_ARRAY,
		    .key_size = 4, .value_size = 4, .max_entries = 2);
	struct gpuext_runtime *rt;
	struct gpuext_map *m;
	uint32_t k = 1, v = 77;

	(void)arg;
	if (gpuext_runtime__new(&opts, &rt) || gpuext_map__create(rt, &def, &m) ||
	    gpuext_map__update(m, &k, &v, 0))
		return 1;
	return 0;	/* no destroy: _exit() leaves the file behind, like a crash */
}

static void test_stale(void)
{
	struct gpuext_shm_info *v = NULL;
	struct gpuext_shm_snapshot s;
	size_t n = 0;
	pid_t pid = fork();
	int status;

	if (pid == 0)
		_exit(child_leave_stale(NULL));
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK_EQ_INT(gpuext_shm_list(pid, &v, &n), 0);
	CHECK_EQ_INT(n, 1);
	if (n == 1) {
		CHECK(v[0].stale);
		CHECK_EQ_INT(v[0].id, 1);
		CHECK(!strcmp(v[0].name, "leftover"));
	}
	free(v);
	/* A stale map can still be read. */
	CHECK_EQ_INT(gpuext_shm_snapshot(pid, 1, &s), 0);
	CHECK(s.info.stale);
	if (s.buf) {
		const struct gpuext_shm_hdr *h = (const void *)s.buf;

		CHECK_EQ_INT(*(const uint32_t *)(s.buf + h->values_off + 8), 77);
	}
	gpuext_shm_snapshot_free(&s);
	CHECK_EQ_INT(gpuext_shm_clean_stale(pid), 1);
	CHECK_EQ_INT(gpuext_shm_list(pid, &v, &n), 0);
	CHECK_EQ_INT(n, 0);
	free(v);
	/* Our own maps are never stale and never cleaned. */
	CHECK_EQ_INT(gpuext_shm_clean_stale(getpid()), 0);
}

static void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK_EQ_INT(write(fd, data, len), (long long)len);
		close(fd);
	}
}

/* Files that are not (valid) gpuext maps are refused, never followed. */
static void test_garbage(void)
{
	struct gpuext_shm_snapshot s;
	struct gpuext_shm_info *v = NULL;
	char path[64];
	static uint8_t buf[8192];
	struct gpuext_shm_hdr *h = (void *)buf;
	size_t n = 0;
	int32_t me = (int32_t)getpid();

	shm_file(path, sizeof(path), me, 90001);
	write_file(path, "hello", 5);
	CHECK_EQ_INT(gpuext_shm_snapshot(me, 90001, &s), -EBADMSG);
	memset(buf, 0x41, sizeof(buf));
	write_file(path, buf, sizeof(buf));
	CHECK_EQ_INT(gpuext_shm_snapshot(me, 90001, &s), -EBADMSG);

	/* A plausible header whose array runs past the end of the file. */
	memset(buf, 0, sizeof(buf));
	h->magic = GPUEXT_SHM_MAGIC;
	h->version = GPUEXT_SHM_VERSION;
	h->hdr_size = sizeof(*h);
	h->total_size = sizeof(buf);
	h->type = BPF_MAP_TYPE_ARRAY;
	h->key_size = 4;
	h->value_size = 8;
	h->value_stride = 8;
	h->elem_size = 8;
	h->nr_slots = 1;
	h->values_off = sizeof(*h);
	h->max_entries = (sizeof(buf) - sizeof(*h)) / 8;
	write_file(path, buf, sizeof(buf));
	CHECK_EQ_INT(gpuext_shm_snapshot(me, 90001, &s), 0);
	gpuext_shm_snapshot_free(&s);
	h->max_entries++;
	write_file(path, buf, sizeof(buf));
	CHECK_EQ_INT(gpuext_shm_snapshot(me, 90001, &s), -EBADMSG);
	h->max_entries = 1u << 31;
	h->elem_size = 1u << 31;
	h->value_size = 1u << 31;
	h->value_stride = 1u << 31;
	write_file(path, buf, sizeof(buf));
	CHECK_EQ_INT(gpuext_shm_snapshot(me, 90001, &s), -EBADMSG);
	/* Hash whose buckets overlap the elements. */
	h->type = BPF_MAP_TYPE_HASH;
	h->value_size = 8;
	h->value_stride = 8;
	h->key_off = 24;
	h->val_off = 32;
	h->elem_size = 40;
	h->max_entries = 4;
	h->nr_buckets = 1024;
	h->buckets_off = sizeof(*h);
	write_file(path, buf, sizeof(buf));
	CHECK_EQ_INT(gpuext_shm_snapshot(me, 90001, &s), -EBADMSG);
	h->version = 99;
	write_file(path, buf, sizeof(buf));
	CHECK_EQ_INT(gpuext_shm_snapshot(me, 90001, &s), -EPROTO);
	/* Listed, marked with the error, and not removed by clean (we are alive). */
	CHECK_EQ_INT(gpuext_shm_list(me, &v, &n), 0);
	CHECK_EQ_INT(n, 1);
	if (n == 1)
		CHECK_EQ_INT(v[0].err, -EPROTO);
	free(v);
	CHECK_EQ_INT(gpuext_shm_clean_stale(me), 0);
	unlink(path);
	CHECK_EQ_INT(gpuext_shm_snapshot(me, 90001, &s), -ENOENT);
}

/* ---- the gpuext maps command line ---- */

static char gpuext_bin[512];

static int run_cli(const char *args, char *out, size_t len)
{
	char cmd[1024];
	size_t n = 0;
	FILE *f;
	int st;

	snprintf(cmd, sizeof(cmd), "%s maps %s 2>&1", gpuext_bin, args);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	n = fread(out, 1, len - 1, f);
	out[n] = '\0';
	st = pclose(f);
	if (getenv("GPUEXT_TEST_VERBOSE"))
		fprintf(stderr, "$ gpuext maps %s\n%s", args, out);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_cli(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, opts, .print = test_log_print, .print_user = &logbuf,
		    .publish_maps = true, .nr_cpu_slots = 2);
	struct gpuext_runtime *rt = NULL;
	struct gpuext_map *h, *pc, *rb;
	static char out[65536];
	char args[256], line[256];
	int me = (int)getpid();
	const char *dir = GPUEXT_TEST_BPF_DIR;
	size_t dl = strlen(dir) - strlen("/tests/bpf");

	snprintf(gpuext_bin, sizeof(gpuext_bin), "%.*s/gpuext", (int)dl, dir);
	if (access(gpuext_bin, X_OK)) {
		printf("test_maps_shm: %s not built, skipping the CLI checks\n", gpuext_bin);
		return;
	}
	CHECK_EQ_INT(gpuext_runtime__new(&opts, &rt), 0);
	if (!rt)
		return;
	h = mk(rt, "counts", BPF_MAP_TYPE_HASH, 4, 8, 16);
	pc = mk(rt, "per_cpu", BPF_MAP_TYPE_PERCPU_ARRAY, 4, 4, 1);
	rb = mk(rt, "events", BPF_MAP_TYPE_RINGBUF, 0, 0, 8192);
	if (!h || !pc || !rb)
		goto out;
	uint32_t k = 7, z = 0, v32;
	uint64_t v = 0x2a;
	CHECK_EQ_INT(gpuext_map__update(h, &k, &v, BPF_ANY), 0);
	v32 = 5;
	CHECK_EQ_INT(gpuext_map_prog_update(pc, &z, &v32, BPF_ANY, 1), 0);
	CHECK_EQ_INT(gpuext_ringbuf_output(rb, &v, 8, 0), 0);

	snprintf(args, sizeof(args), "list --pid %d", me);
	CHECK_EQ_INT(run_cli(args, out, sizeof(out)), 0);
	CHECK_STR_CONTAINS(out, "PID        ID  NAME                     TYPE            KEY  VALUE        MAX       USED  STATE");
	snprintf(line, sizeof(line), "%-8d %4u  counts                   hash              4      8         16          1  live",
		 me, gpuext_map__id(h));
	CHECK_STR_CONTAINS(out, line);
	snprintf(line, sizeof(line), "%-8d %4u  events                   ringbuf           0      0       8192         16  live",
		 me, gpuext_map__id(rb));
	CHECK_STR_CONTAINS(out, line);

	snprintf(args, sizeof(args), "dump --pid %d counts", me);
	CHECK_EQ_INT(run_cli(args, out, sizeof(out)), 0);
	snprintf(line, sizeof(line), "map %u 'counts' of process %d: hash, key 4 bytes, value 8 bytes, max_entries 16",
		 gpuext_map__id(h), me);
	CHECK_STR_CONTAINS(out, line);
	CHECK_STR_CONTAINS(out, "key: 07 00 00 00  value: 2a 00 00 00 00 00 00 00\n1 entry");

	snprintf(args, sizeof(args), "dump --pid %d %u --json", me, gpuext_map__id(h));
	CHECK_EQ_INT(run_cli(args, out, sizeof(out)), 0);
	CHECK_STR_CONTAINS(out, "\"name\": \"counts\", \"type\": \"hash\"");
	CHECK_STR_CONTAINS(out, "{\"key\": \"07000000\", \"value\": \"2a00000000000000\"}");

	snprintf(args, sizeof(args), "dump --pid %d per_cpu", me);
	CHECK_EQ_INT(run_cli(args, out, sizeof(out)), 0);
	CHECK_STR_CONTAINS(out, "key: 00 00 00 00\n  cpu 0: 00 00 00 00\n  cpu 1: 05 00 00 00\n");
	snprintf(args, sizeof(args), "dump --pid %d per_cpu --json", me);
	CHECK_EQ_INT(run_cli(args, out, sizeof(out)), 0);
	CHECK_STR_CONTAINS(out, "\"values\": [\"00000000\", \"05000000\"]");

	snprintf(args, sizeof(args), "dump --pid %d events", me);
	CHECK_EQ_INT(run_cli(args, out, sizeof(out)), 0);
	CHECK_STR_CONTAINS(out, "ring size: 8192 bytes\nconsumer position: 0\nproducer position: 16\navailable: 16 bytes");
	snprintf(args, sizeof(args), "dump --pid %d events --json", me);
	CHECK_EQ_INT(run_cli(args, out, sizeof(out)), 0);
	CHECK_STR_CONTAINS(out, "\"ring_size\": 8192, \"cons_pos\": 0, \"prod_pos\": 16, \"avail_data\": 16}");

	/* Errors. */
	snprintf(args, sizeof(args), "dump --pid %d nosuch", me);
	CHECK_EQ_INT(run_cli(args, out, sizeof(out)), 1);
	snprintf(line, sizeof(line), "gpuext maps dump: process %d has no map named 'nosuch'; its maps: %u (counts), %u (per_cpu), %u (events)",
		 me, gpuext_map__id(h), gpuext_map__id(pc), gpuext_map__id(rb));
	CHECK_STR_CONTAINS(out, line);
	CHECK_EQ_INT(run_cli("dump counts", out, sizeof(out)), 2);
	CHECK_STR_CONTAINS(out, "gpuext maps dump: needs --pid PID and a map ID or NAME");
	CHECK_EQ_INT(run_cli("list --pid 0x1", out, sizeof(out)), 2);
	CHECK_STR_CONTAINS(out, "gpuext maps: --pid needs a process id");
	CHECK_EQ_INT(run_cli("frobnicate", out, sizeof(out)), 2);
	CHECK_STR_CONTAINS(out, "unknown command 'frobnicate': use list, dump or clean");
	CHECK_EQ_INT(run_cli("--help", out, sizeof(out)), 0);
	CHECK_STR_CONTAINS(out, "gpuext maps dump --pid 4242 counts");

	/* A stale map shows as stale and clean removes it. */
	pid_t pid = fork();
	int status;
	if (pid == 0)
		_exit(child_leave_stale(NULL));
	waitpid(pid, &status, 0);
	CHECK_EQ_INT(run_cli("list", out, sizeof(out)), 0);
	snprintf(line, sizeof(line), "%-8d %4u  leftover                 array             4      4          2          2  stale",
		 (int)pid, 1u);
	CHECK_STR_CONTAINS(out, line);
	snprintf(args, sizeof(args), "dump --pid %d leftover", (int)pid);
	CHECK_EQ_INT(run_cli(args, out, sizeof(out)), 0);
	CHECK_STR_CONTAINS(out, "(stale: the process is gone)");
	CHECK_STR_CONTAINS(out, "key: 01 00 00 00  value: 4d 00 00 00\n2 entries");
	snprintf(args, sizeof(args), "clean --pid %d", (int)pid);
	CHECK_EQ_INT(run_cli(args, out, sizeof(out)), 0);
	CHECK_STR_CONTAINS(out, "removed 1 stale map");
	snprintf(args, sizeof(args), "list --pid %d", (int)pid);
	CHECK_EQ_INT(run_cli(args, out, sizeof(out)), 1);
	snprintf(line, sizeof(line), "gpuext maps: no process %d, and no maps of it in /dev/shm", (int)pid);
	CHECK_STR_CONTAINS(out, line);
out:
	gpuext_runtime__free(rt);
	/* After the runtime is gone, so are its maps. */
	snprintf(args, sizeof(args), "list --pid %d", me);
	CHECK_EQ_INT(run_cli(args, out, sizeof(out)), 1);
	snprintf(line, sizeof(line), "gpuext maps: process %d has no published maps", me);
	CHECK_STR_CONTAINS(out, line);
}

int main(void)
{
	test_cross_process();
	test_stale();
	test_garbage();
	test_cli();
	return test_done("test_maps_shm");
}

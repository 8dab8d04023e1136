/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libgpuext-nvprobe.so without a GPU.
 *
 * Unit parts (hal/nvidia/nv_util.c, nv_maps.c): .entry names of PTX, the
 * kernel filter, kernels.txt lines, which versioned entry point a
 * cuGetProcAddress request means, folding per-GPU values, writing the shm
 * maps of another process (array + ring producer, read back through
 * libgpuext's own reader and consumer). Placing and draining a sharded
 * device ring through a fake driver: tests/test_nv_ring.c.
 *
 * End to end (when the build has the preload library): this process plays
 * `gpuext trace` (publishes maps, writes a pack) and runs tests/nv/fakeapp
 * with LD_PRELOAD against the fake libcuda (tests/nv/fakecuda.c), then checks
 * what the app's driver saw (the fake's log), kernels.txt, launches.bin and
 * the shm maps, live and after exit; again with a warm JIT cache, without
 * GPUEXT_TRACE_DIR, with a bad pack, and with a JIT that fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "maps_impl.h"
#include "ptx/ptx.h"
#include "nv_impl.h"
#include "nv_util.h"
#include "testlib.h"
#include "nv/nv_test.h"

/* ------------------------------------------------------------------ */
/* Pure parts                                                           */
/* ------------------------------------------------------------------ */

static void test_entries(void)
{
	static const char ptx[] =
		"// .entry not_me(\n/* .entry nor_me( */\n.version 8.0\n"
		".visible .entry vadd(\n.param .u64 a)\n{ ret; }\n"
		".func helper() { ret; }\n"
		".entry _Z3fooPf$x ( ) { ret; }\n"
		".file 1 \".entry quoted\"\n";
	char **names;
	size_t n;

	CHECK_EQ_INT(nv_ptx_entries(ptx, sizeof(ptx) - 1, &names, &n), 0);
	CHECK_EQ_INT(n, 2);
	if (n == 2) {
		CHECK(!strcmp(names[0], "vadd"));
		CHECK(!strcmp(names[1], "_Z3fooPf$x"));
	}
	nv_free_names(names, n);

	/* The device functions a splice gave sites (GX_SPLICE_FUNC lines), for kernels.txt. */
	{
		static const char sp[] = "// gpuext-device-function-x not_a_tag\n"
			"\tld.u32 %r1, [a]; // gpuext-device-function mid_line\n"
			"\n" GX_SPLICE_UNTRACED " 2\n"
			GX_SPLICE_FUNC " _Z7axpy_atPKfPfi\n" GX_SPLICE_FUNC " last";

		CHECK_EQ_INT(nv_tagged_names(sp, GX_SPLICE_FUNC, &names, &n), 0);
		CHECK_EQ_INT(n, 2);
		if (n == 2) {
			CHECK(!strcmp(names[0], "_Z7axpy_atPKfPfi"));
			CHECK(!strcmp(names[1], "last"));
		}
		nv_free_names(names, n);
		CHECK_EQ_INT(nv_tagged_names("nothing here", GX_SPLICE_FUNC, &names, &n), 0);
		CHECK_EQ_INT(n, 0);
		CHECK(names == NULL);
	}
}

static void test_filter_and_line(void)
{
	char buf[256];

	CHECK(nv_filter_match("", "anything"));
	CHECK(nv_filter_match(NULL, "anything"));
	CHECK(nv_filter_match("vadd*", "vadd_f32"));
	CHECK(!nv_filter_match("vadd*", "other"));
	CHECK(nv_filter_match("[vl]*", "libk"));
	nv_kernel_line(buf, sizeof(buf), 42, 0xabcull, "error:jit failed", "k");
	CHECK(!strcmp(buf, "42 0000000000000abc error:jit_failed k\n"));
}

static void remove_tmp(const char *tmp)
{
	char cmd[700];

	if (getenv("GPUEXT_KEEP_TMP"))
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
}

/* An empty file DIR/NAME, as the driver's GPU lists name GPUs (nv_gpu_rank reads names only). */
static void touch_in(const char *dir, const char *name)
{
	char f[800];
	int fd;

	snprintf(f, sizeof(f), "%s/%s", dir, name);
	fd = open(f, O_WRONLY | O_CREAT, 0644);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
}

/* PCI addresses and a GPU's rank among the system's (nv_gpu_rank: GPU ids). */
static void test_gpu_rank(void)
{
	char tmp[] = "/tmp/gpuext-gpurank-XXXXXX", a[600], b[600], dirs[1300], err[512];
	static const char *const in_a[] = { "0000:3b:00.0", "0000:b1:00.0", "unbind" };
	static const char *const in_b[] = { "0000:17:00.0", "0000:3B:00.0", "0000:65:00.0",
					    "0000:b1:00.0", "0000:ca:00.0", "module" };
	uint64_t x, y;

	CHECK_EQ_INT(nv_pci_addr("0000:1E:00.0", &x), 0);
	CHECK_EQ_INT(nv_pci_addr("00000000:1e:00.0", &y), 0);	/* nvidia-smi's 8-digit domain */
	CHECK_EQ_U64(x, y);
	CHECK_EQ_INT(nv_pci_addr("0000:1e:01.0", &y), 0);
	CHECK(y > x);
	CHECK_EQ_INT(nv_pci_addr("0001:00:00.0", &y), 0);	/* the domain ranks first */
	CHECK(y > x);
	CHECK_EQ_INT(nv_pci_addr("0000:1e:00.7", &y), 0);
	CHECK_EQ_U64(y, x + 7);
	CHECK_EQ_INT(nv_pci_addr("000:1e:00.0", &y), -EINVAL);		/* 3-digit domain */
	CHECK_EQ_INT(nv_pci_addr("000000000:1e:00.0", &y), -EINVAL);	/* 9 */
	CHECK_EQ_INT(nv_pci_addr("0000:1e:00.8", &y), -EINVAL);	/* function 0-7 */
	CHECK_EQ_INT(nv_pci_addr("0000:1e:20.0", &y), -EINVAL);	/* device 0-1f */
	CHECK_EQ_INT(nv_pci_addr("0000:1e:00", &y), -EINVAL);
	CHECK_EQ_INT(nv_pci_addr("0000:1e:00.0 ", &y), -EINVAL);
	CHECK_EQ_INT(nv_pci_addr("0000:1g:00.0", &y), -EINVAL);
	CHECK_EQ_INT(nv_pci_addr("0000:1e:0.0", &y), -EINVAL);
	CHECK_EQ_INT(nv_pci_addr("", &y), -EINVAL);

	if (!mkdtemp(tmp)) {
		CHECK(!"mkdtemp");
		return;
	}
	snprintf(a, sizeof(a), "%s/a", tmp);
	snprintf(b, sizeof(b), "%s/b", tmp);
	mkdir(a, 0755);
	mkdir(b, 0755);
	for (size_t i = 0; i < sizeof(in_a) / sizeof(in_a[0]); i++)
		touch_in(a, in_a[i]);
	for (size_t i = 0; i < sizeof(in_b) / sizeof(in_b[0]); i++)
		touch_in(b, in_b[i]);
	/* The first directory that lists the GPU gives its rank; entries not addresses skip. */
	snprintf(dirs, sizeof(dirs), "%s/none:%s:%s", tmp, a, b);
	CHECK_EQ_INT(nv_gpu_rank("0000:B1:00.0", dirs, err, sizeof(err)), 1);
	CHECK_EQ_INT(nv_gpu_rank("0000:65:00.0", dirs, err, sizeof(err)), 2);	/* not in a: b */
	CHECK_EQ_INT(nv_gpu_rank("00000000:17:00.0", dirs, err, sizeof(err)), 0);
	snprintf(dirs, sizeof(dirs), "%s::%s", b, a);	/* an empty item is skipped */
	CHECK_EQ_INT(nv_gpu_rank("0000:b1:00.0", dirs, err, sizeof(err)), 3);
	CHECK_EQ_INT(nv_gpu_rank("0000:ca:00.0", dirs, err, sizeof(err)), 4);
	/* Not listed: each place and why, in order. */
	snprintf(dirs, sizeof(dirs), "%s/none:%s", tmp, a);
	CHECK_EQ_INT(nv_gpu_rank("0000:ca:00.0", dirs, err, sizeof(err)), -ENOENT);
	CHECK_STR_CONTAINS(err, "GPU 0000:ca:00.0 is in no list of the system's GPUs (");
	CHECK_STR_CONTAINS(err, "/none: No such file or directory; ");
	CHECK_STR_CONTAINS(err, "/a lists 2 GPUs, not it)");
	CHECK_EQ_INT(nv_gpu_rank("0000:ca:00.0", "", err, sizeof(err)), -ENOENT);
	CHECK_STR_CONTAINS(err, "(no directory given)");
	CHECK_EQ_INT(nv_gpu_rank("GPU-1234", dirs, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "the driver gave 'GPU-1234', not a PCI address");
	remove_tmp(tmp);
}

/* The ration of mirrors at synchronizing calls (preload.c, nv_sync_mirror). */
static void test_sync_gap(void)
{
	CHECK_EQ_U64(nv_sync_gap_ns(0, 1), 2000000);		/* the 2 ms floor */
	CHECK_EQ_U64(nv_sync_gap_ns(10000, 1), 2000000);	/* 10 us x 100 = 1 ms: the floor */
	CHECK_EQ_U64(nv_sync_gap_ns(100000, 1), 10000000);	/* 100 us at 1%: 10 ms */
	CHECK_EQ_U64(nv_sync_gap_ns(100000, 2), 5000000);	/* at 2%: 5 ms */
	CHECK_EQ_U64(nv_sync_gap_ns(11000000, 1), 1100000000);	/* an 11 ms drain: 1.1 s */
	CHECK_EQ_U64(nv_sync_gap_ns(11000000, 100), 11000000);	/* 100%: right after it */
	CHECK_EQ_U64(nv_sync_gap_ns(1000, 0), UINT64_MAX);	/* 0: never */
	CHECK_EQ_U64(nv_sync_gap_ns(UINT64_MAX / 50, 1), UINT64_MAX);	/* no overflow */
}

static void test_pick_version(void)
{
	static const struct nv_hook_ver v[] = {
		{ "cuLaunchKernel", "cuLaunchKernel", 4000, false },
		{ "cuLaunchKernel_ptsz", "cuLaunchKernel", 7000, true },
		{ "cuCtxCreate", "cuCtxCreate", 2000, false },
		{ "cuCtxCreate_v2", "cuCtxCreate", 3020, false },
		{ "cuCtxCreate_v3", "cuCtxCreate", 11040, false },
		{ "cuCtxCreate_v4", "cuCtxCreate", 12050, false },
	};
	const struct nv_hook_ver *p;
	size_t n = sizeof(v) / sizeof(v[0]);

	p = nv_pick_version(v, n, "cuLaunchKernel", 12000, NV_PROC_PER_THREAD);
	CHECK(p && !strcmp(p->name, "cuLaunchKernel_ptsz"));
	p = nv_pick_version(v, n, "cuLaunchKernel", 12000, 0);
	CHECK(p && !strcmp(p->name, "cuLaunchKernel"));
	p = nv_pick_version(v, n, "cuCtxCreate", 12080, 0);
	CHECK(p && !strcmp(p->name, "cuCtxCreate_v4"));
	p = nv_pick_version(v, n, "cuCtxCreate", 12000, 0);
	CHECK(p && !strcmp(p->name, "cuCtxCreate_v3"));
	p = nv_pick_version(v, n, "cuCtxCreate", 4000, 0);
	CHECK(p && !strcmp(p->name, "cuCtxCreate_v2"));
	CHECK(!nv_pick_version(v, n, "cuCtxCreate", 1000, 0));
	CHECK(!nv_pick_version(v, n, "cuMemAlloc", 12000, 0));
}

static void test_fold(void)
{
	/* Two "GPUs", 2 entries x 4 device slots of u64, folded into 2 shm slots. */
	uint64_t acc[4] = { 1000, 0, 0, 5 }, base[8] = { 0 }, a[8], b[8];
	/* u32 values in 8-byte strides, with a base to subtract. */
	uint32_t acc32[4] = { 7, 0, 0, 0 }, now32[4] = { 10, 0, 3, 0 }, base32[4] = { 4, 0, 1, 0 };

	for (int i = 0; i < 8; i++) {
		a[i] = (uint64_t)i + 1;
		b[i] = 10ull * ((uint64_t)i + 1);
	}
	nv_fold_values((uint8_t *)acc, 2, 8, (uint8_t *)a, (uint8_t *)base, 4, 8, 2, 8);
	nv_fold_values((uint8_t *)acc, 2, 8, (uint8_t *)b, (uint8_t *)base, 4, 8, 2, 8);
	/* entry 0: slot 0 <- dev slots 0,2; slot 1 <- 1,3 */
	CHECK_EQ_U64(acc[0], 1000 + (1 + 3) + (10 + 30));
	CHECK_EQ_U64(acc[1], 0 + (2 + 4) + (20 + 40));
	CHECK_EQ_U64(acc[2], (5 + 7) + (50 + 70));
	CHECK_EQ_U64(acc[3], 5 + (6 + 8) + (60 + 80));
	nv_fold_values((uint8_t *)acc32, 1, 8, (uint8_t *)now32, (uint8_t *)base32, 1, 8, 2, 4);
	CHECK_EQ_INT(acc32[0], 7 + 6);
	CHECK_EQ_INT(acc32[1], 0);	/* padding lane untouched */
	CHECK_EQ_INT(acc32[2], 2);
	/*
	 * The probes' layout of 4-byte array values (4 apart, ptx.h) into the
	 * shm map's (8 apart), wrapping at 32 bits: 0xfffffffe -> 3 adds 5.
	 */
	{
		uint32_t sh[6] = { 100, 0, 0xfffffff0u, 0, 9, 0 }, now[3] = { 3, 7, 9 };
		uint32_t then[3] = { 0xfffffffeu, 2, 9 }, dev[3] = { 0 };

		nv_fold_values((uint8_t *)sh, 1, 8, (uint8_t *)now, (uint8_t *)then, 1, 4, 3, 4);
		CHECK_EQ_INT(sh[0], 105);
		CHECK_EQ_INT(sh[2], 0xfffffff5u);
		CHECK_EQ_INT(sh[4], 9);
		CHECK_EQ_INT(sh[1] | sh[3] | sh[5], 0);
		nv_array_to_device((uint8_t *)dev, 4, (const uint8_t *)sh, 8, 3, 1, 4);
		CHECK_EQ_INT(dev[0], 105);
		CHECK_EQ_INT(dev[1], 0xfffffff5u);
		CHECK_EQ_INT(dev[2], 9);
	}
}

/* ------------------------------------------------------------------ */
/* shm maps of "gpuext trace" (this process) written through nv_shm     */
/* ------------------------------------------------------------------ */

struct ring_seen {
	uint64_t v[64];
	uint32_t len[64];
	int n;
};

static int on_rec(void *user, const void *data, size_t size)
{
	struct ring_seen *s = user;

	if (s->n < 64) {
		memset(&s->v[s->n], 0, 8);
		memcpy(&s->v[s->n], data, size < 8 ? size : 8);
		s->len[s->n] = (uint32_t)size;
		s->n++;
	}
	return 0;
}

static void test_shm(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .publish_maps = true, .nr_cpu_slots = 2);
	GPUEXT_OPTS(gpuext_map_def, ad, .name = "arr", .type = BPF_MAP_TYPE_ARRAY, .key_size = 4,
		    .value_size = 8, .max_entries = 4);
	GPUEXT_OPTS(gpuext_map_def, rd, .name = "rb", .type = BPF_MAP_TYPE_RINGBUF,
		    .max_entries = 4096);
	struct gpuext_ringbuf_consumer *cons = NULL;
	struct gpuext_runtime *rt = NULL;
	struct gpuext_map *arr = NULL, *rb = NULL;
	struct gx_pack_map pm;
	struct nv_shm s, r;
	struct ring_seen seen = { 0 };
	uint64_t vals[4] = { 1, 2, 3, 4 }, got = 0, big[128];
	char err[256] = "";
	uint32_t key = 2;
	int n, total = 0;

	CHECK_EQ_INT(gpuext_runtime__new(&ro, &rt), 0);
	CHECK_EQ_INT(gpuext_map__create(rt, &ad, &arr), 0);
	CHECK_EQ_INT(gpuext_map__create(rt, &rd, &rb), 0);
	if (!arr || !rb)
		goto out;

	nv_test_pack_map(&pm, arr, 1);
	CHECK_EQ_INT(nv_shm_open(&s, &pm, err, sizeof(err)), 0);
	CHECK_EQ_INT(nv_shm_values_size(&s), 32);
	nv_shm_write_values(&s, vals);
	CHECK_EQ_INT(gpuext_map__lookup(arr, &key, &got), 0);
	CHECK_EQ_U64(got, 3);
	nv_shm_close(&s);

	/* A pack that disagrees with the map is refused, saying how. */
	pm.value_size = 16;
	CHECK_EQ_INT(nv_shm_open(&s, &pm, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "the pack wants array");
	snprintf(pm.shm, sizeof(pm.shm), "/gpuext.999999999.1");
	CHECK_EQ_INT(nv_shm_open(&s, &pm, err, sizeof(err)), -ENOENT);
	CHECK_STR_CONTAINS(err, "cannot open shared memory");

	nv_test_pack_map(&pm, rb, 1);
	CHECK_EQ_INT(nv_shm_open(&r, &pm, err, sizeof(err)), 0);
	CHECK_EQ_INT(gpuext_ringbuf_consumer__new(rb, on_rec, &seen, &cons), 0);
	/* Records of 1000 bytes: the 5th one wraps past the end of the 4096-byte ring. */
	for (int i = 0; i < 12; i++) {
		memset(big, 0, sizeof(big));
		big[0] = 500 + (uint64_t)i;
		CHECK_EQ_INT(nv_shm_ring_output(&r, big, 1000), 0);
		n = gpuext_ringbuf_consumer__consume(cons);
		total += n > 0 ? n : 0;
	}
	CHECK_EQ_INT(total, 12);
	CHECK_EQ_INT(seen.n, 12);
	for (int i = 0; i < seen.n; i++) {
		CHECK_EQ_U64(seen.v[i], 500 + (uint64_t)i);
		CHECK_EQ_INT(seen.len[i], 1000);
	}
	/* Full: refused and counted. */
	for (int i = 0; i < 4; i++)
		nv_shm_ring_output(&r, big, 1000);
	CHECK_EQ_INT(nv_shm_ring_output(&r, big, 1000), -EAGAIN);
	CHECK(r.host_drops >= 1);
	CHECK_EQ_INT(r.records, 12 + 4);

	nv_shm_close(&r);
out:
	gpuext_ringbuf_consumer__free(cons);
	gpuext_runtime__free(rt);
}

/* Value changes are taken lane by lane (the value size's widest power of 2 up to 8), wrapping. */
static void test_value_sub(void)
{
	uint64_t a = 5, b = 7, d = 0;
	uint16_t h3[3] = { 1, 0xffff, 9 }, g3[3] = { 2, 1, 9 }, o3[3];
	uint8_t c3[3] = { 0, 200, 3 }, e3[3] = { 1, 100, 3 }, p3[3];

	CHECK_EQ_INT(nv_value_lane(8), 8);
	CHECK_EQ_INT(nv_value_lane(12), 4);
	CHECK_EQ_INT(nv_value_lane(6), 2);
	CHECK_EQ_INT(nv_value_lane(3), 1);
	nv_value_sub((uint8_t *)&d, (uint8_t *)&a, (uint8_t *)&b, 8);
	CHECK_EQ_U64(d, (uint64_t)-2);
	nv_value_sub((uint8_t *)&d, (uint8_t *)&a, NULL, 8);
	CHECK_EQ_U64(d, 5);
	nv_value_sub((uint8_t *)o3, (uint8_t *)h3, (uint8_t *)g3, 6);
	CHECK(o3[0] == 0xffff && o3[1] == 0xfffe && o3[2] == 0);
	nv_value_sub(p3, c3, e3, 3);
	CHECK(p3[0] == 0xff && p3[1] == 100 && p3[2] == 0);
}

static void test_shm_hash(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .publish_maps = true);
	GPUEXT_OPTS(gpuext_map_def, hd, .name = "h", .type = BPF_MAP_TYPE_HASH, .key_size = 12,
		    .value_size = 4, .max_entries = 3);
	GPUEXT_OPTS(gpuext_map_def, ld, .name = "l", .type = BPF_MAP_TYPE_LRU_HASH, .key_size = 4,
		    .value_size = 8, .max_entries = 4);
	struct gpuext_runtime *rt = NULL;
	struct gpuext_map *h = NULL, *l = NULL;
	struct gx_pack_map pm;
	struct nv_shm s;
	char err[256];
	uint32_t key[3] = { 1, 2, 3 }, v = 0, nb, bs, nb2, bs2;
	size_t bytes, bytes2;

	CHECK_EQ_INT(gpuext_runtime__new(&ro, &rt), 0);
	CHECK_EQ_INT(gpuext_map__create(rt, &hd, &h), 0);
	CHECK_EQ_INT(gpuext_map__create(rt, &ld, &l), 0);
	if (!h || !l)
		goto out;
	/* Our bucket hash is core's. */
	for (uint32_t i = 0; i < 64; i++) {
		key[0] = i * 2654435761u;
		CHECK_EQ_INT(gpuext_shm_hash(key, 12, h->hdr->hash_seed) & (h->hdr->nr_buckets - 1),
			     gpuext_map_hash_bucket(h, key));
	}
	/* Our device geometry is codegen's. */
	CHECK_EQ_INT(nv_hash_layout(12, 4, 3, &nb, &bs, &bytes), 0);
	CHECK_EQ_INT(gpuext_ptx_hash_layout(12, 4, 3, &nb2, &bs2, &bytes2), 0);
	CHECK(nb == nb2 && bs == bs2 && bytes == bytes2);
	CHECK_EQ_INT(nv_hash_layout(8, 256, 10000, &nb, &bs, &bytes), 0);
	CHECK_EQ_INT(gpuext_ptx_hash_layout(8, 256, 10000, &nb2, &bs2, &bytes2), 0);
	CHECK(nb == nb2 && bs == bs2 && bytes == bytes2);
	CHECK_EQ_INT(nv_hash_layout(8, 256, 100000, &nb, &bs, &bytes), -E2BIG);
	CHECK_EQ_INT(gpuext_ptx_hash_layout(8, 256, 100000, &nb2, &bs2, &bytes2), -E2BIG);
	CHECK_EQ_INT(nv_hash_layout(8, 8, 0, &nb, &bs, &bytes), -EINVAL);

	/*
	 * Applied in place: the owner's entry stays, a key two contexts hold adds
	 * up (and counts both), a full map drops (counted).
	 */
	key[0] = 99;
	v = 5;
	CHECK_EQ_INT(gpuext_map__update(h, key, &v, BPF_ANY), 0);
	nv_test_pack_map(&pm, h, 1);
	CHECK_EQ_INT(nv_shm_open(&s, &pm, err, sizeof(err)), 0);
	nv_shm_hash_begin(&s);
	key[0] = 1;
	v = 10;
	CHECK_EQ_INT(nv_shm_hash_apply(&s, key, NULL, &v, 1), 0);
	v = 32;
	CHECK_EQ_INT(nv_shm_hash_apply(&s, key, &v, &v, 1), 0);
	key[0] = 2;
	CHECK_EQ_INT(nv_shm_hash_apply(&s, key, NULL, &v, 1), 0);
	key[0] = 3;
	CHECK_EQ_INT(nv_shm_hash_apply(&s, key, NULL, &v, 1), -E2BIG);
	nv_shm_hash_end(&s);
	CHECK_EQ_INT(s.host_drops, 1);
	key[0] = 99;
	CHECK_EQ_INT(gpuext_map__lookup(h, key, &v), 0);
	CHECK_EQ_INT(v, 5);
	key[0] = 1;
	CHECK_EQ_INT(gpuext_map__lookup(h, key, &v), 0);
	CHECK_EQ_INT(v, 42);
	key[0] = 3;
	CHECK_EQ_INT(gpuext_map__lookup(h, key, &v), -ENOENT);
	/* Deleted in one context: its value comes back out; gone when the other deletes it too. */
	nv_shm_hash_begin(&s);
	key[0] = 1;
	v = (uint32_t)-10;
	CHECK_EQ_INT(nv_shm_hash_apply(&s, key, &v, NULL, -1), 0);
	nv_shm_hash_end(&s);
	CHECK_EQ_INT(gpuext_map__lookup(h, key, &v), 0);
	CHECK_EQ_INT(v, 32);
	nv_shm_hash_begin(&s);
	v = (uint32_t)-32;
	CHECK_EQ_INT(nv_shm_hash_apply(&s, key, &v, NULL, -1), 0);
	/* a deletion of a key the map does not hold inserts nothing */
	key[0] = 3;
	CHECK_EQ_INT(nv_shm_hash_apply(&s, key, &v, NULL, -1), 0);
	nv_shm_hash_end(&s);
	key[0] = 1;
	CHECK_EQ_INT(gpuext_map__lookup(h, key, &v), -ENOENT);
	key[0] = 3;
	CHECK_EQ_INT(gpuext_map__lookup(h, key, &v), -ENOENT);
	CHECK_EQ_INT(gpuext_map__lookup(h, (uint32_t[3]){ 2, 2, 3 }, &v), 0);
	CHECK_EQ_INT(v, 32);
	/* The owner can still change the map afterwards (free list and buckets intact). */
	key[0] = 2;
	CHECK_EQ_INT(gpuext_map__delete(h, key), 0);
	key[0] = 7;
	CHECK_EQ_INT(gpuext_map__update(h, key, &v, BPF_NOEXIST), 0);
	key[0] = 8;
	CHECK_EQ_INT(gpuext_map__update(h, key, &v, BPF_NOEXIST), 0);
	key[0] = 9;
	CHECK_EQ_INT(gpuext_map__update(h, key, &v, BPF_NOEXIST), -E2BIG);
	nv_shm_close(&s);

	/* LRU: entries are on the LRU list, so the owner can evict. */
	nv_test_pack_map(&pm, l, 1);
	CHECK_EQ_INT(nv_shm_open(&s, &pm, err, sizeof(err)), 0);
	nv_shm_hash_begin(&s);
	for (uint32_t k = 0; k < 4; k++) {
		uint64_t lv = k + 100;

		CHECK_EQ_INT(nv_shm_hash_apply(&s, &k, NULL, &lv, 1), 0);
	}
	/*
	 * An LRU element leaves its list when its last context deleted the key;
	 * one a device changed becomes the most recently used.
	 */
	{
		uint32_t k = 1;
		uint64_t lv = (uint64_t)-101;

		CHECK_EQ_INT(nv_shm_hash_apply(&s, &k, &lv, NULL, -1), 0);
		k = 0;
		lv = 5;
		CHECK_EQ_INT(nv_shm_hash_apply(&s, &k, &lv, &lv, 0), 0);
	}
	nv_shm_hash_end(&s);
	{
		uint32_t k = 50;
		uint64_t lv = 1;

		CHECK_EQ_INT(gpuext_map__update(l, &k, &lv, BPF_ANY), 0);	/* a free element */
		k = 51;
		CHECK_EQ_INT(gpuext_map__update(l, &k, &lv, BPF_ANY), 0);	/* evicts the oldest: 2 */
		k = 2;
		CHECK_EQ_INT(gpuext_map__lookup(l, &k, &lv), -ENOENT);
		k = 0;
		CHECK_EQ_INT(gpuext_map__lookup(l, &k, &lv), 0);
		CHECK_EQ_U64(lv, 105);
		k = 3;
		CHECK_EQ_INT(gpuext_map__lookup(l, &k, &lv), 0);
		CHECK_EQ_U64(lv, 103);
	}
	/* A key gpuext wrote is never removed by a device's deletion; its value is. */
	nv_shm_hash_begin(&s);
	{
		uint32_t k = 50;
		uint64_t lv = 7;

		CHECK_EQ_INT(nv_shm_hash_apply(&s, &k, &lv, &lv, 1), 0);
		lv = (uint64_t)-7;
		CHECK_EQ_INT(nv_shm_hash_apply(&s, &k, &lv, NULL, -1), 0);
		/* a deletion the element does not count (gpuext rewrote the key) takes nothing out */
		CHECK_EQ_INT(nv_shm_hash_apply(&s, &k, &lv, NULL, -1), 0);
	}
	nv_shm_hash_end(&s);
	{
		uint32_t k = 50;
		uint64_t lv = 0;

		CHECK_EQ_INT(gpuext_map__lookup(l, &k, &lv), 0);
		CHECK_EQ_U64(lv, 1);
	}
	nv_shm_close(&s);
out:
	gpuext_runtime__free(rt);
}

/* ------------------------------------------------------------------ */
/* End to end with the fake libcuda                                     */
/* ------------------------------------------------------------------ */

#ifdef GPUEXT_NVPROBE_SO

static const char pack_ptx[] =
	"// gpuext probes for test_nv_preload\n"
	"// gpuext-ptx-version 8.0\n"
	".visible .global .align 8 .b8 gpuext_rt_maps[160];\n"
	".visible .global .align 8 .u64 gpuext_rt_prandom_seed;\n"
	".visible .global .align 4 .u32 gpuext_rt_gpu_id;\n"
	".func gpuext_probe_entry(.param .b64 k, .param .b64 g, .param .b64 a, "
	".param .b64 v, .param .b32 s)\n{\n\t.reg .b64 %rd<3>;\n"
	"\tld.global.u64 %rd1, [gpuext_rt_maps];\n"
	"\tatom.global.add.u64 %rd2, [%rd1], 1;\n"
	/* a z register read: the kernels get flat twins (hal/nvidia/ptx_twin.c) */
	"\t{\n\t.reg .b32 %zr;\n\tmov.u32 %zr, %ctaid.z;\n\t}\n\tret;\n}\n";

/* Removes a test's scratch directory, unless GPUEXT_KEEP_TMP asks to keep it. */
static char *slurp(const char *path, size_t *len)
{
	char *buf = NULL;
	size_t cap = 0, n = 0;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	for (;;) {
		ssize_t r;

		if (n + 4096 + 1 > cap) {
			char *t = realloc(buf, cap = cap * 2 + 8192);

			if (!t)
				break;
			buf = t;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (buf)
		buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

/*
 * The system's GPUs as the fake app's preload sees them (GPUEXT_NV_GPU_LIST):
 * a directory that does not exist, then one whose entries put the fake's
 * devices 0 and 1 (0000:1D:00.0 and 0000:1E:00.0, upper case from the
 * driver, lower case here) at ranks 2 and 3, so GPU ids are not ordinals.
 */
#define GPU_OF_DEV0 2u
#define GPU_OF_DEV1 3u
static char gpu_list[1300];

static void make_gpu_list(const char *tmp)
{
	static const char *const names[] = { "0001:00:00.0", "0000:1e:00.0", "bind",
					     "0000:05:00.0", "0000:1d:00.0", "0000:1a:00.0" };
	char d[700];

	snprintf(d, sizeof(d), "%s/gpus", tmp);
	mkdir(d, 0755);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		touch_in(d, names[i]);
	snprintf(gpu_list, sizeof(gpu_list), "%s/nogpus:%s", tmp, d);
}

struct run {
	int status;
	pid_t pid;
	char out[4096];
	char *err;
	char *log;
};

/*
 * Runs the fake app. @trace_dir NULL: no GPUEXT_TRACE_DIR. @during, if set,
 * runs after the app printed "ready" and before it is told to finish.
 */
static void run_app(const char *trace_dir, const char *cache, const char *tmp, bool jit_fail,
		    void (*during)(void *), void *arg, struct run *res)
{
	char logp[512], errp[512];
	int in[2], out[2];
	size_t n = 0;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	snprintf(logp, sizeof(logp), "%s/fake.log", tmp);
	snprintf(errp, sizeof(errp), "%s/stderr.txt", tmp);
	unlink(logp);
	if (pipe(in) || pipe(out)) {
		CHECK(!"pipe");
		return;
	}
	pid = fork();
	if (pid == 0) {
		int fd = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(fd, 2);
		close(in[1]);
		close(out[0]);
		setenv("LD_PRELOAD", GPUEXT_NVPROBE_SO, 1);
		setenv("LD_LIBRARY_PATH", GPUEXT_NV_FAKECUDA_DIR, 1);
		setenv("FAKECUDA_LOG", logp, 1);
		/* Two GPUs, the app on the second: device ordinals must reach the records. */
		setenv("FAKECUDA_DEVICES", "2", 1);
		setenv("FAKEAPP_DEVICE", "1", 1);
		setenv("GPUEXT_NV_GPU_LIST", gpu_list, 1);
		setenv("GPUEXT_CACHE_DIR", cache, 1);
		setenv("FAKECUDA_JIT_DUMP", tmp, 1);
		if (trace_dir)
			setenv("GPUEXT_TRACE_DIR", trace_dir, 1);
		else
			unsetenv("GPUEXT_TRACE_DIR");
		/* Sanitizer builds: the fake driver leaks its modules on purpose. */
		setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
		if (jit_fail)
			setenv("FAKECUDA_JIT_FAIL", "1", 1);
		else
			unsetenv("FAKECUDA_JIT_FAIL");
		execl(GPUEXT_NV_FAKEAPP, GPUEXT_NV_FAKEAPP, "multi", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	res->pid = pid;
	/* Read until "ready" (or EOF), with a deadline. */
	for (int waited = 0; waited < 100 && !strstr(res->out, "ready\n");) {
		struct pollfd p = { out[0], POLLIN, 0 };
		ssize_t r;

		if (poll(&p, 1, 100) == 0) {
			waited++;
			continue;
		}
		r = read(out[0], res->out + n, sizeof(res->out) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		res->out[n] = '\0';
	}
	if (strstr(res->out, "ready\n") && during)
		during(arg);
	if (write(in[1], "go\n", 3) != 3)
		CHECK(!"write to app");
	close(in[1]);
	for (;;) {
		ssize_t r = read(out[0], res->out + n, sizeof(res->out) - 1 - n);

		if (r <= 0)
			break;
		n += (size_t)r;
		res->out[n] = '\0';
	}
	close(out[0]);
	waitpid(pid, &res->status, 0);
	res->err = slurp(errp, NULL);
	res->log = slurp(logp, NULL);
}

static void run_free(struct run *r)
{
	free(r->err);
	free(r->log);
}

static int count_lines(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = s; p && (p = strstr(p, needle)); p++)
		n++;
	return n;
}

struct live {
	struct gpuext_map *arr, *pcpu;
	uint64_t arr_v, pcpu_v[4];
	bool seen;
};

/* While the app waits: the mirror thread must bring device values into the shm maps. */
static void watch_live(void *arg)
{
	struct live *l = arg;
	uint32_t key = 1;
	struct timespec nap = { 0, 20 * 1000000 };

	for (int i = 0; i < 150 && !l->seen; i++) {
		gpuext_map__lookup(l->arr, &key, &l->arr_v);
		gpuext_map__lookup(l->pcpu, &key, l->pcpu_v);
		l->seen = l->arr_v == 42 + 8 && l->pcpu_v[3] != 0;
		if (!l->seen)
			nanosleep(&nap, NULL);
	}
}

/* A launch record of @name's @gx x @bx launch by @pid on device 1 (lib_graph: 0, its node's). */
/* run_app with $@var set to @val for the app (and the fake driver), which must exit 0. */
static void run_app_with(const char *var, const char *val, const char *dir, const char *cache,
			 const char *tmp, struct run *run)
{
	setenv(var, val, 1);
	run_app(dir, cache, tmp, false, NULL, NULL, run);
	unsetenv(var);
	CHECK(WIFEXITED(run->status) && WEXITSTATUS(run->status) == 0);
}

static bool has_launch(const struct gx_launch_rec *r, size_t n, const char *name, uint32_t gx,
		       uint32_t bx, pid_t pid)
{
	uint64_t id = gx_kernel_id(name, strlen(name));
	uint32_t gpu = strcmp(name, "lib_graph") ? GPU_OF_DEV1 : GPU_OF_DEV0;

	for (size_t i = 0; i < n; i++)
		if (r[i].kernel_id == id && r[i].grid[0] == gx && r[i].block[0] == bx &&
		    r[i].grid[1] == 1 && r[i].block[2] == 1 && r[i].pid == (uint32_t)pid &&
		    r[i].gpu == gpu)
			return true;
	return false;
}

struct sync_seen {
	struct gpuext_map *arr;
	uint64_t v;
};

static void read_key1(void *arg)
{
	struct sync_seen *ss = arg;
	uint32_t key = 1;

	gpuext_map__lookup(ss->arr, &key, &ss->v);
}

/*
 * nvcc's static cudart: libcuda reached through cuGetProcAddress only, cuInit
 * after our library initialised, a driver whose exit teardown (registered in
 * cuInit) leaves nothing readable, and nothing unloaded by the app. GPU run 3
 * read 0 from every array here. The exit mirror must run before that
 * teardown; a synchronizing call must mirror at once (the periodic mirror is
 * stretched to 10 minutes so it cannot be the one that did it).
 */
static void test_cudart_exit(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .publish_maps = true, .nr_cpu_slots = 4);
	GPUEXT_OPTS(gpuext_map_def, ad, .name = "counts", .type = BPF_MAP_TYPE_ARRAY, .key_size = 4,
		    .value_size = 8, .max_entries = 4);
	char tmp[] = "/tmp/gpuext-nvcudart-XXXXXX", dir[600], cache[600];
	struct gpuext_runtime *rt = NULL;
	struct gpuext_map *arr = NULL;
	struct sync_seen ss = { 0 };
	uint32_t key = 1;
	uint64_t v = 0;
	struct gx_pack pack;
	struct run run;

	if (!mkdtemp(tmp)) {
		CHECK(!"mkdtemp");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/trace", tmp);
	snprintf(cache, sizeof(cache), "%s/cache", tmp);
	mkdir(dir, 0755);
	make_gpu_list(tmp);
	CHECK_EQ_INT(gpuext_runtime__new(&ro, &rt), 0);
	CHECK_EQ_INT(gpuext_map__create(rt, &ad, &arr), 0);
	if (!arr)
		goto out;
	memset(&pack, 0, sizeof(pack));
	pack.events = 1u << GX_PROBE_ENTRY;
	snprintf(pack.kernel_filter, sizeof(pack.kernel_filter), "[vl]*");
	pack.map_cnt = 1;
	nv_test_pack_map(&pack.maps[0], arr, 1);
	pack.ptx = (char *)pack_ptx;
	pack.ptx_len = sizeof(pack_ptx) - 1;
	CHECK_EQ_INT(gx_pack_write(dir, &pack), 0);

	setenv("FAKECUDA_ATEXIT_DEINIT", "1", 1);
	setenv("GPUEXT_NV_MIRROR_MS", "600000", 1);
	setenv("FAKEAPP_MODE", "cudart", 1);
	run_app(dir, cache, tmp, false, NULL, NULL, &run);
	if (getenv("NV_DEBUG"))
		fprintf(stderr, "--- out:\n%s--- err:\n%s--- log:\n%s", run.out, run.err, run.log);
	CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CHECK_STR_CONTAINS(run.out, "table yes");
	CHECK_EQ_INT(gpuext_map__lookup(arr, &key, &v), 0);
	CHECK_EQ_U64(v, 42);	/* mirrored at exit, ahead of the driver's teardown */
	run_free(&run);

	v = 0;
	CHECK_EQ_INT(gpuext_map__update(arr, &key, &v, BPF_ANY), 0);
	ss.arr = arr;
	setenv("FAKEAPP_MODE", "cudart_sync", 1);
	run_app(dir, cache, tmp, false, read_key1, &ss, &run);
	CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CHECK_EQ_U64(ss.v, 42);	/* while the app still runs: the cuCtxSynchronize mirror */
	run_free(&run);

	/* GPUEXT_NV_SYNC_SHARE=0: no mirror after a synchronizing call, only at exit. */
	v = 0;
	CHECK_EQ_INT(gpuext_map__update(arr, &key, &v, BPF_ANY), 0);
	ss.v = 7;
	setenv("GPUEXT_NV_SYNC_SHARE", "0", 1);
	run_app(dir, cache, tmp, false, read_key1, &ss, &run);
	CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CHECK_EQ_U64(ss.v, 0);
	CHECK_EQ_INT(gpuext_map__lookup(arr, &key, &v), 0);
	CHECK_EQ_U64(v, 42);
	run_free(&run);
	/* Not a percentage: said, and the default share (the mirror happens). */
	v = 0;
	CHECK_EQ_INT(gpuext_map__update(arr, &key, &v, BPF_ANY), 0);
	setenv("GPUEXT_NV_SYNC_SHARE", "lots", 1);
	run_app(dir, cache, tmp, false, read_key1, &ss, &run);
	CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CHECK_STR_CONTAINS(run.err, "GPUEXT_NV_SYNC_SHARE='lots' is not a percentage 0-100");
	CHECK_EQ_U64(ss.v, 42);
	run_free(&run);
out:
	unsetenv("GPUEXT_NV_SYNC_SHARE");
	unsetenv("FAKECUDA_ATEXIT_DEINIT");
	unsetenv("GPUEXT_NV_MIRROR_MS");
	unsetenv("FAKEAPP_MODE");
	gpuext_runtime__free(rt);
	remove_tmp(tmp);
}

static void kernel_line(char *buf, size_t len, pid_t pid, const char *status, const char *name)
{
	nv_kernel_line(buf, len, (unsigned)pid, gx_kernel_id(name, strlen(name)), status, name);
}

static void test_e2e(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .publish_maps = true, .nr_cpu_slots = 4);
	GPUEXT_OPTS(gpuext_map_def, ad, .name = "counts", .type = BPF_MAP_TYPE_ARRAY, .key_size = 4,
		    .value_size = 8, .max_entries = 4);
	GPUEXT_OPTS(gpuext_map_def, pd, .name = "per_sm", .type = BPF_MAP_TYPE_PERCPU_ARRAY,
		    .key_size = 4, .value_size = 8, .max_entries = 2);
	/* 128 KiB: two shards of 64 KiB on the fake's 8 SMs. */
	GPUEXT_OPTS(gpuext_map_def, rd, .name = "events", .type = BPF_MAP_TYPE_RINGBUF,
		    .max_entries = 128 << 10);
	GPUEXT_OPTS(gpuext_map_def, hd, .name = "hits", .type = BPF_MAP_TYPE_HASH, .key_size = 4,
		    .value_size = 8, .max_entries = 16);
	struct gpuext_map *hits = NULL;
	char tmp[] = "/tmp/gpuext-nvpreload-XXXXXX", dir[600], cache[600], bad[600], path[700];
	char line[512], *txt, *stats;
	struct gpuext_ringbuf_consumer *cons = NULL;
	struct gpuext_runtime *rt = NULL;
	struct gpuext_map *arr = NULL, *pcpu = NULL, *rb = NULL;
	struct ring_seen seen = { 0 };
	struct gx_launch_rec *lr;
	struct live live = { 0 };
	struct gx_pack pack;
	struct run run;
	size_t len = 0, nl;

	if (!mkdtemp(tmp)) {
		CHECK(!"mkdtemp");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/trace", tmp);
	snprintf(cache, sizeof(cache), "%s/cache", tmp);
	snprintf(bad, sizeof(bad), "%s/bad", tmp);
	mkdir(dir, 0755);
	mkdir(bad, 0755);
	make_gpu_list(tmp);

	CHECK_EQ_INT(gpuext_runtime__new(&ro, &rt), 0);
	CHECK_EQ_INT(gpuext_map__create(rt, &ad, &arr), 0);
	CHECK_EQ_INT(gpuext_map__create(rt, &pd, &pcpu), 0);
	CHECK_EQ_INT(gpuext_map__create(rt, &rd, &rb), 0);
	CHECK_EQ_INT(gpuext_map__create(rt, &hd, &hits), 0);
	if (!arr || !pcpu || !rb || !hits)
		goto out;
	{
		uint32_t k0 = 0;
		uint64_t v0 = 7;

		/* A value gpuext trace put in before the run: the mirror keeps it. */
		CHECK_EQ_INT(gpuext_map__update(arr, &k0, &v0, BPF_ANY), 0);
	}
	memset(&pack, 0, sizeof(pack));
	pack.events = 1u << GX_PROBE_ENTRY;
	snprintf(pack.kernel_filter, sizeof(pack.kernel_filter), "[vl]*");
	pack.map_cnt = 4;
	nv_test_pack_map(&pack.maps[0], arr, 1);
	nv_test_pack_map(&pack.maps[1], pcpu, 8);	/* 8 slots per key on the GPU, 4 in shm */
	nv_test_pack_map(&pack.maps[2], rb, 1);
	nv_test_pack_map(&pack.maps[3], hits, 1);
	pack.ptx = (char *)pack_ptx;
	pack.ptx_len = sizeof(pack_ptx) - 1;
	CHECK_EQ_INT(gx_pack_write(dir, &pack), 0);

	/* 1. Cold: splice, JIT, cache; live mirror; ring records; files. */
	live.arr = arr;
	live.pcpu = pcpu;
	run_app(dir, cache, tmp, false, watch_live, &live, &run);
	if (getenv("NV_DEBUG"))
		fprintf(stderr, "--- out:\n%s--- err:\n%s--- log:\n%s", run.out, run.err, run.log);
	CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CHECK_STR_CONTAINS(run.out, "rtld_next ok");
	CHECK_STR_CONTAINS(run.out, "table yes");
	CHECK_STR_CONTAINS(run.out, "gpu_id 3\n");	/* GPU_OF_DEV1: the system's number */
	CHECK(!strstr(run.err, "GPU id is its device number"));
	CHECK(live.seen);
	/* 42 from the first context + 8 from the second, destroyed one */
	CHECK_EQ_U64(live.arr_v, 42 + 8);
	/* device slots s (value s+1) fold into shm slot s % 4: (s+1) + (s+5) */
	CHECK_EQ_U64(live.pcpu_v[0], 1 + 5);
	CHECK_EQ_U64(live.pcpu_v[3], 4 + 8);
	/* The spliced PTX is what the driver loads (and JITs as a whole program). */
	CHECK_STR_CONTAINS(run.log, "modload_ex ptx spliced=1");
	CHECK_STR_CONTAINS(run.log, "libload ptx spliced=1");
	/* a library kernel (a CUkernel) runs its twin too */
	CHECK_STR_CONTAINS(run.log, "launch_ptsz lib_noctx__gpuext_flat 6 32");
	/* libk, lib_noctx at their launches, lib_graph when its graph node was added */
	CHECK_EQ_INT(count_lines(run.log, "libglobal gpuext_rt_maps"), 3);
	CHECK_STR_CONTAINS(run.log, "libglobal gpuext_rt_maps\nlibglobal gpuext_rt_gpu_id\n"
			   "libglobal gpuext_rt_prandom_seed\ngraph_add lib_graph");
	/*
	 * The module in two contexts, three libraries: five spliced loads the driver
	 * JITs; the module's second load comes from the splice cache (below).
	 */
	CHECK_EQ_INT(count_lines(run.log, "modload_ex ptx spliced=1"), 2);
	CHECK_STR_CONTAINS(run.log, "modload elf spliced=0");
	CHECK_STR_CONTAINS(run.log, "libglobal gpuext_rt_maps");
	CHECK_EQ_INT(count_lines(run.log, "jit "), 5);
	/*
	 * Flat launches run vadd's flat twin, whose probe reads 0 for %ctaid.z; a
	 * grid two deep in z, and the captured launch, run vadd itself; the
	 * attribute the app set went to both.
	 */
	CHECK_STR_CONTAINS(run.log, "launch vadd__gpuext_flat 4 128");
	/* the app lists its own functions, not the twins: vadd, other_kernel, other_long_... */
	CHECK_STR_CONTAINS(run.out, "functions 3: vadd other_kernel other_long_xxxxxxxxx\n");
	CHECK_STR_CONTAINS(run.log, "launch vadd 5 128\nlaunch vadd 7 128\nsetattr vadd 8 4096\n"
			   "setattr vadd__gpuext_flat 8 4096\nlaunch vadd__gpuext_flat 6 128\n");
	CHECK_EQ_INT(count_lines(run.log, "launch vadd "), 2);	/* 5 x 128, grid deep; 7 x 128, block */
	/* cuLaunchKernelEx: flat, the twin; with the cooperative attribute, the kernel */
	CHECK_STR_CONTAINS(run.log, "launch_ex vadd__gpuext_flat 8 32\nlaunch_ex vadd 9 32\n");
	/* the app's own refused launch (an empty grid) fails for the kernel too: the twin stays */
	CHECK_STR_CONTAINS(run.log, "launch refused\nlaunch refused\n");
	/* the refused launch and the captured one reached the driver (no record: below) */
	CHECK_STR_CONTAINS(run.log, "launch refused");
	/* a captured launch flat in z: its graph node holds the twin */
	CHECK_STR_CONTAINS(run.log, "capture_begin\nlaunch vadd__gpuext_flat 9 128\ncapture_end");
	/* the graph through the runtime's way in (cuGetProcAddress): instantiated, launched twice */
	/*
	 * Graph nodes flat in z hold the twin (the fake logs the node's kernel and
	 * its first grid); read back, the node names lib_graph; given back two
	 * deep in z, it runs lib_graph itself.
	 */
	CHECK_STR_CONTAINS(run.log, "graph_add lib_graph__gpuext_flat\n");
	CHECK_STR_CONTAINS(run.log, "graph_instantiate 1\ngraph_launch lib_graph__gpuext_flat 7 64\n"
			   "graph_launch lib_graph__gpuext_flat 7 64\ngraph_update\n"
			   "graph_exec_set lib_graph__gpuext_flat 11\n"
			   "graph_launch lib_graph__gpuext_flat 7 64\ngraph_enable 0\ngraph_update\n"
			   "graph_enable 1\ngraph_exec_set lib_graph__gpuext_flat 13\n"
			   "graph_launch lib_graph__gpuext_flat 7 64\n"
			   "graph_exec_set lib_graph__gpuext_flat 17\ngraph_launch lib_graph__gpuext_flat 7 64\n"
			   "graph_exec_set lib_graph 19\ngraph_launch lib_graph__gpuext_flat 7 64\n"
			   "graph_destroy");
	CHECK_STR_CONTAINS(run.out, "node kernel lib_graph\n");
	CHECK_STR_CONTAINS(run.log, "launch_ptsz vadd__gpuext_flat 2 64");
	/* The private pointer was matched by name: the export ran. */
	CHECK_STR_CONTAINS(run.log, "launch_ex other_kernel 3 32");
	CHECK(!strstr(run.log ? run.log : "", "launch_ex_private"));
	CHECK(run.err && !run.err[0]);	/* nothing to say on the app's stderr */

	snprintf(path, sizeof(path), "%s/kernels.txt", dir);
	txt = slurp(path, NULL);
	kernel_line(line, sizeof(line), run.pid, "instrumented", "vadd");
	CHECK_STR_CONTAINS(txt, line);
	kernel_line(line, sizeof(line), run.pid, "filtered", "other_kernel");
	CHECK_STR_CONTAINS(txt, line);
	kernel_line(line, sizeof(line), run.pid, "sass-only", "sass_kernel");
	CHECK_STR_CONTAINS(txt, line);
	kernel_line(line, sizeof(line), run.pid, "instrumented", "libk");
	CHECK_STR_CONTAINS(txt, line);
	kernel_line(line, sizeof(line), run.pid, "instrumented", "lib_noctx");
	CHECK_STR_CONTAINS(txt, line);
	kernel_line(line, sizeof(line), run.pid, "instrumented", "lib_graph");
	CHECK_STR_CONTAINS(txt, line);
	{
		/* a name of 3000 characters (tests/nv/fakeapp.c) has its whole line */
		char name[3001], big[3200];

		memcpy(name, "other_long_", 11);
		memset(name + 11, 'x', sizeof(name) - 12);
		name[sizeof(name) - 1] = '\0';
		kernel_line(big, sizeof(big), run.pid, "filtered", name);
		CHECK(strlen(big) > 3000 && big[strlen(big) - 1] == '\n');
		CHECK_STR_CONTAINS(txt, big);
	}
	CHECK_EQ_INT(count_lines(txt, "\n"), 7);	/* no duplicates from the second load */
	free(txt);

	snprintf(path, sizeof(path), "%s/launches.bin", dir);
	lr = (struct gx_launch_rec *)slurp(path, &len);
	nl = len / sizeof(*lr);
	CHECK_EQ_INT(len % sizeof(*lr), 0);
	/*
	 * 11 launches and the graph's 6 (one kernel node: launched twice; once
	 * more after an update and a new grid; twice while disabled, once after
	 * another update: no record; once more enabled with another grid; once
	 * more after cuGraphExecNodeSetParams gave it another; once more given a
	 * grid two deep in z); not the refused launch, nor the captured one.
	 */
	CHECK_EQ_INT(nl, 17);
	if (lr && nl == 17) {
		uint64_t gid = gx_kernel_id("lib_graph", 9);
		unsigned ng = 0;

		CHECK(!has_launch(lr, nl, "vadd", 0, 128, run.pid));
		CHECK(!has_launch(lr, nl, "vadd", 9, 128, run.pid));
		CHECK(has_launch(lr, nl, "lib_graph", 7, 64, run.pid));
		CHECK(has_launch(lr, nl, "lib_graph", 11, 64, run.pid));
		CHECK(has_launch(lr, nl, "lib_graph", 13, 64, run.pid));
		CHECK(has_launch(lr, nl, "lib_graph", 17, 64, run.pid));
		for (size_t i = 0; i < nl; i++)
			ng += lr[i].kernel_id == gid;
		CHECK_EQ_INT(ng, 6);
		CHECK(has_launch(lr, nl, "lib_graph", 19, 64, run.pid));
		/* a flat twin's launch is recorded as its kernel's (vadd) */
		CHECK(has_launch(lr, nl, "vadd", 4, 128, run.pid));
		CHECK(has_launch(lr, nl, "vadd", 5, 128, run.pid));
		CHECK(has_launch(lr, nl, "vadd", 6, 128, run.pid));
		CHECK(has_launch(lr, nl, "vadd", 8, 32, run.pid));
		CHECK(has_launch(lr, nl, "vadd", 9, 32, run.pid));
		CHECK(has_launch(lr, nl, "vadd", 2, 64, run.pid));
		CHECK(has_launch(lr, nl, "other_kernel", 3, 32, run.pid));
		CHECK(has_launch(lr, nl, "sass_kernel", 1, 32, run.pid));
		CHECK(has_launch(lr, nl, "libk", 5, 96, run.pid));
		CHECK(has_launch(lr, nl, "lib_noctx", 6, 32, run.pid));
		for (size_t i = 0; i < nl; i++) {
			CHECK_EQ_U64(lr[i].seq, i);
			CHECK(lr[i].host_ns > 1600000000ull * 1000000000ull);
			CHECK(i == 0 || lr[i].host_ns >= lr[i - 1].host_ns);
		}
	}
	free(lr);

	/*
	 * The ring: 3 records in shards 0, 1, 0 (of 16: 128 KiB in 8 KiB shards),
	 * each exactly once, the discarded one left out. Shards drain one after
	 * the other, so only the order within shard 0 (100 before 102) is kept.
	 */
	/* the graph node's library kernel got its tables in the node's context (GPU 0) */
	CHECK_STR_CONTAINS(run.out, "lib_graph gpu_id 2\n");	/* GPU_OF_DEV0 */
	CHECK_STR_CONTAINS(run.out, "ring_shards 16");
	CHECK_EQ_INT(gpuext_ringbuf_consumer__new(rb, on_rec, &seen, &cons), 0);
	if (cons)
		gpuext_ringbuf_consumer__consume(cons);
	CHECK_EQ_INT(seen.n, 3);
	{
		int at[3] = { -1, -1, -1 };

		for (int i = 0; i < seen.n && i < 3; i++) {
			CHECK(seen.v[i] >= 100 && seen.v[i] <= 102);
			if (seen.v[i] >= 100 && seen.v[i] <= 102) {
				CHECK_EQ_INT(at[seen.v[i] - 100], -1);	/* not twice */
				at[seen.v[i] - 100] = i;
			}
		}
		CHECK(at[0] >= 0 && at[1] >= 0 && at[2] > at[0]);
	}
	{
		uint32_t k0 = 0, k1 = 1;
		uint64_t v = 0;

		gpuext_map__lookup(arr, &k0, &v);
		CHECK_EQ_U64(v, 7);
		gpuext_map__lookup(arr, &k1, &v);
		CHECK_EQ_U64(v, 42 + 8);
		/* The device hash table's entries, in the shm hash map. */
		k0 = 7;
		v = 0;
		CHECK_EQ_INT(gpuext_map__lookup(hits, &k0, &v), 0);
		CHECK_EQ_U64(v, 70);
		k0 = 9;
		CHECK_EQ_INT(gpuext_map__lookup(hits, &k0, &v), 0);
		CHECK_EQ_U64(v, 90);
		k0 = 8;
		CHECK_EQ_INT(gpuext_map__lookup(hits, &k0, &v), -ENOENT);
	}
	snprintf(path, sizeof(path), "%s/nvprobe-%d.txt", dir, (int)run.pid);
	stats = slurp(path, NULL);
	CHECK_STR_CONTAINS(stats, "ring 'events': 3 records, 0 dropped on the device (ring "
			   "full), 0 dropped on the host (shm ring full)");
	/* The module's load in the second context found the first one's splice. */
	CHECK_STR_CONTAINS(stats, "splice cache: 1 modules from the cache, 4 spliced");
	/* vadd 4, 6, 4 (second context) and 2 x 64, libk, lib_noctx; vadd's grid deep in z */
	CHECK_STR_CONTAINS(stats, "flat twins: 7 launches ran a kernel's flat twin, 3 the kernel");
	CHECK_STR_CONTAINS(stats, "L2 policy 0x14f0000000000000: on 1 map atomics of the probes");
	free(stats);

	/* What the driver was asked to JIT is PTX that ptxas (when present) assembles. */
	if (GPUEXT_PTXAS[0] && access(GPUEXT_PTXAS, X_OK) == 0) {
		for (int i = 0; i < 2; i++) {
			char cmd[2048];

			snprintf(cmd, sizeof(cmd), "'%s' -arch=sm_90 '%s/jit-%d.ptx' -o '%s/jit-%d.cubin'",
				 GPUEXT_PTXAS, tmp, i, tmp, i);
			CHECK_EQ_INT(system(cmd), 0);
		}
	} else {
		fprintf(stderr, "test_nv_preload: no ptxas: the spliced PTX is not assembled\n");
	}

	/*
	 * The probes' map atomic carries the GPU's L2 policy (the fake's sm_90
	 * makes one: nv_maps.c, l2keep_setup), as an immediate; without a
	 * policy (the kernel refused, or GPUEXT_NV_L2_KEEP=0) the plain form is
	 * spliced again, under a key of its own.
	 */
	CHECK_STR_CONTAINS(run.log, "l2keep 0x14f0000000000000");
	run_free(&run);
	snprintf(path, sizeof(path), "%s/jit-0.ptx", tmp);
	txt = slurp(path, NULL);
	CHECK_STR_CONTAINS(txt, "atom.global.add.L2::cache_hint.u64");
	CHECK_STR_CONTAINS(txt, ", 0x14f0000000000000;");
	/* vadd and its flat twin, whose probe reads the constant */
	CHECK_STR_CONTAINS(txt, ".visible .entry vadd(");
	CHECK_STR_CONTAINS(txt, ".visible .entry vadd__gpuext_flat(");
	CHECK(strstr(txt, "mov.u32 %zr, %ctaid.z;") &&
	      strstr(txt, "mov.u32 %zr, %ctaid.z;") < strstr(txt, ".entry vadd__gpuext_flat("));
	CHECK(strstr(txt, "mov.u32 %zr, 0;") &&
	      strstr(txt, "mov.u32 %zr, 0;") > strstr(txt, ".entry vadd__gpuext_flat("));
	free(txt);
	/*
	 * A twin that needs more registers than the kernel never runs (a launch
	 * the app sized for the kernel could fail); nor one that refused an
	 * attribute the app set, from then on.
	 */
	{
		/* more registers, local memory, or a smaller largest block: each alone */
		static const char *const more[][2] = { { "FAKECUDA_TWIN_REGS", "40" },
						       { "FAKECUDA_TWIN_LOCAL", "16" },
						       { "FAKECUDA_TWIN_THREADS", "512" } };

		for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++) {
			run_app_with(more[i][0], more[i][1], dir, cache, tmp, &run);
			CHECK_STR_CONTAINS(run.log, "launch vadd 4 128");
			CHECK_STR_CONTAINS(run.log, "launch vadd 6 128");
			CHECK(!strstr(run.log, "launch vadd__gpuext_flat"));
			run_free(&run);
		}
	}
	/* a twin the driver refuses where it takes the kernel: the kernel, then and from then on */
	run_app_with("FAKECUDA_TWIN_LAUNCH_FAIL", "1", dir, cache, tmp, &run);
	CHECK_STR_CONTAINS(run.log, "launch vadd__gpuext_flat refused\nlaunch vadd 4 128\n");
	CHECK_STR_CONTAINS(run.log, "launch vadd 6 128\n");
	CHECK_EQ_INT(count_lines(run.log, "launch vadd__gpuext_flat refused"), 1);
	CHECK_STR_CONTAINS(run.err, "flat twin could not be launched where the kernel could");
	run_free(&run);
	run_app_with("FAKECUDA_TWIN_SETATTR_FAIL", "1", dir, cache, tmp, &run);
	CHECK_STR_CONTAINS(run.log, "launch vadd__gpuext_flat 4 128\n");
	CHECK_STR_CONTAINS(run.log, "setattr vadd 8 4096\nsetattr vadd__gpuext_flat refused\n"
			   "launch vadd 6 128\n");
	run_free(&run);
	for (int how = 0; how < 2; how++) {
		setenv(how ? "GPUEXT_NV_L2_KEEP" : "FAKECUDA_L2_KEEP_FAIL", how ? "0" : "1", 1);
		run_app(dir, cache, tmp, false, NULL, NULL, &run);
		unsetenv(how ? "GPUEXT_NV_L2_KEEP" : "FAKECUDA_L2_KEEP_FAIL");
		CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
		if (how) {
			CHECK(!strstr(run.err, "L2 policy") && !strstr(run.log, "l2keep"));
		} else {
			CHECK_STR_CONTAINS(run.err, "no L2 policy for the probes' map atomics "
					   "(launching the policy kernel: ");
			CHECK_STR_CONTAINS(run.log, "l2keep refused");
		}
		snprintf(path, sizeof(path), "%s/nvprobe-%d.txt", dir, (int)run.pid);
		stats = slurp(path, NULL);
		CHECK_STR_CONTAINS(stats, "L2 policy: none");
		/* spliced without the hint once, then from the cache */
		CHECK_STR_CONTAINS(stats, how ? "splice cache: 5 modules from the cache, 0 spliced" :
					       "splice cache: 1 modules from the cache, 4 spliced");
		free(stats);
		snprintf(path, sizeof(path), "%s/jit-0.ptx", tmp);
		txt = slurp(path, NULL);
		CHECK(txt && !strstr(txt, "L2::cache_hint"));
		CHECK_STR_CONTAINS(txt, "atom.global.add.u64");
		free(txt);
		run_free(&run);
	}

	/* 2. Warm cache: every module and library comes spliced from the cache. */
	run_app(dir, cache, tmp, false, NULL, NULL, &run);
	CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CHECK_STR_CONTAINS(run.log, "modload_ex ptx spliced=1");
	CHECK_EQ_INT(count_lines(run.log, "jit "), 5);
	snprintf(path, sizeof(path), "%s/nvprobe-%d.txt", dir, (int)run.pid);
	stats = slurp(path, NULL);
	CHECK_STR_CONTAINS(stats, "splice cache: 5 modules from the cache, 0 spliced");
	free(stats);
	run_free(&run);

	/* 3. No GPUEXT_TRACE_DIR: one line, everything passes through. */
	run_app(NULL, cache, tmp, false, NULL, NULL, &run);
	CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CHECK_STR_CONTAINS(run.err, "GPUEXT_TRACE_DIR is not set");
	CHECK_EQ_INT(count_lines(run.err, "\n"), 1);
	CHECK_STR_CONTAINS(run.log, "modload ptx spliced=0");
	CHECK_STR_CONTAINS(run.log, "launch_ex_private other_kernel 3 32");
	CHECK_STR_CONTAINS(run.out, "table no");
	CHECK_STR_CONTAINS(run.out, "rtld_next ok");
	run_free(&run);

	/* 4. A directory without a pack: one clear line, pass through. */
	run_app(bad, cache, tmp, false, NULL, NULL, &run);
	CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CHECK_STR_CONTAINS(run.err, "cannot use the probe pack");
	CHECK_EQ_INT(count_lines(run.err, "\n"), 1);
	CHECK_STR_CONTAINS(run.log, "modload ptx spliced=0");
	run_free(&run);

	/* 5. The JIT fails (fresh cache): original modules, loudly, and error: in kernels.txt. */
	snprintf(cache, sizeof(cache), "%s/cache2", tmp);
	run_app(dir, cache, tmp, true, NULL, NULL, &run);
	CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CHECK_STR_CONTAINS(run.err, "UNINSTRUMENTED");
	CHECK_STR_CONTAINS(run.err, "JIT refused");
	CHECK_STR_CONTAINS(run.err, "fake refusal of the spliced PTX");
	CHECK_STR_CONTAINS(run.log, "modload ptx spliced=0");
	snprintf(path, sizeof(path), "%s/kernels.txt", dir);
	txt = slurp(path, NULL);
	kernel_line(line, sizeof(line), run.pid, "error:jit", "vadd");
	CHECK_STR_CONTAINS(txt, line);
	free(txt);
	run_free(&run);

	/*
	 * 6. Clock calibration (GPUEXT_CLOCK_SYNC=1, as `gpuext trace launchlate` sets):
	 * the fake's "%globaltimer" runs 65.7001 ms behind CLOCK_REALTIME; the
	 * offset measured must hold it within its stated uncertainty. Without the
	 * switch (runs 1-5) no calibration kernel ran.
	 */
	snprintf(path, sizeof(path), "%s/clock-%d-3.txt", dir, (int)run.pid);
	CHECK(access(path, F_OK) != 0);
	setenv("GPUEXT_CLOCK_SYNC", "1", 1);
	setenv("FAKECUDA_CLOCK_OFFSET_NS", "-65700123", 1);
	run_app(dir, cache, tmp, false, NULL, NULL, &run);
	unsetenv("GPUEXT_CLOCK_SYNC");
	unsetenv("FAKECUDA_CLOCK_OFFSET_NS");
	CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CHECK_STR_CONTAINS(run.log, "clock_sync 20 rounds");
	CHECK(!strstr(run.err, "clock calibration failed"));
	snprintf(path, sizeof(path), "%s/clock-%d-3.txt", dir, (int)run.pid);
	txt = slurp(path, NULL);
	CHECK(txt != NULL);
	if (txt) {
		const char *p = strstr(txt, "\npid ");
		unsigned cpid = 0, rounds = 0;
		int gpu = -1;
		long long off = 0;
		unsigned long long unc = ~0ull;

		CHECK(p && sscanf(p + 1, "pid %u gpu %d offset_ns %lld uncertainty_ns %llu rounds %u",
				  &cpid, &gpu, &off, &unc, &rounds) == 5);
		CHECK_EQ_INT(cpid, (unsigned)run.pid);
		CHECK_EQ_INT(gpu, GPU_OF_DEV1);
		CHECK_EQ_INT(rounds, 20);
		CHECK(unc < 20000000ull);	/* a round trip between two threads */
		CHECK(off >= -65700123ll - (long long)unc && off <= -65700123ll + (long long)unc);
		if (off < -65700123ll - (long long)unc || off > -65700123ll + (long long)unc)
			fprintf(stderr, "clock offset %lld +- %llu, want -65700123\n", off, unc);
	}
	free(txt);
	run_free(&run);

	/*
	 * 7. No list holds the app's GPU (here: one that lists two others): GPU
	 * ids are the process's device numbers, and stderr says so once, why
	 * and what it means.
	 */
	snprintf(path, sizeof(path), "%s/other", tmp);
	mkdir(path, 0755);
	touch_in(path, "0000:40:00.0");
	touch_in(path, "0000:41:00.0");
	snprintf(gpu_list, sizeof(gpu_list), "%s", path);
	run_app(dir, cache, tmp, false, NULL, NULL, &run);
	CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CHECK_STR_CONTAINS(run.out, "gpu_id 1\n");
	CHECK_STR_CONTAINS(run.out, "lib_graph gpu_id 0\n");
	CHECK_STR_CONTAINS(run.err, "CUDA device 1's GPU id is its device number, not the "
			   "system's (GPU 0000:1E:00.0 is in no list of the system's GPUs (");
	CHECK_STR_CONTAINS(run.err, "/other lists 2 GPUs, not it)): processes given different "
			   "GPUs may share ids\n");
	CHECK_STR_CONTAINS(run.err, "CUDA device 0's GPU id is its device number, not the "
			   "system's (GPU 0000:1D:00.0 is in no list");
	CHECK_EQ_INT(count_lines(run.err, "GPU id is its device number"), 2);	/* once a device */
	run_free(&run);
	/* The driver cannot say where the GPU is: the same, with its error. */
	setenv("FAKECUDA_BUS_ID_FAIL", "1", 1);
	run_app(dir, cache, tmp, false, NULL, NULL, &run);
	unsetenv("FAKECUDA_BUS_ID_FAIL");
	CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	CHECK_STR_CONTAINS(run.out, "gpu_id 1\n");
	CHECK_STR_CONTAINS(run.err, "CUDA device 1's GPU id is its device number, not the "
			   "system's (cuDeviceGetPCIBusId: CUDA_ERROR_NOT_FOUND)");
	run_free(&run);
out:
	gpuext_ringbuf_consumer__free(cons);
	gpuext_runtime__free(rt);
	remove_tmp(tmp);
}
#endif

int main(void)
{
	test_entries();
	test_filter_and_line();
	test_sync_gap();
	test_gpu_rank();
	test_pick_version();
	test_fold();
	test_shm();
	test_value_sub();
	test_shm_hash();
#ifdef GPUEXT_NVPROBE_SO
	test_e2e();
	test_cudart_exit();
#else
	fprintf(stderr, "test_nv_preload: libgpuext-nvprobe.so is not built here (see "
		"hal/nvidia/nvidia.cmake): end-to-end part skipped\n");
#endif
	return test_done("test_nv_preload");
}

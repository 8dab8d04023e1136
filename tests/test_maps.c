/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host maps: array, percpu_array, hash, lru_hash, through both the
 * user-space API and the program-side seams, plus every definition error.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "maps_impl.h"
#include "testlib.h"

static struct test_log logbuf;

static struct gpuext_runtime *new_rt(uint32_t slots)
{
	GPUEXT_OPTS(gpuext_runtime_opts, opts, .print = test_log_print, .print_user = &logbuf,
		    .nr_cpu_slots = slots);
	struct gpuext_runtime *rt = NULL;

	CHECK_EQ_INT(gpuext_runtime__new(&opts, &rt), 0);
	return rt;
}

static struct gpuext_map *mk(struct gpuext_runtime *rt, const char *name, uint32_t type,
			     uint32_t ks, uint32_t vs, uint32_t max, uint32_t flags)
{
	GPUEXT_OPTS(gpuext_map_def, def, .name = name, .type = type, .key_size = ks,
		    .value_size = vs, .max_entries = max, .map_flags = flags);
	struct gpuext_map *map = NULL;
	int err = gpuext_map__create(rt, &def, &map);

	CHECK_EQ_INT(err, 0);
	if (err)
		fprintf(stderr, "create '%s' failed: %s\n", name, logbuf.buf);
	return map;
}

static void test_array(struct gpuext_runtime *rt)
{
	struct gpuext_map *m = mk(rt, "arr", BPF_MAP_TYPE_ARRAY, 4, 12, 5, 0);
	uint8_t val[12], got[12];
	uint32_t k, next;

	if (!m)
		return;
	CHECK(gpuext_map__id(m) >= 1);
	CHECK(gpuext_runtime__map_by_id(rt, gpuext_map__id(m)) == m);
	CHECK(!strcmp(gpuext_map__name(m), "arr"));
	CHECK_EQ_INT(gpuext_map__type(m), BPF_MAP_TYPE_ARRAY);
	CHECK_EQ_INT(gpuext_map__key_size(m), 4);
	CHECK_EQ_INT(gpuext_map__value_size(m), 12);
	CHECK_EQ_INT(gpuext_map__max_entries(m), 5);

	/* Zero-initialised. */
	for (k = 0; k < 5; k++) {
		memset(got, 0xff, sizeof(got));
		CHECK_EQ_INT(gpuext_map__lookup(m, &k, got), 0);
		CHECK_EQ_U64(got[0] | got[11], 0);
	}
	for (k = 0; k < 5; k++) {
		for (int i = 0; i < 12; i++)
			val[i] = (uint8_t)(k * 16 + i);
		CHECK_EQ_INT(gpuext_map__update(m, &k, val, BPF_ANY), 0);
	}
	k = 3;
	CHECK_EQ_INT(gpuext_map__lookup(m, &k, got), 0);
	CHECK_EQ_INT(got[0], 0x30);
	CHECK_EQ_INT(got[11], 0x3b);
	/* Values are 8-byte strided: entry 3 starts at 3 * 16 bytes. */
	uint8_t *p = gpuext_map_prog_lookup(m, &k, 0);
	k = 0;
	CHECK(p == (uint8_t *)gpuext_map_prog_lookup(m, &k, 0) + 48);
	CHECK_EQ_INT(p[1], 0x31);
	/* Program-side writes are seen by user space. */
	p[0] = 0xaa;
	k = 3;
	CHECK_EQ_INT(gpuext_map__lookup(m, &k, got), 0);
	CHECK_EQ_INT(got[0], 0xaa);
	val[0] = 0x77;
	CHECK_EQ_INT(gpuext_map_prog_update(m, &k, val, BPF_EXIST, 0), 0);
	CHECK_EQ_INT(p[0], 0x77);

	k = 5;
	CHECK_EQ_INT(gpuext_map__lookup(m, &k, got), -ENOENT);
	CHECK_EQ_INT(errno, ENOENT);
	CHECK_EQ_INT(gpuext_map__update(m, &k, val, BPF_ANY), -E2BIG);
	CHECK(gpuext_map_prog_lookup(m, &k, 0) == NULL);
	k = 1;
	CHECK_EQ_INT(gpuext_map__update(m, &k, val, BPF_NOEXIST), -EEXIST);
	CHECK_EQ_INT(gpuext_map__update(m, &k, val, BPF_F_LOCK), -EINVAL);
	CHECK_EQ_INT(gpuext_map__delete(m, &k), -EINVAL);
	CHECK_EQ_INT(gpuext_map_prog_delete(m, &k), -EINVAL);

	/* next_key: 0..4 then -ENOENT; past the end restarts at 0. */
	CHECK_EQ_INT(gpuext_map__next_key(m, NULL, &next), 0);
	CHECK_EQ_INT(next, 0);
	for (k = 0; k < 4; k++) {
		CHECK_EQ_INT(gpuext_map__next_key(m, &k, &next), 0);
		CHECK_EQ_INT(next, k + 1);
	}
	CHECK_EQ_INT(gpuext_map__next_key(m, &k, &next), -ENOENT);
	k = 99;
	CHECK_EQ_INT(gpuext_map__next_key(m, &k, &next), 0);
	CHECK_EQ_INT(next, 0);

	/* direct value: key 0 + off, off < value_size. */
	k = 0;
	CHECK(gpuext_map_direct_value(m, 0) == gpuext_map_prog_lookup(m, &k, 0));
	CHECK(gpuext_map_direct_value(m, 11) == (uint8_t *)gpuext_map_prog_lookup(m, &k, 0) + 11);
	CHECK(gpuext_map_direct_value(m, 12) == NULL);
	gpuext_map__destroy(m);
}

static void test_percpu(void)
{
	struct gpuext_runtime *rt = new_rt(4);
	struct gpuext_map *m = mk(rt, "pc", BPF_MAP_TYPE_PERCPU_ARRAY, 4, 4, 3, 0);
	uint32_t k = 1, v, all[4 * 2], got[4 * 2];

	if (!m)
		goto out;
	/* Program side: each slot on its own. */
	for (uint32_t cpu = 0; cpu < 4; cpu++) {
		v = 100 + cpu;
		CHECK_EQ_INT(gpuext_map_prog_update(m, &k, &v, BPF_ANY, cpu), 0);
	}
	for (uint32_t cpu = 0; cpu < 4; cpu++) {
		uint32_t *p = gpuext_map_prog_lookup(m, &k, cpu);

		CHECK(p != NULL);
		if (p)
			CHECK_EQ_INT(*p, 100 + cpu);
	}
	CHECK(gpuext_map_prog_lookup(m, &k, 4) == NULL);
	CHECK_EQ_INT(gpuext_map_prog_update(m, &k, &v, BPF_ANY, 4), -EINVAL);
	/* Slots are 8 bytes apart (value 4 rounded up). */
	CHECK((uint8_t *)gpuext_map_prog_lookup(m, &k, 1) ==
	      (uint8_t *)gpuext_map_prog_lookup(m, &k, 0) + 8);

	/* User space: all slots, each padded to 8 bytes. */
	memset(got, 0xee, sizeof(got));
	CHECK_EQ_INT(gpuext_map__lookup(m, &k, got), 0);
	for (uint32_t cpu = 0; cpu < 4; cpu++) {
		CHECK_EQ_INT(got[2 * cpu], 100 + cpu);
		CHECK_EQ_INT(got[2 * cpu + 1], 0);
	}
	for (uint32_t cpu = 0; cpu < 4; cpu++) {
		all[2 * cpu] = 7000 + cpu;
		all[2 * cpu + 1] = 0xdead;	/* padding: must not be stored */
	}
	k = 2;
	CHECK_EQ_INT(gpuext_map__update(m, &k, all, BPF_ANY), 0);
	CHECK_EQ_INT(*(uint32_t *)gpuext_map_prog_lookup(m, &k, 3), 7003);
	CHECK_EQ_INT(*(uint32_t *)((uint8_t *)gpuext_map_prog_lookup(m, &k, 0) + 4), 0);
	/* Neighbouring entries are untouched. */
	k = 1;
	CHECK_EQ_INT(*(uint32_t *)gpuext_map_prog_lookup(m, &k, 3), 103);
	k = 0;
	CHECK_EQ_INT(gpuext_map__lookup(m, &k, got), 0);
	CHECK_EQ_INT(got[0] | got[2] | got[4] | got[6], 0);
	/* Program-side update writes only its slot. */
	v = 55;
	k = 2;
	CHECK_EQ_INT(gpuext_map_prog_update(m, &k, &v, BPF_ANY, 1), 0);
	CHECK_EQ_INT(gpuext_map__lookup(m, &k, got), 0);
	CHECK_EQ_INT(got[0], 7000);
	CHECK_EQ_INT(got[2], 55);
	CHECK_EQ_INT(got[4], 7002);
	CHECK(gpuext_map_direct_value(m, 0) == NULL);	/* per-CPU: no single address */
	gpuext_map__destroy(m);
out:
	gpuext_runtime__free(rt);
}

struct key12 {
	uint32_t a, b, c;
};

static void test_hash(struct gpuext_runtime *rt)
{
	struct gpuext_map *m = mk(rt, "h", BPF_MAP_TYPE_HASH, 12, 8, 64, 0);
	struct key12 k = { 1, 2, 3 }, nk;
	uint64_t v = 11, got = 0;

	if (!m)
		return;
	CHECK_EQ_INT(gpuext_map__lookup(m, &k, &got), -ENOENT);
	CHECK_EQ_INT(gpuext_map__update(m, &k, &v, BPF_EXIST), -ENOENT);
	CHECK_EQ_INT(gpuext_map__update(m, &k, &v, BPF_NOEXIST), 0);
	CHECK_EQ_INT(gpuext_map__update(m, &k, &v, BPF_NOEXIST), -EEXIST);
	CHECK_EQ_INT(errno, EEXIST);
	CHECK_EQ_INT(gpuext_map__lookup(m, &k, &got), 0);
	CHECK_EQ_U64(got, 11);
	v = 12;
	CHECK_EQ_INT(gpuext_map__update(m, &k, &v, BPF_EXIST), 0);
	CHECK_EQ_INT(gpuext_map__lookup(m, &k, &got), 0);
	CHECK_EQ_U64(got, 12);
	v = 13;
	CHECK_EQ_INT(gpuext_map__update(m, &k, &v, BPF_ANY), 0);
	uint64_t *pv = gpuext_map_prog_lookup(m, &k, 0);
	CHECK(pv != NULL);
	if (pv) {
		CHECK_EQ_U64(*pv, 13);
		*pv = 14;	/* programs write values in place */
	}
	CHECK_EQ_INT(gpuext_map__lookup(m, &k, &got), 0);
	CHECK_EQ_U64(got, 14);
	CHECK_EQ_INT(gpuext_map__update(m, &k, &v, 4 /* BPF_F_LOCK */), -EINVAL);
	CHECK_EQ_INT(gpuext_map__delete(m, &k), 0);
	CHECK_EQ_INT(gpuext_map__delete(m, &k), -ENOENT);
	CHECK_EQ_INT(gpuext_map__lookup(m, &k, &got), -ENOENT);
	CHECK(gpuext_map_prog_lookup(m, &k, 0) == NULL);
	CHECK_EQ_INT(gpuext_map__next_key(m, NULL, &nk), -ENOENT);

	/* Fill to max_entries, then one more is -E2BIG; values exact. */
	for (uint32_t i = 0; i < 64; i++) {
		struct key12 key = { i, ~i, i * 7 };
		uint64_t val = 1000 + i;

		CHECK_EQ_INT(gpuext_map_prog_update(m, &key, &val, BPF_ANY, 0), 0);
	}
	k = (struct key12){ 64, ~64u, 64 * 7 };
	CHECK_EQ_INT(gpuext_map__update(m, &k, &v, BPF_ANY), -E2BIG);
	CHECK_EQ_INT(gpuext_map_prog_update(m, &k, &v, BPF_ANY, 0), -E2BIG);
	CHECK_EQ_U64(atomic_load(&m->hdr->count), 64);
	for (uint32_t i = 0; i < 64; i++) {
		struct key12 key = { i, ~i, i * 7 };

		got = 0;
		CHECK_EQ_INT(gpuext_map__lookup(m, &key, &got), 0);
		CHECK_EQ_U64(got, 1000 + i);
	}
	/* next_key visits every key exactly once. */
	uint8_t seen[64] = { 0 };
	int n = 0;
	for (int err = gpuext_map__next_key(m, NULL, &nk); !err;
	     err = gpuext_map__next_key(m, &nk, &nk)) {
		CHECK(nk.a < 64 && nk.b == ~nk.a);
		if (nk.a < 64)
			seen[nk.a]++;
		if (++n > 100)
			break;
	}
	CHECK_EQ_INT(n, 64);
	for (int i = 0; i < 64; i++)
		CHECK_EQ_INT(seen[i], 1);
	/* A missing key restarts at the first one. */
	struct key12 first, missing = { 999, 0, 0 };
	CHECK_EQ_INT(gpuext_map__next_key(m, NULL, &first), 0);
	CHECK_EQ_INT(gpuext_map__next_key(m, &missing, &nk), 0);
	CHECK(!memcmp(&nk, &first, sizeof(nk)));
	/* Deleting frees room for exactly one more. */
	k = (struct key12){ 5, ~5u, 35 };
	CHECK_EQ_INT(gpuext_map_prog_delete(m, &k), 0);
	CHECK_EQ_INT(gpuext_map_prog_delete(m, &k), -ENOENT);
	k = (struct key12){ 64, ~64u, 64 * 7 };
	CHECK_EQ_INT(gpuext_map__update(m, &k, &v, BPF_NOEXIST), 0);
	k.a = 65;
	CHECK_EQ_INT(gpuext_map__update(m, &k, &v, BPF_NOEXIST), -E2BIG);
	gpuext_map__destroy(m);
}

/* Many keys in one bucket: chains, deletes in the middle, reinsertion. */
static void test_hash_collisions(struct gpuext_runtime *rt)
{
	struct gpuext_map *m = mk(rt, "coll", BPF_MAP_TYPE_HASH, 8, 8, 4096, 0);
	uint64_t keys[40], v, got, key;
	uint32_t b0;
	int n = 0;

	if (!m)
		return;
	key = 0;
	b0 = gpuext_map_hash_bucket(m, &key);
	for (key = 0; n < 40 && key < 10000000; key++)
		if (gpuext_map_hash_bucket(m, &key) == b0)
			keys[n++] = key;
	CHECK_EQ_INT(n, 40);
	for (int i = 0; i < n; i++) {
		v = keys[i] * 3;
		CHECK_EQ_INT(gpuext_map__update(m, &keys[i], &v, BPF_NOEXIST), 0);
	}
	CHECK_EQ_INT(m->buckets[b0] != GPUEXT_SHM_NIL, 1);
	for (int i = 0; i < n; i++) {
		CHECK_EQ_INT(gpuext_map__lookup(m, &keys[i], &got), 0);
		CHECK_EQ_U64(got, keys[i] * 3);
	}
	/* Delete every third (head, middle and tail of the chain). */
	for (int i = 0; i < n; i += 3)
		CHECK_EQ_INT(gpuext_map__delete(m, &keys[i]), 0);
	for (int i = 0; i < n; i++) {
		int err = gpuext_map__lookup(m, &keys[i], &got);

		CHECK_EQ_INT(err, i % 3 == 0 ? -ENOENT : 0);
		if (!err)
			CHECK_EQ_U64(got, keys[i] * 3);
	}
	/* next_key across the chain sees exactly the survivors. */
	int cnt = 0, err;
	uint64_t nk;
	for (err = gpuext_map__next_key(m, NULL, &nk); !err; err = gpuext_map__next_key(m, &nk, &nk)) {
		bool found = false;

		for (int i = 0; i < n; i++)
			found |= keys[i] == nk && i % 3 != 0;
		CHECK(found);
		cnt++;
	}
	CHECK_EQ_INT(err, -ENOENT);
	CHECK_EQ_INT(cnt, n - (n + 2) / 3);
	for (int i = 0; i < n; i += 3) {
		v = 1;
		CHECK_EQ_INT(gpuext_map__update(m, &keys[i], &v, BPF_NOEXIST), 0);
	}
	CHECK_EQ_U64(atomic_load(&m->hdr->count), n);
	gpuext_map__destroy(m);
}

static void test_lru(struct gpuext_runtime *rt)
{
	struct gpuext_map *m = mk(rt, "lru", BPF_MAP_TYPE_LRU_HASH, 4, 8, 4, 0);
	uint32_t k;
	uint64_t v, got;

	if (!m)
		return;
	for (k = 1; k <= 4; k++) {
		v = k * 10;
		CHECK_EQ_INT(gpuext_map__update(m, &k, &v, BPF_NOEXIST), 0);
	}
	/* Order of use now (oldest first): 1 2 3 4. A program lookup of 1 refreshes it. */
	k = 1;
	CHECK(gpuext_map_prog_lookup(m, &k, 0) != NULL);
	/* A user-space lookup of 2 is not a use (as in the kernel). */
	k = 2;
	CHECK_EQ_INT(gpuext_map__lookup(m, &k, &got), 0);
	/* Inserting 5 evicts 2, the least recently used. */
	k = 5;
	v = 50;
	CHECK_EQ_INT(gpuext_map__update(m, &k, &v, BPF_NOEXIST), 0);
	k = 2;
	CHECK_EQ_INT(gpuext_map__lookup(m, &k, &got), -ENOENT);
	for (uint32_t want = 1; want <= 5; want++) {
		if (want == 2)
			continue;
		k = want;
		CHECK_EQ_INT(gpuext_map__lookup(m, &k, &got), 0);
		CHECK_EQ_U64(got, want * 10);
	}
	/* Now oldest first: 3 4 1 5. Updating 3 makes it newest: 4 goes next. */
	k = 3;
	v = 33;
	CHECK_EQ_INT(gpuext_map__update(m, &k, &v, BPF_EXIST), 0);
	k = 6;
	CHECK_EQ_INT(gpuext_map_prog_update(m, &k, &v, BPF_ANY, 0), 0);
	k = 4;
	CHECK_EQ_INT(gpuext_map__lookup(m, &k, &got), -ENOENT);
	/* Oldest first: 1 5 3 6. Delete 5, insert 7 uses the free slot: nothing evicted. */
	k = 5;
	CHECK_EQ_INT(gpuext_map__delete(m, &k), 0);
	k = 7;
	CHECK_EQ_INT(gpuext_map__update(m, &k, &v, BPF_ANY), 0);
	uint32_t present[] = { 1, 3, 6, 7 };
	for (size_t i = 0; i < 4; i++)
		CHECK_EQ_INT(gpuext_map__lookup(m, &present[i], &got), 0);
	CHECK_EQ_U64(atomic_load(&m->hdr->count), 4);
	/* Oldest is 1 now: an 8th key evicts it. */
	k = 8;
	CHECK_EQ_INT(gpuext_map__update(m, &k, &v, BPF_ANY), 0);
	k = 1;
	CHECK_EQ_INT(gpuext_map__lookup(m, &k, &got), -ENOENT);
	gpuext_map__destroy(m);

	/* Scan resistance is not promised: plain LRU over 100 keys in a 10-entry map. */
	m = mk(rt, "lru2", BPF_MAP_TYPE_LRU_HASH, 4, 8, 10, 0);
	if (!m)
		return;
	for (k = 0; k < 100; k++) {
		v = k;
		CHECK_EQ_INT(gpuext_map__update(m, &k, &v, BPF_ANY), 0);
	}
	int present_cnt = 0;
	for (k = 0; k < 100; k++) {
		int err = gpuext_map__lookup(m, &k, &got);

		CHECK_EQ_INT(err, k >= 90 ? 0 : -ENOENT);
		present_cnt += !err;
	}
	CHECK_EQ_INT(present_cnt, 10);
	gpuext_map__destroy(m);
}

static void test_contains(struct gpuext_runtime *rt)
{
	struct gpuext_map *a = mk(rt, "ca", BPF_MAP_TYPE_ARRAY, 4, 6, 3, 0);
	struct gpuext_map *ro = mk(rt, "ro", BPF_MAP_TYPE_ARRAY, 4, 8, 1, BPF_F_RDONLY_PROG);
	struct gpuext_map *h = mk(rt, "ch", BPF_MAP_TYPE_HASH, 4, 12, 4, 0);
	uint32_t k = 0;
	uint64_t v[2] = { 0 };

	if (!a || !ro || !h)
		goto out;
	uint64_t base = (uint64_t)(uintptr_t)gpuext_map_prog_lookup(a, &k, 0);
	/* Array: 3 entries x 8-byte stride = 24 bytes of value storage. */
	CHECK(gpuext_map_contains(a, base, 6, true));
	CHECK(gpuext_map_contains(a, base, 24, true));
	CHECK(gpuext_map_contains(a, base + 23, 1, false));
	CHECK(!gpuext_map_contains(a, base + 23, 2, false));
	CHECK(!gpuext_map_contains(a, base - 1, 1, false));
	CHECK(!gpuext_map_contains(a, base - 1, 2, false));
	CHECK(!gpuext_map_contains(a, base, UINT64_MAX, false));
	CHECK(!gpuext_map_contains(a, UINT64_MAX, 2, false));

	uint64_t rbase = (uint64_t)(uintptr_t)gpuext_map_direct_value(ro, 0);
	CHECK(gpuext_map_contains(ro, rbase, 8, false));
	CHECK(!gpuext_map_contains(ro, rbase, 8, true));
	CHECK(!gpuext_map_contains(ro, rbase + 4, 1, true));
	CHECK(!gpuext_map_contains(ro, rbase, 9, false));
	CHECK(!gpuext_map_contains(a, rbase, 1, false));
	/* Programs cannot write a read-only map through helpers either; user space can. */
	CHECK_EQ_INT(gpuext_map_prog_update(ro, &k, v, BPF_ANY, 0), -EPERM);
	v[0] = 0x1234;
	CHECK_EQ_INT(gpuext_map__update(ro, &k, v, BPF_ANY), 0);
	CHECK_EQ_U64(*(uint64_t *)gpuext_map_direct_value(ro, 0), 0x1234);
	struct gpuext_map *rh = mk(rt, "rh", BPF_MAP_TYPE_HASH, 4, 8, 2, BPF_F_RDONLY_PROG);
	if (rh) {
		CHECK_EQ_INT(gpuext_map__update(rh, &k, v, BPF_ANY), 0);
		CHECK_EQ_INT(gpuext_map_prog_update(rh, &k, v, BPF_ANY, 0), -EPERM);
		CHECK_EQ_INT(gpuext_map_prog_delete(rh, &k), -EPERM);
		uint64_t *rv = gpuext_map_prog_lookup(rh, &k, 0);
		CHECK(rv && *rv == 0x1234);
		CHECK(rv && !gpuext_map_contains(rh, (uintptr_t)rv, 8, true));
		CHECK(rv && gpuext_map_contains(rh, (uintptr_t)rv, 8, false));
		gpuext_map__destroy(rh);
	}
	v[0] = 0;

	k = 9;
	CHECK_EQ_INT(gpuext_map__update(h, &k, v, BPF_ANY), 0);
	uint64_t hv = (uint64_t)(uintptr_t)gpuext_map_prog_lookup(h, &k, 0);
	CHECK(hv != 0);
	CHECK(gpuext_map_contains(h, hv, 12, true));
	CHECK(gpuext_map_contains(h, hv + 11, 1, true));
	CHECK(!gpuext_map_contains(h, hv, 13, false));	/* runs past the value */
	CHECK(!gpuext_map_contains(h, hv - 1, 1, false));	/* the key's padding */
	CHECK(!gpuext_map_contains(h, hv - 8, 4, false));	/* the key itself */
	CHECK(!gpuext_map_contains(h, hv + 12, 4, false));	/* value padding */
out:
	gpuext_map__destroy(a);
	gpuext_map__destroy(ro);
	gpuext_map__destroy(h);
}

static void test_set_initial(struct gpuext_runtime *rt)
{
	struct gpuext_map *m = mk(rt, "obj.rodata", BPF_MAP_TYPE_ARRAY, 4, 16, 1,
				  BPF_F_RDONLY_PROG | BPF_F_MMAPABLE);
	struct gpuext_map *big = mk(rt, "big", BPF_MAP_TYPE_ARRAY, 4, 16, 2, 0);
	const char init[] = "hello, gpu";
	uint8_t got[16];
	uint32_t k = 0;

	if (!m || !big)
		goto out;
	CHECK_EQ_INT(gpuext_map_set_initial(m, init, sizeof(init)), 0);
	CHECK_EQ_INT(gpuext_map__lookup(m, &k, got), 0);
	CHECK(!memcmp(got, init, sizeof(init)));
	CHECK_EQ_INT(got[15], 0);
	CHECK(!strcmp(gpuext_map_direct_value(m, 0), "hello, gpu"));
	CHECK(!strcmp(gpuext_map_direct_value(m, 7), "gpu"));
	test_log_clear(&logbuf);
	CHECK_EQ_INT(gpuext_map_set_initial(m, got, 17), -E2BIG);
	CHECK_STR_CONTAINS(logbuf.buf, "map 'obj.rodata': initial value of 17 bytes does not fit its value_size 16");
	CHECK_EQ_INT(gpuext_map_set_initial(big, got, 4), -EINVAL);
	CHECK_STR_CONTAINS(logbuf.buf, "map 'big': an initial value needs a 1-entry array map");
out:
	gpuext_map__destroy(m);
	gpuext_map__destroy(big);
}

struct bad_case {
	const char *name;
	uint32_t type, ks, vs, max, flags;
	int err;
	const char *msg;
};

static void test_bad_defs(struct gpuext_runtime *rt)
{
	static const struct bad_case cases[] = {
		{ "counts", BPF_MAP_TYPE_ARRAY, 0, 8, 4, 0, -EINVAL,
		  "map 'counts': key_size 0 is invalid: array maps need key_size 4" },
		{ "a8", BPF_MAP_TYPE_ARRAY, 8, 8, 4, 0, -EINVAL,
		  "map 'a8': key_size 8 is invalid: array maps need key_size 4" },
		{ "h0", BPF_MAP_TYPE_HASH, 0, 8, 4, 0, -EINVAL,
		  "map 'h0': key_size 0 is invalid: hash maps need a key of 1 to 512 bytes" },
		{ "hk", BPF_MAP_TYPE_HASH, 513, 8, 4, 0, -E2BIG,
		  "map 'hk': key_size 513 is too large: at most 512 bytes" },
		{ "v0", BPF_MAP_TYPE_HASH, 4, 0, 4, 0, -EINVAL,
		  "map 'v0': value_size 0 is invalid" },
		{ "vbig", BPF_MAP_TYPE_ARRAY, 4, (1u << 20) + 1, 1, 0, -E2BIG,
		  "map 'vbig': value_size 1048577 is too large: at most 1048576 bytes" },
		{ "m0", BPF_MAP_TYPE_LRU_HASH, 4, 4, 0, 0, -EINVAL,
		  "map 'm0': max_entries 0 is invalid" },
		{ "huge", BPF_MAP_TYPE_ARRAY, 4, 1u << 20, 4096, 0, -E2BIG,
		  "map 'huge': max_entries 4096 x value_size 1048576 needs more than the 1024 MiB a map may use" },
		{ "ovf", BPF_MAP_TYPE_HASH, 512, 1u << 20, UINT32_MAX, 0, -E2BIG,
		  "map 'ovf': max_entries 4294967295 x value_size 1048576 needs more than" },
		{ "pcbig", BPF_MAP_TYPE_PERCPU_ARRAY, 4, 1u << 20, 1024, 0, -E2BIG,
		  "map 'pcbig': max_entries 1024 x value_size 1048576 needs more than the 1024 MiB" },
		{ "stack", BPF_MAP_TYPE_STACK, 0, 8, 4, 0, -EINVAL,
		  "map 'stack': type 23 (stack) is not supported: use array, percpu_array, hash, lru_hash or ringbuf" },
		{ "t99", 999, 4, 8, 4, 0, -EINVAL, "map 't99': type 999 (unknown) is not supported" },
		{ "fl", BPF_MAP_TYPE_ARRAY, 4, 8, 4, BPF_F_NO_PREALLOC, -EINVAL,
		  "map 'fl': map_flags 0x1 has unsupported bits 0x1: array maps take BPF_F_RDONLY_PROG, BPF_F_MMAPABLE" },
		{ "lrufl", BPF_MAP_TYPE_LRU_HASH, 4, 8, 4, BPF_F_NO_PREALLOC, -EINVAL,
		  "map 'lrufl': map_flags 0x1 has unsupported bits 0x1: lru_hash maps take" },
		{ "rbfl", BPF_MAP_TYPE_RINGBUF, 0, 0, 4096, BPF_F_RDONLY_PROG, -EINVAL,
		  "map 'rbfl': map_flags 0x80 has unsupported bits 0x80: ringbuf maps take none" },
		{ "rb3", BPF_MAP_TYPE_RINGBUF, 0, 0, 3 * 4096, 0, -EINVAL,
		  "map 'rb3': ring buffer size (max_entries) 12288 is invalid: it must be a power of 2 and a multiple of the page size" },
		{ "rb64", BPF_MAP_TYPE_RINGBUF, 0, 0, 64, 0, -EINVAL,
		  "map 'rb64': ring buffer size (max_entries) 64 is invalid" },
		{ "rb0", BPF_MAP_TYPE_RINGBUF, 0, 0, 0, 0, -EINVAL,
		  "map 'rb0': ring buffer size (max_entries) 0 is invalid" },
		{ "rbkv", BPF_MAP_TYPE_RINGBUF, 4, 8, 4096, 0, -EINVAL,
		  "map 'rbkv': key_size 4 / value_size 8 is invalid: ring buffer maps need key_size 0 and value_size 0" },
		{ "rbbig", BPF_MAP_TYPE_RINGBUF, 0, 0, 1u << 31, 0, -E2BIG,
		  "map 'rbbig': ring buffer size 2147483648 is too large" },
		{ "this_name_is_far_too_long_for_a_map_because_it_has_more_than_63_chars", BPF_MAP_TYPE_ARRAY,
		  4, 8, 1, 0, -EINVAL, "name is 69 characters long: at most 63 are allowed" },
	};
	uint32_t next_id_before = rt->next_map_id;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bad_case *c = &cases[i];
		GPUEXT_OPTS(gpuext_map_def, def, .name = c->name, .type = c->type,
			    .key_size = c->ks, .value_size = c->vs, .max_entries = c->max,
			    .map_flags = c->flags);
		struct gpuext_map *m = (void *)1;
		int err;

		test_log_clear(&logbuf);
		err = gpuext_map__create(rt, &def, &m);
		CHECK_EQ_INT(err, c->err);
		CHECK_EQ_INT(errno, -c->err);
		CHECK(m == NULL);
		CHECK_STR_CONTAINS(logbuf.buf, c->msg);
		if (err == 0)
			gpuext_map__destroy(m);
	}
	/* Rejected definitions take no id and leave no map behind. */
	CHECK_EQ_INT(rt->next_map_id, next_id_before);

	/* Struct size: too small is refused, larger with unknown fields zero is fine. */
	struct {
		struct gpuext_map_def def;
		uint64_t future;
	} ext = { .def = { .sz = sizeof(ext), .name = "ext", .type = BPF_MAP_TYPE_ARRAY,
			   .key_size = 4, .value_size = 4, .max_entries = 1 } };
	struct gpuext_map *m = NULL;
	CHECK_EQ_INT(gpuext_map__create(rt, &ext.def, &m), 0);
	gpuext_map__destroy(m);
	ext.future = 1;
	test_log_clear(&logbuf);
	CHECK_EQ_INT(gpuext_map__create(rt, &ext.def, &m), -EOPNOTSUPP);
	CHECK_STR_CONTAINS(logbuf.buf, "does not know set: upgrade libgpuext");
	ext.def.sz = 8;
	test_log_clear(&logbuf);
	CHECK_EQ_INT(gpuext_map__create(rt, &ext.def, &m), -EINVAL);
	CHECK_STR_CONTAINS(logbuf.buf, "def->sz is 8");
	CHECK_EQ_INT(gpuext_map__create(rt, NULL, &m), -EINVAL);

	/* Accepted flags and the defaults the loader relies on. */
	m = mk(rt, "np", BPF_MAP_TYPE_HASH, 4, 4, 8, BPF_F_NO_PREALLOC | BPF_F_ZERO_SEED);
	CHECK(m && m->hdr->hash_seed == 0);
	gpuext_map__destroy(m);
	m = mk(rt, "", BPF_MAP_TYPE_ARRAY, 4, 4, 1, 0);
	CHECK(m && !strcmp(gpuext_map__name(m), ""));
	gpuext_map__destroy(m);
}

static void test_ids(struct gpuext_runtime *rt)
{
	struct gpuext_map *a = mk(rt, "id_a", BPF_MAP_TYPE_ARRAY, 4, 4, 1, 0);
	struct gpuext_map *b = mk(rt, "id_b", BPF_MAP_TYPE_HASH, 4, 4, 1, 0);
	uint32_t ida, idb;

	if (!a || !b)
		return;
	ida = gpuext_map__id(a);
	idb = gpuext_map__id(b);
	CHECK_EQ_INT(idb, ida + 1);
	gpuext_map__destroy(a);
	CHECK(gpuext_runtime__map_by_id(rt, ida) == NULL);
	CHECK(gpuext_runtime__map_by_id(rt, idb) == b);
	a = mk(rt, "id_c", BPF_MAP_TYPE_ARRAY, 4, 4, 1, 0);
	CHECK_EQ_INT(gpuext_map__id(a), idb + 1);	/* never reused */
	gpuext_map__destroy(a);
	/* b is left for gpuext_runtime__free() to destroy (LSan checks it does). */
}

int main(void)
{
	struct gpuext_runtime *rt = new_rt(1);

	test_array(rt);
	test_percpu();
	test_hash(rt);
	test_hash_collisions(rt);
	test_lru(rt);
	test_contains(rt);
	test_set_initial(rt);
	test_bad_defs(rt);
	test_ids(rt);
	gpuext_runtime__free(rt);
	return test_done("test_maps");
}

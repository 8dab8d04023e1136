/* SPDX-License-Identifier: Apache-2.0 */
/*
 * BPF maps on the host: array, percpu_array, hash and lru_hash in one
 * shared-memory file each (layout in maps_impl.h), with the user-space
 * operations of the bpf() syscall and the program-side operations the
 * helpers and the interpreter use.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include "maps_impl.h"

const char *gpuext_map_type_name(uint32_t type)
{
	switch (type) {
	case BPF_MAP_TYPE_HASH: return "hash";
	case BPF_MAP_TYPE_ARRAY: return "array";
	case BPF_MAP_TYPE_PERCPU_HASH: return "percpu_hash";
	case BPF_MAP_TYPE_PERCPU_ARRAY: return "percpu_array";
	case BPF_MAP_TYPE_LRU_HASH: return "lru_hash";
	case BPF_MAP_TYPE_LRU_PERCPU_HASH: return "lru_percpu_hash";
	case BPF_MAP_TYPE_RINGBUF: return "ringbuf";
	case BPF_MAP_TYPE_PROG_ARRAY: return "prog_array";
	case BPF_MAP_TYPE_PERF_EVENT_ARRAY: return "perf_event_array";
	case BPF_MAP_TYPE_STACK: return "stack";
	case BPF_MAP_TYPE_QUEUE: return "queue";
	default: return "unknown";
	}
}

static bool is_array(uint32_t type)
{
	return type == BPF_MAP_TYPE_ARRAY || type == BPF_MAP_TYPE_PERCPU_ARRAY;
}

static bool is_hash(uint32_t type)
{
	return type == BPF_MAP_TYPE_HASH || type == BPF_MAP_TYPE_LRU_HASH;
}

/* ------------------------------------------------------------------ */
/* Definition checks and layout                                         */
/* ------------------------------------------------------------------ */

struct layout {
	uint32_t nr_slots, value_stride, elem_size, key_off, val_off, nr_buckets;
	uint64_t buckets_off, values_off, total;
};

/* Flags each type accepts, and how to say them in a message. */
static uint32_t allowed_flags(uint32_t type, const char **names)
{
	switch (type) {
	case BPF_MAP_TYPE_ARRAY:
		*names = "BPF_F_RDONLY_PROG, BPF_F_MMAPABLE";
		return BPF_F_RDONLY_PROG | BPF_F_MMAPABLE;
	case BPF_MAP_TYPE_PERCPU_ARRAY:
		*names = "BPF_F_RDONLY_PROG";
		return BPF_F_RDONLY_PROG;
	case BPF_MAP_TYPE_HASH:
		/* NO_PREALLOC is taken and ignored: elements are always preallocated. */
		*names = "BPF_F_NO_PREALLOC, BPF_F_RDONLY_PROG, BPF_F_ZERO_SEED";
		return BPF_F_NO_PREALLOC | BPF_F_RDONLY_PROG | BPF_F_ZERO_SEED;
	case BPF_MAP_TYPE_LRU_HASH:
		/* One LRU list for all CPUs already is what NO_COMMON_LRU opts out of; take it. */
		*names = "BPF_F_NO_COMMON_LRU, BPF_F_RDONLY_PROG, BPF_F_ZERO_SEED";
		return BPF_F_NO_COMMON_LRU | BPF_F_RDONLY_PROG | BPF_F_ZERO_SEED;
	default:
		*names = "none";
		return 0;
	}
}

static int check_def(struct gpuext_runtime *rt, const struct gpuext_map_def *def,
		     const char *name, uint32_t nr_slots, struct layout *lo)
{
	const char *flag_names;
	uint32_t type = def->type, bad_flags;
	long page = sysconf(_SC_PAGESIZE);
	uint64_t n;

	memset(lo, 0, sizeof(*lo));
	lo->nr_slots = 1;
	if (!is_array(type) && !is_hash(type) && type != BPF_MAP_TYPE_RINGBUF) {
		gpuext_log(rt, GPUEXT_LOG_WARN,
			   "map '%s': type %u (%s) is not supported: use array, percpu_array, hash, lru_hash or ringbuf",
			   name, type, gpuext_map_type_name(type));
		return -EINVAL;
	}
	bad_flags = def->map_flags & ~allowed_flags(type, &flag_names);
	if (bad_flags) {
		gpuext_log(rt, GPUEXT_LOG_WARN,
			   "map '%s': map_flags 0x%x has unsupported bits 0x%x: %s maps take %s",
			   name, def->map_flags, bad_flags, gpuext_map_type_name(type), flag_names);
		return -EINVAL;
	}

	if (type == BPF_MAP_TYPE_RINGBUF) {
		if (def->key_size || def->value_size) {
			gpuext_log(rt, GPUEXT_LOG_WARN,
				   "map '%s': key_size %u / value_size %u is invalid: ring buffer maps need key_size 0 and value_size 0",
				   name, def->key_size, def->value_size);
			return -EINVAL;
		}
		n = def->max_entries;
		if (n == 0 || (n & (n - 1)) || n % (uint64_t)page) {
			gpuext_log(rt, GPUEXT_LOG_WARN,
				   "map '%s': ring buffer size (max_entries) %" PRIu64 " is invalid: it must be a power of 2 and a multiple of the page size (%ld), e.g. 262144",
				   name, n, page);
			return -EINVAL;
		}
		if (n > GPUEXT_MAP_TOTAL_MAX) {
			gpuext_log(rt, GPUEXT_LOG_WARN,
				   "map '%s': ring buffer size %" PRIu64 " is too large: at most %llu bytes",
				   name, n, GPUEXT_MAP_TOTAL_MAX);
			return -E2BIG;
		}
		lo->values_off = (uint64_t)page;
		lo->total = lo->values_off + n;
		return 0;
	}

	if (is_array(type) && def->key_size != 4) {
		gpuext_log(rt, GPUEXT_LOG_WARN,
			   "map '%s': key_size %u is invalid: array maps need key_size 4",
			   name, def->key_size);
		return -EINVAL;
	}
	if (def->key_size == 0) {
		gpuext_log(rt, GPUEXT_LOG_WARN,
			   "map '%s': key_size 0 is invalid: hash maps need a key of 1 to %u bytes",
			   name, GPUEXT_MAP_KEY_MAX);
		return -EINVAL;
	}
	if (def->key_size > GPUEXT_MAP_KEY_MAX) {
		gpuext_log(rt, GPUEXT_LOG_WARN,
			   "map '%s': key_size %u is too large: at most %u bytes (keys live on the program stack)",
			   name, def->key_size, GPUEXT_MAP_KEY_MAX);
		return -E2BIG;
	}
	if (def->value_size == 0) {
		gpuext_log(rt, GPUEXT_LOG_WARN,
			   "map '%s': value_size 0 is invalid: a value needs at least 1 byte",
			   name);
		return -EINVAL;
	}
	if (def->value_size > GPUEXT_MAP_VALUE_MAX) {
		gpuext_log(rt, GPUEXT_LOG_WARN,
			   "map '%s': value_size %u is too large: at most %u bytes",
			   name, def->value_size, GPUEXT_MAP_VALUE_MAX);
		return -E2BIG;
	}
	if (def->max_entries == 0) {
		gpuext_log(rt, GPUEXT_LOG_WARN,
			   "map '%s': max_entries 0 is invalid: a map needs at least 1 entry",
			   name);
		return -EINVAL;
	}

	lo->value_stride = (uint32_t)gpuext_round8(def->value_size);
	if (type == BPF_MAP_TYPE_PERCPU_ARRAY)
		lo->nr_slots = nr_slots;
	bool ovf = false;
	if (is_array(type)) {
		uint64_t entry;

		ovf |= __builtin_mul_overflow((uint64_t)lo->value_stride, lo->nr_slots, &entry);
		lo->elem_size = entry > UINT32_MAX ? 0 : (uint32_t)entry;
		ovf |= entry > UINT32_MAX;
		lo->values_off = sizeof(struct gpuext_shm_hdr);
		ovf |= __builtin_mul_overflow(entry, (uint64_t)def->max_entries, &n);
		ovf |= __builtin_add_overflow(n, lo->values_off, &lo->total);
	} else {
		uint64_t nb = 1;

		lo->key_off = sizeof(struct gpuext_shm_elem);
		lo->val_off = lo->key_off + (uint32_t)gpuext_round8(def->key_size);
		lo->elem_size = lo->val_off + lo->value_stride;
		while (nb < def->max_entries)
			nb <<= 1;
		lo->nr_buckets = nb > UINT32_MAX ? 0 : (uint32_t)nb;
		lo->buckets_off = sizeof(struct gpuext_shm_hdr);
		lo->values_off = gpuext_round8(lo->buckets_off + nb * sizeof(uint32_t));
		ovf |= nb > UINT32_MAX;
		ovf |= __builtin_mul_overflow((uint64_t)lo->elem_size, (uint64_t)def->max_entries, &n);
		ovf |= __builtin_add_overflow(n, lo->values_off, &lo->total);
	}
	if (ovf || lo->total > GPUEXT_MAP_TOTAL_MAX) {
		gpuext_log(rt, GPUEXT_LOG_WARN,
			   "map '%s': max_entries %u x value_size %u%s needs more than the %llu MiB a map may use: lower max_entries or value_size",
			   name, def->max_entries, def->value_size,
			   lo->nr_slots > 1 ? " x CPU slots" : "", GPUEXT_MAP_TOTAL_MAX >> 20);
		return -E2BIG;
	}
	return 0;
}

/* The definition struct may be older (smaller) or newer (larger) than ours. */
static int check_def_sz(struct gpuext_runtime *rt, const struct gpuext_map_def *def)
{
	size_t need = offsetof(struct gpuext_map_def, map_flags) + sizeof(def->map_flags);

	if (def->sz < need) {
		gpuext_log(rt, GPUEXT_LOG_WARN,
			   "gpuext_map__create: def->sz is %zu, less than the %zu bytes of struct gpuext_map_def: declare it with GPUEXT_OPTS()",
			   def->sz, sizeof(*def));
		return -EINVAL;
	}
	for (size_t i = sizeof(*def); i < def->sz; i++) {
		if (((const uint8_t *)def)[i]) {
			gpuext_log(rt, GPUEXT_LOG_WARN,
				   "gpuext_map__create: struct gpuext_map_def has fields this libgpuext (%s) does not know set: upgrade libgpuext",
				   GPUEXT_VERSION);
			return -EOPNOTSUPP;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Create and destroy                                                    */
/* ------------------------------------------------------------------ */

/* Start time of this process, so readers can tell a reused pid apart. */
static uint64_t proc_start_time(void)
{
	return gpuext_shm_proc_start((int32_t)getpid());
}

static int open_storage(struct gpuext_map *map, uint64_t size)
{
	struct gpuext_runtime *rt = map->rt;
	int fd;

	map->owner_pid = (int32_t)getpid();
	if (rt->publish_maps) {
		snprintf(map->shm_name, sizeof(map->shm_name), "/" GPUEXT_SHM_PREFIX "%d.%u",
			 (int)getpid(), map->id);
		/* A leftover of an earlier process with our pid: it is stale, replace it. */
		shm_unlink(map->shm_name);
		fd = shm_open(map->shm_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0) {
			int err = errno;

			gpuext_log(rt, GPUEXT_LOG_WARN,
				   "map '%s': cannot publish it as /dev/shm%s: %s (is /dev/shm mounted and writable?)",
				   map->name, map->shm_name, strerror(err));
			map->shm_name[0] = '\0';
			return -err;
		}
	} else {
		fd = memfd_create(map->name[0] ? map->name : "gpuext-map", MFD_CLOEXEC);
		if (fd < 0) {
			int err = errno;

			gpuext_log(rt, GPUEXT_LOG_WARN, "map '%s': memfd_create failed: %s",
				   map->name, strerror(err));
			return -err;
		}
	}
	if (ftruncate(fd, (off_t)size) < 0) {
		int err = errno;

		gpuext_log(rt, GPUEXT_LOG_WARN,
			   "map '%s': cannot size its shared memory to %" PRIu64 " bytes: %s",
			   map->name, size, strerror(err));
		close(fd);
		return -err;
	}
	return fd;
}

static void init_hdr(struct gpuext_map *map, const struct layout *lo)
{
	struct gpuext_shm_hdr *h = map->hdr;
	uint32_t seed = 0;

	h->version = GPUEXT_SHM_VERSION;
	h->hdr_size = sizeof(*h);
	h->total_size = lo->total;
	h->type = map->type;
	h->key_size = map->key_size;
	h->value_size = map->value_size;
	h->max_entries = map->max_entries;
	h->map_flags = map->map_flags;
	h->nr_slots = map->nr_slots;
	h->map_id = map->id;
	h->owner_pid = (int32_t)getpid();
	h->owner_start = proc_start_time();
	memcpy(h->name, map->name, sizeof(h->name));
	h->value_stride = lo->value_stride;
	h->elem_size = lo->elem_size;
	h->values_off = lo->values_off;
	h->buckets_off = lo->buckets_off;
	h->nr_buckets = lo->nr_buckets;
	if (!(map->map_flags & BPF_F_ZERO_SEED) && getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed))
		seed = (uint32_t)(uintptr_t)map ^ (uint32_t)getpid();
	h->hash_seed = seed;
	h->key_off = lo->key_off;
	h->val_off = lo->val_off;
	h->free_head = GPUEXT_SHM_NIL;
	h->lru_head = h->lru_tail = GPUEXT_SHM_NIL;
	map->values = (uint8_t *)h + lo->values_off;

	if (is_array(map->type)) {
		atomic_store(&h->count, map->max_entries);
	} else if (is_hash(map->type)) {
		map->buckets = (uint32_t *)((uint8_t *)h + lo->buckets_off);
		for (uint32_t i = 0; i < lo->nr_buckets; i++)
			map->buckets[i] = GPUEXT_SHM_NIL;
		/* Free list in index order, so the first insert takes element 0. */
		for (uint32_t i = map->max_entries; i-- > 0;) {
			struct gpuext_shm_elem *e =
				(void *)(map->values + (uint64_t)i * lo->elem_size);
			e->next = h->free_head;
			e->lru_prev = e->lru_next = GPUEXT_SHM_NIL;
			h->free_head = i;
		}
	}
	/* Readers take a header as valid once they see the magic: publish it last. */
	atomic_thread_fence(memory_order_release);
	__atomic_store_n(&h->magic, GPUEXT_SHM_MAGIC, __ATOMIC_RELEASE);
}

int gpuext_map__create(struct gpuext_runtime *rt, const struct gpuext_map_def *def,
		       struct gpuext_map **out)
{
	struct gpuext_map *map;
	struct layout lo;
	const char *name;
	uint32_t slots;
	int err, fd;

	if (out)
		*out = NULL;
	if (!rt || !def || !out) {
		gpuext_log(rt, GPUEXT_LOG_WARN, "gpuext_map__create: %s is NULL",
			   !rt ? "rt" : !def ? "def" : "out");
		return GPUEXT_ERR(EINVAL);
	}
	err = check_def_sz(rt, def);
	if (err)
		return GPUEXT_ERR(-err);
	name = def->name ? def->name : "";
	if (strlen(name) >= GPUEXT_MAP_NAME_MAX) {
		gpuext_log(rt, GPUEXT_LOG_WARN,
			   "map '%.*s...': name is %zu characters long: at most %d are allowed",
			   24, name, strlen(name), GPUEXT_MAP_NAME_MAX - 1);
		return GPUEXT_ERR(EINVAL);
	}
	slots = rt->nr_cpu_slots ? rt->nr_cpu_slots : 1;
	err = check_def(rt, def, name, slots, &lo);
	if (err)
		return GPUEXT_ERR(-err);

	map = calloc(1, sizeof(*map));
	if (!map)
		return GPUEXT_ERR(ENOMEM);
	map->rt = rt;
	snprintf(map->name, sizeof(map->name), "%s", name);
	map->type = def->type;
	map->key_size = def->key_size;
	map->value_size = def->value_size;
	map->max_entries = def->max_entries;
	map->map_flags = def->map_flags;
	map->nr_slots = lo.nr_slots;
	map->efd = -1;

	/* The id names the shared-memory file, so the map joins the table first. */
	err = gpuext_runtime_add_map(rt, map, &map->id);
	if (err) {
		free(map);
		return GPUEXT_ERR(err < 0 ? -err : EINVAL);
	}
	fd = open_storage(map, lo.total);
	if (fd < 0) {
		err = fd;
		goto fail;
	}
	if (map->type == BPF_MAP_TYPE_RINGBUF) {
		err = gpuext_ringbuf_map_init(map, fd);
	} else {
		void *p = mmap(NULL, lo.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		err = 0;
		if (p == MAP_FAILED) {
			err = -errno;
			gpuext_log(rt, GPUEXT_LOG_WARN, "map '%s': cannot map %" PRIu64 " bytes: %s",
				   map->name, lo.total, strerror(errno));
		} else {
			map->hdr = p;
			map->map_len = lo.total;
		}
	}
	close(fd);
	if (err)
		goto fail;
	init_hdr(map, &lo);
	gpuext_log(rt, GPUEXT_LOG_DEBUG, "map '%s': id %u, %s, %" PRIu64 " bytes of shared memory%s%s",
		   map->name, map->id, gpuext_map_type_name(map->type), lo.total,
		   map->shm_name[0] ? " at /dev/shm" : "", map->shm_name);
	*out = map;
	return 0;

fail:
	gpuext_map__destroy(map);
	return GPUEXT_ERR(-err);
}

void gpuext_map__destroy(struct gpuext_map *map)
{
	if (!map)
		return;
	if (map->type == BPF_MAP_TYPE_RINGBUF)
		gpuext_ringbuf_map_fini(map);
	if (map->hdr)
		munmap(map->hdr, map->map_len);
	if (map->shm_name[0] && map->owner_pid == (int32_t)getpid())
		shm_unlink(map->shm_name);
	if (map->id)
		gpuext_runtime_remove_map(map->rt, map->id);
	free(map);
}

uint32_t gpuext_map__id(const struct gpuext_map *map) { return map ? map->id : 0; }
const char *gpuext_map__name(const struct gpuext_map *map) { return map ? map->name : ""; }
uint32_t gpuext_map__type(const struct gpuext_map *map) { return map ? map->type : 0; }
uint32_t gpuext_map__key_size(const struct gpuext_map *map) { return map ? map->key_size : 0; }
uint32_t gpuext_map__value_size(const struct gpuext_map *map) { return map ? map->value_size : 0; }
uint32_t gpuext_map__max_entries(const struct gpuext_map *map) { return map ? map->max_entries : 0; }
uint32_t gpuext_map__ring_max_record(const struct gpuext_map *map)
{
	return map ? map->ring_max_record : 0;
}

void gpuext_map_note_record(struct gpuext_map *rb, uint64_t bytes)
{
	if (rb && rb->type == BPF_MAP_TYPE_RINGBUF && bytes > rb->ring_max_record)
		rb->ring_max_record = bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)bytes;
}
uint32_t gpuext_map__flags(const struct gpuext_map *map) { return map ? map->map_flags : 0; }

/* ------------------------------------------------------------------ */
/* Arrays                                                              */
/* ------------------------------------------------------------------ */

static uint8_t *array_entry(const struct gpuext_map *map, uint32_t idx)
{
	return map->values + (uint64_t)idx * map->hdr->elem_size;
}

static int array_check_flags(uint64_t flags)
{
	if (flags > BPF_EXIST)
		return -EINVAL;	/* BPF_F_LOCK and unknown bits */
	if (flags == BPF_NOEXIST)
		return -EEXIST;	/* every array entry always exists */
	return 0;
}

/* ------------------------------------------------------------------ */
/* Hash and LRU hash (caller holds hdr->lock)                           */
/* ------------------------------------------------------------------ */

static struct gpuext_shm_elem *elem_at(const struct gpuext_map *map, uint32_t idx)
{
	return (void *)(map->values + (uint64_t)idx * map->hdr->elem_size);
}

static uint8_t *elem_key(const struct gpuext_map *map, struct gpuext_shm_elem *e)
{
	return (uint8_t *)e + map->hdr->key_off;
}

static uint8_t *elem_value(const struct gpuext_map *map, struct gpuext_shm_elem *e)
{
	return (uint8_t *)e + map->hdr->val_off;
}

uint32_t gpuext_map_hash_bucket(const struct gpuext_map *map, const void *key)
{
	return gpuext_shm_hash(key, map->key_size, map->hdr->hash_seed) & (map->hdr->nr_buckets - 1);
}

static uint32_t hash_find(const struct gpuext_map *map, const void *key, uint32_t hash)
{
	uint32_t idx = map->buckets[hash & (map->hdr->nr_buckets - 1)];

	while (idx != GPUEXT_SHM_NIL) {
		struct gpuext_shm_elem *e = elem_at(map, idx);

		if (e->hash == hash && !memcmp(elem_key(map, e), key, map->key_size))
			return idx;
		idx = e->next;
	}
	return GPUEXT_SHM_NIL;
}

static void lru_unlink(struct gpuext_map *map, uint32_t idx)
{
	gpuext_shm_lru_unlink(map->hdr, idx);
}

static void lru_push_head(struct gpuext_map *map, uint32_t idx)
{
	gpuext_shm_lru_push_head(map->hdr, idx);
}

/* A use of an LRU element: it becomes the most recently used. */
static void lru_touch(struct gpuext_map *map, uint32_t idx)
{
	if (map->type != BPF_MAP_TYPE_LRU_HASH || map->hdr->lru_head == idx)
		return;
	lru_unlink(map, idx);
	lru_push_head(map, idx);
}

/* Unlinks element @idx from its bucket and the LRU list and frees it. */
static void hash_remove(struct gpuext_map *map, uint32_t idx)
{
	struct gpuext_shm_hdr *h = map->hdr;
	struct gpuext_shm_elem *e = elem_at(map, idx);
	uint32_t *link = &map->buckets[e->hash & (h->nr_buckets - 1)];

	while (*link != idx)
		link = &elem_at(map, *link)->next;
	*link = e->next;
	if (map->type == BPF_MAP_TYPE_LRU_HASH)
		lru_unlink(map, idx);
	e->in_use = 0;
	e->next = h->free_head;
	h->free_head = idx;
	atomic_fetch_sub(&h->count, 1);
}

static int hash_update_locked(struct gpuext_map *map, const void *key, const void *value,
			      uint64_t flags)
{
	struct gpuext_shm_hdr *h = map->hdr;
	uint32_t hash = gpuext_shm_hash(key, map->key_size, h->hash_seed);
	uint32_t idx = hash_find(map, key, hash), b;
	struct gpuext_shm_elem *e;

	if (idx != GPUEXT_SHM_NIL) {
		if (flags == BPF_NOEXIST)
			return -EEXIST;
		gpuext_shm_write_begin(h);
		memcpy(elem_value(map, elem_at(map, idx)), value, map->value_size);
		elem_at(map, idx)->refs |= GPUEXT_SHM_REFS_OWNER;
		lru_touch(map, idx);
		gpuext_shm_write_end(h);
		return 0;
	}
	if (flags == BPF_EXIST)
		return -ENOENT;
	if (h->free_head == GPUEXT_SHM_NIL && map->type != BPF_MAP_TYPE_LRU_HASH)
		return -E2BIG;
	gpuext_shm_write_begin(h);
	if (h->free_head == GPUEXT_SHM_NIL)
		hash_remove(map, h->lru_tail);	/* full: evict the least recently used */
	idx = h->free_head;
	e = elem_at(map, idx);
	h->free_head = e->next;
	e->hash = hash;
	e->in_use = 1;
	e->refs = GPUEXT_SHM_REFS_OWNER;
	memcpy(elem_key(map, e), key, map->key_size);
	memcpy(elem_value(map, e), value, map->value_size);
	b = hash & (h->nr_buckets - 1);
	e->next = map->buckets[b];
	map->buckets[b] = idx;
	if (map->type == BPF_MAP_TYPE_LRU_HASH)
		lru_push_head(map, idx);
	atomic_fetch_add(&h->count, 1);
	gpuext_shm_write_end(h);
	return 0;
}

static int hash_delete(struct gpuext_map *map, const void *key)
{
	struct gpuext_shm_hdr *h = map->hdr;
	uint32_t idx;

	gpuext_shm_lock(h);
	idx = hash_find(map, key, gpuext_shm_hash(key, map->key_size, h->hash_seed));
	if (idx != GPUEXT_SHM_NIL) {
		gpuext_shm_write_begin(h);
		hash_remove(map, idx);
		gpuext_shm_write_end(h);
	}
	gpuext_shm_unlock(h);
	return idx == GPUEXT_SHM_NIL ? -ENOENT : 0;
}

/* ------------------------------------------------------------------ */
/* User-space side                                                     */
/* ------------------------------------------------------------------ */

static int check_user_op(struct gpuext_map *map, const void *key, const void *value)
{
	if (!map || !map->hdr || !key || !value)
		return -EINVAL;
	if (map->type == BPF_MAP_TYPE_RINGBUF)
		return -ENOTSUP;
	return 0;
}

int gpuext_map__lookup(struct gpuext_map *map, const void *key, void *value)
{
	int err = check_user_op(map, key, value);
	uint32_t idx;

	if (err)
		return GPUEXT_ERR(-err);
	if (is_array(map->type)) {
		uint8_t *src, *dst = value;
		uint32_t stride = map->hdr->value_stride;

		memcpy(&idx, key, sizeof(idx));
		if (idx >= map->max_entries)
			return GPUEXT_ERR(ENOENT);
		src = array_entry(map, idx);
		if (map->type == BPF_MAP_TYPE_ARRAY) {
			memcpy(dst, src, map->value_size);
			return 0;
		}
		/* Per-CPU: every slot, each padded to 8 bytes, as the kernel hands them out. */
		for (uint32_t s = 0; s < map->nr_slots; s++) {
			memcpy(dst + (uint64_t)s * stride, src + (uint64_t)s * stride, map->value_size);
			memset(dst + (uint64_t)s * stride + map->value_size, 0,
			       stride - map->value_size);
		}
		return 0;
	}
	gpuext_shm_lock(map->hdr);
	idx = hash_find(map, key, gpuext_shm_hash(key, map->key_size, map->hdr->hash_seed));
	if (idx != GPUEXT_SHM_NIL)	/* a user-space lookup is not a use (kernel: lookup_elem_sys) */
		memcpy(value, elem_value(map, elem_at(map, idx)), map->value_size);
	gpuext_shm_unlock(map->hdr);
	return idx == GPUEXT_SHM_NIL ? GPUEXT_ERR(ENOENT) : 0;
}

int gpuext_map__update(struct gpuext_map *map, const void *key, const void *value,
		       uint64_t flags)
{
	int err = check_user_op(map, key, value);
	uint32_t idx;

	if (err)
		return GPUEXT_ERR(-err);
	if (is_array(map->type)) {
		const uint8_t *src = value;
		uint32_t stride = map->hdr->value_stride;
		uint8_t *dst;

		err = array_check_flags(flags);
		if (err)
			return GPUEXT_ERR(-err);
		memcpy(&idx, key, sizeof(idx));
		if (idx >= map->max_entries)
			return GPUEXT_ERR(E2BIG);
		dst = array_entry(map, idx);
		gpuext_shm_write_begin(map->hdr);
		for (uint32_t s = 0; s < map->nr_slots; s++)
			memcpy(dst + (uint64_t)s * stride, src + (uint64_t)s * stride,
			       map->value_size);
		gpuext_shm_write_end(map->hdr);
		return 0;
	}
	if (flags > BPF_EXIST)
		return GPUEXT_ERR(EINVAL);
	gpuext_shm_lock(map->hdr);
	err = hash_update_locked(map, key, value, flags);
	gpuext_shm_unlock(map->hdr);
	return err ? GPUEXT_ERR(-err) : 0;
}

int gpuext_map__delete(struct gpuext_map *map, const void *key)
{
	int err = check_user_op(map, key, key);

	if (err)
		return GPUEXT_ERR(-err);
	if (is_array(map->type))
		return GPUEXT_ERR(EINVAL);	/* array entries cannot be deleted */
	err = hash_delete(map, key);
	return err ? GPUEXT_ERR(-err) : 0;
}

int gpuext_map__next_key(struct gpuext_map *map, const void *key, void *next_key)
{
	int err = check_user_op(map, next_key, next_key);
	uint32_t idx, b = 0, next = GPUEXT_SHM_NIL;

	if (err)
		return GPUEXT_ERR(-err);
	if (is_array(map->type)) {
		idx = 0;
		if (key) {
			memcpy(&idx, key, sizeof(idx));
			/* Past the end restarts at 0, as the kernel does. */
			idx = idx >= map->max_entries ? 0 : idx + 1;
		}
		if (idx >= map->max_entries)
			return GPUEXT_ERR(ENOENT);
		memcpy(next_key, &idx, sizeof(idx));
		return 0;
	}
	gpuext_shm_lock(map->hdr);
	if (key) {
		uint32_t hash = gpuext_shm_hash(key, map->key_size, map->hdr->hash_seed);

		idx = hash_find(map, key, hash);
		/* A missing key restarts at the first one, as the kernel does. */
		if (idx != GPUEXT_SHM_NIL) {
			next = elem_at(map, idx)->next;
			b = (hash & (map->hdr->nr_buckets - 1)) + 1;
		}
	}
	for (; next == GPUEXT_SHM_NIL && b < map->hdr->nr_buckets; b++)
		next = map->buckets[b];
	if (next != GPUEXT_SHM_NIL)
		memcpy(next_key, elem_key(map, elem_at(map, next)), map->key_size);
	gpuext_shm_unlock(map->hdr);
	return next == GPUEXT_SHM_NIL ? GPUEXT_ERR(ENOENT) : 0;
}

/* ------------------------------------------------------------------ */
/* Program side                                                        */
/* ------------------------------------------------------------------ */

void *gpuext_map_prog_lookup(struct gpuext_map *map, const void *key, uint32_t cpu)
{
	uint32_t idx;
	void *val = NULL;

	if (!map || !map->hdr || !key || map->type == BPF_MAP_TYPE_RINGBUF)
		return NULL;
	if (is_array(map->type)) {
		memcpy(&idx, key, sizeof(idx));
		if (idx >= map->max_entries)
			return NULL;
		if (map->type == BPF_MAP_TYPE_ARRAY)
			return array_entry(map, idx);
		if (cpu >= map->nr_slots)
			return NULL;
		return array_entry(map, idx) + (uint64_t)cpu * map->hdr->value_stride;
	}
	gpuext_shm_lock(map->hdr);
	idx = hash_find(map, key, gpuext_shm_hash(key, map->key_size, map->hdr->hash_seed));
	if (idx != GPUEXT_SHM_NIL) {
		lru_touch(map, idx);
		val = elem_value(map, elem_at(map, idx));
	}
	gpuext_shm_unlock(map->hdr);
	return val;
}

int gpuext_map_prog_update(struct gpuext_map *map, const void *key, const void *value,
			   uint64_t flags, uint32_t cpu)
{
	uint32_t idx;
	int err;

	if (!map || !map->hdr || !key || !value)
		return -EINVAL;
	if (map->type == BPF_MAP_TYPE_RINGBUF)
		return -ENOTSUP;
	/* The verifier refuses this already; a runtime check costs nothing. */
	if (map->map_flags & BPF_F_RDONLY_PROG)
		return -EPERM;
	if (is_array(map->type)) {
		uint8_t *dst;

		err = array_check_flags(flags);
		if (err)
			return err;
		memcpy(&idx, key, sizeof(idx));
		if (idx >= map->max_entries)
			return -E2BIG;
		dst = array_entry(map, idx);
		if (map->type == BPF_MAP_TYPE_PERCPU_ARRAY) {
			/* A program only ever sees its own slot. */
			if (cpu >= map->nr_slots)
				return -EINVAL;
			dst += (uint64_t)cpu * map->hdr->value_stride;
		}
		gpuext_shm_write_begin(map->hdr);
		memcpy(dst, value, map->value_size);
		gpuext_shm_write_end(map->hdr);
		return 0;
	}
	if (flags > BPF_EXIST)
		return -EINVAL;
	gpuext_shm_lock(map->hdr);
	err = hash_update_locked(map, key, value, flags);
	gpuext_shm_unlock(map->hdr);
	return err;
}

int gpuext_map_prog_delete(struct gpuext_map *map, const void *key)
{
	if (!map || !map->hdr || !key)
		return -EINVAL;
	if (map->type == BPF_MAP_TYPE_RINGBUF)
		return -ENOTSUP;
	if (is_array(map->type))
		return -EINVAL;
	if (map->map_flags & BPF_F_RDONLY_PROG)
		return -EPERM;
	return hash_delete(map, key);
}

void *gpuext_map_direct_value(struct gpuext_map *map, uint32_t off)
{
	if (!map || !map->hdr || map->type != BPF_MAP_TYPE_ARRAY || off >= map->value_size)
		return NULL;
	return map->values + off;
}

bool gpuext_map_contains(const struct gpuext_map *map, uint64_t addr, uint64_t len,
			 bool write)
{
	uint64_t start, end, last;

	if (!map || !map->hdr)
		return false;
	if (write && (map->map_flags & BPF_F_RDONLY_PROG))
		return false;
	if (__builtin_add_overflow(addr, len, &last))
		return false;
	start = (uint64_t)(uintptr_t)map->values;
	if (map->type == BPF_MAP_TYPE_RINGBUF)
		end = start + 2ull * map->max_entries;	/* the data area is mapped twice */
	else
		end = start + (uint64_t)map->max_entries * map->hdr->elem_size;
	if (addr < start || last > end)
		return false;
	if (is_hash(map->type)) {
		/* Only the value part of one element: never a key or the links. */
		uint64_t rel = (addr - start) % map->hdr->elem_size;
		uint64_t vstart = map->hdr->val_off;

		return rel >= vstart && rel - vstart + len <= map->value_size;
	}
	return true;
}

int gpuext_map_set_initial(struct gpuext_map *map, const void *data, size_t len)
{
	if (!map || !map->hdr || (!data && len))
		return -EINVAL;
	if (map->type != BPF_MAP_TYPE_ARRAY || map->max_entries != 1) {
		gpuext_log(map->rt, GPUEXT_LOG_WARN,
			   "map '%s': an initial value needs a 1-entry array map, not %s with %u entries",
			   map->name, gpuext_map_type_name(map->type), map->max_entries);
		return -EINVAL;
	}
	if (len > map->value_size) {
		gpuext_log(map->rt, GPUEXT_LOG_WARN,
			   "map '%s': initial value of %zu bytes does not fit its value_size %u",
			   map->name, len, map->value_size);
		return -E2BIG;
	}
	gpuext_shm_write_begin(map->hdr);
	if (len)
		memcpy(map->values, data, len);
	gpuext_shm_write_end(map->hdr);
	return 0;
}

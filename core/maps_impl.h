/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Maps in shared memory: the layout every process agrees on, the struct
 * behind struct gpuext_map, and a small read-only API for other processes
 * (the `gpuext maps` CLI).
 *
 * Design
 * ------
 * Each map's storage is one MAP_SHARED file: a memfd, or, when the runtime
 * publishes maps, /dev/shm/gpuext.<pid>.<id>. The file starts with a
 * struct gpuext_shm_hdr that describes everything a reader needs (type,
 * sizes, offsets of the areas) so another process can interpret the map
 * from the header alone; the rest holds only offsets and indices, never
 * pointers, because each process maps the file at a different address.
 *
 *   array, percpu_array: values[max_entries][nr_slots][value_stride]
 *   hash, lru_hash:      buckets[nr_buckets] (u32 element index or NIL),
 *                        then max_entries preallocated elements:
 *                        struct gpuext_shm_elem, key (8-aligned), value.
 *                        Free elements form a list through elem.next; the
 *                        LRU list is doubly linked through lru_prev/next.
 *   ringbuf:             the header page (producer and consumer positions
 *                        live in it, on separate cache lines), then the
 *                        data area. The owner maps the data area twice,
 *                        back to back, so a record that wraps past the
 *                        end is still contiguous in memory (as Linux does).
 *
 * Writers of the owning process serialise structural changes with a
 * spinlock in the header and bump hdr->seq around them (odd while a change
 * is in progress). A reader elsewhere maps the file read-only, copies it,
 * and retries if seq was odd or moved: it never blocks the writer, and it
 * validates every index it follows, so even a torn copy cannot send it out
 * of bounds.
 */
#ifndef GPUEXT_CORE_MAPS_IMPL_H
#define GPUEXT_CORE_MAPS_IMPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "internal.h"

#define GPUEXT_SHM_MAGIC 0x50414d5458455047ULL /* "GPEXTMAP" little-endian */
#define GPUEXT_SHM_VERSION 2	/* 2: gpuext_shm_elem.refs (was padding) */
#define GPUEXT_SHM_NIL UINT32_MAX
#define GPUEXT_SHM_PREFIX "gpuext." /* /dev/shm/gpuext.<pid>.<id> */

/* Limits of a definition; beyond them gpuext_map__create() says -E2BIG. */
#define GPUEXT_MAP_KEY_MAX 512u		/* a key must fit the program stack */
#define GPUEXT_MAP_VALUE_MAX (1u << 20)
#define GPUEXT_MAP_TOTAL_MAX (1ull << 30) /* storage of one map */

/* Ring buffer record header bits (in the first u32 of the 8-byte header). */
#define GPUEXT_RB_BUSY (1u << 31)
#define GPUEXT_RB_DISCARD (1u << 30)
#define GPUEXT_RB_LEN_MASK (GPUEXT_RB_DISCARD - 1)
#define GPUEXT_RB_HDR_SZ 8u

/*
 * At offset 0 of every map file. Fixed-size fields only; the layout is
 * versioned by GPUEXT_SHM_VERSION and hdr_size.
 */
struct gpuext_shm_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t hdr_size;	/* sizeof(struct gpuext_shm_hdr) of the writer */
	uint64_t total_size;	/* bytes of the file */
	uint32_t type;		/* BPF_MAP_TYPE_* */
	uint32_t key_size;
	uint32_t value_size;
	uint32_t max_entries;
	uint32_t map_flags;
	uint32_t nr_slots;	/* per-CPU slots per entry (1 unless per-CPU) */
	uint32_t map_id;
	int32_t owner_pid;
	uint64_t owner_start;	/* /proc/<pid>/stat starttime: tells a reused pid apart */
	char name[GPUEXT_MAP_NAME_MAX];
	uint32_t value_stride;	/* bytes between two slot values (8-aligned) */
	uint32_t elem_size;	/* hash: bytes per element; array: bytes per entry */
	uint64_t values_off;	/* array values, hash elements, ring buffer data */
	uint64_t buckets_off;	/* hash only */
	uint32_t nr_buckets;	/* hash only: a power of two */
	uint32_t hash_seed;
	uint32_t key_off;	/* hash: key offset inside an element */
	uint32_t val_off;	/* hash: value offset inside an element */

	/* Mutable from here on. */
	_Atomic uint32_t seq;	/* seqcount: odd while a writer changes structure */
	_Atomic uint32_t lock;	/* writers' spinlock (owner process only) */
	_Atomic uint64_t count;	/* elements present */
	uint32_t free_head;	/* hash: first free element */
	uint32_t lru_head;	/* lru: most recently used */
	uint32_t lru_tail;	/* lru: least recently used (evicted first) */
	uint32_t pad0;

	/* Ring buffer positions, each on its own cache line. */
	_Alignas(64) _Atomic uint64_t cons_pos;
	_Alignas(64) _Atomic uint64_t prod_pos;
	_Alignas(64) uint8_t end[];
};

/* Header of one hash element; key and value follow at key_off/val_off. */
struct gpuext_shm_elem {
	uint32_t next;		/* bucket chain, or free list */
	uint32_t lru_prev;
	uint32_t lru_next;
	uint32_t hash;
	uint32_t in_use;
	/*
	 * Hash maps mirrored from NVIDIA devices (hal/nvidia/nv_shm.c): how many
	 * device contexts' published tables hold the key, plus
	 * GPUEXT_SHM_REFS_OWNER for a key written here (the mirror never
	 * removes those).
	 */
	uint32_t refs;
};
#define GPUEXT_SHM_REFS_OWNER 0x80000000u

/*
 * Owned by its runtime's map table from gpuext_map__create() until
 * gpuext_map__destroy() (or the runtime's end). Everything the map holds
 * is in the shared mapping except the ring buffer's process-local state.
 */
struct gpuext_map {
	struct gpuext_runtime *rt;
	uint32_t id;
	char name[GPUEXT_MAP_NAME_MAX];
	uint32_t type, key_size, value_size, max_entries, map_flags, nr_slots;
	uint32_t ring_max_record;	/* ring buffer: gpuext_map__ring_max_record() */

	struct gpuext_shm_hdr *hdr;	/* start of the mapping */
	size_t map_len;			/* bytes of address space it covers */
	uint8_t *values;		/* hdr + values_off */
	uint32_t *buckets;		/* hash only */
	char shm_name[48];		/* "/gpuext.<pid>.<id>" when published */
	int32_t owner_pid;		/* a forked child must not unlink its parent's maps */

	/* Ring buffer only (process-local). */
	int efd;			/* eventfd for consumers; -1 if none */
	_Atomic uint64_t *busy;		/* one bit per 8-byte unit: a reserved record starts here */
	atomic_bool has_consumer;
};

/* "hash", "lru_hash", ...; "unknown" for others. */
const char *gpuext_map_type_name(uint32_t type);
static inline uint64_t gpuext_round8(uint64_t x) { return (x + 7) & ~7ull; }

/* maps.c: bucket a key falls in (tests use it to build collisions). */
uint32_t gpuext_map_hash_bucket(const struct gpuext_map *map, const void *key);

/* ringbuf.c: called by maps.c to set up / tear down a ring buffer map. */
int gpuext_ringbuf_map_init(struct gpuext_map *map, int fd);
void gpuext_ringbuf_map_fini(struct gpuext_map *map);

/* shm.c: spinlock and seqcount of the owning process. */
void gpuext_shm_lock(struct gpuext_shm_hdr *h);
void gpuext_shm_unlock(struct gpuext_shm_hdr *h);
void gpuext_shm_write_begin(struct gpuext_shm_hdr *h);
void gpuext_shm_write_end(struct gpuext_shm_hdr *h);
/* Start time of process @pid in clock ticks since boot; 0 if unknown or gone. */
uint64_t gpuext_shm_proc_start(int32_t pid);

/* ------------------------------------------------------------------ */
/* Reading published maps of another process (read-only, no locks).    */
/* ------------------------------------------------------------------ */

/* One /dev/shm/gpuext.<pid>.<id> entry and what its header says. */
struct gpuext_shm_info {
	int32_t pid;
	uint32_t id;
	bool stale;		/* the owning process is gone */
	bool readable;		/* false: err says why (e.g. -EACCES) */
	int err;
	char name[GPUEXT_MAP_NAME_MAX];
	uint32_t type, key_size, value_size, max_entries, map_flags, nr_slots;
	uint64_t count;		/* hash: elements; array: max_entries */
	uint64_t cons_pos, prod_pos; /* ring buffer */
};

/*
 * Lists published maps, of @pid only when @pid > 0, sorted by pid then id.
 * *out is malloc'd (free() it). Returns 0 or a negative errno.
 */
int gpuext_shm_list(int32_t pid, struct gpuext_shm_info **out, size_t *cnt);

/* A consistent private copy of one published map. */
struct gpuext_shm_snapshot {
	struct gpuext_shm_info info;
	uint8_t *buf;		/* copy of the whole file (malloc'd) */
	size_t len;
};

/*
 * Opens /dev/shm/gpuext.<pid>.<id> read-only and copies it, retrying while
 * a writer is mid-change. -ENOENT: no such map; -EACCES: not ours;
 * -EBADMSG: not a gpuext map (or a layout this build does not know);
 * -EAGAIN: it kept changing.
 */
int gpuext_shm_snapshot(int32_t pid, uint32_t id, struct gpuext_shm_snapshot *snap);
void gpuext_shm_snapshot_free(struct gpuext_shm_snapshot *snap);

/*
 * Calls @fn for every present entry of a snapshot (not for ring buffers):
 * @value holds nr_slots values of value_stride bytes each. A non-zero
 * return stops and is returned.
 */
typedef int (*gpuext_shm_entry_fn)(void *user, const void *key, const void *value);
int gpuext_shm_foreach(const struct gpuext_shm_snapshot *snap, gpuext_shm_entry_fn fn,
		       void *user);

/* Removes published maps whose process is gone. Returns how many, or -errno. */
int gpuext_shm_clean_stale(int32_t pid);

/* Validates a header against the size of its file (shared by reader and tests). */
int gpuext_shm_check_hdr(const struct gpuext_shm_hdr *h, uint64_t file_size);
/*
 * A hash map's bucket hash (FNV-1a 64 of the key, folded; bucket = hash &
 * (nr_buckets - 1)). In shm.c, so that the NVIDIA preload library, which
 * links shm.c but not maps.c, writes the same buckets (hal/nvidia/nv_shm.c).
 */
uint32_t gpuext_shm_hash(const void *key, uint32_t len, uint32_t seed);
/* A hash map's element @idx in the mapping whose header is @h, and its LRU list (shm.c). */
struct gpuext_shm_elem *gpuext_shm_elem_at(struct gpuext_shm_hdr *h, uint32_t idx);
void gpuext_shm_lru_unlink(struct gpuext_shm_hdr *h, uint32_t idx);
void gpuext_shm_lru_push_head(struct gpuext_shm_hdr *h, uint32_t idx);

#endif

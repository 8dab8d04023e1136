/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shm side of the probe maps' mirror (nv_maps.c): the preload library
 * opens the shared-memory maps `gpuext trace` created and writes them in
 * core/maps_impl.h's layout (its header struct and core/shm.c's
 * seqcount/spinlock), so it links neither libbpf nor LLVM.
 *
 * Hash maps are mirrored as arrays are: each device context's change since
 * it last published is applied to the shm map in place, key by key (values
 * added lane by lane, wrapping), so several GPUs and several processes add
 * up and a key `gpuext trace` wrote stays. A shm element's `refs` counts the
 * contexts, over all processes, whose published table holds its key: a key
 * leaves the shm map when the last of them deleted it on the device.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "maps_impl.h"
#include "nv_impl.h"
#include "nv_util.h"

const char *nv_map_type_name(uint32_t t)
{
	switch (t) {
	case BPF_MAP_TYPE_ARRAY: return "array";
	case BPF_MAP_TYPE_PERCPU_ARRAY: return "percpu_array";
	case BPF_MAP_TYPE_HASH: return "hash";
	case BPF_MAP_TYPE_LRU_HASH: return "lru_hash";
	case BPF_MAP_TYPE_RINGBUF: return "ringbuf";
	default: return "unknown";
	}
}

int nv_shm_open(struct nv_shm *m, const struct gx_pack_map *pm, char *err, size_t err_len)
{
	const struct gpuext_shm_hdr *h;
	struct stat st;
	int fd, e;

	memset(m, 0, sizeof(*m));
	if (!pm->shm[0]) {
		nv_set_err(err, err_len, "map '%s': the pack names no shared-memory map", pm->name);
		return -EINVAL;
	}
	snprintf(m->name, sizeof(m->name), "%s%s", pm->shm[0] == '/' ? "" : "/", pm->shm);
	fd = shm_open(m->name, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0) {
		e = errno;
		nv_set_err(err, err_len, "map '%s': cannot open shared memory %s: %s (is gpuext trace "
			"still running?)", pm->name, m->name, strerror(e));
		return -e;
	}
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size < sizeof(struct gpuext_shm_hdr)) {
		close(fd);
		nv_set_err(err, err_len, "map '%s': %s is too small for a gpuext map", pm->name,
			m->name);
		return -EBADMSG;
	}
	m->base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	e = m->base == MAP_FAILED ? errno : 0;
	close(fd);
	if (e) {
		m->base = NULL;
		nv_set_err(err, err_len, "map '%s': mmap %s: %s", pm->name, m->name, strerror(e));
		return -e;
	}
	m->len = (size_t)st.st_size;
	h = m->base;
	e = gpuext_shm_check_hdr(h, m->len);
	if (e) {
		nv_set_err(err, err_len, "map '%s': %s is not a gpuext map of this version (%s)",
			pm->name, m->name, strerror(-e));
		goto fail;
	}
	if (h->type != pm->type || h->max_entries != pm->max_entries ||
	    (h->type != BPF_MAP_TYPE_RINGBUF &&
	     (h->key_size != pm->key_size || h->value_size != pm->value_size))) {
		nv_set_err(err, err_len, "map '%s': %s is a %s map %u/%u/%u, the pack wants %s "
			"%u/%u/%u (key/value/entries)", pm->name, m->name, nv_map_type_name(h->type),
			h->key_size, h->value_size, h->max_entries, nv_map_type_name(pm->type),
			pm->key_size, pm->value_size, pm->max_entries);
		e = -EINVAL;
		goto fail;
	}
	m->type = h->type;
	m->key_size = h->key_size;
	m->value_size = h->value_size;
	m->max_entries = h->max_entries;
	m->stride = h->value_stride;
	m->nr_slots = h->nr_slots ? h->nr_slots : 1;
	m->values = (uint8_t *)m->base + h->values_off;
	return 0;
fail:
	munmap(m->base, m->len);
	m->base = NULL;
	return e;
}

void nv_shm_close(struct nv_shm *m)
{
	if (m->base)
		munmap(m->base, m->len);
	m->base = NULL;
}

size_t nv_shm_values_size(const struct nv_shm *m)
{
	return (size_t)m->max_entries * m->nr_slots * m->stride;
}

void nv_shm_read_values(struct nv_shm *m, void *out)
{
	struct gpuext_shm_hdr *h = m->base;

	/* The owner (gpuext trace) may update the map too: take the writers' lock. */
	gpuext_shm_lock(h);
	memcpy(out, m->values, nv_shm_values_size(m));
	gpuext_shm_unlock(h);
}

void nv_shm_write_values(struct nv_shm *m, const void *values)
{
	struct gpuext_shm_hdr *h = m->base;

	gpuext_shm_lock(h);
	gpuext_shm_write_begin(h);
	memcpy(m->values, values, nv_shm_values_size(m));
	gpuext_shm_write_end(h);
	gpuext_shm_unlock(h);
}

/*
 * A producer in another process than the owner: the reservation takes the
 * spinlock in the header (it is in the shared mapping, so it serialises us
 * with the owner's producers), the record header carries BUSY until the
 * payload is in. The data area is mapped once here, so a record that runs
 * past the end is written in two pieces (the consumer maps it twice and
 * reads it contiguous). The owner's process-local busy bitmap does not see
 * our records; only its own producers' submits consult it.
 */
int nv_shm_ring_output(struct nv_shm *m, const void *data, uint32_t len)
{
	struct gpuext_shm_hdr *h = m->base;
	uint64_t size = m->max_entries, total, cons, prod, off, first;
	_Atomic uint32_t *hdr;

	if (m->type != BPF_MAP_TYPE_RINGBUF || !len || len > GPUEXT_RB_LEN_MASK ||
	    len + GPUEXT_RB_HDR_SZ > size)
		return -EINVAL;
	total = gpuext_round8(len + GPUEXT_RB_HDR_SZ);
	gpuext_shm_lock(h);
	cons = atomic_load_explicit(&h->cons_pos, memory_order_acquire);
	prod = atomic_load_explicit(&h->prod_pos, memory_order_relaxed);
	if (prod + total - cons > size) {
		gpuext_shm_unlock(h);
		m->host_drops++;
		return -EAGAIN;
	}
	off = prod & (size - 1);
	hdr = (_Atomic uint32_t *)(m->values + off);	/* 8-aligned: never split */
	atomic_store_explicit(hdr, len | GPUEXT_RB_BUSY, memory_order_relaxed);
	atomic_store_explicit(hdr + 1, 0, memory_order_relaxed);
	atomic_store_explicit(&h->prod_pos, prod + total, memory_order_release);
	gpuext_shm_unlock(h);

	off = (off + GPUEXT_RB_HDR_SZ) & (size - 1);
	first = size - off < len ? size - off : len;
	memcpy(m->values + off, data, first);
	if (first < len)
		memcpy(m->values, (const uint8_t *)data + first, len - first);
	atomic_store_explicit(hdr, len, memory_order_release);
	m->records++;
	return 0;
}

static struct gpuext_shm_elem *shm_elem(struct nv_shm *m, uint32_t idx)
{
	const struct gpuext_shm_hdr *h = m->base;

	return (void *)(m->values + (uint64_t)idx * h->elem_size);
}

void nv_shm_hash_begin(struct nv_shm *m)
{
	struct gpuext_shm_hdr *h = m->base;

	gpuext_shm_lock(h);
	gpuext_shm_write_begin(h);
}

void nv_shm_hash_end(struct nv_shm *m)
{
	struct gpuext_shm_hdr *h = m->base;

	gpuext_shm_write_end(h);
	gpuext_shm_unlock(h);
}

unsigned nv_value_lane(uint32_t value_size)
{
	return value_size % 8 == 0 ? 8 : value_size % 4 == 0 ? 4 : value_size % 2 == 0 ? 2 : 1;
}

void nv_value_sub(uint8_t *out, const uint8_t *now, const uint8_t *then, uint32_t value_size)
{
	unsigned lane = nv_value_lane(value_size);

	for (uint32_t b = 0; b < value_size; b += lane) {
		uint64_t x = 0, y = 0;

		memcpy(&x, now + b, lane);
		if (then)
			memcpy(&y, then + b, lane);
		x -= y;
		memcpy(out + b, &x, lane);
	}
}

static void add_lanes(uint8_t *dst, const uint8_t *src, uint32_t value_size)
{
	unsigned lane = nv_value_lane(value_size);

	for (uint32_t b = 0; b < value_size; b += lane) {
		uint64_t x = 0, y = 0;

		memcpy(&x, dst + b, lane);
		memcpy(&y, src + b, lane);
		x += y;
		memcpy(dst + b, &x, lane);
	}
}

/* Unlinks element @idx (bucket @b) from its chain and the LRU list and frees it. */
static void hash_unlink(struct nv_shm *m, uint32_t b, uint32_t idx)
{
	struct gpuext_shm_hdr *h = m->base;
	uint32_t *link = (uint32_t *)((uint8_t *)m->base + h->buckets_off) + b;
	struct gpuext_shm_elem *e = shm_elem(m, idx);
	uint32_t steps = 0;

	while (*link != idx && *link < h->max_entries && steps++ <= h->max_entries)
		link = &shm_elem(m, *link)->next;
	if (*link != idx)
		return;	/* not on its chain: a damaged map, left as it is */
	*link = e->next;
	if (h->type == BPF_MAP_TYPE_LRU_HASH)
		gpuext_shm_lru_unlink(h, idx);
	e->in_use = 0;
	e->refs = 0;
	e->next = h->free_head;
	h->free_head = idx;
	atomic_fetch_sub(&h->count, 1);
}

/*
 * The element's `refs`: GPUEXT_SHM_REFS_OWNER when gpuext itself wrote the
 * key (never removed from here), plus one per device context whose change
 * the value holds. A context's deletion takes its value out only where it
 * is counted (gpuext may have deleted the key and written it again); a
 * context's change to an element that does not count it (the same) puts its
 * whole value in and counts it.
 */
int nv_shm_hash_apply(struct nv_shm *m, const void *key, const void *delta, const void *full,
		      int presence)
{
	struct gpuext_shm_hdr *h = m->base;
	uint32_t *buckets = (uint32_t *)((uint8_t *)m->base + h->buckets_off);
	uint32_t hash = gpuext_shm_hash(key, h->key_size, h->hash_seed);
	uint32_t b = hash & (h->nr_buckets - 1), idx, steps = 0;
	struct gpuext_shm_elem *e;

	for (idx = buckets[b]; idx != GPUEXT_SHM_NIL && idx < h->max_entries &&
	     steps++ <= h->max_entries; idx = e->next) {
		uint8_t *val;
		uint32_t counted;

		e = shm_elem(m, idx);
		if (!e->in_use || e->hash != hash || memcmp((uint8_t *)e + h->key_off, key, h->key_size))
			continue;
		val = (uint8_t *)e + h->val_off;
		counted = e->refs & ~GPUEXT_SHM_REFS_OWNER;
		if (presence < 0) {
			if (!counted)
				return 0;
			if (delta)
				add_lanes(val, delta, h->value_size);
			if (--e->refs == 0) {
				hash_unlink(m, b, idx);
				return 0;
			}
		} else if (presence > 0 || !counted) {
			if (full)
				add_lanes(val, full, h->value_size);
			e->refs++;
		} else if (delta) {
			add_lanes(val, delta, h->value_size);
		}
		/* A device changed it: the most recently used, as a BPF update would make it. */
		if (h->type == BPF_MAP_TYPE_LRU_HASH && h->lru_head != idx) {
			gpuext_shm_lru_unlink(h, idx);
			gpuext_shm_lru_push_head(h, idx);
		}
		return 0;
	}
	/* Not there: a new key, or one gpuext deleted meanwhile (back with this context's value). */
	if (presence < 0 || !full)
		return 0;
	idx = h->free_head;
	if (idx == GPUEXT_SHM_NIL || idx >= h->max_entries) {
		m->host_drops++;
		return -E2BIG;
	}
	e = shm_elem(m, idx);
	h->free_head = e->next;
	e->hash = hash;
	e->in_use = 1;
	e->refs = 1;
	memcpy((uint8_t *)e + h->key_off, key, h->key_size);
	memcpy((uint8_t *)e + h->val_off, full, h->value_size);
	e->next = buckets[b];
	buckets[b] = idx;
	if (h->type == BPF_MAP_TYPE_LRU_HASH)
		gpuext_shm_lru_push_head(h, idx);
	atomic_fetch_add(&h->count, 1);
	return 0;
}

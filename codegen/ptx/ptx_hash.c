/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hash maps on the device, the host's side: the layout codegen/ptx/ptx.h
 * documents (a header, then open-addressed buckets claimed by CAS), built and
 * read on the host so a map's image can be uploaded to a GPU and read back
 * (hal/nvidia/nv_maps.c, the conformance runner). The device's side is IR in
 * ptx_runtime.c (gx.hash_find, gx.hash_update); both hash keys with
 * gpuext_ptx_hash_key().
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "maps_impl.h"
#include "ptx/ptx.h"
#include "ptx/ptx_impl.h"

/* ------------------------------------------------------------------ */
/* Hash maps: the host side of the device layout (ptx.h)                */
/* ------------------------------------------------------------------ */

_Static_assert(sizeof(struct gpuext_ptx_hash_hdr) == 16, "hash header layout");
_Static_assert(BPF_MAP_TYPE_HASH == 1 && BPF_MAP_TYPE_LRU_HASH == 9, "hash map types");

#define HASH_IMAGE_LIMIT (64u << 20)

static uint32_t round8_u32(uint32_t v)
{
	return (v + 7u) & ~7u;
}

uint32_t gpuext_ptx_hash_key(const void *key, uint32_t key_size)
{
	const uint8_t *p = key;
	uint32_t h = 0x811c9dc5u;

	for (uint32_t i = 0; i < key_size; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h;
}

int gpuext_ptx_hash_layout(uint32_t key_size, uint32_t value_size, uint32_t max_entries,
			   uint32_t *nr_buckets, uint32_t *bucket_size, size_t *bytes)
{
	uint64_t nb = 2, bs, total;

	if (!key_size || !value_size || !max_entries || key_size > 512 || value_size > 65536)
		return -EINVAL;
	/* At most half full: short probe sequences, and room for tombstones. */
	while (nb < 2ull * max_entries)
		nb <<= 1;
	bs = 8ull + round8_u32(key_size) + round8_u32(value_size);
	total = sizeof(struct gpuext_ptx_hash_hdr) + nb * bs;
	if (nb > (1ull << 31) || total > HASH_IMAGE_LIMIT)
		return -E2BIG;
	if (nr_buckets)
		*nr_buckets = (uint32_t)nb;
	if (bucket_size)
		*bucket_size = (uint32_t)bs;
	if (bytes)
		*bytes = (size_t)total;
	return 0;
}

/* Bucket @idx of @table. */
static uint8_t *hash_bucket(void *table, uint32_t idx)
{
	struct gpuext_ptx_hash_hdr *h = table;

	return (uint8_t *)table + sizeof(*h) + (size_t)idx * h->bucket_size;
}

void *gpuext_ptx_hash_lookup(void *table, uint32_t key_size, const void *key)
{
	struct gpuext_ptx_hash_hdr *h = table;
	uint32_t hv = gpuext_ptx_hash_key(key, key_size), mask = h->nr_buckets - 1;

	for (uint32_t n = 0, idx = hv & mask; n < h->nr_buckets; n++, idx = (idx + 1) & mask) {
		uint8_t *b = hash_bucket(table, idx);
		uint32_t state, bh;

		memcpy(&state, b, 4);
		if (state == GPUEXT_PTX_HASH_EMPTY)
			return NULL;
		memcpy(&bh, b + 4, 4);
		if (state == GPUEXT_PTX_HASH_FULL && bh == hv && !memcmp(b + 8, key, key_size))
			return b + 8 + round8_u32(key_size);
	}
	return NULL;
}

int gpuext_ptx_hash_insert(void *table, uint32_t key_size, uint32_t value_size, const void *key,
			   const void *value)
{
	struct gpuext_ptx_hash_hdr *h = table;
	uint32_t hv = gpuext_ptx_hash_key(key, key_size), mask = h->nr_buckets - 1;
	uint8_t *v = gpuext_ptx_hash_lookup(table, key_size, key);

	if (v) {
		memcpy(v, value, value_size);
		return 0;
	}
	if (h->count >= h->max_entries)
		return -E2BIG;
	for (uint32_t n = 0, idx = hv & mask; n < h->nr_buckets; n++, idx = (idx + 1) & mask) {
		uint8_t *b = hash_bucket(table, idx);
		uint32_t state, full = GPUEXT_PTX_HASH_FULL;

		memcpy(&state, b, 4);
		if (state != GPUEXT_PTX_HASH_EMPTY)
			continue;
		memcpy(b + 4, &hv, 4);
		memcpy(b + 8, key, key_size);
		memcpy(b + 8 + round8_u32(key_size), value, value_size);
		memcpy(b, &full, 4);
		h->count++;
		return 0;
	}
	return -E2BIG;
}

int gpuext_ptx_hash_image(struct gpuext_map *m, struct gpuext_ptx_map_desc *dd, uint8_t **image,
			  size_t *bytes)
{
	struct gpuext_ptx_hash_hdr *h;
	uint32_t type, nb, bs;
	uint8_t *key = NULL, *next = NULL, *val = NULL;
	bool first = true;
	int err;

	if (!m || !dd || !image || !bytes)
		return GPUEXT_ERR(EINVAL);
	*image = NULL;
	*bytes = 0;
	type = gpuext_map__type(m);
	if (type != BPF_MAP_TYPE_HASH && type != BPF_MAP_TYPE_LRU_HASH)
		return GPUEXT_ERR(EINVAL);
	memset(dd, 0, sizeof(*dd));
	dd->type = type;
	dd->key_size = gpuext_map__key_size(m);
	dd->value_size = gpuext_map__value_size(m);
	dd->max_entries = gpuext_map__max_entries(m);
	dd->stride = round8_u32(dd->value_size);
	dd->nr_slots = 1;
	err = gpuext_ptx_hash_layout(dd->key_size, dd->value_size, dd->max_entries, &nb, &bs, bytes);
	if (err) {
		gpuext_log(m->rt, GPUEXT_LOG_WARN, "ptx: hash map '%s' (key %u, value %u, %u entries) "
			   "does not fit the device layout (%s)", gpuext_map__name(m), dd->key_size,
			   dd->value_size, dd->max_entries, strerror(-err));
		*bytes = 0;
		return GPUEXT_ERR(-err);
	}
	*image = calloc(1, *bytes);
	key = malloc(dd->key_size);
	next = malloc(dd->key_size);
	val = malloc(dd->value_size);
	if (!*image || !key || !next || !val) {
		err = -ENOMEM;
		goto out;
	}
	h = (struct gpuext_ptx_hash_hdr *)*image;
	h->nr_buckets = nb;
	h->bucket_size = bs;
	h->max_entries = dd->max_entries;
	/* The live entries of the host map, re-inserted: tombstones vanish here. */
	while (!gpuext_map__next_key(m, first ? NULL : key, next)) {
		first = false;
		memcpy(key, next, dd->key_size);
		if (gpuext_map__lookup(m, key, val))
			continue;
		err = gpuext_ptx_hash_insert(*image, dd->key_size, dd->value_size, key, val);
		if (err)
			goto out;
	}
	err = 0;
out:
	free(key);
	free(next);
	free(val);
	if (err) {
		free(*image);
		*image = NULL;
		*bytes = 0;
		return GPUEXT_ERR(-err);
	}
	return 0;
}

int gpuext_ptx_hash_read_back(struct gpuext_map *m, const uint8_t *table, size_t bytes)
{
	const struct gpuext_ptx_hash_hdr *h = (const void *)table;
	uint32_t ks = gpuext_map__key_size(m), vs = gpuext_map__value_size(m);
	uint32_t koff = 8, voff = 8 + ((ks + 7u) & ~7u);
	uint8_t *key = malloc(ks), *next = malloc(ks), *val = malloc(vs), *gone = NULL;
	size_t ngone = 0, cap = 0;
	bool first = true;
	int err = 0;

	if (!key || !next || !val) {
		err = -ENOMEM;
		goto out;
	}
	if (bytes < sizeof(*h)) {
		gpuext_log(m->rt, GPUEXT_LOG_WARN, "ptx: hash map '%s': %zu bytes read back, less "
			   "than the table's header", gpuext_map__name(m), bytes);
		err = -EBADMSG;
		goto out;
	}
	if (!h->nr_buckets || (h->nr_buckets & (h->nr_buckets - 1)) ||
	    h->bucket_size < voff + vs ||
	    (uint64_t)h->nr_buckets * h->bucket_size > bytes - sizeof(*h)) {
		gpuext_log(m->rt, GPUEXT_LOG_WARN, "ptx: hash map '%s': the device's table header "
			   "is damaged (%u buckets of %u bytes in %zu)", gpuext_map__name(m),
			   h->nr_buckets, h->bucket_size, bytes);
		err = -EBADMSG;
		goto out;
	}
	/* the host's keys the device no longer has (collected first: deleting moves next_key) */
	while (!gpuext_map__next_key(m, first ? NULL : key, next)) {
		first = false;
		memcpy(key, next, ks);
		if (gpuext_ptx_hash_lookup((void *)table, ks, key))
			continue;
		if (ngone == cap) {
			size_t nc = cap ? cap * 2 : 16;
			uint8_t *g = realloc(gone, nc * ks);

			if (!g) {
				err = -ENOMEM;
				goto out;
			}
			gone = g;
			cap = nc;
		}
		memcpy(gone + ngone++ * ks, key, ks);
	}
	for (size_t i = 0; i < ngone; i++)
		gpuext_map__delete(m, gone + i * ks);
	for (uint32_t b = 0; b < h->nr_buckets; b++) {
		const uint8_t *e = table + sizeof(*h) + (size_t)b * h->bucket_size;
		uint32_t state;

		memcpy(&state, e, 4);
		if (state != GPUEXT_PTX_HASH_FULL)
			continue;
		if (!gpuext_map__lookup(m, e + koff, val) && !memcmp(val, e + voff, vs))
			continue;
		err = gpuext_map__update(m, e + koff, e + voff, BPF_ANY);
		if (err) {
			gpuext_log(m->rt, GPUEXT_LOG_WARN, "ptx: hash map '%s': the host map refused "
				   "a key the device holds (%s)", gpuext_map__name(m), strerror(-err));
			goto out;
		}
	}
out:
	free(key);
	free(next);
	free(val);
	free(gone);
	return err;
}

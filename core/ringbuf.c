/* SPDX-License-Identifier: Apache-2.0 */
/*
 * BPF_MAP_TYPE_RINGBUF: a multi-producer, single-consumer ring of
 * variable-length records, with the kernel's semantics.
 *
 * Positions only grow; a position's place in the data area is pos & (size-1).
 * Every record starts with an 8-byte header: a u32 of payload length plus
 * GPUEXT_RB_BUSY (still reserved) and GPUEXT_RB_DISCARD, and a reserved u32.
 * Records are 8-byte aligned and never split: the data area is mapped twice
 * back to back, so one that runs past the end continues in the second copy.
 *
 * Producers reserve under the spinlock in the header (it only moves
 * prod_pos) and commit without it, by clearing BUSY with a release store.
 * The consumer takes no lock: it reads prod_pos and each header with
 * acquire loads, stops at the first busy record (so records come out in
 * reservation order even if committed out of order), and publishes
 * cons_pos with a release store that hands the space back to producers.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "maps_impl.h"

/*
 * The one consumer of a ring buffer map, owned by the caller; free it before
 * destroying the map. Wakeups are process-local (an eventfd): a reader in
 * another process sees the positions in the header but must poll them.
 */
struct gpuext_ringbuf_consumer {
	struct gpuext_map *map;
	gpuext_ringbuf_sample_fn fn;
	void *user;
};

static _Atomic uint32_t *rec_hdr(const struct gpuext_map *rb, uint64_t pos)
{
	return (_Atomic uint32_t *)(rb->values + (pos & (rb->max_entries - 1)));
}

int gpuext_ringbuf_map_init(struct gpuext_map *map, int fd)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t size = map->max_entries, words = size / 8 / 64;
	uint8_t *base, *p;

	/* Reserve header + 2 x data, then put the file over it: header+data, data again. */
	map->map_len = (size_t)page + 2 * size;
	base = mmap(NULL, map->map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		    -1, 0);
	if (base == MAP_FAILED)
		goto fail_errno;
	p = mmap(base, (size_t)page + size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		 fd, 0);
	if (p == MAP_FAILED)
		goto fail_unmap;
	p = mmap(base + page + size, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
		 page);
	if (p == MAP_FAILED)
		goto fail_unmap;
	map->hdr = (struct gpuext_shm_hdr *)base;

	map->busy = calloc(words ? words : 1, sizeof(*map->busy));
	if (!map->busy)
		return -ENOMEM;	/* the caller's destroy unmaps */
	map->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (map->efd < 0) {
		int err = errno;

		gpuext_log(map->rt, GPUEXT_LOG_WARN, "map '%s': eventfd failed: %s", map->name,
			   strerror(err));
		return -err;
	}
	return 0;

fail_unmap:
	{
		int err = errno;

		munmap(base, map->map_len);
		errno = err;
	}
fail_errno:
	{
		int err = errno;

		map->map_len = 0;
		gpuext_log(map->rt, GPUEXT_LOG_WARN,
			   "map '%s': cannot map the ring buffer's data area twice (%zu bytes): %s",
			   map->name, size, strerror(err));
		return -err;
	}
}

void gpuext_ringbuf_map_fini(struct gpuext_map *map)
{
	if (map->efd >= 0)
		close(map->efd);
	map->efd = -1;
	free(map->busy);
	map->busy = NULL;
}

static bool is_ringbuf(const struct gpuext_map *rb)
{
	return rb && rb->type == BPF_MAP_TYPE_RINGBUF && rb->hdr && rb->busy;
}

static void notify(struct gpuext_map *rb, uint64_t flags)
{
	uint64_t one = 1;

	if ((flags & BPF_RB_NO_WAKEUP) && !(flags & BPF_RB_FORCE_WAKEUP))
		return;
	/* EAGAIN means the counter is already huge: the consumer is awake anyway. */
	if (write(rb->efd, &one, sizeof(one)) < 0)
		return;
}

void *gpuext_ringbuf_reserve(struct gpuext_map *rb, uint64_t size, uint64_t flags)
{
	struct gpuext_shm_hdr *h;
	uint64_t total, cons, prod, off;

	if (!is_ringbuf(rb) || flags || size == 0 || size > GPUEXT_RB_LEN_MASK ||
	    size + GPUEXT_RB_HDR_SZ > rb->max_entries)
		return NULL;
	h = rb->hdr;
	total = gpuext_round8(size + GPUEXT_RB_HDR_SZ);
	gpuext_shm_lock(h);
	cons = atomic_load_explicit(&h->cons_pos, memory_order_acquire);
	prod = atomic_load_explicit(&h->prod_pos, memory_order_relaxed);
	if (prod + total - cons > rb->max_entries) {
		gpuext_shm_unlock(h);
		return NULL;
	}
	off = prod & (rb->max_entries - 1);
	atomic_store_explicit(rec_hdr(rb, prod), (uint32_t)size | GPUEXT_RB_BUSY,
			      memory_order_relaxed);
	atomic_store_explicit(rec_hdr(rb, prod) + 1, 0, memory_order_relaxed);
	atomic_fetch_or_explicit(&rb->busy[off / 8 / 64], 1ull << (off / 8 % 64),
				 memory_order_acq_rel);
	/* The busy header must be visible before the consumer can see the new position. */
	atomic_store_explicit(&h->prod_pos, prod + total, memory_order_release);
	gpuext_shm_unlock(h);
	return rb->values + off + GPUEXT_RB_HDR_SZ;
}

/* Offset of the header of the record whose payload is at @rec, or -1. */
static int64_t rec_offset(const struct gpuext_map *rb, uint64_t rec)
{
	uint64_t data = (uint64_t)(uintptr_t)rb->values, off;

	if (rec < data + GPUEXT_RB_HDR_SZ || (rec - data) % 8)
		return -1;
	off = rec - data - GPUEXT_RB_HDR_SZ;
	return off < rb->max_entries ? (int64_t)off : -1;
}

static bool rec_is_busy(const struct gpuext_map *rb, uint64_t off)
{
	return atomic_load_explicit(&rb->busy[off / 8 / 64], memory_order_acquire) &
	       (1ull << (off / 8 % 64));
}

int gpuext_ringbuf_submit(struct gpuext_map *rb, void *rec, uint64_t flags, bool discard)
{
	uint64_t bit, old;
	_Atomic uint32_t *hdr;
	int64_t off;
	uint32_t len;

	/* Unknown flag bits are ignored, as Linux does: a submit/discard never fails
	 * for its flags, or the record would stay busy and block the consumer. */
	if (!is_ringbuf(rb))
		return -EINVAL;
	off = rec_offset(rb, (uint64_t)(uintptr_t)rec);
	if (off < 0)
		return -EINVAL;
	/* Clearing the bit both checks that @rec is reserved and makes a second submit fail. */
	bit = 1ull << (off / 8 % 64);
	old = atomic_fetch_and_explicit(&rb->busy[off / 8 / 64], ~bit, memory_order_acq_rel);
	if (!(old & bit))
		return -EINVAL;
	hdr = (_Atomic uint32_t *)(rb->values + off);
	len = atomic_load_explicit(hdr, memory_order_relaxed) & GPUEXT_RB_LEN_MASK;
	/* Release: the payload written by the producer is visible with the cleared bit. */
	atomic_store_explicit(hdr, len | (discard ? GPUEXT_RB_DISCARD : 0), memory_order_release);
	notify(rb, flags);
	return 0;
}

int gpuext_ringbuf_output(struct gpuext_map *rb, const void *data, uint64_t size,
			  uint64_t flags)
{
	void *rec;

	if (!is_ringbuf(rb) || !data || size == 0 ||
	    (flags & ~(uint64_t)(BPF_RB_NO_WAKEUP | BPF_RB_FORCE_WAKEUP)))
		return -EINVAL;
	rec = gpuext_ringbuf_reserve(rb, size, 0);
	if (!rec)
		return -EAGAIN;
	memcpy(rec, data, size);
	return gpuext_ringbuf_submit(rb, rec, flags, false);
}

uint64_t gpuext_ringbuf_query(struct gpuext_map *rb, uint64_t flags)
{
	uint64_t cons, prod;

	if (!is_ringbuf(rb))
		return 0;
	cons = atomic_load_explicit(&rb->hdr->cons_pos, memory_order_acquire);
	prod = atomic_load_explicit(&rb->hdr->prod_pos, memory_order_acquire);
	switch (flags) {
	case BPF_RB_AVAIL_DATA: return prod - cons;
	case BPF_RB_RING_SIZE: return rb->max_entries;
	case BPF_RB_CONS_POS: return cons;
	case BPF_RB_PROD_POS: return prod;
	default: return 0;
	}
}

struct gpuext_map *gpuext_ringbuf_of_record(struct gpuext_runtime *rt, uint64_t rec)
{
	if (!rt)
		return NULL;
	for (size_t i = 0; i < rt->map_slots; i++) {
		struct gpuext_map *rb = rt->maps[i];
		int64_t off;

		if (!is_ringbuf(rb))
			continue;
		off = rec_offset(rb, rec);
		if (off >= 0 && rec_is_busy(rb, (uint64_t)off))
			return rb;
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Consumer                                                            */
/* ------------------------------------------------------------------ */

int gpuext_ringbuf_consumer__new(struct gpuext_map *ringbuf, gpuext_ringbuf_sample_fn fn,
				 void *user, struct gpuext_ringbuf_consumer **out)
{
	struct gpuext_ringbuf_consumer *c;
	bool expected = false;

	if (out)
		*out = NULL;
	if (!ringbuf || !fn || !out)
		return GPUEXT_ERR(EINVAL);
	if (!is_ringbuf(ringbuf)) {
		gpuext_log(ringbuf->rt, GPUEXT_LOG_WARN,
			   "map '%s': is a %s map, not a ring buffer: only BPF_MAP_TYPE_RINGBUF maps have consumers",
			   ringbuf->name, gpuext_map_type_name(ringbuf->type));
		return GPUEXT_ERR(EINVAL);
	}
	if (!atomic_compare_exchange_strong(&ringbuf->has_consumer, &expected, true)) {
		gpuext_log(ringbuf->rt, GPUEXT_LOG_WARN,
			   "map '%s': already has a consumer: free it first (a ring buffer has one reader)",
			   ringbuf->name);
		return GPUEXT_ERR(EBUSY);
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		atomic_store(&ringbuf->has_consumer, false);
		return GPUEXT_ERR(ENOMEM);
	}
	c->map = ringbuf;
	c->fn = fn;
	c->user = user;
	*out = c;
	return 0;
}

int gpuext_ringbuf_consumer__fd(const struct gpuext_ringbuf_consumer *c)
{
	return c ? c->map->efd : GPUEXT_ERR(EINVAL);
}

static void drain_eventfd(const struct gpuext_ringbuf_consumer *c)
{
	uint64_t cnt;

	/* Nonblocking: EAGAIN just means nothing was signalled. */
	if (read(c->map->efd, &cnt, sizeof(cnt)) < 0)
		return;
}

int gpuext_ringbuf_consumer__consume(struct gpuext_ringbuf_consumer *c)
{
	struct gpuext_map *rb;
	struct gpuext_shm_hdr *h;
	uint64_t cons, prod;
	int cnt = 0;

	if (!c)
		return GPUEXT_ERR(EINVAL);
	rb = c->map;
	h = rb->hdr;
	/* Drain before reading: a submit after this point signals again. */
	drain_eventfd(c);
	cons = atomic_load_explicit(&h->cons_pos, memory_order_relaxed);
	for (;;) {
		prod = atomic_load_explicit(&h->prod_pos, memory_order_acquire);
		if (cons == prod)
			break;
		while (cons < prod) {
			uint32_t w = atomic_load_explicit(rec_hdr(rb, cons), memory_order_acquire);
			uint32_t len = w & GPUEXT_RB_LEN_MASK;
			const uint8_t *data = (const uint8_t *)rec_hdr(rb, cons) + GPUEXT_RB_HDR_SZ;
			int ret = 0;

			if (w & GPUEXT_RB_BUSY)
				return cnt;	/* later records wait for this one */
			if (!(w & GPUEXT_RB_DISCARD)) {
				ret = c->fn(c->user, data, len);
				cnt++;
			}
			cons += gpuext_round8(len + GPUEXT_RB_HDR_SZ);
			/* Hands the space back to producers; the payload is no longer read. */
			atomic_store_explicit(&h->cons_pos, cons, memory_order_release);
			if (ret)
				return ret;
		}
	}
	return cnt;
}

int gpuext_ringbuf_consumer__poll(struct gpuext_ringbuf_consumer *c, int timeout_ms)
{
	struct pollfd pfd;
	int n;

	if (!c)
		return GPUEXT_ERR(EINVAL);
	n = gpuext_ringbuf_consumer__consume(c);
	if (n)
		return n;
	pfd.fd = c->map->efd;
	pfd.events = POLLIN;
	n = poll(&pfd, 1, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : GPUEXT_ERR(errno);
	if (n == 0)
		return 0;
	return gpuext_ringbuf_consumer__consume(c);
}

void gpuext_ringbuf_consumer__free(struct gpuext_ringbuf_consumer *c)
{
	if (!c)
		return;
	atomic_store(&c->map->has_consumer, false);
	free(c);
}

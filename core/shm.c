/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shared-memory side of maps: the writers' spinlock and seqcount of the
 * owning process, and read-only access to maps that other processes have
 * published under /dev/shm (what `gpuext maps` shows).
 *
 * A reader never trusts what it maps: the file may belong to a crashed or
 * hostile process, or be mid-change. It checks the header against the
 * file size, copies the file under the seqcount, and follows only indices
 * it has bounds-checked.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "maps_impl.h"

#define SHM_DIR "/dev/shm"
#define SNAPSHOT_TRIES 1000

_Static_assert(sizeof(struct gpuext_shm_hdr) <= 4096, "the header must fit in one page");
_Static_assert(sizeof(struct gpuext_shm_elem) % 8 == 0, "elements stay 8-byte aligned");

/* ------------------------------------------------------------------ */
/* Writers (owning process)                                             */
/* ------------------------------------------------------------------ */

void gpuext_shm_lock(struct gpuext_shm_hdr *h)
{
	unsigned spins = 0;

	for (;;) {
		if (!atomic_exchange_explicit(&h->lock, 1, memory_order_acquire))
			return;
		/* Wait on a plain load so the cache line is not bounced by writes. */
		while (atomic_load_explicit(&h->lock, memory_order_relaxed)) {
			if (++spins % 64 == 0)
				sched_yield();	/* the holder may be preempted on a busy machine */
		}
	}
}

void gpuext_shm_unlock(struct gpuext_shm_hdr *h)
{
	atomic_store_explicit(&h->lock, 0, memory_order_release);
}

void gpuext_shm_write_begin(struct gpuext_shm_hdr *h)
{
	uint32_t s = atomic_load_explicit(&h->seq, memory_order_relaxed);

	atomic_store_explicit(&h->seq, s + 1, memory_order_relaxed);
	/* The odd count must be visible before any of the changes it guards. */
	atomic_thread_fence(memory_order_release);
}

void gpuext_shm_write_end(struct gpuext_shm_hdr *h)
{
	uint32_t s = atomic_load_explicit(&h->seq, memory_order_relaxed);

	atomic_store_explicit(&h->seq, s + 1, memory_order_release);
}

uint64_t gpuext_shm_proc_start(int32_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: fields are counted after the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* After ')' come fields 3..; starttime is field 22. */
	for (int field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &start) != 1)
		return 0;
	return start;
}

/* ------------------------------------------------------------------ */
/* Readers (any process)                                               */
/* ------------------------------------------------------------------ */

static bool fits(uint64_t off, uint64_t n, uint64_t size, uint64_t limit)
{
	uint64_t bytes, end;

	return !__builtin_mul_overflow(n, size, &bytes) &&
	       !__builtin_add_overflow(off, bytes, &end) && end <= limit;
}

struct gpuext_shm_elem *gpuext_shm_elem_at(struct gpuext_shm_hdr *h, uint32_t idx)
{
	return (void *)((uint8_t *)h + h->values_off + (uint64_t)idx * h->elem_size);
}

void gpuext_shm_lru_unlink(struct gpuext_shm_hdr *h, uint32_t idx)
{
	struct gpuext_shm_elem *e = gpuext_shm_elem_at(h, idx);

	if (e->lru_prev != GPUEXT_SHM_NIL)
		gpuext_shm_elem_at(h, e->lru_prev)->lru_next = e->lru_next;
	else
		h->lru_head = e->lru_next;
	if (e->lru_next != GPUEXT_SHM_NIL)
		gpuext_shm_elem_at(h, e->lru_next)->lru_prev = e->lru_prev;
	else
		h->lru_tail = e->lru_prev;
	e->lru_prev = e->lru_next = GPUEXT_SHM_NIL;
}

void gpuext_shm_lru_push_head(struct gpuext_shm_hdr *h, uint32_t idx)
{
	struct gpuext_shm_elem *e = gpuext_shm_elem_at(h, idx);

	e->lru_prev = GPUEXT_SHM_NIL;
	e->lru_next = h->lru_head;
	if (h->lru_head != GPUEXT_SHM_NIL)
		gpuext_shm_elem_at(h, h->lru_head)->lru_prev = idx;
	else
		h->lru_tail = idx;
	h->lru_head = idx;
}

uint32_t gpuext_shm_hash(const void *key, uint32_t len, uint32_t seed)
{
	const uint8_t *p = key;
	uint64_t h = 0xcbf29ce484222325ull ^ ((uint64_t)seed << 32 | len);

	for (uint32_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	/* Fold so that the low bits (the bucket) depend on every input byte. */
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return (uint32_t)h;
}

int gpuext_shm_check_hdr(const struct gpuext_shm_hdr *h, uint64_t file_size)
{
	uint64_t stride8 = gpuext_round8(h->value_size);

	if (file_size < sizeof(*h) || h->magic != GPUEXT_SHM_MAGIC)
		return -EBADMSG;
	if (h->version != GPUEXT_SHM_VERSION || h->hdr_size != sizeof(*h))
		return -EPROTO;	/* a gpuext map of another layout version */
	if (h->total_size != file_size || !memchr(h->name, '\0', sizeof(h->name)) ||
	    h->values_off < sizeof(*h) || h->values_off % 8)
		return -EBADMSG;
	switch (h->type) {
	case BPF_MAP_TYPE_ARRAY:
	case BPF_MAP_TYPE_PERCPU_ARRAY:
		if (h->key_size != 4 || !h->value_size || h->value_stride != stride8 ||
		    !h->nr_slots || (h->type == BPF_MAP_TYPE_ARRAY && h->nr_slots != 1) ||
		    (uint64_t)h->elem_size != stride8 * h->nr_slots ||
		    !fits(h->values_off, h->max_entries, h->elem_size, file_size))
			return -EBADMSG;
		return 0;
	case BPF_MAP_TYPE_HASH:
	case BPF_MAP_TYPE_LRU_HASH:
		if (!h->key_size || !h->value_size || h->value_stride != stride8 ||
		    !h->nr_buckets || (h->nr_buckets & (h->nr_buckets - 1)) ||
		    h->key_off < sizeof(struct gpuext_shm_elem) || h->key_off % 8 ||
		    h->val_off < h->key_off + (uint64_t)h->key_size || h->val_off % 8 ||
		    h->elem_size < h->val_off + (uint64_t)h->value_size || h->elem_size % 8 ||
		    h->buckets_off < sizeof(*h) ||
		    !fits(h->buckets_off, h->nr_buckets, sizeof(uint32_t), h->values_off) ||
		    !fits(h->values_off, h->max_entries, h->elem_size, file_size))
			return -EBADMSG;
		return 0;
	case BPF_MAP_TYPE_RINGBUF:
		if (!h->max_entries || (h->max_entries & (h->max_entries - 1)) ||
		    h->values_off + h->max_entries != file_size)
			return -EBADMSG;
		return 0;
	default:
		return -EBADMSG;
	}
}

static bool parse_name(const char *s, int32_t *pid, uint32_t *id)
{
	char *end;
	unsigned long a, b;

	if (strncmp(s, GPUEXT_SHM_PREFIX, strlen(GPUEXT_SHM_PREFIX)))
		return false;
	s += strlen(GPUEXT_SHM_PREFIX);
	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	a = strtoul(s, &end, 10);
	if (*end != '.' || !isdigit((unsigned char)end[1]) || errno || a == 0 || a > INT32_MAX)
		return false;
	b = strtoul(end + 1, &end, 10);
	if (*end || errno || b == 0 || b > UINT32_MAX)
		return false;
	*pid = (int32_t)a;
	*id = (uint32_t)b;
	return true;
}

/* Gone, or a new process that reuses the pid (its start time differs). */
static bool owner_gone(int32_t pid, uint64_t owner_start)
{
	uint64_t now;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return true;
	now = gpuext_shm_proc_start(pid);
	return owner_start && now && now != owner_start;
}

static void fill_info(struct gpuext_shm_info *info, const struct gpuext_shm_hdr *h)
{
	info->readable = true;
	info->err = 0;
	memcpy(info->name, h->name, sizeof(info->name));
	info->name[sizeof(info->name) - 1] = '\0';
	info->type = h->type;
	info->key_size = h->key_size;
	info->value_size = h->value_size;
	info->max_entries = h->max_entries;
	info->map_flags = h->map_flags;
	info->nr_slots = h->nr_slots;
	info->count = atomic_load_explicit(&h->count, memory_order_relaxed);
	info->cons_pos = atomic_load_explicit(&h->cons_pos, memory_order_acquire);
	info->prod_pos = atomic_load_explicit(&h->prod_pos, memory_order_acquire);
}

static void shm_path(char *buf, size_t len, int32_t pid, uint32_t id)
{
	snprintf(buf, len, "/" GPUEXT_SHM_PREFIX "%d.%u", (int)pid, id);
}

/* Opens and maps one published map read-only; *len gets the file size. */
static int map_readonly(int32_t pid, uint32_t id, const struct gpuext_shm_hdr **out,
			size_t *len)
{
	char name[64];
	struct stat st;
	void *p;
	int fd, err;

	shm_path(name, sizeof(name), pid, id);
	fd = shm_open(name, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	if ((uint64_t)st.st_size < sizeof(struct gpuext_shm_hdr)) {
		close(fd);
		return -EBADMSG;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	err = p == MAP_FAILED ? -errno : 0;
	close(fd);
	if (err)
		return err;
	*out = p;
	*len = (size_t)st.st_size;
	return 0;
}

static int cmp_info(const void *a, const void *b)
{
	const struct gpuext_shm_info *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

int gpuext_shm_list(int32_t pid, struct gpuext_shm_info **out, size_t *cnt)
{
	struct gpuext_shm_info *v = NULL, *tmp;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *dir;

	*out = NULL;
	*cnt = 0;
	dir = opendir(SHM_DIR);
	if (!dir)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(dir))) {
		struct gpuext_shm_info info = { 0 };
		const struct gpuext_shm_hdr *h;
		size_t len;
		int err;

		if (!parse_name(de->d_name, &info.pid, &info.id) || (pid > 0 && info.pid != pid))
			continue;
		err = map_readonly(info.pid, info.id, &h, &len);
		if (err == -ENOENT)
			continue;	/* removed while we looked */
		if (!err) {
			err = gpuext_shm_check_hdr(h, len);
			if (!err) {
				fill_info(&info, h);
				info.stale = owner_gone(info.pid, h->owner_start);
			}
			munmap((void *)h, len);
		}
		if (err) {
			info.err = err;
			info.stale = owner_gone(info.pid, 0);
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			tmp = realloc(v, cap * sizeof(*v));
			if (!tmp) {
				free(v);
				closedir(dir);
				return -ENOMEM;
			}
			v = tmp;
		}
		v[n++] = info;
	}
	closedir(dir);
	if (n)
		qsort(v, n, sizeof(*v), cmp_info);
	*out = v;
	*cnt = n;
	return 0;
}

int gpuext_shm_snapshot(int32_t pid, uint32_t id, struct gpuext_shm_snapshot *snap)
{
	const struct gpuext_shm_hdr *h;
	size_t len, copy;
	int err;

	memset(snap, 0, sizeof(*snap));
	err = map_readonly(pid, id, &h, &len);
	if (err)
		return err;
	err = gpuext_shm_check_hdr(h, len);
	if (err)
		goto out;
	/* A ring buffer's state is its header; records are the consumer's. */
	copy = h->type == BPF_MAP_TYPE_RINGBUF ? sizeof(*h) : len;
	snap->buf = malloc(copy);
	if (!snap->buf) {
		err = -ENOMEM;
		goto out;
	}
	err = -EAGAIN;
	for (int i = 0; i < SNAPSHOT_TRIES; i++) {
		uint32_t s1 = atomic_load_explicit(&h->seq, memory_order_acquire), s2;

		if (s1 & 1) {
			sched_yield();	/* a writer is mid-change */
			continue;
		}
		memcpy(snap->buf, h, copy);
		atomic_thread_fence(memory_order_acquire);
		s2 = atomic_load_explicit(&h->seq, memory_order_relaxed);
		if (s1 == s2) {
			err = 0;
			break;
		}
	}
	if (err)
		goto out;
	/* The copy is what we interpret: check it again, it may differ from the first look. */
	err = gpuext_shm_check_hdr((const struct gpuext_shm_hdr *)snap->buf, len);
	if (err)
		goto out;
	snap->len = copy;
	snap->info.pid = pid;
	snap->info.id = id;
	fill_info(&snap->info, (const struct gpuext_shm_hdr *)snap->buf);
	snap->info.stale = owner_gone(pid, ((const struct gpuext_shm_hdr *)snap->buf)->owner_start);
out:
	munmap((void *)h, len);
	if (err) {
		free(snap->buf);
		memset(snap, 0, sizeof(*snap));
	}
	return err;
}

void gpuext_shm_snapshot_free(struct gpuext_shm_snapshot *snap)
{
	if (!snap)
		return;
	free(snap->buf);
	memset(snap, 0, sizeof(*snap));
}

int gpuext_shm_foreach(const struct gpuext_shm_snapshot *snap, gpuext_shm_entry_fn fn,
		       void *user)
{
	const struct gpuext_shm_hdr *h = (const void *)snap->buf;
	const uint8_t *values;
	int ret;

	if (!h || h->type == BPF_MAP_TYPE_RINGBUF)
		return -EINVAL;
	values = snap->buf + h->values_off;	/* bounds checked by gpuext_shm_check_hdr */
	for (uint32_t i = 0; i < h->max_entries; i++) {
		const uint8_t *e = values + (uint64_t)i * h->elem_size;

		if (h->type == BPF_MAP_TYPE_ARRAY || h->type == BPF_MAP_TYPE_PERCPU_ARRAY) {
			ret = fn(user, &i, e);
		} else {
			const struct gpuext_shm_elem *el = (const void *)e;

			if (el->in_use != 1)
				continue;
			ret = fn(user, e + h->key_off, e + h->val_off);
		}
		if (ret)
			return ret;
	}
	return 0;
}

int gpuext_shm_clean_stale(int32_t pid)
{
	struct gpuext_shm_info *v;
	size_t n;
	int err, removed = 0;

	err = gpuext_shm_list(pid, &v, &n);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		char name[64];

		if (!v[i].stale)
			continue;
		shm_path(name, sizeof(name), v[i].pid, v[i].id);
		if (shm_unlink(name) == 0) {
			removed++;
		} else if (errno != ENOENT) {
			err = -errno;
			break;
		}
	}
	free(v);
	return err ? err : removed;
}

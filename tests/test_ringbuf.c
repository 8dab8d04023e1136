/* SPDX-License-Identifier: Apache-2.0 */
/*
 * BPF_MAP_TYPE_RINGBUF: reserve/submit/discard/output order and contents,
 * wrap-around, full buffer, wakeups through the eventfd, query, bogus
 * submits, and many producer threads against one consumer.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "maps_impl.h"
#include "testlib.h"

static struct test_log logbuf;

static struct gpuext_map *mk_rb(struct gpuext_runtime *rt, const char *name, uint32_t size)
{
	GPUEXT_OPTS(gpuext_map_def, def, .name = name, .type = BPF_MAP_TYPE_RINGBUF,
		    .max_entries = size);
	struct gpuext_map *m = NULL;

	CHECK_EQ_INT(gpuext_map__create(rt, &def, &m), 0);
	return m;
}

/* Records what the consumer saw. */
struct seen {
	int n;
	size_t len[64];
	uint8_t first[64];
	int stop_at;	/* return non-zero at this record (1-based), 0 = never */
};

static int collect(void *user, const void *data, size_t size)
{
	struct seen *s = user;

	if (s->n < 64) {
		s->len[s->n] = size;
		s->first[s->n] = *(const uint8_t *)data;
	}
	s->n++;
	return s->stop_at && s->n == s->stop_at ? 42 : 0;
}

static bool fd_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

static void test_basic(struct gpuext_runtime *rt)
{
	struct gpuext_map *rb = mk_rb(rt, "events", 4096);
	struct gpuext_ringbuf_consumer *c = NULL, *c2 = NULL;
	struct seen s = { 0 };
	uint8_t *a, *b, *d;
	uint32_t k = 0;
	uint8_t buf[16];

	if (!rb)
		return;
	CHECK_EQ_INT(gpuext_ringbuf_consumer__new(rb, collect, &s, &c), 0);
	CHECK_EQ_INT(gpuext_ringbuf_consumer__new(rb, collect, &s, &c2), -EBUSY);
	CHECK_STR_CONTAINS(logbuf.buf, "map 'events': already has a consumer");
	CHECK_EQ_INT(gpuext_map__lookup(rb, &k, buf), -ENOTSUP);
	CHECK_EQ_INT(gpuext_map__update(rb, &k, buf, 0), -ENOTSUP);

	CHECK_EQ_U64(gpuext_ringbuf_query(rb, BPF_RB_RING_SIZE), 4096);
	CHECK_EQ_U64(gpuext_ringbuf_query(rb, BPF_RB_AVAIL_DATA), 0);
	a = gpuext_ringbuf_reserve(rb, 16, 0);
	CHECK(a != NULL);
	CHECK_EQ_U64(gpuext_ringbuf_query(rb, BPF_RB_PROD_POS), 24);
	b = gpuext_ringbuf_reserve(rb, 5, 0);	/* 8 + 5 rounds up to 16 */
	CHECK_EQ_U64(gpuext_ringbuf_query(rb, BPF_RB_PROD_POS), 40);
	d = gpuext_ringbuf_reserve(rb, 3, 0);
	CHECK(a && b && d && b == a + 24 && d == b + 16);
	CHECK_EQ_U64((uintptr_t)a % 8, 0);
	if (!a || !b || !d)
		goto out;
	memset(a, 0xa1, 16);
	memset(b, 0xb2, 5);
	d[0] = 0xd3;
	CHECK(gpuext_ringbuf_of_record(rt, (uintptr_t)a) == rb);
	CHECK(gpuext_ringbuf_of_record(rt, (uintptr_t)a + 8) == NULL);
	CHECK(gpuext_map_contains(rb, (uintptr_t)a, 16, true));
	CHECK(!gpuext_map_contains(rb, (uintptr_t)rb->values - 1, 1, false));
	CHECK(gpuext_map_contains(rb, (uintptr_t)rb->values + 2 * 4096 - 1, 1, true));
	CHECK(!gpuext_map_contains(rb, (uintptr_t)rb->values + 2 * 4096 - 1, 2, true));

	/* Committed out of order: nothing comes out until the first one is done. */
	CHECK_EQ_INT(gpuext_ringbuf_submit(rb, d, 0, false), 0);
	CHECK_EQ_INT(gpuext_ringbuf_submit(rb, b, 0, true), 0);	/* discard */
	CHECK_EQ_INT(gpuext_ringbuf_consumer__consume(c), 0);
	CHECK_EQ_INT(s.n, 0);
	CHECK_EQ_U64(gpuext_ringbuf_query(rb, BPF_RB_CONS_POS), 0);
	CHECK_EQ_U64(gpuext_ringbuf_query(rb, BPF_RB_AVAIL_DATA), 56);
	CHECK_EQ_INT(gpuext_ringbuf_submit(rb, a, 0, false), 0);
	CHECK(gpuext_ringbuf_of_record(rt, (uintptr_t)a) == NULL);
	/* Submitting twice, or a pointer that was never reserved, is refused. */
	CHECK_EQ_INT(gpuext_ringbuf_submit(rb, a, 0, false), -EINVAL);
	CHECK_EQ_INT(gpuext_ringbuf_submit(rb, a + 8, 0, false), -EINVAL);
	CHECK_EQ_INT(gpuext_ringbuf_submit(rb, a + 1, 0, false), -EINVAL);
	CHECK_EQ_INT(gpuext_ringbuf_submit(rb, buf, 0, false), -EINVAL);
	CHECK_EQ_INT(gpuext_ringbuf_submit(rb, NULL, 0, false), -EINVAL);
	CHECK_EQ_INT(gpuext_ringbuf_submit(rb, rb->values + 4096 + 8, 0, false), -EINVAL);
	CHECK_EQ_INT(gpuext_ringbuf_output(rb, buf, 4, 0), 0);
	memset(buf, 0xe4, sizeof(buf));
	CHECK_EQ_INT(gpuext_ringbuf_output(rb, buf, 16, BPF_RB_NO_WAKEUP), 0);
	CHECK_EQ_INT(gpuext_ringbuf_output(rb, buf, 0, 0), -EINVAL);
	CHECK_EQ_INT(gpuext_ringbuf_output(rb, buf, 4, 8), -EINVAL);

	CHECK_EQ_INT(gpuext_ringbuf_consumer__consume(c), 4);
	CHECK_EQ_INT(s.n, 4);
	CHECK_EQ_INT(s.len[0], 16);
	CHECK_EQ_INT(s.first[0], 0xa1);
	CHECK_EQ_INT(s.len[1], 3);	/* the discarded one is skipped */
	CHECK_EQ_INT(s.first[1], 0xd3);
	CHECK_EQ_INT(s.len[2], 4);
	CHECK_EQ_INT(s.len[3], 16);
	CHECK_EQ_INT(s.first[3], 0xe4);
	CHECK_EQ_U64(gpuext_ringbuf_query(rb, BPF_RB_CONS_POS), 24 + 16 + 16 + 16 + 24);
	CHECK_EQ_U64(gpuext_ringbuf_query(rb, BPF_RB_PROD_POS), 96);
	CHECK_EQ_U64(gpuext_ringbuf_query(rb, BPF_RB_AVAIL_DATA), 0);
	CHECK_EQ_U64(gpuext_ringbuf_query(rb, 99), 0);
	CHECK_EQ_INT(gpuext_ringbuf_consumer__consume(c), 0);

	/* A callback's non-zero return stops consuming and is passed on. */
	s = (struct seen){ .stop_at = 2 };
	for (int i = 0; i < 3; i++) {
		buf[0] = (uint8_t)i;
		CHECK_EQ_INT(gpuext_ringbuf_output(rb, buf, 8, 0), 0);
	}
	CHECK_EQ_INT(gpuext_ringbuf_consumer__consume(c), 42);
	CHECK_EQ_INT(s.n, 2);
	s.stop_at = 0;
	CHECK_EQ_INT(gpuext_ringbuf_consumer__consume(c), 1);
	CHECK_EQ_INT(s.first[2], 2);

	/* Reserve sizes: 0, too big, flags. */
	CHECK(gpuext_ringbuf_reserve(rb, 0, 0) == NULL);
	CHECK(gpuext_ringbuf_reserve(rb, 4096 - 7, 0) == NULL);
	CHECK(gpuext_ringbuf_reserve(rb, 8, 1) == NULL);
	CHECK(gpuext_ringbuf_reserve(rb, UINT64_MAX, 0) == NULL);
out:
	gpuext_ringbuf_consumer__free(c);
	/* Freed: a new consumer may attach. */
	CHECK_EQ_INT(gpuext_ringbuf_consumer__new(rb, collect, &s, &c2), 0);
	gpuext_ringbuf_consumer__free(c2);
	gpuext_map__destroy(rb);
}

static void test_full(struct gpuext_runtime *rt)
{
	struct gpuext_map *rb = mk_rb(rt, "full", 4096);
	struct gpuext_ringbuf_consumer *c = NULL;
	struct seen s = { 0 };
	uint8_t *a, *b;

	if (!rb)
		return;
	CHECK_EQ_INT(gpuext_ringbuf_consumer__new(rb, collect, &s, &c), 0);
	/* One record can take the whole buffer: header + 4088 bytes. */
	a = gpuext_ringbuf_reserve(rb, 4088, 0);
	CHECK(a != NULL);
	CHECK(gpuext_ringbuf_reserve(rb, 1, 0) == NULL);
	CHECK_EQ_INT(gpuext_ringbuf_output(rb, &s, 1, 0), -EAGAIN);
	CHECK_EQ_INT(gpuext_ringbuf_submit(rb, a, 0, true), 0);
	CHECK(gpuext_ringbuf_reserve(rb, 1, 0) == NULL);	/* not consumed yet */
	CHECK_EQ_INT(gpuext_ringbuf_consumer__consume(c), 0);	/* discarded */
	CHECK_EQ_U64(gpuext_ringbuf_query(rb, BPF_RB_CONS_POS), 4096);
	/* Now half, half: a third does not fit until the first is consumed. */
	a = gpuext_ringbuf_reserve(rb, 2040, 0);
	b = gpuext_ringbuf_reserve(rb, 2040, 0);
	CHECK(a && b);
	CHECK(gpuext_ringbuf_reserve(rb, 8, 0) == NULL);
	if (a && b) {
		a[0] = 1;
		b[0] = 2;
		CHECK_EQ_INT(gpuext_ringbuf_submit(rb, a, 0, false), 0);
		CHECK_EQ_INT(gpuext_ringbuf_consumer__consume(c), 1);
		CHECK(gpuext_ringbuf_reserve(rb, 2041, 0) == NULL);
		a = gpuext_ringbuf_reserve(rb, 2040, 0);
		CHECK(a != NULL);
		CHECK_EQ_INT(gpuext_ringbuf_submit(rb, b, 0, false), 0);
		CHECK_EQ_INT(gpuext_ringbuf_submit(rb, a, 0, false), 0);
		CHECK_EQ_INT(gpuext_ringbuf_consumer__consume(c), 2);
		CHECK_EQ_INT(s.first[1], 2);
	}
	gpuext_ringbuf_consumer__free(c);
	gpuext_map__destroy(rb);
}

/* Wrap-around: records of every size straddle the end of the data area. */
struct wrap_state {
	uint64_t next_check;	/* sequence number expected next */
	int bad;
};

static size_t wrap_size(uint64_t seq)
{
	return 1 + (seq * 37) % 700;
}

static int wrap_check(void *user, const void *data, size_t size)
{
	struct wrap_state *w = user;
	const uint8_t *p = data;
	uint64_t seq;

	memcpy(&seq, p, sizeof(seq) < size ? sizeof(seq) : size);
	if (size >= 8 && seq != w->next_check)
		w->bad++;
	if (size != wrap_size(w->next_check))
		w->bad++;
	for (size_t i = 8; i < size; i++)
		if (p[i] != (uint8_t)(w->next_check + i))
			w->bad++;
	w->next_check++;
	return 0;
}

static void test_wrap(struct gpuext_runtime *rt)
{
	struct gpuext_map *rb = mk_rb(rt, "wrap", 4096);
	struct gpuext_ringbuf_consumer *c = NULL;
	struct wrap_state w = { 0 };
	uint64_t seq = 0, straddled = 0;

	if (!rb)
		return;
	CHECK_EQ_INT(gpuext_ringbuf_consumer__new(rb, wrap_check, &w, &c), 0);
	while (seq < 20000) {
		size_t size = wrap_size(seq);
		uint8_t *p = gpuext_ringbuf_reserve(rb, size, 0);

		if (!p) {
			/* Full: drain, then the same record must fit. */
			CHECK(gpuext_ringbuf_consumer__consume(c) > 0);
			continue;
		}
		if ((uintptr_t)p + size > (uintptr_t)rb->values + 4096)
			straddled++;
		memcpy(p, &seq, size < 8 ? size : 8);
		for (size_t i = 8; i < size; i++)
			p[i] = (uint8_t)(seq + i);
		CHECK_EQ_INT(gpuext_ringbuf_submit(rb, p, BPF_RB_NO_WAKEUP, false), 0);
		seq++;
	}
	gpuext_ringbuf_consumer__consume(c);
	CHECK_EQ_U64(w.next_check, 20000);
	CHECK_EQ_INT(w.bad, 0);
	CHECK(straddled > 100);	/* the wrap path really ran */
	CHECK(gpuext_ringbuf_query(rb, BPF_RB_PROD_POS) > 100 * 4096);
	CHECK_EQ_U64(gpuext_ringbuf_query(rb, BPF_RB_AVAIL_DATA), 0);
	gpuext_ringbuf_consumer__free(c);
	gpuext_map__destroy(rb);
}

static void test_wakeup(struct gpuext_runtime *rt)
{
	struct gpuext_map *rb = mk_rb(rt, "wake", 4096);
	struct gpuext_ringbuf_consumer *c = NULL;
	struct seen s = { 0 };
	uint64_t x = 7;
	int fd;

	if (!rb)
		return;
	CHECK_EQ_INT(gpuext_ringbuf_consumer__new(rb, collect, &s, &c), 0);
	fd = gpuext_ringbuf_consumer__fd(c);
	CHECK(fd >= 0);
	CHECK(!fd_readable(fd));
	CHECK_EQ_INT(gpuext_ringbuf_output(rb, &x, 8, BPF_RB_NO_WAKEUP), 0);
	CHECK(!fd_readable(fd));
	void *p = gpuext_ringbuf_reserve(rb, 8, 0);
	CHECK_EQ_INT(gpuext_ringbuf_submit(rb, p, BPF_RB_NO_WAKEUP, true), 0);
	CHECK(!fd_readable(fd));
	CHECK_EQ_INT(gpuext_ringbuf_output(rb, &x, 8, 0), 0);
	CHECK(fd_readable(fd));
	CHECK_EQ_INT(gpuext_ringbuf_consumer__consume(c), 2);
	CHECK(!fd_readable(fd));	/* consuming drains the eventfd */
	CHECK_EQ_INT(gpuext_ringbuf_output(rb, &x, 8, BPF_RB_NO_WAKEUP | BPF_RB_FORCE_WAKEUP), 0);
	CHECK(fd_readable(fd));
	CHECK_EQ_INT(gpuext_ringbuf_consumer__poll(c, 1000), 1);
	CHECK(!fd_readable(fd));

	/* poll() with nothing to read times out with 0. */
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_EQ_INT(gpuext_ringbuf_consumer__poll(c, 20), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) >= 15000000L);
	gpuext_ringbuf_consumer__free(c);
	gpuext_map__destroy(rb);
}

static void test_two_buffers(struct gpuext_runtime *rt)
{
	struct gpuext_map *r1 = mk_rb(rt, "r1", 4096), *r2 = mk_rb(rt, "r2", 8192);
	uint8_t *p1, *p2;

	if (!r1 || !r2)
		goto out;
	p1 = gpuext_ringbuf_reserve(r1, 8, 0);
	p2 = gpuext_ringbuf_reserve(r2, 8, 0);
	CHECK(gpuext_ringbuf_of_record(rt, (uintptr_t)p1) == r1);
	CHECK(gpuext_ringbuf_of_record(rt, (uintptr_t)p2) == r2);
	CHECK(gpuext_ringbuf_of_record(NULL, (uintptr_t)p2) == NULL);
	CHECK_EQ_INT(gpuext_ringbuf_submit(r1, p2, 0, false), -EINVAL);
	CHECK_EQ_INT(gpuext_ringbuf_submit(r2, p2, 0, false), 0);
	CHECK_EQ_INT(gpuext_ringbuf_submit(r1, p1, 0, false), 0);
	struct gpuext_ringbuf_consumer *c = NULL;
	CHECK_EQ_INT(gpuext_ringbuf_consumer__new(NULL, collect, NULL, &c), -EINVAL);
	CHECK_EQ_INT(gpuext_ringbuf_consumer__new(r1, NULL, NULL, &c), -EINVAL);
out:
	gpuext_map__destroy(r1);
	gpuext_map__destroy(r2);
}

/* ---- producers on threads, one consumer ---- */

#define NR_PRODUCERS 4
#define PER_PRODUCER 100000

struct rec {
	uint32_t producer;
	uint32_t seq;
	uint64_t sum;	/* of the payload words below */
	uint32_t words[];
};

struct producer {
	pthread_t thread;
	struct gpuext_map *rb;
	uint32_t id;
	uint64_t full;	/* reservations refused because the buffer was full */
};

static void *produce(void *arg)
{
	struct producer *p = arg;

	for (uint32_t seq = 0; seq < PER_PRODUCER; seq++) {
		uint32_t nw = (seq * 13 + p->id) % 24;
		size_t size = sizeof(struct rec) + nw * sizeof(uint32_t);
		struct rec *r;

		while (!(r = gpuext_ringbuf_reserve(p->rb, size, 0))) {
			p->full++;
			sched_yield();
		}
		r->producer = p->id;
		r->seq = seq;
		r->sum = 0;
		for (uint32_t i = 0; i < nw; i++) {
			r->words[i] = seq * 2654435761u + i;
			r->sum += r->words[i];
		}
		/* Every 7th is discarded: the consumer must never see it. */
		if (gpuext_ringbuf_submit(p->rb, r, BPF_RB_NO_WAKEUP, seq % 7 == 6))
			abort();
	}
	return NULL;
}

struct stress {
	uint32_t next[NR_PRODUCERS];
	uint64_t received, bad;
};

static int stress_check(void *user, const void *data, size_t size)
{
	struct stress *s = user;
	const struct rec *r = data;
	uint64_t sum = 0;
	uint32_t nw;

	if (size < sizeof(*r) || r->producer >= NR_PRODUCERS) {
		s->bad++;
		return 0;
	}
	nw = (uint32_t)((size - sizeof(*r)) / sizeof(uint32_t));
	/* Per producer, records arrive in its order, minus the discarded ones. */
	while (s->next[r->producer] % 7 == 6)
		s->next[r->producer]++;
	if (r->seq != s->next[r->producer] || nw != (r->seq * 13 + r->producer) % 24)
		s->bad++;
	s->next[r->producer] = r->seq + 1;
	for (uint32_t i = 0; i < nw; i++)
		sum += r->words[i];
	if (sum != r->sum)
		s->bad++;
	s->received++;
	return 0;
}

static void test_stress(struct gpuext_runtime *rt)
{
	struct gpuext_map *rb = mk_rb(rt, "stress", 16384);
	struct gpuext_ringbuf_consumer *c = NULL;
	struct producer prod[NR_PRODUCERS];
	struct stress s = { 0 };
	uint64_t want = 0, full = 0;

	if (!rb)
		return;
	CHECK_EQ_INT(gpuext_ringbuf_consumer__new(rb, stress_check, &s, &c), 0);
	for (uint32_t i = 0; i < NR_PRODUCERS; i++) {
		prod[i] = (struct producer){ .rb = rb, .id = i };
		CHECK_EQ_INT(pthread_create(&prod[i].thread, NULL, produce, &prod[i]), 0);
	}
	for (uint32_t seq = 0; seq < PER_PRODUCER; seq++)
		want += seq % 7 != 6;
	want *= NR_PRODUCERS;
	while (s.received < want && !s.bad) {
		if (gpuext_ringbuf_consumer__consume(c) == 0)
			sched_yield();
	}
	for (uint32_t i = 0; i < NR_PRODUCERS; i++) {
		pthread_join(prod[i].thread, NULL);
		full += prod[i].full;
	}
	CHECK_EQ_INT(gpuext_ringbuf_consumer__consume(c), 0);	/* nothing extra */
	CHECK_EQ_U64(s.received, want);
	CHECK_EQ_U64(s.bad, 0);
	CHECK_EQ_U64(gpuext_ringbuf_query(rb, BPF_RB_AVAIL_DATA), 0);
	printf("stress: %d producers x %d records, %" PRIu64 " received, buffer full %" PRIu64 " times\n",
	       NR_PRODUCERS, PER_PRODUCER, s.received, full);
	gpuext_ringbuf_consumer__free(c);
	gpuext_map__destroy(rb);
}

int main(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, opts, .print = test_log_print, .print_user = &logbuf);
	struct gpuext_runtime *rt = NULL;

	CHECK_EQ_INT(gpuext_runtime__new(&opts, &rt), 0);
	if (!rt)
		return test_done("test_ringbuf");
	test_basic(rt);
	test_full(rt);
	test_wrap(rt);
	test_wakeup(rt);
	test_two_buffers(rt);
	test_stress(rt);
	gpuext_runtime__free(rt);
	return test_done("test_ringbuf");
}

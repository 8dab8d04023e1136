// SPDX-License-Identifier: Apache-2.0
/*
 * gx_mockgpu hammer: several processes share one mock GPU (they inherit the
 * file), each with its own ranges, four times more memory than the device
 * holds, and mix device writes, device reads, CPU writes and CPU reads of
 * random spans as fast as they can. Every process keeps a shadow copy of
 * what it wrote and checks every byte it reads, from the device and from
 * the CPU, and all of its memory at the end. Pass = no mismatch in any
 * process (and, checked by the harness, no oops/WARN in the kernel log).
 *
 * usage: hammer [PROCS [OPS [BLOCKS_PER_PROC [CAPACITY]]]]   (4 3000 4 4)
 */
#include <signal.h>
#include <sys/wait.h>

#include "gxtest.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static int child(int fd, unsigned idx, unsigned ops, unsigned nblk)
{
	size_t size = (size_t)nblk * GX_BLOCK, max_span = 64 * GX_PAGE;
	uint8_t *m = gx_map(size, idx & 1);	/* odd children leave THP on */
	uint8_t *shadow = malloc(size), *buf = malloc(max_span);
	uint64_t gpu = (uint64_t)(idx + 1) << 32;	/* distinct GPU VA per process */
	unsigned counts[4] = { 0 };
	int err;

	if (!shadow || !buf)
		gx_die("child %u: out of memory", idx);
	rng_state = 0x2545F4914F6CDD1Dull * (idx + 1);
	for (size_t i = 0; i < size; i++)
		m[i] = shadow[i] = (uint8_t)rnd();
	err = gx_range_add(fd, m, gpu, size, 0);
	if (err)
		gx_die("child %u: range add: %s", idx, strerror(-err));

	for (unsigned op = 0; op < ops && !gx_failures; op++) {
		size_t len = 1 + rnd() % max_span, off = rnd() % (size - len + 1);
		unsigned kind = rnd() % 4;
		size_t bad = SIZE_MAX;

		counts[kind]++;
		switch (kind) {
		case 0:		/* device write */
			for (size_t i = 0; i < len; i++)
				buf[i] = (uint8_t)rnd();
			err = gx_dev_rw(fd, gpu + off, buf, len, 1);
			GX_CHECK(!err, "child %u op %u: device write: %s", idx, op, strerror(-err));
			memcpy(shadow + off, buf, len);
			break;
		case 1:		/* device read */
			err = gx_dev_rw(fd, gpu + off, buf, len, 0);
			GX_CHECK(!err, "child %u op %u: device read: %s", idx, op, strerror(-err));
			for (size_t i = 0; i < len && bad == SIZE_MAX; i++)
				if (buf[i] != shadow[off + i])
					bad = i;
			GX_CHECK(bad == SIZE_MAX, "child %u op %u: device read of +%zu differs at +%zu",
				 idx, op, off, bad);
			break;
		case 2:		/* CPU write */
			for (size_t i = 0; i < len; i++)
				m[off + i] = shadow[off + i] = (uint8_t)rnd();
			break;
		default:	/* CPU read */
			for (size_t i = 0; i < len && bad == SIZE_MAX; i++)
				if (m[off + i] != shadow[off + i])
					bad = i;
			GX_CHECK(bad == SIZE_MAX, "child %u op %u: CPU read of +%zu differs at +%zu",
				 idx, op, off, bad);
		}
		/* Now and then the device streams over a whole block (pressure). */
		if (op % 16 == 0) {
			uint64_t b = rnd() % nblk;

			gx_access(fd, gpu + b * GX_BLOCK + (rnd() % 256) * GX_PAGE, 64, GX_ACC_FLUSH);
		}
	}
	/* Everything, once more: through the device, then through the CPU. */
	for (size_t off = 0; off < size && !gx_failures; off += max_span) {
		size_t bad = SIZE_MAX;

		err = gx_dev_rw(fd, gpu + off, buf, max_span, 0);
		GX_CHECK(!err, "child %u: final device read: %s", idx, strerror(-err));
		for (size_t i = 0; i < max_span && bad == SIZE_MAX; i++)
			if (buf[i] != shadow[off + i])
				bad = i;
		GX_CHECK(bad == SIZE_MAX, "child %u: final device read of +%zu differs at +%zu",
			 idx, off, bad);
	}
	GX_CHECK(!memcmp(m, shadow, size), "child %u: final CPU compare differs", idx);
	printf("hammer: child %u: %u device writes, %u device reads, %u CPU writes, %u CPU reads\n",
	       idx, counts[0], counts[1], counts[2], counts[3]);
	return gx_failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	unsigned procs = argc > 1 ? (unsigned)atoi(argv[1]) : 4;
	unsigned ops = argc > 2 ? (unsigned)atoi(argv[2]) : 3000;
	unsigned nblk = argc > 3 ? (unsigned)atoi(argv[3]) : 4;
	unsigned cap = argc > 4 ? (unsigned)atoi(argv[4]) : 4;
	struct gx_stats st;
	int fd, status, failed = 0;

	gx_test_name = "hammer";
	if (!procs || procs > 64 || !ops || !nblk || nblk > 64 || !cap)
		gx_die("usage: hammer [PROCS 1..64 [OPS [BLOCKS_PER_PROC 1..64 [CAPACITY]]]]");
	fd = gx_open();
	gx_config(fd, cap, 0, 0);
	/*
	 * A quitter: puts its memory on the device and dies (SIGKILL) while
	 * it is there, leaving its range registered; the others go on over
	 * its chunks (page_free clears them as the kernel tears the mm down).
	 */
	{
		pid_t q = fork();

		if (q < 0)
			gx_die("fork: %s", strerror(errno));
		if (q == 0) {
			uint8_t *m = gx_map(2 * GX_BLOCK, 0);

			memset(m, 0x77, 2 * GX_BLOCK);
			if (gx_range_add(fd, m, 1ull << 40, 2 * GX_BLOCK, 0) ||
			    gx_access(fd, 1ull << 40, 1024, GX_ACC_FLUSH | GX_ACC_WRITE) < 0)
				_exit(1);
			raise(SIGKILL);
		}
		if (waitpid(q, &status, 0) < 0 || !WIFSIGNALED(status))
			gx_die("the quitter did not die by SIGKILL (status %#x)", status);
		st = gx_stats(fd);
		GX_CHECK(st.pages_to_dev >= 1024 && st.resident_pages == 0,
			 "quitter: %llu pages moved, %llu still resident after its death (want >= 1024, 0)",
			 (unsigned long long)st.pages_to_dev, (unsigned long long)st.resident_pages);
	}
	for (unsigned i = 0; i < procs; i++) {
		pid_t pid = fork();

		if (pid < 0)
			gx_die("fork: %s", strerror(errno));
		if (pid == 0)
			_exit(child(fd, i, ops, nblk));
	}
	for (unsigned i = 0; i < procs; i++) {
		if (wait(&status) < 0)
			gx_die("wait: %s", strerror(errno));
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "hammer: a child failed (status %#x)\n", status);
			failed++;
		}
	}
	st = gx_stats(fd);
	printf("hammer: %u processes x %u ops, %u blocks each on %u: %llu faults in %llu batches, "
	       "%llu pages to the device (%llu prefetched), %llu evictions (%llu pages), "
	       "%llu CPU faults, %llu pages not moved\n",
	       procs, ops, nblk, cap, (unsigned long long)st.faults, (unsigned long long)st.batches,
	       (unsigned long long)st.pages_to_dev, (unsigned long long)st.pages_prefetched,
	       (unsigned long long)st.evictions, (unsigned long long)st.pages_evicted,
	       (unsigned long long)st.cpu_faults, (unsigned long long)st.migrate_failed);
	GX_CHECK(!failed, "%d child(ren) failed", failed);
	GX_CHECK(st.evictions > 0 && st.cpu_faults > 0 && st.pages_to_dev > 0,
		 "the hammer must evict and take CPU faults");
	close(fd);
	return gx_finish();
}

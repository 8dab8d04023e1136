// SPDX-License-Identifier: Apache-2.0
/*
 * gx_mockgpu residency and migrations, with no policy attached (gpuext's
 * defaults = stock UVM): device accesses migrate pages to device-private
 * memory and back, data survives every move, pressure evicts in stock
 * order (the used list's head: the chunk allocated first, never reordered
 * by later faults), and bad input is refused with the errno the ABI names.
 */
#include "gxtest.h"

#define NBLK 8

static uint64_t id0;		/* block id of the range's first block */

static void fill(uint8_t *p, size_t len, uint64_t va, unsigned gen)
{
	for (size_t i = 0; i < len; i++)
		p[i] = gx_pattern(va + i, gen);
}

static size_t mismatch(const uint8_t *p, size_t len, uint64_t va, unsigned gen)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != gx_pattern(va + i, gen))
			return i;
	return SIZE_MAX;
}

static void test_bad_input(void)
{
	int fd = gx_open();
	struct gx_config c = { .capacity_blocks = 0 };
	uint8_t *m;

	GX_CHECK(gx_access(fd, 0x200000, 1, 0) == -ENXIO, "access before config must be ENXIO");
	GX_CHECK(ioctl(fd, GX_IOC_CONFIG, &c) && errno == EINVAL, "capacity 0 must be EINVAL");
	c.capacity_blocks = GX_MOCKGPU_MAX_CAPACITY + 1;
	GX_CHECK(ioctl(fd, GX_IOC_CONFIG, &c) && errno == EINVAL, "capacity 65 must be EINVAL");
	gx_config(fd, 2, 0, 0);
	c.capacity_blocks = 2;
	GX_CHECK(ioctl(fd, GX_IOC_CONFIG, &c) && errno == EBUSY, "second config must be EBUSY");
	m = gx_map(2 * GX_BLOCK, 0);
	GX_CHECK(gx_range_add(fd, m + GX_PAGE, 0, GX_BLOCK, 0) == -EINVAL,
		 "unaligned range must be EINVAL");
	GX_CHECK(gx_range_add(fd, m, 0, GX_BLOCK + GX_PAGE, 0) == -EINVAL,
		 "unaligned size must be EINVAL");
	GX_CHECK(gx_range_add(fd, m, 0, 4 * GX_BLOCK, 0) == -EINVAL,
		 "range past the mapping must be EINVAL");
	GX_CHECK(gx_range_add(fd, m, 0, 2 * GX_BLOCK, 0) == 0, "range add");
	GX_CHECK(gx_range_add(fd, m, 0, GX_BLOCK, 0) == -EEXIST, "overlap must be EEXIST");
	GX_CHECK(gx_access(fd, (uintptr_t)m + 2 * GX_BLOCK, 1, 0) == -ENOENT,
		 "access outside every range must be ENOENT");
	GX_CHECK(gx_dev_rw(fd, (uintptr_t)m, (void *)16, 4096, 1) == -EFAULT,
		 "device write from a bad pointer must be EFAULT");
	GX_CHECK(ioctl(fd, _IO(GX_IOC_MAGIC, 99)) && errno == ENOTTY, "unknown ioctl: ENOTTY");
	close(fd);
	munmap(m, 2 * GX_BLOCK);
}

int main(void)
{
	uint8_t *m, buf[10 * GX_PAGE];
	struct gx_block_state bs;
	struct gx_stats st, st0;
	char list[256];
	uint64_t va;
	int fd, n;
	size_t bad;

	gx_test_name = "residency";
	test_bad_input();

	/* ---- migrations and data: capacity 4, default prefetch off ---- */
	fd = gx_open();
	gx_config(fd, 4, 0, GX_CFG_PREFETCH_OFF);
	m = gx_map(NBLK * GX_BLOCK, 0);
	va = (uintptr_t)m;
	id0 = va >> 21;
	fill(m, NBLK * GX_BLOCK, va, 1);
	if (gx_range_add(fd, m, 0, NBLK * GX_BLOCK, 0))
		gx_die("range add: %s", strerror(errno));

	n = gx_access(fd, va, 10, GX_ACC_FLUSH);
	GX_CHECK(n == 10, "10 faults queued, got %d", n);
	bs = gx_block(fd, id0);
	GX_CHECK(bs.has_chunk && bs.resident_pages == 10 && bs.resident[0] == 0x3ff,
		 "block 0: chunk %u, %u pages resident, mask %#llx (want 10, 0x3ff)",
		 bs.has_chunk, bs.resident_pages, (unsigned long long)bs.resident[0]);
	st = gx_stats(fd);
	GX_CHECK(st.faults == 10 && st.batches == 1 && st.pages_to_dev == 10 &&
		 st.pages_prefetched == 0 && st.used_blocks == 1 && st.resident_pages == 10,
		 "stats faults %llu batches %llu to_dev %llu prefetched %llu used %llu resident %llu",
		 (unsigned long long)st.faults, (unsigned long long)st.batches,
		 (unsigned long long)st.pages_to_dev, (unsigned long long)st.pages_prefetched,
		 (unsigned long long)st.used_blocks, (unsigned long long)st.resident_pages);
	/* A second access of resident pages is no fault. */
	GX_CHECK(gx_access(fd, va, 10, GX_ACC_FLUSH) == 0, "resident pages must not fault");

	/* The device sees what the CPU wrote... */
	GX_CHECK(gx_dev_rw(fd, va, buf, sizeof(buf), 0) == 0, "device read");
	bad = mismatch(buf, sizeof(buf), va, 1);
	GX_CHECK(bad == SIZE_MAX, "device read differs at byte %zu", bad);
	/* ...the CPU sees what the device wrote, through migrate_to_ram. */
	fill(buf, sizeof(buf), va, 2);
	GX_CHECK(gx_dev_rw(fd, va, buf, sizeof(buf), 1) == 0, "device write");
	st0 = gx_stats(fd);
	bad = mismatch(m, sizeof(buf), va, 2);
	GX_CHECK(bad == SIZE_MAX, "CPU read after device write differs at byte %zu", bad);
	st = gx_stats(fd);
	bs = gx_block(fd, id0);
	GX_CHECK(st.cpu_faults - st0.cpu_faults == 10 && bs.resident_pages == 0,
		 "CPU reads migrated %llu pages back (want 10), %u left on the device",
		 (unsigned long long)(st.cpu_faults - st0.cpu_faults), bs.resident_pages);
	/* The rest of block 0 never moved and still holds generation 1. */
	bad = mismatch(m + sizeof(buf), GX_BLOCK - sizeof(buf), va + sizeof(buf), 1);
	GX_CHECK(bad == SIZE_MAX, "untouched bytes changed at %zu", bad);
	close(fd);

	/* ---- pressure: stock victim order ---- */
	gx_events_clear();
	fd = gx_open();
	gx_config(fd, 4, 0, GX_CFG_PREFETCH_OFF);
	fill(m, NBLK * GX_BLOCK, va, 3);
	if (gx_range_add(fd, m, 0, NBLK * GX_BLOCK, 0))
		gx_die("range add: %s", strerror(errno));
	for (int b = 0; b < 4; b++)
		gx_access(fd, va + b * GX_BLOCK, 1, GX_ACC_FLUSH);
	gx_used_list(fd, id0, list, sizeof(list));
	GX_CHECK(!strcmp(list, "0 1 2 3"), "used list '%s', want '0 1 2 3'", list);
	/* Block 0 faults again on another page: stock never reorders it. */
	gx_access(fd, va + 100 * GX_PAGE, 1, GX_ACC_FLUSH | GX_ACC_WRITE);
	gx_used_list(fd, id0, list, sizeof(list));
	GX_CHECK(!strcmp(list, "0 1 2 3"), "after a re-fault: '%s', want '0 1 2 3'", list);
	GX_CHECK(gx_stats(fd).evictions == 0, "no eviction yet");

	/* The device writes block 1's resident page 0: eviction must carry it back. */
	fill(buf, GX_PAGE, va + GX_BLOCK, 5);
	GX_CHECK(gx_dev_rw(fd, va + GX_BLOCK, buf, GX_PAGE, 1) == 0, "device write of block 1");
	GX_CHECK(gx_stats(fd).faults == 5, "a device write to a resident page is no fault");

	gx_access(fd, va + 4 * GX_BLOCK, 1, GX_ACC_FLUSH);
	gx_used_list(fd, id0, list, sizeof(list));
	st = gx_stats(fd);
	bs = gx_block(fd, id0);
	GX_CHECK(!strcmp(list, "1 2 3 4"), "after pressure: '%s', want '1 2 3 4'", list);
	GX_CHECK(st.evictions == 1 && st.pages_evicted == 2 && !bs.has_chunk &&
		 !bs.resident_pages,
		 "evictions %llu pages %llu (want 1, 2); block 0 chunk %u resident %u",
		 (unsigned long long)st.evictions, (unsigned long long)st.pages_evicted,
		 bs.has_chunk, bs.resident_pages);
	gx_access(fd, va + 5 * GX_BLOCK, 1, GX_ACC_FLUSH);
	gx_used_list(fd, id0, list, sizeof(list));
	GX_CHECK(!strcmp(list, "2 3 4 5"), "second victim: '%s', want '2 3 4 5'", list);
	/* What the scenario differential reads: the adapter's evict events, in order. */
	{
		char ev[512], want[128];

		gx_events("evict ", ev, sizeof(ev));
		snprintf(want, sizeof(want), "evict %llu;evict %llu", (unsigned long long)id0,
			 (unsigned long long)id0 + 1);
		GX_CHECK(!strcmp(ev, want), "events '%s', want '%s'", ev, want);
	}
	/* Evicted data came back to system memory intact, without CPU faults. */
	st0 = gx_stats(fd);
	bad = mismatch(m, GX_BLOCK, va, 3);
	GX_CHECK(bad == SIZE_MAX, "evicted data differs at byte %zu", bad);
	bad = mismatch(m + GX_BLOCK, GX_PAGE, va + GX_BLOCK, 5);
	GX_CHECK(bad == SIZE_MAX, "device-written page after eviction differs at byte %zu", bad);
	bad = mismatch(m + GX_BLOCK + GX_PAGE, GX_BLOCK - GX_PAGE, va + GX_BLOCK + GX_PAGE, 3);
	GX_CHECK(bad == SIZE_MAX, "evicted data differs at byte %zu of block 1", bad);
	GX_CHECK(gx_stats(fd).cpu_faults == st0.cpu_faults, "evicted pages needed CPU faults");
	/* Blocks 2..5 are still on the device: reading them migrates them back. */
	bad = mismatch(m + 2 * GX_BLOCK, 6 * GX_BLOCK, va + 2 * GX_BLOCK, 3);
	GX_CHECK(bad == SIZE_MAX, "resident data differs at byte %zu", bad);
	GX_CHECK(gx_stats(fd).cpu_faults - st0.cpu_faults == 4, "4 pages came back by CPU faults");
	printf("residency: %llu pages to the device, %llu evictions (%llu pages), %llu CPU faults\n",
	       (unsigned long long)gx_stats(fd).pages_to_dev,
	       (unsigned long long)gx_stats(fd).evictions,
	       (unsigned long long)gx_stats(fd).pages_evicted,
	       (unsigned long long)gx_stats(fd).cpu_faults);
	close(fd);

	/* ---- GPU VAs of a scenario, range removal ---- */
	fd = gx_open();
	gx_config(fd, 2, 0, GX_CFG_PREFETCH_OFF);
	fill(m, 2 * GX_BLOCK, va, 4);
	/* The script's block 1 (0x200000) is this process's memory at m. */
	if (gx_range_add(fd, m, 0x200000, 2 * GX_BLOCK, 100))
		gx_die("range add at gpu 0x200000: %s", strerror(errno));
	gx_access(fd, 0x200000 + 5 * GX_PAGE, 1, GX_ACC_FLUSH);
	gx_access(fd, 0x400000, 3, GX_ACC_FLUSH);
	bs = gx_block(fd, 1);
	GX_CHECK(bs.resident[0] == 1u << 5 && bs.owner_tgid == 100,
		 "gpu block 1: mask %#llx owner %u (want 0x20, 100)",
		 (unsigned long long)bs.resident[0], bs.owner_tgid);
	gx_used_list(fd, 0, list, sizeof(list));
	GX_CHECK(!strcmp(list, "1 2"), "used list by GPU block id '%s', want '1 2'", list);
	{
		struct gx_range del = { .gpu_va = 0x200000 };

		GX_CHECK(!ioctl(fd, GX_IOC_RANGE_DEL, &del), "range del: %s", strerror(errno));
		GX_CHECK(ioctl(fd, GX_IOC_RANGE_DEL, &del) && errno == ENOENT,
			 "deleting it twice must be ENOENT");
	}
	st = gx_stats(fd);
	GX_CHECK(st.used_blocks == 0 && st.resident_pages == 0 && st.cpu_faults == 0,
		 "after range del: %llu chunks, %llu pages, %llu CPU faults (want 0 0 0)",
		 (unsigned long long)st.used_blocks, (unsigned long long)st.resident_pages,
		 (unsigned long long)st.cpu_faults);
	gx_used_list(fd, 0, list, sizeof(list));
	GX_CHECK(!strcmp(list, ""), "used list after range del: '%s'", list);
	bad = mismatch(m, 2 * GX_BLOCK, va, 4);
	GX_CHECK(bad == SIZE_MAX, "data after range del differs at byte %zu", bad);
	GX_CHECK(gx_stats(fd).cpu_faults == 0, "range del must bring the pages back itself");
	close(fd);

	/* ---- default prefetch: one fault brings its 64 KiB big page ---- */
	fd = gx_open();
	gx_config(fd, 4, 0, 0);
	if (gx_range_add(fd, m, 0, NBLK * GX_BLOCK, 0))
		gx_die("range add: %s", strerror(errno));
	gx_events_clear();
	gx_access(fd, va + 10 * GX_PAGE, 1, GX_ACC_FLUSH);
	bs = gx_block(fd, id0);
	st = gx_stats(fd);
	{
		char ev[512], want[128];

		gx_events("prefetch ", ev, sizeof(ev));
		snprintf(want, sizeof(want), "prefetch %llu 0-9;prefetch %llu 11-15",
			 (unsigned long long)id0, (unsigned long long)id0);
		GX_CHECK(!strcmp(ev, want), "events '%s', want '%s'", ev, want);
	}
	GX_CHECK(bs.resident[0] == 0xffff && st.pages_prefetched == 15,
		 "stock prefetch: mask %#llx prefetched %llu (want 0xffff, 15)",
		 (unsigned long long)bs.resident[0], (unsigned long long)st.pages_prefetched);
	bad = mismatch(m, 16 * GX_PAGE, va, 4);
	GX_CHECK(bad == SIZE_MAX, "prefetched data differs at byte %zu", bad);
	close(fd);
	munmap(m, NBLK * GX_BLOCK);
	return gx_finish();
}

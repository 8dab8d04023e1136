/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stock prefetch rule of NVIDIA UVM (uvm_perf_prefetch.c, 575.x), for
 * one 2 MiB VA block of 512 pages, written from a reading of the driver.
 *
 * Modelled:
 *  - init_bitmap_tree_from_region(): the tree's leaves are the pages that will
 *    be resident on the destination GPU once the faults are serviced:
 *    resident | faulted. max_prefetch_region is the whole block (a managed
 *    2 MiB block, not HMM), so the tree has 512 leaves and 10 levels and no
 *    offset (a 2 MiB-aligned block is aligned to every big-page size).
 *  - update_bitmap_tree_from_va_block() / grow_fault_granularity(): "assume big
 *    pages": every big page (64 KiB = 16 pages by default) holding a faulted
 *    page is filled in the tree.
 *  - compute_prefetch_region(): walk from the leaf of the faulted page up to
 *    the root; each level's node covers an aligned run of 1, 2, 4 ... 512
 *    pages; a node whose count satisfies count * 100 > pages * threshold
 *    becomes the region, so the *largest* qualifying node wins even when a
 *    smaller one in between does not qualify.
 *  - compute_prefetch_mask(): the union of those regions over the faulted
 *    pages in ascending order, stopping early once a region reaches the end
 *    of the block; then faulted pages are removed
 *    (uvm_perf_prefetch_prenotify_fault_migrations()).
 *  - uvm_perf_prefetch_min_faults = 1: fault_migrations_to_last_proc counts
 *    this batch's faults before the check, so any fault enables prefetching.
 *
 * Simplified (not modelled): thrashing detection (uvm_perf_thrashing: no page
 * is ever "thrashing", so growth and prefetch are never suppressed); the
 * first-touch "populate the whole block at the preferred location" case (no
 * preferred location is ever set); range groups; HMM prefetch regions;
 * CPU-destination prefetch (host accesses migrate exactly what they touch).
 * sim_prefetch_stock() also drops already-resident pages: the driver keeps
 * them in the hint mask, but block_copy_resident_pages() only moves pages
 * that are not resident at the destination, so they never count as moved.
 */
#include <string.h>

#include "sim_mem.h"

#define WORDS (GPU_PAGES_PER_BLOCK / 64)

static unsigned count_range(const uint64_t tree[WORDS], unsigned start, unsigned size)
{
	unsigned n = 0;

	if (size >= 64) {
		for (unsigned w = start / 64; w < (start + size) / 64; w++)
			n += sim_pop64(tree[w]);
		return n;
	}
	return sim_pop64((tree[start / 64] >> (start % 64)) &
					      ((1ULL << size) - 1));
}

static void fill_range(uint64_t m[WORDS], unsigned first, unsigned last)
{
	for (unsigned w = first / 64; w <= last / 64; w++) {
		unsigned lo = w == first / 64 ? first % 64 : 0;
		unsigned hi = w == last / 64 ? last % 64 : 63;
		uint64_t bits = (hi - lo == 63) ? ~0ULL : ((1ULL << (hi - lo + 1)) - 1) << lo;

		m[w] |= bits;
	}
}

void sim_prefetch_tree(const uint64_t resident[8], const uint64_t faulted[8],
		       unsigned big_page_pages, uint64_t tree[8])
{
	for (unsigned w = 0; w < WORDS; w++)
		tree[w] = resident[w] | faulted[w];
	/* grow_fault_granularity(): whole big pages that hold a fault. */
	if (big_page_pages <= 1 || big_page_pages > 64 || (big_page_pages & (big_page_pages - 1)))
		return;
	for (unsigned w = 0; w < WORDS; w++) {
		uint64_t f = faulted[w];

		for (unsigned b = 0; b < 64 && f; b += big_page_pages) {
			uint64_t group = big_page_pages == 64 ? ~0ULL
							      : ((1ULL << big_page_pages) - 1) << b;

			if (f & group) {
				tree[w] |= group;
				f &= ~group;
			}
		}
	}
}

bool sim_prefetch_region(const uint64_t tree[8], unsigned page, unsigned threshold,
			 unsigned *first, unsigned *last)
{
	bool found = false;

	if (page >= GPU_PAGES_PER_BLOCK)
		return false;
	/* uvm_perf_prefetch_bitmap_tree_traverse_counters(): leaf to root. */
	for (unsigned size = 1; size <= GPU_PAGES_PER_BLOCK; size <<= 1) {
		unsigned start = page & ~(size - 1);
		unsigned counter = count_range(tree, start, size);

		if (counter * 100 > size * threshold) {
			*first = start;
			*last = start + size - 1;
			found = true;
		}
	}
	return found;
}

void sim_prefetch_stock(const uint64_t resident[8], const uint64_t faulted[8],
			unsigned threshold, unsigned big_page_pages, uint64_t out[8])
{
	uint64_t tree[WORDS];

	memset(out, 0, WORDS * sizeof(uint64_t));
	sim_prefetch_tree(resident, faulted, big_page_pages, tree);
	/* compute_prefetch_mask(): per faulted page, ascending, with early out. */
	for (unsigned w = 0; w < WORDS; w++) {
		for (uint64_t f = faulted[w]; f; f &= f - 1) {
			unsigned page = w * 64 + (unsigned)__builtin_ctzll(f), first, last;

			if (!sim_prefetch_region(tree, page, threshold, &first, &last))
				continue;
			fill_range(out, first, last);
			if (last == GPU_PAGES_PER_BLOCK - 1)
				goto done;
		}
	}
done:
	for (unsigned w = 0; w < WORDS; w++)
		out[w] &= ~faulted[w] & ~resident[w];
}

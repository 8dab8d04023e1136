// SPDX-License-Identifier: GPL-2.0-only
/*
 * hooks-hmm adapter: HMM driver decision points -> gpuext.ko dispatch.
 * Kept free of any one driver's structures so amdgpu/Xe/nouveau glue would
 * be a handful of calls (README.md); gx_mockgpu is its first user.
 */
#define pr_fmt(fmt) "gx_hmm: " fmt

#include <linux/bitmap.h>
#include <linux/err.h>
#include <linux/kernel.h>
#include <linux/printk.h>
#include <linux/string.h>

#include "gpuext_hmm.h"

int gx_hmm_dev_init(struct gx_hmm_dev *d, const char *name, u32 gpu_id,
		    u32 capacity_blocks, bool prefetch_off)
{
	struct gpuext_mem_dev *m;

	m = gpuext_mem_dev_register(name, gpu_id, capacity_blocks);
	if (IS_ERR(m)) {
		pr_err("%s: gpuext_mem_dev_register failed: %ld\n", name, PTR_ERR(m));
		return PTR_ERR(m);
	}
	d->mdev = m;
	d->gpu_id = gpu_id;
	d->prefetch_off = prefetch_off;
	return 0;
}

void gx_hmm_dev_fini(struct gx_hmm_dev *d)
{
	if (d->mdev)
		gpuext_mem_dev_unregister(d->mdev);
	d->mdev = NULL;
}

void gx_hmm_block_init(struct gx_hmm_dev *d, struct gpu_block *b, u64 va,
		       u32 owner_tgid, void *owner)
{
	gpuext_block_init(d->mdev, b, va, owner_tgid, owner);
	b->info.gpu_id = d->gpu_id;
}

void gx_hmm_alloc(struct gx_hmm_dev *d, struct gpu_block *b, u32 tgid)
{
	gpuext_mem_activate(d->mdev, b, tgid);
}

void gx_hmm_fault(struct gx_hmm_dev *d, struct gpu_block *b, u32 tgid, u32 page,
		  bool is_write, bool first_resident)
{
	gpuext_mem_access(d->mdev, b, tgid, page, is_write, first_resident);
}

void gx_hmm_prefetch(struct gx_hmm_dev *d, struct gpu_block *b, u32 tgid,
		     const unsigned long *resident, const unsigned long *faulted,
		     unsigned long *out)
{
	struct gpu_page_tree tree;
	struct gpu_page_range max = { 0, GX_HMM_PAGES - 1 };
	unsigned int page;

	bitmap_zero(out, GX_HMM_PAGES);
	bitmap_to_arr64(tree.resident, resident, GX_HMM_PAGES);
	bitmap_to_arr64(tree.faulted, faulted, GX_HMM_PAGES);
	/*
	 * With the default prefetch off the policy is still asked (so hook
	 * counts match the simulator), but the region allowed is empty: the
	 * dispatch API cannot tell us yet whether the policy or the default
	 * chose a region (README.md, "gaps").
	 */
	if (d->prefetch_off)
		max = (struct gpu_page_range){ 1, 0 };
	for_each_set_bit(page, faulted, GX_HMM_PAGES) {
		struct gpu_page_range r = { 1, 0 };

		gpuext_mem_prefetch(d->mdev, b, tgid, page, &tree, &max, &r);
		if (r.first_page > r.last_page || r.last_page >= GX_HMM_PAGES ||
		    r.first_page < max.first_page || r.last_page > max.last_page)
			continue;
		bitmap_set(out, r.first_page, r.last_page - r.first_page + 1);
		/* compute_prefetch_mask()'s early out: the rest of the block is in. */
		if (r.last_page == GX_HMM_PAGES - 1)
			break;
	}
	bitmap_andnot(out, out, faulted, GX_HMM_PAGES);
	bitmap_andnot(out, out, resident, GX_HMM_PAGES);
}

void gx_hmm_prefetched(struct gpu_block *b, const unsigned long *pages)
{
	unsigned int first, last;

	for_each_set_bitrange(first, last, pages, GX_HMM_PAGES)
		gpuext_event("prefetch %llu %u-%u", b->info.block_id, first, last - 1);
}

struct gpu_block *gx_hmm_pick_victim(struct gx_hmm_dev *d, u32 tgid)
{
	return gpuext_mem_pick_victim(d->mdev, tgid);
}

void gx_hmm_evicted(struct gx_hmm_dev *d, struct gpu_block *b, u32 pages)
{
	gpuext_mem_remove(d->mdev, b);
	gpuext_event("evict %llu", b->info.block_id);
	(void)pages;
}

void gx_hmm_released(struct gx_hmm_dev *d, struct gpu_block *b)
{
	gpuext_mem_remove(d->mdev, b);
}

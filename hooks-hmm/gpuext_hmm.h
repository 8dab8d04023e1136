/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hooks-hmm: the adapter between a driver that migrates with HMM's
 * migrate_vma (amdgpu SVM, Xe GPU SVM, nouveau, our gx_mockgpu) and
 * gpuext.ko's memory policies. The driver keeps its own migration code; at
 * four points it calls this API, which translates them into gpuext_kmod.h
 * dispatch (block = 2 MiB of the driver's VA space, page = 4 KiB):
 *
 *   allocate  a block got device memory for the first time  gx_hmm_alloc()
 *   fault     pages of a block were migrated to the device   gx_hmm_fault()
 *             on a GPU fault
 *   prefetch  which more pages to migrate with a fault        gx_hmm_prefetch()
 *   evict     the driver needs memory: which block goes       gx_hmm_pick_victim(),
 *             (the policy's order), and that it went           gx_hmm_evicted()
 *
 * The driver owns every struct gpu_block (embedded in its per-range state)
 * and serialises calls per device (one mutex or its own locking); gpuext.ko
 * takes its device spinlock inside each call. See README.md for where
 * amdgpu's kfd_migrate.c / kfd_svm.c and Xe's GPU SVM would call each one.
 */
#ifndef GPUEXT_HMM_H
#define GPUEXT_HMM_H

#include <linux/bitmap.h>
#include <linux/types.h>

#include "../core/kernel/gpuext_kmod.h"

#define GX_HMM_PAGES GPU_PAGES_PER_BLOCK

/* One device as the adapter sees it. Embedded in the driver's device. */
struct gx_hmm_dev {
	struct gpuext_mem_dev *mdev;
	u32 gpu_id;
	bool prefetch_off;	/* the driver's default prefetch is disabled */
};

int gx_hmm_dev_init(struct gx_hmm_dev *d, const char *name, u32 gpu_id,
		    u32 capacity_blocks, bool prefetch_off);
void gx_hmm_dev_fini(struct gx_hmm_dev *d);

/* @va: the 2 MiB aligned GPU VA of the block; @owner: the driver's block. */
void gx_hmm_block_init(struct gx_hmm_dev *d, struct gpu_block *b, u64 va,
		       u32 owner_tgid, void *owner);

/* Keeps the portable facts policies read current (call before the hooks). */
static inline void gx_hmm_block_facts(struct gpu_block *b, u32 resident_pages,
				      u32 fault_count)
{
	b->info.resident_pages = resident_pages;
	b->info.fault_count = fault_count;
}

/* Allocate point: @b got a chunk of device memory (it is on no list yet). */
void gx_hmm_alloc(struct gx_hmm_dev *d, struct gpu_block *b, u32 tgid);

/*
 * Fault point: a GPU fault at @page of @b was serviced (its pages migrated);
 * @first_resident: the device had no page of @b before.
 */
void gx_hmm_fault(struct gx_hmm_dev *d, struct gpu_block *b, u32 tgid, u32 page,
		  bool is_write, bool first_resident);

/*
 * Prefetch point: the pages to migrate along with the faults @faulted of
 * @b, given @resident (both bitmaps of GX_HMM_PAGES bits). Asks the policy
 * (or gpuext's default, UVM's 51 % tree) once per faulted page in ascending
 * order and takes the union, as UVM's compute_prefetch_mask() does; @out
 * never holds a faulted or resident page.
 */
void gx_hmm_prefetch(struct gx_hmm_dev *d, struct gpu_block *b, u32 tgid,
		     const unsigned long *resident, const unsigned long *faulted,
		     unsigned long *out);

/* Reports the pages actually prefetched ("prefetch ID F-L" events, one per run). */
void gx_hmm_prefetched(struct gpu_block *b, const unsigned long *pages);

/* Evict point: the block to evict next (gpu_evict_prepare ran), or NULL. */
struct gpu_block *gx_hmm_pick_victim(struct gx_hmm_dev *d, u32 tgid);

/* @b left device memory by eviction (@pages migrated back): off its list, "evict ID". */
void gx_hmm_evicted(struct gx_hmm_dev *d, struct gpu_block *b, u32 pages);

/* @b gave its memory back for another reason (range freed): off its list, no event. */
void gx_hmm_released(struct gx_hmm_dev *d, struct gpu_block *b);

#endif /* GPUEXT_HMM_H */

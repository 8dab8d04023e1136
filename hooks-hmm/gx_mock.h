/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gx_mockgpu internals shared by gx_mock_dev.c (char device, ranges, fault
 * batches, ioctls) and gx_mock_mem.c (device-private memory: the pool,
 * migrate_vma to the device, eviction and the CPU-fault path back).
 *
 * Locking:
 *  - gx_gpu.lock (mutex): every ioctl and release; batches, chunk
 *    allocation, eviction and migrations to the device run under it.
 *  - gx_gpu.plock (spinlock, irqsave): which block owns each device page
 *    (owner[]) and every block's resident bitmap/count. The two paths that
 *    run without gx_gpu.lock -- migrate_to_ram (a CPU fault) and page_free --
 *    take only this, so a CPU fault never waits for a batch.
 * A page's data moves only while its struct page is locked (migrate_vma
 * holds the lock; device reads/writes take it), so a CPU fault and a device
 * access never copy the same page at once.
 */
#ifndef GX_MOCK_H
#define GX_MOCK_H

#include <linux/list.h>
#include <linux/memremap.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>

#include "gpuext_hmm.h"
#include "gx_mockgpu_uapi.h"

struct gx_gpu;
struct gx_vrange;

/* One 2 MiB block of a range. Owned by its gx_range. */
struct gx_block {
	struct gpu_block gb;		/* gb.info.block_id = gpu_va >> 21 */
	struct gx_vrange *range;
	u64 cpu_va;
	DECLARE_BITMAP(resident, GX_HMM_PAGES);	/* plock */
	u32 resident_cnt;		/* plock */
	u64 empty_seq;			/* plock: when resident_cnt last fell to 0 */
	DECLARE_BITMAP(pending, GX_HMM_PAGES);	/* lock: faulted in the open batch */
	int slot;			/* lock: device chunk held, -1 none */
	u32 fault_count;		/* lock */
	u32 batch_faults;
	u32 batch_tgid;			/* first process to fault on it in the batch */
	bool in_batch;
	bool batch_write;
};

/* A registered range: [gpu_va, +size) backed by the caller's memory at cpu_va. */
struct gx_vrange {
	struct list_head node;
	struct mm_struct *mm;		/* mmgrab()ed */
	u64 cpu_va, gpu_va, size;
	u32 tgid;
	u32 nblocks;
	struct gx_block *blocks;
};

struct gx_batch_key {
	u32 tgid;			/* owner of the block (the sort key UVM uses: VA space) */
	u64 id;
	struct gx_block *b;
};

/* One open() of /dev/gx_mockgpu. Freed at release, after memunmap_pages(). */
struct gx_gpu {
	struct mutex lock;		/* ioctls, batches, chunks, ranges */
	spinlock_t plock;		/* owner[], resident bitmaps */
	int id;
	char name[32];
	bool configured;
	struct gx_config cfg;
	struct gx_hmm_dev hdev;
	struct list_head ranges;
	struct gx_vrange *last_range;	/* lookup cache */

	/* device memory: capacity chunks of 512 device-private pages */
	struct dev_pagemap pgmap;
	struct resource *res;
	unsigned long pfn_first;
	bool pgmap_live;
	u8 **chunk_mem;			/* [capacity] the data of each chunk */
	struct gx_block **chunk_block;	/* [capacity] lock: holder of each chunk */
	struct gx_block **owner;	/* [capacity * 512] plock: block of each page */
	u32 used_chunks;
	u64 empty_gen;			/* plock */

	/* the open fault batch */
	struct gx_batch_key *batch;
	u32 batch_nblocks, batch_entries;

	/* scratch for migrations (under lock) */
	unsigned long *src, *dst;

	struct gx_stats st;		/* lock, except the atomics below */
	atomic64_t cpu_faults;
	atomic64_t cpu_fault_fail;
};

/* gx_mock_mem.c */
int gx_mem_init(struct gx_gpu *g);
void gx_mem_fini(struct gx_gpu *g);
/* Migrates @mask of @b (holding a chunk) to the device; returns pages moved. */
u32 gx_mem_to_device(struct gx_gpu *g, struct gx_block *b, const unsigned long *mask);
/* Migrates every page of chunk @slot back to system memory; returns pages moved. */
u32 gx_mem_evict_chunk(struct gx_gpu *g, int slot);
/* Device page of page @page of @b, referenced, or NULL if not resident. */
struct page *gx_mem_get_page(struct gx_gpu *g, struct gx_block *b, u32 page);
static inline u8 *gx_mem_data(struct gx_gpu *g, int slot, u32 page)
{
	return g->chunk_mem[slot] + ((size_t)page << PAGE_SHIFT);
}

#endif /* GX_MOCK_H */

// SPDX-License-Identifier: GPL-2.0-only
/*
 * gx_mockgpu device memory: MEMORY_DEVICE_PRIVATE pages from
 * memremap_pages(), capacity chunks of 512 pages (2 MiB). Device-private
 * pages have no CPU-addressable memory, so each chunk's data lives in a
 * vmalloc()ed buffer: page i of chunk s is pfn_first + s * 512 + i, its data
 * chunk_mem[s] + i * 4 KiB. A chunk holds one block at a time (like a UVM
 * root chunk), page i of the chunk holding page i of the block.
 *
 * Pages go to the device with migrate_vma (MIGRATE_VMA_SELECT_SYSTEM) and
 * come back either by eviction (migrate_device_range() over the chunk: no
 * mm or VMA needed, so any process's block can be evicted) or by a CPU
 * fault (dev_pagemap_ops.migrate_to_ram). page_free() is the one place a
 * page stops being resident: whoever drops the last reference.
 */
#define pr_fmt(fmt) "gx_mockgpu: " fmt

#include <linux/delay.h>
#include <linux/highmem.h>
#include <linux/ioport.h>
#include <linux/memremap.h>
#include <linux/migrate.h>
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "gx_mock.h"

#define CHUNK_BYTES (GX_HMM_PAGES * PAGE_SIZE)

static struct gx_gpu *gpu_of(struct page *page)
{
	return container_of(page->pgmap, struct gx_gpu, pgmap);
}

/* The last reference to a device page went away: it holds nothing now. */
static void gx_page_free(struct page *page)
{
	struct gx_gpu *g = gpu_of(page);
	unsigned long idx = page_to_pfn(page) - g->pfn_first;
	struct gx_block *b;
	unsigned long flags;

	spin_lock_irqsave(&g->plock, flags);
	b = g->owner[idx];
	g->owner[idx] = NULL;
	if (b && __test_and_clear_bit(idx % GX_HMM_PAGES, b->resident)) {
		if (--b->resident_cnt == 0)
			b->empty_seq = ++g->empty_gen;
	}
	spin_unlock_irqrestore(&g->plock, flags);
}

/*
 * A CPU access to a page that lives on the device: migrate just that page
 * back (the simulator's host access moves exactly what it touches). Runs
 * without gx_gpu.lock so a CPU fault never waits for a batch; if the page is
 * busy (locked by an eviction or a device access) migrate_vma_setup() skips
 * it and the CPU simply faults again.
 */
static vm_fault_t gx_migrate_to_ram(struct vm_fault *vmf)
{
	struct gx_gpu *g = gpu_of(vmf->page);
	unsigned long src = 0, dst = 0, idx;
	struct migrate_vma args = {
		.vma = vmf->vma,
		.start = vmf->address & PAGE_MASK,
		.end = (vmf->address & PAGE_MASK) + PAGE_SIZE,
		.src = &src,
		.dst = &dst,
		.pgmap_owner = g,
		.flags = MIGRATE_VMA_SELECT_DEVICE_PRIVATE,
		.fault_page = vmf->page,
	};
	struct page *spage, *dpage;

	if (migrate_vma_setup(&args)) {
		atomic64_inc(&g->cpu_fault_fail);
		return VM_FAULT_SIGBUS;
	}
	spage = migrate_pfn_to_page(src);
	if (!spage || !(src & MIGRATE_PFN_MIGRATE))
		goto out;
	dpage = alloc_page_vma(GFP_HIGHUSER_MOVABLE, vmf->vma, args.start);
	if (!dpage) {
		migrate_vma_finalize(&args);
		atomic64_inc(&g->cpu_fault_fail);
		return VM_FAULT_OOM;
	}
	lock_page(dpage);
	idx = page_to_pfn(spage) - g->pfn_first;
	memcpy_to_page(dpage, 0, (char *)gx_mem_data(g, idx / GX_HMM_PAGES, idx % GX_HMM_PAGES),
		       PAGE_SIZE);
	dst = migrate_pfn(page_to_pfn(dpage)) | (src & MIGRATE_PFN_WRITE);
	migrate_vma_pages(&args);
	if (src & MIGRATE_PFN_MIGRATE)
		atomic64_inc(&g->cpu_faults);
	else
		atomic64_inc(&g->cpu_fault_fail);
out:
	migrate_vma_finalize(&args);
	return 0;
}

static const struct dev_pagemap_ops gx_pagemap_ops = {
	.page_free = gx_page_free,
	.migrate_to_ram = gx_migrate_to_ram,
};

int gx_mem_init(struct gx_gpu *g)
{
	u32 cap = g->cfg.capacity_blocks, s;
	unsigned long size = (unsigned long)cap * CHUNK_BYTES;
	void *ptr;
	int err = -ENOMEM;

	g->chunk_mem = kcalloc(cap, sizeof(*g->chunk_mem), GFP_KERNEL);
	g->chunk_block = kcalloc(cap, sizeof(*g->chunk_block), GFP_KERNEL);
	g->owner = kvcalloc((size_t)cap * GX_HMM_PAGES, sizeof(*g->owner), GFP_KERNEL);
	g->src = kvcalloc(GX_HMM_PAGES, sizeof(*g->src), GFP_KERNEL);
	g->dst = kvcalloc(GX_HMM_PAGES, sizeof(*g->dst), GFP_KERNEL);
	if (!g->chunk_mem || !g->chunk_block || !g->owner || !g->src || !g->dst)
		goto err;
	for (s = 0; s < cap; s++) {
		g->chunk_mem[s] = vzalloc(CHUNK_BYTES);
		if (!g->chunk_mem[s])
			goto err;
	}

	g->res = request_free_mem_region(&iomem_resource, size, "gx_mockgpu");
	if (IS_ERR(g->res)) {
		err = PTR_ERR(g->res);
		g->res = NULL;
		pr_err("%s: no free physical range of %lu MiB for device memory: %d\n",
		       g->name, size >> 20, err);
		goto err;
	}
	g->pgmap.type = MEMORY_DEVICE_PRIVATE;
	g->pgmap.range.start = g->res->start;
	g->pgmap.range.end = g->res->start + size - 1;
	g->pgmap.nr_range = 1;
	g->pgmap.ops = &gx_pagemap_ops;
	g->pgmap.owner = g;
	ptr = memremap_pages(&g->pgmap, numa_node_id());
	if (IS_ERR(ptr)) {
		err = PTR_ERR(ptr);
		pr_err("%s: memremap_pages(MEMORY_DEVICE_PRIVATE) failed: %d\n", g->name, err);
		goto err;
	}
	g->pfn_first = g->res->start >> PAGE_SHIFT;
	g->pgmap_live = true;
	for (s = 0; s < cap; s++)
		g->chunk_block[s] = NULL;
	return 0;
err:
	gx_mem_fini(g);
	return err;
}

void gx_mem_fini(struct gx_gpu *g)
{
	u32 s;

	if (g->pgmap_live)
		memunmap_pages(&g->pgmap);	/* waits for every page's last reference */
	g->pgmap_live = false;
	/* The region is section-aligned: larger than the pool, so free it by its own bounds. */
	if (g->res)
		release_mem_region(g->res->start, resource_size(g->res));
	g->res = NULL;
	if (g->chunk_mem)
		for (s = 0; s < g->cfg.capacity_blocks; s++)
			vfree(g->chunk_mem[s]);
	kfree(g->chunk_mem);
	kfree(g->chunk_block);
	kvfree(g->owner);
	kvfree(g->src);
	kvfree(g->dst);
	g->chunk_mem = NULL;
	g->chunk_block = NULL;
	g->owner = NULL;
	g->src = g->dst = NULL;
}

/*
 * One migrate_vma call over [first, last] of @b, all inside @vma. A device
 * page still referenced by an earlier holder of the chunk (a page an
 * eviction could not move) is skipped: its data must survive.
 */
static u32 to_device_run(struct gx_gpu *g, struct gx_block *b, struct vm_area_struct *vma,
			 u32 first, u32 last)
{
	unsigned long base = g->pfn_first + (unsigned long)b->slot * GX_HMM_PAGES, flags;
	struct migrate_vma args = {
		.vma = vma,
		.start = b->cpu_va + ((u64)first << PAGE_SHIFT),
		.end = b->cpu_va + ((u64)(last + 1) << PAGE_SHIFT),
		.src = g->src,
		.dst = g->dst,
		.pgmap_owner = g,
		.flags = MIGRATE_VMA_SELECT_SYSTEM,
	};
	u32 i, n = last - first + 1, moved = 0;
	int err;

	err = migrate_vma_setup(&args);
	if (err) {
		g->st.migrate_failed += n;
		return 0;
	}
	for (i = 0; i < args.npages; i++) {
		u32 p = first + i;
		struct page *spage = migrate_pfn_to_page(g->src[i]);
		struct page *dpage = pfn_to_page(base + p);
		bool busy;

		g->dst[i] = 0;
		if (!(g->src[i] & MIGRATE_PFN_MIGRATE))
			continue;
		spin_lock_irqsave(&g->plock, flags);
		busy = g->owner[(unsigned long)b->slot * GX_HMM_PAGES + p] != NULL;
		spin_unlock_irqrestore(&g->plock, flags);
		if (busy)
			continue;
		zone_device_page_init(dpage);	/* refcount 1, locked */
		if (spage)
			memcpy_from_page((char *)gx_mem_data(g, b->slot, p), spage, 0, PAGE_SIZE);
		else
			memset(gx_mem_data(g, b->slot, p), 0, PAGE_SIZE);
		g->dst[i] = migrate_pfn(page_to_pfn(dpage));
		if ((g->src[i] & MIGRATE_PFN_WRITE) || (!spage && (vma->vm_flags & VM_WRITE)))
			g->dst[i] |= MIGRATE_PFN_WRITE;
	}
	migrate_vma_pages(&args);
	spin_lock_irqsave(&g->plock, flags);
	for (i = 0; i < args.npages; i++) {
		u32 p = first + i;

		if (!g->dst[i])
			continue;
		if (!(g->src[i] & MIGRATE_PFN_MIGRATE))
			continue;	/* finalize frees the device page again */
		g->owner[(unsigned long)b->slot * GX_HMM_PAGES + p] = b;
		if (!__test_and_set_bit(p, b->resident))
			b->resident_cnt++;
		moved++;
	}
	spin_unlock_irqrestore(&g->plock, flags);
	migrate_vma_finalize(&args);
	g->st.migrate_failed += n - moved;
	return moved;
}

u32 gx_mem_to_device(struct gx_gpu *g, struct gx_block *b, const unsigned long *mask)
{
	struct mm_struct *mm = b->range->mm;
	unsigned int first, end;
	u32 moved = 0;

	if (!mmget_not_zero(mm)) {
		/* The owner exited: nothing to migrate. */
		g->st.migrate_failed += bitmap_weight(mask, GX_HMM_PAGES);
		return 0;
	}
	mmap_read_lock(mm);
	for_each_set_bitrange(first, end, mask, GX_HMM_PAGES) {
		unsigned int p = first;

		/* A run may cross VMAs (mprotect splits them): one call per VMA. */
		while (p < end) {
			u64 va = b->cpu_va + ((u64)p << PAGE_SHIFT);
			struct vm_area_struct *vma = vma_lookup(mm, va);
			unsigned int q;

			if (!vma || !vma_is_anonymous(vma)) {
				g->st.migrate_failed++;
				p++;
				continue;
			}
			q = min_t(u64, end, (vma->vm_end - b->cpu_va) >> PAGE_SHIFT);
			moved += to_device_run(g, b, vma, p, q - 1);
			p = q;
		}
	}
	mmap_read_unlock(mm);
	mmput(mm);
	return moved;
}

/* One pass of migrate_device_range() over the chunk; returns pages moved. */
static u32 evict_pass(struct gx_gpu *g, int slot)
{
	unsigned long base = g->pfn_first + (unsigned long)slot * GX_HMM_PAGES;
	u32 i, moved = 0;

	migrate_device_range(g->src, base, GX_HMM_PAGES);
	for (i = 0; i < GX_HMM_PAGES; i++) {
		struct page *dpage;

		g->dst[i] = 0;
		if (!migrate_pfn_to_page(g->src[i]) || !(g->src[i] & MIGRATE_PFN_MIGRATE))
			continue;
		/* The CPU must get its data back: wait for memory rather than lose it. */
		dpage = alloc_page(GFP_HIGHUSER_MOVABLE | __GFP_NOFAIL);
		lock_page(dpage);
		memcpy_to_page(dpage, 0, (char *)gx_mem_data(g, slot, i), PAGE_SIZE);
		g->dst[i] = migrate_pfn(page_to_pfn(dpage)) | (g->src[i] & MIGRATE_PFN_WRITE);
	}
	migrate_device_pages(g->src, g->dst, GX_HMM_PAGES);
	for (i = 0; i < GX_HMM_PAGES; i++)
		if (g->dst[i] && (g->src[i] & MIGRATE_PFN_MIGRATE))
			moved++;
	migrate_device_finalize(g->src, g->dst, GX_HMM_PAGES);
	return moved;
}

static bool chunk_busy(struct gx_gpu *g, int slot)
{
	unsigned long flags, i;
	bool busy = false;

	spin_lock_irqsave(&g->plock, flags);
	for (i = 0; i < GX_HMM_PAGES && !busy; i++)
		busy = g->owner[(unsigned long)slot * GX_HMM_PAGES + i] != NULL;
	spin_unlock_irqrestore(&g->plock, flags);
	return busy;
}

u32 gx_mem_evict_chunk(struct gx_gpu *g, int slot)
{
	u32 moved = 0, pass;

	/*
	 * A page is skipped while someone else holds its lock or an extra
	 * reference (a CPU fault on it in flight): retry until the chunk is
	 * empty, briefly, then leave the stragglers (their data stays valid in
	 * chunk_mem and a later holder of the chunk skips those pages).
	 */
	for (pass = 0; pass < 200; pass++) {
		moved += evict_pass(g, slot);
		if (!chunk_busy(g, slot))
			return moved;
		if (pass > 2)
			usleep_range(100, 200);
	}
	pr_warn_ratelimited("%s: chunk %d still has pages in use after eviction\n",
			    g->name, slot);
	return moved;
}

struct page *gx_mem_get_page(struct gx_gpu *g, struct gx_block *b, u32 page)
{
	unsigned long idx, flags;
	struct page *dpage = NULL;

	if (b->slot < 0)
		return NULL;
	idx = (unsigned long)b->slot * GX_HMM_PAGES + page;
	spin_lock_irqsave(&g->plock, flags);
	if (g->owner[idx] == b && test_bit(page, b->resident)) {
		dpage = pfn_to_page(g->pfn_first + idx);
		/* 0 while page_free() is on its way: treat as gone. */
		if (!get_page_unless_zero(dpage))
			dpage = NULL;
	}
	spin_unlock_irqrestore(&g->plock, flags);
	return dpage;
}

// SPDX-License-Identifier: GPL-2.0-only
/*
 * gx_mockgpu.ko: our reference HMM device, a mock GPU with a bounded pool of
 * device-private memory in 2 MiB chunks, driven from user space through
 * /dev/gx_mockgpu (gx_mockgpu_uapi.h). It services GPU accesses the way
 * hal/sim/sim_mem.c models NVIDIA UVM -- fault entries collected in batches
 * of up to batch_size, each block serviced once per batch: prefetch hint,
 * chunk allocation (evicting the policy's victim when full), migration,
 * list update -- and makes every decision through the hooks-hmm adapter
 * (gpuext_hmm.h), so an attached gpu_mem_ops policy orders its evictions
 * and chooses its prefetches. Unlike the simulator the data really moves:
 * migrate_vma to the device, migrate_device_range() back on eviction and
 * migrate_to_ram on a CPU fault, so tests can check every byte.
 */
#define pr_fmt(fmt) "gx_mockgpu: " fmt

#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/module.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/uaccess.h>

#include "gx_mock.h"

#define GX_MAX_ACCESS_COUNT (1u << 20)
#define GX_MAX_RW_LEN (64ull << 20)
#define GX_RW_RETRIES 16

static atomic_t gx_next_id = ATOMIC_INIT(0);

/* ---- ranges ------------------------------------------------------------ */

static struct gx_block *find_block(struct gx_gpu *g, u64 gpu_va)
{
	struct gx_vrange *r = g->last_range;

	if (r && gpu_va - r->gpu_va < r->size)
		return &r->blocks[(gpu_va - r->gpu_va) >> GPU_BLOCK_SHIFT];
	list_for_each_entry(r, &g->ranges, node) {
		if (gpu_va - r->gpu_va < r->size) {
			g->last_range = r;
			return &r->blocks[(gpu_va - r->gpu_va) >> GPU_BLOCK_SHIFT];
		}
	}
	return NULL;
}

static struct gx_block *find_block_id(struct gx_gpu *g, u64 id)
{
	if (id > (U64_MAX >> GPU_BLOCK_SHIFT))
		return NULL;
	return find_block(g, id << GPU_BLOCK_SHIFT);
}

/* Every byte of [va, va + size) is in private anonymous VMAs of @mm. */
static int check_anon(struct mm_struct *mm, u64 va, u64 size)
{
	u64 end = va + size;
	int err = 0;

	mmap_read_lock(mm);
	while (va < end) {
		struct vm_area_struct *vma = vma_lookup(mm, va);

		if (!vma || !vma_is_anonymous(vma) || (vma->vm_flags & VM_SHARED)) {
			err = -EINVAL;
			break;
		}
		va = vma->vm_end;
	}
	mmap_read_unlock(mm);
	return err;
}

static int range_add(struct gx_gpu *g, const struct gx_range *u)
{
	u64 gpu_va = u->gpu_va ? u->gpu_va : u->cpu_va, i;
	struct gx_vrange *r, *o;
	int err;

	if (!u->size || ((u->cpu_va | gpu_va | u->size) & (GPU_BLOCK_SIZE - 1)) ||
	    u->cpu_va + u->size < u->cpu_va || gpu_va + u->size < gpu_va ||
	    (u->size >> GPU_BLOCK_SHIFT) > 65536 || u->pad) {
		pr_info("%s: range cpu 0x%llx gpu 0x%llx size 0x%llx: addresses and size must be 2 MiB aligned, size 2 MiB..128 GiB\n",
			g->name, u->cpu_va, gpu_va, u->size);
		return -EINVAL;
	}
	list_for_each_entry(o, &g->ranges, node) {
		if (gpu_va < o->gpu_va + o->size && o->gpu_va < gpu_va + u->size) {
			pr_info("%s: range gpu 0x%llx+0x%llx overlaps gpu 0x%llx+0x%llx\n",
				g->name, gpu_va, u->size, o->gpu_va, o->size);
			return -EEXIST;
		}
		if (o->mm == current->mm && u->cpu_va < o->cpu_va + o->size &&
		    o->cpu_va < u->cpu_va + u->size) {
			pr_info("%s: range cpu 0x%llx+0x%llx is already registered\n",
				g->name, u->cpu_va, u->size);
			return -EEXIST;
		}
	}
	err = check_anon(current->mm, u->cpu_va, u->size);
	if (err) {
		pr_info("%s: range cpu 0x%llx+0x%llx is not all private anonymous memory of the caller\n",
			g->name, u->cpu_va, u->size);
		return err;
	}
	r = kzalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return -ENOMEM;
	r->nblocks = u->size >> GPU_BLOCK_SHIFT;
	r->blocks = kvcalloc(r->nblocks, sizeof(*r->blocks), GFP_KERNEL);
	if (!r->blocks) {
		kfree(r);
		return -ENOMEM;
	}
	r->cpu_va = u->cpu_va;
	r->gpu_va = gpu_va;
	r->size = u->size;
	r->tgid = u->tgid ? u->tgid : current->tgid;
	r->mm = current->mm;
	mmgrab(r->mm);
	for (i = 0; i < r->nblocks; i++) {
		struct gx_block *b = &r->blocks[i];

		b->range = r;
		b->cpu_va = r->cpu_va + (i << GPU_BLOCK_SHIFT);
		b->slot = -1;
		gx_hmm_block_init(&g->hdev, &b->gb, gpu_va + (i << GPU_BLOCK_SHIFT), r->tgid, b);
	}
	list_add_tail(&r->node, &g->ranges);
	return 0;
}

/* ---- chunks -------------------------------------------------------------- */

static void block_facts(struct gx_gpu *g, struct gx_block *b)
{
	unsigned long flags;
	u32 resident;

	spin_lock_irqsave(&g->plock, flags);
	resident = b->resident_cnt;
	spin_unlock_irqrestore(&g->plock, flags);
	gx_hmm_block_facts(&b->gb, resident, b->fault_count);
}

/* Gives @b's chunk back; false if pages of it could not be moved out. */
static bool chunk_release(struct gx_gpu *g, struct gx_block *b, bool evicted)
{
	int slot = b->slot;
	u32 pages;

	pages = gx_mem_evict_chunk(g, slot);
	if (evicted) {
		g->st.evictions++;
		g->st.pages_evicted += pages;
	}
	if (b->resident_cnt)	/* plock not needed to read a hint */
		return false;
	if (evicted)
		gx_hmm_evicted(&g->hdev, &b->gb, pages);
	else
		gx_hmm_released(&g->hdev, &b->gb);
	g->chunk_block[slot] = NULL;
	b->slot = -1;
	g->used_chunks--;
	return true;
}

/*
 * A chunk whose block has no page left on the device (the CPU took them
 * all back). The simulator moves such a chunk to the unused list, which is
 * evicted first (after gpu_evict_prepare); gpuext_kmod.h has no call for
 * that list yet, so the mock keeps the order itself: the chunk that emptied
 * first goes first.
 */
static struct gx_block *empty_holder(struct gx_gpu *g)
{
	struct gx_block *best = NULL;
	unsigned long flags;
	u32 s;

	spin_lock_irqsave(&g->plock, flags);
	for (s = 0; s < g->cfg.capacity_blocks; s++) {
		struct gx_block *b = g->chunk_block[s];

		if (b && !b->resident_cnt && (!best || b->empty_seq < best->empty_seq))
			best = b;
	}
	spin_unlock_irqrestore(&g->plock, flags);
	return best;
}

/*
 * uvm_pmm_gpu_alloc_user() for one chunk: a free one, else the victim the
 * policy left at the head of the lists. Returns false when no chunk could
 * be had (the faults stay unserviced: the pages remain in system memory).
 */
static bool chunk_alloc(struct gx_gpu *g, struct gx_block *b, u32 tgid)
{
	u32 s;

	if (g->used_chunks >= g->cfg.capacity_blocks) {
		/* gpu_evict_prepare runs either way, as it does in the simulator. */
		struct gpu_block *gb = gx_hmm_pick_victim(&g->hdev, tgid);
		struct gx_block *v = empty_holder(g);

		if (!v)
			v = gb ? gb->owner : NULL;
		if (!v || v->slot < 0) {
			pr_warn_ratelimited("%s: memory full and no victim on the lists\n", g->name);
			return false;
		}
		if (!chunk_release(g, v, true))
			return false;
	}
	for (s = 0; s < g->cfg.capacity_blocks; s++)
		if (!g->chunk_block[s])
			break;
	if (WARN_ON_ONCE(s == g->cfg.capacity_blocks))
		return false;
	g->chunk_block[s] = b;
	b->slot = s;
	g->used_chunks++;
	gx_hmm_alloc(&g->hdev, &b->gb, tgid);
	return true;
}

/* ---- fault batches --------------------------------------------------------- */

/*
 * One block's share of a batch: uvm_va_block_service_locked() with the GPU
 * as destination, in the driver's order (and the simulator's
 * service_block()): prefetch hint, chunk, copy, then the list update.
 */
static void service_block(struct gx_gpu *g, struct gx_block *b)
{
	DECLARE_BITMAP(resident, GX_HMM_PAGES);
	DECLARE_BITMAP(faulted, GX_HMM_PAGES);
	DECLARE_BITMAP(pf, GX_HMM_PAGES);
	DECLARE_BITMAP(mask, GX_HMM_PAGES);
	unsigned long flags;
	u32 nf, first_page, moved, tgid = b->batch_tgid;
	bool first_residency;

	spin_lock_irqsave(&g->plock, flags);
	bitmap_copy(resident, b->resident, GX_HMM_PAGES);
	spin_unlock_irqrestore(&g->plock, flags);
	bitmap_andnot(faulted, b->pending, resident, GX_HMM_PAGES);
	bitmap_zero(b->pending, GX_HMM_PAGES);
	b->in_batch = false;
	b->fault_count += b->batch_faults;
	nf = bitmap_weight(faulted, GX_HMM_PAGES);
	if (!nf)
		return;
	first_page = find_first_bit(faulted, GX_HMM_PAGES);

	block_facts(g, b);
	gx_hmm_prefetch(&g->hdev, &b->gb, tgid, resident, faulted, pf);

	if (b->slot < 0 && !chunk_alloc(g, b, tgid)) {
		g->st.migrate_failed += nf;
		return;
	}

	bitmap_or(mask, faulted, pf, GX_HMM_PAGES);
	spin_lock_irqsave(&g->plock, flags);
	first_residency = b->resident_cnt == 0;
	spin_unlock_irqrestore(&g->plock, flags);
	moved = gx_mem_to_device(g, b, mask);
	g->st.pages_to_dev += moved;
	g->st.pages_prefetched += bitmap_weight(pf, GX_HMM_PAGES);
	if (!bitmap_empty(pf, GX_HMM_PAGES))
		gx_hmm_prefetched(&b->gb, pf);
	block_facts(g, b);
	gx_hmm_fault(&g->hdev, &b->gb, tgid, first_page, b->batch_write, first_residency);
}

static int key_cmp(const void *a, const void *b)
{
	const struct gx_batch_key *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return 0;
}

/*
 * service_fault_batch(): entries sorted by VA space (the owner's tgid stands
 * in for it, as in the simulator) then address, each block serviced once.
 */
static void service_batch(struct gx_gpu *g)
{
	u32 i;

	if (!g->batch_entries)
		return;
	sort(g->batch, g->batch_nblocks, sizeof(*g->batch), key_cmp, NULL);
	for (i = 0; i < g->batch_nblocks; i++)
		service_block(g, g->batch[i].b);
	g->st.batches++;
	g->batch_nblocks = 0;
	g->batch_entries = 0;
}

/* One GPU access: a fault entry unless the page is resident. */
static int access_one(struct gx_gpu *g, u64 gpu_va, bool write, u32 tgid, u32 *faults)
{
	struct gx_block *b = find_block(g, gpu_va);
	u32 page = (gpu_va >> GPU_PAGE_SHIFT) & (GX_HMM_PAGES - 1);

	if (!b)
		return -ENOENT;
	g->st.accesses++;
	/* A racy read is fine: a page the CPU just took back faults next time. */
	if (test_bit(page, b->resident))
		return 0;
	g->st.faults++;
	(*faults)++;
	__set_bit(page, b->pending);
	if (!b->in_batch) {
		struct gx_batch_key *k = &g->batch[g->batch_nblocks++];

		b->in_batch = true;
		b->batch_faults = 0;
		b->batch_write = false;
		b->batch_tgid = tgid;
		k->tgid = b->range->tgid;
		k->id = b->gb.info.block_id;
		k->b = b;
	}
	b->batch_faults++;
	b->batch_write |= write;
	if (++g->batch_entries >= g->cfg.batch_size)
		service_batch(g);
	return 0;
}

static int do_access(struct gx_gpu *g, struct gx_access *a)
{
	u64 step = a->step ? a->step : PAGE_SIZE, va = a->gpu_va, i;
	u32 tgid = a->tgid ? a->tgid : current->tgid;
	int err = 0;

	a->faults = 0;
	if (!a->count || a->count > GX_MAX_ACCESS_COUNT ||
	    (a->flags & ~(GX_ACC_WRITE | GX_ACC_FLUSH))) {
		pr_info("%s: access: count must be 1..%u, flags WRITE|FLUSH\n", g->name,
			GX_MAX_ACCESS_COUNT);
		return -EINVAL;
	}
	for (i = 0; i < a->count; i++, va += step) {
		err = access_one(g, va, a->flags & GX_ACC_WRITE, tgid, &a->faults);
		if (err) {
			pr_info_ratelimited("%s: access to gpu 0x%llx: no range covers it\n",
					    g->name, va);
			break;
		}
	}
	if (a->flags & GX_ACC_FLUSH)
		service_batch(g);
	return err;
}

/* ---- device reads / writes ------------------------------------------------ */

/* Copies one page's bytes [off, off + len) between @buf and the device. */
static int rw_page(struct gx_gpu *g, struct gx_block *b, u32 page, u32 off, u32 len,
		   u8 *buf, bool write, u32 tgid)
{
	int tries;

	for (tries = 0; tries < GX_RW_RETRIES; tries++) {
		struct page *dpage = gx_mem_get_page(g, b, page);
		unsigned long idx, flags;
		bool still;
		u32 faults = 0;

		if (!dpage) {
			/* Not resident (never was, or the CPU took it back): fault it in. */
			access_one(g, b->gb.info.va_start + ((u64)page << GPU_PAGE_SHIFT), write,
				   tgid, &faults);
			service_batch(g);
			continue;
		}
		lock_page(dpage);
		idx = (unsigned long)b->slot * GX_HMM_PAGES + page;
		spin_lock_irqsave(&g->plock, flags);
		still = g->owner[idx] == b;
		spin_unlock_irqrestore(&g->plock, flags);
		if (still) {
			u8 *mem = gx_mem_data(g, b->slot, page) + off;

			if (write)
				memcpy(mem, buf, len);
			else
				memcpy(buf, mem, len);
		}
		unlock_page(dpage);
		put_page(dpage);
		if (still)
			return 0;
	}
	pr_info_ratelimited("%s: gpu 0x%llx page %u: could not keep it on the device\n",
			    g->name, b->gb.info.va_start, page);
	return -EAGAIN;
}

static int do_rw(struct gx_gpu *g, const struct gx_rw *rw, bool write)
{
	u32 tgid = rw->tgid ? rw->tgid : current->tgid, faults = 0;
	u64 va, end = rw->gpu_va + rw->len;
	u8 __user *ubuf = u64_to_user_ptr(rw->buf);
	u8 *bounce;
	int err = 0;

	if (!rw->len || rw->len > GX_MAX_RW_LEN || end < rw->gpu_va || rw->pad) {
		pr_info("%s: read/write: len must be 1..%llu\n", g->name, GX_MAX_RW_LEN);
		return -EINVAL;
	}
	for (va = rw->gpu_va & PAGE_MASK; va < end; va += PAGE_SIZE)
		if (!find_block(g, va))
			return -ENOENT;
	bounce = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!bounce)
		return -ENOMEM;
	/* The device touches every page first: one batch, like a kernel's faults. */
	for (va = rw->gpu_va & PAGE_MASK; va < end; va += PAGE_SIZE)
		access_one(g, va, write, tgid, &faults);
	service_batch(g);

	for (va = rw->gpu_va; va < end && !err;) {
		struct gx_block *b = find_block(g, va);
		u32 page = (va >> GPU_PAGE_SHIFT) & (GX_HMM_PAGES - 1);
		u32 off = offset_in_page(va);
		u32 len = min_t(u64, PAGE_SIZE - off, end - va);
		u8 __user *up = ubuf + (va - rw->gpu_va);

		/* User memory is copied outside the page lock (it may fault into us). */
		if (write && copy_from_user(bounce, up, len)) {
			err = -EFAULT;
			break;
		}
		err = rw_page(g, b, page, off, len, bounce, write, tgid);
		if (!err && !write && copy_to_user(up, bounce, len))
			err = -EFAULT;
		va += len;
	}
	kfree(bounce);
	return err;
}

/* ---- queries ---------------------------------------------------------------- */

static int do_block(struct gx_gpu *g, struct gx_block_state *st)
{
	struct gx_block *b = find_block_id(g, st->block_id);
	DECLARE_BITMAP(res, GX_HMM_PAGES);
	unsigned long flags;

	if (!b)
		return -ENOENT;
	spin_lock_irqsave(&g->plock, flags);
	bitmap_copy(res, b->resident, GX_HMM_PAGES);
	st->resident_pages = b->resident_cnt;
	spin_unlock_irqrestore(&g->plock, flags);
	bitmap_to_arr64(st->resident, res, GX_HMM_PAGES);
	st->has_chunk = b->slot >= 0;
	st->fault_count = b->fault_count;
	st->owner_tgid = b->range->tgid;
	return 0;
}

static int do_list(struct gx_gpu *g, struct gx_list *l)
{
	u32 cap = min_t(u32, l->cap, GX_MOCKGPU_MAX_CAPACITY * 4);
	u64 *ids;
	u32 n;
	int err = 0;

	if ((l->which != GX_LIST_USED && l->which != GX_LIST_UNUSED) || l->pad)
		return -EINVAL;
	ids = kcalloc(max_t(u32, cap, 1), sizeof(*ids), GFP_KERNEL);
	if (!ids)
		return -ENOMEM;
	n = gpuext_mem_list_ids(g->hdev.mdev, l->which == GX_LIST_USED ? GPUEXT_LIST_USED :
				GPUEXT_LIST_UNUSED, ids, cap);
	l->count = n;
	if (copy_to_user(u64_to_user_ptr(l->ids), ids, sizeof(*ids) * min(n, cap)))
		err = -EFAULT;
	kfree(ids);
	return err;
}

static void do_stats(struct gx_gpu *g, struct gx_stats *st)
{
	unsigned long flags;
	struct gx_vrange *r;
	u64 res = 0;
	u32 i;

	*st = g->st;
	st->cpu_faults = atomic64_read(&g->cpu_faults);
	st->migrate_failed += atomic64_read(&g->cpu_fault_fail);
	st->used_blocks = g->used_chunks;
	st->capacity_blocks = g->cfg.capacity_blocks;
	spin_lock_irqsave(&g->plock, flags);
	list_for_each_entry(r, &g->ranges, node)
		for (i = 0; i < r->nblocks; i++)
			res += r->blocks[i].resident_cnt;
	spin_unlock_irqrestore(&g->plock, flags);
	st->resident_pages = res;
}

/* ---- range removal, configuration, file ops ------------------------------ */

static void range_free(struct gx_gpu *g, struct gx_vrange *r)
{
	unsigned long flags, idx;
	u32 i, p;

	for (i = 0; i < r->nblocks; i++) {
		struct gx_block *b = &r->blocks[i];

		if (b->slot < 0)
			continue;
		if (!chunk_release(g, b, false)) {
			/* Pages still in use: forget their owner so page_free() never sees @b. */
			spin_lock_irqsave(&g->plock, flags);
			for (p = 0; p < GX_HMM_PAGES; p++) {
				idx = (unsigned long)b->slot * GX_HMM_PAGES + p;
				if (g->owner[idx] == b)
					g->owner[idx] = NULL;
			}
			spin_unlock_irqrestore(&g->plock, flags);
			gx_hmm_released(&g->hdev, &b->gb);
			g->chunk_block[b->slot] = NULL;
			b->slot = -1;
			g->used_chunks--;
		}
	}
	list_del(&r->node);
	if (g->last_range == r)
		g->last_range = NULL;
	mmdrop(r->mm);
	kvfree(r->blocks);
	kfree(r);
}

static int range_del(struct gx_gpu *g, const struct gx_range *u)
{
	struct gx_vrange *r;

	service_batch(g);	/* no fault entry may point into the range */
	list_for_each_entry(r, &g->ranges, node) {
		if (r->gpu_va == (u->gpu_va ? u->gpu_va : u->cpu_va)) {
			range_free(g, r);
			return 0;
		}
	}
	return -ENOENT;
}

static int do_config(struct gx_gpu *g, const struct gx_config *c)
{
	int err;

	if (g->configured)
		return -EBUSY;
	if (!c->capacity_blocks || c->capacity_blocks > GX_MOCKGPU_MAX_CAPACITY ||
	    c->batch_size > GX_MOCKGPU_MAX_BATCH || (c->flags & ~GX_CFG_PREFETCH_OFF)) {
		pr_info("%s: config: capacity_blocks must be 1..%u, batch_size 0..%u, flags PREFETCH_OFF\n",
			g->name, GX_MOCKGPU_MAX_CAPACITY, GX_MOCKGPU_MAX_BATCH);
		return -EINVAL;
	}
	g->cfg = *c;
	if (!g->cfg.batch_size)
		g->cfg.batch_size = GX_MOCKGPU_DEFAULT_BATCH;
	g->batch = kvcalloc(g->cfg.batch_size, sizeof(*g->batch), GFP_KERNEL);
	if (!g->batch)
		return -ENOMEM;
	err = gx_mem_init(g);
	if (err)
		goto err_batch;
	err = gx_hmm_dev_init(&g->hdev, g->name, c->gpu_id, c->capacity_blocks,
			      c->flags & GX_CFG_PREFETCH_OFF);
	if (err)
		goto err_mem;
	memset(&g->st, 0, sizeof(g->st));
	g->configured = true;
	return 0;
err_mem:
	gx_mem_fini(g);
err_batch:
	kvfree(g->batch);
	g->batch = NULL;
	return err;
}

static int gx_open(struct inode *inode, struct file *f)
{
	struct gx_gpu *g = kzalloc(sizeof(*g), GFP_KERNEL);

	if (!g)
		return -ENOMEM;
	mutex_init(&g->lock);
	spin_lock_init(&g->plock);
	INIT_LIST_HEAD(&g->ranges);
	g->id = atomic_inc_return(&gx_next_id) - 1;
	snprintf(g->name, sizeof(g->name), "mockgpu%d", g->id);
	f->private_data = g;
	return 0;
}

static int gx_release(struct inode *inode, struct file *f)
{
	struct gx_gpu *g = f->private_data;
	struct gx_vrange *r, *t;

	mutex_lock(&g->lock);
	if (g->configured) {
		/* Pending faults are dropped: nobody is left to wait for them. */
		g->batch_nblocks = 0;
		g->batch_entries = 0;
		list_for_each_entry_safe(r, t, &g->ranges, node)
			range_free(g, r);
		gx_hmm_dev_fini(&g->hdev);
		gx_mem_fini(g);
		kvfree(g->batch);
	}
	mutex_unlock(&g->lock);
	kfree(g);
	return 0;
}

static long gx_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct gx_gpu *g = f->private_data;
	void __user *up = (void __user *)arg;
	union {
		struct gx_config c;
		struct gx_range r;
		struct gx_access a;
		struct gx_rw rw;
		struct gx_block_state b;
		struct gx_list l;
		struct gx_stats s;
	} u;
	long err;

	if (_IOC_TYPE(cmd) != GX_IOC_MAGIC || _IOC_SIZE(cmd) > sizeof(u))
		return -ENOTTY;
	if ((_IOC_DIR(cmd) & _IOC_WRITE) && copy_from_user(&u, up, _IOC_SIZE(cmd)))
		return -EFAULT;
	mutex_lock(&g->lock);
	if (cmd != GX_IOC_CONFIG && !g->configured) {
		err = -ENXIO;
		goto out;
	}
	switch (cmd) {
	case GX_IOC_CONFIG:
		err = do_config(g, &u.c);
		break;
	case GX_IOC_RANGE_ADD:
		err = range_add(g, &u.r);
		break;
	case GX_IOC_RANGE_DEL:
		err = range_del(g, &u.r);
		break;
	case GX_IOC_ACCESS:
		err = do_access(g, &u.a);
		break;
	case GX_IOC_FLUSH:
		service_batch(g);
		err = 0;
		break;
	case GX_IOC_DEV_READ:
	case GX_IOC_DEV_WRITE:
		err = do_rw(g, &u.rw, cmd == GX_IOC_DEV_WRITE);
		break;
	case GX_IOC_BLOCK:
		err = do_block(g, &u.b);
		break;
	case GX_IOC_LIST:
		err = do_list(g, &u.l);
		break;
	case GX_IOC_STATS:
		do_stats(g, &u.s);
		err = 0;
		break;
	default:
		err = -ENOTTY;
	}
out:
	mutex_unlock(&g->lock);
	if (err == 0 && (_IOC_DIR(cmd) & _IOC_READ) && copy_to_user(up, &u, _IOC_SIZE(cmd)))
		err = -EFAULT;
	/* GX_IOC_ACCESS reports what it queued even when an address was bad. */
	if (err && cmd == GX_IOC_ACCESS && copy_to_user(up, &u, _IOC_SIZE(cmd)))
		err = -EFAULT;
	return err;
}

static const struct file_operations gx_fops = {
	.owner = THIS_MODULE,
	.open = gx_open,
	.release = gx_release,
	.unlocked_ioctl = gx_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice gx_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "gx_mockgpu",
	.fops = &gx_fops,
	.mode = 0666,
};

static int __init gx_init(void)
{
	int err;

	/*
	 * Without device-private memory there is no mock GPU, but the module
	 * still loads (the VM harness loads every module on every track): no
	 * /dev/gx_mockgpu, and the tests skip saying why.
	 */
	if (!IS_ENABLED(CONFIG_DEVICE_PRIVATE)) {
		pr_info("this kernel has no CONFIG_DEVICE_PRIVATE: no device-private memory, so no /dev/gx_mockgpu\n");
		return 0;
	}
	err = misc_register(&gx_misc);
	if (err)
		pr_err("misc_register: %d\n", err);
	return err;
}

static void __exit gx_exit(void)
{
	if (IS_ENABLED(CONFIG_DEVICE_PRIVATE))
		misc_deregister(&gx_misc);
}

module_init(gx_init);
module_exit(gx_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("gpuext mock HMM GPU: device-private memory driven by gpu_mem_ops policies");

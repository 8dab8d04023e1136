// SPDX-License-Identifier: GPL-2.0-only
/*
 * Memory dispatch: the eviction lists of each registered device, the calls
 * into the attached gpu_mem_ops policy and the stock defaults (a model of
 * NVIDIA's UVM, as hal/sim/sim_mem.c and sim_prefetch.c describe it).
 *
 * Every entry point takes the device's spinlock with interrupts off, sets a
 * fresh hook token on the lists it hands to the policy (the kfuncs accept
 * only lists carrying the running token) and clears it afterwards, so a
 * policy can reorder only within the lists of the call it is in.
 */
#define pr_fmt(fmt) "gpuext: " fmt

#include <linux/bitops.h>
#include <linux/err.h>
#include <linux/export.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/timekeeping.h>

#include "gpuext_internal.h"

static void list_init(struct gpuext_mem_dev *dev, struct gpu_list *l, u32 kind)
{
	INIT_LIST_HEAD(&l->blocks);
	l->count = 0;
	l->kind = kind;
	l->hook_token = 0;
	l->dev = dev;
	l->cur = NULL;
}

struct gpuext_mem_dev *gpuext_mem_dev_register(const char *name, u32 gpu_id,
					       u64 capacity_blocks)
{
	struct gpuext_mem_dev *dev;

	if (!name || !*name || !capacity_blocks)
		return ERR_PTR(-EINVAL);
	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return ERR_PTR(-ENOMEM);
	strscpy(dev->name, name, sizeof(dev->name));
	dev->gpu_id = gpu_id;
	dev->capacity_blocks = capacity_blocks;
	spin_lock_init(&dev->lock);
	list_init(dev, &dev->lists[GPUEXT_LIST_USED], GPUEXT_LIST_USED);
	list_init(dev, &dev->lists[GPUEXT_LIST_UNUSED], GPUEXT_LIST_UNUSED);
	pr_info("%s: registered (gpu %u, %llu blocks)\n", dev->name, gpu_id, capacity_blocks);
	return dev;
}
EXPORT_SYMBOL_GPL(gpuext_mem_dev_register);

void gpuext_mem_dev_unregister(struct gpuext_mem_dev *dev)
{
	if (IS_ERR_OR_NULL(dev))
		return;
	if (dev->resident)
		pr_warn("%s: unregistered with %llu blocks still on its lists\n",
			dev->name, dev->resident);
	pr_info("%s: unregistered\n", dev->name);
	kfree(dev);
}
EXPORT_SYMBOL_GPL(gpuext_mem_dev_unregister);

void gpuext_block_init(struct gpuext_mem_dev *dev, struct gpu_block *b, u64 va_start,
		       u32 owner_tgid, void *owner)
{
	memset(b, 0, sizeof(*b));
	INIT_LIST_HEAD(&b->node);
	b->dev = dev;
	b->owner = owner;
	b->info.block_id = va_start >> GPU_BLOCK_SHIFT;
	b->info.va_start = va_start;
	b->info.size = GPU_BLOCK_SIZE;
	b->info.owner_tgid = owner_tgid;
	b->info.gpu_id = dev->gpu_id;
	WARN_ON_ONCE(va_start & (GPU_BLOCK_SIZE - 1));
}
EXPORT_SYMBOL_GPL(gpuext_block_init);

/* ---- lists (dev->lock held) ---- */

static void block_unlink(struct gpuext_mem_dev *dev, struct gpu_block *b)
{
	if (!b->list)
		return;
	list_del_init(&b->node);
	b->list->count--;
	b->list->cur = NULL;
	b->list = NULL;
	dev->resident--;
}

static void block_add_tail(struct gpuext_mem_dev *dev, struct gpu_block *b, u32 kind)
{
	struct gpu_list *l = &dev->lists[kind];

	block_unlink(dev, b);
	list_add_tail(&b->node, &l->blocks);
	l->count++;
	l->cur = NULL;
	b->list = l;
	dev->resident++;
}

/* ---- hook calls (dev->lock held) ---- */

static void fill_ctx(struct gpuext_mem_dev *dev, struct gpu_mem_ctx *c,
		     const struct gpu_block *b, u32 tgid, u32 page, bool is_write)
{
	memset(c, 0, sizeof(*c));
	c->now_ns = ktime_get_ns();
	c->gpu_id = dev->gpu_id;
	c->tgid = tgid;
	if (b)
		c->block = b->info;
	c->page_index = page;
	c->is_write = is_write;
	c->capacity_blocks = dev->capacity_blocks;
	c->used_blocks = dev->resident;
}

static u64 hook_begin(struct gpuext_mem_dev *dev, struct gpu_list *a, struct gpu_list *b)
{
	u64 t = ++dev->token_gen;

	dev->cur_token = t;
	/* A list_nth walk starts afresh in every call. */
	if (a) {
		a->hook_token = t;
		a->cur = NULL;
	}
	if (b) {
		b->hook_token = t;
		b->cur = NULL;
	}
	return t;
}

static void hook_end(struct gpuext_mem_dev *dev, struct gpu_list *a, struct gpu_list *b)
{
	dev->cur_token = 0;
	if (a)
		a->hook_token = 0;
	if (b)
		b->hook_token = 0;
}

static void trace_hook(struct gpuext_mem_dev *dev, unsigned int hook, u64 id, int ret)
{
	atomic64_inc(&gpuext_slots[GPUEXT_KIND_MEM].calls[hook]);
	if (gpuext_trace_hooks)
		gpuext_event("hook %s id=%llu ret=%d", gpuext_hook_name(GPUEXT_KIND_MEM, hook),
			     id, ret);
}

static void trace_default(unsigned int hook, u64 id)
{
	atomic64_inc(&gpuext_slots[GPUEXT_KIND_MEM].defaults[hook]);
	if (gpuext_trace_hooks)
		gpuext_event("default %s id=%llu", gpuext_hook_name(GPUEXT_KIND_MEM, hook), id);
}

enum { H_ACTIVATE, H_ACCESS, H_EVICT, H_PREFETCH };

/*
 * gpu_block_activate / gpu_block_access on @b with its list. Returns the
 * hook's value, or -1 when the default runs (no policy, no such hook, or an
 * out-of-range value that ejected the policy).
 */
static int call_block_hook(struct gpuext_mem_dev *dev, unsigned int hook, struct gpu_block *b,
			   u32 tgid, u32 page, bool is_write)
{
	struct gpu_list *l = b->list;
	struct gpu_mem_ops *ops;
	struct gpu_mem_ctx c;
	int ret = -1;

	rcu_read_lock();
	ops = gpuext_policy_ops(GPUEXT_KIND_MEM);
	if (ops && l) {
		int (*fn)(struct gpu_mem_ctx *, struct gpu_block *, struct gpu_list *) =
			hook == H_ACTIVATE ? ops->gpu_block_activate : ops->gpu_block_access;

		if (fn) {
			fill_ctx(dev, &c, b, tgid, page, is_write);
			hook_begin(dev, l, NULL);
			ret = fn(&c, b, l);
			hook_end(dev, l, NULL);
			trace_hook(dev, hook, b->info.block_id, ret);
			if (!gpuext_check_ret(GPUEXT_KIND_MEM, ops, hook, ret,
					      hook == H_ACCESS ? 1 : 0))
				ret = -1;
		}
	}
	rcu_read_unlock();
	if (ret < 0)
		trace_default(hook, b->info.block_id);
	return ret;
}

void gpuext_mem_activate(struct gpuext_mem_dev *dev, struct gpu_block *b, u32 tgid)
{
	unsigned long flags;

	spin_lock_irqsave(&dev->lock, flags);
	/* uvm_pmm_gpu_unpin_allocated(): the chunk goes to the used tail first. */
	block_add_tail(dev, b, GPUEXT_LIST_USED);
	call_block_hook(dev, H_ACTIVATE, b, tgid, 0, false);
	spin_unlock_irqrestore(&dev->lock, flags);
}
EXPORT_SYMBOL_GPL(gpuext_mem_activate);

void gpuext_mem_access(struct gpuext_mem_dev *dev, struct gpu_block *b, u32 tgid, u32 page,
		       bool is_write, bool first_resident)
{
	unsigned long flags;
	int ret;

	spin_lock_irqsave(&dev->lock, flags);
	if (!b->list) {
		/* Not evictable (never activated, or evicted): nothing to order. */
		spin_unlock_irqrestore(&dev->lock, flags);
		return;
	}
	/* Which list a block is on stays the driver's call: unused -> used first. */
	if (first_resident && b->list->kind == GPUEXT_LIST_UNUSED)
		block_add_tail(dev, b, GPUEXT_LIST_USED);
	ret = call_block_hook(dev, H_ACCESS, b, tgid, page, is_write);
	/* Stock UVM: only the first residency touches the lists. */
	if (ret != 1 && first_resident)
		block_add_tail(dev, b, GPUEXT_LIST_USED);
	spin_unlock_irqrestore(&dev->lock, flags);
}
EXPORT_SYMBOL_GPL(gpuext_mem_access);

struct gpu_block *gpuext_mem_pick_victim(struct gpuext_mem_dev *dev, u32 tgid)
{
	struct gpu_list *used = &dev->lists[GPUEXT_LIST_USED];
	struct gpu_list *unused = &dev->lists[GPUEXT_LIST_UNUSED];
	struct gpu_block *v = NULL;
	struct gpu_mem_ops *ops;
	unsigned long flags;
	struct gpu_mem_ctx c;
	bool ran = false;
	int ret;

	spin_lock_irqsave(&dev->lock, flags);
	rcu_read_lock();
	ops = gpuext_policy_ops(GPUEXT_KIND_MEM);
	if (ops && ops->gpu_evict_prepare) {
		fill_ctx(dev, &c, NULL, tgid, 0, false);
		hook_begin(dev, used, unused);
		ret = ops->gpu_evict_prepare(&c, used, unused);
		hook_end(dev, used, unused);
		trace_hook(dev, H_EVICT, 0, ret);
		ran = gpuext_check_ret(GPUEXT_KIND_MEM, ops, H_EVICT, ret, 0);
	}
	rcu_read_unlock();
	if (!ran)
		trace_default(H_EVICT, 0);
	/* pick_root_chunk_to_evict(): unused before used, head first. */
	if (unused->count)
		v = list_first_entry(&unused->blocks, struct gpu_block, node);
	else if (used->count)
		v = list_first_entry(&used->blocks, struct gpu_block, node);
	spin_unlock_irqrestore(&dev->lock, flags);
	return v;
}
EXPORT_SYMBOL_GPL(gpuext_mem_pick_victim);

void gpuext_mem_remove(struct gpuext_mem_dev *dev, struct gpu_block *b)
{
	unsigned long flags;

	spin_lock_irqsave(&dev->lock, flags);
	block_unlink(dev, b);
	spin_unlock_irqrestore(&dev->lock, flags);
}
EXPORT_SYMBOL_GPL(gpuext_mem_remove);

/* ---- prefetch ---- */

#define TREE_WORDS (GPU_PAGES_PER_BLOCK / 64)

static u32 count_pages(const u64 *bits, u32 start, u32 size)
{
	u32 w, n = 0;

	if (size >= 64) {
		for (w = start / 64; w < (start + size) / 64; w++)
			n += hweight64(bits[w]);
		return n;
	}
	return hweight64((bits[start / 64] >> (start % 64)) & ((1ULL << size) - 1));
}

/*
 * NVIDIA's rule (uvm_perf_prefetch.c): the tree's leaves are the pages that
 * will be resident (resident | faulted), each big page holding a fault
 * counted as fully populated; walking from the faulting page's leaf to the
 * root, every node covering an aligned run of 1, 2, 4 ... 512 pages whose
 * population is above the threshold becomes the region, so the largest
 * qualifying node wins.
 */
bool gpuext_prefetch_default(const struct gpu_page_tree *tree, u32 page,
			     struct gpu_page_range *out)
{
	u32 big = gpuext_big_page_pages, thr = gpuext_prefetch_threshold, size, w, b;
	u64 leaves[TREE_WORDS];
	bool found = false;

	if (page >= GPU_PAGES_PER_BLOCK)
		return false;
	for (w = 0; w < TREE_WORDS; w++) {
		leaves[w] = tree->resident[w] | tree->faulted[w];
		if (big <= 1 || big > 64 || !is_power_of_2(big))
			continue;
		for (b = 0; b < 64; b += big) {
			u64 group = big == 64 ? ~0ULL : ((1ULL << big) - 1) << b;

			if (tree->faulted[w] & group)
				leaves[w] |= group;
		}
	}
	for (size = 1; size <= GPU_PAGES_PER_BLOCK; size <<= 1) {
		u32 start = page & ~(size - 1);

		if (count_pages(leaves, start, size) * 100 > size * thr) {
			out->first_page = start;
			out->last_page = start + size - 1;
			found = true;
		}
	}
	return found;
}

void gpuext_mem_prefetch(struct gpuext_mem_dev *dev, struct gpu_block *b, u32 tgid, u32 page,
			 const struct gpu_page_tree *tree, const struct gpu_page_range *max,
			 struct gpu_page_range *out)
{
	struct gpu_mem_ops *ops;
	struct gpu_region region;
	struct gpu_page_range m;
	unsigned long flags;
	struct gpu_mem_ctx c;
	bool decided = false, ran = false;
	int ret;

	out->first_page = 1;
	out->last_page = 0;
	m.first_page = max ? max->first_page : 0;
	m.last_page = max ? min_t(u32, max->last_page, GPU_PAGES_PER_BLOCK - 1)
			  : GPU_PAGES_PER_BLOCK - 1;
	if (page >= GPU_PAGES_PER_BLOCK || m.first_page > m.last_page)
		return;

	spin_lock_irqsave(&dev->lock, flags);
	rcu_read_lock();
	ops = gpuext_policy_ops(GPUEXT_KIND_MEM);
	if (ops && ops->gpu_page_prefetch) {
		memset(&region, 0, sizeof(region));
		region.max = m;
		fill_ctx(dev, &c, b, tgid, page, false);
		region.hook_token = hook_begin(dev, NULL, NULL);
		ret = ops->gpu_page_prefetch(&c, page, tree, &m, &region);
		hook_end(dev, NULL, NULL);
		region.hook_token = 0;
		trace_hook(dev, H_PREFETCH, b->info.block_id, ret);
		ran = gpuext_check_ret(GPUEXT_KIND_MEM, ops, H_PREFETCH, ret, 1);
		if (ran && ret == 1) {
			decided = true;
			if (region.is_set)
				*out = region.set;
		}
	}
	rcu_read_unlock();
	spin_unlock_irqrestore(&dev->lock, flags);
	if (decided)
		return;
	/*
	 * The stock tree, clamped like a policy's region: for a hook that
	 * returned 0 (its choice, logged as the hook call, as the simulator
	 * does) or when no policy ran (logged as the default).
	 */
	if (!ran)
		trace_default(H_PREFETCH, b->info.block_id);
	if (gpuext_prefetch_default(tree, page, out)) {
		out->first_page = max(out->first_page, m.first_page);
		out->last_page = min(out->last_page, m.last_page);
	}
}
EXPORT_SYMBOL_GPL(gpuext_mem_prefetch);

u32 gpuext_mem_list_ids(struct gpuext_mem_dev *dev, u32 kind, u64 *ids, u32 cap)
{
	struct gpu_block *b;
	unsigned long flags;
	u32 n = 0;

	if (kind > GPUEXT_LIST_UNUSED)
		return 0;
	spin_lock_irqsave(&dev->lock, flags);
	list_for_each_entry(b, &dev->lists[kind].blocks, node) {
		if (n == cap)
			break;
		ids[n++] = b->info.block_id;
	}
	spin_unlock_irqrestore(&dev->lock, flags);
	return n;
}
EXPORT_SYMBOL_GPL(gpuext_mem_list_ids);

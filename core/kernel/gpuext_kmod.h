/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gpuext.ko: the API kernel adapters (hooks-hmm/, hooks-drmsched/, the NVIDIA
 * UVM/TSG adapter) call. gpuext.ko registers the gpu_mem_ops and
 * gpu_sched_ops struct_ops types of include/gpuext/gpu_ops.h and the kfuncs;
 * an adapter registers its devices here and calls the dispatch functions at
 * its driver's decision points. The *default* behaviour (what runs with no
 * policy, for a hook the policy lacks, or after an ejection) lives here too,
 * so every adapter decides the same as the simulator's model of NVIDIA's
 * stock UVM/TSG driver (hal/sim/sim_mem.c, hal/sim/sim_sched.c):
 *
 *  - eviction: a victim is the head of the device's *unused* list, else the
 *    head of its *used* list; a block goes to the used tail when it is
 *    activated (first allocation from it) and when it first becomes resident;
 *    accesses to resident pages never reorder by default;
 *  - prefetch: the largest subtree of the 512-page bitmap tree around the
 *    faulting page that is more than 51 % populated (resident or faulted);
 *  - scheduling: timeslice 1024 us, level MEDIUM, every bind accepted.
 *
 * Locking: every dispatch call takes the device's spinlock (irqsave), so a
 * policy runs atomically with respect to list changes; adapters must not
 * hold their own spinlocks across a dispatch call that may need to sleep
 * (none does today). Policies are attached per kind, globally (one memory
 * and one scheduling policy at a time, as on the simulator); every
 * registered device uses them.
 */
#ifndef GPUEXT_KMOD_H
#define GPUEXT_KMOD_H

#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/types.h>

#include "../../include/gpuext/gpu_ops.h"

/* ---- memory ------------------------------------------------------------ */

struct gpuext_mem_dev;

/*
 * One 2 MiB block. The adapter embeds it in its own per-block structure and
 * owns its memory; gpuext.ko only links it on the device's lists. The BPF
 * side sees it as the opaque struct gpu_block of gpu_ops.h.
 */
struct gpu_block {
	struct list_head node;		/* on list->blocks while on a list */
	struct gpu_list *list;		/* NULL when on no list */
	struct gpuext_mem_dev *dev;
	struct gpu_block_info info;	/* kept up to date by the adapter */
	void *owner;			/* adapter's private pointer */
};

/* An eviction list of one device (its used and unused lists). */
struct gpu_list {
	struct list_head blocks;	/* head = next victim */
	u32 count;
	u32 kind;			/* GPUEXT_LIST_USED / _UNUSED */
	u64 hook_token;			/* == dev token while a hook was given this list */
	struct gpuext_mem_dev *dev;
	/* bpf_gpu_list_nth cursor: a walk n = 0, 1, 2 ... is O(1) per step */
	struct list_head *cur;
	u32 cur_n;
};

/* The prefetch region being decided in gpu_page_prefetch. */
struct gpu_region {
	struct gpu_page_range max;	/* what the driver allows */
	struct gpu_page_range set;	/* what the policy asked (clamped) */
	bool is_set;
	u64 hook_token;
};

enum { GPUEXT_LIST_USED = 0, GPUEXT_LIST_UNUSED = 1 };

/*
 * Registers a device with @capacity_blocks blocks of GPU memory. @name shows
 * in the kernel log ("gpuext: mockgpu0: ..."). ERR_PTR on failure.
 */
struct gpuext_mem_dev *gpuext_mem_dev_register(const char *name, u32 gpu_id,
					       u64 capacity_blocks);
void gpuext_mem_dev_unregister(struct gpuext_mem_dev *dev);

/* Initialises @b (not on a list yet); va_start must be 2 MiB aligned. */
void gpuext_block_init(struct gpuext_mem_dev *dev, struct gpu_block *b,
		       u64 va_start, u32 owner_tgid, void *owner);

/*
 * A block became evictable (first allocation from it): default = used tail;
 * then gpu_block_activate. Call with the block on no list.
 */
void gpuext_mem_activate(struct gpuext_mem_dev *dev, struct gpu_block *b,
			 u32 tgid);

/*
 * A GPU fault/access on page @page of @b (resident_pages/fault_count in
 * b->info already updated by the adapter; @first_resident: the block just
 * became resident). Default: used tail when @first_resident, else nothing;
 * gpu_block_access returning 1 skips the default.
 */
void gpuext_mem_access(struct gpuext_mem_dev *dev, struct gpu_block *b,
		       u32 tgid, u32 page, bool is_write, bool first_resident);

/*
 * The next victim: calls gpu_evict_prepare(used, unused), then returns the
 * head of unused, else the head of used (still on its list: the adapter
 * evicts it and calls gpuext_mem_remove()). NULL if both are empty.
 */
struct gpu_block *gpuext_mem_pick_victim(struct gpuext_mem_dev *dev, u32 tgid);

/* The block left GPU memory (evicted or freed): off its list. */
void gpuext_mem_remove(struct gpuext_mem_dev *dev, struct gpu_block *b);

/*
 * After a fault at @page of @b: fills @out with the pages to prefetch
 * (first > last: none). @tree: resident/faulted bitmaps of the block; @max:
 * the most the driver allows (usually 0..511). Default: the 51 % tree rule;
 * gpu_page_prefetch returning 1 uses the region the policy set (clamped).
 */
void gpuext_mem_prefetch(struct gpuext_mem_dev *dev, struct gpu_block *b,
			 u32 tgid, u32 page, const struct gpu_page_tree *tree,
			 const struct gpu_page_range *max,
			 struct gpu_page_range *out);

/* Blocks on @kind's list, head first, into @ids (up to @cap); returns the count. */
u32 gpuext_mem_list_ids(struct gpuext_mem_dev *dev, u32 kind, u64 *ids, u32 cap);

/* ---- scheduling -------------------------------------------------------- */

/* One task group (a drm_sched_entity, an NVIDIA TSG). Adapter-owned memory. */
struct gpuext_task {
	struct gpu_task_ctx ctx;	/* task_id, engine, tgid, comm, timeslice_us, level */
	bool bound;
	bool bind_rejected;
	void *owner;
};

/* task_init: ctx fields set by the adapter, defaults (1024 us, MEDIUM) filled here. */
void gpuext_task_init(struct gpuext_task *t);
/* task_bind: 0, or -EPERM when the policy refused the bind (logged). */
int gpuext_task_bind(struct gpuext_task *t);
void gpuext_task_destroy(struct gpuext_task *t);

/* ---- events (what the differential test and the logs read) ------------ */

/*
 * gpuext.ko keeps a ring of the last events (hook calls with their return
 * value, defaults taken, evictions, prefetches, attribute changes, rejected
 * binds, ejections) readable in text from debugfs gpuext/events, one per
 * line, in the vocabulary of conformance/scenario.h ("hook gpu_block_access
 * id=3 ret=1", "evict 3", "prefetch 1 4-7", "attr task=2 timeslice_us=200",
 * "bind-rejected 2", "ejected REASON", "default gpu_page_prefetch").
 * Adapters report the decisions they carry out with this.
 */
__printf(1, 2) void gpuext_event(const char *fmt, ...);

#endif /* GPUEXT_KMOD_H */

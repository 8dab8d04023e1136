/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gpuext.ko internals shared by its files: the two policy slots (one memory,
 * one scheduling policy attached at a time), ejection, the event ring and
 * the debugfs root. Adapters never include this; they use gpuext_kmod.h.
 */
#ifndef GPUEXT_INTERNAL_H
#define GPUEXT_INTERNAL_H

#include <linux/atomic.h>
#include <linux/dcache.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>

#include "gpuext_kmod.h"

#define GPUEXT_MEM_HOOKS 4	/* members of struct gpu_mem_ops before name */
#define GPUEXT_SCHED_HOOKS 3	/* members of struct gpu_sched_ops before name */

enum gpuext_kind { GPUEXT_KIND_MEM, GPUEXT_KIND_SCHED, GPUEXT_KINDS };

/*
 * One policy slot per kind. @ops is what dispatch calls (RCU: NULL while no
 * policy runs, including after an ejection); @kdata is the struct_ops value
 * holding the slot from reg() to unreg() (an ejected policy keeps holding it
 * until its link goes away, but a new attach may take the slot over).
 * Written under gpuext_attach_lock (reg/unreg) or with cmpxchg (eject).
 */
struct gpuext_slot {
	const char *type_name;		/* "gpu_mem_ops" / "gpu_sched_ops" */
	const char *const *hooks;	/* member names, index = member index */
	void __rcu *ops;
	void *kdata;
	char name[16];
	atomic_t ejected;		/* 1 once this attachment was ejected */
	atomic_t bad_calls;		/* failed kfunc calls of this attachment */
	atomic64_t calls[GPUEXT_MEM_HOOKS];
	atomic64_t defaults[GPUEXT_MEM_HOOKS];
	u64 attach_count, eject_count;
	char eject_reason[160];		/* last ejection, for status */
};

extern struct gpuext_slot gpuext_slots[GPUEXT_KINDS];
extern struct mutex gpuext_attach_lock;
extern struct dentry *gpuext_debugfs_root;
extern bool gpuext_trace_hooks;
extern unsigned int gpuext_kfunc_err_limit;
extern unsigned int gpuext_prefetch_threshold;
extern unsigned int gpuext_big_page_pages;

/* The policy to call at @hook of @kind, or NULL: default. Call under rcu_read_lock(). */
static inline void *gpuext_policy_ops(enum gpuext_kind kind)
{
	return rcu_dereference(gpuext_slots[kind].ops);
}

/*
 * Stops calling the policy whose struct_ops value is @kdata: the defaults
 * resume at once. Atomic context is fine (dispatch holds spinlocks); only
 * the first ejection of an attachment logs and records the event.
 */
void gpuext_eject(enum gpuext_kind kind, void *kdata, const char *hook,
		  const char *fmt, ...) __printf(4, 5);

/*
 * A hook returned @ret: true if it is inside [0, @max] (else the policy is
 * ejected) and the policy was not ejected during the call.
 */
bool gpuext_check_ret(enum gpuext_kind kind, void *kdata, unsigned int hook, int ret,
		      int max);

/* A kfunc called by a policy of @kind failed; ejects past gpuext_kfunc_err_limit. */
void gpuext_kfunc_failed(enum gpuext_kind kind, const char *kfunc, int err);

/* Name of a hook for logs/events. */
const char *gpuext_hook_name(enum gpuext_kind kind, unsigned int hook);

int gpuext_ops_register(void);

int gpuext_events_init(struct dentry *root);
void gpuext_events_exit(void);
void gpuext_event_str(const char *s);

int gpuext_status_init(struct dentry *root);

int gpuext_selftest_init(struct dentry *root);
void gpuext_selftest_exit(void);

/*
 * One registered device (adapter-owned blocks on gpuext-owned lists).
 * @lock protects the lists, the tokens and @resident; hooks run under it.
 */
struct gpuext_mem_dev {
	char name[32];
	u32 gpu_id;
	u64 capacity_blocks;
	u64 resident;			/* blocks on either list */
	spinlock_t lock;
	struct gpu_list lists[2];	/* GPUEXT_LIST_USED, GPUEXT_LIST_UNUSED */
	u64 token_gen;			/* one token per hook call */
	u64 cur_token;			/* token of the running hook, 0 outside hooks */
};

/* Per-task state a scheduling kfunc reaches from the ctx it was given. */
struct gpuext_sched_call {
	struct gpu_task_ctx ctx;	/* first: the hook's ctx argument */
	struct gpuext_task *task;
	unsigned int hook;
	u32 magic;
	bool reject;
	bool attr_changed;
};

#define GPUEXT_SCHED_CALL_MAGIC 0x67787363	/* "gxsc" */

/* The 51 % rule on (resident | faulted), grown to big pages; false: no region. */
bool gpuext_prefetch_default(const struct gpu_page_tree *tree, u32 page,
			     struct gpu_page_range *out);

#endif /* GPUEXT_INTERNAL_H */

// SPDX-License-Identifier: GPL-2.0-only
/*
 * Scheduling dispatch: task_init / task_bind / task_destroy of the attached
 * gpu_sched_ops policy, and the stock defaults of NVIDIA's TSGs (timeslice
 * 1024 us, interleave level MEDIUM, every bind accepted).
 *
 * The hook sees a copy of the task's context inside a call frame; the
 * kfuncs change the copy, and the changes reach the task only if the hook
 * returns normally (an ejected call leaves nothing behind, as on the
 * simulator, hal/sim/sim_sched.c).
 */
#define pr_fmt(fmt) "gpuext: " fmt

#include <linux/export.h>
#include <linux/timekeeping.h>

#include "gpuext_internal.h"

enum { H_INIT, H_BIND, H_DESTROY };

static const char *level_name(u32 level)
{
	switch (level) {
	case GPU_LEVEL_LOW: return "low";
	case GPU_LEVEL_MEDIUM: return "medium";
	case GPU_LEVEL_HIGH: return "high";
	default: return "?";
	}
}

/* Runs @hook on @t; returns true when the bind was refused. */
static bool call_task_hook(struct gpuext_task *t, unsigned int hook)
{
	struct gpuext_slot *s = &gpuext_slots[GPUEXT_KIND_SCHED];
	struct gpuext_sched_call c = { .task = t, .hook = hook };
	int (*fn)(struct gpu_task_ctx *) = NULL;
	struct gpu_sched_ops *ops;
	bool ran = false;
	int ret = 0;

	t->ctx.now_ns = ktime_get_ns();
	c.ctx = t->ctx;
	c.magic = GPUEXT_SCHED_CALL_MAGIC;
	rcu_read_lock();
	ops = gpuext_policy_ops(GPUEXT_KIND_SCHED);
	if (ops)
		fn = hook == H_INIT ? ops->task_init :
		     hook == H_BIND ? ops->task_bind : ops->task_destroy;
	if (fn) {
		ret = fn(&c.ctx);
		atomic64_inc(&s->calls[hook]);
		if (gpuext_trace_hooks)
			gpuext_event("hook %s id=%llu ret=%d", gpuext_hook_name(GPUEXT_KIND_SCHED, hook),
				     t->ctx.task_id, ret);
		ran = gpuext_check_ret(GPUEXT_KIND_SCHED, ops, hook, ret, 0);
	}
	rcu_read_unlock();
	c.magic = 0;
	if (!ran) {
		atomic64_inc(&s->defaults[hook]);
		if (gpuext_trace_hooks)
			gpuext_event("default %s id=%llu", gpuext_hook_name(GPUEXT_KIND_SCHED, hook),
				     t->ctx.task_id);
		return false;
	}
	if (c.attr_changed && (c.ctx.timeslice_us != t->ctx.timeslice_us ||
			       c.ctx.level != t->ctx.level)) {
		t->ctx.timeslice_us = c.ctx.timeslice_us;
		t->ctx.level = c.ctx.level;
		gpuext_event("attr task=%llu timeslice_us=%u level=%s", t->ctx.task_id,
			     t->ctx.timeslice_us, level_name(t->ctx.level));
	}
	return c.reject;
}

void gpuext_task_init(struct gpuext_task *t)
{
	t->ctx.timeslice_us = GPU_TIMESLICE_DEFAULT_US;
	t->ctx.level = GPU_LEVEL_MEDIUM;
	t->bound = false;
	t->bind_rejected = false;
	call_task_hook(t, H_INIT);
}
EXPORT_SYMBOL_GPL(gpuext_task_init);

int gpuext_task_bind(struct gpuext_task *t)
{
	if (t->bind_rejected)
		return -EPERM;	/* a refused bind leaves the task unusable */
	if (t->bound)
		return 0;
	if (call_task_hook(t, H_BIND)) {
		t->bind_rejected = true;
		pr_info("task %llu (%.16s, tgid %u): bind refused by policy %s\n",
			t->ctx.task_id, t->ctx.comm, t->ctx.tgid,
			gpuext_slots[GPUEXT_KIND_SCHED].name);
		gpuext_event("bind-rejected %llu", t->ctx.task_id);
		return -EPERM;
	}
	t->bound = true;
	return 0;
}
EXPORT_SYMBOL_GPL(gpuext_task_bind);

void gpuext_task_destroy(struct gpuext_task *t)
{
	call_task_hook(t, H_DESTROY);
}
EXPORT_SYMBOL_GPL(gpuext_task_destroy);

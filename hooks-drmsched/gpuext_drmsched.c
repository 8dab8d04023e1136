// SPDX-License-Identifier: GPL-2.0-only
/*
 * hooks-drmsched: the gpu_sched_ops adapter for the DRM GPU scheduler. See
 * gpuext_drmsched.h for the API and README.md for the timeslice emulation.
 *
 * Locking: ring->lock (irqsave: the job-done callback may run in hardirq
 * context) protects the accounting fields of every entity whose jobs sit on
 * that ring (queued, turn_used_ns, yield, yield_node, counters) and the
 * ring's turn/waiting/yielders. ent->bind_lock (a mutex) serialises the bind
 * of the first submission. No adapter lock is held across a gpuext.ko
 * dispatch call.
 */
#define pr_fmt(fmt) "gpuext_drmsched: " fmt

#include <linux/dma-fence.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/wait_bit.h>

#include "gpuext_drmsched.h"

/*
 * A yield ends once the ring has been idle this long: whoever it waits for
 * cannot run (blocked on a dependency the adapter cannot see, maybe on the
 * yielder's own next job), so waiting longer would only stall the ring. It
 * must exceed the scheduler's own gap between two jobs (workqueue latency:
 * microseconds on hardware, milliseconds in an emulated VM).
 */
static unsigned int yield_guard_us = 20000;
module_param(yield_guard_us, uint, 0644);
MODULE_PARM_DESC(yield_guard_us, "a yield ends after the ring was idle this long (us, default 20000)");

static ktime_t gx_yield_guard(void)
{
	return ns_to_ktime((u64)max(READ_ONCE(yield_guard_us), 100U) * NSEC_PER_USEC);
}

/*
 * The adapter's state for one drm_sched_entity. Allocated here, freed when
 * the last reference goes: the driver's (dropped by entity_destroy) and one
 * per job between arm and free_job.
 */
struct gpuext_drmsched_entity {
	struct kref ref;
	struct gpuext_task task;	/* gpuext.ko's view; ctx.level/timeslice_us its decisions */
	struct drm_sched_entity *entity;
	struct drm_gpu_scheduler **sched_list;	/* the driver's, kept for modify_sched */
	unsigned int num_sched_list;
	bool policy_managed;		/* false: kernel-priority entity, never given to a policy */
	enum drm_sched_priority prio;	/* run-queue priority last applied */

	struct mutex bind_lock;		/* serialises the first submission's bind */
	int bind_state;			/* 0 not yet, 1 bound, -EPERM refused */

	/* under ring->lock of the ring its jobs are on */
	struct gpuext_drmsched_ring *ring;
	u32 queued;			/* armed, not yet started */
	u64 turn_used_ns;		/* GPU time in its current turn */
	struct dma_fence *yield;	/* the last yield fence handed out (our ref) */
	struct list_head yield_node;	/* on ring->yielders while a yield is pending */
	u64 gpu_ns, jobs_done, yields;
	/* destroy: every prepare_job answers with this fence (gx_entity_teardown) */
	struct dma_fence *hold;

	struct gx_hold *hold_mem;	/* allocated at init, so the teardown cannot fail */
};

/* The fence that holds an entity's jobs back while it is torn down. */
struct gx_hold {
	struct dma_fence base;	/* first: dma_fence_free() frees the whole struct */
	spinlock_t lock;
};
static_assert(offsetof(struct gx_hold, base) == 0);

/* A fence the scheduler waits on while an entity yields its ring. */
struct gx_yield {
	struct dma_fence base;
	spinlock_t lock;		/* the fence's */
	struct hrtimer timer;		/* holds a fence reference while armed */
	struct gpuext_drmsched_ring *ring;
};

static LIST_HEAD(gx_rings);
static DEFINE_SPINLOCK(gx_rings_lock);
static atomic64_t gx_next_task_id = ATOMIC64_INIT(0);

enum drm_sched_priority gpuext_drmsched_level_to_priority(u32 level)
{
	switch (level) {
	case GPU_LEVEL_LOW:
		return DRM_SCHED_PRIORITY_LOW;
	case GPU_LEVEL_HIGH:
		return DRM_SCHED_PRIORITY_HIGH;
	default:
		return DRM_SCHED_PRIORITY_NORMAL;
	}
}
EXPORT_SYMBOL_GPL(gpuext_drmsched_level_to_priority);

/* ---- yield fences ---- */

static const char *gx_yield_driver_name(struct dma_fence *f)
{
	return "gpuext_drmsched";
}

static const char *gx_yield_timeline_name(struct dma_fence *f)
{
	return "timeslice-yield";
}

static void gx_yield_release(struct dma_fence *f)
{
	struct gx_yield *y = container_of(f, struct gx_yield, base);
	struct gpuext_drmsched_ring *ring = y->ring;

	dma_fence_free(f);
	/* ring_unregister waits for this, so the ring outlives its fences */
	if (atomic_dec_and_test(&ring->live_yields))
		wake_up_var(&ring->live_yields);
}

static const struct dma_fence_ops gx_yield_ops = {
	.get_driver_name = gx_yield_driver_name,
	.get_timeline_name = gx_yield_timeline_name,
	.release = gx_yield_release,
};

static const char *gx_hold_timeline_name(struct dma_fence *f)
{
	return "entity-teardown";
}

static const struct dma_fence_ops gx_hold_ops = {
	.get_driver_name = gx_yield_driver_name,
	.get_timeline_name = gx_hold_timeline_name,
};

static enum hrtimer_restart gx_yield_timeout(struct hrtimer *t)
{
	struct gx_yield *y = container_of(t, struct gx_yield, timer);
	struct gpuext_drmsched_ring *ring = y->ring;
	u64 guard = ktime_to_ns(gx_yield_guard()), now = ktime_get_ns(), idle = 0;
	unsigned long flags;
	bool end;

	/* the ring outlives its yield fences (ring_unregister waits for them) */
	spin_lock_irqsave(&ring->lock, flags);
	if (!ring->running)
		idle = now - min(now, ring->idle_since_ns);
	end = dma_fence_is_signaled(&y->base) || idle >= guard;
	if (end)
		dma_fence_signal(&y->base);	/* it leaves the list at its next prepare */
	spin_unlock_irqrestore(&ring->lock, flags);
	if (!end) {
		/* a job runs (the awaited turn progresses) or the ring idled only briefly */
		hrtimer_forward_now(t, ns_to_ktime(guard - idle));
		return HRTIMER_RESTART;
	}
	dma_fence_put(&y->base);
	return HRTIMER_NORESTART;
}

static struct dma_fence *gx_yield_create(struct gpuext_drmsched_ring *ring)
{
	struct gx_yield *y;

	/* prepare_job runs on the scheduler's reclaim-safe workqueue: no reclaim here */
	y = kzalloc(sizeof(*y), GFP_NOWAIT);
	if (!y)
		return NULL;
	spin_lock_init(&y->lock);
	y->ring = ring;
	atomic_inc(&ring->live_yields);
	dma_fence_init(&y->base, &gx_yield_ops, &y->lock, ring->fence_ctx,
		       atomic64_inc_return(&ring->fence_seq));
	hrtimer_init(&y->timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	y->timer.function = gx_yield_timeout;
	dma_fence_get(&y->base);	/* the timer's */
	hrtimer_start(&y->timer, gx_yield_guard(), HRTIMER_MODE_REL);
	return &y->base;
}

/* Ends @ent's pending yield. Under ring->lock. */
static void gx_yield_end(struct gpuext_drmsched_entity *ent)
{
	struct gx_yield *y;

	list_del_init(&ent->yield_node);
	if (!ent->yield)
		return;
	y = container_of(ent->yield, struct gx_yield, base);
	dma_fence_signal(&y->base);
	/* 1: cancelled before it ran, so its reference is ours to drop */
	if (hrtimer_try_to_cancel(&y->timer) == 1)
		dma_fence_put(&y->base);
}

/* Jobs of entities other than @ent wait on @ring. Under ring->lock. */
static bool gx_others_wait(struct gpuext_drmsched_ring *ring,
			   struct gpuext_drmsched_entity *ent)
{
	u32 mine = ent->ring == ring && ent->queued ? 1 : 0;

	return ring->waiting > mine;
}

/* Budget of one turn in ns; 0 = unlimited (kernel entities). */
static u64 gx_budget_ns(struct gpuext_drmsched_entity *ent)
{
	if (!ent->policy_managed)
		return 0;
	return (u64)READ_ONCE(ent->task.ctx.timeslice_us) * NSEC_PER_USEC;
}

/*
 * Whether @ent, about to run a job on @ring, must step aside (README.md,
 * "Timeslices"). Under ring->lock.
 *  - @ent owns the turn: when it has used its budget and others wait;
 *  - another entity owns it: when that one still has budget and jobs
 *    waiting and sits on a run queue at least as high as @ent's (a
 *    higher-priority entity never waits for a lower one's turn).
 */
static bool gx_should_yield(struct gpuext_drmsched_ring *ring,
			    struct gpuext_drmsched_entity *ent)
{
	struct gpuext_drmsched_entity *owner = (struct gpuext_drmsched_entity *)ring->turn;
	u64 budget;

	if (!owner)
		return false;
	if (owner == ent) {
		budget = gx_budget_ns(ent);
		return budget && ent->turn_used_ns >= budget && gx_others_wait(ring, ent);
	}
	budget = gx_budget_ns(owner);
	/* drm_sched_priority: a lower value is a higher run queue */
	return budget && owner->ring == ring && owner->queued &&
	       owner->turn_used_ns < budget &&
	       READ_ONCE(owner->prio) <= READ_ONCE(ent->prio);
}

/*
 * Ends the yields that lost their reason (or timed out). Called whenever
 * the turn, a budget or the waiting jobs change. Under ring->lock.
 */
static void gx_ring_review_yields(struct gpuext_drmsched_ring *ring)
{
	struct gpuext_drmsched_entity *ent, *tmp;

	list_for_each_entry_safe(ent, tmp, &ring->yielders, yield_node) {
		if (!ent->yield || dma_fence_is_signaled(ent->yield) ||
		    !gx_should_yield(ring, ent))
			gx_yield_end(ent);
	}
}

/* ---- rings ---- */

static struct gpuext_drmsched_ring *gx_ring_of(struct drm_gpu_scheduler *sched)
{
	struct gpuext_drmsched_ring *ring, *found = NULL;

	spin_lock(&gx_rings_lock);
	list_for_each_entry(ring, &gx_rings, node) {
		if (ring->sched == sched) {
			found = ring;
			break;
		}
	}
	spin_unlock(&gx_rings_lock);
	return found;
}

int gpuext_drmsched_ring_register(struct gpuext_drmsched_ring *ring,
				  struct drm_gpu_scheduler *sched, u32 engine)
{
	struct gpuext_drmsched_ring *r;

	if (!ring || !sched)
		return -EINVAL;
	ring->sched = sched;
	ring->engine = engine;
	spin_lock_init(&ring->lock);
	ring->turn = NULL;
	ring->waiting = 0;
	ring->running = 0;
	ring->idle_since_ns = ktime_get_ns();
	INIT_LIST_HEAD(&ring->yielders);
	ring->fence_ctx = dma_fence_context_alloc(1);
	atomic64_set(&ring->fence_seq, 0);
	atomic_set(&ring->live_yields, 0);
	spin_lock(&gx_rings_lock);
	list_for_each_entry(r, &gx_rings, node) {
		if (r->sched == sched) {
			spin_unlock(&gx_rings_lock);
			pr_err("scheduler %s registered twice\n", sched->name);
			return -EEXIST;
		}
	}
	list_add_tail(&ring->node, &gx_rings);
	spin_unlock(&gx_rings_lock);
	return 0;
}
EXPORT_SYMBOL_GPL(gpuext_drmsched_ring_register);

void gpuext_drmsched_ring_unregister(struct gpuext_drmsched_ring *ring)
{
	spin_lock(&gx_rings_lock);
	list_del_init(&ring->node);
	spin_unlock(&gx_rings_lock);
	WARN_ON(!list_empty(&ring->yielders));
	/* yield timers still armed hold fences that point here */
	wait_var_event(&ring->live_yields, !atomic_read(&ring->live_yields));
}
EXPORT_SYMBOL_GPL(gpuext_drmsched_ring_unregister);

/* ---- entities ---- */

static void gx_entity_free(struct kref *ref)
{
	struct gpuext_drmsched_entity *ent =
		container_of(ref, struct gpuext_drmsched_entity, ref);

	dma_fence_put(ent->yield);
	kfree(ent->hold_mem);	/* NULL once a teardown used it: the fence frees itself */
	mutex_destroy(&ent->bind_lock);
	kfree(ent);
}

int gpuext_drmsched_entity_init(struct drm_sched_entity *entity,
				enum drm_sched_priority requested,
				struct drm_gpu_scheduler **sched_list,
				unsigned int num_sched_list, atomic_t *guilty,
				const struct gpuext_drmsched_creator *creator,
				void *owner,
				struct gpuext_drmsched_entity **out)
{
	struct gpuext_drmsched_entity *ent;
	struct gpuext_drmsched_ring *ring;
	struct gpu_task_ctx *ctx;
	enum drm_sched_priority prio = requested;
	int ret;

	if (!entity || !sched_list || !num_sched_list || !sched_list[0] || !out ||
	    requested >= DRM_SCHED_PRIORITY_COUNT)
		return -EINVAL;
	ring = gx_ring_of(sched_list[0]);
	if (!ring) {
		pr_err("entity on scheduler %s: ring not registered with gpuext_drmsched_ring_register()\n",
		       sched_list[0]->name);
		return -ENOENT;
	}
	ent = kzalloc(sizeof(*ent), GFP_KERNEL);
	if (!ent)
		return -ENOMEM;
	ent->hold_mem = kzalloc(sizeof(*ent->hold_mem), GFP_KERNEL);
	if (!ent->hold_mem) {
		kfree(ent);
		return -ENOMEM;
	}
	kref_init(&ent->ref);
	mutex_init(&ent->bind_lock);
	INIT_LIST_HEAD(&ent->yield_node);
	ent->entity = entity;
	ent->sched_list = sched_list;
	ent->num_sched_list = num_sched_list;
	ent->policy_managed = requested != DRM_SCHED_PRIORITY_KERNEL;
	ent->task.owner = owner;

	if (ent->policy_managed) {
		ctx = &ent->task.ctx;
		ctx->task_id = creator && creator->task_id ? creator->task_id :
			       atomic64_inc_return(&gx_next_task_id);
		ctx->now_ns = ktime_get_ns();
		ctx->engine = ring->engine;
		ctx->tgid = creator && creator->tgid ? creator->tgid : current->tgid;
		if (creator && creator->comm && creator->comm[0])
			strscpy(ctx->comm, creator->comm, sizeof(ctx->comm));
		else
			get_task_comm(ctx->comm, current);
		/* before drm_sched_entity_init: the entity starts on the policy's run queue */
		gpuext_task_init(&ent->task);
		prio = gpuext_drmsched_level_to_priority(READ_ONCE(ctx->level));
	}

	ret = drm_sched_entity_init(entity, prio, sched_list, num_sched_list, guilty);
	if (ret)
		goto err_task;
	ent->prio = prio;
	*out = ent;
	return 0;

err_task:
	if (ent->policy_managed)
		gpuext_task_destroy(&ent->task);
	kref_put(&ent->ref, gx_entity_free);
	return ret;
}
EXPORT_SYMBOL_GPL(gpuext_drmsched_entity_init);

/* drm_sched_entity_flush()'s test of an entity with nothing left to run (static there). */
static bool gx_entity_idle(struct drm_sched_entity *entity)
{
	rmb();	/* as drm_sched: list_empty without the lock */
	return list_empty(&entity->list) || !spsc_queue_count(&entity->job_queue) ||
	       READ_ONCE(entity->stopped);
}

/*
 * drm_sched_entity_destroy(), without the kill race (README.md, "The kill
 * race"). On Linux 6.12 (at least to 6.12.117) drm_sched_entity_kill() takes
 * the entity out of its run queue and then waits for the worker to be done
 * with it, but a worker already inside drm_sched_entity_pop_job() puts it
 * back into the queue's FIFO tree (drm_sched_rq_update_fifo_locked() when
 * another job follows), and may even select it again while the kill pops
 * the jobs: the tree then points into the freed entity. A kill with jobs
 * left happens whenever the owner dies with more queued work than the
 * flush waits for (1 s). So:
 *  1. wait as drm_sched_entity_flush() does (for an exiting owner at most
 *     1 s), so queued jobs still get to run;
 *  2. hold the entity's jobs back: from now on prepare_job answers with
 *     ent->hold, so a worker that takes the entity gets a dependency and
 *     pops nothing; then wait for a worker already past prepare_job
 *     (entity_idle completes when it is done with the entity);
 *  3. the flush's kill (SIGKILLed owner) and fini now run with no worker
 *     inside the entity; then let the fence go.
 * The hold is set under ring->lock, which prepare_job takes: a worker that
 * read no hold there had selected the entity (reinit of entity_idle)
 * before, so step 2's wait sees it.
 */
static void gx_entity_teardown(struct gpuext_drmsched_entity *ent,
			       struct gpuext_drmsched_ring *ring)
{
	struct drm_sched_entity *entity = ent->entity;
	struct drm_gpu_scheduler *sched = entity->rq ? entity->rq->sched : NULL;
	struct gx_hold *h = ent->hold_mem;
	unsigned long flags;

	if (!sched || !ring || !h) {
		drm_sched_entity_destroy(entity);
		return;
	}
	if (current->flags & PF_EXITING)
		wait_event_timeout(sched->job_scheduled, gx_entity_idle(entity),
				   MAX_WAIT_SCHED_ENTITY_Q_EMPTY);
	else
		wait_event_killable(sched->job_scheduled, gx_entity_idle(entity));

	ent->hold_mem = NULL;	/* the fence's from here on */
	spin_lock_init(&h->lock);
	/* a context of its own: the ring's yields signal out of order with it */
	dma_fence_init(&h->base, &gx_hold_ops, &h->lock, dma_fence_context_alloc(1), 1);
	spin_lock_irqsave(&ring->lock, flags);
	ent->hold = &h->base;
	spin_unlock_irqrestore(&ring->lock, flags);
	wait_for_completion(&entity->entity_idle);

	/* no job of it starts any more: nobody waits for its turn */
	spin_lock_irqsave(&ring->lock, flags);
	if (ring->turn == ent)
		ring->turn = NULL;
	gx_ring_review_yields(ring);
	spin_unlock_irqrestore(&ring->lock, flags);

	/* waited above already: no timeout left, only the SIGKILL kill */
	drm_sched_entity_flush(entity, 0);
	drm_sched_entity_fini(entity);

	spin_lock_irqsave(&ring->lock, flags);
	ent->hold = NULL;
	spin_unlock_irqrestore(&ring->lock, flags);
	dma_fence_signal(&h->base);
	dma_fence_put(&h->base);
}

void gpuext_drmsched_entity_destroy(struct gpuext_drmsched_entity *ent)
{
	struct gpuext_drmsched_ring *ring;
	unsigned long flags;

	if (!ent)
		return;
	/* flush + fini: queued jobs run (or are killed with the process) first */
	ring = READ_ONCE(ent->ring);
	gx_entity_teardown(ent, ring);

	if (ring) {
		spin_lock_irqsave(&ring->lock, flags);
		gx_yield_end(ent);
		if (ring->turn == ent)
			ring->turn = NULL;
		gx_ring_review_yields(ring);
		spin_unlock_irqrestore(&ring->lock, flags);
	}
	if (ent->policy_managed)
		gpuext_task_destroy(&ent->task);
	ent->entity = NULL;
	kref_put(&ent->ref, gx_entity_free);
}
EXPORT_SYMBOL_GPL(gpuext_drmsched_entity_destroy);

/*
 * Moves the entity to the run queue of its task's level. drm_sched applies a
 * priority only when it (re)selects a run queue, at the next arm of an idle
 * entity; modify_sched with the same list makes it reselect even when the
 * entity has a single scheduler (amdgpu_ctx_set_entity_priority does the same).
 */
static void gx_apply_level(struct gpuext_drmsched_entity *ent)
{
	enum drm_sched_priority prio;

	if (!ent->policy_managed)
		return;
	prio = gpuext_drmsched_level_to_priority(READ_ONCE(ent->task.ctx.level));
	if (prio == ent->prio)
		return;
	drm_sched_entity_set_priority(ent->entity, prio);
	drm_sched_entity_modify_sched(ent->entity, ent->sched_list, ent->num_sched_list);
	ent->prio = prio;
}

int gpuext_drmsched_entity_admit(struct gpuext_drmsched_entity *ent)
{
	int ret;

	if (!ent)
		return -EINVAL;
	if (!ent->policy_managed)
		return 0;
	mutex_lock(&ent->bind_lock);
	if (!ent->bind_state) {
		ret = gpuext_task_bind(&ent->task);
		ent->bind_state = ret ? -EPERM : 1;
		if (ret)
			pr_info("task %llu (%s, tgid %u): policy refused the bind; its submissions fail with -EPERM\n",
				ent->task.ctx.task_id, ent->task.ctx.comm,
				ent->task.ctx.tgid);
	}
	ret = ent->bind_state < 0 ? ent->bind_state : 0;
	mutex_unlock(&ent->bind_lock);
	return ret;
}
EXPORT_SYMBOL_GPL(gpuext_drmsched_entity_admit);

int gpuext_drmsched_job_arm(struct gpuext_drmsched_entity *ent,
			    struct gpuext_drmsched_job *gjob,
			    struct drm_sched_job *job)
{
	struct gpuext_drmsched_ring *ring;
	unsigned long flags;
	int ret;

	if (!ent || !gjob || !job || job->entity != ent->entity)
		return -EINVAL;
	ret = gpuext_drmsched_entity_admit(ent);
	if (ret)
		return ret;
	/* also follows a level change after the bind (an ejection restores MEDIUM) */
	gx_apply_level(ent);

	drm_sched_job_arm(job);
	ring = gx_ring_of(job->sched);
	memset(gjob, 0, sizeof(*gjob));
	if (!ring) {
		/* an unregistered scheduler in the list: run it, just unaccounted */
		WARN_ONCE(1, "gpuext_drmsched: scheduler %s not registered\n", job->sched->name);
		return 0;
	}
	kref_get(&ent->ref);
	gjob->ent = ent;
	gjob->ring = ring;
	spin_lock_irqsave(&ring->lock, flags);
	/* drm_sched moves an entity only when idle, so all its queued jobs share a ring */
	WRITE_ONCE(ent->ring, ring);
	if (!ent->queued++)
		ring->waiting++;
	spin_unlock_irqrestore(&ring->lock, flags);
	return 0;
}
EXPORT_SYMBOL_GPL(gpuext_drmsched_job_arm);

void gpuext_drmsched_job_push(struct gpuext_drmsched_job *gjob,
			      struct drm_sched_job *job)
{
	drm_sched_entity_push_job(job);
}
EXPORT_SYMBOL_GPL(gpuext_drmsched_job_push);

struct dma_fence *gpuext_drmsched_prepare_job(struct gpuext_drmsched_job *gjob,
					      struct drm_sched_job *job)
{
	struct gpuext_drmsched_entity *ent = gjob ? gjob->ent : NULL;
	struct gpuext_drmsched_ring *ring = gjob ? gjob->ring : NULL;
	struct dma_fence *fence = NULL, *old = NULL;
	unsigned long flags;

	if (!ent || !ring)
		return NULL;
	spin_lock_irqsave(&ring->lock, flags);
	if (ent->hold) {
		/* being torn down: nothing more runs (gx_entity_teardown) */
		fence = dma_fence_get(ent->hold);
		goto out;
	}
	if (ent->yield) {
		if (!dma_fence_is_signaled(ent->yield)) {
			/* asked again before the yield ended: keep waiting */
			fence = dma_fence_get(ent->yield);
			goto out;
		}
		/*
		 * back from a yield: it runs now, with a fresh budget (after an
		 * idle-ring timeout too, so a stalled neighbour cannot keep it
		 * waiting)
		 */
		gx_yield_end(ent);
		old = ent->yield;
		ent->yield = NULL;
		ent->turn_used_ns = 0;
		goto out;
	}
	if (!gx_should_yield(ring, ent))
		goto out;
	fence = gx_yield_create(ring);
	if (!fence)
		goto out;	/* best effort: no memory, no yield */
	ent->yield = fence;
	list_add_tail(&ent->yield_node, &ring->yielders);
	ent->yields++;
	fence = dma_fence_get(fence);
out:
	spin_unlock_irqrestore(&ring->lock, flags);
	dma_fence_put(old);
	return fence;
}
EXPORT_SYMBOL_GPL(gpuext_drmsched_prepare_job);

static void gx_job_done(struct dma_fence *f, struct dma_fence_cb *cb)
{
	struct gpuext_drmsched_job *gjob =
		container_of(cb, struct gpuext_drmsched_job, done_cb);
	struct gpuext_drmsched_entity *ent = gjob->ent;
	struct gpuext_drmsched_ring *ring = gjob->ring;
	u64 now = ktime_get_ns(), used;
	unsigned long flags;

	used = now > gjob->start_ns ? now - gjob->start_ns : 0;
	spin_lock_irqsave(&ring->lock, flags);
	if (ring->turn == ent)
		ent->turn_used_ns += used;
	ent->gpu_ns += used;
	ent->jobs_done++;
	if (!--ring->running)
		ring->idle_since_ns = now;
	/* a spent budget ends the turn those waiting for it yielded to */
	gx_ring_review_yields(ring);
	spin_unlock_irqrestore(&ring->lock, flags);
}

void gpuext_drmsched_run_job(struct gpuext_drmsched_job *gjob,
			     struct dma_fence *hw_fence)
{
	struct gpuext_drmsched_entity *ent = gjob ? gjob->ent : NULL;
	struct gpuext_drmsched_ring *ring = gjob ? gjob->ring : NULL;
	unsigned long flags;

	if (!ent || !ring || gjob->started)
		return;	/* a resubmission after a reset is not a new start */
	spin_lock_irqsave(&ring->lock, flags);
	gjob->started = true;
	gjob->start_ns = ktime_get_ns();
	ring->running++;
	if (!--ent->queued)
		ring->waiting--;
	if (ring->turn != ent) {
		ring->turn = ent;
		ent->turn_used_ns = 0;
	}
	gx_ring_review_yields(ring);
	spin_unlock_irqrestore(&ring->lock, flags);

	if (IS_ERR_OR_NULL(hw_fence) ||
	    dma_fence_add_callback(hw_fence, &gjob->done_cb, gx_job_done))
		gx_job_done(NULL, &gjob->done_cb);	/* already done */
}
EXPORT_SYMBOL_GPL(gpuext_drmsched_run_job);

void gpuext_drmsched_job_release(struct gpuext_drmsched_job *gjob)
{
	struct gpuext_drmsched_entity *ent = gjob ? gjob->ent : NULL;
	struct gpuext_drmsched_ring *ring = gjob ? gjob->ring : NULL;
	unsigned long flags;

	if (!ent)
		return;
	if (!gjob->started) {
		/* killed with its entity before it ran */
		spin_lock_irqsave(&ring->lock, flags);
		if (!--ent->queued)
			ring->waiting--;
		gx_ring_review_yields(ring);
		spin_unlock_irqrestore(&ring->lock, flags);
	}
	gjob->ent = NULL;
	kref_put(&ent->ref, gx_entity_free);
}
EXPORT_SYMBOL_GPL(gpuext_drmsched_job_release);

void gpuext_drmsched_entity_get_info(struct gpuext_drmsched_entity *ent,
				     struct gpuext_drmsched_entity_info *info)
{
	struct gpuext_drmsched_ring *ring = READ_ONCE(ent->ring);
	unsigned long flags = 0;

	memset(info, 0, sizeof(*info));
	info->ctx = ent->task.ctx;
	info->drm_priority = ent->entity ? READ_ONCE(ent->entity->priority) : ent->prio;
	info->bound = ent->bind_state > 0;
	info->bind_rejected = ent->bind_state < 0;
	info->policy_managed = ent->policy_managed;
	if (ring)
		spin_lock_irqsave(&ring->lock, flags);
	info->gpu_ns = ent->gpu_ns;
	info->jobs_done = ent->jobs_done;
	info->yields = ent->yields;
	if (ring)
		spin_unlock_irqrestore(&ring->lock, flags);
}
EXPORT_SYMBOL_GPL(gpuext_drmsched_entity_get_info);

static void __exit gpuext_drmsched_exit(void)
{
	/* every driver using us is gone (it holds a module reference), so are its rings */
	WARN_ON(!list_empty(&gx_rings));
	/* yield fences are freed with RCU and their ops live here */
	rcu_barrier();
}
module_exit(gpuext_drmsched_exit);

MODULE_DESCRIPTION("gpuext gpu_sched_ops adapter for the DRM GPU scheduler");
MODULE_LICENSE("GPL");
MODULE_SOFTDEP("pre: gpu-sched gpuext");

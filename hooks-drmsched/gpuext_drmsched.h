/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hooks-drmsched: gpu_sched_ops on the DRM GPU scheduler.
 *
 * A drm_sched driver calls these wrappers instead of (or around) its own
 * drm_sched calls, so that the attached gpu_sched_ops policy (gpuext.ko)
 * sees each drm_sched_entity as a task group:
 *
 *   drm_sched_entity_init()      -> gpuext_drmsched_entity_init()   task_init
 *   drm_sched_job_arm()          -> gpuext_drmsched_job_arm()       task_bind on the first
 *   drm_sched_entity_push_job()  -> gpuext_drmsched_job_push()
 *   drm_sched_entity_destroy()   -> gpuext_drmsched_entity_destroy() task_destroy
 *   backend_ops.prepare_job      -> gpuext_drmsched_prepare_job()   timeslice budget
 *   backend_ops.run_job          -> gpuext_drmsched_run_job()       GPU time accounting
 *
 * The task's level becomes the entity's run-queue priority (LOW -> LOW,
 * MEDIUM -> NORMAL, HIGH -> HIGH); its timeslice becomes a GPU-time budget
 * per turn, enforced at job granularity through prepare_job (README.md says
 * precisely how). Policies advise; a kernel-priority entity is never handed
 * to a policy.
 */
#ifndef GPUEXT_DRMSCHED_H
#define GPUEXT_DRMSCHED_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <drm/gpu_scheduler.h>

#include "../core/kernel/gpuext_kmod.h"

struct gpuext_drmsched_entity;

/*
 * One hardware ring: the driver embeds it next to its drm_gpu_scheduler and
 * owns its memory; it must outlive every entity and job on that scheduler.
 * Registered so that jobs can find the ring of the scheduler drm_sched_job_arm
 * picked for them.
 */
struct gpuext_drmsched_ring {
	struct drm_gpu_scheduler *sched;
	u32 engine;			/* gpu_task_ctx.engine of its tasks */
	spinlock_t lock;		/* turn, waiting, yielders (taken from hardirq) */
	const void *turn;		/* entity whose job started last; NULL once destroyed */
	u32 waiting;			/* entities with jobs armed but not started */
	u32 running;			/* jobs started, not finished */
	u64 idle_since_ns;		/* when running last dropped to 0 */
	struct list_head yielders;	/* gpuext_drmsched_entity.yield_node */
	u64 fence_ctx;			/* dma_fence context of the yield fences */
	atomic64_t fence_seq;
	atomic_t live_yields;		/* yield fences not yet released */
	struct list_head node;		/* on the registry */
};

/*
 * Per-job state the driver embeds in its job structure, next to its
 * drm_sched_job. Valid from gpuext_drmsched_job_arm() until the driver's
 * free_job callback; it holds a reference on the entity state until the job
 * has finished, so accounting survives an entity torn down mid-flight.
 */
struct gpuext_drmsched_job {
	struct gpuext_drmsched_entity *ent;
	struct gpuext_drmsched_ring *ring;
	u64 start_ns;
	bool started;			/* run_job saw it */
	struct dma_fence_cb done_cb;
};

/* What a driver passes at entity creation (who created the context). */
struct gpuext_drmsched_creator {
	u64 task_id;		/* 0: the adapter numbers tasks; else the driver keeps ids unique */
	u32 tgid;		/* 0: current's */
	const char *comm;	/* NULL or "": current's */
};

/* Read-back of one entity for tests and debugging. */
struct gpuext_drmsched_entity_info {
	struct gpu_task_ctx ctx;
	enum drm_sched_priority drm_priority;
	bool bound, bind_rejected, policy_managed;
	u64 gpu_ns;		/* GPU time of its finished jobs */
	u64 jobs_done;
	u64 yields;		/* times its budget made it yield */
};

int gpuext_drmsched_ring_register(struct gpuext_drmsched_ring *ring,
				  struct drm_gpu_scheduler *sched, u32 engine);
void gpuext_drmsched_ring_unregister(struct gpuext_drmsched_ring *ring);

/*
 * Wraps drm_sched_entity_init(): task_init first, so the entity starts on the
 * run queue of the policy's level. @requested is the driver's own priority;
 * DRM_SCHED_PRIORITY_KERNEL entities keep it and never reach the policy.
 * @sched_list must stay valid while the entity lives (drm_sched keeps it too).
 * Returns the adapter's state for the entity in *@out, or a negative errno.
 */
int gpuext_drmsched_entity_init(struct drm_sched_entity *entity,
				enum drm_sched_priority requested,
				struct drm_gpu_scheduler **sched_list,
				unsigned int num_sched_list, atomic_t *guilty,
				const struct gpuext_drmsched_creator *creator,
				void *owner,
				struct gpuext_drmsched_entity **out);

/*
 * Wraps drm_sched_entity_destroy() (flush + fini), then task_destroy. @ent is
 * gone afterwards; jobs still running keep its accounting alive. Between the
 * flush's wait and the kill the entity's jobs are held back through
 * gpuext_drmsched_prepare_job(), which closes 6.12's kill race (README.md,
 * "The kill race"): the driver's prepare_job must call it.
 */
void gpuext_drmsched_entity_destroy(struct gpuext_drmsched_entity *ent);

/*
 * Admission: binds the task on its first call (task_bind), 0 or -EPERM when
 * the policy refused (then always -EPERM). gpuext_drmsched_job_arm() calls
 * it; a driver with side effects before its arm (nouveau's submit op, the
 * amdgpu CS parser) calls it earlier so that a refusal needs no unwinding.
 * May sleep.
 */
int gpuext_drmsched_entity_admit(struct gpuext_drmsched_entity *ent);

/*
 * Wraps drm_sched_job_arm() for a job set up with drm_sched_job_init() on
 * ent's entity. The entity's first submission binds the task: when the
 * policy refuses, this returns -EPERM (and so does every later submission)
 * with the job not armed, and the driver cleans it up with
 * drm_sched_job_cleanup() as for any aborted job. On success the job is
 * armed and counted as waiting on its ring; the driver must push it with
 * gpuext_drmsched_job_push() under the same lock (drm_sched's rule for
 * arm + push). May sleep (the bind runs under a mutex).
 */
int gpuext_drmsched_job_arm(struct gpuext_drmsched_entity *ent,
			    struct gpuext_drmsched_job *gjob,
			    struct drm_sched_job *job);

/* Wraps drm_sched_entity_push_job() for a job armed by gpuext_drmsched_job_arm(). */
void gpuext_drmsched_job_push(struct gpuext_drmsched_job *gjob,
			      struct drm_sched_job *job);

/*
 * From the driver's backend_ops.prepare_job (after its own dependencies):
 * NULL to run the job now, or a fence the scheduler waits on because the
 * entity spent its timeslice while other entities wait on this ring.
 */
struct dma_fence *gpuext_drmsched_prepare_job(struct gpuext_drmsched_job *gjob,
					      struct drm_sched_job *job);

/*
 * From the driver's backend_ops.run_job, once the job is on the hardware:
 * @hw_fence is what run_job returns (the adapter takes no reference beyond
 * the callback it installs); its signal time ends the job's GPU time.
 */
void gpuext_drmsched_run_job(struct gpuext_drmsched_job *gjob,
			     struct dma_fence *hw_fence);

/*
 * From the driver's free_job (or its aborted-job path after a successful
 * submit): drops what the job held if run_job never saw it (entity killed).
 */
void gpuext_drmsched_job_release(struct gpuext_drmsched_job *gjob);

void gpuext_drmsched_entity_get_info(struct gpuext_drmsched_entity *ent,
				     struct gpuext_drmsched_entity_info *info);

/* The run-queue priority for a gpuext level (GPU_LEVEL_*). */
enum drm_sched_priority gpuext_drmsched_level_to_priority(u32 level);

#endif /* GPUEXT_DRMSCHED_H */

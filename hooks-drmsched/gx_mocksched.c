// SPDX-License-Identifier: GPL-2.0-only
/*
 * gx_mocksched.ko: a mock GPU with a few rings, driven by the real DRM GPU
 * scheduler (gpu-sched.ko) through the hooks-drmsched adapter, so that
 * gpu_sched_ops policies can be tested and LC/BE latency measured in a VM
 * without a GPU.
 *
 * Each ring is a drm_gpu_scheduler with a credit limit of one: like an engine
 * that runs one job at a time, which makes a job's run time its GPU time.
 * run_job "executes" a job by arming an hrtimer for its duration; the timer
 * signals the hardware fence. User space drives it through /dev/gx_mocksched
 * (gx_mocksched_uapi.h): one entity per open file.
 */
#define pr_fmt(fmt) "gx_mocksched: " fmt

#include <linux/dma-fence.h>
#include <linux/fs.h>
#include <linux/delay.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/version.h>
#include <linux/wait_bit.h>
#include <linux/xarray.h>

#include "gpuext_drmsched.h"
#include "gx_mocksched_uapi.h"

#define GX_MS_MAX_RINGS 4

static unsigned int nr_rings = 2;
module_param(nr_rings, uint, 0444);
MODULE_PARM_DESC(nr_rings, "number of mock rings (1-" __stringify(GX_MS_MAX_RINGS) ")");

/*
 * For tests: prepare_job sleeps this long after the adapter let a job through,
 * inside drm_sched_entity_pop_job(), which widens the few microseconds in which
 * Linux 6.12's kill race can strike (README.md, "The kill race") to most of a
 * job's cycle: vmtests/drmsched_killrace sets it, so that without the
 * adapter's hold the race shows in its first rounds, not once in hundreds.
 */
static unsigned int prepare_delay_us;
module_param(prepare_delay_us, uint, 0644);
MODULE_PARM_DESC(prepare_delay_us, "tests: stall each prepare_job that lets a job run this long (us, at most 10000; default 0)");

/* One mock engine. */
struct gx_ms_ring {
	struct drm_gpu_scheduler sched;
	struct gpuext_drmsched_ring gring;
	struct drm_gpu_scheduler *sched_list[1];	/* what entities are given */
	spinlock_t fence_lock;
	u64 fence_ctx;
	atomic64_t fence_seq;
	char name[20];
	bool sched_ready, gring_ready;
};

/* The hardware fence of one job: signalled by its timer. */
struct gx_ms_hw_fence {
	struct dma_fence base;
	struct hrtimer timer;
	struct gx_ms_job *job;		/* a job reference while the timer is armed */
};

/*
 * One job. References: the file's (until WAIT consumes the record or the file
 * closes), the scheduler's (until free_job), the timer's (while it runs).
 */
struct gx_ms_job {
	struct drm_sched_job base;
	struct gpuext_drmsched_job gjob;
	struct kref ref;
	u64 seq;
	u64 duration_ns;
	u64 submit_ns, start_ns, end_ns;
	struct dma_fence *finished;	/* our reference on base.s_fence->finished */
	struct gx_ms_hw_fence *hw;	/* preallocated; run_job takes it */
	struct gx_ms_ring *ring;
};

/* One open file. */
struct gx_ms_file {
	struct mutex lock;		/* the entity, arm + push, seq */
	struct gx_ms_ring *ring;
	struct drm_sched_entity entity;
	struct gpuext_drmsched_entity *gent;	/* NULL until CREATE */
	u64 task_id;			/* its key in gx_task_ids */
	u64 next_seq;
	struct xarray jobs;		/* seq -> gx_ms_job, the file's reference */
};

static struct gx_ms_ring *gx_rings;
/* task ids of live entities: unique, so the events of gpuext.ko name one task each */
static DEFINE_XARRAY_ALLOC1(gx_task_ids);
static atomic64_t gx_live_jobs = ATOMIC64_INIT(0);
static atomic64_t gx_live_entities = ATOMIC64_INIT(0);
static struct miscdevice gx_misc;

static struct gx_ms_job *to_gx_job(struct drm_sched_job *j)
{
	return container_of(j, struct gx_ms_job, base);
}

static void gx_job_free(struct kref *ref)
{
	struct gx_ms_job *job = container_of(ref, struct gx_ms_job, ref);

	dma_fence_put(job->finished);
	kfree(job->hw);		/* only when run_job never took it */
	kfree(job);
	/* module exit waits for the last job */
	if (atomic64_dec_and_test(&gx_live_jobs))
		wake_up_var(&gx_live_jobs);
}

static void gx_job_put(struct gx_ms_job *job)
{
	kref_put(&job->ref, gx_job_free);
}

/* ---- hardware fences ---- */

static const char *gx_hw_driver_name(struct dma_fence *f)
{
	return "gx_mocksched";
}

static const char *gx_hw_timeline_name(struct dma_fence *f)
{
	return "ring";
}

static const struct dma_fence_ops gx_hw_fence_ops = {
	.get_driver_name = gx_hw_driver_name,
	.get_timeline_name = gx_hw_timeline_name,
};

static enum hrtimer_restart gx_hw_done(struct hrtimer *t)
{
	struct gx_ms_hw_fence *hw = container_of(t, struct gx_ms_hw_fence, timer);
	struct gx_ms_job *job = hw->job;

	/* before the signal, so a waiter woken by it reads the end time */
	WRITE_ONCE(job->end_ns, ktime_get_ns());
	dma_fence_signal(&hw->base);
	hw->job = NULL;
	dma_fence_put(&hw->base);
	gx_job_put(job);	/* last: it may let module exit proceed */
	return HRTIMER_NORESTART;
}

/* ---- drm_sched backend ops ---- */

static struct dma_fence *gx_prepare_job(struct drm_sched_job *sched_job,
					struct drm_sched_entity *s_entity)
{
	struct dma_fence *f = gpuext_drmsched_prepare_job(&to_gx_job(sched_job)->gjob, sched_job);
	unsigned int us = min(READ_ONCE(prepare_delay_us), 10000U);

	/* the scheduler's worker calls this with no lock held: it may sleep */
	if (!f && us)
		usleep_range(us, us + us / 4 + 1);
	return f;
}

static struct dma_fence *gx_run_job(struct drm_sched_job *sched_job)
{
	struct gx_ms_job *job = to_gx_job(sched_job);
	struct gx_ms_ring *ring = job->ring;
	struct gx_ms_hw_fence *hw = job->hw;
	u64 start;

	if (!hw) {
		/* run again after a reset: nothing to redo on a mock */
		return NULL;
	}
	job->hw = NULL;
	dma_fence_init(&hw->base, &gx_hw_fence_ops, &ring->fence_lock,
		       ring->fence_ctx, atomic64_inc_return(&ring->fence_seq));
	/*
	 * Userspace's start_ns is the adapter's: the mock used to stamp its own
	 * before the call, and an interrupt or a preemption of this worker in
	 * between (100s of us in an emulated guest) made the adapter count less
	 * GPU time than userspace saw the job take, so a turn ran a job past its
	 * budget in the timeslice test. Now the adapter's count of a job is never
	 * less than what userspace sees: it starts at the same instant and ends
	 * at the fence's signal, after end_ns.
	 */
	gpuext_drmsched_run_job(&job->gjob, &hw->base);
	start = job->gjob.started && job->gjob.start_ns ? job->gjob.start_ns : ktime_get_ns();
	WRITE_ONCE(job->start_ns, start);

	kref_get(&job->ref);
	hw->job = job;
	dma_fence_get(&hw->base);	/* the timer's; the returned one is drm_sched's */
	hrtimer_start(&hw->timer, ns_to_ktime(job->duration_ns), HRTIMER_MODE_REL);
	return &hw->base;
}

static enum drm_gpu_sched_stat gx_timedout_job(struct drm_sched_job *sched_job)
{
	/* timeout is MAX_SCHEDULE_TIMEOUT: a mock job always ends on its timer */
	WARN_ONCE(1, "gx_mocksched: unexpected job timeout\n");
	return DRM_GPU_SCHED_STAT_NOMINAL;
}

static void gx_free_job(struct drm_sched_job *sched_job)
{
	struct gx_ms_job *job = to_gx_job(sched_job);

	gpuext_drmsched_job_release(&job->gjob);
	drm_sched_job_cleanup(sched_job);
	gx_job_put(job);
}

static const struct drm_sched_backend_ops gx_sched_ops = {
	.prepare_job = gx_prepare_job,
	.run_job = gx_run_job,
	.timedout_job = gx_timedout_job,
	.free_job = gx_free_job,
};

/* ---- ioctls ---- */

static long gx_ioc_create(struct gx_ms_file *f, void __user *uarg)
{
	struct gpuext_drmsched_creator who = {};
	struct gx_ms_create a;
	char comm[GX_MS_COMM_LEN];
	int ret;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.ring >= nr_rings)
		return -EINVAL;
	memcpy(comm, a.comm, sizeof(comm));
	comm[sizeof(comm) - 1] = '\0';
	who.tgid = a.tgid;
	who.comm = comm;

	if (a.task_id > ULONG_MAX)
		return -EINVAL;

	mutex_lock(&f->lock);
	if (f->gent) {
		ret = -EBUSY;	/* one entity per file */
		goto out;
	}
	if (a.task_id) {
		ret = xa_insert(&gx_task_ids, a.task_id, f, GFP_KERNEL);
		if (ret == -EBUSY)
			ret = -EEXIST;
	} else {
		u32 id;

		ret = xa_alloc(&gx_task_ids, &id, f, xa_limit_32b, GFP_KERNEL);
		a.task_id = id;
	}
	if (ret)
		goto out;
	who.task_id = a.task_id;
	ret = gpuext_drmsched_entity_init(&f->entity, DRM_SCHED_PRIORITY_NORMAL,
					  gx_rings[a.ring].sched_list, 1, NULL,
					  &who, f, &f->gent);
	if (ret) {
		xa_erase(&gx_task_ids, a.task_id);
		goto out;
	}
	f->task_id = a.task_id;
	f->ring = &gx_rings[a.ring];
	atomic64_inc(&gx_live_entities);
	/* the entity stays even if the copy fails: close() destroys it */
	ret = copy_to_user(uarg, &a, sizeof(a)) ? -EFAULT : 0;
out:
	mutex_unlock(&f->lock);
	return ret;
}

static long gx_ioc_submit(struct gx_ms_file *f, void __user *uarg)
{
	struct gx_ms_submit a;
	struct gx_ms_job *job;
	int ret;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (!a.duration_ns || a.duration_ns > GX_MS_MAX_DURATION_NS)
		return -EINVAL;

	job = kzalloc(sizeof(*job), GFP_KERNEL);
	if (!job)
		return -ENOMEM;
	job->hw = kzalloc(sizeof(*job->hw), GFP_KERNEL);
	if (!job->hw) {
		kfree(job);
		return -ENOMEM;
	}
	atomic64_inc(&gx_live_jobs);
	kref_init(&job->ref);		/* the file's */
	job->duration_ns = a.duration_ns;
	hrtimer_init(&job->hw->timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	job->hw->timer.function = gx_hw_done;

	mutex_lock(&f->lock);
	if (!f->gent) {
		ret = -ENOENT;	/* GX_MS_IOC_CREATE first */
		goto err_unlock;
	}
	job->ring = f->ring;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 103)
	ret = drm_sched_job_init(&job->base, &f->entity, 1, f, 0);
#else
	ret = drm_sched_job_init(&job->base, &f->entity, 1, f);
#endif
	if (ret)
		goto err_unlock;
	job->seq = ++f->next_seq;
	/* before arm: an armed job cannot be taken back */
	ret = xa_insert(&f->jobs, job->seq, job, GFP_KERNEL);
	if (ret)
		goto err_cleanup;
	job->submit_ns = ktime_get_ns();
	ret = gpuext_drmsched_job_arm(f->gent, &job->gjob, &job->base);
	if (ret)
		goto err_erase;
	job->finished = dma_fence_get(&job->base.s_fence->finished);
	kref_get(&job->ref);		/* the scheduler's, dropped by free_job */
	gpuext_drmsched_job_push(&job->gjob, &job->base);
	mutex_unlock(&f->lock);

	a.seq = job->seq;
	return copy_to_user(uarg, &a, sizeof(a)) ? -EFAULT : 0;

err_erase:
	xa_erase(&f->jobs, job->seq);
err_cleanup:
	f->next_seq--;
	drm_sched_job_cleanup(&job->base);
err_unlock:
	mutex_unlock(&f->lock);
	gx_job_put(job);
	return ret;
}

static long gx_ioc_wait(struct gx_ms_file *f, void __user *uarg)
{
	struct gx_ms_job *job;
	struct gx_ms_wait a;
	long left, timeout;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	mutex_lock(&f->lock);
	job = xa_load(&f->jobs, a.seq);
	if (job)
		kref_get(&job->ref);
	mutex_unlock(&f->lock);
	if (!job)
		return -ENOENT;	/* never submitted, or already waited for */

	timeout = a.timeout_ns < 0 ? MAX_SCHEDULE_TIMEOUT :
		  (long)nsecs_to_jiffies(a.timeout_ns);
	left = dma_fence_wait_timeout(job->finished, true, timeout);
	if (left <= 0) {
		gx_job_put(job);
		return left ? left : -ETIME;
	}
	a.submit_ns = job->submit_ns;
	a.start_ns = READ_ONCE(job->start_ns);
	a.end_ns = READ_ONCE(job->end_ns);
	a.status = job->finished->error;
	if (a.status) {		/* killed before it ran */
		a.start_ns = 0;
		a.end_ns = 0;
	}

	mutex_lock(&f->lock);
	if (xa_erase(&f->jobs, a.seq) == job)
		gx_job_put(job);	/* the file's */
	mutex_unlock(&f->lock);
	gx_job_put(job);
	return copy_to_user(uarg, &a, sizeof(a)) ? -EFAULT : 0;
}

static long gx_ioc_info(struct gx_ms_file *f, void __user *uarg)
{
	struct gpuext_drmsched_entity_info info;
	struct gx_ms_info a = {};

	mutex_lock(&f->lock);
	if (!f->gent) {
		mutex_unlock(&f->lock);
		return -ENOENT;
	}
	gpuext_drmsched_entity_get_info(f->gent, &info);
	mutex_unlock(&f->lock);

	a.task_id = info.ctx.task_id;
	a.engine = info.ctx.engine;
	a.tgid = info.ctx.tgid;
	memcpy(a.comm, info.ctx.comm, sizeof(a.comm));
	a.timeslice_us = info.ctx.timeslice_us;
	a.level = info.ctx.level;
	a.drm_priority = info.drm_priority;
	a.flags = (info.bound ? GX_MS_INFO_BOUND : 0) |
		  (info.bind_rejected ? GX_MS_INFO_REJECTED : 0) |
		  (info.policy_managed ? GX_MS_INFO_MANAGED : 0);
	a.gpu_ns = info.gpu_ns;
	a.jobs_done = info.jobs_done;
	a.yields = info.yields;
	return copy_to_user(uarg, &a, sizeof(a)) ? -EFAULT : 0;
}

static long gx_ioc_stats(void __user *uarg)
{
	struct gx_ms_stats a = {
		.live_jobs = atomic64_read(&gx_live_jobs),
		.live_entities = atomic64_read(&gx_live_entities),
		.nr_rings = nr_rings,
	};

	return copy_to_user(uarg, &a, sizeof(a)) ? -EFAULT : 0;
}

static long gx_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct gx_ms_file *f = file->private_data;
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case GX_MS_IOC_CREATE:
		return gx_ioc_create(f, uarg);
	case GX_MS_IOC_SUBMIT:
		return gx_ioc_submit(f, uarg);
	case GX_MS_IOC_WAIT:
		return gx_ioc_wait(f, uarg);
	case GX_MS_IOC_INFO:
		return gx_ioc_info(f, uarg);
	case GX_MS_IOC_STATS:
		return gx_ioc_stats(uarg);
	default:
		return -ENOTTY;
	}
}

static int gx_open(struct inode *inode, struct file *file)
{
	struct gx_ms_file *f = kzalloc(sizeof(*f), GFP_KERNEL);

	if (!f)
		return -ENOMEM;
	mutex_init(&f->lock);
	xa_init(&f->jobs);
	file->private_data = f;
	return 0;
}

static int gx_release(struct inode *inode, struct file *file)
{
	struct gx_ms_file *f = file->private_data;
	struct gx_ms_job *job;
	unsigned long seq;
	bool leak = false;

	if (f->gent) {
		/* queued jobs run first (or are killed with a SIGKILLed owner) */
		gpuext_drmsched_entity_destroy(f->gent);
		f->gent = NULL;
		xa_erase(&gx_task_ids, f->task_id);
		atomic64_dec(&gx_live_entities);
		/*
		 * The scheduler must hold no pointer to the entity now: a run
		 * queue that still lists it would walk freed memory
		 * (README.md, "The kill race"). Rather leak the file than free
		 * what a run queue points at.
		 */
		if (!list_empty(&f->entity.list) || !RB_EMPTY_NODE(&f->entity.rb_tree_node)) {
			WARN(1, "gx_mocksched: entity of task %llu still queued on its run queue after destroy: leaked, not freed\n",
			     f->task_id);
			leak = true;
		}
	}
	/* the jobs are the scheduler's or gone: the file's references go either way */
	xa_for_each(&f->jobs, seq, job)
		gx_job_put(job);
	xa_destroy(&f->jobs);
	if (leak)
		return 0;
	mutex_destroy(&f->lock);
	kfree(f);
	return 0;
}

static const struct file_operations gx_fops = {
	.owner = THIS_MODULE,
	.open = gx_open,
	.release = gx_release,
	.unlocked_ioctl = gx_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static struct miscdevice gx_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "gx_mocksched",
	.fops = &gx_fops,
	.mode = 0666,
};

/* ---- module ---- */

static int gx_ring_init(struct gx_ms_ring *ring, unsigned int idx)
{
	int ret;

	snprintf(ring->name, sizeof(ring->name), "gx_mock%u", idx);
	spin_lock_init(&ring->fence_lock);
	ring->fence_ctx = dma_fence_context_alloc(1);
	atomic64_set(&ring->fence_seq, 0);
	ring->sched_list[0] = &ring->sched;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 12, 114)
	{
		const struct drm_sched_init_args args = {
			.ops = &gx_sched_ops,
			.num_rqs = DRM_SCHED_PRIORITY_COUNT,
			.credit_limit = 1,
			.timeout = MAX_SCHEDULE_TIMEOUT,
			.name = ring->name,
			.dev = gx_misc.this_device,
		};

		ret = drm_sched_init(&ring->sched, &args);
	}
#else
	ret = drm_sched_init(&ring->sched, &gx_sched_ops, NULL,
			     DRM_SCHED_PRIORITY_COUNT, 1, 0, MAX_SCHEDULE_TIMEOUT,
			     NULL, NULL, ring->name, gx_misc.this_device);
#endif
	if (ret) {
		pr_err("%s: drm_sched_init failed: %d\n", ring->name, ret);
		return ret;
	}
	ring->sched_ready = true;
	ret = gpuext_drmsched_ring_register(&ring->gring, &ring->sched, idx);
	if (ret)
		return ret;
	ring->gring_ready = true;
	return 0;
}

static void gx_ring_fini(struct gx_ms_ring *ring)
{
	if (ring->gring_ready)
		gpuext_drmsched_ring_unregister(&ring->gring);
	if (ring->sched_ready)
		drm_sched_fini(&ring->sched);
}

static void gx_rings_fini(void)
{
	unsigned int i;

	for (i = 0; i < nr_rings; i++)
		gx_ring_fini(&gx_rings[i]);
	kfree(gx_rings);
	gx_rings = NULL;
}

static int __init gx_mocksched_init(void)
{
	unsigned int i;
	int ret;

	if (!nr_rings || nr_rings > GX_MS_MAX_RINGS) {
		pr_err("nr_rings=%u: must be 1..%d\n", nr_rings, GX_MS_MAX_RINGS);
		return -EINVAL;
	}
	gx_rings = kcalloc(nr_rings, sizeof(*gx_rings), GFP_KERNEL);
	if (!gx_rings)
		return -ENOMEM;
	/* the misc device first: the schedulers name it as their device */
	ret = misc_register(&gx_misc);
	if (ret)
		goto err_free;
	for (i = 0; i < nr_rings; i++) {
		ret = gx_ring_init(&gx_rings[i], i);
		if (ret)
			goto err_rings;
	}
	pr_info("%u ring(s), /dev/%s\n", nr_rings, gx_misc.name);
	return 0;

err_rings:
	misc_deregister(&gx_misc);
	gx_rings_fini();
	return ret;
err_free:
	kfree(gx_rings);
	gx_rings = NULL;
	return ret;
}

static void __exit gx_mocksched_exit(void)
{
	/* no file is open (the module is pinned while one is) */
	misc_deregister(&gx_misc);
	/* but jobs of closed files may still run: their timers and free_job need us */
	wait_var_event(&gx_live_jobs, !atomic64_read(&gx_live_jobs));
	gx_rings_fini();
	/* hardware fences and yield fences are freed with RCU */
	rcu_barrier();
}

module_init(gx_mocksched_init);
module_exit(gx_mocksched_exit);
MODULE_DESCRIPTION("gpuext mock drm_sched GPU backend (hooks-drmsched)");
MODULE_LICENSE("GPL");
MODULE_SOFTDEP("pre: gpu-sched gpuext");

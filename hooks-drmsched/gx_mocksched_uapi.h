/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The ioctl ABI of /dev/gx_mocksched, the mock drm_sched backend
 * (gx_mocksched.ko). Shared by the module and user-space tests.
 *
 * One open file = at most one scheduling entity (a task group):
 *   GX_MS_IOC_CREATE  the entity, on ring @ring, for process @tgid/@comm
 *                     (0 / "" = the caller's); gpuext task_init runs here
 *   GX_MS_IOC_SUBMIT  a job that occupies the ring for @duration_ns once it
 *                     runs; the first one binds the task (-EPERM if the policy
 *                     refuses: nothing is queued, every later one fails too)
 *   GX_MS_IOC_WAIT    waits for a job (by @seq) and returns its submit, start
 *                     and end times (CLOCK_MONOTONIC ns) and its status;
 *                     the record is consumed
 *   GX_MS_IOC_INFO    the entity's gpuext task ctx and its drm priority
 *   GX_MS_IOC_STATS   module-wide counts (leak checks)
 * close() destroys the entity (queued jobs still run; task_destroy follows).
 */
#ifndef GX_MOCKSCHED_UAPI_H
#define GX_MOCKSCHED_UAPI_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define GX_MS_DEV "/dev/gx_mocksched"
#define GX_MS_COMM_LEN 16
#define GX_MS_MAX_DURATION_NS (10ULL * 1000 * 1000 * 1000)	/* 10 s */

struct gx_ms_create {
	__u32 ring;		/* in: 0 .. nr_rings-1 */
	__u32 tgid;		/* in: 0 = caller's */
	char comm[GX_MS_COMM_LEN];	/* in: "" = caller's */
	/*
	 * in: 0 = the lowest free id, else this one (-EEXIST while another
	 * entity has it: for scenario replay); out: the task id
	 */
	__u64 task_id;
};

struct gx_ms_submit {
	__u64 duration_ns;	/* in: 1 .. GX_MS_MAX_DURATION_NS */
	__u64 seq;		/* out: 1, 2, ... per file */
};

struct gx_ms_wait {
	__u64 seq;		/* in */
	__s64 timeout_ns;	/* in: < 0 waits forever */
	__u64 submit_ns;	/* out: when SUBMIT queued it */
	__u64 start_ns;		/* out: when the ring started it (0: never ran) */
	__u64 end_ns;		/* out: when it completed (0: never ran) */
	__s32 status;		/* out: 0, or the job's fence error (-ESRCH: killed) */
	__u32 pad;
};

/* GX_MS_INFO_* flags */
#define GX_MS_INFO_BOUND	(1u << 0)
#define GX_MS_INFO_REJECTED	(1u << 1)
#define GX_MS_INFO_MANAGED	(1u << 2)

/* drm_priority values: enum drm_sched_priority of Linux 6.12 */
#define GX_MS_DRM_PRIO_KERNEL	0
#define GX_MS_DRM_PRIO_HIGH	1
#define GX_MS_DRM_PRIO_NORMAL	2
#define GX_MS_DRM_PRIO_LOW	3

struct gx_ms_info {
	__u64 task_id;
	__u32 engine;
	__u32 tgid;
	char comm[GX_MS_COMM_LEN];
	__u32 timeslice_us;	/* gpu_task_ctx.timeslice_us */
	__u32 level;		/* gpu_task_ctx.level, GPU_LEVEL_* */
	__u32 drm_priority;	/* the entity's run queue, GX_MS_DRM_PRIO_* */
	__u32 flags;		/* GX_MS_INFO_* */
	__u64 gpu_ns;		/* GPU time of its finished jobs */
	__u64 jobs_done;
	__u64 yields;		/* timeslice-budget yields */
};

struct gx_ms_stats {
	__u64 live_jobs;	/* job records not yet freed */
	__u64 live_entities;
	__u32 nr_rings;
	__u32 pad;
};

#define GX_MS_IOC_MAGIC 0xB7
#define GX_MS_IOC_CREATE _IOWR(GX_MS_IOC_MAGIC, 1, struct gx_ms_create)
#define GX_MS_IOC_SUBMIT _IOWR(GX_MS_IOC_MAGIC, 2, struct gx_ms_submit)
#define GX_MS_IOC_WAIT	 _IOWR(GX_MS_IOC_MAGIC, 3, struct gx_ms_wait)
#define GX_MS_IOC_INFO	 _IOR(GX_MS_IOC_MAGIC, 4, struct gx_ms_info)
#define GX_MS_IOC_STATS	 _IOR(GX_MS_IOC_MAGIC, 5, struct gx_ms_stats)

#endif /* GX_MOCKSCHED_UAPI_H */

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The simulator's scheduling model: one GPU engine time-sliced among task
 * groups (NVIDIA TSGs, drm_sched entities), driven by tenants that submit
 * kernels, with a gpu_sched_ops policy at the three lifecycle hooks.
 *
 * The model (what sim_sched.c implements):
 *
 * - One task group per tenant (a CUDA context). It is created at the
 *   tenant's start time (hook task_init: the policy may set its timeslice and
 *   interleave level with bpf_gpu_set_attr), bound at its first submission
 *   (hook task_bind: the policy may refuse with bpf_gpu_reject_bind; every
 *   submission of that tenant then fails and is counted), and destroyed when
 *   the tenant has finished, or at the end (hook task_destroy).
 *
 * - The runlist: the bound groups, laid out the way NVIDIA's runlist builder
 *   interleaves levels (the open nvgpu driver, common/fifo/runlist.c, does
 *   this in the open): every MEDIUM entry is preceded by all HIGH entries and
 *   every LOW entry by the MEDIUM sequence and all HIGH entries. With one
 *   HIGH group and four MEDIUM ones the runlist reads H M1 H M2 H M3 H M4: a
 *   higher level gets more turns; it does not preempt on arrival (the
 *   hardware only switches at a timeslice expiry or when a group runs out of
 *   work). Default attributes are NVIDIA's: 1024 us, MEDIUM (DESIGN.md).
 *
 * - The scheduler walks the runlist in order. An entry with no pending
 *   kernel is skipped at no cost. An entry with work runs until its
 *   timeslice expires or it runs out of work (back-to-back kernels keep
 *   running inside one slice). Switching to a different group costs
 *   switch_ns when the previous one went idle (nothing to save: the NVIDIA
 *   DRIVE OS scheduling guide notes that a context switch after work completes
 *   in its timeslice is minimal because the GPU is idle) and preempt_ns when
 *   the previous one was cut off with work left (its SM state is saved and
 *   later restored). Defaults: 5 us and 50 us. 50 us is the estimate of
 *   saving and restoring the register files and shared memory of a whole
 *   GPU (tens of MB at hundreds of GB/s); Chimera (Park et al., ISCA 2015)
 *   and Lin, Nyland & Zhou (SC 2016) measure context-switch preemption in
 *   the same tens-of-microseconds range.
 *
 * - Tenants: an LC tenant submits short kernels in a closed loop with a
 *   think time (jittered uniformly in [0.5, 1.5] x think, deterministic from
 *   the seed); a BE tenant submits long kernels back to back (think 0).
 *   Explicit arrival times (open loop) are supported too. A kernel's
 *   latency is its completion time minus its submission time.
 *
 * The seed this reproduces: LPC 2025 slides / talk outline p.14, 2 LC + 4
 * BE compute-bound processes; a policy giving LC a 1 s timeslice and BE
 * 200 us cut LC P99 latency by 95 % (the ABI caps timeslices at 100 ms).
 */
#ifndef GPUEXT_SIM_SCHED_H
#define GPUEXT_SIM_SCHED_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gpuext/policy.h"
#include "../hal.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SIM_SCHED_MAX_TENANTS 32
#define SIM_SCHED_SWITCH_NS 5000ULL	/* default cost of a switch after an idle group */
#define SIM_SCHED_PREEMPT_NS 50000ULL	/* default cost of preempting a busy group */
#define SIM_SCHED_NO_COST UINT64_MAX	/* set switch_ns / preempt_ns to this for a free switch */
#define SIM_SCHED_HORIZON_NS 2000000000ULL

/* One process using the GPU. Copied by sim_sched_run(). */
struct sim_tenant_spec {
	const char *comm;	/* process name (15 characters kept), e.g. "lc_infer" */
	uint32_t tgid;		/* 0: 2000 + index */
	uint32_t engine;	/* reported to the policy; all tenants share one runlist */
	uint64_t start_ns;	/* context creation (task_init); first submission at the same time */
	uint64_t kernel_ns;	/* run time of each kernel, alone on the GPU (> 0) */
	uint64_t think_ns;	/* closed loop: completion -> next submission, jittered; 0 = back to back */
	uint64_t count;		/* kernels to submit; 0 = until the horizon */
	const uint64_t *arrivals; /* open loop: @count ascending submission times (overrides think) */
};

struct sim_sched_opts {
	size_t sz;
	/* Where the policy's kfuncs run: the runtime the policy's object was opened in. */
	struct gpuext_runtime *rt;
	/* A GPUEXT_POLICY_SCHED policy, or NULL for the default (stock NVIDIA). */
	struct gpuext_policy *policy;
	/* No submissions after this (0: SIM_SCHED_HORIZON_NS); queued work still completes. */
	uint64_t horizon_ns;
	uint64_t switch_ns;	/* 0: SIM_SCHED_SWITCH_NS */
	uint64_t preempt_ns;	/* 0: SIM_SCHED_PREEMPT_NS */
	uint64_t seed;		/* think-time jitter */
	/* A group that becomes runnable ends the running slice of a lower level
	 * at once (a GPreempt-style extension; off = NVIDIA's behaviour). */
	bool level_preempts;
	gpuext_hal_event_fn on_event;
	void *event_user;
};

struct sim_tenant_result {
	char comm[16];
	uint32_t tgid;
	uint64_t task_id;
	uint32_t timeslice_us;	/* in effect at the end */
	uint32_t level;
	bool rejected;		/* the bind was refused */
	uint64_t submitted, completed, failed;	/* failed: refused submissions */
	uint64_t p50_ns, p99_ns, max_ns, mean_ns;	/* kernel latency */
	uint64_t gpu_ns;	/* time its kernels ran */
	double gpu_share;	/* gpu_ns / elapsed */
	double kernels_per_s;
};

struct sim_sched_result {
	uint64_t elapsed_ns;	/* until the last kernel completed */
	uint64_t busy_ns;	/* kernels running */
	uint64_t overhead_ns;	/* switching and preempting */
	uint64_t switches, preemptions;
	double busy_fraction;	/* busy_ns / elapsed_ns */
	double kernels_per_s;	/* all tenants */
	bool ejected;		/* the policy was ejected during the run */
	char eject_reason[160];
	size_t tenant_cnt;
	struct sim_tenant_result tenants[SIM_SCHED_MAX_TENANTS];
};

/*
 * Runs @n tenants to completion (or the horizon) under the policy of
 * @opts. Deterministic. 0, or -EINVAL (bad spec: the message goes through
 * opts->rt's log), -ENOMEM.
 */
int sim_sched_run(const struct sim_tenant_spec *tenants, size_t n,
		  const struct sim_sched_opts *opts, struct sim_sched_result *out);

/* Prints one table: a block of rows per result, labelled (e.g. "default", "lc_be"). */
void sim_sched_print(FILE *f, const char *const *labels, const struct sim_sched_result *const *res,
		     size_t n);

/* The tenant with this comm in @r, or NULL. */
const struct sim_tenant_result *sim_sched_tenant(const struct sim_sched_result *r,
						 const char *comm);

/* Preset tenant mixes, for the CLI and benchmarks. */
struct sim_sched_scenario {
	const char *name;
	const char *summary;
	size_t tenant_cnt;
	struct sim_tenant_spec tenants[8];
	uint64_t horizon_ns;
};

const struct sim_sched_scenario *sim_sched_scenario_list(size_t *count);
const struct sim_sched_scenario *sim_sched_scenario_find(const char *name);

/*
 * The same model driven one driver event at a time (the sim backend's
 * scheduling side; conformance scenarios): task groups are created, bound
 * and destroyed explicitly, the attached policy's hooks run at each, and
 * events go to the sink. No kernels run. Owned by the sim device.
 */
struct sim_sched_dev;
int sim_sched_dev__new(struct gpuext_runtime *rt, struct sim_sched_dev **out);
void sim_sched_dev__free(struct sim_sched_dev *d);
int sim_sched_dev__attach(struct sim_sched_dev *d, struct gpuext_policy *p);	/* -EBUSY */
int sim_sched_dev__detach(struct sim_sched_dev *d);				/* -ENOENT */
void sim_sched_dev__set_event_sink(struct sim_sched_dev *d, gpuext_hal_event_fn fn, void *user);
int sim_sched_dev__task_create(struct sim_sched_dev *d, uint64_t id, uint32_t tgid,
			       const char *comm);			/* task_init */
int sim_sched_dev__task_bind(struct sim_sched_dev *d, uint64_t id);	/* -EPERM: refused */
int sim_sched_dev__task_destroy(struct sim_sched_dev *d, uint64_t id);
int sim_sched_dev__task_attr(struct sim_sched_dev *d, uint64_t id, uint32_t *timeslice_us,
			     uint32_t *level);

/* GPU_LEVEL_* as text ("LOW", "MEDIUM", "HIGH", "?"). */
const char *sim_sched_level_name(uint32_t level);

#ifdef __cplusplus
}
#endif
#endif

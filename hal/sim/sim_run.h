/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One simulator run end to end: a workload (or a recorded trace) replayed
 * through the memory model with a policy object attached (or the stock
 * driver), and a scheduling mix run under a policy. Used by `gpuext sim`,
 * the main job, tests and benchmarks.
 */
#ifndef GPUEXT_SIM_RUN_H
#define GPUEXT_SIM_RUN_H

#include "sim_mem.h"
#include "sim_sched.h"

struct sim_run_opts {
	size_t sz;
	struct gpuext_runtime *rt;	/* a fresh runtime per run; the policy's maps live here */
	uint64_t gpu_mem_bytes;		/* 0: 1 GiB */
	uint64_t max_accesses;		/* 0: the workload's natural end */
	uint64_t seed;
	const char *mem_config;		/* extra sim_mem config text ("h2d_gbps=16,...") or NULL */
	uint32_t call_budget;		/* per policy call; 0: the default */
	bool jit;			/* run the policy's hooks as machine code (see policy.h) */
};

struct sim_run_result {
	struct sim_mem_stats total;
	struct sim_mem_stats tenant[2];	/* per tgid for two-tenant mixes */
	uint32_t tenant_tgid[2];
	size_t tenant_cnt;
	double oversub;			/* footprint / GPU memory */
	char policy_name[32];		/* "stock" without a policy */
	char ejected[192];		/* why the policy was ejected, "" if it was not */
	uint64_t policy_insns;		/* interpreted instructions, all hooks */
};

/*
 * Runs @workload (a spec like "stride" or "moe-decode:top_k=4") or, when
 * @trace_path is set, a recorded trace, with the memory policy in
 * @policy_path attached (NULL: the stock driver). 0 or a negative errno; the
 * reason is logged through opts->rt.
 */
int sim_run_mem(const char *policy_path, const char *workload, const char *trace_path,
		const struct sim_run_opts *opts, struct sim_run_result *out);

/* Runs the scheduling mix @scenario (see sim_sched.h) under @policy_path (NULL: default). */
int sim_run_sched(const char *policy_path, const char *scenario, const struct sim_run_opts *opts,
		  struct sim_sched_result *out, char *policy_name, size_t name_len);

#endif

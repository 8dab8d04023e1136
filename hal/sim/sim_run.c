/* SPDX-License-Identifier: Apache-2.0 */
/* One simulator run end to end (see sim_run.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "sim_run.h"
#include "trace_io.h"
#include "workload.h"

#define CHUNK 4096

static int open_policy(struct gpuext_runtime *rt, const char *path, enum gpuext_policy_kind want,
		       uint32_t budget, bool jit, struct gpuext_object **obj,
		       struct gpuext_policy **pol)
{
	GPUEXT_OPTS(gpuext_policy_opts, po, .call_budget = budget, .jit = jit);
	int err;

	err = gpuext_object__open_file(rt, path, NULL, obj);
	if (err) {
		gpuext_log(rt, GPUEXT_LOG_WARN, "sim: cannot open policy '%s': %s", path,
			   strerror(-err));
		return err;
	}
	err = gpuext_policy__open(*obj, &po, pol);
	if (err) {
		gpuext_object__close(*obj);
		*obj = NULL;
		return err;
	}
	if (gpuext_policy__kind(*pol) != want) {
		gpuext_log(rt, GPUEXT_LOG_WARN, "sim: '%s' is a %s policy, a %s policy is needed here",
			   path, gpuext_policy__kind(*pol) == GPUEXT_POLICY_MEM ? "memory" : "scheduling",
			   want == GPUEXT_POLICY_MEM ? "memory" : "scheduling");
		gpuext_policy__close(*pol);
		gpuext_object__close(*obj);
		*pol = NULL;
		*obj = NULL;
		return -EINVAL;
	}
	return 0;
}

int sim_run_mem(const char *policy_path, const char *workload, const char *trace_path,
		const struct sim_run_opts *opts, struct sim_run_result *out)
{
	struct gpuext_runtime *rt = opts->rt;
	uint64_t gpu_mem = opts->gpu_mem_bytes ? opts->gpu_mem_bytes : (1ULL << 30);
	struct sim_mem_config cfg = { .sz = sizeof(cfg) };
	struct gpuext_object *obj = NULL;
	struct gpuext_policy *pol = NULL;
	struct sim_workload *w = NULL;
	struct sim_trace tr = { 0 };
	struct sim_mem *m = NULL;
	struct sim_access *buf = NULL;
	const struct sim_range *ranges;
	size_t nranges;
	char err_text[256];
	int err;

	memset(out, 0, sizeof(*out));
	snprintf(out->policy_name, sizeof(out->policy_name), "stock");
	if (opts->mem_config && sim_mem_config__parse(opts->mem_config, &cfg, err_text,
							  sizeof(err_text))) {
		gpuext_log(rt, GPUEXT_LOG_WARN, "sim: --config: %s", err_text);
		return -EINVAL;
	}
	cfg.capacity_blocks = gpu_mem / GPU_BLOCK_SIZE;
	if (trace_path) {
		err = sim_trace__load(trace_path, &tr, err_text, sizeof(err_text));
		if (err) {
			gpuext_log(rt, GPUEXT_LOG_WARN, "sim: trace: %s", err_text);
			return err;
		}
		ranges = tr.ranges;
		nranges = tr.range_cnt;
	} else {
		GPUEXT_OPTS(sim_workload_opts, wo, .gpu_mem_bytes = gpu_mem, .seed = opts->seed,
			    .max_accesses = opts->max_accesses, .rt = rt);
		err = sim_workload__new(workload, &wo, &w);
		if (err)
			return err;
		nranges = sim_workload__ranges(w, &ranges);
		out->oversub = sim_workload__oversub(w);
	}
	err = sim_mem__new(rt, &cfg, &m);
	if (err)
		goto out;
	for (size_t i = 0; i < nranges && !err; i++)
		err = sim_mem__add_range(m, &ranges[i]);
	if (err)
		goto out;
	if (policy_path) {
		err = open_policy(rt, policy_path, GPUEXT_POLICY_MEM, opts->call_budget, opts->jit, &obj,
				  &pol);
		if (err)
			goto out;
		snprintf(out->policy_name, sizeof(out->policy_name), "%s", gpuext_policy__name(pol));
		err = sim_mem__attach(m, pol);
		if (err)
			goto out;
	}
	if (trace_path) {
		sim_mem__access_n(m, tr.acc, tr.acc_cnt);
	} else {
		buf = malloc(CHUNK * sizeof(*buf));
		if (!buf) {
			err = -ENOMEM;
			goto out;
		}
		for (size_t n; (n = sim_workload__next(w, buf, CHUNK)) > 0;)
			sim_mem__access_n(m, buf, n);
	}
	sim_mem__flush(m);
	sim_mem__stats(m, &out->total);
	/* per tenant (mixes): the distinct owners of the ranges */
	for (size_t i = 0; i < nranges && out->tenant_cnt < 2; i++) {
		bool seen = false;

		for (size_t k = 0; k < out->tenant_cnt; k++)
			seen |= out->tenant_tgid[k] == ranges[i].tgid;
		if (!seen)
			out->tenant_tgid[out->tenant_cnt++] = ranges[i].tgid;
	}
	for (size_t k = 0; k < out->tenant_cnt; k++)
		sim_mem__tgid_stats(m, out->tenant_tgid[k], &out->tenant[k]);
	if (pol) {
		struct gpuext_policy_stats ps;

		gpuext_policy__stats(pol, &ps);
		out->policy_insns = ps.insns;
		if (gpuext_policy__ejected(pol))
			snprintf(out->ejected, sizeof(out->ejected), "%s", gpuext_policy__ejected(pol));
		sim_mem__detach(m, GPUEXT_POLICY_MEM);
	}
out:
	free(buf);
	sim_mem__free(m);
	gpuext_policy__close(pol);
	gpuext_object__close(obj);
	sim_workload__free(w);
	sim_trace__free(&tr);
	return err;
}

int sim_run_sched(const char *policy_path, const char *scenario, const struct sim_run_opts *opts,
		  struct sim_sched_result *out, char *policy_name, size_t name_len)
{
	const struct sim_sched_scenario *sc = sim_sched_scenario_find(scenario);
	struct gpuext_object *obj = NULL;
	struct gpuext_policy *pol = NULL;
	int err;

	if (!sc) {
		gpuext_log(opts->rt, GPUEXT_LOG_WARN, "sim: no scheduling scenario '%s'", scenario);
		return -ENOENT;
	}
	snprintf(policy_name, name_len, "default");
	if (policy_path) {
		err = open_policy(opts->rt, policy_path, GPUEXT_POLICY_SCHED, opts->call_budget, opts->jit,
				  &obj, &pol);
		if (err)
			return err;
		snprintf(policy_name, name_len, "%s", gpuext_policy__name(pol));
	}
	GPUEXT_OPTS(sim_sched_opts, so, .rt = opts->rt, .policy = pol, .horizon_ns = sc->horizon_ns,
		    .seed = opts->seed);
	err = sim_sched_run(sc->tenants, sc->tenant_cnt, &so, out);
	gpuext_policy__close(pol);
	gpuext_object__close(obj);
	return err;
}

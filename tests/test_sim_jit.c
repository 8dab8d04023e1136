/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A policy's hooks as JIT machine code must make exactly the decisions the
 * reference interpreter makes: the same simulator run, both ways, for every
 * shipped memory policy on two workloads, gives identical statistics.
 */
#include <dirent.h>
#include <string.h>
#include <unistd.h>

#include "sim_run.h"
#include "testlib.h"

static void compare(const char *policy, const char *workload)
{
	struct sim_run_result a, b;
	struct gpuext_runtime *rt1 = NULL, *rt2 = NULL;
	GPUEXT_OPTS(gpuext_runtime_opts, ro);

	CHECK_EQ_INT(gpuext_runtime__new(&ro, &rt1), 0);
	CHECK_EQ_INT(gpuext_runtime__new(&ro, &rt2), 0);
	GPUEXT_OPTS(sim_run_opts, oi, .rt = rt1, .max_accesses = 200000, .seed = 3,
		    .gpu_mem_bytes = 256 << 20);
	GPUEXT_OPTS(sim_run_opts, oj, .rt = rt2, .max_accesses = 200000, .seed = 3,
		    .gpu_mem_bytes = 256 << 20, .jit = true);
	CHECK_EQ_INT(sim_run_mem(policy, workload, NULL, &oi, &a), 0);
	CHECK_EQ_INT(sim_run_mem(policy, workload, NULL, &oj, &b), 0);
	CHECK(a.total.accesses > 0);
	CHECK_EQ_U64(b.total.faults, a.total.faults);
	CHECK_EQ_U64(b.total.evictions, a.total.evictions);
	CHECK_EQ_U64(b.total.prefetched_pages, a.total.prefetched_pages);
	CHECK_EQ_U64(b.total.time_ns, a.total.time_ns);
	CHECK(memcmp(&a.total, &b.total, sizeof(a.total)) == 0);
	CHECK_STR_CONTAINS(b.ejected[0] ? b.ejected : "not ejected", "not ejected");
	gpuext_runtime__free(rt1);
	gpuext_runtime__free(rt2);
}

int main(void)
{
	static const char *const mem[] = { "lru", "mru", "lfu", "fifo_second_chance", "prefetch_seq",
					   "prefetch_stride", "lfu_stride", "mem_priority" };
	char path[512];

	for (size_t i = 0; i < sizeof(mem) / sizeof(mem[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s.bpf.o", GPUEXT_POLICY_DIR, mem[i]);
		CHECK(access(path, R_OK) == 0);
		compare(path, "stride");
		compare(path, "mix-infer-train");
	}
	return test_done("sim_jit");
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Simulator benchmark: accesses (events) per second of the memory model,
 * with the stock driver and with a policy interpreted at every hook, and how
 * the time grows with trace length (10^5 .. 10^8 accesses).
 *
 *   bench_sim [--policy OBJ] [--max N] [--workload SPEC]
 *
 * Each size is run once per configuration in the same process, one after
 * the other; the table gives wall time, accesses/s, and the growth factor
 * between consecutive sizes (10x more accesses should take ~10x longer).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "sim_run.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int run(const char *policy, const char *workload, uint64_t n, bool jit, double *secs,
	       struct sim_run_result *res)
{
	struct gpuext_runtime *rt = NULL;
	GPUEXT_OPTS(gpuext_runtime_opts, ro);
	int err = gpuext_runtime__new(&ro, &rt);

	if (err)
		return err;
	GPUEXT_OPTS(sim_run_opts, so, .rt = rt, .max_accesses = n, .seed = 7, .jit = jit);
	double t0 = now_s();

	err = sim_run_mem(policy, workload, NULL, &so, res);
	*secs = now_s() - t0;
	gpuext_runtime__free(rt);
	return err;
}

int main(int argc, char **argv)
{
	const char *policy = "build/policies/lfu_stride.bpf.o";
	/* a workload long enough for 10^8 accesses: training iterations repeat */
	const char *workload = "train-epochs:iterations=1000";
	uint64_t max = 100000000ULL;
	struct utsname u;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--policy") && i + 1 < argc)
			policy = argv[++i];
		else if (!strcmp(argv[i], "--max") && i + 1 < argc)
			max = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--workload") && i + 1 < argc)
			workload = argv[++i];
		else {
			fprintf(stderr, "usage: bench_sim [--policy OBJ] [--max N] [--workload SPEC]\n");
			return 2;
		}
	}
	if (access(policy, R_OK)) {
		fprintf(stderr, "bench_sim: no policy object '%s' (build first, or pass --policy)\n",
			policy);
		return 1;
	}
	uname(&u);
	printf("gpuext simulator benchmark: %s, %ld CPUs, %s %s\n", workload,
	       sysconf(_SC_NPROCESSORS_ONLN), u.sysname, u.release);
	printf("GPU memory 1 GiB; one run per cell, wall time; policy: %s\n\n", policy);
	printf("%12s | %9s %10s %7s | %9s %10s %7s | %9s %10s %7s | %7s %7s\n", "accesses", "stock s",
	       "acc/s", "growth", "interp s", "acc/s", "growth", "jit s", "acc/s", "growth",
	       "interp", "jit");
	double prev_s = 0, prev_p = 0, prev_j = 0;

	for (uint64_t n = 100000; n <= max; n *= 10) {
		struct sim_run_result rs, rp, rj;
		double ts, tp, tj;

		if (run(NULL, workload, n, false, &ts, &rs) || run(policy, workload, n, false, &tp, &rp) ||
		    run(policy, workload, n, true, &tj, &rj)) {
			fprintf(stderr, "bench_sim: run of %llu accesses failed\n", (unsigned long long)n);
			return 1;
		}
		if (memcmp(&rp.total, &rj.total, sizeof(rp.total))) {
			fprintf(stderr, "bench_sim: the JIT and the interpreter disagree at %llu accesses\n",
				(unsigned long long)n);
			return 1;
		}
		printf("%12llu | %9.3f %10.3g %6.1fx | %9.3f %10.3g %6.1fx | %9.3f %10.3g %6.1fx | %6.1fx %6.1fx\n",
		       (unsigned long long)rs.total.accesses, ts, rs.total.accesses / ts,
		       prev_s ? ts / prev_s : 0.0, tp, rp.total.accesses / tp, prev_p ? tp / prev_p : 0.0,
		       tj, rj.total.accesses / tj, prev_j ? tj / prev_j : 0.0, tp / ts, tj / ts);
		fflush(stdout);
		prev_s = ts;
		prev_p = tp;
		prev_j = tj;
	}
	printf("\ngrowth: time relative to the previous size (10x the accesses). The last two columns:\n"
	       "the policy's run over the stock run, hooks in the reference interpreter and as JIT\n"
	       "machine code (the two give identical simulator results, checked).\n");
	return 0;
}

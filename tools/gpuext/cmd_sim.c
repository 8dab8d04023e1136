/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpuext sim: the shipped policies against the stock driver on the built-in
 * simulator (the main job), or one policy on one workload/trace.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "internal.h"
#include "sim_run.h"
#include "workload.h"

#ifndef GPUEXT_BUILD_POLICY_DIR
#define GPUEXT_BUILD_POLICY_DIR "policies"
#endif

static void help(FILE *f)
{
	fprintf(f,
		"usage: gpuext sim [options]                       the main job (tables + plot)\n"
		"       gpuext sim --workload NAME [--policy OBJ]   one memory run\n"
		"       gpuext sim --trace FILE [--policy OBJ]      replay a recorded trace\n"
		"       gpuext sim --sched MIX [--policy OBJ]       one scheduling run\n"
		"       gpuext sim --list                           workloads, mixes, policies\n"
		"\n"
		"Runs eBPF policies in a model of NVIDIA's UVM driver (2 MiB blocks, 256-fault\n"
		"batches, the 51%% prefetch tree, free -> unused -> used eviction) and of its TSG\n"
		"runlist (timeslices, interleave levels). Without --workload/--trace/--sched it runs\n"
		"every shipped memory policy on every workload and the scheduling policies on the\n"
		"LC/BE mix, prints both tables and writes a plot. Times are modelled, not measured.\n"
		"\n"
		"options:\n"
		"  --policy OBJ      a policy object (build/policies/*.bpf.o); none = the stock driver\n"
		"  --policy-dir DIR  where the main job finds policies (default: the build's)\n"
		"  --gpu-mem SIZE    modelled GPU memory, e.g. 512M, 1G (default 1G)\n"
		"  --accesses N      stop each workload after N accesses (default 0: its natural end)\n"
		"  --seed N          workload seed (default 1)\n"
		"  --config K=V,...  memory model knobs: h2d_gbps, d2h_gbps, batch, batch_overhead_ns, ...\n"
		"  --json FILE       also write the results as JSON ('-' = stdout)\n"
		"  --plot FILE.svg   where the main job draws its plot (default gpuext-sim.svg)\n"
		"  -j N              parallel runs (default: the number of CPUs)\n"
		"  --jit             run policy hooks as machine code (the host JIT) where the verifier\n"
		"                    bounds their length; results are identical, runs are faster\n"
		"\n"
		"examples:\n"
		"  gpuext sim\n"
		"  gpuext sim --workload moe-decode --policy build/policies/lfu_stride.bpf.o\n"
		"  gpuext sim --sched lc-be --policy build/policies/lc_be.bpf.o\n");
}

static uint64_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	switch (*end) {
	case 'k': case 'K': v *= 1024; break;
	case 'm': case 'M': v *= 1024 * 1024; break;
	case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
	}
	return (uint64_t)v;
}

struct job {
	const char *workload;
	char policy_path[512];
	struct sim_run_result res;
	int err;
};

struct sim_cli {
	uint64_t gpu_mem, accesses, seed;
	const char *config;
	int jobs;
	bool jit;
};

static int run_one(const struct sim_cli *c, struct job *j)
{
	struct gpuext_runtime *rt = NULL;
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = cli_print);
	int err = gpuext_runtime__new(&ro, &rt);

	if (err)
		return err;
	GPUEXT_OPTS(sim_run_opts, so, .rt = rt, .gpu_mem_bytes = c->gpu_mem,
		    .max_accesses = c->accesses, .seed = c->seed, .mem_config = c->config,
		    .jit = c->jit);
	err = sim_run_mem(j->policy_path[0] ? j->policy_path : NULL, j->workload, NULL, &so, &j->res);
	gpuext_runtime__free(rt);
	return err;
}

/* Runs the jobs in up to c->jobs child processes; results come back through pipes. */
static void run_all(const struct sim_cli *c, struct job *jobs, size_t n)
{
	size_t next = 0, done = 0, running = 0;
	struct { pid_t pid; int fd; size_t idx; } slot[64];
	int width = c->jobs < 1 ? 1 : c->jobs > 64 ? 64 : c->jobs;

	while (done < n) {
		while (running < (size_t)width && next < n) {
			int p[2];
			pid_t pid;

			if (pipe(p)) {
				jobs[next].err = -errno;
				next++;
				done++;
				continue;
			}
			fflush(NULL);
			pid = fork();
			if (pid == 0) {
				struct job *j = &jobs[next];

				close(p[0]);
				j->err = run_one(c, j);
				if (write(p[1], j, sizeof(*j)) != (ssize_t)sizeof(*j))
					_exit(1);
				_exit(0);
			}
			close(p[1]);
			if (pid < 0) {
				close(p[0]);
				jobs[next].err = -errno;
				next++;
				done++;
				continue;
			}
			slot[running].pid = pid;
			slot[running].fd = p[0];
			slot[running].idx = next++;
			running++;
		}
		/* collect the oldest */
		struct job tmp;
		ssize_t got = read(slot[0].fd, &tmp, sizeof(tmp));
		int status;

		close(slot[0].fd);
		waitpid(slot[0].pid, &status, 0);
		if (got == (ssize_t)sizeof(tmp)) {
			jobs[slot[0].idx].res = tmp.res;
			jobs[slot[0].idx].err = tmp.err;
		} else {
			jobs[slot[0].idx].err = -EIO;
		}
		done++;
		if (isatty(2))
			fprintf(stderr, "\r  %zu/%zu runs", done, n);
		else if (done % 10 == 0 || done == n)
			fprintf(stderr, "  %zu/%zu runs done\n", done, n);
		memmove(&slot[0], &slot[1], (running - 1) * sizeof(slot[0]));
		running--;
	}
	if (isatty(2))
		fprintf(stderr, "\r%*s\r", 30, "");
}

static double ms(uint64_t ns) { return ns / 1e6; }
static double gb(uint64_t b) { return b / 1e9; }

/* The memory policies the main job compares, in table order (those present are used). */
static const char *const mem_policies[] = {
	"fifo", "lru", "mru", "lfu", "fifo_second_chance", "prefetch_max", "prefetch_seq",
	"prefetch_stride", "lfu_stride", "mem_priority",
};
static const char *const main_workloads[] = {
	"seq-scan", "random", "stride", "moe-decode", "train-epochs", "gnn-sample", "mix-infer-train",
};

#define NPOL (sizeof(mem_policies) / sizeof(mem_policies[0]))
#define NWL (sizeof(main_workloads) / sizeof(main_workloads[0]))

static void svg_plot(FILE *f, struct job *jobs, size_t npol, const char *const *pol_names)
{
	const int W = 1100, H = 480, left = 60, right = 190, top = 40, bottom = 70;
	const int pw = W - left - right, ph = H - top - bottom;
	double maxv = 1.0;
	static const char *const colors[] = { "#888888", "#1f77b4", "#ff7f0e", "#2ca02c",
					      "#d62728", "#9467bd", "#8c564b", "#e377c2",
					      "#7f7f7f", "#bcbd22", "#17becf" };

	for (size_t w = 0; w < NWL; w++)
		for (size_t p = 0; p < npol; p++) {
			struct job *j = &jobs[w * npol + p], *base = &jobs[w * npol];

			if (!j->err && !base->err && j->res.total.time_ns) {
				double s = (double)base->res.total.time_ns / j->res.total.time_ns;

				if (s > maxv)
					maxv = s;
			}
		}
	maxv = maxv * 1.1;
	fprintf(f, "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' "
		   "font-family='sans-serif' font-size='12'>\n", W, H);
	fprintf(f, "<rect width='100%%' height='100%%' fill='white'/>\n");
	fprintf(f, "<text x='%d' y='22' font-size='15'>gpuext simulator: speedup of each policy over "
		   "the stock UVM driver (modelled time, higher is better)</text>\n", left);
	for (int t = 0; t <= 4; t++) {
		double v = maxv * t / 4;
		int y = top + ph - (int)(ph * v / maxv);

		fprintf(f, "<line x1='%d' y1='%d' x2='%d' y2='%d' stroke='#ddd'/>\n", left, y,
			left + pw, y);
		fprintf(f, "<text x='%d' y='%d' text-anchor='end'>%.1fx</text>\n", left - 5, y + 4, v);
	}
	{
		int y = top + ph - (int)(ph * 1.0 / maxv);

		fprintf(f, "<line x1='%d' y1='%d' x2='%d' y2='%d' stroke='black' "
			   "stroke-dasharray='4,3'/>\n", left, y, left + pw, y);
	}
	double gw = (double)pw / NWL, bw = gw * 0.8 / npol;

	for (size_t w = 0; w < NWL; w++) {
		double gx = left + w * gw + gw * 0.1;

		for (size_t p = 0; p < npol; p++) {
			struct job *j = &jobs[w * npol + p], *base = &jobs[w * npol];
			double s = (!j->err && !base->err && j->res.total.time_ns)
					   ? (double)base->res.total.time_ns / j->res.total.time_ns
					   : 0;
			int h = (int)(ph * s / maxv);

			fprintf(f, "<rect x='%.1f' y='%d' width='%.1f' height='%d' fill='%s'>"
				   "<title>%s / %s: %.2fx</title></rect>\n",
				gx + p * bw, top + ph - h, bw * 0.95, h, colors[p % 11],
				main_workloads[w], pol_names[p], s);
		}
		fprintf(f, "<text x='%.1f' y='%d' text-anchor='middle'>%s</text>\n", gx + gw * 0.4,
			top + ph + 18, main_workloads[w]);
	}
	for (size_t p = 0; p < npol; p++) {
		fprintf(f, "<rect x='%d' y='%zu' width='12' height='12' fill='%s'/>", W - right + 15,
			top + p * 20, colors[p % 11]);
		fprintf(f, "<text x='%d' y='%zu'>%s</text>\n", W - right + 32, top + p * 20 + 11,
			pol_names[p]);
	}
	fprintf(f, "<text x='%d' y='%d' fill='#555'>dashed line: the stock driver (1.0x). "
		   "Modelled GPU memory and PCIe as printed by `gpuext sim`.</text>\n",
		left, H - 15);
	fprintf(f, "</svg>\n");
}

static void json_mem(FILE *f, const struct job *j, const struct job *base, bool last)
{
	const struct sim_mem_stats *s = &j->res.total;

	fprintf(f, "    {\"workload\": \"%s\", \"policy\": \"%s\", ", j->workload,
		j->policy_path[0] ? j->res.policy_name : "stock");
	if (j->err) {
		fprintf(f, "\"error\": \"%s\"}%s\n", strerror(-j->err), last ? "" : ",");
		return;
	}
	fprintf(f, "\"accesses\": %llu, \"faults\": %llu, \"batches\": %llu, \"bytes_h2d\": %llu, "
		   "\"bytes_d2h\": %llu, \"evictions\": %llu, \"prefetched_pages\": %llu, "
		   "\"modelled_ns\": %llu, \"speedup\": %.4f, \"policy_insns\": %llu, \"ejected\": %s%s%s}%s\n",
		(unsigned long long)s->accesses, (unsigned long long)s->faults,
		(unsigned long long)s->batches, (unsigned long long)s->bytes_h2d,
		(unsigned long long)s->bytes_d2h, (unsigned long long)s->evictions,
		(unsigned long long)s->prefetched_pages, (unsigned long long)s->time_ns,
		base->err || !s->time_ns ? 0.0 : (double)base->res.total.time_ns / s->time_ns,
		(unsigned long long)j->res.policy_insns, j->res.ejected[0] ? "\"" : "",
		j->res.ejected[0] ? j->res.ejected : "null", j->res.ejected[0] ? "\"" : "",
		last ? "" : ",");
}

static int main_job(const struct sim_cli *c, const char *policy_dir, const char *plot,
		    const char *json)
{
	const char *pol_names[NPOL + 1];
	char paths[NPOL + 1][512];
	size_t npol = 0;
	struct job *jobs;
	struct timespec t0, t1;
	int ret = 0;

	pol_names[npol] = "stock";
	paths[npol++][0] = '\0';
	for (size_t i = 0; i < NPOL; i++) {
		snprintf(paths[npol], sizeof(paths[npol]), "%s/%s.bpf.o", policy_dir, mem_policies[i]);
		if (access(paths[npol], R_OK) == 0)
			pol_names[npol++] = mem_policies[i];
	}
	if (npol == 1) {
		fprintf(stderr, "gpuext sim: no policies found in '%s' (build them, or pass "
				"--policy-dir)\n", policy_dir);
		return 1;
	}
	jobs = calloc(NWL * npol, sizeof(*jobs));
	if (!jobs)
		return 1;
	for (size_t w = 0; w < NWL; w++)
		for (size_t p = 0; p < npol; p++) {
			jobs[w * npol + p].workload = main_workloads[w];
			memcpy(jobs[w * npol + p].policy_path, paths[p], sizeof(paths[p]));
		}
	printf("gpuext main job: %zu memory policies and the stock NVIDIA UVM driver, %zu workloads, on "
	       "the built-in simulator\n", npol - 1, NWL);
	printf("GPU memory %.0f MiB (%llu x 2 MiB blocks), PCIe %.0f GB/s each way, %u-fault batches "
	       "at %.0f us each; each workload ",
	       c->gpu_mem / 1048576.0, (unsigned long long)(c->gpu_mem / GPU_BLOCK_SIZE),
	       SIM_MEM_DEFAULT_GBPS, SIM_MEM_DEFAULT_BATCH, SIM_MEM_DEFAULT_BATCH_OVERHEAD_NS / 1e3);
	if (c->accesses)
		printf("stops after %llu accesses", (unsigned long long)c->accesses);
	else
		printf("runs to its natural end");
	printf(", seed %llu. Times are modelled.\n\n", (unsigned long long)c->seed);
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	run_all(c, jobs, NWL * npol);
	clock_gettime(CLOCK_MONOTONIC, &t1);

	printf("%-16s %-18s %5s %10s %9s %9s %9s %10s %8s\n", "workload", "policy", "over",
	       "faults", "H->D GB", "D->H GB", "evicted", "time ms", "speedup");
	for (size_t w = 0; w < NWL; w++) {
		struct job *base = &jobs[w * npol];

		for (size_t p = 0; p < npol; p++) {
			struct job *j = &jobs[w * npol + p];
			const struct sim_mem_stats *s = &j->res.total;

			if (j->err) {
				printf("%-16s %-18s  failed: %s\n", p ? "" : j->workload, pol_names[p],
				       strerror(-j->err));
				ret = 1;
				continue;
			}
			printf("%-16s %-18s %4.1fx %10llu %9.2f %9.2f %9llu %10.1f %7.2fx%s\n",
			       p ? "" : j->workload, pol_names[p], j->res.oversub,
			       (unsigned long long)s->faults, gb(s->bytes_h2d), gb(s->bytes_d2h),
			       (unsigned long long)s->evictions, ms(s->time_ns),
			       base->err || !s->time_ns ? 0.0 : (double)base->res.total.time_ns / s->time_ns,
			       j->res.ejected[0] ? "  (ejected)" : "");
		}
	}
	printf("\n(%zu runs in %.1f s wall with -j %d; speedup = stock modelled time / policy's)\n",
	       NWL * npol, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, c->jobs);

	/* scheduling: the LC/BE mix under the default, lc_be and fair_share */
	static const char *const sched_pols[] = { NULL, "lc_be", "fair_share" };
	struct sim_sched_result sres[3];
	const struct sim_sched_result *sptr[3];
	const char *slabels[3];
	char sname[3][32];
	size_t ns = 0;

	for (size_t i = 0; i < 3; i++) {
		char path[512];
		struct gpuext_runtime *rt = NULL;
		GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = cli_print);

		if (sched_pols[i]) {
			snprintf(path, sizeof(path), "%s/%s.bpf.o", policy_dir, sched_pols[i]);
			if (access(path, R_OK))
				continue;
		}
		if (gpuext_runtime__new(&ro, &rt))
			continue;
		GPUEXT_OPTS(sim_run_opts, so, .rt = rt, .seed = c->seed);
		if (sim_run_sched(sched_pols[i] ? path : NULL, "lc-be", &so, &sres[ns], sname[ns],
				  sizeof(sname[ns])) == 0) {
			sptr[ns] = &sres[ns];
			slabels[ns] = sname[ns];
			ns++;
		} else {
			ret = 1;
		}
		gpuext_runtime__free(rt);
	}
	printf("\nscheduling: the LC/BE mix (2 latency-critical inference + 4 best-effort training "
	       "processes) on one GPU runlist\n");
	sim_sched_print(stdout, slabels, sptr, ns);

	if (plot) {
		FILE *f = fopen(plot, "w");

		if (!f) {
			fprintf(stderr, "gpuext sim: cannot write '%s': %s\n", plot, strerror(errno));
			ret = 1;
		} else {
			svg_plot(f, jobs, npol, pol_names);
			fclose(f);
			printf("\nplot: %s\n", plot);
		}
	}
	if (json) {
		FILE *f = strcmp(json, "-") ? fopen(json, "w") : stdout;

		if (!f) {
			fprintf(stderr, "gpuext sim: cannot write '%s': %s\n", json, strerror(errno));
			ret = 1;
		} else {
			fprintf(f, "{\n  \"gpu_mem_bytes\": %llu, \"accesses_per_run\": %llu, \"seed\": %llu,\n"
				   "  \"memory\": [\n",
				(unsigned long long)c->gpu_mem, (unsigned long long)c->accesses,
				(unsigned long long)c->seed);
			for (size_t i = 0; i < NWL * npol; i++)
				json_mem(f, &jobs[i], &jobs[(i / npol) * npol], i + 1 == NWL * npol);
			fprintf(f, "  ],\n  \"scheduling\": [\n");
			for (size_t i = 0; i < ns; i++) {
				const struct sim_sched_result *r = sptr[i];

				for (size_t t = 0; t < r->tenant_cnt; t++)
					fprintf(f, "    {\"policy\": \"%s\", \"tenant\": \"%s\", \"p50_ns\": %llu, "
						   "\"p99_ns\": %llu, \"kernels_per_s\": %.3f, \"rejected\": %s}%s\n",
						slabels[i], r->tenants[t].comm,
						(unsigned long long)r->tenants[t].p50_ns,
						(unsigned long long)r->tenants[t].p99_ns,
						r->tenants[t].kernels_per_s,
						r->tenants[t].rejected ? "true" : "false",
						i + 1 == ns && t + 1 == r->tenant_cnt ? "" : ",");
			}
			fprintf(f, "  ]\n}\n");
			if (f != stdout)
				fclose(f);
		}
	}
	free(jobs);
	return ret;
}

static void print_mem(const char *label, const struct sim_run_result *r)
{
	const struct sim_mem_stats *s = &r->total;

	printf("%-18s %10llu %10llu %9.3f %9.3f %9llu %10llu %10.2f%s%s\n", label,
	       (unsigned long long)s->accesses, (unsigned long long)s->faults, gb(s->bytes_h2d),
	       gb(s->bytes_d2h), (unsigned long long)s->evictions,
	       (unsigned long long)s->prefetched_pages, ms(s->time_ns),
	       r->ejected[0] ? "  ejected: " : "", r->ejected);
}

int cmd_sim(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "policy", required_argument, NULL, 'p' },
		{ "policy-dir", required_argument, NULL, 'D' },
		{ "workload", required_argument, NULL, 'w' },
		{ "trace", required_argument, NULL, 't' },
		{ "sched", required_argument, NULL, 's' },
		{ "gpu-mem", required_argument, NULL, 'g' },
		{ "accesses", required_argument, NULL, 'a' },
		{ "seed", required_argument, NULL, 'S' },
		{ "config", required_argument, NULL, 'c' },
		{ "json", required_argument, NULL, 'J' },
		{ "plot", required_argument, NULL, 'P' },
		{ "list", no_argument, NULL, 'l' },
		{ "jit", no_argument, NULL, 'x' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct sim_cli c = { .gpu_mem = 1ULL << 30, .accesses = 0, .seed = 1 };
	const char *policy = NULL, *workload = NULL, *trace = NULL, *sched = NULL;
	const char *policy_dir = GPUEXT_BUILD_POLICY_DIR, *json = NULL, *plot = "gpuext-sim.svg";
	bool list = false;
	int ch, ret = 0;

	c.jobs = (int)sysconf(_SC_NPROCESSORS_ONLN);
	optind = 1;
	while ((ch = getopt_long(argc, argv, "hj:", opts, NULL)) != -1) {
		switch (ch) {
		case 'p': policy = optarg; break;
		case 'D': policy_dir = optarg; break;
		case 'w': workload = optarg; break;
		case 't': trace = optarg; break;
		case 's': sched = optarg; break;
		case 'g': c.gpu_mem = parse_size(optarg); break;
		case 'a': c.accesses = strtoull(optarg, NULL, 0); break;
		case 'S': c.seed = strtoull(optarg, NULL, 0); break;
		case 'c': c.config = optarg; break;
		case 'J': json = optarg; break;
		case 'P': plot = optarg; break;
		case 'l': list = true; break;
		case 'x': c.jit = true; break;
		case 'j': c.jobs = atoi(optarg); break;
		case 'h': help(stdout); return 0;
		default: help(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "gpuext sim: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (c.gpu_mem < GPU_BLOCK_SIZE * 4) {
		fprintf(stderr, "gpuext sim: --gpu-mem must be at least 8M (4 blocks)\n");
		return 2;
	}
	if (list) {
		size_t n;
		const struct sim_sched_scenario *sc = sim_sched_scenario_list(&n);

		printf("memory workloads (--workload NAME[:knob=v,...]):\n");
		sim_workload_print_help(stdout);
		printf("\nscheduling mixes (--sched NAME):\n");
		for (size_t i = 0; i < n; i++)
			printf("  %-12s %s\n", sc[i].name, sc[i].summary);
		printf("\npolicies in %s:\n", policy_dir);
		DIR *d = opendir(policy_dir);
		struct dirent *e;

		while (d && (e = readdir(d)))
			if (strstr(e->d_name, ".bpf.o"))
				printf("  %s/%s\n", policy_dir, e->d_name);
		if (d)
			closedir(d);
		return 0;
	}
	if (!!workload + !!trace + !!sched > 1) {
		fprintf(stderr, "gpuext sim: give one of --workload, --trace, --sched\n");
		return 2;
	}
	if (!workload && !trace && !sched) {
		if (policy) {
			fprintf(stderr, "gpuext sim: --policy needs --workload, --trace or --sched "
					"(the main job compares every shipped policy)\n");
			return 2;
		}
		return main_job(&c, policy_dir, plot, json);
	}

	struct gpuext_runtime *rt = NULL;
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = cli_print);

	if (gpuext_runtime__new(&ro, &rt))
		return 1;
	GPUEXT_OPTS(sim_run_opts, so, .rt = rt, .gpu_mem_bytes = c.gpu_mem,
		    .max_accesses = c.accesses, .seed = c.seed, .mem_config = c.config, .jit = c.jit);
	if (sched) {
		struct sim_sched_result r[2];
		const struct sim_sched_result *rp[2] = { &r[0], &r[1] };
		char names[2][32];
		const char *labels[2] = { names[0], names[1] };

		if (sim_run_sched(NULL, sched, &so, &r[0], names[0], sizeof(names[0])) ||
		    (policy && sim_run_sched(policy, sched, &so, &r[1], names[1], sizeof(names[1])))) {
			ret = 1;
		} else {
			sim_sched_print(stdout, labels, rp, policy ? 2 : 1);
			if (policy && r[1].ejected)
				printf("policy ejected: %s\n", r[1].eject_reason);
		}
	} else {
		struct sim_run_result base, pol;

		if (sim_run_mem(NULL, workload, trace, &so, &base) ||
		    (policy && sim_run_mem(policy, workload, trace, &so, &pol))) {
			ret = 1;
		} else {
			printf("%s on %.0f MiB of modelled GPU memory (%.2fx oversubscribed)\n\n",
			       trace ? trace : workload, c.gpu_mem / 1048576.0, base.oversub);
			printf("%-18s %10s %10s %9s %9s %9s %10s %10s\n", "policy", "accesses", "faults",
			       "H->D GB", "D->H GB", "evicted", "prefetched", "time ms");
			print_mem("stock", &base);
			if (policy) {
				print_mem(pol.policy_name, &pol);
				printf("\nspeedup over stock: %.2fx (modelled)\n",
				       pol.total.time_ns ? (double)base.total.time_ns / pol.total.time_ns : 0);
			}
		}
	}
	gpuext_runtime__free(rt);
	return ret;
}

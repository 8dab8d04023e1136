/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Interpreter benchmark: ns per executed eBPF instruction for a loop-heavy
 * (pure ALU + branches) and a map-heavy (hash lookup/update through
 * helpers) program, each next to the same work written in C, measured in
 * the same run. The interpreter is the reference, not the fast path (the
 * host JIT is); this tells us what the reference costs.
 *
 *   bench_interp [--iters N] [--reps R]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define I isa_make

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* r0 = sum over i=N..1 of (i*3 ^ (i >> 2)) */
static size_t loop_prog(struct bpf_insn *p, int32_t n)
{
	size_t k = 0;

	p[k++] = I(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0);
	p[k++] = I(BPF_ALU64 | BPF_MOV | BPF_K, 1, 0, 0, n);
	/* loop: */
	p[k++] = I(BPF_ALU64 | BPF_MOV | BPF_X, 2, 1, 0, 0);
	p[k++] = I(BPF_ALU64 | BPF_MUL | BPF_K, 2, 0, 0, 3);
	p[k++] = I(BPF_ALU64 | BPF_MOV | BPF_X, 3, 1, 0, 0);
	p[k++] = I(BPF_ALU64 | BPF_RSH | BPF_K, 3, 0, 0, 2);
	p[k++] = I(BPF_ALU64 | BPF_XOR | BPF_X, 2, 3, 0, 0);
	p[k++] = I(BPF_ALU64 | BPF_ADD | BPF_X, 0, 2, 0, 0);
	p[k++] = I(BPF_ALU64 | BPF_SUB | BPF_K, 1, 0, 0, 1);
	p[k++] = I(BPF_JMP | BPF_JNE | BPF_K, 1, 0, -8, 0);
	p[k++] = I(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	return k;
}

static uint64_t loop_native(volatile int32_t n)
{
	uint64_t r0 = 0;

	for (uint64_t i = (uint64_t)n; i; i--)
		r0 += (i * 3) ^ (i >> 2);
	return r0;
}

/* for i in N..1: key = i & 1023; v = lookup(key); if v: *v += i else update(key, i) */
static size_t map_prog(struct bpf_insn *p, int32_t n)
{
	size_t k = 0;

	p[k++] = I(BPF_ALU64 | BPF_MOV | BPF_K, 6, 0, 0, n);
	/* loop: */
	p[k++] = I(BPF_ALU64 | BPF_MOV | BPF_X, 1, 6, 0, 0);
	p[k++] = I(BPF_ALU64 | BPF_AND | BPF_K, 1, 0, 0, 1023);
	p[k++] = I(BPF_STX | BPF_MEM | BPF_W, 10, 1, -4, 0);
	p[k++] = I(BPF_LD | BPF_DW | BPF_IMM, 1, BPF_PSEUDO_MAP_IDX, 0, 0);
	p[k++] = I(0, 0, 0, 0, 0);
	p[k++] = I(BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0);
	p[k++] = I(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -4);
	p[k++] = I(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem);
	p[k++] = I(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 4, 0);
	p[k++] = I(BPF_LDX | BPF_MEM | BPF_DW, 1, 0, 0, 0);
	p[k++] = I(BPF_ALU64 | BPF_ADD | BPF_X, 1, 6, 0, 0);
	p[k++] = I(BPF_STX | BPF_MEM | BPF_DW, 0, 1, 0, 0);
	p[k++] = I(BPF_JMP | BPF_JA, 0, 0, 9, 0);
	/* miss: */
	p[k++] = I(BPF_STX | BPF_MEM | BPF_DW, 10, 6, -16, 0);
	p[k++] = I(BPF_LD | BPF_DW | BPF_IMM, 1, BPF_PSEUDO_MAP_IDX, 0, 0);
	p[k++] = I(0, 0, 0, 0, 0);
	p[k++] = I(BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0);
	p[k++] = I(BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -4);
	p[k++] = I(BPF_ALU64 | BPF_MOV | BPF_X, 3, 10, 0, 0);
	p[k++] = I(BPF_ALU64 | BPF_ADD | BPF_K, 3, 0, 0, -16);
	p[k++] = I(BPF_ALU64 | BPF_MOV | BPF_K, 4, 0, 0, 0);
	p[k++] = I(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_update_elem);
	/* next: */
	p[k++] = I(BPF_ALU64 | BPF_SUB | BPF_K, 6, 0, 0, 1);
	p[k++] = I(BPF_JMP | BPF_JNE | BPF_K, 6, 0, -24, 0);
	p[k++] = I(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0);
	p[k++] = I(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	return k;
}

/* The same work on a C array: what a map-heavy program would cost natively. */
static uint64_t map_native(int32_t n, uint64_t *table)
{
	for (uint64_t i = (uint64_t)n; i; i--)
		table[i & 1023] += i;
	return table[1];
}

struct result {
	double interp_ns, native_ns;
	uint64_t insns;
};

static int bench(struct gpuext_prog *prog, uint64_t want, int reps, struct result *res,
		 uint64_t (*native)(int32_t, uint64_t *), int32_t n, uint64_t *table)
{
	double best_i = 1e30, best_n = 1e30;

	for (int r = 0; r < reps; r++) {
		GPUEXT_OPTS(gpuext_run_opts, run);
		uint64_t r0 = 0;
		double t0 = now_ns();

		if (gpuext_prog__run(prog, &run, &r0))
			return -1;
		double t1 = now_ns();
		if (want != UINT64_MAX && r0 != want) {
			fprintf(stderr, "bench: wrong result 0x%llx, want 0x%llx\n",
				(unsigned long long)r0, (unsigned long long)want);
			return -1;
		}
		volatile uint64_t sink = native(n, table);
		(void)sink;
		double t2 = now_ns();
		if (t1 - t0 < best_i)
			best_i = t1 - t0;
		if (t2 - t1 < best_n)
			best_n = t2 - t1;
		res->insns = run.insn_executed;
	}
	res->interp_ns = best_i;
	res->native_ns = best_n;
	return 0;
}

static uint64_t loop_native_adapter(int32_t n, uint64_t *t)
{
	(void)t;
	return loop_native(n);
}

int main(int argc, char **argv)
{
	int32_t iters = 1000000;
	int reps = 5;
	struct bpf_insn code[64];
	struct gpuext_runtime *rt;
	struct gpuext_map *map;
	struct gpuext_prog *loop, *maps;
	struct result lr, mr;
	struct utsname u;
	uint64_t *table = calloc(1024, sizeof(uint64_t));
	char cpu[128] = "unknown";
	FILE *f;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: bench_interp [--iters N] [--reps R]\n");
			return 2;
		}
	}
	f = fopen("/proc/cpuinfo", "r");
	if (f) {
		char line[256];

		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
				snprintf(cpu, sizeof(cpu), "%s", strchr(line, ':') + 2);
				cpu[strcspn(cpu, "\n")] = 0;
				break;
			}
		fclose(f);
	}
	uname(&u);
	GPUEXT_OPTS(gpuext_runtime_opts, ro);
	GPUEXT_OPTS(gpuext_map_def, def, .name = "bench_hash", .type = BPF_MAP_TYPE_HASH,
		    .key_size = 4, .value_size = 8, .max_entries = 1024);
	if (!table || gpuext_runtime__new(&ro, &rt) || gpuext_map__create(rt, &def, &map))
		return 1;
	if (gpuext_prog__new(rt, "loop", code, loop_prog(code, iters), NULL, 0, &loop) ||
	    gpuext_prog__new(rt, "maps", code, map_prog(code, iters), &map, 1, &maps))
		return 1;
	if (bench(loop, loop_native(iters), reps, &lr, loop_native_adapter, iters, table) ||
	    bench(maps, 0, reps, &mr, map_native, iters, table))
		return 1;

	printf("gpuext interpreter benchmark\n");
	printf("machine: %s, %ld CPUs, %s %s\n", cpu, sysconf(_SC_NPROCESSORS_ONLN), u.sysname,
	       u.release);
	printf("work: %d loop iterations per run, best of %d runs\n\n", iters, reps);
	printf("%-10s %12s %12s %10s %12s %12s\n", "program", "eBPF insns", "interp ms", "ns/insn",
	       "native ms", "interp/native");
	printf("%-10s %12llu %12.2f %10.2f %12.3f %12.1fx\n", "loop", (unsigned long long)lr.insns,
	       lr.interp_ns / 1e6, lr.interp_ns / lr.insns, lr.native_ns / 1e6,
	       lr.interp_ns / lr.native_ns);
	printf("%-10s %12llu %12.2f %10.2f %12.3f %12.1fx\n", "map-heavy",
	       (unsigned long long)mr.insns, mr.interp_ns / 1e6, mr.interp_ns / mr.insns,
	       mr.native_ns / 1e6, mr.interp_ns / mr.native_ns);
	printf("\nnative = the same computation in C (map-heavy: a plain array, so the ratio also\n"
	       "prices the hash map and helper calls). Reference interpreter: every memory access\n"
	       "is bounds-checked; speed comes from the host JIT.\n");
	gpuext_prog__free(loop);
	gpuext_prog__free(maps);
	gpuext_runtime__free(rt);
	free(table);
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Codegen benchmark, two tables measured in one run:
 *
 *  1. Latency: for every ISA corpus program the verifier accepts and every
 *     program of the shipped policies (build/policies/\*.bpf.o), the time to
 *     lift, run O2, and JIT-compile for the host, and to emit PTX and SPIR-V
 *     (both flavours), best of N per program; median / p90 / max per set.
 *  2. Speed: the host JIT against the reference interpreter on a loop-heavy
 *     program (ALU and branches) and a map-heavy one (hash map lookups and
 *     updates through helpers), both checked to give the same r0.
 *
 *   bench_codegen [--reps N] [--iters N] [--policy-dir DIR] [--no-device] [--speed-only]
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "asm.h"
#include "codegen.h"
#include "gpuext/verifier.h"
#include "host/jit.h"
#include "internal.h"
#include "ptx/ptx.h"
#include "spirv/spirv.h"

/*
 * Inputs without build-system help: the ISA corpus next to this source file
 * (__FILE__ is absolute under CMake), the policies next to the binary.
 */
static void default_dirs(char *isa, size_t isa_len, char *pol, size_t pol_len)
{
	char exe[1024];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const char *slash = strrchr(__FILE__, '/');

	snprintf(isa, isa_len, "%.*s/../tests/isa", slash ? (int)(slash - __FILE__) : 1,
		 slash ? __FILE__ : ".");
	if (n > 0) {
		exe[n] = '\0';
		if (strrchr(exe, '/'))
			*strrchr(exe, '/') = '\0';
		snprintf(pol, pol_len, "%s/policies", exe);
	} else {
		snprintf(pol, pol_len, "policies");
	}
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void quiet(enum gpuext_log_level level, const char *msg, void *user)
{
	(void)level; (void)msg; (void)user;
}

/* ------------------------------------------------------------------ */
/* Latency                                                              */
/* ------------------------------------------------------------------ */

enum { C_LIFT, C_O2, C_JIT, C_PTX, C_SPIRV, C_SPIRV_VK, C_CNT };
static const char *const col_name[C_CNT] = { "lift", "O2", "jit", "ptx", "spirv", "spirv-vk" };

/* Samples of one set (ISA corpus or policies); owned by main(). */
struct set {
	const char *name;
	size_t n, cap;
	double *v[C_CNT];	/* microseconds, best of reps, per program; <0 = failed */
	size_t *insns, *ir;
	unsigned failed[C_CNT];
};

static bool device;	/* also emit PTX / SPIR-V */
static int reps = 3;

static int set_add(struct set *s)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;

		for (int c = 0; c < C_CNT; c++) {
			double *v = realloc(s->v[c], cap * sizeof(double));

			if (!v)
				return -1;
			s->v[c] = v;
		}
		size_t *a = realloc(s->insns, cap * sizeof(size_t)), *b;

		if (!a)
			return -1;
		s->insns = a;
		b = realloc(s->ir, cap * sizeof(size_t));
		if (!b)
			return -1;
		s->ir = b;
		s->cap = cap;
	}
	return (int)s->n++;
}

static double min_d(double a, double b) { return a < 0 ? b : (b < a ? b : a); }

/* Measures one program; @verified: skip the JIT's own verification. */
static void measure(struct set *s, struct gpuext_prog *prog)
{
	int k = set_add(s);

	if (k < 0)
		return;
	for (int c = 0; c < C_CNT; c++)
		s->v[c][k] = -1;
	s->insns[k] = gpuext_prog__insn_cnt(prog);
	s->ir[k] = 0;
	for (int r = 0; r < reps; r++) {
		GPUEXT_OPTS(gpuext_jit_opts, jo, .verified = true);
		struct gpuext_jit *jit = NULL;
		double t;

		if (gpuext_jit__new(prog, &jo, &jit) == 0) {
			const struct gpuext_jit_stats *st = gpuext_jit__stats(jit);

			s->v[C_LIFT][k] = min_d(s->v[C_LIFT][k], st->lift_ns / 1e3);
			s->v[C_O2][k] = min_d(s->v[C_O2][k], st->opt_ns / 1e3);
			s->v[C_JIT][k] = min_d(s->v[C_JIT][k], st->compile_ns / 1e3);
			s->ir[k] = st->ir_insns;
			gpuext_jit__free(jit);
		}
		if (!device)
			continue;
		{
			char *text = NULL;
			size_t len;

			t = now_us();
			if (gpuext_ptx_emit(prog, "sm_80", true, &text, &len) == 0)
				s->v[C_PTX][k] = min_d(s->v[C_PTX][k], now_us() - t);
			free(text);
		}
		for (int vk = 0; vk < 2; vk++) {
			GPUEXT_OPTS(gpuext_spirv_emit_opts, so, .vulkan = vk);
			void *bin = NULL;
			size_t len;

			t = now_us();
			if (gpuext_spirv_emit_opts(prog, &so, &bin, &len) == 0)
				s->v[vk ? C_SPIRV_VK : C_SPIRV][k] =
					min_d(s->v[vk ? C_SPIRV_VK : C_SPIRV][k], now_us() - t);
			free(bin);
		}
	}
	for (int c = 0; c < C_CNT; c++)
		if (s->v[c][k] < 0 && (device || c <= C_JIT))
			s->failed[c]++;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int cmp_z(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

static void print_set(struct set *s)
{
	double *tmp = malloc((s->n ? s->n : 1) * sizeof(double));
	size_t *zi = malloc((s->n ? s->n : 1) * sizeof(size_t));

	if (!tmp || !zi || !s->n) {
		printf("%-9s no programs\n", s->name);
		free(tmp);
		free(zi);
		return;
	}
	memcpy(zi, s->insns, s->n * sizeof(size_t));
	qsort(zi, s->n, sizeof(size_t), cmp_z);
	printf("%-9s %5zu progs, eBPF insns median %zu max %zu", s->name, s->n, zi[s->n / 2],
	       zi[s->n - 1]);
	memcpy(zi, s->ir, s->n * sizeof(size_t));
	qsort(zi, s->n, sizeof(size_t), cmp_z);
	printf(", IR insns after O2 median %zu max %zu\n", zi[s->n / 2], zi[s->n - 1]);
	for (int c = 0; c < C_CNT; c++) {
		size_t m = 0;

		if (!device && c > C_JIT)
			continue;
		for (size_t i = 0; i < s->n; i++)
			if (s->v[c][i] >= 0)
				tmp[m++] = s->v[c][i];
		if (!m) {
			printf("  %-9s %10s %10s %10s   (all %u failed)\n", col_name[c], "-", "-", "-",
			       s->failed[c]);
			continue;
		}
		qsort(tmp, m, sizeof(double), cmp_d);
		printf("  %-9s %10.0f %10.0f %10.0f", col_name[c], tmp[m / 2], tmp[m * 9 / 10],
		       tmp[m - 1]);
		if (s->failed[c])
			printf("   (%u could not be emitted)", s->failed[c]);
		printf("\n");
	}
	free(tmp);
	free(zi);
}

static void corpus_latency(struct set *s, const char *dir)
{
	struct isa_corpus corpus = { 0 };
	char err[256];

	if (isa_corpus_load_dir(&corpus, dir, err, sizeof(err))) {
		fprintf(stderr, "bench_codegen: ISA corpus: %s\n", err);
		return;
	}
	for (size_t i = 0; i < corpus.cnt; i++) {
		const struct isa_case *tc = &corpus.cases[i];
		GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = quiet);
		struct gpuext_runtime *rt = NULL;
		struct gpuext_prog *prog = NULL;
		struct isa_case_env env;

		if (tc->error || tc->error_any || gpuext_runtime__new(&ro, &rt))
			continue;
		if (isa_case_env_init(&env, rt, tc, err, sizeof(err)) == 0) {
			if (gpuext_prog__new(rt, tc->name, env.insns, env.insn_cnt, env.maps, env.map_cnt,
					     &prog) == 0) {
				GPUEXT_OPTS(gpuext_verify_opts, vo, .type = GPUEXT_PROG_HOST,
					    .ctx_size = (uint32_t)env.mem_len);
				GPUEXT_OPTS(gpuext_verify_result, vr);

				if (gpuext_prog__verify(prog, &vo, &vr) == 0)
					measure(s, prog);
				gpuext_prog__free(prog);
			}
			isa_case_env_fini(&env);
		}
		gpuext_runtime__free(rt);
	}
	isa_corpus_free(&corpus);
}

/* Policies are struct_ops programs: compiled here, not run, so not re-verified as host. */
static void policy_latency(struct set *s, const char *dir)
{
	struct dirent **names = NULL;
	int n = scandir(dir, &names, NULL, alphasort);

	if (n < 0) {
		fprintf(stderr, "bench_codegen: no policy objects in %s (build the 'policies' target)\n",
			dir);
		return;
	}
	for (int i = 0; i < n; i++) {
		const char *nm = names[i]->d_name;
		size_t len = strlen(nm);
		char path[2200];
		GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = quiet);
		struct gpuext_runtime *rt = NULL;
		struct gpuext_object *obj = NULL;

		if (len > 6 && !strcmp(nm + len - 6, ".bpf.o")) {
			snprintf(path, sizeof(path), "%s/%s", dir, nm);
			if (gpuext_runtime__new(&ro, &rt) == 0 &&
			    gpuext_object__open_file(rt, path, NULL, &obj) == 0)
				for (size_t p = 0; p < gpuext_object__prog_cnt(obj); p++)
					measure(s, gpuext_object__prog(obj, p));
			gpuext_object__close(obj);
			gpuext_runtime__free(rt);
		}
		free(names[i]);
	}
	free(names);
}

/* ------------------------------------------------------------------ */
/* Speed: JIT vs interpreter                                            */
/* ------------------------------------------------------------------ */

/* A multiplicative hash stirred into an accumulator, with a data-dependent branch. */
static const char loop_src[] =
	"r0 = 0x0\n"
	"r1 = %d\n"
	"r2 = 0x9e3779b97f4a7c15 ll\n"
	"loop:\n"
	"r3 = r1\n"
	"r3 *= r2\n"
	"r4 = r3\n"
	"r4 >>= 0x1d\n"
	"r3 ^= r4\n"
	"if r3 & 0x1 goto odd\n"
	"r0 += r3\n"
	"goto next\n"
	"odd:\n"
	"r0 -= r1\n"
	"next:\n"
	"r1 += -0x1\n"
	"if r1 != 0x0 goto loop\n"
	"exit\n";

/* A histogram of i*7 mod 512 in a hash map: a lookup per step, an update on a miss. */
static const char map_src[] =
	"r6 = %d\n"
	"loop:\n"
	"r1 = r6\n"
	"r1 *= 0x7\n"
	"r1 &= 0x1ff\n"
	"*(u32 *)(r10 - 0x4) = w1\n"
	"r1 = map[hist] ll\n"
	"r2 = r10\n"
	"r2 += -0x4\n"
	"call bpf_map_lookup_elem\n"
	"if r0 == 0x0 goto miss\n"
	"r1 = *(u64 *)(r0 + 0x0)\n"
	"r1 += 0x1\n"
	"*(u64 *)(r0 + 0x0) = r1\n"
	"goto next\n"
	"miss:\n"
	"*(u64 *)(r10 - 0x10) = r6\n"
	"r1 = map[hist] ll\n"
	"r2 = r10\n"
	"r2 += -0x4\n"
	"r3 = r10\n"
	"r3 += -0x10\n"
	"r4 = 0x0\n"
	"call bpf_map_update_elem\n"
	"next:\n"
	"r6 += -0x1\n"
	"if r6 != 0x0 goto loop\n"
	"*(u32 *)(r10 - 0x4) = 0x7\n"
	"r1 = map[hist] ll\n"
	"r2 = r10\n"
	"r2 += -0x4\n"
	"call bpf_map_lookup_elem\n"
	"if r0 == 0x0 goto out\n"
	"r0 = *(u64 *)(r0 + 0x0)\n"
	"out:\n"
	"exit\n";

struct speed {
	double interp_ms, jit_ms;
	uint64_t insns;
	size_t prog_insns;
	bool verified;
	int err;
};

/*
 * Each backend gets its own runtime and map, so both see the same state at
 * every repetition and must return the same r0.
 */
static void speed(const char *src, int32_t iters, bool with_map, struct speed *out)
{
	struct gpuext_runtime *rt[2] = { NULL, NULL };
	struct gpuext_prog *prog[2] = { NULL, NULL };
	struct gpuext_jit *jit = NULL;
	char text[4096], err[256];

	memset(out, 0, sizeof(*out));
	out->interp_ms = out->jit_ms = 1e30;
	snprintf(text, sizeof(text), src, iters);
	for (int b = 0; b < 2; b++) {
		GPUEXT_OPTS(gpuext_runtime_opts, ro, .prandom_seed = 1, .print = quiet);
		GPUEXT_OPTS(gpuext_map_def, def, .name = "hist", .type = BPF_MAP_TYPE_HASH,
			    .key_size = 4, .value_size = 8, .max_entries = 1024);
		struct gpuext_map *map = NULL;
		struct bpf_insn *code = NULL;
		size_t cnt = 0;

		if (gpuext_runtime__new(&ro, &rt[b]) ||
		    (with_map && gpuext_map__create(rt[b], &def, &map))) {
			out->err = -1;
			goto done;
		}
		GPUEXT_OPTS(gpuext_asm_opts, ao, .rt = rt[b], .maps = &map, .map_cnt = with_map);
		if (gpuext_asm(text, &ao, &code, &cnt, err, sizeof(err)) ||
		    gpuext_prog__new(rt[b], with_map ? "maps" : "loop", code, cnt, &map,
				     with_map, &prog[b])) {
			fprintf(stderr, "bench_codegen: %s\n", err);
			free(code);
			out->err = -1;
			goto done;
		}
		out->prog_insns = cnt;
		free(code);
	}
	{
		/* Whatever the verifier says (the map loop has more branches than it
		 * walks), the JIT compiles it: the checked interpreter runs every
		 * repetition first and the JIT must return the same r0. */
		GPUEXT_OPTS(gpuext_verify_opts, vo, .type = GPUEXT_PROG_HOST);
		GPUEXT_OPTS(gpuext_verify_result, vr);
		GPUEXT_OPTS(gpuext_jit_opts, jo, .verified = true);

		out->verified = gpuext_prog__verify(prog[1], &vo, &vr) == 0;
		if (gpuext_jit__new(prog[1], &jo, &jit)) {
			out->err = -1;
			goto done;
		}
	}
	for (int r = 0; r < reps; r++) {
		GPUEXT_OPTS(gpuext_run_opts, ri);
		GPUEXT_OPTS(gpuext_run_opts, rj);
		uint64_t r0i = 0, r0j = 0;
		double t0 = now_us(), t1, t2;

		if (gpuext_prog__run(prog[0], &ri, &r0i)) {
			out->err = -1;
			goto done;
		}
		t1 = now_us();
		if (gpuext_jit__run(jit, &rj, &r0j)) {
			out->err = -1;
			goto done;
		}
		t2 = now_us();
		if (r0i != r0j) {
			fprintf(stderr, "bench_codegen: r0 differs: interpreter 0x%llx, JIT 0x%llx\n",
				(unsigned long long)r0i, (unsigned long long)r0j);
			out->err = -1;
			goto done;
		}
		out->insns = ri.insn_executed;
		if ((t1 - t0) / 1e3 < out->interp_ms)
			out->interp_ms = (t1 - t0) / 1e3;
		if ((t2 - t1) / 1e3 < out->jit_ms)
			out->jit_ms = (t2 - t1) / 1e3;
	}
done:
	gpuext_jit__free(jit);
	for (int b = 0; b < 2; b++) {
		gpuext_prog__free(prog[b]);
		gpuext_runtime__free(rt[b]);
	}
}

int main(int argc, char **argv)
{
	char isa_dir[1100], pol_dir[1100];
	const char *policy_dir = pol_dir;
	unsigned maj, min, patch;
	bool latency = true;
	int32_t iters = 1000000;
	struct set isa = { .name = "isa" }, pol = { .name = "policies" };
	struct speed ls, ms;
	struct utsname u;
	char cpu[128] = "unknown";
	FILE *f;

	device = true;
	default_dirs(isa_dir, sizeof(isa_dir), pol_dir, sizeof(pol_dir));
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--policy-dir") && i + 1 < argc)
			policy_dir = argv[++i];
		else if (!strcmp(argv[i], "--no-device"))
			device = false;
		else if (!strcmp(argv[i], "--speed-only"))
			latency = false;
		else {
			fprintf(stderr, "usage: bench_codegen [--reps N] [--iters N] [--policy-dir DIR] "
					"[--no-device] [--speed-only]\n");
			return 2;
		}
	}
	if (reps < 1)
		reps = 1;
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
	printf("gpuext codegen benchmark\n");
	LLVMGetVersion(&maj, &min, &patch);
	printf("machine: %s, %ld CPUs online, %s %s; LLVM %u.%u.%u\n", cpu,
	       sysconf(_SC_NPROCESSORS_ONLN), u.sysname, u.release, maj, min, patch);
	printf("best of %d per program and per measurement\n\n", reps);

	if (latency) {
	corpus_latency(&isa, isa_dir);
	policy_latency(&pol, policy_dir);
	printf("codegen latency, microseconds (median / p90 / max over programs)\n");
	printf("  %-9s %10s %10s %10s\n", "phase", "median", "p90", "max");
	print_set(&isa);
	print_set(&pol);
	printf("lift = eBPF -> LLVM IR (+ the JIT's runtime glue); O2 = LLVM's default<O2>;\n"
	       "jit = host machine code through ORC LLJIT; ptx/spirv/spirv-vk = the whole emitter\n"
	       "(lift, O2 for that target, code generation; SPIR-V in a child process, as the\n"
	       "emitter runs it to contain LLVM aborts).\n\n");
	}

	speed(loop_src, iters, false, &ls);
	speed(map_src, iters, true, &ms);
	printf("host JIT vs interpreter, %d iterations per run, best of %d\n", iters, reps);
	printf("%-10s %10s %12s %12s %10s %10s %10s\n", "program", "insns", "executed", "interp ms",
	       "jit ms", "speedup", "verified");
	printf("%-10s %10zu %12llu %12.2f %10.3f %9.1fx %10s\n", "loop", ls.prog_insns,
	       (unsigned long long)ls.insns, ls.interp_ms, ls.jit_ms,
	       ls.err ? 0 : ls.interp_ms / ls.jit_ms, ls.verified ? "yes" : "no*");
	printf("%-10s %10zu %12llu %12.2f %10.3f %9.1fx %10s\n", "map-heavy", ms.prog_insns,
	       (unsigned long long)ms.insns, ms.interp_ms, ms.jit_ms,
	       ms.err ? 0 : ms.interp_ms / ms.jit_ms, ms.verified ? "yes" : "no*");
	printf("\nverified: whether gpuext_prog__verify() accepts it as a host program. no*: it\n"
	       "does not (a 10^6-iteration loop, or one with a map-lookup branch: more than the\n"
	       "verifier walks); the bench compiles it anyway, after the checked interpreter\n"
	       "ran every repetition, and the JIT must return the interpreter's r0.\n");
	for (int c = 0; c < C_CNT; c++) {
		free(isa.v[c]);
		free(pol.v[c]);
	}
	free(isa.insns); free(isa.ir); free(pol.insns); free(pol.ir);
	return ls.err || ms.err ? 1 : 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Oracle fuzzing of the verifier: the reference interpreter checks every
 * memory access, helper argument and call on its own, so a program the
 * verifier accepts must never fault there. The fuzz input is not a program
 * but the choices of a generator that writes programs likely to verify
 * (registers tracked by kind, stack written before it is read, map lookups
 * null-checked, indices bounded, loops counted down, a few subprograms).
 * Each accepted program runs on several inputs (context bytes, map
 * contents, CPU slot); -EFAULT/-EINVAL/-E2BIG/-ENOENT from the interpreter
 * is a verifier soundness bug and aborts with the disassembly. So does a
 * verification slower than GPUEXT_FUZZ_VERIFY_MS (default 1000 ms).
 *
 *   fuzz_verifier -max_total_time=600 -rss_limit_mb=2048 corpus/
 *   GPUEXT_FUZZ_STATS=1 fuzz_verifier ...   # acceptance statistics at exit
 *   GPUEXT_FUZZ_DUMP=1 fuzz_verifier CRASH  # print the generated program only
 *   GPUEXT_FUZZ_BUDGET=N, GPUEXT_FUZZ_VERIFY_MS=N: verifier budget, time limit
 *
 * Any byte string is a valid input (ELF seeds just pick some program), so
 * tools/test.sh's seeding with .bpf.o files is harmless.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuext/gpuext.h"
#include "gpuext/verifier.h"
#include "isa.h"
#include "verifier_gen.h"

#define NR_CPUS 2
#define RUN_INSN_LIMIT 2000000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* ------------------------------------------------------------------ */
/* The runtime: created once per process                              */
/* ------------------------------------------------------------------ */

static struct gpuext_runtime *rt;
struct gpuext_map *maps[M_CNT];
static struct gpuext_ringbuf_consumer *rb_cons;
static uint8_t var_rw[VAR_RW_SIZE], var_ro[VAR_RO_SIZE];
static char last_msg[1024];
static uint64_t verify_limit_ns = 1000000000ULL;
static uint64_t verify_budget;	/* 0: the verifier's default */
static bool dump_only;

static struct {
	uint64_t inputs, built, accepted, runs, run_ok, run_other_err, insns_total, insns_accepted;
	uint64_t processed_total, max_verify_ns, max_verify_insns, by_rule[GPUEXT_RULE_CNT];
} st;

static void print_cb(enum gpuext_log_level level, const char *msg, void *user)
{
	(void)user;
	if (level == GPUEXT_LOG_WARN)
		snprintf(last_msg, sizeof(last_msg), "%s", msg);
}

static int drop_sample(void *user, const void *data, size_t size)
{
	(void)user; (void)data; (void)size;
	return 0;
}

static void print_stats(void)
{
	fprintf(stderr,
		"fuzz_verifier stats: %llu inputs, %llu programs built, %llu accepted (%.1f%% of built), "
		"%llu runs (%llu ok, %llu other errors), avg %.0f insns/prog (%.0f accepted), "
		"avg %.0f insns processed, max verify %.2f ms (%llu insns processed)\n",
		(unsigned long long)st.inputs, (unsigned long long)st.built,
		(unsigned long long)st.accepted, st.built ? 100.0 * st.accepted / st.built : 0.0,
		(unsigned long long)st.runs, (unsigned long long)st.run_ok,
		(unsigned long long)st.run_other_err,
		st.built ? (double)st.insns_total / st.built : 0.0,
		st.accepted ? (double)st.insns_accepted / st.accepted : 0.0,
		st.built ? (double)st.processed_total / st.built : 0.0, st.max_verify_ns / 1e6,
		(unsigned long long)st.max_verify_insns);
	fprintf(stderr, "fuzz_verifier rejections by rule:");
	for (int r = 1; r < GPUEXT_RULE_CNT; r++)
		if (st.by_rule[r])
			fprintf(stderr, " %s=%llu", gpuext_rule_name(r), (unsigned long long)st.by_rule[r]);
	fprintf(stderr, "\n");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *e = getenv("GPUEXT_FUZZ_VERIFY_MS");

	(void)argc; (void)argv;
	if (e && atoi(e) > 0)
		verify_limit_ns = (uint64_t)atoi(e) * 1000000ULL;
	e = getenv("GPUEXT_FUZZ_BUDGET");
	if (e)
		verify_budget = strtoull(e, NULL, 0);
	dump_only = getenv("GPUEXT_FUZZ_DUMP") != NULL;
	if (getenv("GPUEXT_FUZZ_STATS"))
		atexit(print_stats);
	return 0;
}

static void setup(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, opts, .print = print_cb, .nr_cpu_slots = NR_CPUS,
		    .prandom_seed = 1);

	if (gpuext_runtime__new(&opts, &rt))
		abort();
	for (int i = 0; i < M_CNT; i++) {
		GPUEXT_OPTS(gpuext_map_def, def, .name = map_defs[i].name, .type = map_defs[i].type,
			    .key_size = map_defs[i].key_size, .value_size = map_defs[i].value_size,
			    .max_entries = map_defs[i].max_entries, .map_flags = map_defs[i].flags);

		if (gpuext_map__create(rt, &def, &maps[i]))
			abort();
	}
	if (gpuext_ringbuf_consumer__new(maps[M_RB], drop_sample, NULL, &rb_cons) ||
	    gpuext_runtime__register_var(rt, VAR_RW_ID, var_rw, sizeof(var_rw), true) ||
	    gpuext_runtime__register_var(rt, VAR_RO_ID, var_ro, sizeof(var_ro), false))
		abort();
}

/* ------------------------------------------------------------------ */
/* The oracle                                                         */
/* ------------------------------------------------------------------ */

static uint64_t rng_state;

static uint8_t rng8(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint8_t)(rng_state >> 24);
}

/* Input bytes of variant @v: random, zeros, ones, sign boundaries, small values. */
static void fill(uint8_t *buf, size_t len, int v)
{
	for (size_t i = 0; i < len; i++) {
		switch (v) {
		case 0: buf[i] = rng8(); break;
		case 1: buf[i] = 0; break;
		case 2: buf[i] = 0xff; break;
		case 3: buf[i] = (i % 4 == 3) ? 0x80 : (i % 4 == 0 ? 0x7f : 0); break;
		default: buf[i] = rng8() & 0x0f; break;
		}
	}
}

static void reset_maps(int v)
{
	uint8_t val[256];
	uint64_t key8;
	uint32_t key4;

	for (int m = 0; m < M_CNT; m++) {
		uint32_t vs = map_defs[m].value_size;

		switch (map_defs[m].type) {
		case BPF_MAP_TYPE_ARRAY:
		case BPF_MAP_TYPE_PERCPU_ARRAY:
			for (key4 = 0; key4 < map_defs[m].max_entries; key4++) {
				size_t len = map_defs[m].type == BPF_MAP_TYPE_ARRAY ? vs
						: NR_CPUS * ((vs + 7) & ~7u);

				fill(val, len, v);
				gpuext_map__update(maps[m], &key4, val, BPF_ANY);
			}
			break;
		case BPF_MAP_TYPE_HASH:
			while (gpuext_map__next_key(maps[m], NULL, &key8) == 0)
				gpuext_map__delete(maps[m], &key8);
			for (key8 = 0; key8 < 4; key8 += 1 + (v & 1)) {
				fill(val, vs, v);
				gpuext_map__update(maps[m], &key8, val, BPF_ANY);
			}
			break;
		default:
			gpuext_ringbuf_consumer__consume(rb_cons);
		}
	}
	fill(var_rw, sizeof(var_rw), v);
	fill(var_ro, sizeof(var_ro), v);
}

static void dump_and_abort(struct gpuext_prog *prog, const char *why, uint32_t ctx_len,
			   const uint8_t *mem, size_t mem_len, int variant)
{
	const struct bpf_insn *insns = gpuext_prog__insns(prog);
	size_t cnt = gpuext_prog__insn_cnt(prog);
	GPUEXT_OPTS(gpuext_verify_opts, vo, .type = GPUEXT_PROG_HOST, .ctx_size = ctx_len,
		    .log_level = 1);
	static char log[1 << 16];

	fprintf(stderr, "\n==== fuzz_verifier: VERIFIER SOUNDNESS BUG ====\n%s\n", why);
	fprintf(stderr, "interpreter: %s\n", last_msg);
	fprintf(stderr, "ctx_size %u; input variant %d, %zu bytes:", ctx_len, variant, mem_len);
	for (size_t i = 0; i < mem_len; i++)
		fprintf(stderr, " %02x", mem[i]);
	fprintf(stderr, "\nprogram (%zu slots, functions at", cnt);
	for (size_t f = 0; f < gpuext_prog__func_cnt(prog); f++)
		fprintf(stderr, " %u", gpuext_prog__func_start(prog, f));
	fprintf(stderr, "):\n");
	for (size_t i = 0; i < cnt;) {
		char text[160] = "";
		int n = gpuext_disasm_insn(prog, insns, cnt, i, text, sizeof(text));

		fprintf(stderr, "%5zu: %s\n", i, text);
		i += n > 0 ? (size_t)n : 1;
	}
	vo.log_buf = log;
	vo.log_size = sizeof(log);
	gpuext_prog__verify(prog, &vo, NULL);
	fprintf(stderr, "---- verifier log (level 1, last 8 KiB) ----\n%s\n",
		strlen(log) > 8192 ? log + strlen(log) - 8192 : log);
	abort();
}

static void check_prog(struct gpuext_prog *prog, uint32_t ctx_len, uint64_t seed)
{
	GPUEXT_OPTS(gpuext_verify_opts, vo, .type = GPUEXT_PROG_HOST, .ctx_size = ctx_len,
		    .insn_budget = verify_budget);
	GPUEXT_OPTS(gpuext_verify_result, res);
	char log[512];
	uint8_t *mem = malloc(ctx_len ? ctx_len : 1);
	int err;

	if (!mem)
		return;
	vo.log_buf = log;
	vo.log_size = sizeof(log);
	err = gpuext_prog__verify(prog, &vo, &res);
	st.processed_total += res.insns_processed;
	if (res.time_ns > st.max_verify_ns) {
		st.max_verify_ns = res.time_ns;
		st.max_verify_insns = res.insns_processed;
	}
	if (res.time_ns > verify_limit_ns) {
		char why[256];

		snprintf(why, sizeof(why),
			 "verification took %.1f ms (limit %.0f ms): %llu insns processed, %u states, "
			 "%u peak, verdict %s",
			 res.time_ns / 1e6, verify_limit_ns / 1e6,
			 (unsigned long long)res.insns_processed, res.states, res.peak_states,
			 res.accepted ? "accepted" : gpuext_rule_name(res.rule));
		last_msg[0] = '\0';
		dump_and_abort(prog, why, ctx_len, mem, 0, -1);
	}
	if (err || !res.accepted) {
		st.by_rule[res.rule < GPUEXT_RULE_CNT ? res.rule : 0]++;
		free(mem);
		return;
	}
	st.accepted++;
	st.insns_accepted += gpuext_prog__insn_cnt(prog);
	rng_state = seed | 1;
	for (int v = 0; v < 5; v++) {
		GPUEXT_OPTS(gpuext_run_opts, ro, .ctx = ctx_len ? mem : NULL, .ctx_len = ctx_len,
			    .ctx_writable = true, .cpu = (uint32_t)v % NR_CPUS,
			    .insn_limit = RUN_INSN_LIMIT);
		uint64_t r0 = 0;

		fill(mem, ctx_len, v);
		reset_maps(v);
		uint8_t *copy = malloc(ctx_len ? ctx_len : 1);

		if (!copy)
			break;
		memcpy(copy, mem, ctx_len);
		last_msg[0] = '\0';
		err = gpuext_prog__run(prog, &ro, &r0);
		st.runs++;
		if (err == -EFAULT || err == -EINVAL || err == -E2BIG || err == -ENOENT) {
			char why[128];

			snprintf(why, sizeof(why), "accepted program failed in the interpreter: %s (%d)",
				 strerror(-err), err);
			dump_and_abort(prog, why, ctx_len, copy, ctx_len, v);
		}
		if (err)
			st.run_other_err++;
		else
			st.run_ok++;
		free(copy);
	}
	gpuext_ringbuf_consumer__consume(rb_cons);
	free(mem);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gen g;
	struct gpuext_prog *prog = NULL;
	uint64_t seed = 0;

	if (!rt)
		setup();
	st.inputs++;
	memset(&g, 0, sizeof(g));
	g.d = data;
	g.size = size;
	for (size_t i = 0; i < size && i < 8; i++)
		seed = seed << 8 | data[size - 1 - i];
	if (!generate(&g))
		return 0;
	if (gpuext_prog__new(rt, "fz", g.insns, g.n, maps, M_CNT, &prog))
		return 0; /* an encoding the generator got wrong: not interesting */
	st.built++;
	st.insns_total += g.n;
	if (dump_only) { /* triage: print the program, verify with a log, run nothing */
		for (size_t i = 0; i < g.n;) {
			char text[160] = "";
			int n = gpuext_disasm_insn(prog, g.insns, g.n, i, text, sizeof(text));

			printf("%5zu: %s\n", i, text);
			i += n > 0 ? (size_t)n : 1;
		}
		printf("ctx_size %u\n", g.ctx_len);
		gpuext_prog__free(prog);
		return 0;
	}
	check_prog(prog, g.ctx_len, seed);
	gpuext_prog__free(prog);
	return 0;
}

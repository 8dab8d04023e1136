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

#define MAX_INSNS 4096
#define BODY_CAP 1500		/* stop adding blocks past this many slots */
#define MAX_FUNCS 5
#define MAX_DEPTH 4		/* nesting of branches/loops */
#define NR_CPUS 2
#define RUN_INSN_LIMIT 2000000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* ------------------------------------------------------------------ */
/* The runtime: created once per process                              */
/* ------------------------------------------------------------------ */

enum { M_ARR1, M_ARR4, M_HASH, M_PCPU, M_RO, M_RB, M_CNT };

static const struct {
	const char *name;
	uint32_t type, key_size, value_size, max_entries, flags;
} map_defs[M_CNT] = {
	[M_ARR1] = { "arr1", BPF_MAP_TYPE_ARRAY, 4, 48, 1, 0 },
	[M_ARR4] = { "arr4", BPF_MAP_TYPE_ARRAY, 4, 16, 4, 0 },
	[M_HASH] = { "hash", BPF_MAP_TYPE_HASH, 8, 24, 16, 0 },
	[M_PCPU] = { "pcpu", BPF_MAP_TYPE_PERCPU_ARRAY, 4, 32, 2, 0 },
	[M_RO] = { "ro", BPF_MAP_TYPE_ARRAY, 4, 16, 1, BPF_F_RDONLY_PROG },
	[M_RB] = { "rb", BPF_MAP_TYPE_RINGBUF, 0, 0, 4096, 0 },
};

#define VAR_RW_ID 7
#define VAR_RW_SIZE 64
#define VAR_RO_ID 8
#define VAR_RO_SIZE 16

static struct gpuext_runtime *rt;
static struct gpuext_map *maps[M_CNT];
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
/* The generator                                                      */
/* ------------------------------------------------------------------ */

/* What the generator believes a register (or spilled slot) holds. */
enum mk {
	MK_NONE = 0,	/* uninitialised, or differs between paths: do not read */
	MK_SCALAR,
	MK_CTX,		/* the context, offset 0 */
	MK_FP,		/* r10 */
	MK_PTR,		/* memory [lo, hi) relative to the register */
	MK_REC,		/* a ring-buffer record to release (only inside its block) */
};

struct mreg {
	uint8_t kind;
	bool wr;	/* MK_PTR: writable */
	bool var_ok;	/* MK_PTR: variable offsets allowed (not stack memory) */
	bool stack;	/* MK_PTR into the caller's stack: reads need initialised bytes */
	int32_t lo, hi;
};

struct model {
	struct mreg r[11];
	uint64_t init;		/* stack slot k (fp-8k-8 .. fp-8k-1) fully written */
	struct mreg slot[64];	/* what an initialised slot holds */
};

enum argk { A_SCALAR, A_CTX, A_STACK16, A_CNT };

struct gen {
	const uint8_t *d;
	size_t size, pos;
	struct bpf_insn insns[MAX_INSNS];
	size_t n;
	bool full;
	uint32_t ctx_len;
	struct model m;
	uint16_t lock;		/* registers a loop or block must not write */
	bool in_loop;
	int depth;
	int fn, nfuncs;
	int nargs[MAX_FUNCS];
	uint8_t args[MAX_FUNCS][5];
	uint32_t start[MAX_FUNCS];
	struct { size_t at; int fn; bool ldimm; } fix[256];
	int nfix;
	int max_slot;		/* stack slots this function may use */
	bool called[MAX_FUNCS];
};

static uint8_t take(struct gen *g)
{
	return g->pos < g->size ? g->d[g->pos++] : 0;
}

static unsigned pick(struct gen *g, unsigned n)
{
	return n ? take(g) % n : 0;
}

static uint32_t take32(struct gen *g)
{
	uint32_t v = take(g);

	v |= (uint32_t)take(g) << 8;
	v |= (uint32_t)take(g) << 16;
	return v | (uint32_t)take(g) << 24;
}

static bool more(const struct gen *g)
{
	return g->pos < g->size && !g->full && g->n < BODY_CAP;
}

static size_t emit(struct gen *g, uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	if (g->n >= MAX_INSNS - 4) {
		g->full = true;
		return g->n ? g->n - 1 : 0;
	}
	g->insns[g->n] = isa_make(code, dst, src, off, imm);
	return g->n++;
}

static void emit_lddw(struct gen *g, uint8_t dst, uint8_t src, int32_t lo, int32_t hi)
{
	emit(g, BPF_LD | BPF_DW | BPF_IMM, dst, src, 0, lo);
	emit(g, 0, 0, 0, 0, hi);
}

/* Points the forward jump at @j to the current end. */
static void patch(struct gen *g, size_t j)
{
	int64_t off = (int64_t)g->n - (int64_t)j - 1;

	if (g->full || off > INT16_MAX)
		return;
	g->insns[j].off = (int16_t)off;
}

static int32_t interesting(struct gen *g)
{
	static const int32_t vals[] = { 0, 1, -1, 2, 7, 8, 15, 16, 31, 32, 63, 64, 255, 256,
					0x7fff, -0x8000, 0xffff, 0x7fffffff, INT32_MIN, -2, 3, 4 };

	switch (pick(g, 4)) {
	case 0: return (int32_t)take32(g);
	case 1: return (int8_t)take(g);
	default: return vals[pick(g, sizeof(vals) / sizeof(vals[0]))];
	}
}

static bool writable(const struct gen *g, int r)
{
	return r >= 0 && r <= 9 && !(g->lock & (1u << r));
}

/* A register of one of the kinds in @mask (bit per enum mk), or -1. */
static int reg_of(struct gen *g, unsigned mask)
{
	unsigned s = pick(g, 11);

	for (unsigned k = 0; k < 11; k++) {
		int r = (int)((s + k) % 11);

		if (mask & (1u << g->m.r[r].kind))
			return r;
	}
	return -1;
}

/* A register to overwrite: prefers ones that hold nothing useful. */
static int dst_reg(struct gen *g, bool clobber_ptrs)
{
	unsigned s = pick(g, 10);

	for (unsigned k = 0; k < 10; k++) {
		int r = (int)((s + k) % 10);

		if (!writable(g, r))
			continue;
		if (clobber_ptrs || g->m.r[r].kind == MK_NONE || g->m.r[r].kind == MK_SCALAR)
			return r;
	}
	for (int r = 0; r <= 9; r++)
		if (writable(g, r))
			return r;
	return -1;
}

/* A register holding a scalar; materialises one if there is none. */
static int scalar_reg(struct gen *g)
{
	int r = reg_of(g, 1u << MK_SCALAR);

	if (r >= 0)
		return r;
	r = dst_reg(g, false);
	if (r < 0)
		return -1;
	emit(g, BPF_ALU64 | BPF_MOV | BPF_K, (uint8_t)r, 0, 0, interesting(g));
	g->m.r[r] = (struct mreg){ .kind = MK_SCALAR };
	return r;
}

static void set_scalar(struct gen *g, int r)
{
	g->m.r[r] = (struct mreg){ .kind = MK_SCALAR };
}

static void clobber_call(struct gen *g)
{
	for (int r = 1; r <= 5; r++)
		g->m.r[r].kind = MK_NONE;
	set_scalar(g, 0);
}

static void merge(struct model *a, const struct model *b)
{
	for (int r = 0; r < 11; r++)
		if (memcmp(&a->r[r], &b->r[r], sizeof(a->r[r])))
			a->r[r].kind = MK_NONE;
	a->init &= b->init;
	for (int s = 0; s < 64; s++)
		if (memcmp(&a->slot[s], &b->slot[s], sizeof(a->slot[s])))
			a->slot[s].kind = MK_NONE;
}

static int slot_pick(struct gen *g)
{
	return (int)pick(g, (unsigned)g->max_slot);
}

static const uint8_t sizes[4] = { BPF_B, BPF_H, BPF_W, BPF_DW };

/* ---- blocks ---- */

static void gen_blocks(struct gen *g, int count);

static void b_alu(struct gen *g)
{
	static const uint8_t ops[] = { BPF_ADD, BPF_SUB, BPF_MUL, BPF_DIV, BPF_OR, BPF_AND,
				       BPF_LSH, BPF_RSH, BPF_NEG, BPF_MOD, BPF_XOR, BPF_MOV,
				       BPF_ARSH, BPF_END };
	uint8_t op = ops[pick(g, sizeof(ops))];
	bool is64 = pick(g, 3) != 0, use_reg = pick(g, 2);
	uint8_t cls = is64 ? BPF_ALU64 : BPF_ALU;
	int dst = dst_reg(g, false), src = -1;
	int16_t off = 0;
	int32_t imm = interesting(g);

	if (dst < 0)
		return;
	if (g->m.r[dst].kind != MK_SCALAR && op != BPF_MOV) {
		op = BPF_MOV; /* give it a value first */
	}
	if (op == BPF_NEG) {
		emit(g, cls | BPF_NEG, (uint8_t)dst, 0, 0, 0);
		return;
	}
	if (op == BPF_END) {
		static const int32_t w[] = { 16, 32, 64 };
		uint8_t srcbit = is64 ? 0 : (pick(g, 2) ? BPF_TO_BE : BPF_TO_LE);

		emit(g, cls | BPF_END | srcbit, (uint8_t)dst, 0, 0, w[pick(g, 3)]);
		return;
	}
	if (use_reg) {
		src = scalar_reg(g);
		if (src < 0)
			return;
	}
	if ((op == BPF_DIV || op == BPF_MOD) && pick(g, 3) == 0)
		off = 1; /* sdiv / smod */
	if (op == BPF_MOV && use_reg && pick(g, 4) == 0) {
		static const int16_t sx[] = { 8, 16, 32 };

		off = sx[pick(g, is64 ? 3 : 2)];
	}
	if ((op == BPF_LSH || op == BPF_RSH || op == BPF_ARSH) && !use_reg)
		imm = (int32_t)pick(g, is64 ? 64 : 32);
	if (use_reg)
		emit(g, cls | op | BPF_X, (uint8_t)dst, (uint8_t)src, off, 0);
	else
		emit(g, cls | op | BPF_K, (uint8_t)dst, 0, off, imm);
	set_scalar(g, dst);
}

static void b_ldimm(struct gen *g)
{
	int dst = dst_reg(g, false);

	if (dst < 0)
		return;
	switch (pick(g, 4)) {
	case 0: /* direct map value: 1-entry arrays only */ {
		int m = pick(g, 2) ? M_ARR1 : M_RO;
		int32_t vs = (int32_t)map_defs[m].value_size, off = (int32_t)pick(g, (unsigned)vs);

		if (pick(g, 2))
			emit_lddw(g, (uint8_t)dst, BPF_PSEUDO_MAP_VALUE, (int32_t)gpuext_map__id(maps[m]), off);
		else
			emit_lddw(g, (uint8_t)dst, BPF_PSEUDO_MAP_IDX_VALUE, m, off);
		g->m.r[dst] = (struct mreg){ .kind = MK_PTR, .wr = m != M_RO, .var_ok = true,
					     .lo = -off, .hi = vs - off };
		return;
	}
	case 1: { /* a registered variable */
		bool rw = pick(g, 3) != 0;

		emit_lddw(g, (uint8_t)dst, BPF_PSEUDO_BTF_ID, rw ? VAR_RW_ID : VAR_RO_ID, 0);
		g->m.r[dst] = (struct mreg){ .kind = MK_PTR, .wr = rw, .var_ok = true, .lo = 0,
					     .hi = rw ? VAR_RW_SIZE : VAR_RO_SIZE };
		return;
	}
	default:
		emit_lddw(g, (uint8_t)dst, 0, interesting(g), interesting(g));
		set_scalar(g, dst);
	}
}

/* A load/store at a constant offset through a pointer register. */
static void b_mem_const(struct gen *g)
{
	int p = reg_of(g, 1u << MK_CTX | 1u << MK_FP | 1u << MK_PTR);
	unsigned sz_i = pick(g, 4), sz = 1u << sz_i;
	bool store = pick(g, 2), imm_store = pick(g, 2);
	int32_t off;
	struct mreg *pr;

	if (p < 0)
		return;
	pr = &g->m.r[p];
	if (pr->kind == MK_FP) {
		int s = slot_pick(g);

		off = -8 * (s + 1) + (int32_t)pick(g, 8);
		off &= ~(int32_t)(sz - 1); /* mostly aligned */
		if (pick(g, 8) == 0)
			off -= 1;
		if (off + (int32_t)sz > -8 * s)
			off = -8 * (s + 1);
		if (!store && !(g->m.init & (1ull << s)))
			store = true;
		if (store) {
			int src = imm_store ? -1 : (int)pick(g, 11);
			bool spill = false;

			if (src >= 0 && g->m.r[src].kind == MK_NONE)
				src = -1;
			if (src >= 0 && g->m.r[src].kind != MK_SCALAR) {
				/* spilling a pointer: whole aligned slots only */
				off = -8 * (s + 1);
				sz = 8;
				sz_i = 3;
				spill = true;
				if (g->in_loop && !(g->m.init & (1ull << s)))
					return;
			}
			if (src >= 0)
				emit(g, BPF_STX | BPF_MEM | sizes[sz_i], 10, (uint8_t)src, (int16_t)off, 0);
			else
				emit(g, BPF_ST | BPF_MEM | sizes[sz_i], 10, 0, (int16_t)off, interesting(g));
			if (sz == 8 && off == -8 * (s + 1)) {
				g->m.init |= 1ull << s;
				g->m.slot[s] = spill ? g->m.r[src] : (struct mreg){ .kind = MK_SCALAR };
			} else if (g->m.init & (1ull << s)) {
				g->m.slot[s] = (struct mreg){ .kind = MK_SCALAR };
			}
			return;
		}
		int dst = dst_reg(g, false);

		if (dst < 0)
			return;
		if (g->m.slot[s].kind != MK_SCALAR && g->m.slot[s].kind != MK_NONE && !g->in_loop) {
			emit(g, BPF_LDX | BPF_MEM | BPF_DW, (uint8_t)dst, 10, (int16_t)(-8 * (s + 1)), 0);
			g->m.r[dst] = g->m.slot[s];
			return;
		}
		emit(g, BPF_LDX | (pick(g, 4) == 0 && sz < 8 ? BPF_MEMSX : BPF_MEM) | sizes[sz_i],
		     (uint8_t)dst, 10, (int16_t)off, 0);
		set_scalar(g, dst);
		return;
	}
	if (pr->kind == MK_CTX) {
		if (g->ctx_len < sz)
			return;
		off = (int32_t)pick(g, g->ctx_len - sz + 1);
		if (pick(g, 16) == 0)
			off = (int32_t)g->ctx_len - (int32_t)sz + 1; /* one past: must be rejected */
	} else {
		int32_t span = pr->hi - pr->lo - (int32_t)sz;

		if (span < 0)
			return;
		off = pr->lo + (int32_t)pick(g, (unsigned)span + 1);
		if (pick(g, 16) == 0)
			off = pr->hi - (int32_t)sz + 1;
		if (!pr->wr)
			store = store && pick(g, 8) == 0; /* must be rejected */
	}
	if (store) {
		int src = imm_store ? -1 : scalar_reg(g);

		if (src >= 0)
			emit(g, BPF_STX | BPF_MEM | sizes[sz_i], (uint8_t)p, (uint8_t)src, (int16_t)off, 0);
		else
			emit(g, BPF_ST | BPF_MEM | sizes[sz_i], (uint8_t)p, 0, (int16_t)off, interesting(g));
		return;
	}
	int dst = dst_reg(g, false);

	if (dst < 0)
		return;
	emit(g, BPF_LDX | (pick(g, 4) == 0 && sz < 8 ? BPF_MEMSX : BPF_MEM) | sizes[sz_i],
	     (uint8_t)dst, (uint8_t)p, (int16_t)off, 0);
	set_scalar(g, dst);
}

/* A scalar derived from input: a context load, or an existing scalar. */
static int source_scalar(struct gen *g)
{
	int c = reg_of(g, 1u << MK_CTX);

	if (c >= 0 && g->ctx_len >= 8 && pick(g, 3)) {
		int dst = dst_reg(g, false);
		unsigned sz_i = pick(g, 4), sz = 1u << sz_i;

		if (dst < 0)
			return -1;
		emit(g, BPF_LDX | BPF_MEM | sizes[sz_i], (uint8_t)dst, (uint8_t)c,
		     (int16_t)pick(g, g->ctx_len - sz + 1), 0);
		set_scalar(g, dst);
		return dst;
	}
	return scalar_reg(g);
}

/* Turns scalar @r through a few operations the range tracker must follow. */
static void transform(struct gen *g, int r)
{
	unsigned n = pick(g, 4);

	for (unsigned i = 0; i < n; i++) {
		bool is64 = pick(g, 3) != 0;
		uint8_t cls = is64 ? BPF_ALU64 : BPF_ALU;

		switch (pick(g, 14)) {
		case 0: emit(g, cls | BPF_AND | BPF_K, (uint8_t)r, 0, 0, interesting(g)); break;
		case 1: emit(g, cls | BPF_RSH | BPF_K, (uint8_t)r, 0, 0, (int32_t)pick(g, is64 ? 64 : 32)); break;
		case 2: emit(g, cls | BPF_LSH | BPF_K, (uint8_t)r, 0, 0, (int32_t)pick(g, 8)); break;
		case 3: emit(g, cls | BPF_ADD | BPF_K, (uint8_t)r, 0, 0, interesting(g)); break;
		case 4: emit(g, cls | BPF_SUB | BPF_K, (uint8_t)r, 0, 0, interesting(g)); break;
		case 5: emit(g, cls | BPF_MUL | BPF_K, (uint8_t)r, 0, 0, (int32_t)pick(g, 9)); break;
		case 6: emit(g, cls | BPF_MOD | BPF_K, (uint8_t)r, 0, (int16_t)(pick(g, 4) == 0), interesting(g)); break;
		case 7: emit(g, cls | BPF_DIV | BPF_K, (uint8_t)r, 0, (int16_t)(pick(g, 4) == 0), interesting(g)); break;
		case 8: emit(g, cls | BPF_ARSH | BPF_K, (uint8_t)r, 0, 0, (int32_t)pick(g, is64 ? 64 : 32)); break;
		case 9: emit(g, BPF_ALU | BPF_MOV | BPF_X, (uint8_t)r, (uint8_t)r, 0, 0); break;
		case 10: {
			static const int16_t sx[] = { 8, 16, 32 };

			emit(g, cls | BPF_MOV | BPF_X, (uint8_t)r, (uint8_t)r, sx[pick(g, is64 ? 3 : 2)], 0);
			break;
		}
		case 11: emit(g, cls | BPF_NEG, (uint8_t)r, 0, 0, 0); break;
		case 12: {
			int o = scalar_reg(g);

			if (o >= 0)
				emit(g, cls | (pick(g, 2) ? BPF_AND : BPF_ADD) | BPF_X, (uint8_t)r, (uint8_t)o, 0, 0);
			break;
		}
		default: emit(g, cls | (pick(g, 2) ? BPF_OR : BPF_XOR) | BPF_K, (uint8_t)r, 0, 0, interesting(g)); break;
		}
	}
}

/* Emits a check that r <= lim (jumping to a "skip" label on failure); returns fixups. */
static int bound(struct gen *g, int r, int64_t lim, size_t fx[4])
{
	int nf = 0;
	uint8_t j = pick(g, 3) ? BPF_JMP : BPF_JMP32;

	if (pick(g, 8) == 0) {
		static const int64_t d[] = { 1, 2, 8, -1 };

		lim += d[pick(g, 4)]; /* off by a little: must be rejected or harmless */
	}
	if (lim < 0)
		lim = 0;
	switch (pick(g, 11)) {
	case 0: { /* mask */
		int64_t m = 1;

		while (m * 2 - 1 <= lim)
			m *= 2;
		emit(g, (pick(g, 4) ? BPF_ALU64 : BPF_ALU) | BPF_AND | BPF_K, (uint8_t)r, 0, 0, (int32_t)(m - 1));
		break;
	}
	case 1:
		fx[nf++] = emit(g, j | BPF_JGT | BPF_K, (uint8_t)r, 0, 0, (int32_t)lim);
		break;
	case 2:
		fx[nf++] = emit(g, j | BPF_JGE | BPF_K, (uint8_t)r, 0, 0, (int32_t)lim + 1);
		break;
	case 3:
		fx[nf++] = emit(g, j | BPF_JSGT | BPF_K, (uint8_t)r, 0, 0, (int32_t)lim);
		fx[nf++] = emit(g, (pick(g, 3) ? BPF_JMP : BPF_JMP32) | BPF_JSLT | BPF_K, (uint8_t)r, 0, 0, 0);
		break;
	case 4: { /* against a register */
		int k = dst_reg(g, false);

		if (k < 0 || k == r)
			break;
		emit(g, BPF_ALU64 | BPF_MOV | BPF_K, (uint8_t)k, 0, 0, (int32_t)lim);
		set_scalar(g, k);
		if (pick(g, 2))
			fx[nf++] = emit(g, j | BPF_JGT | BPF_X, (uint8_t)r, (uint8_t)k, 0, 0);
		else
			fx[nf++] = emit(g, j | BPF_JLT | BPF_X, (uint8_t)k, (uint8_t)r, 0, 0);
		break;
	}
	case 5: /* positive form: if r < lim+1 goto ok; goto skip; ok: */
		emit(g, j | BPF_JLT | BPF_K, (uint8_t)r, 0, 1, (int32_t)lim + 1);
		fx[nf++] = emit(g, BPF_JMP | BPF_JA, 0, 0, 0, 0);
		break;
	case 6:
		emit(g, (pick(g, 2) ? BPF_ALU64 : BPF_ALU) | BPF_MOD | BPF_K, (uint8_t)r, 0, 0, (int32_t)lim + 1);
		break;
	case 7: /* jset: no bit outside the mask */ {
		int64_t m = 1;

		while (m * 2 - 1 <= lim)
			m *= 2;
		fx[nf++] = emit(g, j | BPF_JSET | BPF_K, (uint8_t)r, 0, 0, (int32_t)~(m - 1));
		break;
	}
	case 8: /* signed, lower bound first */
		fx[nf++] = emit(g, j | BPF_JSLT | BPF_K, (uint8_t)r, 0, 0, 0);
		fx[nf++] = emit(g, (pick(g, 3) ? BPF_JMP : BPF_JMP32) | BPF_JSGE | BPF_K, (uint8_t)r, 0, 0, (int32_t)lim + 1);
		break;
	case 9: /* reversed: if lim < r (JLE) */
		emit(g, j | BPF_JLE | BPF_K, (uint8_t)r, 0, 1, (int32_t)lim);
		fx[nf++] = emit(g, BPF_JMP | BPF_JA, 0, 0, 0, 0);
		break;
	default:
		break; /* unbounded: usually rejected */
	}
	return nf;
}

/* ptr + bounded variable index, then an access: the range tracker's main test. */
static void b_index(struct gen *g)
{
	int p = reg_of(g, 1u << MK_PTR | 1u << MK_REC), i, t;
	unsigned sz_i = pick(g, 4), sz = 1u << sz_i;
	struct mreg pm;
	size_t fx[4];
	int nf;

	if (p < 0 || (g->m.r[p].kind == MK_PTR && !g->m.r[p].var_ok))
		return;
	pm = g->m.r[p];
	if (pm.hi < (int32_t)sz)
		return;
	uint16_t saved = g->lock;

	g->lock |= (uint16_t)(1u << p);
	i = source_scalar(g);
	if (i < 0 || i == p || !writable(g, i)) {
		g->lock = saved;
		return;
	}
	g->lock |= (uint16_t)(1u << i);
	transform(g, i);
	nf = bound(g, i, pm.hi - (int32_t)sz, fx);
	t = dst_reg(g, false);
	g->lock = saved;
	if (t >= 0) {
		bool atomic = pm.wr && sz >= 4 && pick(g, 8) == 0;

		if (atomic && pick(g, 4)) /* aligned index (unless the base is not) */
			emit(g, BPF_ALU64 | BPF_AND | BPF_K, (uint8_t)i, 0, 0, -(int32_t)sz);
		emit(g, BPF_ALU64 | BPF_MOV | BPF_X, (uint8_t)t, (uint8_t)p, 0, 0);
		emit(g, BPF_ALU64 | BPF_ADD | BPF_X, (uint8_t)t, (uint8_t)i, 0, 0);
		if (atomic || (pm.wr && pick(g, 2))) {
			if (atomic) {
				int s = scalar_reg(g);

				if (s >= 0 && s != t)
					emit(g, BPF_STX | BPF_ATOMIC | sizes[sz_i], (uint8_t)t, (uint8_t)s, 0,
					     pick(g, 2) || !writable(g, s) ? BPF_ADD : (BPF_ADD | BPF_FETCH));
			} else {
				emit(g, BPF_ST | BPF_MEM | sizes[sz_i], (uint8_t)t, 0, 0, interesting(g));
			}
			g->m.r[t] = pm; /* keeps the pointer: value unknown, kind NONE below */
			g->m.r[t].kind = MK_NONE;
		} else {
			emit(g, BPF_LDX | BPF_MEM | sizes[sz_i], (uint8_t)t, (uint8_t)t, 0, 0);
			set_scalar(g, t);
		}
	}
	for (int k = 0; k < nf; k++)
		patch(g, fx[k]);
	set_scalar(g, i);
	if (nf && t >= 0)
		g->m.r[t].kind = MK_NONE; /* pointer on one path, scalar on the other */
}

static void load_map(struct gen *g, uint8_t dst, int m)
{
	if (pick(g, 2))
		emit_lddw(g, dst, BPF_PSEUDO_MAP_FD, (int32_t)gpuext_map__id(maps[m]), 0);
	else
		emit_lddw(g, dst, BPF_PSEUDO_MAP_IDX, m, 0);
}

/* Writes a map key at fp-8 (fp-8..fp-1). */
static void key_on_stack(struct gen *g, int m)
{
	if (pick(g, 3)) {
		emit(g, BPF_ST | BPF_MEM | BPF_DW, 10, 0, -8, (int32_t)pick(g, 6));
	} else {
		int s = source_scalar(g);

		if (s < 0)
			return;
		emit(g, BPF_STX | BPF_MEM | (map_defs[m].key_size == 8 ? BPF_DW : BPF_W), 10, (uint8_t)s,
		     -8, 0);
		if (map_defs[m].key_size != 8)
			emit(g, BPF_ST | BPF_MEM | BPF_W, 10, 0, -4, 0);
	}
	g->m.init |= 1;
	g->m.slot[0] = (struct mreg){ .kind = MK_SCALAR };
}

static void b_lookup(struct gen *g)
{
	static const int ms[] = { M_ARR1, M_ARR4, M_HASH, M_PCPU, M_RO, M_ARR1, M_HASH };
	int m = ms[pick(g, sizeof(ms) / sizeof(ms[0]))], keep;
	struct mreg val = { .kind = MK_PTR, .wr = m != M_RO, .var_ok = true, .lo = 0,
			    .hi = (int32_t)map_defs[m].value_size };

	if (g->lock & 0x3f)
		return;
	key_on_stack(g, m);
	load_map(g, 1, m);
	emit(g, BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0);
	emit(g, BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -8);
	emit(g, BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem);
	clobber_call(g);
	g->m.r[0].kind = MK_NONE;
	switch (pick(g, 8)) {
	case 0: /* no null check: must be rejected if used */
		g->m.r[0] = val;
		return;
	case 1: case 2: case 3: { /* early exit on NULL, then keep the value in r6-r9 */
		emit(g, BPF_JMP | BPF_JNE | BPF_K, 0, 0, 2, 0);
		emit(g, BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, (int32_t)pick(g, 3));
		emit(g, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
		keep = 6 + (int)pick(g, 4);
		if (!g->in_loop && writable(g, keep)) {
			emit(g, BPF_ALU64 | BPF_MOV | BPF_X, (uint8_t)keep, 0, 0, 0);
			g->m.r[keep] = val;
		}
		g->m.r[0] = val;
		return;
	}
	default: { /* if (r0) { ... } */
		size_t j = emit(g, BPF_JMP | (pick(g, 4) ? BPF_JEQ : BPF_JNE) | BPF_K, 0, 0, 0, 0);
		struct model before = g->m;
		bool jne = g->insns[j].code == (BPF_JMP | BPF_JNE | BPF_K);

		if (jne) { /* if (r0 != 0) goto use; goto out; use: */
			g->insns[j].off = 1;
			j = emit(g, BPF_JMP | BPF_JA, 0, 0, 0, 0);
		}
		g->m.r[0] = val;
		g->lock |= 1;
		g->depth++;
		gen_blocks(g, 1 + (int)pick(g, 3));
		g->depth--;
		g->lock &= ~1u;
		patch(g, j);
		merge(&g->m, &before);
	}
	}
}

static void b_update(struct gen *g)
{
	static const int ms[] = { M_ARR1, M_ARR4, M_HASH, M_PCPU, M_HASH };
	int m = ms[pick(g, sizeof(ms) / sizeof(ms[0]))];
	int vs = (int)map_defs[m].value_size, base = -8 - ((vs + 7) & ~7);

	if (g->lock & 0x3f || g->max_slot * 8 < -base)
		return;
	key_on_stack(g, m);
	for (int o = base; o < -8; o += 8) {
		int s = (-o) / 8 - 1;

		emit(g, BPF_ST | BPF_MEM | BPF_DW, 10, 0, (int16_t)o, interesting(g));
		g->m.init |= 1ull << s;
		g->m.slot[s] = (struct mreg){ .kind = MK_SCALAR };
	}
	load_map(g, 1, m);
	emit(g, BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0);
	emit(g, BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -8);
	if (pick(g, 3)) {
		emit(g, BPF_ALU64 | BPF_MOV | BPF_X, 3, 10, 0, 0);
		emit(g, BPF_ALU64 | BPF_ADD | BPF_K, 3, 0, 0, base);
		emit(g, BPF_ALU64 | BPF_MOV | BPF_K, 4, 0, 0, (int32_t)pick(g, 3));
		emit(g, BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_update_elem);
	} else {
		emit(g, BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_delete_elem);
	}
	clobber_call(g);
}

static void b_helper(struct gen *g)
{
	static const int32_t ids[] = { BPF_FUNC_ktime_get_ns, BPF_FUNC_get_prandom_u32,
				       BPF_FUNC_get_smp_processor_id };

	if (g->lock & 0x3f)
		return;
	if (pick(g, 4) == 0) {
		load_map(g, 1, M_RB);
		emit(g, BPF_ALU64 | BPF_MOV | BPF_K, 2, 0, 0, (int32_t)pick(g, 4));
		emit(g, BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_ringbuf_query);
	} else {
		emit(g, BPF_JMP | BPF_CALL, 0, 0, 0, ids[pick(g, 3)]);
	}
	clobber_call(g);
}

/* reserve / null check / write / submit or discard; or ringbuf_output. */
static void b_ringbuf(struct gen *g)
{
	int32_t size = 8 * (1 + (int32_t)pick(g, 8));
	int keep;
	size_t j;

	if (g->lock & 0x3f)
		return;
	if (pick(g, 4) == 0) { /* output from the stack */
		int s = slot_pick(g);
		int32_t len = (int32_t)pick(g, 9);

		if (!(g->m.init & (1ull << s)))
			return;
		load_map(g, 1, M_RB);
		emit(g, BPF_ALU64 | BPF_MOV | BPF_X, 2, 10, 0, 0);
		emit(g, BPF_ALU64 | BPF_ADD | BPF_K, 2, 0, 0, -8 * (s + 1));
		emit(g, BPF_ALU64 | BPF_MOV | BPF_K, 3, 0, 0, len);
		emit(g, BPF_ALU64 | BPF_MOV | BPF_K, 4, 0, 0, pick(g, 4) ? 0 : (int32_t)pick(g, 4));
		emit(g, BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_ringbuf_output);
		clobber_call(g);
		return;
	}
	load_map(g, 1, M_RB);
	emit(g, BPF_ALU64 | BPF_MOV | BPF_K, 2, 0, 0, size);
	emit(g, BPF_ALU64 | BPF_MOV | BPF_K, 3, 0, 0, 0);
	emit(g, BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_ringbuf_reserve);
	clobber_call(g);
	g->m.r[0].kind = MK_NONE;
	keep = 6 + (int)pick(g, 4);
	if (!writable(g, keep) || g->m.r[keep].kind != MK_SCALAR)
		keep = 0;
	j = emit(g, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 0, 0);
	struct model before = g->m;

	if (keep)
		emit(g, BPF_ALU64 | BPF_MOV | BPF_X, (uint8_t)keep, 0, 0, 0);
	g->m.r[keep] = (struct mreg){ .kind = MK_REC, .wr = true, .var_ok = true, .hi = size };
	g->lock |= (uint16_t)(1u << keep | 0x3e);
	for (unsigned k = pick(g, 4); k; k--) {
		switch (pick(g, 3)) {
		case 0: b_index(g); break;
		case 1: b_alu(g); break;
		default: {
			unsigned sz_i = pick(g, 4);
			int32_t off = (int32_t)pick(g, (unsigned)size - (1u << sz_i) + 1);

			emit(g, BPF_ST | BPF_MEM | sizes[sz_i], (uint8_t)keep, 0, (int16_t)off, interesting(g));
		}
		}
	}
	g->lock &= (uint16_t)~(1u << keep | 0x3e);
	if (pick(g, 6) == 0) { /* round trip through the stack */
		emit(g, BPF_STX | BPF_MEM | BPF_DW, 10, (uint8_t)keep, -16, 0);
		emit(g, BPF_LDX | BPF_MEM | BPF_DW, 1, 10, -16, 0);
		g->m.init |= 2;
		g->m.slot[1].kind = MK_NONE;
	} else {
		emit(g, BPF_ALU64 | BPF_MOV | BPF_X, 1, (uint8_t)keep, 0, 0);
	}
	emit(g, BPF_ALU64 | BPF_MOV | BPF_K, 2, 0, 0,
	     pick(g, 3) ? 0 : pick(g, 8) ? (int32_t)pick(g, 4) : interesting(g));
	emit(g, BPF_JMP | BPF_CALL, 0, 0, 0,
	     pick(g, 2) ? BPF_FUNC_ringbuf_submit : BPF_FUNC_ringbuf_discard);
	clobber_call(g);
	g->m.r[0].kind = MK_NONE; /* void helpers leave r0 uninitialised */
	g->m.r[keep].kind = MK_NONE;
	patch(g, j);
	merge(&g->m, &before);
	g->m.r[keep].kind = MK_NONE;
}

static void b_atomic(struct gen *g)
{
	static const int32_t ops[] = { BPF_ADD, BPF_OR, BPF_AND, BPF_XOR, BPF_ADD | BPF_FETCH,
				       BPF_OR | BPF_FETCH, BPF_AND | BPF_FETCH, BPF_XOR | BPF_FETCH,
				       BPF_XCHG, BPF_CMPXCHG };
	int32_t op = ops[pick(g, 10)];
	bool dw = pick(g, 2);
	int p = reg_of(g, 1u << MK_FP | 1u << MK_PTR), src;
	int32_t off;

	if (p < 0 || !writable(g, 0))
		return;
	g->lock |= 1u << p;
	src = scalar_reg(g);
	g->lock &= ~(1u << p);
	if (src < 0 || src == p || ((op & BPF_FETCH) && !writable(g, src)))
		return;
	if (g->m.r[p].kind == MK_FP) {
		int s = slot_pick(g);

		if (!(g->m.init & (1ull << s)) || (g->in_loop && g->m.slot[s].kind != MK_SCALAR))
			return;
		off = -8 * (s + 1) + (dw ? 0 : 4 * (int32_t)pick(g, 2));
		g->m.slot[s] = (struct mreg){ .kind = MK_SCALAR };
	} else {
		struct mreg *pr = &g->m.r[p];

		if (!pr->wr || pr->hi - pr->lo < 8)
			return;
		off = pr->lo + (int32_t)pick(g, (unsigned)(pr->hi - pr->lo - (dw ? 8 : 4)) + 1);
	}
	/* mostly aligned (base pointers are 8-aligned); misaligned must be rejected */
	if (pick(g, 4) && g->m.r[p].kind == MK_PTR)
		off = ((off - g->m.r[p].lo) & (dw ? ~7 : ~3)) + g->m.r[p].lo;
	else if (pick(g, 4))
		off &= dw ? ~7 : ~3;
	if (op == BPF_CMPXCHG && g->m.r[0].kind != MK_SCALAR) {
		emit(g, BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, interesting(g));
		set_scalar(g, 0);
	}
	emit(g, BPF_STX | BPF_ATOMIC | (dw ? BPF_DW : BPF_W), (uint8_t)p, (uint8_t)src, (int16_t)off, op);
}

/* Forward branch over a few blocks, sometimes with an else arm. */
static void b_branch(struct gen *g)
{
	static const uint8_t ops[] = { BPF_JEQ, BPF_JGT, BPF_JGE, BPF_JSET, BPF_JNE, BPF_JSGT,
				       BPF_JSGE, BPF_JLT, BPF_JLE, BPF_JSLT, BPF_JSLE };
	uint8_t op = ops[pick(g, sizeof(ops))], cls = pick(g, 3) ? BPF_JMP : BPF_JMP32;
	int a = pick(g, 8) ? scalar_reg(g) : reg_of(g, ~0u & ~1u), b = -1;
	struct model before, then;
	size_t j, k;

	if (a < 0 || g->depth >= MAX_DEPTH)
		return;
	if (pick(g, 2))
		b = scalar_reg(g);
	if (b >= 0)
		j = emit(g, cls | op | BPF_X, (uint8_t)a, (uint8_t)b, 0, 0);
	else
		j = emit(g, cls | op | BPF_K, (uint8_t)a, 0, 0, interesting(g));
	before = g->m;
	g->depth++;
	gen_blocks(g, 1 + (int)pick(g, 3));
	if (pick(g, 3) == 0) { /* else arm */
		k = emit(g, BPF_JMP | BPF_JA, 0, 0, 0, 0);
		then = g->m;
		patch(g, j);
		g->m = before;
		gen_blocks(g, 1 + (int)pick(g, 2));
		patch(g, k);
		merge(&g->m, &then);
	} else {
		patch(g, j);
		merge(&g->m, &before);
	}
	g->depth--;
}

/* A counted loop: backward jump, bounded by a counter register or stack slot. */
static void b_loop(struct gen *g)
{
	int c = 6 + (int)pick(g, 4);
	int32_t n = 1 + (int32_t)pick(g, 6);
	struct model before;
	bool was = g->in_loop, from_input = pick(g, 5) == 0;
	size_t head, j;
	int64_t back;

	if (g->depth >= MAX_DEPTH || !writable(g, c) || g->m.r[c].kind != MK_SCALAR)
		return;
	if (from_input) { /* n = input & 7: the verifier walks every count */
		int s = source_scalar(g);

		if (s < 0 || s == c)
			return;
		emit(g, BPF_ALU64 | BPF_MOV | BPF_X, (uint8_t)c, (uint8_t)s, 0, 0);
		emit(g, BPF_ALU64 | BPF_AND | BPF_K, (uint8_t)c, 0, 0, pick(g, 16) ? 7 : 0x3f); /* wider masks: V1 */
		emit(g, BPF_ALU64 | BPF_ADD | BPF_K, (uint8_t)c, 0, 0, 1);
	} else {
		emit(g, BPF_ALU64 | BPF_MOV | BPF_K, (uint8_t)c, 0, 0, n);
	}
	before = g->m;
	/* in the body, pointer registers stay as they are and r0-r5 start unknown */
	for (int r = 0; r <= 5; r++)
		g->m.r[r].kind = MK_NONE;
	uint16_t saved_lock = g->lock;

	for (int r = 6; r <= 9; r++)
		if (g->m.r[r].kind != MK_SCALAR && g->m.r[r].kind != MK_NONE)
			g->lock |= (uint16_t)(1u << r);
	g->lock |= (uint16_t)(1u << c);
	g->in_loop = true;
	g->depth++;
	head = g->n;
	gen_blocks(g, 1 + (int)pick(g, 3));
	g->depth--;
	g->in_loop = was;
	g->lock = saved_lock;
	switch (pick(g, 3)) {
	case 0:
		emit(g, BPF_ALU64 | BPF_SUB | BPF_K, (uint8_t)c, 0, 0, 1);
		j = emit(g, BPF_JMP | BPF_JNE | BPF_K, (uint8_t)c, 0, 0, 0);
		break;
	case 1:
		emit(g, BPF_ALU | BPF_SUB | BPF_K, (uint8_t)c, 0, 0, 1);
		j = emit(g, BPF_JMP32 | BPF_JSGT | BPF_K, (uint8_t)c, 0, 0, 0);
		break;
	default:
		emit(g, BPF_ALU64 | BPF_ADD | BPF_K, (uint8_t)c, 0, 0, -1);
		j = emit(g, BPF_JMP | BPF_JGT | BPF_K, (uint8_t)c, 0, 0, 0);
		break;
	}
	back = (int64_t)head - (int64_t)j - 1;
	if (!g->full && back >= INT16_MIN)
		g->insns[j].off = (int16_t)back;
	merge(&g->m, &before);
	set_scalar(g, c);
}

static void call_func(struct gen *g, int f)
{
	bool via_callx = pick(g, 5) == 0;

	if (f >= g->nfuncs || (g->lock & 0x3f) || g->nfix >= 250)
		return;
	for (int a = 0; a < g->nargs[f]; a++) {
		uint8_t r = (uint8_t)(a + 1);

		switch (g->args[f][a]) {
		case A_CTX: {
			int c = reg_of(g, 1u << MK_CTX);

			if (c >= 0 && c != r)
				emit(g, BPF_ALU64 | BPF_MOV | BPF_X, r, (uint8_t)c, 0, 0);
			else if (c != r)
				emit(g, BPF_ALU64 | BPF_MOV | BPF_K, r, 0, 0, 0);
			g->m.r[r].kind = MK_NONE; /* later arguments must not read it */
			break;
		}
		case A_STACK16:
			if (g->max_slot < 8)
				return;
			emit(g, BPF_ST | BPF_MEM | BPF_DW, 10, 0, -64, interesting(g));
			emit(g, BPF_ST | BPF_MEM | BPF_DW, 10, 0, -56, interesting(g));
			g->m.init |= 3ull << 6;
			g->m.slot[6] = g->m.slot[7] = (struct mreg){ .kind = MK_SCALAR };
			emit(g, BPF_ALU64 | BPF_MOV | BPF_X, r, 10, 0, 0);
			emit(g, BPF_ALU64 | BPF_ADD | BPF_K, r, 0, 0, -64);
			g->m.r[r].kind = MK_NONE;
			break;
		default:
			emit(g, BPF_ALU64 | BPF_MOV | BPF_K, r, 0, 0, interesting(g));
			g->m.r[r].kind = MK_NONE;
		}
	}
	g->called[f] = true;
	if (via_callx) {
		int r = 6 + (int)pick(g, 4);

		if (!writable(g, r))
			r = 0;
		g->fix[g->nfix].at = emit(g, BPF_LD | BPF_DW | BPF_IMM, (uint8_t)r, BPF_PSEUDO_FUNC, 0, 0);
		emit(g, 0, 0, 0, 0, 0);
		g->fix[g->nfix].fn = f;
		g->fix[g->nfix++].ldimm = true;
		emit(g, BPF_JMP | BPF_CALL | BPF_X, (uint8_t)r, 0, 0, 0);
		g->m.r[r].kind = MK_NONE;
	} else {
		g->fix[g->nfix].at = emit(g, BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, 0);
		g->fix[g->nfix].fn = f;
		g->fix[g->nfix++].ldimm = false;
	}
	clobber_call(g);
}

static void b_call(struct gen *g)
{
	int f = g->fn + 1 + (int)pick(g, (unsigned)(g->nfuncs - g->fn));

	if (f < g->nfuncs)
		call_func(g, f);
}

/* Any encoding of a class, fields mostly in range: exercises rarely used paths. */
static void b_raw(struct gen *g)
{
	static const uint8_t codes[] = {
		BPF_ALU64 | BPF_ADD | BPF_X, BPF_ALU | BPF_SUB | BPF_K, BPF_LDX | BPF_MEM | BPF_DW,
		BPF_STX | BPF_MEM | BPF_W, BPF_ST | BPF_MEM | BPF_B, BPF_JMP | BPF_JEQ | BPF_X,
		BPF_JMP32 | BPF_JSGT | BPF_K, BPF_ALU64 | BPF_MOV | BPF_X, BPF_STX | BPF_ATOMIC | BPF_DW,
		BPF_LDX | BPF_MEMSX | BPF_H, BPF_ALU64 | BPF_DIV | BPF_X, BPF_JMP | BPF_CALL,
	};
	uint8_t code = pick(g, 6) ? codes[pick(g, sizeof(codes))] : take(g);
	uint8_t dst = (uint8_t)pick(g, 11), src = (uint8_t)pick(g, 11);
	int16_t off = (int16_t)((int8_t)take(g));
	int32_t imm = interesting(g);

	if (isa_class(code) == BPF_JMP || isa_class(code) == BPF_JMP32)
		off = off < 0 ? 0 : off % 4; /* forward only, keep targets inside */
	if (isa_class(code) == BPF_LD)
		return;
	if (code == (BPF_JMP | BPF_EXIT) || code == (BPF_JMP | BPF_CALL)) {
		if (code == (BPF_JMP | BPF_CALL))
			emit(g, code, 0, 0, 0, (int32_t)pick(g, 40));
		clobber_call(g);
		return;
	}
	if (code == (BPF_JMP | BPF_JA) || code == (BPF_JMP32 | BPF_JA))
		return;
	emit(g, code, dst, src, off, imm);
	if (isa_class(code) == BPF_JMP || isa_class(code) == BPF_JMP32) {
		/* the skipped instructions must exist */
		for (int k = 0; k < off; k++)
			emit(g, BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, k);
		g->m.r[0].kind = MK_NONE;
	}
	if (dst <= 9 && writable(g, dst))
		g->m.r[dst].kind = MK_NONE;
	if (src <= 9 && writable(g, src))
		g->m.r[src].kind = MK_NONE;
}

/* Pointer arithmetic on a pointer register with a constant. */
static void b_ptr_const(struct gen *g)
{
	int p = reg_of(g, 1u << MK_PTR | 1u << MK_FP | 1u << MK_CTX), t;
	int32_t c;

	if (p < 0)
		return;
	g->lock |= 1u << p;
	t = dst_reg(g, false);
	g->lock &= ~(1u << p);
	if (t < 0)
		return;
	if (g->m.r[p].kind == MK_FP) {
		int s = slot_pick(g);

		c = -8 * (s + 1);
		emit(g, BPF_ALU64 | BPF_MOV | BPF_X, (uint8_t)t, 10, 0, 0);
		emit(g, BPF_ALU64 | BPF_ADD | BPF_K, (uint8_t)t, 0, 0, c);
		g->m.r[t] = (struct mreg){ .kind = MK_PTR, .wr = true, .stack = true, .lo = 0, .hi = 8 };
		if (!(g->m.init & (1ull << s)) || g->m.slot[s].kind != MK_SCALAR) {
			emit(g, BPF_ST | BPF_MEM | BPF_DW, (uint8_t)t, 0, 0, interesting(g));
			g->m.init |= 1ull << s;
			g->m.slot[s] = (struct mreg){ .kind = MK_SCALAR };
		}
		if (g->in_loop)
			g->m.r[t].kind = MK_NONE;
		return;
	}
	if (g->m.r[p].kind == MK_CTX) {
		c = g->ctx_len ? (int32_t)pick(g, g->ctx_len) : 0;
		emit(g, BPF_ALU64 | BPF_MOV | BPF_X, (uint8_t)t, (uint8_t)p, 0, 0);
		emit(g, BPF_ALU64 | BPF_ADD | BPF_K, (uint8_t)t, 0, 0, c);
		g->m.r[t].kind = MK_NONE; /* ctx+off: only constant-offset access, leave it */
		return;
	}
	c = g->m.r[p].lo + (int32_t)pick(g, (unsigned)(g->m.r[p].hi - g->m.r[p].lo) + 1);
	emit(g, BPF_ALU64 | BPF_MOV | BPF_X, (uint8_t)t, (uint8_t)p, 0, 0);
	emit(g, BPF_ALU64 | (pick(g, 2) ? BPF_ADD : BPF_SUB) | BPF_K, (uint8_t)t, 0, 0, 0);
	if (g->insns[g->n - 1].code == (BPF_ALU64 | BPF_ADD | BPF_K)) {
		g->insns[g->n - 1].imm = c;
	} else {
		g->insns[g->n - 1].imm = -c;
	}
	g->m.r[t] = g->m.r[p];
	g->m.r[t].lo -= c;
	g->m.r[t].hi -= c;
	if (g->in_loop)
		g->m.r[t].kind = MK_NONE;
}

static void b_early_exit(struct gen *g)
{
	int a = scalar_reg(g);

	if (a < 0)
		return;
	emit(g, (pick(g, 2) ? BPF_JMP : BPF_JMP32) | BPF_JNE | BPF_K, (uint8_t)a, 0, 2, interesting(g));
	emit(g, BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, interesting(g));
	emit(g, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

static void gen_blocks(struct gen *g, int count)
{
	for (int i = 0; i < count && more(g); i++) {
		switch (pick(g, 24)) {
		case 0: case 1: case 2: case 3: b_alu(g); break;
		case 4: case 5: case 6: b_mem_const(g); break;
		case 7: case 8: case 9: b_index(g); break;
		case 10: case 11: b_lookup(g); break;
		case 12: b_update(g); break;
		case 13: b_helper(g); break;
		case 14: b_ringbuf(g); break;
		case 15: b_atomic(g); break;
		case 16: case 17: b_branch(g); break;
		case 18: b_loop(g); break;
		case 19: b_call(g); break;
		case 20: b_ldimm(g); break;
		case 21: b_ptr_const(g); break;
		case 22: b_early_exit(g); break;
		default: if (pick(g, 3) == 0) b_raw(g); else b_alu(g); break;
		}
	}
}

static void gen_func(struct gen *g, int f)
{
	memset(&g->m, 0, sizeof(g->m));
	g->lock = 0;
	g->depth = 0;
	g->in_loop = false;
	g->fn = f;
	g->start[f] = (uint32_t)g->n;
	g->m.r[10].kind = MK_FP;
	g->max_slot = f == 0 ? 32 : 12;
	if (f == 0) {
		if (g->ctx_len) {
			g->m.r[1].kind = MK_CTX;
			emit(g, BPF_ALU64 | BPF_MOV | BPF_X, 6, 1, 0, 0);
			g->m.r[6].kind = MK_CTX;
		}
		set_scalar(g, 2);
	} else {
		for (int a = 0; a < g->nargs[f]; a++) {
			struct mreg *r = &g->m.r[a + 1];

			switch (g->args[f][a]) {
			case A_CTX: r->kind = g->ctx_len ? MK_CTX : MK_SCALAR; break;
			case A_STACK16: *r = (struct mreg){ .kind = MK_PTR, .wr = true, .stack = true, .hi = 16 }; break;
			default: r->kind = MK_SCALAR;
			}
		}
	}
	/* a few scalars to work with */
	for (int r = 7; r <= 8; r++) {
		if (pick(g, 2)) {
			emit(g, BPF_ALU64 | BPF_MOV | BPF_K, (uint8_t)r, 0, 0, interesting(g));
			set_scalar(g, r);
		}
	}
	gen_blocks(g, f == 0 ? 1000000 : 2 + (int)pick(g, 6));
	/* every function must be reachable: call the next one if nobody did */
	if (f + 1 < g->nfuncs && !g->called[f + 1]) {
		g->full = false;
		call_func(g, f + 1);
	}
	if (g->m.r[0].kind != MK_SCALAR || pick(g, 3) == 0) {
		int s = reg_of(g, 1u << MK_SCALAR);

		if (s >= 0 && pick(g, 2))
			emit(g, BPF_ALU64 | BPF_MOV | BPF_X, 0, (uint8_t)s, 0, 0);
		else
			emit(g, BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, interesting(g));
	}
	g->full = false; /* the exit always fits (emit keeps 4 slots spare) */
	emit(g, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

static bool generate(struct gen *g)
{
	uint8_t hdr = take(g);
	static const uint32_t lens[] = { 0, 8, 16, 24, 32, 64, 100, 128 };

	g->ctx_len = lens[hdr & 7];
	if (hdr & 8)
		g->ctx_len += take(g) % 64;
	g->nfuncs = 1 + (int)((hdr >> 4) % MAX_FUNCS);
	if ((hdr >> 4) >= 10)
		g->nfuncs = 1;
	for (int f = 1; f < g->nfuncs; f++) {
		g->nargs[f] = (int)pick(g, 4);
		for (int a = 0; a < g->nargs[f]; a++)
			g->args[f][a] = (uint8_t)pick(g, A_CNT);
	}
	for (int f = 0; f < g->nfuncs; f++) {
		size_t keep = g->size;

		if (f + 1 < g->nfuncs && f == 0)
			g->size = g->pos + (g->size - g->pos) * 3 / 4; /* leave bytes for the callees */
		gen_func(g, f);
		g->size = keep;
	}
	for (int i = 0; i < g->nfix; i++) {
		int64_t t = g->start[g->fix[i].fn], at = (int64_t)g->fix[i].at;

		g->insns[at].imm = (int32_t)(t - at - 1);
	}
	return g->n > 0;
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

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The generator of fuzz_verifier.c: turns the fuzz input's bytes into a
 * program likely to verify (registers tracked by kind, stack written before
 * it is read, map lookups null-checked, indices bounded, loops counted
 * down, a few subprograms). fuzz_verifier.c says what is checked.
 */
#include <string.h>

#include "verifier_gen.h"

const struct map_def map_defs[M_CNT] = {
	[M_ARR1] = { "arr1", BPF_MAP_TYPE_ARRAY, 4, 48, 1, 0 },
	[M_ARR4] = { "arr4", BPF_MAP_TYPE_ARRAY, 4, 16, 4, 0 },
	[M_HASH] = { "hash", BPF_MAP_TYPE_HASH, 8, 24, 16, 0 },
	[M_PCPU] = { "pcpu", BPF_MAP_TYPE_PERCPU_ARRAY, 4, 32, 2, 0 },
	[M_RO] = { "ro", BPF_MAP_TYPE_ARRAY, 4, 16, 1, BPF_F_RDONLY_PROG },
	[M_RB] = { "rb", BPF_MAP_TYPE_RINGBUF, 0, 0, 4096, 0 },
};

/* ------------------------------------------------------------------ */
/* The generator                                                      */
/* ------------------------------------------------------------------ */

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

bool generate(struct gen *g)
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

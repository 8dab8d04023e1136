/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Hoisting: what a probe computes from the thread's place in the launch
 * moves from its sites to the start of the function.
 *
 * An exit site runs on a warp's way out: whatever it computes holds the
 * warp, and its block's slot on the SM, that much longer. Much of a probe
 * depends only on %tid/%ntid/%ctaid/%nctaid/%laneid, on immediates and on
 * the module's constant tables (ld.const: the map descriptors), so it can
 * run once at the function's start instead, while the kernel's own first
 * loads are in flight. Measured on the H100, hand-edited PTX of the
 * stencil under threadhist: 1.095x -> 1.071x.
 *
 * The plan (gx_hoist_plan_make) is made once per probe body; each site
 * then renames the moved registers to its own names (gx_hoist_text for
 * the function's start, gx_hoist_line_moved / gx_hoist_reg_renamed for the
 * site). A line moves when all of these hold:
 *   - one statement, unguarded, of mov, add, sub, mul, mad, shl, shr, and,
 *     or, xor, not, neg, min, max, cvt, cvta, selp, setp (no carry: .cc) or
 *     ld.const, writing one register that no other line writes;
 *   - what it reads: registers that move too, immediates, gpuext_rt_*
 *     symbols (the runtime's module-scope tables) and the special registers
 *     above. Not %smid or %warpid (the PTX ISA calls them volatile: a
 *     preempted thread may come back elsewhere), not the clocks or lane
 *     masks;
 *   - not inside inline assembly, except one register-to-register mov.b64
 *     (how ptx_runtime.c hides the table's address from LLVM);
 *   - before the first branch that can skip whole warps: only a branch on
 *     the leader election (activemask and %lanemask_* together) lets the
 *     region go on, since one lane of every warp passes it. Past any other
 *     (warp_id != 0, a NULL map, a full ring, a vote, %laneid < K) a line
 *     runs in few warps, and at the start it would run in all: with that,
 *     launchlate on the stencil went from 1.018x to 1.061x. At an exit
 *     site's own start (at_site), an exit's election also lets it go on:
 *     a branch on %laneid, or on the linear thread index mod 32 (the
 *     wrapper's form where no warp guard holds; hoist_region). So does a
 *     branch on a value every thread of the launch has alike (kc_line: a
 *     map's base from the runtime's table, tested for NULL): it skips
 *     every warp or none.
 * Constants (lines that read no special register, only other constants)
 * are copied, and only when a moved line reads them: the site keeps its
 * own, so they never stay live. Of the rest, the values a remaining line
 * reads stay live from the start: at most GX_HOIST_LIVE_MAX 32-bit
 * registers per site (a predicate counts as one), else values go back to
 * the site one at a time, each time the one that keeps the most code
 * moved, until the rest fits (a body with over 8 times that keeps all at
 * its sites: the search is about cubic). The moved lines are written in an
 * order where each follows what it reads, or not at all.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_splice.h"

#define HOIST_MAX_FAMILIES 16
#define HOIST_MAX_FAMILY_REGS 65536

struct hreg {
	char name[24];		/* "%rd15" */
	char type[8];		/* ".b64" (from the family's .reg declaration) */
	int defs;		/* lines that write it (2: unknown, counts as many) */
	int def_line;		/* the one that does, when defs == 1 */
	bool hoist;		/* moves (or, with dup, is copied) to the start */
	bool live;		/* moved, and read by a line that stays */
	bool dup;		/* a constant: the site keeps its own copy */
	bool need;		/* written at the start: moved, or a constant a moved line reads */
	bool done;		/* hoist_order: placed */
	bool am, lm;		/* from activemask / %lanemask_* (and immediates) alone, see hoist_region */
	bool ln;		/* from %laneid (and immediates) alone, or the linear thread index mod 32 */
	bool kc;		/* the same in every thread of a launch: from immediates, symbols and
				 * ld.const alone (a map's base, and its test for NULL), see hoist_region */
	unsigned char lin;	/* a step of the linear thread index (enum lin_step), or 0 */
};

/*
 * The linear thread index, (tid.z * ntid.y + tid.y) * ntid.x + tid.x, the
 * way LLVM writes the probes' wrapper's (codegen/ptx/ptx_probe.c): each
 * register that holds one of its steps, so that "and.b32 %d, LIN, 31;" is
 * known for the lane it is, and nothing else is.
 */
enum lin_step { LIN_NONE, LIN_TX, LIN_TY, LIN_TZ, LIN_NX, LIN_NY, LIN_ZNY, LIN_YZ, LIN_YZNX, LIN_LIN };

struct hline {
	const char *p;
	size_t n;		/* up to a "//" comment: what every pass reads */
	bool cand;		/* may move if what it reads does */
	bool sreg;		/* reads a special register */
	bool moved;		/* taken out of the site */
	bool emit;		/* written at the start (moved, or a copied constant) */
	size_t full;		/* the whole line, comment included */
};

struct hfam {
	char pfx[16];		/* "%rd" */
	char type[8];		/* ".b64" */
	unsigned count;		/* %rd<count> */
	int *idx;		/* register number -> index in regs, -1: none yet */
};

struct gx_hoist_plan {
	int *order;		/* the lines written at the start, each after those it reads */
	int norder;
	struct hfam fam[HOIST_MAX_FAMILIES];
	int nfam;
	struct hreg *regs;
	int nregs, capregs;
	struct hline *lines;
	int nlines;
	bool oom;
};

static const char *const hoist_sregs[] = {
	"%tid.x", "%tid.y", "%tid.z", "%ntid.x", "%ntid.y", "%ntid.z", "%ctaid.x", "%ctaid.y",
	"%ctaid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z", "%laneid", "%nsmid", "%nwarpid",
};

static const char *const hoist_ops[] = {
	"mov", "add", "sub", "mul", "mad", "shl", "shr", "and", "or", "xor", "not", "neg",
	"min", "max", "cvt", "cvta", "selp", "setp",
};

static bool is_idc(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '$';
}

static bool tok_is(const char *a, size_t n, const char *s)
{
	return strlen(s) == n && !memcmp(a, s, n);
}

static bool starts(const char *a, const char *e, const char *s)
{
	size_t n = strlen(s);

	return (size_t)(e - a) >= n && !memcmp(a, s, n);
}

/*
 * Next "%name" token in [*p, e): its start and length. Special registers
 * have a dot (%tid.x); register names have none, so "%r5.x" would read as
 * one token that is no register (and so nothing that names it moves).
 */
static bool next_pct(const char **p, const char *e, const char **tok, size_t *n)
{
	const char *q = *p;

	while (q < e && *q != '%')
		q++;
	if (q >= e)
		return false;
	*tok = q++;
	while (q < e && (is_idc(*q) || *q == '.'))
		q++;
	*n = (size_t)(q - *tok);
	*p = q;
	return true;
}

/* Where register @a (@n bytes) lives: its family's slot for its number, or NULL (no such register). */
static int *hreg_slot(const struct gx_hoist_plan *h, const char *a, size_t n, int *fam)
{
	for (int f = 0; f < h->nfam; f++) {
		const struct hfam *F = &h->fam[f];
		size_t fl = strlen(F->pfx), i;
		unsigned long k = 0;

		if (n <= fl || memcmp(a, F->pfx, fl) || (a[fl] == '0' && n > fl + 1))
			continue;
		for (i = fl; i < n && a[i] >= '0' && a[i] <= '9' && k < HOIST_MAX_FAMILY_REGS; i++)
			k = k * 10 + (unsigned long)(a[i] - '0');
		if (i != n || k >= F->count)
			continue;	/* %rd15 is not of %r; %r<26> has no %r30 */
		*fam = f;
		return &F->idx[k];
	}
	return NULL;
}

/* The register @a (@n bytes) of a declared family: its index in regs, or -1 (none yet). */
static int hreg_lookup(const struct gx_hoist_plan *h, const char *a, size_t n)
{
	int f, *slot = hreg_slot(h, a, n, &f);

	return slot ? *slot : -1;
}

/* hreg_lookup(), and with @add a new entry for a register of a declared family met first. */
static int hreg_find(struct gx_hoist_plan *h, const char *a, size_t n, bool add)
{
	int f, *slot = hreg_slot(h, a, n, &f);
	struct hreg *r;

	if (!slot || *slot >= 0 || !add)
		return slot ? *slot : -1;
	if (h->nregs == h->capregs) {
		int cap = h->capregs ? h->capregs * 2 : 64;

		r = realloc(h->regs, (size_t)cap * sizeof(*r));
		if (!r) {
			h->oom = true;
			return -1;
		}
		h->regs = r;
		h->capregs = cap;
	}
	r = &h->regs[h->nregs];
	memset(r, 0, sizeof(*r));
	memcpy(r->name, a, n < sizeof(r->name) ? n : sizeof(r->name) - 1);
	memcpy(r->type, h->fam[f].type, sizeof(r->type));
	r->def_line = -1;
	*slot = h->nregs;
	return h->nregs++;
}

/* ".reg .b32 %r<26>;" -> a register family. */
static void hoist_family(struct gx_hoist_plan *h, const char *l, const char *e)
{
	const char *t = l + 4, *pc, *lt;
	struct hfam *F;
	size_t tl;
	unsigned long count;

	while (t < e && (*t == ' ' || *t == '\t'))
		t++;
	for (tl = 0; t + tl < e && (is_idc(t[tl]) || t[tl] == '.'); tl++)
		;
	pc = memchr(t, '%', (size_t)(e - t));
	lt = pc ? memchr(pc, '<', (size_t)(e - pc)) : NULL;
	if (!tl || tl >= sizeof(F->type) || !lt || (size_t)(lt - pc) >= sizeof(F->pfx) ||
	    h->nfam == HOIST_MAX_FAMILIES)
		return;
	count = strtoul(lt + 1, NULL, 10);
	if (!count || count > HOIST_MAX_FAMILY_REGS)
		return;
	F = &h->fam[h->nfam];
	F->idx = malloc(count * sizeof(int));
	if (!F->idx) {
		h->oom = true;
		return;
	}
	memset(F->idx, 0xff, count * sizeof(int));
	memcpy(F->type, t, tl);
	F->type[tl] = '\0';
	memcpy(F->pfx, pc, (size_t)(lt - pc));
	F->pfx[lt - pc] = '\0';
	F->count = (unsigned)count;
	h->nfam++;
}

/* Every register line @li names counts as written twice: nothing that reads one moves. */
static void poison_line(struct gx_hoist_plan *h, int li)
{
	const char *q = h->lines[li].p, *e = q + h->lines[li].n, *tok;
	size_t n;

	while (next_pct(&q, e, &tok, &n)) {
		int r = hreg_find(h, tok, n, true);

		if (r >= 0)
			h->regs[r].defs += 2;
	}
	h->lines[li].cand = false;
}

/* Whether every operand of [p, e) that is neither a register nor a number is a gpuext_rt_* symbol. */
static bool symbols_ok(const char *p, const char *e)
{
	while (p < e) {
		const char *s = p;

		if (*p == '%') {
			p++;
			while (p < e && (is_idc(*p) || *p == '.'))
				p++;
			continue;
		}
		if (!is_idc(*p)) {
			p++;
			continue;
		}
		while (p < e && (is_idc(*p) || *p == '.'))
			p++;
		if (*s >= '0' && *s <= '9')
			continue;	/* 7, 0x1f, 0f3F800000 */
		if (!starts(s, p, "gpuext_rt_"))
			return false;
	}
	return true;
}

/*
 * One line: whether it may move (cand), what it writes, whether it reads a
 * special register. @in_asm: between LLVM's inline-assembly markers.
 */
static void hoist_scan_line(struct gx_hoist_plan *h, int li, bool in_asm)
{
	struct hline *L = &h->lines[li];
	const char *p = L->p, *e = L->p + L->n, *op, *ope, *tok, *ops, *dst_end, *c;
	size_t n, opn;
	bool writes, cand = false, sreg_ok = true, guarded = false;
	int ndst = 0, semis = 0, depth = 0;

	c = memmem(p, L->n, "//", 2);
	if (c)
		e = c;
	while (p < e && (*p == ' ' || *p == '\t'))
		p++;
	while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		e--;
	if (p >= e || *p == '$' || *p == '.' || *p == '}')
		return;	/* blank, comment, label, declaration, block end */
	for (c = p; c < e; c++)
		semis += *c == ';';
	if (*p == '{' || semis != 1 || e[-1] != ';') {
		poison_line(h, li);	/* a block, or several statements on a line */
		return;
	}
	if (*p == '@') {
		guarded = true;
		while (p < e && *p != ' ' && *p != '\t')
			p++;
		while (p < e && (*p == ' ' || *p == '\t'))
			p++;
	}
	op = p;
	while (p < e && *p != ' ' && *p != '\t' && *p != ';')
		p++;
	ope = p;
	ops = p;
	for (opn = 0; op + opn < ope && op[opn] != '.'; opn++)
		;
	for (size_t i = 0; i < sizeof(hoist_ops) / sizeof(hoist_ops[0]); i++)
		if (tok_is(op, opn, hoist_ops[i]))
			cand = true;
	if (starts(op, ope, "ld.const."))
		cand = true;
	if (memmem(op, (size_t)(ope - op), ".cc", 3))
		cand = false;	/* a carry for a later addc: they stay together */
	if (in_asm) {
		/* only "mov.b64 %a, %b;" */
		const char *q = ops, *t1, *t2;
		size_t n1, n2;

		if (!starts(op, ope, "mov.b64") || ope - op != 7 || !next_pct(&q, e, &t1, &n1) ||
		    !next_pct(&q, e, &t2, &n2) || next_pct(&q, e, &tok, &n) ||
		    hreg_find(h, t1, n1, true) < 0 || hreg_find(h, t2, n2, true) < 0) {
			poison_line(h, li);
			return;
		}
	}
	writes = !starts(op, ope, "st.") && !tok_is(op, opn, "st") && !tok_is(op, opn, "red") &&
		 !tok_is(op, opn, "bra") && !tok_is(op, opn, "brx") && !tok_is(op, opn, "ret") &&
		 /* bar.sync, bar.warp.sync write nothing; bar.red writes its first operand */
		 ((!tok_is(op, opn, "bar") && !tok_is(op, opn, "barrier")) ||
		  memmem(op, (size_t)(ope - op), ".red", 4)) &&
		 !tok_is(op, opn, "exit") && !tok_is(op, opn, "trap") &&
		 !tok_is(op, opn, "membar") && !tok_is(op, opn, "fence") &&
		 !tok_is(op, opn, "prefetch");
	/* the first operand (braces and brackets kept whole) is what it writes */
	for (dst_end = ops; dst_end < e; dst_end++) {
		depth += *dst_end == '{' || *dst_end == '[' ? 1 : *dst_end == '}' || *dst_end == ']' ? -1 : 0;
		if (depth == 0 && (*dst_end == ',' || *dst_end == ';'))
			break;
	}
	for (const char *q = ops; next_pct(&q, e, &tok, &n);) {
		int r = hreg_find(h, tok, n, true);
		bool known = false;

		if (r < 0) {
			for (size_t i = 0; i < sizeof(hoist_sregs) / sizeof(hoist_sregs[0]); i++)
				known |= tok_is(tok, n, hoist_sregs[i]);
			if (!known)
				sreg_ok = false;	/* a clock, a lane mask, %smid, a site argument */
			L->sreg = true;
			continue;
		}
		if (writes && tok < dst_end) {
			h->regs[r].defs++;
			h->regs[r].def_line = li;
			ndst++;
		}
	}
	L->cand = cand && !guarded && sreg_ok && ndst == 1 && !memchr(ops, '|', (size_t)(dst_end - ops)) &&
		  symbols_ok(dst_end, e);
}

/*
 * The region that may move ends at the first branch that can skip whole
 * warps. Only a branch on the leader election (a predicate computed, from
 * registers written once, of activemask and %lanemask_* together, and
 * immediates) lets it go on: one lane of every warp passes it. Not one on
 * activemask alone (a vote: the same for the whole warp), nor on %laneid
 * (laneid < K skips a warp whose active lanes are all >= K). @at_site: the
 * code moves to the site's own start, not the function's, and a branch on
 * %laneid alone (an exit's election: lane 0 runs) lets the region go on as
 * well; what it skips then runs in lanes that leave without lane 0, pure
 * arithmetic that costs them little and changes nothing. The linear thread
 * index masked with 31 (lin_step, exactly that chain) counts as %laneid:
 * that is how the probes' exit wrapper tells lane 0 where no warp guard
 * holds (codegen/ptx/ptx_probe.c), without an S2R of its own.
 */
static unsigned char lin_of(struct gx_hoist_plan *h, const char *tok, size_t n)
{
	static const char *const sr[] = { "%tid.x", "%tid.y", "%tid.z", "%ntid.x", "%ntid.y" };
	int r = hreg_find(h, tok, n, false);

	if (r >= 0)
		return h->regs[r].defs == 1 ? h->regs[r].lin : LIN_NONE;
	for (unsigned i = 0; i < sizeof(sr) / sizeof(sr[0]); i++)
		if (tok_is(tok, n, sr[i]))
			return (unsigned char)(LIN_TX + i);
	return LIN_NONE;
}

/* The lin_step that line (op .. e) writes to its first register @dst, from what it reads. */
static void lin_line(struct gx_hoist_plan *h, const char *op, const char *e)
{
	const char *q = op, *tok;
	unsigned char k[3] = { 0 };
	size_t n;
	int dst = -1, nk = 0;

	while (next_pct(&q, e, &tok, &n)) {
		if (dst < 0) {
			dst = hreg_find(h, tok, n, false);
			if (dst < 0)
				return;
			continue;
		}
		if (nk == 3)
			return;
		k[nk++] = lin_of(h, tok, n);
	}
	if (dst < 0 || h->regs[dst].defs != 1)
		return;
#define PAIR(a, b) ((k[0] == (a) && k[1] == (b)) || (k[0] == (b) && k[1] == (a)))
	if ((starts(op, e, "mov.u32") || starts(op, e, "mov.b32")) && nk == 1)
		h->regs[dst].lin = k[0] <= LIN_NY ? k[0] : LIN_NONE;
	else if ((starts(op, e, "mul.lo.s32") || starts(op, e, "mul.lo.u32")) && nk == 2)
		h->regs[dst].lin = PAIR(LIN_TZ, LIN_NY) ? LIN_ZNY : PAIR(LIN_YZ, LIN_NX) ? LIN_YZNX : LIN_NONE;
	else if ((starts(op, e, "add.s32") || starts(op, e, "add.u32")) && nk == 2)
		h->regs[dst].lin = PAIR(LIN_ZNY, LIN_TY) ? LIN_YZ : PAIR(LIN_YZNX, LIN_TX) ? LIN_LIN : LIN_NONE;
	else if ((starts(op, e, "mad.lo.s32") || starts(op, e, "mad.lo.u32")) && nk == 3)
		h->regs[dst].lin = PAIR(LIN_TZ, LIN_NY) && k[2] == LIN_TY ? LIN_YZ :
				   PAIR(LIN_YZ, LIN_NX) && k[2] == LIN_TX ? LIN_LIN : LIN_NONE;
#undef PAIR
}

/*
 * Marks what line @op..@e writes as the same in every thread of a launch
 * when it is a mov, and, or, add, cvta, setp or ld.const whose registers
 * are all so (immediates and module symbols are): a map's base read from
 * the runtime's table, and the test of that base for NULL. A branch on such
 * a predicate skips every warp or none, so it does not end the region.
 */
static void kc_line(struct gx_hoist_plan *h, const char *op, const char *e)
{
	static const char *const ok[] = { "mov.", "and.", "or.", "add.", "cvta.", "setp.",
					  "ld.const." };
	const char *q = op, *tok;
	bool known = false, all = true;
	int dst = -1;
	size_t n;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		known |= starts(op, e, ok[i]);
	if (!known)
		return;
	while (next_pct(&q, e, &tok, &n)) {
		int r = hreg_find(h, tok, n, false);

		if (dst < 0) {
			if (r < 0)
				return;
			dst = r;
			continue;
		}
		all &= r >= 0 && h->regs[r].defs == 1 && h->regs[r].kc;
	}
	if (dst >= 0 && h->regs[dst].defs == 1)
		h->regs[dst].kc = all;
}

static void hoist_region(struct gx_hoist_plan *h, bool at_site)
{
	bool region = true;

	for (int li = 0; li < h->nlines; li++) {
		const char *p = h->lines[li].p, *e = p + h->lines[li].n, *q, *tok, *op;
		size_t n;
		bool pure = true, am = false, lm = false, ln = false, guarded = false, election = false;
		bool uniform = false;
		bool mask31;
		int dst = -1;

		if (!region) {
			h->lines[li].cand = false;
			continue;
		}
		while (p < e && (*p == ' ' || *p == '\t'))
			p++;
		if (p >= e || *p == '$' || *p == '.' || *p == '}' || *p == '{')
			continue;
		if (*p == '@') {
			guarded = true;
			q = p;
			if (next_pct(&q, e, &tok, &n)) {
				int r = hreg_find(h, tok, n, false);

				election = r >= 0 && h->regs[r].defs == 1 &&
					   ((h->regs[r].am && h->regs[r].lm && !h->regs[r].ln) ||
					    (at_site && h->regs[r].ln && !h->regs[r].am && !h->regs[r].lm));
				uniform = r >= 0 && h->regs[r].defs == 1 && h->regs[r].kc;
			}
			while (p < e && *p != ' ' && *p != '\t')
				p++;
			while (p < e && (*p == ' ' || *p == '\t'))
				p++;
		}
		op = p;
		if (starts(op, e, "bra") || starts(op, e, "brx") || starts(op, e, "ret") ||
		    starts(op, e, "exit") || starts(op, e, "trap") || starts(op, e, "call")) {
			if (!(guarded && (election || uniform) && starts(op, e, "bra")))
				region = false;
			continue;
		}
		if (guarded)
			continue;
		kc_line(h, op, e);
		lin_line(h, op, e);
		if (!(starts(op, e, "activemask") || starts(op, e, "mov.") ||
		      starts(op, e, "and.") || starts(op, e, "or.") ||
		      starts(op, e, "not.") || starts(op, e, "setp.")))
			continue;
		am = starts(op, e, "activemask");
		/* "and.b32 %d, LIN, 31;": the linear thread index mod 32, the lane */
		mask31 = starts(op, e, "and.b32") && e - op > 5 && !memcmp(e - 5, ", 31;", 5);
		for (q = op; next_pct(&q, e, &tok, &n);) {
			int r = hreg_find(h, tok, n, false);

			if (dst < 0 && r >= 0) {
				dst = r;	/* the first register: what the line writes */
				continue;
			}
			if (mask31 && lin_of(h, tok, n) == LIN_LIN) {
				ln = true;
			} else if (r >= 0 && h->regs[r].defs == 1 &&
			    (h->regs[r].am || h->regs[r].lm || h->regs[r].ln)) {
				am |= h->regs[r].am;
				lm |= h->regs[r].lm;
				ln |= h->regs[r].ln;
			} else if (r < 0 && starts(tok, tok + n, "%lanemask")) {
				lm = true;
			} else if (r < 0 && n == 7 && !memcmp(tok, "%laneid", 7)) {
				ln = true;
			} else {
				pure = false;
			}
		}
		if (dst >= 0 && pure && h->regs[dst].defs == 1) {
			h->regs[dst].am = am;
			h->regs[dst].lm = lm;
			h->regs[dst].ln = ln;
		}
	}
}

static unsigned hreg_units(const struct hreg *r)
{
	return r->type[1] && !strcmp(r->type + 2, "128") ? 4 : r->type[1] && !strcmp(r->type + 2, "64") ? 2 : 1;
}

/* Whether line @li reads a register (other than @self) for which @bad holds. */
static bool reads_where(struct gx_hoist_plan *h, int li, int self, bool (*bad)(const struct hreg *))
{
	const char *q = h->lines[li].p, *e = q + h->lines[li].n, *tok;
	size_t n;

	while (next_pct(&q, e, &tok, &n)) {
		int r = hreg_find(h, tok, n, false);

		if (r >= 0 && r != self && bad(&h->regs[r]))
			return true;
	}
	return false;
}

static bool not_hoisted(const struct hreg *r)
{
	return !r->hoist;
}

static bool not_dup(const struct hreg *r)
{
	return !r->dup;
}

/* Keeps at the site every register whose line reads one that stays there. */
static void hoist_close(struct gx_hoist_plan *h)
{
	for (bool changed = true; changed;) {
		changed = false;
		for (int i = 0; i < h->nregs; i++)
			if (h->regs[i].hoist && reads_where(h, h->regs[i].def_line, i, not_hoisted)) {
				h->regs[i].hoist = false;
				changed = true;
			}
	}
}

/* Marks moved lines and live registers (moved, read by a line that stays); their units. */
static unsigned hoist_live(struct gx_hoist_plan *h)
{
	unsigned live = 0;

	for (int i = 0; i < h->nregs; i++)
		h->regs[i].live = false;
	for (int li = 0; li < h->nlines; li++)
		h->lines[li].moved = h->lines[li].emit = false;
	for (int i = 0; i < h->nregs; i++)
		if (h->regs[i].hoist) {
			h->lines[h->regs[i].def_line].emit = true;
			h->lines[h->regs[i].def_line].moved = !h->regs[i].dup;
		}
	for (int li = 0; li < h->nlines; li++) {
		const char *q = h->lines[li].p, *e = q + h->lines[li].n, *tok;
		size_t n;

		if (h->lines[li].moved)
			continue;
		while (next_pct(&q, e, &tok, &n)) {
			int r = hreg_find(h, tok, n, false);

			if (r >= 0 && h->regs[r].hoist && !h->regs[r].dup)
				h->regs[r].live = true;
		}
	}
	for (int i = 0; i < h->nregs; i++)
		if (h->regs[i].hoist && h->regs[i].live)
			live += hreg_units(&h->regs[i]);
	return live;
}

/*
 * Which constants the moved lines need (a constant nothing moved reads stays
 * at the site only), then an order of the lines to write at the start where
 * each follows the lines whose registers it reads. False if there is none (a
 * register read before the line that writes it in a loop can make a cycle):
 * then nothing moves.
 */
static bool hoist_order(struct gx_hoist_plan *h)
{
	bool progress = true;
	int todo = 0;

	for (int i = 0; i < h->nregs; i++)
		h->regs[i].need = h->regs[i].hoist && !h->regs[i].dup;
	for (bool changed = true; changed;) {
		changed = false;
		for (int i = 0; i < h->nregs; i++) {
			const struct hline *L;
			const char *q, *e, *tok;
			size_t n;

			if (!h->regs[i].need)
				continue;
			L = &h->lines[h->regs[i].def_line];
			q = L->p;
			e = q + L->n;
			while (next_pct(&q, e, &tok, &n)) {
				int r = hreg_lookup(h, tok, n);

				if (r >= 0 && r != i && h->regs[r].hoist && !h->regs[r].need) {
					h->regs[r].need = true;
					changed = true;
				}
			}
		}
	}
	free(h->order);
	h->norder = 0;
	h->order = malloc(((size_t)h->nregs + 1) * sizeof(int));
	if (!h->order) {
		h->oom = true;
		return false;
	}
	for (int i = 0; i < h->nregs; i++) {
		todo += h->regs[i].need;
		h->regs[i].done = false;
	}
	/* each pass writes the lines whose sources are written; a pass with none: a cycle */
	while (todo && progress) {
		progress = false;
		for (int i = 0; i < h->nregs; i++) {
			const struct hline *L;
			const char *q, *e, *tok;
			size_t n;
			bool ready = true;

			if (!h->regs[i].need || h->regs[i].done)
				continue;
			L = &h->lines[h->regs[i].def_line];
			q = L->p;
			e = q + L->n;
			while (ready && next_pct(&q, e, &tok, &n)) {
				int r = hreg_lookup(h, tok, n);

				ready = r < 0 || r == i || !h->regs[r].need || h->regs[r].done;
			}
			if (ready) {
				h->order[h->norder++] = h->regs[i].def_line;
				h->regs[i].done = true;
				todo--;
				progress = true;
			}
		}
	}
	return todo == 0;
}

struct gx_hoist_plan *gx_hoist_plan_make(const struct gx_probe_body *b, bool at_site)
{
	unsigned live_max = at_site ? UINT_MAX : GX_HOIST_LIVE_MAX;
	struct gx_hoist_plan *h = calloc(1, sizeof(*h));
	bool in_asm = false, *keep;
	int cap = 0;
	unsigned live;

	if (!h)
		return NULL;
	for (const char *l = b->text; l < b->text + b->len;) {
		const char *nl = memchr(l, '\n', (size_t)(b->text + b->len - l));
		size_t n = nl ? (size_t)(nl - l) : (size_t)(b->text + b->len - l);
		const char *t = l;

		if (h->nlines == cap) {
			struct hline *nl2;

			cap = cap ? cap * 2 : 256;
			nl2 = realloc(h->lines, (size_t)cap * sizeof(*nl2));
			if (!nl2) {
				gx_hoist_plan_free(h);
				return NULL;
			}
			h->lines = nl2;
		}
		memset(&h->lines[h->nlines], 0, sizeof(h->lines[0]));
		h->lines[h->nlines].p = l;
		h->lines[h->nlines].n = n;
		h->lines[h->nlines].full = n;
		{
			const char *c = memmem(l, n, "//", 2);

			if (c)
				h->lines[h->nlines].n = (size_t)(c - l);
		}
		h->nlines++;
		while (t < l + n && (*t == ' ' || *t == '\t'))
			t++;
		if (memmem(l, n, "// begin inline asm", 19))
			in_asm = true;
		else if (memmem(l, n, "// end inline asm", 17))
			in_asm = false;
		else if (!in_asm && starts(t, l + n, ".reg"))
			hoist_family(h, t, l + n);
		l = nl ? nl + 1 : b->text + b->len;
	}
	in_asm = false;
	for (int li = 0; li < h->nlines; li++) {
		const char *l = h->lines[li].p;
		size_t n = h->lines[li].full;

		if (memmem(l, n, "// begin inline asm", 19))
			in_asm = true;
		else if (memmem(l, n, "// end inline asm", 17))
			in_asm = false;
		else
			hoist_scan_line(h, li, in_asm);
	}
	hoist_region(h, at_site);
	for (int i = 0; i < h->nregs; i++) {
		struct hreg *r = &h->regs[i];

		r->hoist = r->defs == 1 && r->def_line >= 0 && h->lines[r->def_line].cand;
	}
	hoist_close(h);
	/* constants: no special register read, and only constants read */
	for (int i = 0; i < h->nregs; i++)
		h->regs[i].dup = h->regs[i].hoist && !h->lines[h->regs[i].def_line].sreg;
	for (bool changed = true; changed;) {
		changed = false;
		for (int i = 0; i < h->nregs; i++)
			if (h->regs[i].dup && reads_where(h, h->regs[i].def_line, i, not_dup)) {
				h->regs[i].dup = false;
				changed = true;
			}
	}
	/*
	 * Each round tries every live value back at the site, closing each time:
	 * about cubic in the live values. Real probes keep a few dozen; a body
	 * with far more than the budget keeps everything at its sites instead.
	 */
	live = hoist_live(h);
	if (live_max <= UINT_MAX / 8 && live > 8 * live_max)
		for (int i = 0; i < h->nregs; i++)
			h->regs[i].hoist = false;
	keep = malloc(((size_t)h->nregs + 1) * sizeof(bool));
	if (!keep)
		h->oom = true;
	while (!h->oom && (live = hoist_live(h)) > live_max) {
		int best = -1, best_moved = -1, least = -1;
		unsigned best_live = ~0u, least_live = ~0u;

		for (int i = 0; i < h->nregs; i++)
			keep[i] = h->regs[i].hoist;
		for (int c = 0; c < h->nregs; c++) {
			unsigned l;
			int moved = 0;

			if (!keep[c] || h->regs[c].dup || !h->regs[c].live)
				continue;
			h->regs[c].hoist = false;
			hoist_close(h);
			for (int i = 0; i < h->nregs; i++)
				moved += h->regs[i].hoist && !h->regs[i].dup;
			l = hoist_live(h);
			/* the most moved code that leaves less live; then the least live */
			if (l < live && (moved > best_moved || (moved == best_moved && l < best_live))) {
				best = c;
				best_live = l;
				best_moved = moved;
			}
			if (l < least_live) {
				least = c;
				least_live = l;
			}
			for (int i = 0; i < h->nregs; i++)
				h->regs[i].hoist = keep[i];
			hoist_live(h);
		}
		if (best < 0)
			best = least;	/* none frees anything alone: one back all the same */
		if (best < 0)
			break;
		h->regs[best].hoist = false;
		hoist_close(h);
	}
	free(keep);
	if (h->oom) {
		gx_hoist_plan_free(h);
		return NULL;
	}
	if (!h->oom && (live > live_max || !hoist_order(h))) {
		for (int i = 0; i < h->nregs; i++)
			h->regs[i].hoist = h->regs[i].need = false;
		hoist_live(h);
		h->norder = 0;
	}
	if (h->oom) {
		gx_hoist_plan_free(h);
		return NULL;
	}
	return h;
}

void gx_hoist_plan_free(struct gx_hoist_plan *h)
{
	if (!h)
		return;
	for (int f = 0; f < h->nfam; f++)
		free(h->fam[f].idx);
	free(h->regs);
	free(h->lines);
	free(h->order);
	free(h);
}

bool gx_hoist_line_moved(const struct gx_hoist_plan *h, int line)
{
	return h && line >= 0 && line < h->nlines && h->lines[line].moved;
}

bool gx_hoist_reg_renamed(const struct gx_hoist_plan *h, const char *tok, size_t n, bool site)
{
	int r;

	if (!h)
		return false;
	r = hreg_lookup(h, tok, n);
	return r >= 0 && h->regs[r].hoist && !(site && h->regs[r].dup);
}


/* [p, p + n) with the moved registers named "%SFX_h_NAME". */
static bool put_renamed(const struct gx_hoist_plan *h, char **o, size_t *len, size_t *cap,
			const char *p, size_t n, const char *sfx)
{
	const char *e = p + n, *q = p, *tok;
	size_t tn;

	while (next_pct(&q, e, &tok, &tn)) {
		if (!gx_text_put(o, len, cap, p, (size_t)(tok - p)))
			return false;
		if (gx_hoist_reg_renamed(h, tok, tn, false)) {
			if (!gx_text_put(o, len, cap, "%", 1) || !gx_text_put(o, len, cap, sfx, strlen(sfx)) ||
			    !gx_text_put(o, len, cap, "_h_", 3) || !gx_text_put(o, len, cap, tok + 1, tn - 1))
				return false;
		} else if (!gx_text_put(o, len, cap, tok, tn)) {
			return false;
		}
		p = q;
	}
	return gx_text_put(o, len, cap, p, (size_t)(e - p));
}

char *gx_hoist_text(const struct gx_hoist_plan *h, const char *sfx)
{
	size_t len = 0, cap = 0;
	char *o = NULL, tmp[96];
	bool ok = gx_text_put(&o, &len, &cap, "", 0);

	for (int i = 0; ok && h && i < h->nregs; i++)
		if (h->regs[i].hoist && h->regs[i].need) {
			snprintf(tmp, sizeof(tmp), "\t.reg %s %%%s_h_%s;\n", h->regs[i].type, sfx,
				 h->regs[i].name + 1);
			ok = gx_text_put(&o, &len, &cap, tmp, strlen(tmp));
		}
	for (int k = 0; ok && h && k < h->norder; k++) {
		const struct hline *L = &h->lines[h->order[k]];

		ok = put_renamed(h, &o, &len, &cap, L->p, L->n, sfx) && gx_text_put(&o, &len, &cap, "\n", 1);
	}
	if (!ok) {
		free(o);
		return NULL;
	}
	return o;
}

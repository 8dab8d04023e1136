/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Precision tracking: which scalars' exact ranges a decision depended on.
 *
 * Scalars start imprecise. When the verifier decides something from a
 * scalar's range — an offset added to a pointer, a size passed to a helper,
 * a branch whose outcome the range settled, a return value checked against
 * the type's range — that scalar is marked precise, and so is everything it
 * was computed from: we walk the path's instruction history backwards
 * (through moves, arithmetic, stack spills and fills, calls and returns) and
 * mark the sources in every checkpoint on the way. A stored state whose
 * scalar is imprecise covers any scalar there (nothing below depended on
 * it), which is what lets a loop that tracks, say, a running minimum
 * converge instead of splitting on every value. This is the Linux
 * verifier's scheme, reimplemented in small.
 */
#include <stdlib.h>
#include <string.h>

#include "verifier_impl.h"

int v_hist_push(struct vstate *st, uint32_t idx)
{
	if (st->nhist == st->caphist) {
		uint32_t cap = st->caphist ? st->caphist * 2 : 32;
		struct vhist *h = realloc(st->hist, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		st->hist = h;
		st->caphist = cap;
	}
	st->hist[st->nhist++] = (struct vhist){ .idx = idx, .frame = (uint8_t)st->curframe,
						 .slot = -1 };
	return 0;
}

/* What still needs a source, per frame: registers and stack slots. */
struct pmask {
	uint16_t regs[GPUEXT_MAX_CALL_FRAMES];
	uint64_t slots[GPUEXT_MAX_CALL_FRAMES];
};

static bool pmask_empty(const struct pmask *m)
{
	for (int f = 0; f < GPUEXT_MAX_CALL_FRAMES; f++)
		if (m->regs[f] || m->slots[f])
			return false;
	return true;
}

static bool set_precise(struct vreg *r)
{
	if (r->type != VT_SCALAR || r->precise)
		return false;
	r->precise = true;
	return true;
}

/*
 * Marks in @st every scalar named by @m (the state at the start of a
 * segment). Returns whether anything was newly marked: if not, the walk
 * can stop, every earlier state already got these marks.
 */
static bool mark_state(struct vstate *st, const struct pmask *m)
{
	bool fresh = false;

	for (int f = 0; f <= st->curframe; f++) {
		struct vframe *fr = st->frames[f];

		for (int r = 0; r < 10; r++)
			if (m->regs[f] & (1u << r))
				fresh |= set_precise(&fr->regs[r]);
		for (int k = 0; k < VSLOTS; k++)
			if ((m->slots[f] >> k) & 1 && memchr(fr->stack[k].bytes, VB_SPILL, 8))
				fresh |= set_precise(&fr->stack[k].spill);
	}
	return fresh;
}

/* One instruction backwards: replace what it defined by what it read. */
static void backtrack(const struct verifier *v, const struct vhist *e, struct pmask *m)
{
	const struct bpf_insn *in = &v->insns[e->idx];
	const struct isa_decoded *d = &v->dec[e->idx];
	unsigned f = e->frame;
	uint16_t dst = (uint16_t)(1u << in->dst_reg), src = (uint16_t)(1u << in->src_reg);

	switch (d->kind) {
	case ISA_ALU:
		if (!(m->regs[f] & dst))
			return;
		if (isa_op(in->code) == BPF_MOV) {
			m->regs[f] &= (uint16_t)~dst;
			if (!d->use_imm)
				m->regs[f] |= src;
		} else if (!d->use_imm) {
			m->regs[f] |= src;	/* dst op= src: both matter */
		}
		return;
	case ISA_BSWAP:
		return;			/* dst from dst */
	case ISA_LDDW:
		m->regs[f] &= (uint16_t)~dst;
		return;
	case ISA_LDX:
		if (!(m->regs[f] & dst))
			return;
		m->regs[f] &= (uint16_t)~dst;
		if (e->slot >= 0)	/* a fill: the spilled value is the source */
			m->slots[e->slot_frame] |= 1ULL << e->slot;
		return;
	case ISA_STX:
		if (e->slot >= 0 && (m->slots[e->slot_frame] >> e->slot) & 1) {
			m->slots[e->slot_frame] &= ~(1ULL << e->slot);
			m->regs[f] |= src;	/* a spill of the source register */
		}
		return;
	case ISA_ST:
		if (e->slot >= 0)
			m->slots[e->slot_frame] &= ~(1ULL << e->slot);
		return;
	case ISA_ATOMIC:
		if (in->imm == BPF_CMPXCHG)
			m->regs[f] &= (uint16_t)~1u;
		else if (in->imm & BPF_FETCH)
			m->regs[f] &= (uint16_t)~src;
		return;
	case ISA_CALL:
	case ISA_CALLX:
		if (d->kind == ISA_CALL && in->src_reg != BPF_PSEUDO_CALL) {
			m->regs[f] &= (uint16_t)~0x3fu;	/* r0 from the helper; r1-r5 clobbered */
			return;
		}
		/* entering the callee, backwards: its arguments were our r1-r5 */
		if (f + 1 < GPUEXT_MAX_CALL_FRAMES) {
			m->regs[f] |= m->regs[f + 1] & 0x3e;
			m->regs[f + 1] = 0;
			m->slots[f + 1] = 0;
		}
		return;
	case ISA_EXIT:
		/* leaving a callee, backwards: the caller's r0 was the callee's */
		if (f > 0 && (m->regs[f - 1] & 1)) {
			m->regs[f - 1] &= (uint16_t)~1u;
			m->regs[f] |= 1;
		}
		return;
	case ISA_JA:
	case ISA_JCOND:
		return;
	}
}

/*
 * Walks the path backwards from @st, marking the checkpoints, until nothing
 * is left. @skip_last: the last history entry is the instruction being
 * checked, whose own effects come after the decision.
 */
static void walk(struct verifier *v, struct vstate *st, struct pmask *m, bool skip_last)
{
	const struct vhist *seg = st->hist;
	uint32_t n = st->nhist - (skip_last && st->nhist ? 1 : 0);
	struct vcheckpoint *cp = st->parent;

	for (;;) {
		for (uint32_t i = n; i-- > 0 && !pmask_empty(m);)
			backtrack(v, &seg[i], m);
		if (pmask_empty(m) || !cp)
			return;
		if (!mark_state(&cp->st, m))
			return;	/* already precise there, and so above */
		seg = cp->seg;
		n = cp->nseg;
		cp = cp->parent;
	}
}

static void add_linked(const struct vstate *st, struct pmask *m, uint32_t id)
{
	if (!id)
		return;
	for (int f = 0; f <= st->curframe; f++)
		for (int r = 0; r < 10; r++)
			if (st->frames[f]->regs[r].type == VT_SCALAR && st->frames[f]->regs[r].id == id)
				m->regs[f] |= (uint16_t)(1u << r);
}

void v_mark_precise(struct verifier *v, struct vstate *st, int reg)
{
	struct vframe *fr = v_cur(st);
	struct pmask m;

	if (reg < 0 || reg > 9 || fr->regs[reg].type != VT_SCALAR || fr->regs[reg].precise)
		return;
	memset(&m, 0, sizeof(m));
	m.regs[st->curframe] = (uint16_t)(1u << reg);
	add_linked(st, &m, fr->regs[reg].id);
	mark_state(st, &m);
	/* marks matter only to stored states: with none on this path, there is
	 * nothing to walk back to (and long straight-line code stays linear) */
	if (st->parent)
		walk(v, st, &m, true);
}

void v_propagate_precision(struct verifier *v, struct vstate *st, const struct vstate *old)
{
	struct pmask m;

	memset(&m, 0, sizeof(m));
	for (int f = 0; f <= old->curframe && f <= st->curframe; f++) {
		const struct vframe *of = old->frames[f];
		struct vframe *cf = st->frames[f];

		for (int r = 0; r < 10; r++)
			if (of->regs[r].type == VT_SCALAR && of->regs[r].precise &&
			    cf->regs[r].type == VT_SCALAR && !cf->regs[r].precise)
				m.regs[f] |= (uint16_t)(1u << r);
		for (int k = 0; k < VSLOTS; k++)
			if (memchr(of->stack[k].bytes, VB_SPILL, 8) && of->stack[k].spill.precise &&
			    memchr(cf->stack[k].bytes, VB_SPILL, 8) &&
			    cf->stack[k].spill.type == VT_SCALAR && !cf->stack[k].spill.precise)
				m.slots[f] |= 1ULL << k;
	}
	if (pmask_empty(&m))
		return;
	mark_state(st, &m);
	if (st->parent)
		walk(v, st, &m, false);
}

void v_mark_all_imprecise(struct vstate *st)
{
	for (int f = 0; f <= st->curframe; f++) {
		struct vframe *fr = st->frames[f];

		for (int r = 0; r < 11; r++)
			fr->regs[r].precise = false;
		for (int k = 0; k < VSLOTS; k++)
			fr->stack[k].spill.precise = false;
	}
}

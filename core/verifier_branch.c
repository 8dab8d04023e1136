/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verifier's conditional jumps: each side refined by the scalar ranges,
 * NULL checks that settle a pointer (and a ring record's reference) on each
 * side, and the SIMT rules: a branch on a per-lane value makes what follows
 * divergent up to its join (immediate post-dominator), and a ring record
 * lives at the divergence level it was reserved in.
 */
#include <stdlib.h>
#include <string.h>

#include "verifier_insn.h"

/* ---- branches ---- */

static void mark_null_outcome(struct vstate *st, uint32_t id, bool is_null)
{
	for (int f = 0; f <= st->curframe; f++) {
		struct vframe *fr = st->frames[f];

		for (int r = 0; r < 11; r++) {
			struct vreg *x = &fr->regs[r];

			if (is_ptr(x) && x->maybe_null && x->id == id) {
				if (is_null) {
					bool div = x->divergent;

					set_scalar_const(x, 0);
					x->divergent = div;
				} else {
					x->maybe_null = false;
				}
			}
		}
		for (int s = 0; s < VSLOTS; s++) {
			struct vreg *x = &fr->stack[s].spill;

			if (fr->stack[s].bytes[0] == VB_SPILL && is_ptr(x) && x->maybe_null && x->id == id) {
				if (is_null)
					set_scalar_const(x, 0);
				else
					x->maybe_null = false;
			}
		}
	}
}

static int push_divergence(struct verifier *v, struct vstate *st, uint32_t at)
{
	int32_t r = v->ipdom[at];
	uint32_t join = r < 0 ? UINT32_MAX : (uint32_t)r;
	bool held_here = false;

	for (int i = 0; i < st->nrefs; i++)
		held_here |= st->refdiv[i] == st->ndiverge;
	/* same join as the innermost level and no record at this level: nothing tells them apart */
	if (st->ndiverge && st->diverge[st->ndiverge - 1] == join && !held_here)
		return 0;
	if (st->ndiverge < VMAX_DIVERGE) {
		st->diverge[st->ndiverge++] = join;
		return 0;
	}
	if (held_here)
		return v_reject(v, st, GPUEXT_RULE_DIVERGENT_SUBMIT, NULL,
				"more than %d nested lane-dependent branches while holding a record",
				VMAX_DIVERGE);
	return 0;
}

/* Copies a refined scalar to every register and spill linked to it (same id). */
static void sync_linked(struct vstate *st, const struct vreg *r)
{
	if (r->type != VT_SCALAR || !r->id)
		return;
	for (int f = 0; f <= st->curframe; f++) {
		struct vframe *fr = st->frames[f];

		for (int k = 0; k < 11; k++)
			if (&fr->regs[k] != r && fr->regs[k].type == VT_SCALAR && fr->regs[k].id == r->id)
				fr->regs[k].s = r->s;
		for (int k = 0; k < VSLOTS; k++) {
			struct vslot *sl = &fr->stack[k];

			if (sl->bytes[0] == VB_SPILL && sl->spill_size == 8 &&
			    sl->spill.type == VT_SCALAR && sl->spill.id == r->id)
				sl->spill.s = r->s;
		}
	}
}

int v_jcond(struct verifier *v, struct vstate *st, const struct bpf_insn *in,
	    const struct isa_decoded *d)
{
	uint8_t op = isa_op(in->code);
	bool is64 = isa_class(in->code) == BPF_JMP;
	uint32_t target = (uint32_t)isa_jump_target(in, st->pc), fall = st->pc + 1;
	struct vreg *dst = R(st, in->dst_reg), srcv, *srcp = NULL;
	struct vstate *other;
	int err = need_init(v, st, in->dst_reg);
	uint32_t bpc = st->pc;
	bool divergent;

	if (err)
		return err;
	if (d->use_imm) {
		set_scalar_const(&srcv, is64 ? (uint64_t)(int64_t)in->imm : (uint32_t)in->imm);
	} else {
		if ((err = need_init(v, st, in->src_reg)))
			return err;
		srcp = R(st, in->src_reg);
		srcv = *srcp;
	}
	divergent = v->type->simt && (dst->divergent || srcv.divergent);

	if (is_ptr(dst) || is_ptr(&srcv)) {
		struct vreg *p = is_ptr(dst) ? dst : srcp;
		const struct vreg *o = is_ptr(dst) ? &srcv : dst;
		bool vs_zero = !is_ptr(o) && scalar_is_const(&o->s) && !o->s.var.value;

		if (is64 && vs_zero && (op == BPF_JEQ || op == BPF_JNE) && p) {
			if (!p->maybe_null) { /* a valid pointer is never NULL */
				if (divergent) {
					int before = st->ndiverge;

					if ((err = push_divergence(v, st, bpc)))
						return err;
					for (int i = 0; p->ref_id && i < st->nrefs; i++)
						if (st->refs[i] == p->ref_id && st->refdiv[i] == before &&
						    st->ndiverge > before)
							st->refdiv[i] = (uint8_t)st->ndiverge;
				}
				st->pc = op == BPF_JNE ? target : fall;
				return 0;
			}
			uint32_t id = p->id, ref = p->ref_id;

			other = v_push_branch(v, st, target);
			if (!other)
				return v->rule ? -EACCES : -ENOMEM;
			/* taken side: JEQ -> NULL, JNE -> non-NULL; a NULL record holds no reference */
			mark_null_outcome(other, id, op == BPF_JEQ);
			mark_null_outcome(st, id, op != BPF_JEQ);
			if (ref)
				drop_ref(op == BPF_JEQ ? other : st, ref);
			if (divergent) {
				int before = st->ndiverge;

				if ((err = push_divergence(v, other, bpc)))
					return err;
				if ((err = push_divergence(v, st, bpc)))
					return err;
				/*
				 * A record reserved at this level lives on the non-NULL side of
				 * its own check (a per-thread reserve can fail on some lanes):
				 * finish it there. One reserved further out keeps its level.
				 */
				if (ref && v->type->simt) {
					struct vstate *keep = op == BPF_JEQ ? st : other;

					for (int i = 0; i < keep->nrefs; i++)
						if (keep->refs[i] == ref && keep->refdiv[i] == before &&
						    keep->ndiverge > before)
							keep->refdiv[i] = (uint8_t)keep->ndiverge;
				}
			}
			st->pc = fall;
			return 0;
		}
		if (!v->type->allow_ptr_leaks)
			return v_reject(v, st, GPUEXT_RULE_PTR_LEAK,
					"compare pointers only against NULL",
					"pointer comparison prohibited (R%d %s)", in->dst_reg,
					type_str(p ? p->type : dst->type));
		other = v_push_branch(v, st, target);
		if (!other)
			return v->rule ? -EACCES : -ENOMEM;
		st->pc = fall;
		return 0;
	}

	int outcome = scalar_branch_outcome(&dst->s, &srcv.s, op, is64);

	if (outcome >= 0) {
		/* the ranges decided the branch: they must be exact where we prune */
		v_mark_precise(v, st, in->dst_reg);
		if (srcp)
			v_mark_precise(v, st, in->src_reg);
	}
	/*
	 * Known on this path, but a branch on a per-lane value: lanes on other
	 * paths (with other values) reconverged before it and may go the other
	 * way, so what follows is divergent until the branch's join.
	 */
	if (outcome >= 0 && divergent)
		if ((err = push_divergence(v, st, bpc)))
			return err;
	if (outcome == 1) {
		st->pc = target;
		return 0;
	}
	if (outcome == 0) {
		st->pc = fall;
		return 0;
	}
	/* both ways: refine each side */
	struct scalar td = dst->s, ts = srcv.s, fd = dst->s, fs = srcv.s;
	bool take = scalar_refine(&td, &ts, op, is64, true);
	bool fallok = scalar_refine(&fd, &fs, op, is64, false);

	if (!take || !fallok) {
		v_mark_precise(v, st, in->dst_reg);
		if (srcp)
			v_mark_precise(v, st, in->src_reg);
	}

	if (take) {
		other = v_push_branch(v, st, target);
		if (!other)
			return v->rule ? -EACCES : -ENOMEM;
		R(other, in->dst_reg)->s = td;
		sync_linked(other, R(other, in->dst_reg));
		if (srcp) {
			R(other, in->src_reg)->s = ts;
			sync_linked(other, R(other, in->src_reg));
		}
		if (divergent)
			if ((err = push_divergence(v, other, bpc)))
				return err;
	}
	if (!fallok) {
		/* only the taken side is possible: continue there instead */
		if (take) {
			struct vpending p = v->stack[--v->nstack];

			if (p.st.parent)
				p.st.parent->branches--;
			v_state_free(st);
			*st = p.st;
			return 0;
		}
		return v_reject(v, st, GPUEXT_RULE_INVALID_INSN, NULL, "no side of the branch is possible");
	}
	dst->s = fd;
	sync_linked(st, dst);
	if (srcp) {
		srcp->s = fs;
		sync_linked(st, srcp);
	}
	if (divergent)
		if ((err = push_divergence(v, st, bpc)))
			return err;
	st->pc = fall;
	return 0;
}


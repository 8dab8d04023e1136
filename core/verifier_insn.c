/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verifier's per-instruction rules: what each instruction requires of
 * the abstract state and what it does to it. One function per instruction
 * family, each rejection naming its rule and giving a hint.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verifier_insn.h"

#define PTR_OFF_LIMIT (1 << 29)

/* A value loaded from memory: an unknown scalar of @size bytes, zero- or sign-extended. */
static void set_loaded_scalar(struct vreg *out, unsigned size, bool sext, bool divergent)
{
	memset(out, 0, sizeof(*out));
	out->type = VT_SCALAR;
	scalar_unknown(&out->s);
	if (sext)
		scalar_sext(&out->s, size);
	else
		scalar_trunc(&out->s, size);
	out->divergent = divergent;
}

/* ---- stack ---- */

static uint32_t roundup32(uint32_t x)
{
	return (x + 31) & ~31u;
}

static int touch_stack(struct verifier *v, struct vstate *st, struct vframe *f, int64_t off)
{
	uint32_t need = (uint32_t)(-off), total = 0;

	if (need > f->depth)
		f->depth = (need + 7) & ~7u;
	for (int i = 0; i <= st->curframe; i++)
		total += roundup32(st->frames[i]->depth ? st->frames[i]->depth : 1);
	if (total > GPUEXT_STACK_SIZE)
		return v_reject(v, st, GPUEXT_RULE_STACK_SIZE,
				"use less stack in the functions of this call chain (or a map as scratch)",
				"combined stack size of %d calls is %u bytes, more than %d",
				st->curframe + 1, total, GPUEXT_STACK_SIZE);
	if (total > v->res->stack_depth)
		v->res->stack_depth = total;
	return 0;
}

/*
 * Resolves a stack access to its frame and lowest fp-relative offset. A
 * variable offset is allowed when its whole range stays in the frame; *span
 * gets the range's width (0 for a constant offset).
 */
static int stack_access(struct verifier *v, struct vstate *st, const struct vreg *p, int32_t ioff,
			unsigned size, struct vframe **fout, int64_t *off_out, int64_t *span)
{
	int64_t off, width = 0;

	if (scalar_is_const(&p->s)) {
		off = (int64_t)p->off + ioff + (int64_t)p->s.var.value;
	} else {
		if (p->s.smin < -GPUEXT_STACK_SIZE || p->s.smax > GPUEXT_STACK_SIZE)
			return v_reject(v, st, GPUEXT_RULE_OOB_STACK,
					"bound the index before using it on the stack",
					"variable stack access with an unbounded offset (smin=%lld smax=%lld)",
					(long long)p->s.smin, (long long)p->s.smax);
		off = (int64_t)p->off + ioff + p->s.smin;
		width = p->s.smax - p->s.smin;
	}
	if (off < -GPUEXT_STACK_SIZE || off + width + (int64_t)size > 0)
		return v_reject(v, st, GPUEXT_RULE_OOB_STACK,
				"stack accesses must lie in [fp-512, fp)",
				"invalid stack access off=%lld%s%lld size=%u (the frame is fp-512 .. fp-1)",
				(long long)off, width ? "..+" : "", width ? (long long)width : 0LL,
				size);
	if (p->frameno > (uint32_t)st->curframe)
		return v_reject(v, st, GPUEXT_RULE_OOB_STACK, NULL,
				"stack pointer to frame %u, which has returned", p->frameno);
	*fout = st->frames[p->frameno];
	*off_out = off;
	*span = width;
	return touch_stack(v, st, *fout, off);
}

static struct vslot *slot_at(struct vframe *f, int64_t off, int *byte)
{
	int64_t pos = GPUEXT_STACK_SIZE + off;

	*byte = (int)(pos % 8);
	return &f->stack[pos / 8];
}

static void drop_spill(struct vslot *s)
{
	for (int i = 0; i < 8; i++)
		if (s->bytes[i] == VB_SPILL)
			s->bytes[i] = VB_MISC;
	bool div = s->spill.divergent;

	memset(&s->spill, 0, sizeof(s->spill));
	s->spill.divergent = div;
	s->spill_off = s->spill_size = 0;
}

/* Marks [off, off+size) written with @val (NULL: unknown scalar bytes). */
static void stack_write(struct vstate *st, struct vframe *f, int64_t off, unsigned size,
			const struct vreg *val, bool zero)
{
	int b;
	struct vslot *s;
	bool div = (val && val->divergent) || st->ndiverge;

	/* a whole register (8 bytes, aligned) or a scalar sub-register (naturally aligned) */
	if (val && !zero && (off % (int64_t)size) == 0 &&
	    (size == 8 || (val->type == VT_SCALAR && size < 8))) {
		s = slot_at(f, off, &b);
		if (size == 8 || s->spill_off != b || s->spill_size != size)
			drop_spill(s);
		memset(s->bytes + b, VB_SPILL, size);
		s->spill = *val;
		if (size < 8)
			scalar_trunc(&s->spill.s, size);
		s->spill.divergent |= div;
		s->spill_off = (uint8_t)b;
		s->spill_size = (uint8_t)size;
		return;
	}
	for (unsigned i = 0; i < size; i++) {
		s = slot_at(f, off + i, &b);
		if (s->bytes[b] == VB_SPILL)
			drop_spill(s); /* partial overwrite destroys the spilled register */
		s->bytes[b] = zero ? VB_ZERO : VB_MISC;
		s->spill.divergent |= div;
	}
}

/* Reads [off, off+size) into @out (a register, or NULL for a helper's read check). */
static int stack_read(struct verifier *v, struct vstate *st, struct vframe *f, int64_t off,
		      unsigned size, struct vreg *out, bool sext)
{
	int b;
	struct vslot *s = slot_at(f, off, &b);
	bool all_zero = true, spill = false, div = false;

	for (unsigned i = 0; i < size; i++) {
		struct vslot *t = slot_at(f, off + i, &b);

		if (t->bytes[b] == VB_INVALID)
			return v_reject(v, st, GPUEXT_RULE_UNINIT_STACK,
					"write the stack bytes (e.g. zero the struct) before reading or "
					"passing them",
					"invalid read from stack off %lld size %u: byte fp%lld was never "
					"written",
					(long long)off, size, (long long)(off + i));
		all_zero &= t->bytes[b] == VB_ZERO;
		spill |= t->bytes[b] == VB_SPILL;
		div |= t->spill.divergent;
		/*
		 * A helper reading a spilled pointer (a map key, ring output data, an
		 * atomic max's old value) would hand the address out: the kernel
		 * refuses it too unless pointers may leak.
		 */
		if (!out && t->bytes[b] == VB_SPILL && is_ptr(&t->spill) && !v->type->allow_ptr_leaks)
			return v_reject(v, st, GPUEXT_RULE_PTR_LEAK,
					"pass scalars to helpers; a pointer may not leave the program",
					"a helper reads the spilled pointer at fp%lld", (long long)(off + i));
	}
	if (!out)
		return 0;
	s = slot_at(f, off, &b);
	if (s->bytes[b] == VB_SPILL && s->spill_off == b && s->spill_size == size) {
		*out = s->spill;
		if (sext)
			scalar_sext(&out->s, size);
		return 0;
	}
	if (spill) {
		s = slot_at(f, off, &b);
		if (is_ptr(&s->spill)) /* the kernel refuses this even for privileged loaders */
			return v_reject(v, st, GPUEXT_RULE_PTR_LEAK,
					"read spilled pointers back whole (8 bytes, aligned)",
					"partial read of a spilled pointer at fp%lld", (long long)off);
	}
	if (all_zero) {
		set_scalar_const(out, 0);
		out->divergent = div;
	} else {
		set_loaded_scalar(out, size, sext, div);
	}
	return 0;
}

/* A write somewhere in [off, off+len): bytes keep "never written" (we do not know which
 * were), lose exact zeros and spilled registers. */
static void stack_write_var(struct vstate *st, struct vframe *f, int64_t off, int64_t len)
{
	for (int64_t i = 0; i < len; i++) {
		int b;
		struct vslot *s = slot_at(f, off + i, &b);

		if (s->bytes[b] == VB_SPILL)
			drop_spill(s);
		if (s->bytes[b] == VB_ZERO)
			s->bytes[b] = VB_MISC;
		s->spill.divergent |= st->ndiverge > 0;
	}
}

/* A read somewhere in [off, off+len): every byte must be written, no spilled pointer. */
static int stack_read_var(struct verifier *v, struct vstate *st, struct vframe *f, int64_t off,
			  int64_t len, unsigned size, struct vreg *out, bool sext)
{
	bool div = false;

	for (int64_t i = 0; i < len; i++) {
		int b;
		struct vslot *s = slot_at(f, off + i, &b);

		if (s->bytes[b] == VB_INVALID)
			return v_reject(v, st, GPUEXT_RULE_UNINIT_STACK,
					"initialise every stack byte a variable index can reach",
					"invalid variable-offset read from stack: byte fp%lld in the range "
					"fp%lld..fp%lld was never written",
					(long long)(off + i), (long long)off, (long long)(off + len - 1));
		if (s->bytes[b] == VB_SPILL && is_ptr(&s->spill))
			return v_reject(v, st, GPUEXT_RULE_PTR_LEAK, NULL,
					"variable-offset read may read part of a spilled pointer at fp%lld",
					(long long)(off + i));
		div |= s->spill.divergent;
	}
	if (out)
		set_loaded_scalar(out, size, sext, div);
	return 0;
}

/* ---- memory regions ---- */

static int check_bounds(struct verifier *v, struct vstate *st, const struct vreg *p, int32_t ioff,
			uint64_t size, uint64_t limit, enum gpuext_rule rule, const char *what)
{
	int64_t lo, hi;

	if (p->s.smin < -PTR_OFF_LIMIT || p->s.smax > PTR_OFF_LIMIT)
		return v_reject(v, st, rule,
				"check the index against the size before using it (if (i < N) ...)",
				"%s access with an unbounded variable offset (smin=%lld smax=%lld)", what,
				(long long)p->s.smin, (long long)p->s.smax);
	lo = (int64_t)p->off + ioff + p->s.smin;
	hi = (int64_t)p->off + ioff + p->s.smax + (int64_t)size;
	if (lo < 0 || hi > (int64_t)limit)
		return v_reject(v, st, rule,
				"check the offset/index against the size before the access",
				"invalid access to %s: size=%llu, off=%lld..%lld, access size=%llu",
				what, (unsigned long long)limit, (long long)(lo), (long long)(hi - (int64_t)size),
				(unsigned long long)size);
	return 0;
}

static const struct gpuext_ctx_field *ctx_field(struct verifier *v, int64_t off, unsigned size)
{
	for (size_t i = 0; i < v->type->field_cnt; i++) {
		const struct gpuext_ctx_field *f = &v->type->fields[i];

		if (off >= f->off && off + size <= (int64_t)f->off + f->size && size <= f->size &&
		    ((off - f->off) % size) == 0)
			return f;
	}
	return NULL;
}

/*
 * A load or store of @size bytes at R[@regno] + @ioff. For loads, @out gets
 * the loaded value; for stores, @val is the stored register (NULL for an
 * immediate, @zero when it is 0).
 */
/*
 * The alignment this path proves for an access through @p + @ioff, kept as
 * the minimum over the paths that reach the instruction (a pruned path is
 * covered: its pointer's offsets are a subset of the stored state's). The
 * context, frames, map values and ring-buffer records start 8-aligned; other
 * memory (variables, memory a context field points to) counts 1.
 */
static void note_align(struct verifier *v, const struct vstate *st, const struct vreg *p, int32_t ioff)
{
	bool based8 = p->type == VT_CTX || p->type == VT_STACK || p->type == VT_MAP_VALUE ||
		      (p->type == VT_MEM && p->ref_id);
	uint64_t at = (uint64_t)((int64_t)p->off + ioff) + p->s.var.value;
	uint8_t a = based8 ? 8 : 1, *slot = &v->mem_align[st->pc];

	while (a > 1 && ((at & (a - 1u)) || (p->s.var.mask & (a - 1u))))
		a >>= 1;
	if (!*slot || a < *slot)
		*slot = a;
}

static int mem_access(struct verifier *v, struct vstate *st, int regno, int32_t ioff, unsigned size,
		      bool write, struct vreg *out, const struct vreg *val, bool zero, bool sext)
{
	struct vreg *p = R(st, regno);
	struct vframe *f;
	int64_t off, span;
	int err;

	if (p->type == VT_NOT_INIT)
		return need_init(v, st, regno);
	if (p->type == VT_SCALAR)
		return v_reject(v, st, GPUEXT_RULE_SCALAR_DEREF,
				"only pointers from the context, the stack, map lookups or ring-buffer "
				"reservations can be dereferenced",
				"R%d invalid mem access 'scalar'", regno);
	if (p->maybe_null)
		return v_reject(v, st, GPUEXT_RULE_NULL_DEREF,
				"check the pointer against NULL first: if (!p) return 0;",
				"R%d invalid mem access '%s_or_null'", regno, type_str(p->type));
	if (write && val && is_ptr(val) && p->type != VT_STACK && !v->type->allow_ptr_leaks)
		return v_reject(v, st, GPUEXT_RULE_PTR_LEAK,
				"store scalars only; pointers may not leave the program",
				"a pointer is stored into %s (leaks an address)", type_str(p->type));

	if (v->mem_align)
		note_align(v, st, p, ioff);
	switch (p->type) {
	case VT_STACK:
		err = stack_access(v, st, p, ioff, size, &f, &off, &span);
		if (err)
			return err;
		if (span) {
			if (write && val && is_ptr(val))
				return v_reject(v, st, GPUEXT_RULE_PTR_LEAK,
						"spill pointers at constant stack offsets",
						"variable-offset spill of a pointer");
			if (write) {
				stack_write_var(st, f, off, span + size);
				return 0;
			}
			err = stack_read_var(v, st, f, off, span + size, size, out, sext);
			if (!err && out)
				out->divergent |= p->divergent;
			return err;
		}
		if (st->nhist && ((GPUEXT_STACK_SIZE + off) % 8) + size <= 8) {
			/* remember the slot, for precision backtracking through spills */
			st->hist[st->nhist - 1].slot = (int16_t)((GPUEXT_STACK_SIZE + off) / 8);
			st->hist[st->nhist - 1].slot_frame = (uint8_t)p->frameno;
		}
		if (write) {
			if (val && is_ptr(val) && (size != 8 || off % 8))
				return v_reject(v, st, GPUEXT_RULE_PTR_LEAK,
						"spill pointers as whole aligned 8-byte slots",
						"partial spill of a pointer (size %u at fp%lld)", size,
						(long long)off);
			stack_write(st, f, off, size, val, zero);
			return 0;
		}
		err = stack_read(v, st, f, off, size, out, sext);
		if (!err && out)
			out->divergent |= p->divergent;
		return err;
	case VT_MAP_VALUE:
		if (write && rdonly_map(p->map))
			return v_reject(v, st, GPUEXT_RULE_READONLY,
					"the map is read-only to programs (.rodata / BPF_F_RDONLY_PROG)",
					"write into read-only map '%s'", gpuext_map__name(p->map));
		err = check_bounds(v, st, p, ioff, size, gpuext_map__value_size(p->map),
				   GPUEXT_RULE_OOB_MAP_VALUE, "map value");
		break;
	case VT_MEM:
		if (write && p->rdonly)
			return v_reject(v, st, GPUEXT_RULE_READONLY, NULL,
					"write into read-only memory R%d", regno);
		err = check_bounds(v, st, p, ioff, size, p->mem_size, GPUEXT_RULE_OOB_MEM, "memory");
		break;
	case VT_CTX: {
		const struct gpuext_ctx_field *fld = NULL;

		if (!scalar_is_const(&p->s) || p->s.var.value)
			return v_reject(v, st, GPUEXT_RULE_CTX_ACCESS,
					"access context fields at constant offsets",
					"variable-offset context access R%d", regno);
		if (p->off)
			return v_reject(v, st, GPUEXT_RULE_CTX_ACCESS,
					"use the context pointer as given: ctx->field, not (ctx + n)->field",
					"dereference of modified ctx ptr R%d off=%d disallowed", regno, p->off);
		off = (int64_t)p->off + ioff;
		if (v->type->ctx_is_args && off % 8)
			return v_reject(v, st, GPUEXT_RULE_CTX_ACCESS,
					"read each argument whole: ctx[n] is a u64",
					"argument access at offset %lld is not a multiple of 8", (long long)off);
		if (v->type->field_cnt) {
			fld = ctx_field(v, off, size);
			if (!fld)
				return v_reject(v, st, GPUEXT_RULE_CTX_ACCESS,
						"read the context through its declared fields",
						"invalid %s context access off=%lld size=%u",
						v->type->name, (long long)off, size);
			if (write && !fld->writable)
				return v_reject(v, st, GPUEXT_RULE_READONLY,
						"this context field is read-only",
						"write to read-only context field '%s'", fld->name);
		} else {
			if (off < 0 || off + size > v->type->ctx_size)
				return v_reject(v, st, GPUEXT_RULE_CTX_ACCESS,
						"stay inside the context buffer",
						"invalid context access off=%lld size=%u (context is %u bytes)",
						(long long)off, size, v->type->ctx_size);
			if (write && !v->type->ctx_writable)
				return v_reject(v, st, GPUEXT_RULE_READONLY, NULL,
						"the context of %s programs is read-only", v->type->name);
		}
		if (!write && out) {
			memset(out, 0, sizeof(*out));
			if (fld && fld->is_ptr && size == 8) {
				out->type = fld->ptr_size ? VT_MEM : VT_HANDLE;
				out->mem_size = fld->ptr_size;
				out->maybe_null = fld->ptr_maybe_null;
				out->rdonly = true;
				if (out->maybe_null)
					out->id = v->next_id++;
				scalar_const(&out->s, 0);
				out->divergent = fld->divergent || p->divergent;
			} else {
				set_loaded_scalar(out, size, sext, (fld && fld->divergent) || p->divergent);
			}
		}
		return 0;
	}
	case VT_MAP_PTR:
	case VT_HANDLE:
	case VT_CODE:
	default:
		return v_reject(v, st, GPUEXT_RULE_SCALAR_DEREF,
				"this pointer is only for passing to helpers/kfuncs",
				"R%d invalid mem access '%s'", regno, type_str(p->type));
	}
	if (err)
		return err;
	if (!write && out)
		set_loaded_scalar(out, size, sext, p->divergent);
	return 0;
}

/* ---- ALU ---- */

static int ptr_alu(struct verifier *v, struct vstate *st, const struct bpf_insn *in, struct vreg *dst,
		   const struct vreg *src)
{
	uint8_t op = isa_op(in->code);
	bool is64 = isa_class(in->code) == BPF_ALU64;
	const struct vreg *ptr = is_ptr(dst) ? dst : src, *sc = is_ptr(dst) ? src : dst;
	struct vreg res;

	if (!is64)
		return v_reject(v, st, GPUEXT_RULE_PTR_ARITH, "do pointer arithmetic in 64 bits",
				"32-bit arithmetic on pointer R%d prohibited",
				is_ptr(dst) ? in->dst_reg : in->src_reg);
	if (is_ptr(dst) && is_ptr(src)) {
		if (op == BPF_SUB && dst->type == src->type &&
		    (dst->type == VT_STACK || dst->type == VT_MAP_VALUE || dst->type == VT_MEM) &&
		    dst->map == src->map && dst->frameno == src->frameno) {
			bool div = dst->divergent || src->divergent;

			set_scalar_unknown(dst);
			dst->divergent = div;
			return 0;
		}
		return v_reject(v, st, GPUEXT_RULE_PTR_ARITH, NULL,
				"R%d %s pointer prohibited: only pointer - pointer of the same region",
				in->dst_reg, op == BPF_ADD ? "+= " : "op=");
	}
	if (op != BPF_ADD && !(op == BPF_SUB && is_ptr(dst)))
		return v_reject(v, st, GPUEXT_RULE_PTR_ARITH,
				"pointers allow only + and - of a scalar",
				"R%d: operation 0x%02x on a pointer (%s) prohibited", in->dst_reg, op,
				type_str(ptr->type));
	if (ptr->maybe_null)
		return v_reject(v, st, GPUEXT_RULE_NULL_ARITH,
				"check the pointer against NULL before offsetting it",
				"R%d pointer arithmetic on %s_or_null prohibited, null-check it first",
				is_ptr(dst) ? in->dst_reg : in->src_reg, type_str(ptr->type));
	if (ptr->type == VT_MAP_PTR || ptr->type == VT_CODE || ptr->type == VT_HANDLE)
		return v_reject(v, st, GPUEXT_RULE_PTR_ARITH, NULL,
				"pointer arithmetic on %s prohibited", type_str(ptr->type));
	res = *ptr;
	/* the pointer's offset now depends on this scalar's exact value */
	if (!(isa_src_bit(in->code) == BPF_K && is_ptr(dst)))
		v_mark_precise(v, st, is_ptr(dst) ? in->src_reg : in->dst_reg);
	if (scalar_is_const(&sc->s)) {
		int64_t c = (int64_t)sc->s.var.value, off;

		if (op == BPF_SUB)
			c = -c;
		off = (int64_t)res.off + c;
		if (c < -PTR_OFF_LIMIT || c > PTR_OFF_LIMIT || off < -PTR_OFF_LIMIT ||
		    off > PTR_OFF_LIMIT)
			return v_reject(v, st, GPUEXT_RULE_PTR_ARITH, NULL,
					"pointer offset %lld out of the allowed range", (long long)off);
		res.off = (int32_t)off;
	} else {
		if (ptr->type == VT_CTX)
			return v_reject(v, st, GPUEXT_RULE_PTR_ARITH,
					"context offsets must be constants",
					"variable offset added to the context pointer");
		if (sc->s.smin < -PTR_OFF_LIMIT || sc->s.smax > PTR_OFF_LIMIT)
			return v_reject(v, st, GPUEXT_RULE_PTR_ARITH,
					"bound the index before adding it: if (i >= N) return 0;",
					"math between %s pointer and register with unbounded value "
					"(smin=%lld smax=%lld) is not allowed",
					type_str(ptr->type), (long long)sc->s.smin, (long long)sc->s.smax);
		scalar_alu(&res.s, &sc->s, op, true, false);
	}
	res.divergent = dst->divergent || src->divergent;
	*dst = res;
	return 0;
}

static int do_alu(struct verifier *v, struct vstate *st, const struct bpf_insn *in,
		  const struct isa_decoded *d)
{
	uint8_t op = isa_op(in->code);
	bool is64 = isa_class(in->code) == BPF_ALU64;
	struct vreg *dst = R(st, in->dst_reg), srcv;
	int err;

	if (d->use_imm) {
		set_scalar_const(&srcv, is64 ? (uint64_t)(int64_t)in->imm : (uint32_t)in->imm);
	} else {
		err = need_init(v, st, in->src_reg);
		if (err)
			return err;
		srcv = *R(st, in->src_reg);
	}
	if (op == BPF_MOV) {
		if (in->off) { /* movsx */
			if (is_ptr(&srcv)) {
				if (!v->type->allow_ptr_leaks)
					return v_reject(v, st, GPUEXT_RULE_PTR_ARITH, NULL,
							"sign extension of pointer R%d prohibited",
							in->src_reg);
				set_scalar_unknown(&srcv);
			}
			bool div = srcv.divergent;

			set_scalar_unknown(dst);
			scalar_movsx(&dst->s, &srcv.s, (unsigned)in->off, is64);
			dst->divergent = div;
			return 0;
		}
		if (is64) {
			if (!d->use_imm && srcv.type == VT_SCALAR) {
				/* link the copies: a bound learnt on one applies to both */
				struct vreg *sp = R(st, in->src_reg);

				if (!sp->id)
					sp->id = v->next_id++;
				srcv.id = sp->id;
			}
			*dst = srcv;
			return 0;
		}
		if (is_ptr(&srcv)) {
			if (!v->type->allow_ptr_leaks)
				return v_reject(v, st, GPUEXT_RULE_PTR_LEAK,
						"copy pointers with 64-bit moves",
						"R%d partial copy of pointer", in->src_reg);
			set_scalar_unknown(&srcv);
		}
		bool div = srcv.divergent;

		set_scalar_unknown(dst);
		dst->s = srcv.s;
		scalar_alu(&dst->s, &srcv.s, BPF_MOV, false, false);
		dst->divergent = div;
		return 0;
	}
	err = need_init(v, st, in->dst_reg);
	if (err)
		return err;
	if (op == BPF_NEG) {
		if (is_ptr(dst))
			return v_reject(v, st, GPUEXT_RULE_PTR_ARITH, NULL, "negation of pointer R%d",
					in->dst_reg);
		scalar_alu(&dst->s, &dst->s, BPF_NEG, is64, false);
		dst->id = 0;
		return 0;
	}
	if (is_ptr(dst) || is_ptr(&srcv))
		return ptr_alu(v, st, in, dst, &srcv);
	scalar_alu(&dst->s, &srcv.s, op, is64, in->off == 1);
	dst->divergent |= srcv.divergent;
	dst->id = 0;
	return 0;
}

static int do_bswap(struct verifier *v, struct vstate *st, const struct bpf_insn *in)
{
	struct vreg *dst = R(st, in->dst_reg);
	bool le = isa_class(in->code) == BPF_ALU && isa_src_bit(in->code) == BPF_TO_LE;
	int err = need_init(v, st, in->dst_reg);

	if (err)
		return err;
	if (is_ptr(dst))
		return v_reject(v, st, GPUEXT_RULE_PTR_ARITH, NULL, "byte swap of pointer R%d",
				in->dst_reg);
	dst->id = 0;
	if (scalar_is_const(&dst->s)) {
		uint64_t x = dst->s.var.value;

		if (le)
			x = in->imm == 16 ? (uint16_t)x : in->imm == 32 ? (uint32_t)x : x;
		else
			x = in->imm == 16 ? __builtin_bswap16((uint16_t)x)
			    : in->imm == 32 ? __builtin_bswap32((uint32_t)x) : __builtin_bswap64(x);
		bool div = dst->divergent;

		set_scalar_const(dst, x);
		dst->divergent = div;
		return 0;
	}
	if (le) {
		if (in->imm < 64)
			scalar_trunc(&dst->s, (unsigned)in->imm / 8);
		return 0;
	}
	scalar_unknown(&dst->s);
	if (in->imm < 64)
		scalar_trunc(&dst->s, (unsigned)in->imm / 8);
	return 0;
}

/* ---- loads and stores ---- */

static int do_ldx(struct verifier *v, struct vstate *st, const struct bpf_insn *in,
		  const struct isa_decoded *d)
{
	struct vreg out;
	int err = need_init(v, st, in->src_reg);

	if (err)
		return err;
	memset(&out, 0, sizeof(out));
	err = mem_access(v, st, in->src_reg, in->off, d->size, false, &out, NULL, false,
			 isa_mode(in->code) == BPF_MEMSX);
	if (err)
		return err;
	*R(st, in->dst_reg) = out;
	return 0;
}

static int do_store(struct verifier *v, struct vstate *st, const struct bpf_insn *in,
		    const struct isa_decoded *d)
{
	struct vreg imm, *val;
	int err = need_init(v, st, in->dst_reg);

	if (err)
		return err;
	if (d->kind == ISA_ST) {
		set_scalar_const(&imm, (uint64_t)(int64_t)in->imm);
		val = &imm;
	} else {
		err = need_init(v, st, in->src_reg);
		if (err)
			return err;
		val = R(st, in->src_reg);
	}
	return mem_access(v, st, in->dst_reg, in->off, d->size, true, NULL, val,
			  val->type == VT_SCALAR && scalar_is_const(&val->s) && !val->s.var.value,
			  false);
}

static int do_atomic(struct verifier *v, struct vstate *st, const struct bpf_insn *in,
		     const struct isa_decoded *d)
{
	struct vreg *p, *src, old;
	int err;

	if ((err = need_init(v, st, in->dst_reg)) || (err = need_init(v, st, in->src_reg)))
		return err;
	if (in->imm == BPF_CMPXCHG && (err = need_init(v, st, 0)))
		return err;
	p = R(st, in->dst_reg);
	src = R(st, in->src_reg);
	if (is_ptr(src) && !v->type->allow_ptr_leaks)
		return v_reject(v, st, GPUEXT_RULE_PTR_LEAK, NULL,
				"R%d leaks addr into memory (atomic operand)", in->src_reg);
	if (p->type == VT_CTX)
		return v_reject(v, st, GPUEXT_RULE_CTX_ACCESS, "atomics work on stack, map values and memory",
				"atomic operation on the context R%d", in->dst_reg);
	/* Stack, map values and records start 8-aligned: the offset decides alignment. */
	if (is_ptr(p) && (((int64_t)p->off + in->off + (int64_t)p->s.var.value) % (int64_t)d->size ||
			  (p->s.var.mask & (d->size - 1))))
		return v_reject(v, st, GPUEXT_RULE_MISALIGNED,
				"atomics need naturally aligned addresses (offset a multiple of the size)",
				"misaligned %u-byte atomic access: off=%d+%d var_off=(0x%llx; 0x%llx)",
				d->size, p->off, in->off, (unsigned long long)p->s.var.value,
				(unsigned long long)p->s.var.mask);
	/* an atomic reads and writes the location */
	memset(&old, 0, sizeof(old));
	err = mem_access(v, st, in->dst_reg, in->off, d->size, false, &old, NULL, false, false);
	if (err)
		return err;
	err = mem_access(v, st, in->dst_reg, in->off, d->size, true, NULL, NULL, false, false);
	if (err)
		return err;
	/* lanes updating one word each see a different old value */
	if (in->imm == BPF_CMPXCHG) {
		set_scalar_unknown(R(st, 0));
		scalar_trunc(&R(st, 0)->s, d->size);
		R(st, 0)->divergent = v->type->simt;
	} else if (in->imm & BPF_FETCH) {
		set_scalar_unknown(src);
		scalar_trunc(&src->s, d->size);
		src->divergent = v->type->simt;
	}
	return 0;
}

static int do_lddw(struct verifier *v, struct vstate *st, const struct bpf_insn *in)
{
	struct vreg *dst = R(st, in->dst_reg);
	struct gpuext_map *map = NULL;

	memset(dst, 0, sizeof(*dst));
	scalar_const(&dst->s, 0);
	switch (in->src_reg) {
	case 0:
		set_scalar_const(dst, (uint64_t)(uint32_t)in[0].imm | ((uint64_t)(uint32_t)in[1].imm << 32));
		return 0;
	case BPF_PSEUDO_MAP_FD:
	case BPF_PSEUDO_MAP_VALUE:
		map = gpuext_runtime__map_by_id(v->rt, (uint32_t)in->imm);
		break;
	case BPF_PSEUDO_MAP_IDX:
	case BPF_PSEUDO_MAP_IDX_VALUE:
		map = gpuext_prog__map(v->prog, (size_t)(uint32_t)in->imm);
		break;
	case BPF_PSEUDO_BTF_ID:
		for (size_t i = 0; i < v->rt->var_cnt; i++) {
			if (v->rt->vars[i].id == (uint32_t)in->imm) {
				dst->type = VT_MEM;
				dst->mem_size = (uint32_t)v->rt->vars[i].size;
				dst->rdonly = !v->rt->vars[i].writable;
				return 0;
			}
		}
		return v_reject(v, st, GPUEXT_RULE_INVALID_INSN, "register the variable with the runtime",
				"ld_imm64 of variable %d, which is not registered", in->imm);
	case BPF_PSEUDO_FUNC:
		dst->type = VT_CODE;
		dst->off = (int32_t)isa_func_addr_target(in, st->pc);
		return 0;
	}
	if (!map)
		return v_reject(v, st, GPUEXT_RULE_INVALID_INSN, NULL,
				"ld_imm64 refers to map %d, which does not exist", in->imm);
	dst->map = map;
	if (in->src_reg == BPF_PSEUDO_MAP_FD || in->src_reg == BPF_PSEUDO_MAP_IDX) {
		dst->type = VT_MAP_PTR;
		return 0;
	}
	if (gpuext_map__type(map) != BPF_MAP_TYPE_ARRAY || gpuext_map__max_entries(map) != 1 ||
	    (uint32_t)in[1].imm >= gpuext_map__value_size(map))
		return v_reject(v, st, GPUEXT_RULE_OOB_MAP_VALUE, NULL,
				"direct value access at offset %u of map '%s' (needs a 1-entry array, "
				"offset < value_size %u)",
				(uint32_t)in[1].imm, gpuext_map__name(map), gpuext_map__value_size(map));
	dst->type = VT_MAP_VALUE;
	dst->off = in[1].imm;
	return 0;
}

/* ---- calls ---- */

/*
 * Were any of the @size stack bytes @p points at (a checked argument) written
 * with a per-lane value or under divergence? A variable offset covers its
 * whole range.
 */
static bool stack_arg_divergent(struct verifier *v, struct vstate *st, struct vreg *p,
				uint64_t size)
{
	struct vframe *f;
	int64_t off, span;

	if (!size || stack_access(v, st, p, 0, (unsigned)size, &f, &off, &span))
		return true;	/* checked before; cannot happen, and "per lane" is the safe side */
	for (int64_t i = 0; i < span + (int64_t)size; i++) {
		int b;

		if (slot_at(f, off + i, &b)->spill.divergent)
			return true;
	}
	return false;
}

/* What a helper wrote to the stack at @p may differ between lanes: say so. */
static void stack_mark_divergent(struct verifier *v, struct vstate *st, struct vreg *p,
				 uint64_t size)
{
	struct vframe *f;
	int64_t off, span;

	if (!size || stack_access(v, st, p, 0, (unsigned)size, &f, &off, &span))
		return;	/* checked before the call */
	for (int64_t i = 0; i < span + (int64_t)size; i++) {
		int b;

		slot_at(f, off + i, &b)->spill.divergent = true;
	}
}

static int check_mem_arg(struct verifier *v, struct vstate *st, int regno, uint64_t size,
			 bool write_uninit, const char *what)
{
	struct vreg *p = R(st, regno);
	struct vframe *f;
	int64_t off, span;
	int err;

	if (p->type == VT_NOT_INIT)
		return need_init(v, st, regno);
	if (p->maybe_null)
		return v_reject(v, st, GPUEXT_RULE_NULL_DEREF, "null-check before passing it",
				"R%d type=%s_or_null expected=%s", regno, type_str(p->type), what);
	switch (p->type) {
	case VT_STACK:
		if (size == 0)
			return 0;
		err = stack_access(v, st, p, 0, (unsigned)size, &f, &off, &span);
		if (err)
			return err;
		if (span) {
			if (write_uninit) {
				stack_write_var(st, f, off, span + (int64_t)size);
				return 0;
			}
			return stack_read_var(v, st, f, off, span + (int64_t)size, (unsigned)size,
					      NULL, false);
		}
		if (write_uninit) {
			stack_write(st, f, off, (unsigned)size, NULL, false);
			return 0;
		}
		return stack_read(v, st, f, off, (unsigned)size, NULL, false);
	case VT_MAP_VALUE:
		if (write_uninit && rdonly_map(p->map))
			return v_reject(v, st, GPUEXT_RULE_READONLY, NULL,
					"helper would write into read-only map '%s'", gpuext_map__name(p->map));
		return check_bounds(v, st, p, 0, size, gpuext_map__value_size(p->map),
				    GPUEXT_RULE_OOB_MAP_VALUE, "map value");
	case VT_MEM:
		if (write_uninit && p->rdonly)
			return v_reject(v, st, GPUEXT_RULE_READONLY, NULL,
					"helper would write into read-only memory R%d", regno);
		return check_bounds(v, st, p, 0, size, p->mem_size, GPUEXT_RULE_OOB_MEM, "memory");
	default:
		return v_reject(v, st, GPUEXT_RULE_CALL_ARG,
				"pass a pointer to the stack, a map value or reserved memory",
				"R%d type=%s expected=%s", regno, type_str(p->type), what);
	}
}

static void release_ref(struct vstate *st, uint32_t ref)
{
	drop_ref(st, ref);
	for (int f = 0; f <= st->curframe; f++) {
		for (int r = 0; r < 11; r++)
			if (st->frames[f]->regs[r].ref_id == ref)
				set_scalar_unknown(&st->frames[f]->regs[r]);
		for (int s = 0; s < VSLOTS; s++)
			if (st->frames[f]->stack[s].bytes[0] == VB_SPILL &&
			    st->frames[f]->stack[s].spill.ref_id == ref)
				set_scalar_unknown(&st->frames[f]->stack[s].spill);
	}
}

static int call_helper(struct verifier *v, struct vstate *st, const struct bpf_insn *in)
{
	enum gpuext_func_kind kind = in->src_reg == BPF_PSEUDO_KFUNC_CALL ? GPUEXT_FUNC_KFUNC
									  : GPUEXT_FUNC_HELPER;
	const struct gpuext_func_proto *p = gpuext_runtime__find_func(v->rt, kind, (uint32_t)in->imm);
	struct gpuext_map *map = NULL;
	uint64_t alloc_size = 0;
	uint32_t release = 0;
	bool any_div = false, arg_div[5] = { false }, rmw_div = false;
	int err, rmw_reg = 0;
	uint64_t rmw_size = 0;

	if (!p)
		return v_reject(v, st, GPUEXT_RULE_BAD_CALL,
				"use a helper this runtime provides (gpuext version lists them)",
				"unknown %s #%d", kind == GPUEXT_FUNC_KFUNC ? "kfunc" : "helper", in->imm);
	if (v->type->allow && !v->type->allow(p))
		return v_reject(v, st, GPUEXT_RULE_BAD_CALL, NULL,
				"program type %s may not call %s#%d", v->type->name, p->name, in->imm);
	if (v->type->simt && st->ndiverge) {
		if (p->flags & GPUEXT_FN_WARP_COLLECTIVE)
			return v_reject(v, st, GPUEXT_RULE_DIVERGENT_COLLECTIVE,
					"call warp-collective helpers outside lane-dependent branches",
					"%s is warp-collective but called under divergent control flow",
					p->name);
		/*
		 * A record is finished under the control it was reserved under:
		 * one reserved by all lanes is not submitted by some and discarded
		 * by others; one a lane reserved inside its own branch (a leader
		 * writing for its warp) may be submitted there. bpf_ringbuf_output
		 * reserves and submits at once, so it is always allowed.
		 */
		if (p->id == BPF_FUNC_ringbuf_submit || p->id == BPF_FUNC_ringbuf_discard) {
			int depth = -1;

			for (int i = 0; i < st->nrefs; i++)
				if (st->refs[i] == R(st, 1)->ref_id)
					depth = st->refdiv[i];
			if (depth >= 0 && st->ndiverge > depth)
				return v_reject(v, st, GPUEXT_RULE_DIVERGENT_SUBMIT,
						"submit or discard a ring-buffer record under the control flow it was reserved under",
						"%s under divergent control flow the reserve was not under",
						p->name);
		}
	}
	for (int a = 0; a < 5 && p->args[a] != GPUEXT_ARG_NONE; a++) {
		int regno = a + 1;
		struct vreg *r = R(st, regno);

		if ((err = need_init(v, st, regno)))
			return err;
		any_div |= r->divergent;
		arg_div[a] = r->divergent;
		switch (p->args[a]) {
		case GPUEXT_ARG_ANYTHING:
			break;
		case GPUEXT_ARG_SCALAR:
			if (is_ptr(r))
				return v_reject(v, st, GPUEXT_RULE_CALL_ARG, NULL,
						"%s: R%d type=%s expected=scalar", p->name, regno,
						type_str(r->type));
			break;
		case GPUEXT_ARG_CONST_MAP_PTR:
			if (r->type != VT_MAP_PTR)
				return v_reject(v, st, GPUEXT_RULE_CALL_ARG,
						"pass a map: &my_map", "%s: R%d type=%s expected=map_ptr",
						p->name, regno, type_str(r->type));
			map = r->map;
			if ((p->id == BPF_FUNC_ringbuf_reserve || p->id == BPF_FUNC_ringbuf_output ||
			     p->id == BPF_FUNC_ringbuf_query) && kind == GPUEXT_FUNC_HELPER &&
			    gpuext_map__type(map) != BPF_MAP_TYPE_RINGBUF)
				return v_reject(v, st, GPUEXT_RULE_CALL_ARG, NULL,
						"%s needs a ring buffer, map '%s' is not one", p->name,
						gpuext_map__name(map));
			if ((p->id == BPF_FUNC_map_lookup_elem || p->id == BPF_FUNC_map_update_elem ||
			     p->id == BPF_FUNC_map_delete_elem) && kind == GPUEXT_FUNC_HELPER &&
			    gpuext_map__type(map) == BPF_MAP_TYPE_RINGBUF)
				return v_reject(v, st, GPUEXT_RULE_CALL_ARG, NULL,
						"%s cannot be used on ring buffer '%s'", p->name,
						gpuext_map__name(map));
			break;
		case GPUEXT_ARG_PTR_TO_MAP_KEY:
		case GPUEXT_ARG_PTR_TO_MAP_VALUE:
			if (!map)
				return v_reject(v, st, GPUEXT_RULE_CALL_ARG, NULL,
						"%s: no map argument before R%d", p->name, regno);
			err = check_mem_arg(v, st, regno,
					    p->args[a] == GPUEXT_ARG_PTR_TO_MAP_KEY
						    ? gpuext_map__key_size(map)
						    : gpuext_map__value_size(map),
					    false, "map key/value memory");
			if (err)
				return err;
			/* a key or value on the stack written with per-lane bytes is per lane */
			if (v->type->simt && r->type == VT_STACK)
				any_div |= stack_arg_divergent(v, st, r,
							       p->args[a] == GPUEXT_ARG_PTR_TO_MAP_KEY
								       ? gpuext_map__key_size(map)
								       : gpuext_map__value_size(map));
			break;
		case GPUEXT_ARG_PTR_TO_MEM:
		case GPUEXT_ARG_PTR_TO_UNINIT_MEM: {
			struct vreg *sz = a < 4 ? R(st, regno + 1) : NULL;

			if (!sz || sz->type != VT_SCALAR)
				return v_reject(v, st, GPUEXT_RULE_CALL_ARG, NULL,
						"%s: R%d must be the size of R%d", p->name, regno + 1, regno);
			v_mark_precise(v, st, regno + 1);
			if (sz->s.umax > (1u << 29))
				return v_reject(v, st, GPUEXT_RULE_CALL_ARG,
						"bound the size before the call",
						"%s: R%d unbounded memory access size (umax=%llu)", p->name,
						regno + 1, (unsigned long long)sz->s.umax);
			/*
			 * A read-modify-write (gpuext_atomic_max) reads the old bytes:
			 * they must be initialised, and what it leaves is per lane when
			 * they were, or any argument is, or the call is under a lane
			 * branch (marked below, once every argument has been seen).
			 */
			if ((p->flags & GPUEXT_FN_MEM_RMW) && p->args[a] == GPUEXT_ARG_PTR_TO_UNINIT_MEM) {
				err = check_mem_arg(v, st, regno, sz->s.umax, false, "initialised memory");
				if (err)
					return err;
				rmw_reg = regno;
				rmw_size = sz->s.umax;
				if (v->type->simt && r->type == VT_STACK)
					rmw_div = stack_arg_divergent(v, st, r, rmw_size);
			}
			err = check_mem_arg(v, st, regno, sz->s.umax,
					    p->args[a] == GPUEXT_ARG_PTR_TO_UNINIT_MEM, "memory");
			if (err)
				return err;
			break;
		}
		case GPUEXT_ARG_CONST_SIZE:
		case GPUEXT_ARG_CONST_SIZE_OR_ZERO:
			if (is_ptr(r))
				return v_reject(v, st, GPUEXT_RULE_CALL_ARG, NULL,
						"%s: R%d size must be a scalar", p->name, regno);
			v_mark_precise(v, st, regno);
			if (p->args[a] == GPUEXT_ARG_CONST_SIZE && r->s.umin == 0)
				return v_reject(v, st, GPUEXT_RULE_CALL_ARG,
						"make sure the size is > 0",
						"%s: R%d invalid zero-sized read", p->name, regno);
			break;
		case GPUEXT_ARG_CONST_ALLOC_SIZE:
			if (r->type != VT_SCALAR || !scalar_is_const(&r->s))
				return v_reject(v, st, GPUEXT_RULE_CALL_ARG,
						"reserve a compile-time constant size (sizeof(struct ...))",
						"%s: R%d is not a known constant", p->name, regno);
			v_mark_precise(v, st, regno);
			alloc_size = r->s.var.value;
			if (alloc_size == 0 || alloc_size > (1u << 28))
				return v_reject(v, st, GPUEXT_RULE_CALL_ARG, NULL,
						"%s: reservation size %llu out of range", p->name,
						(unsigned long long)alloc_size);
			break;
		case GPUEXT_ARG_PTR_TO_CTX:
			if (r->type != VT_CTX || r->off || !scalar_is_const(&r->s) || r->s.var.value)
				return v_reject(v, st, GPUEXT_RULE_CALL_ARG, "pass the program's ctx as is",
						"%s: R%d type=%s expected=ctx", p->name, regno,
						type_str(r->type));
			break;
		case GPUEXT_ARG_PTR_TO_RINGBUF_MEM:
			if (r->type != VT_MEM || r->maybe_null || !r->ref_id || r->off ||
			    !scalar_is_const(&r->s) || r->s.var.value) {
				bool is_ref = r->type == VT_MEM && r->ref_id;
				bool held = false;

				for (int i = 0; i < st->nrefs; i++)
					held |= st->refs[i] == r->ref_id;
				return v_reject(v, st,
						is_ref && !r->maybe_null && held ? GPUEXT_RULE_CALL_ARG
						: r->maybe_null ? GPUEXT_RULE_NULL_DEREF
								: GPUEXT_RULE_REF_INVALID,
						"pass exactly the pointer bpf_ringbuf_reserve() returned, "
						"after a NULL check",
						"%s: R%d type=%s%s expected=ringbuf_mem (reserved, unmodified)",
						p->name, regno, type_str(r->type),
						r->maybe_null ? "_or_null" : "");
			}
			release = r->ref_id;
			break;
		case GPUEXT_ARG_PTR_TO_BTF_ID:
			if ((r->type != VT_HANDLE && r->type != VT_MEM && r->type != VT_CTX) ||
			    r->maybe_null)
				return v_reject(v, st, GPUEXT_RULE_CALL_ARG, NULL,
						"%s: R%d type=%s expected=driver object", p->name, regno,
						type_str(r->type));
			break;
		default:
			break;
		}
	}
	/*
	 * The largest record this program can put in the ring: a runtime that
	 * shards the ring sizes the shards so it fits (hal/nvidia/nv_maps.c).
	 * Noted while exploring, so a path pruned later has counted already.
	 */
	if (map && kind == GPUEXT_FUNC_HELPER && p->id == BPF_FUNC_ringbuf_reserve)
		gpuext_map_note_record(map, alloc_size);
	else if (map && kind == GPUEXT_FUNC_HELPER && p->id == BPF_FUNC_ringbuf_output)
		gpuext_map_note_record(map, R(st, 3)->s.umax);
	if (release) {
		bool held = false;

		for (int i = 0; i < st->nrefs; i++)
			held |= st->refs[i] == release;
		if (!held)
			return v_reject(v, st, GPUEXT_RULE_REF_INVALID, NULL,
					"%s: reference %u was already released", p->name, release);
		release_ref(st, release);
	}
	if (rmw_reg && v->type->simt && R(st, rmw_reg)->type == VT_STACK &&
	    (rmw_div || any_div || st->ndiverge))
		stack_mark_divergent(v, st, R(st, rmw_reg), rmw_size);
	for (int r = 1; r <= 5; r++)
		set_not_init(R(st, r));
	struct vreg *r0 = R(st, 0);

	switch (p->ret) {
	case GPUEXT_RET_VOID:
		set_not_init(r0);
		break;
	case GPUEXT_RET_INTEGER:
		set_scalar_unknown(r0);
		r0->divergent = any_div || (p->flags & GPUEXT_FN_DIVERGENT_RET);
		/* per lane whatever the arguments: a ring output can fail on some lanes only */
		if (v->type->simt && kind == GPUEXT_FUNC_HELPER && p->id == BPF_FUNC_ringbuf_output)
			r0->divergent = true;
		/* a vote gives every lane the same answer; a shuffle too, from one source lane */
		if (p->flags & GPUEXT_FN_UNIFORM_RET)
			r0->divergent = false;
		if (kind == GPUEXT_FUNC_HELPER && p->id == GPUEXT_FUNC_warp_shfl)
			r0->divergent = arg_div[1];
		break;
	case GPUEXT_RET_MAP_VALUE_OR_NULL:
		memset(r0, 0, sizeof(*r0));
		r0->type = VT_MAP_VALUE;
		r0->map = map;
		r0->maybe_null = true;
		r0->id = v->next_id++;
		r0->divergent = any_div;
		scalar_const(&r0->s, 0);
		break;
	case GPUEXT_RET_HANDLE_OR_NULL:
		memset(r0, 0, sizeof(*r0));
		r0->type = VT_HANDLE;
		r0->maybe_null = true;
		r0->id = v->next_id++;
		r0->divergent = any_div;
		scalar_const(&r0->s, 0);
		break;
	case GPUEXT_RET_RINGBUF_MEM_OR_NULL:
		if (st->nrefs >= VMAX_REFS)
			return v_reject(v, st, GPUEXT_RULE_REF_LEAK, NULL,
					"more than %d ring-buffer records held at once", VMAX_REFS);
		memset(r0, 0, sizeof(*r0));
		r0->type = VT_MEM;
		r0->mem_size = (uint32_t)alloc_size;
		r0->maybe_null = true;
		r0->id = v->next_id++;
		r0->ref_id = v->next_id++;
		/* per thread, a nearly full shard gives some lanes a record and others NULL */
		r0->divergent = any_div || v->type->simt;
		scalar_const(&r0->s, 0);
		st->refdiv[st->nrefs] = (uint8_t)st->ndiverge;
		st->refs[st->nrefs++] = r0->ref_id;
		break;
	}
	/* a result computed under divergent control flow differs between lanes after the join */
	if (p->ret != GPUEXT_RET_VOID && st->ndiverge && v->type->simt)
		r0->divergent = true;
	st->pc++;
	return 0;
}

static int call_local(struct verifier *v, struct vstate *st, uint32_t target)
{
	struct vframe *callee, *caller = v_cur(st);

	if (st->curframe + 1 >= GPUEXT_MAX_CALL_FRAMES)
		return v_reject(v, st, GPUEXT_RULE_CALL_DEPTH,
				"flatten the call chain (inline helpers with __always_inline)",
				"the call stack of %d frames is too deep", st->curframe + 2);
	bool is_func = false;

	for (size_t i = 0; i < v->prog->func_cnt; i++)
		is_func |= v->prog->funcs[i].start == target;
	if (target >= v->cnt || !is_func)
		return v_reject(v, st, GPUEXT_RULE_CALL_ARG, NULL,
				"call target %u is not the start of a function", target);
	callee = calloc(1, sizeof(*callee));
	if (!callee)
		return -ENOMEM;
	for (int r = 1; r <= 5; r++)
		callee->regs[r] = caller->regs[r];
	callee->regs[10].type = VT_STACK;
	callee->regs[10].frameno = (uint32_t)st->curframe + 1;
	scalar_const(&callee->regs[10].s, 0);
	callee->callsite = st->pc;
	st->frames[++st->curframe] = callee;
	st->pc = target;
	return 0;
}

static int do_exit(struct verifier *v, struct vstate *st)
{
	struct vreg *r0 = R(st, 0);
	int err = need_init(v, st, 0);

	if (err)
		return err;
	if (st->curframe > 0) {
		struct vframe *callee = v_cur(st), *caller;

		if (r0->type == VT_STACK && r0->frameno == (uint32_t)st->curframe)
			return v_reject(v, st, GPUEXT_RULE_PTR_LEAK, NULL,
					"cannot return a stack pointer to the caller");
		caller = st->frames[st->curframe - 1];
		caller->regs[0] = *r0;
		for (int r = 1; r <= 5; r++)
			set_not_init(&caller->regs[r]);
		st->pc = callee->callsite + 1;
		free(callee);
		st->frames[st->curframe--] = NULL;
		return 0;
	}
	if (st->nrefs)
		return v_reject(v, st, GPUEXT_RULE_REF_LEAK,
				"submit or discard every reserved record on every path",
				"unreleased reference id=%u: a ring-buffer record reserved on this path is "
				"never submitted or discarded",
				st->refs[0]);
	if (is_ptr(r0) && !v->type->allow_ptr_leaks)
		return v_reject(v, st, GPUEXT_RULE_PTR_LEAK, "return a scalar",
				"R0 leaks addr as return value");
	if (r0->type == VT_SCALAR && (v->type->ret_min > INT64_MIN || v->type->ret_max < INT64_MAX))
		v_mark_precise(v, st, 0);
	if (r0->type == VT_SCALAR &&
	    (r0->s.smin < v->type->ret_min || r0->s.smax > v->type->ret_max)) {
		char buf[160];

		scalar_format(&r0->s, buf, sizeof(buf));
		return v_reject(v, st, GPUEXT_RULE_RET_RANGE,
				"return a value the hook understands",
				"at program exit R0 has %s, should be in [%lld, %lld] for %s programs", buf,
				(long long)v->type->ret_min, (long long)v->type->ret_max,
				v->type->name);
	}
	return V_EXIT_PATH;
}

int v_step(struct verifier *v, struct vstate *st)
{
	const struct bpf_insn *in = &v->insns[st->pc];
	const struct isa_decoded *d = &v->dec[st->pc];
	int err = 0;
	uint32_t pc = st->pc;

	while (st->ndiverge && st->diverge[st->ndiverge - 1] == pc)
		st->ndiverge--; /* reconverged */
	/* a record held past its branch's join belongs to the level the join is at */
	for (int i = 0; i < st->nrefs; i++)
		if (st->refdiv[i] > st->ndiverge)
			st->refdiv[i] = (uint8_t)st->ndiverge;

	switch (d->kind) {
	case ISA_ALU:
		err = do_alu(v, st, in, d);
		break;
	case ISA_BSWAP:
		err = do_bswap(v, st, in);
		break;
	case ISA_LDDW:
		err = do_lddw(v, st, in);
		if (!err && st->ndiverge && v->type->simt)
			R(st, in->dst_reg)->divergent = true;	/* as below: differs after the join */
		if (!err)
			st->pc += 2;
		return err;
	case ISA_LDX:
		err = do_ldx(v, st, in, d);
		break;
	case ISA_ST:
	case ISA_STX:
		err = do_store(v, st, in, d);
		break;
	case ISA_ATOMIC:
		err = do_atomic(v, st, in, d);
		break;
	case ISA_JA:
		st->pc = (uint32_t)isa_jump_target(in, pc);
		return 0;
	case ISA_JCOND:
		return v_jcond(v, st, in, d);
	case ISA_CALL:
		if (in->src_reg == BPF_PSEUDO_CALL)
			return call_local(v, st, (uint32_t)isa_jump_target(in, pc));
		return call_helper(v, st, in);
	case ISA_CALLX: {
		struct vreg *t = R(st, in->dst_reg);

		if ((err = need_init(v, st, in->dst_reg)))
			return err;
		if (t->type != VT_CODE)
			return v_reject(v, st, GPUEXT_RULE_CALL_ARG,
					"callx needs a code address loaded with ld_imm64 src=4",
					"callx R%d type=%s expected=func", in->dst_reg, type_str(t->type));
		return call_local(v, st, (uint32_t)t->off);
	}
	case ISA_EXIT:
		return do_exit(v, st);
	}
	if (err)
		return err;
	/* values computed under divergent control flow differ between lanes */
	if (st->ndiverge && v->type->simt &&
	    (d->kind == ISA_ALU || d->kind == ISA_LDX || d->kind == ISA_BSWAP))
		R(st, in->dst_reg)->divergent = true;
	st->pc++;
	return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verifier's scalar domain: known bits (tnum) plus signed and unsigned
 * 64- and 32-bit ranges, kept consistent with each other. Every operation
 * must be sound: the abstract result covers every concrete result.
 */
#include <stdio.h>

#include "verifier_impl.h"

#define U32_MAX 0xffffffffULL

/* ---- known bits ---- */

struct tnum tnum_const(uint64_t v) { return (struct tnum){ v, 0 }; }
struct tnum tnum_unknown(void) { return (struct tnum){ 0, ~0ULL }; }
bool tnum_is_const(struct tnum a) { return a.mask == 0; }

struct tnum tnum_range(uint64_t min, uint64_t max)
{
	uint64_t diff = min ^ max, span;

	if (diff == 0)
		return tnum_const(min);
	span = 64 - (unsigned)__builtin_clzll(diff); /* bits that can differ */
	if (span >= 64)
		return tnum_unknown();
	span = (1ULL << span) - 1;
	return (struct tnum){ min & ~span, span };
}

struct tnum tnum_add(struct tnum a, struct tnum b)
{
	uint64_t sum_known = a.value + b.value;
	uint64_t sum_max = sum_known + a.mask + b.mask;
	/* bits where the carry chains of the extremes disagree are unknown */
	uint64_t unknown = (sum_known ^ sum_max) | a.mask | b.mask;

	return (struct tnum){ sum_known & ~unknown, unknown };
}

struct tnum tnum_sub(struct tnum a, struct tnum b)
{
	uint64_t diff = a.value - b.value;
	uint64_t hi = diff + a.mask, lo = diff - b.mask;
	uint64_t unknown = (hi ^ lo) | a.mask | b.mask;

	return (struct tnum){ diff & ~unknown, unknown };
}

struct tnum tnum_and(struct tnum a, struct tnum b)
{
	uint64_t may_a = a.value | a.mask, may_b = b.value | b.mask;
	uint64_t v = a.value & b.value;

	return (struct tnum){ v, may_a & may_b & ~v };
}

struct tnum tnum_or(struct tnum a, struct tnum b)
{
	uint64_t v = a.value | b.value;

	return (struct tnum){ v, (a.mask | b.mask) & ~v };
}

struct tnum tnum_xor(struct tnum a, struct tnum b)
{
	uint64_t m = a.mask | b.mask;

	return (struct tnum){ (a.value ^ b.value) & ~m, m };
}

struct tnum tnum_lshift(struct tnum a, unsigned k)
{
	return (struct tnum){ a.value << k, a.mask << k };
}

struct tnum tnum_rshift(struct tnum a, unsigned k)
{
	return (struct tnum){ a.value >> k, a.mask >> k };
}

struct tnum tnum_arshift(struct tnum a, unsigned k, unsigned width)
{
	if (width == 32)
		return (struct tnum){ (uint32_t)((int32_t)(uint32_t)a.value >> k),
				      (uint32_t)((int32_t)(uint32_t)a.mask >> k) };
	return (struct tnum){ (uint64_t)((int64_t)a.value >> k), (uint64_t)((int64_t)a.mask >> k) };
}

struct tnum tnum_intersect(struct tnum a, struct tnum b)
{
	uint64_t v = a.value | b.value, m = a.mask & b.mask;

	return (struct tnum){ v & ~m, m };
}

struct tnum tnum_cast(struct tnum a, unsigned bytes)
{
	uint64_t keep = bytes >= 8 ? ~0ULL : (1ULL << (bytes * 8)) - 1;

	return (struct tnum){ a.value & keep, a.mask & keep };
}

bool tnum_in(struct tnum a, struct tnum b)
{
	if (b.mask & ~a.mask)
		return false;
	return (b.value & ~a.mask) == a.value;
}

/* ---- scalars ---- */

void scalar_const(struct scalar *s, uint64_t v)
{
	s->var = tnum_const(v);
	s->umin = s->umax = v;
	s->smin = s->smax = (int64_t)v;
	s->u32min = s->u32max = (uint32_t)v;
	s->s32min = s->s32max = (int32_t)v;
}

void scalar_unknown(struct scalar *s)
{
	s->var = tnum_unknown();
	s->umin = 0;
	s->umax = UINT64_MAX;
	s->smin = INT64_MIN;
	s->smax = INT64_MAX;
	s->u32min = 0;
	s->u32max = UINT32_MAX;
	s->s32min = INT32_MIN;
	s->s32max = INT32_MAX;
}

bool scalar_is_const(const struct scalar *s)
{
	return tnum_is_const(s->var);
}

#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define MIN(a, b) ((a) < (b) ? (a) : (b))

static void sync_once(struct scalar *s)
{
	struct tnum t = s->var, t32 = tnum_cast(t, 4);
	const uint64_t sign = 1ULL << 63;

	/* known bits -> 64-bit ranges */
	s->umin = MAX(s->umin, t.value);
	s->umax = MIN(s->umax, t.value | t.mask);
	if (!(t.mask & sign)) {
		s->smin = MAX(s->smin, (int64_t)t.value);
		s->smax = MIN(s->smax, (int64_t)(t.value | t.mask));
	} else {
		s->smin = MAX(s->smin, (int64_t)(t.value | sign));
		s->smax = MIN(s->smax, (int64_t)((t.value | t.mask) & ~sign));
	}
	/* signed <-> unsigned when the range does not cross the sign boundary */
	if (s->smin >= 0 || s->smax < 0) {
		s->umin = MAX(s->umin, (uint64_t)s->smin);
		s->umax = MIN(s->umax, (uint64_t)s->smax);
	}
	if ((int64_t)s->umin >= 0 ? (int64_t)s->umax >= 0 : true) {
		if (s->umax <= (uint64_t)INT64_MAX || s->umin > (uint64_t)INT64_MAX) {
			s->smin = MAX(s->smin, (int64_t)s->umin);
			s->smax = MIN(s->smax, (int64_t)s->umax);
		}
	}
	/* 32-bit views */
	s->u32min = (uint32_t)MAX(s->u32min, (uint32_t)t32.value);
	s->u32max = (uint32_t)MIN(s->u32max, (uint32_t)(t32.value | t32.mask));
	if ((s->umin >> 32) == (s->umax >> 32)) {
		s->u32min = (uint32_t)MAX(s->u32min, (uint32_t)s->umin);
		s->u32max = (uint32_t)MIN(s->u32max, (uint32_t)s->umax);
	}
	if (!(t32.mask & 0x80000000u)) {
		s->s32min = MAX(s->s32min, (int32_t)(uint32_t)t32.value);
		s->s32max = MIN(s->s32max, (int32_t)(uint32_t)(t32.value | t32.mask));
	}
	if (s->smin >= INT32_MIN && s->smax <= INT32_MAX) {
		s->s32min = (int32_t)MAX((int64_t)s->s32min, s->smin);
		s->s32max = (int32_t)MIN((int64_t)s->s32max, s->smax);
	}
	if (s->s32min >= 0 || s->s32max < 0) {
		s->u32min = MAX(s->u32min, (uint32_t)s->s32min);
		s->u32max = MIN(s->u32max, (uint32_t)s->s32max);
	}
	if (s->u32max <= INT32_MAX || s->u32min > INT32_MAX) {
		s->s32min = MAX(s->s32min, (int32_t)s->u32min);
		s->s32max = MIN(s->s32max, (int32_t)s->u32max);
	}
	/* upper half known zero: the 64-bit value is the 32-bit one */
	if ((t.value | t.mask) >> 32 == 0) {
		s->umin = MAX(s->umin, s->u32min);
		s->umax = MIN(s->umax, s->u32max);
		s->smin = MAX(s->smin, (int64_t)s->u32min);
		s->smax = MIN(s->smax, (int64_t)s->u32max);
	}
	/* ranges -> known bits */
	s->var = tnum_intersect(s->var, tnum_range(s->umin, s->umax));
	{
		struct tnum lo = tnum_range(s->u32min, s->u32max);

		s->var = tnum_intersect(s->var, (struct tnum){ (s->var.value & ~U32_MAX) | lo.value,
							      (s->var.mask & ~U32_MAX) | lo.mask });
	}
}

void scalar_sync(struct scalar *s)
{
	for (int i = 0; i < 3; i++)
		sync_once(s);
}

/* Is the abstract value empty (contradictory)? */
static bool scalar_empty(const struct scalar *s)
{
	return s->umin > s->umax || s->smin > s->smax || s->u32min > s->u32max ||
	       s->s32min > s->s32max || (s->var.value & s->var.mask);
}

/* Result of a 32-bit operation: only the low half is described by @r's 32-bit view. */
static void from_u32_range(struct scalar *s, uint64_t lo, uint64_t hi, struct tnum t)
{
	scalar_unknown(s);
	s->var = tnum_cast(t, 4);
	s->umin = lo;
	s->umax = hi;
	s->smin = (int64_t)lo;
	s->smax = (int64_t)hi;
	s->u32min = (uint32_t)lo;
	s->u32max = (uint32_t)hi;
	scalar_sync(s);
}

void scalar_alu(struct scalar *dst, const struct scalar *src, uint8_t op, bool is64, bool sdivmod)
{
	struct scalar a = *dst, b = *src, r;

	if (!is64) {
		/* work on the zero-extended low halves */
		from_u32_range(&a, a.u32min, a.u32max, a.var);
		from_u32_range(&b, b.u32min, b.u32max, b.var);
	}
	unsigned width = is64 ? 64 : 32;
	uint64_t wmask = is64 ? ~0ULL : U32_MAX;

	/* Constants fold exactly (same rules as the interpreter). */
	if (scalar_is_const(&a) && scalar_is_const(&b) && op != BPF_END) {
		uint64_t x = a.var.value, y = b.var.value, z = 0;
		unsigned sh = (unsigned)(y & (width - 1));

		switch (op) {
		case BPF_ADD: z = x + y; break;
		case BPF_SUB: z = x - y; break;
		case BPF_MUL: z = x * y; break;
		case BPF_OR: z = x | y; break;
		case BPF_AND: z = x & y; break;
		case BPF_XOR: z = x ^ y; break;
		case BPF_LSH: z = x << sh; break;
		case BPF_RSH: z = (x & wmask) >> sh; break;
		case BPF_ARSH:
			z = is64 ? (uint64_t)((int64_t)x >> sh) : (uint32_t)((int32_t)(uint32_t)x >> sh);
			break;
		case BPF_NEG: z = -x; break;
		case BPF_MOV: z = y; break;
		case BPF_DIV:
			if (!y)
				z = 0;
			else if (!sdivmod)
				z = (x & wmask) / (y & wmask);
			else if (is64)
				z = ((int64_t)x == INT64_MIN && (int64_t)y == -1) ? x
						: (uint64_t)((int64_t)x / (int64_t)y);
			else
				z = ((int32_t)x == INT32_MIN && (int32_t)y == -1) ? x
					: (uint32_t)((int32_t)x / (int32_t)y);
			break;
		case BPF_MOD:
			if (!y)
				z = x;
			else if (!sdivmod)
				z = (x & wmask) % (y & wmask);
			else if (is64)
				z = (int64_t)y == -1 ? 0 : (uint64_t)((int64_t)x % (int64_t)y);
			else
				z = (int32_t)y == -1 ? 0 : (uint32_t)((int32_t)x % (int32_t)y);
			break;
		}
		scalar_const(dst, z & wmask);
		return;
	}

	scalar_unknown(&r);
	switch (op) {
	case BPF_MOV:
		r = b;
		break;
	case BPF_ADD:
		r.var = tnum_add(a.var, b.var);
		if (a.umax <= UINT64_MAX - b.umax) {
			r.umin = a.umin + b.umin;
			r.umax = a.umax + b.umax;
		}
		if (!__builtin_add_overflow(a.smin, b.smin, &r.smin) &&
		    !__builtin_add_overflow(a.smax, b.smax, &r.smax)) {
		} else {
			r.smin = INT64_MIN;
			r.smax = INT64_MAX;
		}
		break;
	case BPF_SUB:
		r.var = tnum_sub(a.var, b.var);
		if (a.umin >= b.umax) {
			r.umin = a.umin - b.umax;
			r.umax = a.umax - b.umin;
		}
		if (__builtin_sub_overflow(a.smin, b.smax, &r.smin) ||
		    __builtin_sub_overflow(a.smax, b.smin, &r.smax)) {
			r.smin = INT64_MIN;
			r.smax = INT64_MAX;
		}
		break;
	case BPF_MUL:
		if (a.umax <= U32_MAX && b.umax <= U32_MAX) {
			r.umin = a.umin * b.umin;
			r.umax = a.umax * b.umax;
			r.var = tnum_range(r.umin, r.umax);
		}
		break;
	case BPF_AND:
		r.var = tnum_and(a.var, b.var);
		r.umax = MIN(a.umax, b.umax);
		break;
	case BPF_OR:
		r.var = tnum_or(a.var, b.var);
		r.umin = MAX(a.umin, b.umin);
		break;
	case BPF_XOR:
		r.var = tnum_xor(a.var, b.var);
		break;
	case BPF_LSH:
	case BPF_RSH:
	case BPF_ARSH:
		if (scalar_is_const(&b)) {
			unsigned sh = (unsigned)(b.var.value & (width - 1));

			if (op == BPF_LSH) {
				r.var = tnum_lshift(a.var, sh);
				if (sh < 64 && a.umax <= (wmask >> sh)) {
					r.umin = a.umin << sh;
					r.umax = a.umax << sh;
				}
			} else if (op == BPF_RSH) {
				r.var = tnum_rshift(tnum_cast(a.var, width / 8), sh);
				/* unsigned shift is monotonic */
				r.umin = a.umin >> sh;
				r.umax = a.umax >> sh;
			} else {
				r.var = tnum_arshift(a.var, sh, width);
				if (is64) {
					r.smin = a.smin >> sh;
					r.smax = a.smax >> sh;
				}
			}
		} else if (op == BPF_RSH) {
			r.umax = a.umax;
			if (!is64)
				r.umax = MIN(r.umax, U32_MAX);
			r.var = tnum_range(0, r.umax);
		}
		break;
	case BPF_DIV:
		if (!sdivmod) {
			r.umin = 0;
			r.umax = a.umax;
			if (scalar_is_const(&b) && b.var.value) {
				r.umin = a.umin / b.var.value;
				r.umax = a.umax / b.var.value;
			}
			r.var = tnum_range(r.umin, r.umax);
		}
		break;
	case BPF_MOD:
		if (!sdivmod) {
			r.umin = 0;
			r.umax = a.umax; /* mod by 0 keeps dst */
			if (b.umin > 0)
				r.umax = MIN(a.umax, b.umax - 1);
			r.var = tnum_range(r.umin, r.umax);
		}
		break;
	case BPF_NEG:
	default:
		break;
	}
	if (!is64) {
		/* A 32-bit result: only the low half survives, zero-extended. */
		struct tnum t = tnum_cast(r.var, 4);
		uint64_t lo = 0, hi = U32_MAX;

		/* computed on the zero-extended halves: when no result leaves 32 bits,
		 * the 64-bit range is exactly the 32-bit one (a wrap leaves it full) */
		if (r.umax <= U32_MAX) {
			lo = r.umin;
			hi = r.umax;
		}
		from_u32_range(dst, lo, hi, t);
		return;
	}
	*dst = r;
	scalar_sync(dst);
}

void scalar_trunc(struct scalar *s, unsigned bytes)
{
	uint64_t max;

	if (bytes >= 8)
		return;
	max = (1ULL << (bytes * 8)) - 1;
	if (s->umax <= max && (s->umin >> (bytes * 8)) == 0) {
		s->var = tnum_cast(s->var, bytes);
		scalar_sync(s);
		return;
	}
	struct tnum t = tnum_cast(s->var, bytes);

	scalar_unknown(s);
	s->var = t;
	s->umax = max;
	scalar_sync(s);
}

void scalar_sext(struct scalar *s, unsigned bytes)
{
	int64_t lo = -(1LL << (bytes * 8 - 1)), hi = (1LL << (bytes * 8 - 1)) - 1;

	if (bytes >= 8)
		return;
	if (scalar_is_const(s)) {
		uint64_t v = s->var.value, m = 1ULL << (bytes * 8 - 1);

		v &= (1ULL << (bytes * 8)) - 1;
		scalar_const(s, (v ^ m) - m);
		return;
	}
	if (s->smin >= lo && s->smax <= hi)
		return; /* already in range: sign extension changes nothing */
	scalar_unknown(s);
	s->smin = lo;
	s->smax = hi;
	scalar_sync(s);
}

void scalar_movsx(struct scalar *dst, const struct scalar *src, unsigned bits, bool is64)
{
	*dst = *src;
	scalar_trunc(dst, bits / 8);
	scalar_sext(dst, bits / 8);
	if (!is64) {
		struct scalar t = *dst;

		from_u32_range(dst, 0, U32_MAX, tnum_cast(t.var, 4));
		if (t.smin >= 0) {
			from_u32_range(dst, (uint64_t)t.smin, (uint64_t)t.smax, tnum_cast(t.var, 4));
		}
	}
}

bool scalar_covers(const struct scalar *old, const struct scalar *cur)
{
	return old->umin <= cur->umin && old->umax >= cur->umax && old->smin <= cur->smin &&
	       old->smax >= cur->smax && old->u32min <= cur->u32min && old->u32max >= cur->u32max &&
	       old->s32min <= cur->s32min && old->s32max >= cur->s32max &&
	       tnum_in(old->var, cur->var);
}

/* Refinement of the 64-bit or 32-bit view by one comparison that holds. */
static int64_t inc64(int64_t x) { return x == INT64_MAX ? x : x + 1; }
static int64_t dec64(int64_t x) { return x == INT64_MIN ? x : x - 1; }
static int32_t inc32(int32_t x) { return x == INT32_MAX ? x : x + 1; }
static int32_t dec32(int32_t x) { return x == INT32_MIN ? x : x - 1; }
static uint64_t incu64(uint64_t x) { return x == UINT64_MAX ? x : x + 1; }
static uint64_t decu64(uint64_t x) { return x ? x - 1 : 0; }
static uint32_t incu32(uint32_t x) { return x == UINT32_MAX ? x : x + 1; }
static uint32_t decu32(uint32_t x) { return x ? x - 1 : 0; }

static void refine_holds(struct scalar *d, struct scalar *s, uint8_t op, bool is64)
{
	if (is64) {
		switch (op) {
		case BPF_JEQ:
			d->umin = s->umin = MAX(d->umin, s->umin);
			d->umax = s->umax = MIN(d->umax, s->umax);
			d->smin = s->smin = MAX(d->smin, s->smin);
			d->smax = s->smax = MIN(d->smax, s->smax);
			d->var = s->var = tnum_intersect(d->var, s->var);
			break;
		case BPF_JNE:
			if (scalar_is_const(s)) {
				if (d->umin == s->umin)
					d->umin = incu64(d->umin);
				else if (d->umax == s->umin)
					d->umax = decu64(d->umax);
			}
			break;
		case BPF_JGT: d->umin = MAX(d->umin, incu64(s->umin)); s->umax = MIN(s->umax, decu64(d->umax)); break;
		case BPF_JGE: d->umin = MAX(d->umin, s->umin); s->umax = MIN(s->umax, d->umax); break;
		case BPF_JLT: d->umax = MIN(d->umax, decu64(s->umax)); s->umin = MAX(s->umin, incu64(d->umin)); break;
		case BPF_JLE: d->umax = MIN(d->umax, s->umax); s->umin = MAX(s->umin, d->umin); break;
		case BPF_JSGT: d->smin = MAX(d->smin, inc64(s->smin)); s->smax = MIN(s->smax, dec64(d->smax)); break;
		case BPF_JSGE: d->smin = MAX(d->smin, s->smin); s->smax = MIN(s->smax, d->smax); break;
		case BPF_JSLT: d->smax = MIN(d->smax, dec64(s->smax)); s->smin = MAX(s->smin, inc64(d->smin)); break;
		case BPF_JSLE: d->smax = MIN(d->smax, s->smax); s->smin = MAX(s->smin, d->smin); break;
		}
		return;
	}
	switch (op) {
	case BPF_JEQ:
		d->u32min = s->u32min = MAX(d->u32min, s->u32min);
		d->u32max = s->u32max = MIN(d->u32max, s->u32max);
		d->s32min = s->s32min = MAX(d->s32min, s->s32min);
		d->s32max = s->s32max = MIN(d->s32max, s->s32max);
		break;
	case BPF_JNE:
		if (scalar_is_const(s) || (s->u32min == s->u32max)) {
			if (d->u32min == s->u32min)
				d->u32min = incu32(d->u32min);
			else if (d->u32max == s->u32min)
				d->u32max = decu32(d->u32max);
		}
		break;
	case BPF_JGT: d->u32min = MAX(d->u32min, incu32(s->u32min)); s->u32max = MIN(s->u32max, decu32(d->u32max)); break;
	case BPF_JGE: d->u32min = MAX(d->u32min, s->u32min); s->u32max = MIN(s->u32max, d->u32max); break;
	case BPF_JLT: d->u32max = MIN(d->u32max, decu32(s->u32max)); s->u32min = MAX(s->u32min, incu32(d->u32min)); break;
	case BPF_JLE: d->u32max = MIN(d->u32max, s->u32max); s->u32min = MAX(s->u32min, d->u32min); break;
	case BPF_JSGT: d->s32min = MAX(d->s32min, inc32(s->s32min)); s->s32max = MIN(s->s32max, dec32(d->s32max)); break;
	case BPF_JSGE: d->s32min = MAX(d->s32min, s->s32min); s->s32max = MIN(s->s32max, d->s32max); break;
	case BPF_JSLT: d->s32max = MIN(d->s32max, dec32(s->s32max)); s->s32min = MAX(s->s32min, inc32(d->s32min)); break;
	case BPF_JSLE: d->s32max = MIN(d->s32max, s->s32max); s->s32min = MAX(s->s32min, d->s32min); break;
	}
}

static uint8_t negate_op(uint8_t op)
{
	switch (op) {
	case BPF_JEQ: return BPF_JNE;
	case BPF_JNE: return BPF_JEQ;
	case BPF_JGT: return BPF_JLE;
	case BPF_JGE: return BPF_JLT;
	case BPF_JLT: return BPF_JGE;
	case BPF_JLE: return BPF_JGT;
	case BPF_JSGT: return BPF_JSLE;
	case BPF_JSGE: return BPF_JSLT;
	case BPF_JSLT: return BPF_JSGE;
	case BPF_JSLE: return BPF_JSGT;
	}
	return 0; /* JSET has no negation we refine on */
}

int scalar_branch_outcome(const struct scalar *d, const struct scalar *s, uint8_t op, bool is64)
{
	if (is64) {
		switch (op) {
		case BPF_JEQ:
			if (scalar_is_const(d) && scalar_is_const(s))
				return d->var.value == s->var.value;
			if (d->umin > s->umax || d->umax < s->umin || d->smin > s->smax || d->smax < s->smin)
				return 0;
			if ((d->var.value ^ s->var.value) & ~(d->var.mask | s->var.mask))
				return 0;
			return -1;
		case BPF_JNE: {
			int r = scalar_branch_outcome(d, s, BPF_JEQ, true);

			return r < 0 ? -1 : !r;
		}
		case BPF_JSET:
			if (d->var.value & s->var.value)
				return 1;
			if (!((d->var.value | d->var.mask) & (s->var.value | s->var.mask)))
				return 0;
			return -1;
		case BPF_JGT: return d->umin > s->umax ? 1 : d->umax <= s->umin ? 0 : -1;
		case BPF_JGE: return d->umin >= s->umax ? 1 : d->umax < s->umin ? 0 : -1;
		case BPF_JLT: return d->umax < s->umin ? 1 : d->umin >= s->umax ? 0 : -1;
		case BPF_JLE: return d->umax <= s->umin ? 1 : d->umin > s->umax ? 0 : -1;
		case BPF_JSGT: return d->smin > s->smax ? 1 : d->smax <= s->smin ? 0 : -1;
		case BPF_JSGE: return d->smin >= s->smax ? 1 : d->smax < s->smin ? 0 : -1;
		case BPF_JSLT: return d->smax < s->smin ? 1 : d->smin >= s->smax ? 0 : -1;
		case BPF_JSLE: return d->smax <= s->smin ? 1 : d->smin > s->smax ? 0 : -1;
		}
		return -1;
	}
	switch (op) {
	case BPF_JEQ:
		if (d->u32min == d->u32max && s->u32min == s->u32max)
			return d->u32min == s->u32min;
		if (d->u32min > s->u32max || d->u32max < s->u32min)
			return 0;
		if (((d->var.value ^ s->var.value) & ~(d->var.mask | s->var.mask)) & U32_MAX)
			return 0;
		return -1;
	case BPF_JNE: {
		int r = scalar_branch_outcome(d, s, BPF_JEQ, false);

		return r < 0 ? -1 : !r;
	}
	case BPF_JSET:
		if (d->var.value & s->var.value & U32_MAX)
			return 1;
		if (!((d->var.value | d->var.mask) & (s->var.value | s->var.mask) & U32_MAX))
			return 0;
		return -1;
	case BPF_JGT: return d->u32min > s->u32max ? 1 : d->u32max <= s->u32min ? 0 : -1;
	case BPF_JGE: return d->u32min >= s->u32max ? 1 : d->u32max < s->u32min ? 0 : -1;
	case BPF_JLT: return d->u32max < s->u32min ? 1 : d->u32min >= s->u32max ? 0 : -1;
	case BPF_JLE: return d->u32max <= s->u32min ? 1 : d->u32min > s->u32max ? 0 : -1;
	case BPF_JSGT: return d->s32min > s->s32max ? 1 : d->s32max <= s->s32min ? 0 : -1;
	case BPF_JSGE: return d->s32min >= s->s32max ? 1 : d->s32max < s->s32min ? 0 : -1;
	case BPF_JSLT: return d->s32max < s->s32min ? 1 : d->s32min >= s->s32max ? 0 : -1;
	case BPF_JSLE: return d->s32max <= s->s32min ? 1 : d->s32min > s->s32max ? 0 : -1;
	}
	return -1;
}

bool scalar_refine(struct scalar *d, struct scalar *s, uint8_t op, bool is64, bool taken)
{
	int outcome = scalar_branch_outcome(d, s, op, is64);

	if (outcome >= 0 && outcome != (int)taken)
		return false;
	if (op == BPF_JSET) {
		if (!taken && scalar_is_const(s)) /* (d & k) == 0: those bits are zero */
			d->var = tnum_and(d->var, tnum_const(~s->var.value | (is64 ? 0 : ~U32_MAX)));
	} else {
		refine_holds(d, s, taken ? op : negate_op(op), is64);
	}
	scalar_sync(d);
	scalar_sync(s);
	return !scalar_empty(d) && !scalar_empty(s);
}

int scalar_format(const struct scalar *s, char *buf, size_t len)
{
	if (scalar_is_const(s))
		return snprintf(buf, len, "%lld", (long long)s->var.value);
	int n = snprintf(buf, len, "scalar(");
	const char *sep = "";

#define FIELD(cond, ...)                                                    \
	do {                                                                \
		if ((cond) && (size_t)n < len) {                            \
			n += snprintf(buf + n, len - n, "%s", sep);          \
			n += snprintf(buf + n, len - n, __VA_ARGS__);        \
			sep = ",";                                           \
		}                                                           \
	} while (0)
	FIELD(s->smin != INT64_MIN, "smin=%lld", (long long)s->smin);
	FIELD(s->smax != INT64_MAX, "smax=%lld", (long long)s->smax);
	FIELD(s->umin != 0, "umin=%llu", (unsigned long long)s->umin);
	FIELD(s->umax != UINT64_MAX, "umax=%llu", (unsigned long long)s->umax);
	FIELD(s->var.mask != ~0ULL, "var_off=(0x%llx; 0x%llx)", (unsigned long long)s->var.value,
	      (unsigned long long)s->var.mask);
#undef FIELD
	if ((size_t)n < len)
		n += snprintf(buf + n, len - n, ")");
	return n;
}

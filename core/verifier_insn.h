/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The register accessors the verifier's instruction rules share:
 * verifier_insn.c (ALU, memory, calls, exit) and verifier_branch.c
 * (conditional jumps, NULL checks, SIMT divergence). Internal to core/.
 */
#ifndef GPUEXT_CORE_VERIFIER_INSN_H
#define GPUEXT_CORE_VERIFIER_INSN_H

#include <string.h>

#include "verifier_impl.h"

static inline struct vreg *R(struct vstate *st, int r)
{
	return &v_cur(st)->regs[r];
}

static inline bool is_ptr(const struct vreg *r)
{
	return r->type != VT_SCALAR && r->type != VT_NOT_INIT;
}

static inline void set_scalar_unknown(struct vreg *r)
{
	bool div = r->divergent;

	memset(r, 0, sizeof(*r));
	r->type = VT_SCALAR;
	r->divergent = div;
	scalar_unknown(&r->s);
}

static inline void set_scalar_const(struct vreg *r, uint64_t c)
{
	memset(r, 0, sizeof(*r));
	r->type = VT_SCALAR;
	scalar_const(&r->s, c);
}

static inline void set_not_init(struct vreg *r)
{
	memset(r, 0, sizeof(*r));
}

static inline int need_init(struct verifier *v, struct vstate *st, int r)
{
	if (R(st, r)->type != VT_NOT_INIT)
		return 0;
	return v_reject(v, st, GPUEXT_RULE_UNINIT_REG,
			r == 0 ? "set r0 on every path before exit or use"
			       : "initialise the register on every path that reaches here "
				 "(r1-r5 do not survive a call)",
			"R%d !read_ok: the register was never written on this path", r);
}

static inline bool rdonly_map(const struct gpuext_map *m)
{
	return m && (gpuext_map__flags(m) & BPF_F_RDONLY_PROG);
}

static inline const char *type_str(enum vtype t)
{
	switch (t) {
	case VT_NOT_INIT: return "uninitialised";
	case VT_SCALAR: return "scalar";
	case VT_CTX: return "ctx";
	case VT_STACK: return "fp";
	case VT_MAP_PTR: return "map_ptr";
	case VT_MAP_VALUE: return "map_value";
	case VT_MEM: return "mem";
	case VT_HANDLE: return "handle";
	case VT_CODE: return "func";
	}
	return "?";
}

/* Forgets a held ring-record reference (its level goes with it). */
static inline void drop_ref(struct vstate *st, uint32_t ref)
{
	for (int i = 0; i < st->nrefs; i++) {
		if (st->refs[i] == ref) {
			st->refdiv[i] = st->refdiv[st->nrefs - 1];
			st->refs[i] = st->refs[--st->nrefs];
			return;
		}
	}
}

/* verifier_branch.c: a conditional jump (ranges, NULL checks, divergence) */
int v_jcond(struct verifier *v, struct vstate *st, const struct bpf_insn *in,
	    const struct isa_decoded *d);

#endif

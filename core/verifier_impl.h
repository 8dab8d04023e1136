/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Verifier internals: the abstract state (registers, stack slots, frames,
 * references) and the scalar domain (known bits + signed/unsigned 64- and
 * 32-bit ranges). Split over verifier.c (exploration, pruning, log),
 * verifier_insn.c (instruction rules), verifier_scalar.c (the scalar
 * domain) and verifier_types.c (program types).
 */
#ifndef GPUEXT_CORE_VERIFIER_IMPL_H
#define GPUEXT_CORE_VERIFIER_IMPL_H

#include <stdarg.h>

#include "gpuext/verifier.h"
#include "internal.h"

/* ---- the scalar domain ---- */

/* Known bits: bit i is known (= value bit i) where mask bit i is 0. */
struct tnum {
	uint64_t value, mask;
};

struct tnum tnum_const(uint64_t v);
struct tnum tnum_unknown(void);
struct tnum tnum_range(uint64_t min, uint64_t max);
struct tnum tnum_add(struct tnum a, struct tnum b);
struct tnum tnum_sub(struct tnum a, struct tnum b);
struct tnum tnum_and(struct tnum a, struct tnum b);
struct tnum tnum_or(struct tnum a, struct tnum b);
struct tnum tnum_xor(struct tnum a, struct tnum b);
struct tnum tnum_lshift(struct tnum a, unsigned k);
struct tnum tnum_rshift(struct tnum a, unsigned k);
struct tnum tnum_arshift(struct tnum a, unsigned k, unsigned width);
struct tnum tnum_intersect(struct tnum a, struct tnum b);
struct tnum tnum_cast(struct tnum a, unsigned bytes);
bool tnum_is_const(struct tnum a);
/* Is every value of @b also a value of @a? */
bool tnum_in(struct tnum a, struct tnum b);

/* A scalar: every concrete value satisfies all of these at once. */
struct scalar {
	struct tnum var;
	uint64_t umin, umax;
	int64_t smin, smax;
	uint32_t u32min, u32max;
	int32_t s32min, s32max;
};

void scalar_const(struct scalar *s, uint64_t v);
void scalar_unknown(struct scalar *s);
/* Tighten every component from the others until nothing changes. */
void scalar_sync(struct scalar *s);
bool scalar_is_const(const struct scalar *s);
/* ALU on scalars: @op is BPF_ADD.., @is64 false for ALU32 (result zero-extended). */
void scalar_alu(struct scalar *dst, const struct scalar *src, uint8_t op, bool is64, bool sdivmod);
void scalar_movsx(struct scalar *dst, const struct scalar *src, unsigned bits, bool is64);
void scalar_trunc(struct scalar *s, unsigned bytes);	/* zero-extending load of @bytes */
void scalar_sext(struct scalar *s, unsigned bytes);	/* sign-extending load */
/* Does @old cover every value @cur can take? */
bool scalar_covers(const struct scalar *old, const struct scalar *cur);
/*
 * Branch on "dst OP src": refine both for the taken (@taken=true) or the
 * fall-through side. Returns false if that side is impossible.
 */
bool scalar_refine(struct scalar *dst, struct scalar *src, uint8_t op, bool is64, bool taken);
/* 1 = always taken, 0 = never, -1 = unknown. */
int scalar_branch_outcome(const struct scalar *dst, const struct scalar *src, uint8_t op,
			  bool is64);
int scalar_format(const struct scalar *s, char *buf, size_t len);

/* ---- registers and the stack ---- */

enum vtype {
	VT_NOT_INIT = 0,
	VT_SCALAR,
	VT_CTX,		/* the program's context */
	VT_STACK,	/* frame pointer + off of frame `frameno` */
	VT_MAP_PTR,	/* a map (helper argument only) */
	VT_MAP_VALUE,	/* inside a map value */
	VT_MEM,		/* ring-buffer record, variable, or memory from a ctx field */
	VT_HANDLE,	/* opaque driver object from a ctx field: pass to kfuncs only */
	VT_CODE,	/* a code address (ld_imm64 src=4), for callx */
};

struct vreg {
	enum vtype type;
	bool maybe_null;	/* MAP_VALUE / MEM / HANDLE */
	bool rdonly;		/* MEM */
	bool divergent;		/* SIMT: may differ between the lanes of a warp */
	bool precise;		/* scalars: a decision depended on the exact range */
	uint32_t id;		/* shared by copies of one possibly-NULL pointer */
	uint32_t ref_id;	/* acquired reference (ring-buffer record) */
	int32_t off;		/* fixed offset of a pointer / target of VT_CODE */
	uint32_t frameno;	/* VT_STACK */
	uint32_t mem_size;	/* VT_MEM */
	struct gpuext_map *map;	/* MAP_PTR / MAP_VALUE */
	struct scalar s;	/* the value (scalars) or the variable offset (pointers) */
};

#define VSLOTS (GPUEXT_STACK_SIZE / 8)

enum vbyte { VB_INVALID = 0, VB_MISC, VB_ZERO, VB_SPILL };

struct vslot {
	uint8_t bytes[8];	/* enum vbyte per byte */
	/* The spilled register, valid for the VB_SPILL bytes [spill_off, spill_off +
	 * spill_size): 8 bytes for any register, 1/2/4 for a scalar (its value is
	 * kept, truncated, so a narrow loop counter on the stack stays precise). */
	uint8_t spill_off, spill_size;
	struct vreg spill;
};

struct vframe {
	struct vreg regs[11];
	struct vslot stack[VSLOTS];	/* stack[k] covers fp-512+8k .. fp-512+8k+7 */
	uint32_t callsite;		/* insn index of the call (frames > 0) */
	uint32_t depth;			/* deepest stack byte used, rounded up to 8 */
};

#define VMAX_REFS 16
#define VMAX_DIVERGE 16

struct vcheckpoint;

/* One instruction walked, for precision backtracking. */
struct vhist {
	uint32_t idx;
	uint8_t frame;		/* frame executing it */
	uint8_t slot_frame;	/* stack slot it loaded/stored, if any */
	int16_t slot;		/* -1: no (constant-offset) stack access */
};

/* The state of one path. */
struct vstate {
	struct vframe *frames[GPUEXT_MAX_CALL_FRAMES];
	int curframe;
	uint32_t refs[VMAX_REFS];	/* acquired, not yet released */
	uint8_t refdiv[VMAX_REFS];	/* ndiverge when each was acquired */
	int nrefs;
	/* SIMT: reconvergence points of the divergent branches we are inside. */
	uint32_t diverge[VMAX_DIVERGE];
	int ndiverge;
	uint32_t pc;
	uint64_t path_len;		/* instructions on this path so far */
	uint64_t cp_len;		/* path_len at the last checkpoint stored on this path */
	uint32_t cp_jmps;		/* jumps since then */
	struct vcheckpoint *parent;	/* last checkpoint on this path */
	/* instructions walked since that checkpoint (owned; copied on fork) */
	struct vhist *hist;
	uint32_t nhist, caphist;
};

/* A stored state at a prune point. */
struct vcheckpoint {
	struct vstate st;
	struct vcheckpoint *parent;
	struct vcheckpoint *next;	/* same instruction */
	uint32_t branches;		/* paths from here still being explored */
	uint64_t path_pos;		/* path_len when stored */
	uint64_t max_end;		/* furthest path length reached through here (complete: final) */
	uint32_t hit, miss;		/* pruning success, to drop states that never help */
	uint64_t hash;			/* of the exact state, for the infinite-loop check */
	/* instructions from the parent checkpoint to this one (owned) */
	struct vhist *seg;
	uint32_t nseg;
};

struct vpending {
	struct vstate st;
};

/* One verification. */
struct verifier {
	struct gpuext_prog *prog;
	struct gpuext_runtime *rt;
	const struct gpuext_prog_type_desc *type;
	const struct gpuext_verify_opts *opts;
	struct gpuext_verify_result *res;
	const struct bpf_insn *insns;
	size_t cnt;
	struct isa_decoded *dec;
	uint8_t *prune_point;		/* per insn */
	uint8_t *mem_align;		/* per insn, or NULL: gpuext_verify_result.mem_align */
	uint8_t *is_func_start;
	int32_t *ipdom;			/* immediate post-dominator per insn (SIMT), -1 = exit */
	struct vcheckpoint **cps;	/* per insn list */
	struct vcheckpoint *retired;	/* off the lists but still parents of live paths */
	struct vpending *stack;		/* pending branches (DFS) */
	size_t nstack, capstack;
	uint32_t next_id;
	uint32_t cur_states, peak_states;
	uint64_t budget;
	/* the failure */
	enum gpuext_rule rule;
	uint32_t fail_pc;
	char msg[512];
	char hint[256];
	/* log */
	char *log;
	size_t log_len, log_cap;
	bool log_truncated;
};

/* verifier.c */
void v_log(struct verifier *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int v_reject(struct verifier *v, const struct vstate *st, enum gpuext_rule rule, const char *hint,
	     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void v_format_reg(const struct vreg *r, char *buf, size_t len);
struct vstate *v_push_branch(struct verifier *v, const struct vstate *st, uint32_t pc);
int v_state_copy(struct vstate *dst, const struct vstate *src);
void v_state_free(struct vstate *st);

/* verifier_precise.c: precision tracking (which scalars' exact ranges matter). */
int v_hist_push(struct vstate *st, uint32_t idx);
/* Register @reg of the current frame decided something: mark its sources precise. */
void v_mark_precise(struct verifier *v, struct vstate *st, int reg);
/* @st was pruned by @old: what was precise there must be precise here. */
void v_propagate_precision(struct verifier *v, struct vstate *st, const struct vstate *old);
void v_mark_all_imprecise(struct vstate *st);

/* verifier_insn.c: executes one instruction on @st; sets st->pc to the next. */
#define V_EXIT_PATH 1	/* the path ended (exit of the entry function) */
int v_step(struct verifier *v, struct vstate *st);

static inline struct vframe *v_cur(const struct vstate *st)
{
	return st->frames[st->curframe];
}

#endif

// SPDX-License-Identifier: Apache-2.0
/*
 * The lifter: verified eBPF -> LLVM IR, one function per eBPF function,
 * following the contract in codegen.h.
 *
 * Shape of the output, chosen so that LLVM's O2 does the real work:
 *  - every eBPF function is `internal i64 @<entry>__<func>(i64 r1..r5)`; the
 *    public entry `i64 @<entry>(ptr ctx, i64 ctx_len)` only calls the first
 *    one (O2 inlines it). Every function has the same signature, so a callx
 *    is a switch over the program's functions by code address;
 *  - registers r0..r9 are allocas (mem2reg turns them into SSA values);
 *    r10 is a constant per frame: the end of that frame's 512-byte stack
 *    alloca. Since each function owns its own registers, r6..r9 survive
 *    calls by construction;
 *  - a load/store based on r10 itself addresses the alloca with a GEP (so
 *    LLVM can see stack slots and promote them); any other address is
 *    inttoptr(register) + offset in the target's generic address space;
 *  - every place where LLVM has undefined behaviour and eBPF has a defined
 *    result (division/modulo by zero, INT_MIN / -1, oversized shifts) gets
 *    the eBPF result through selects and masks, so the interpreter
 *    (core/interp.c) and the lifted code agree bit for bit.
 *
 * Output is deterministic: names come from the program only, functions and
 * blocks are created in instruction order.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>

#include "internal.h"
#include "target.h"

#define NREGS 11
#define BADCALL_POISON 0xbadca11badca11ULL /* what interp.c leaves in r1-r5 after a helper */

/* State of one lift; lives on gpuext_cg_lift()'s stack. */
struct lifter {
	struct gpuext_prog *prog;
	const struct gpuext_cg_target_desc *td;
	LLVMContextRef ctx;
	LLVMModuleRef mod;
	LLVMBuilderRef b;
	struct isa_decoded *dec;	/* one per slot */
	const uint8_t *mem_align;	/* per slot, or NULL: gpuext_cg_lift_opts */

	LLVMTypeRef i1, i8, i16, i32, i64, ptr_mem, ptr_stack, stack_ty, fn_ty, helper_ty;
	LLVMValueRef *fns;		/* one per eBPF function */
	char entry[128];

	/* The function being lifted. */
	size_t fidx, start, end;
	LLVMValueRef fn, regs[NREGS], stack, fp;
	LLVMBasicBlockRef *bbs;		/* per slot of [start, end): block starting there */
	int err;
};

static int fail(struct lifter *l, size_t idx, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(struct lifter *l, size_t idx, int err, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	gpuext_log(gpuext_prog__runtime(l->prog), GPUEXT_LOG_WARN,
		   "codegen: prog '%s': insn %zu: %s", gpuext_prog__name(l->prog), idx, msg);
	if (!l->err)
		l->err = err;
	return err;
}

/* ------------------------------------------------------------------ */
/* Small IR helpers                                                     */
/* ------------------------------------------------------------------ */

static LLVMValueRef c64(struct lifter *l, uint64_t v) { return LLVMConstInt(l->i64, v, false); }
static LLVMValueRef c32(struct lifter *l, uint32_t v) { return LLVMConstInt(l->i32, v, false); }

static LLVMTypeRef int_ty(struct lifter *l, unsigned bits)
{
	switch (bits) {
	case 8: return l->i8;
	case 16: return l->i16;
	case 32: return l->i32;
	default: return l->i64;
	}
}

static LLVMValueRef rd(struct lifter *l, unsigned r)
{
	char name[8];

	if (r == BPF_REG_10)
		return l->fp;
	snprintf(name, sizeof(name), "r%u", r);
	return LLVMBuildLoad2(l->b, l->i64, l->regs[r], name);
}

static void wr(struct lifter *l, unsigned r, LLVMValueRef v)
{
	LLVMBuildStore(l->b, v, l->regs[r]);
}

static LLVMValueRef intrinsic(struct lifter *l, const char *name, LLVMTypeRef ty)
{
	unsigned id = LLVMLookupIntrinsicID(name, strlen(name));

	return LLVMGetIntrinsicDeclaration(l->mod, id, &ty, 1);
}

static LLVMValueRef call_intrinsic1(struct lifter *l, const char *name, LLVMTypeRef ty,
				    LLVMValueRef arg)
{
	LLVMValueRef f = intrinsic(l, name, ty);

	return LLVMBuildCall2(l->b, LLVMGlobalGetValueType(f), f, &arg, 1, "");
}

static void add_fn_attr(LLVMContextRef ctx, LLVMValueRef f, const char *name)
{
	unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));

	LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(ctx, kind, 0));
}

/* A declared (or already defined) function of the module, created on first use. */
static LLVMValueRef get_fn(struct lifter *l, const char *name, LLVMTypeRef ty)
{
	LLVMValueRef f = LLVMGetNamedFunction(l->mod, name);

	if (!f) {
		f = LLVMAddFunction(l->mod, name, ty);
		LLVMSetFunctionCallConv(f, LLVMCCallConv);
	}
	return f;
}

/*
 * Pointer for an access of @size bytes at reg + off (instruction @at_insn).
 * r10-based accesses go to the frame's alloca directly (natural alignment
 * when the offset has it: the alloca is 16-byte aligned); the rest get the
 * alignment the verifier proved (gpuext_cg_lift_opts.mem_align), else 1, as
 * eBPF allows.
 */
static LLVMValueRef mem_ptr(struct lifter *l, size_t at_insn, unsigned reg, int16_t off,
			    unsigned size, unsigned *align)
{
	LLVMValueRef idx, base;

	if (reg == BPF_REG_10) {
		int64_t at = GPUEXT_STACK_SIZE + (int64_t)off;

		*align = (at % (int64_t)size) == 0 ? size : 1;
		idx = c64(l, (uint64_t)at);
		return LLVMBuildGEP2(l->b, l->i8, l->stack, &idx, 1, "");
	}
	/* What the verifier proved for this access on every path, or nothing. */
	*align = l->mem_align && l->mem_align[at_insn] ? l->mem_align[at_insn] : 1;
	if (*align > size)
		*align = size;
	base = LLVMBuildIntToPtr(l->b, rd(l, reg), l->ptr_mem, "");
	if (!off)
		return base;
	idx = c64(l, (uint64_t)(int64_t)off);
	return LLVMBuildGEP2(l->b, l->i8, base, &idx, 1, "");
}

/* ------------------------------------------------------------------ */
/* ALU                                                                  */
/* ------------------------------------------------------------------ */

/* Unsigned or signed division/modulo with eBPF's defined results. */
static LLVMValueRef divmod(struct lifter *l, bool is_div, bool sgn, LLVMValueRef a, LLVMValueRef b,
			   LLVMTypeRef ty)
{
	LLVMValueRef zero = LLVMConstInt(ty, 0, false), one = LLVMConstInt(ty, 1, false);
	LLVMValueRef m1 = LLVMConstAllOnes(ty);
	LLVMValueRef bz = LLVMBuildICmp(l->b, LLVMIntEQ, b, zero, "");
	LLVMValueRef res, safe;

	if (!sgn) {
		safe = LLVMBuildSelect(l->b, bz, one, b, "");
		res = is_div ? LLVMBuildUDiv(l->b, a, safe, "") : LLVMBuildURem(l->b, a, safe, "");
		/* x / 0 = 0; x % 0 = x */
		return LLVMBuildSelect(l->b, bz, is_div ? zero : a, res, "");
	}
	/* Signed: b == -1 is done without the division (INT_MIN / -1 overflows). */
	LLVMValueRef bm1 = LLVMBuildICmp(l->b, LLVMIntEQ, b, m1, "");
	LLVMValueRef special = LLVMBuildOr(l->b, bz, bm1, "");

	safe = LLVMBuildSelect(l->b, special, one, b, "");
	res = is_div ? LLVMBuildSDiv(l->b, a, safe, "") : LLVMBuildSRem(l->b, a, safe, "");
	/* x / -1 = -x (wrapping); x % -1 = 0 */
	res = LLVMBuildSelect(l->b, bm1, is_div ? LLVMBuildSub(l->b, zero, a, "") : zero, res, "");
	return LLVMBuildSelect(l->b, bz, is_div ? zero : a, res, "");
}

static LLVMValueRef sext_from(struct lifter *l, LLVMValueRef v, unsigned bits, LLVMTypeRef to)
{
	return LLVMBuildSExt(l->b, LLVMBuildTrunc(l->b, v, int_ty(l, bits), ""), to, "");
}

static int lift_alu(struct lifter *l, size_t idx, const struct bpf_insn *in,
		    const struct isa_decoded *d)
{
	bool is64 = isa_class(in->code) == BPF_ALU64;
	LLVMTypeRef ty = is64 ? l->i64 : l->i32;
	unsigned bits = is64 ? 64 : 32;
	uint8_t op = isa_op(in->code);
	LLVMValueRef a, b, r;

	if (d->use_imm)
		b = LLVMConstInt(ty, (uint64_t)(int64_t)in->imm, false); /* truncates for ALU */
	else
		b = is64 ? rd(l, in->src_reg) : LLVMBuildTrunc(l->b, rd(l, in->src_reg), ty, "");
	if (op == BPF_MOV) {
		a = NULL;
	} else {
		a = rd(l, in->dst_reg);
		if (!is64)
			a = LLVMBuildTrunc(l->b, a, ty, "");
	}
	switch (op) {
	case BPF_ADD: r = LLVMBuildAdd(l->b, a, b, ""); break;
	case BPF_SUB: r = LLVMBuildSub(l->b, a, b, ""); break;
	case BPF_MUL: r = LLVMBuildMul(l->b, a, b, ""); break;
	case BPF_OR: r = LLVMBuildOr(l->b, a, b, ""); break;
	case BPF_AND: r = LLVMBuildAnd(l->b, a, b, ""); break;
	case BPF_XOR: r = LLVMBuildXor(l->b, a, b, ""); break;
	case BPF_LSH:
	case BPF_RSH:
	case BPF_ARSH:
		/* eBPF masks the shift amount; LLVM would call an oversized one poison. */
		b = LLVMBuildAnd(l->b, b, LLVMConstInt(ty, bits - 1, false), "");
		r = op == BPF_LSH  ? LLVMBuildShl(l->b, a, b, "")
		    : op == BPF_RSH ? LLVMBuildLShr(l->b, a, b, "")
				    : LLVMBuildAShr(l->b, a, b, "");
		break;
	case BPF_NEG: r = LLVMBuildNeg(l->b, a, ""); break;
	case BPF_MOV:
		r = in->off ? sext_from(l, b, (unsigned)in->off, ty) : b; /* movsx */
		break;
	case BPF_DIV:
	case BPF_MOD:
		r = divmod(l, op == BPF_DIV, in->off == 1, a, b, ty);
		break;
	default:
		return fail(l, idx, -EINVAL, "unknown ALU operation 0x%02x", op);
	}
	if (!is64)
		r = LLVMBuildZExt(l->b, r, l->i64, "");
	wr(l, in->dst_reg, r);
	return 0;
}

static int lift_bswap(struct lifter *l, const struct bpf_insn *in)
{
	bool to_be = isa_class(in->code) == BPF_ALU64 || isa_src_bit(in->code) == BPF_TO_BE;
	unsigned bits = (unsigned)in->imm;
	LLVMTypeRef ty = int_ty(l, bits);
	LLVMValueRef v = rd(l, in->dst_reg);

	/* The host and every GPU target are little-endian: "le" only truncates. */
	if (bits < 64)
		v = LLVMBuildTrunc(l->b, v, ty, "");
	if (to_be && bits > 8)
		v = call_intrinsic1(l, "llvm.bswap", ty, v);
	if (bits < 64)
		v = LLVMBuildZExt(l->b, v, l->i64, "");
	wr(l, in->dst_reg, v);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Memory                                                               */
/* ------------------------------------------------------------------ */

static void lift_ldx(struct lifter *l, size_t idx, const struct bpf_insn *in,
		     const struct isa_decoded *d)
{
	unsigned align;
	LLVMValueRef p = mem_ptr(l, idx, in->src_reg, in->off, d->size, &align);
	LLVMValueRef v = LLVMBuildLoad2(l->b, int_ty(l, d->size * 8), p, "");

	LLVMSetAlignment(v, align);
	if (d->size < 8)
		v = isa_mode(in->code) == BPF_MEMSX ? LLVMBuildSExt(l->b, v, l->i64, "")
						     : LLVMBuildZExt(l->b, v, l->i64, "");
	wr(l, in->dst_reg, v);
}

static void lift_store(struct lifter *l, size_t idx, const struct bpf_insn *in,
		       const struct isa_decoded *d)
{
	unsigned align;
	LLVMTypeRef ty = int_ty(l, d->size * 8);
	LLVMValueRef v, p, st;

	if (d->kind == ISA_ST)
		v = LLVMConstInt(ty, (uint64_t)(int64_t)in->imm, false);
	else
		v = d->size < 8 ? LLVMBuildTrunc(l->b, rd(l, in->src_reg), ty, "")
				: rd(l, in->src_reg);
	p = mem_ptr(l, idx, in->dst_reg, in->off, d->size, &align);
	st = LLVMBuildStore(l->b, v, p);
	LLVMSetAlignment(st, align);
}

static int lift_atomic(struct lifter *l, size_t idx, const struct bpf_insn *in,
		       const struct isa_decoded *d)
{
	LLVMTypeRef ty = int_ty(l, d->size * 8);
	LLVMValueRef p, v, old;
	LLVMAtomicRMWBinOp op;
	unsigned align;
	int code = in->imm;

	/* Atomics are naturally aligned (the verifier and the interpreter insist). */
	p = mem_ptr(l, idx, in->dst_reg, in->off, d->size, &align);
	v = rd(l, in->src_reg);
	if (d->size < 8)
		v = LLVMBuildTrunc(l->b, v, ty, "");
	if (code == BPF_CMPXCHG) {
		LLVMValueRef cmp = rd(l, BPF_REG_0), pair;

		if (d->size < 8)
			cmp = LLVMBuildTrunc(l->b, cmp, ty, "");
		pair = LLVMBuildAtomicCmpXchg(l->b, p, cmp, v, LLVMAtomicOrderingSequentiallyConsistent,
					      LLVMAtomicOrderingSequentiallyConsistent, false);
		LLVMSetAlignment(pair, d->size);
		old = LLVMBuildExtractValue(l->b, pair, 0, "");
		wr(l, BPF_REG_0, d->size < 8 ? LLVMBuildZExt(l->b, old, l->i64, "") : old);
		return 0;
	}
	switch (code & ~BPF_FETCH) {
	case BPF_ADD: op = LLVMAtomicRMWBinOpAdd; break;
	case BPF_OR: op = LLVMAtomicRMWBinOpOr; break;
	case BPF_AND: op = LLVMAtomicRMWBinOpAnd; break;
	case BPF_XOR: op = LLVMAtomicRMWBinOpXor; break;
	case BPF_XCHG & ~BPF_FETCH: op = LLVMAtomicRMWBinOpXchg; break;
	default:
		return fail(l, idx, -EINVAL, "unknown atomic operation 0x%x", (unsigned)code);
	}
	old = LLVMBuildAtomicRMW(l->b, op, p, v, LLVMAtomicOrderingSequentiallyConsistent, false);
	LLVMSetAlignment(old, d->size);
	if (code & BPF_FETCH)
		wr(l, in->src_reg, d->size < 8 ? LLVMBuildZExt(l->b, old, l->i64, "") : old);
	return 0;
}

/* ld_imm64: constants, maps, variables, code addresses. */
static int lift_lddw(struct lifter *l, size_t idx, const struct bpf_insn *in)
{
	struct gpuext_prog *prog = l->prog;
	struct gpuext_runtime *rt = gpuext_prog__runtime(prog);
	struct gpuext_map *map = NULL;
	uint32_t off = (uint32_t)in[1].imm;
	size_t map_idx = SIZE_MAX;
	LLVMValueRef v;

	switch (in->src_reg) {
	case 0:
		wr(l, in->dst_reg, c64(l, (uint64_t)(uint32_t)in[0].imm |
					       ((uint64_t)(uint32_t)in[1].imm << 32)));
		return 0;
	case BPF_PSEUDO_FUNC:
		/* A code address is the instruction index of the function (docs/isa-extensions.md). */
		wr(l, in->dst_reg, c64(l, (uint64_t)isa_func_addr_target(in, idx)));
		return 0;
	case BPF_PSEUDO_BTF_ID: {
		void *addr = NULL;

		for (size_t i = 0; i < rt->var_cnt; i++)
			if (rt->vars[i].id == (uint32_t)in->imm)
				addr = rt->vars[i].addr;
		if (!addr)
			return fail(l, idx, -ENOENT, "variable %d is not registered", in->imm);
		if (l->td->const_refs) {
			v = c64(l, (uint64_t)(uintptr_t)addr);
		} else {
			LLVMTypeRef ft = LLVMFunctionType(l->ptr_mem, &l->i32, 1, false);
			LLVMValueRef f = get_fn(l, "gpuext_rt_var", ft), arg = c32(l, (uint32_t)in->imm);

			v = LLVMBuildPtrToInt(l->b, LLVMBuildCall2(l->b, ft, f, &arg, 1, ""), l->i64, "");
		}
		wr(l, in->dst_reg, v);
		return 0;
	}
	case BPF_PSEUDO_MAP_FD:
	case BPF_PSEUDO_MAP_VALUE:
		map = gpuext_runtime__map_by_id(rt, (uint32_t)in->imm);
		for (size_t i = 0; map && i < gpuext_prog__map_cnt(prog); i++)
			if (gpuext_prog__map(prog, i) == map) {
				map_idx = i;
				break;
			}
		break;
	case BPF_PSEUDO_MAP_IDX:
	case BPF_PSEUDO_MAP_IDX_VALUE:
		if (in->imm >= 0 && (size_t)in->imm < gpuext_prog__map_cnt(prog)) {
			map_idx = (size_t)in->imm;
			map = gpuext_prog__map(prog, map_idx);
		}
		break;
	default:
		return fail(l, idx, -EINVAL, "ld_imm64 with src_reg %u", in->src_reg);
	}
	if (!map)
		return fail(l, idx, -ENOENT, "map %s %d does not exist",
			    in->src_reg <= BPF_PSEUDO_MAP_VALUE ? "id" : "index", in->imm);
	bool is_value = in->src_reg == BPF_PSEUDO_MAP_VALUE || in->src_reg == BPF_PSEUDO_MAP_IDX_VALUE;

	if (l->td->const_refs) {
		void *p = is_value ? gpuext_map_direct_value(map, off) : (void *)map;

		if (!p)
			return fail(l, idx, -EINVAL, "no direct value at offset %u of map '%s'", off,
				    gpuext_map__name(map));
		v = c64(l, (uint64_t)(uintptr_t)p);
	} else {
		LLVMTypeRef args[2] = { l->i32, l->i32 };
		LLVMValueRef vals[2] = { c32(l, (uint32_t)map_idx), c32(l, off) };
		LLVMTypeRef ft = LLVMFunctionType(l->ptr_mem, args, is_value ? 2 : 1, false);
		LLVMValueRef f;

		if (map_idx == SIZE_MAX)
			return fail(l, idx, -ENOTSUP,
				    "map id %d is not in the program's map list; device code names maps "
				    "by their index there (use ld_imm64 src=5/6)", in->imm);
		f = get_fn(l, is_value ? "gpuext_rt_map_value" : "gpuext_rt_map", ft);
		v = LLVMBuildCall2(l->b, ft, f, vals, is_value ? 2 : 1, "");
		v = LLVMBuildPtrToInt(l->b, v, l->i64, "");
	}
	wr(l, in->dst_reg, v);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Calls and control flow                                               */
/* ------------------------------------------------------------------ */

static long func_index(const struct lifter *l, size_t start)
{
	for (size_t i = 0; i < gpuext_prog__func_cnt(l->prog); i++)
		if (gpuext_prog__func_start(l->prog, i) == start)
			return (long)i;
	return -1;
}

static LLVMValueRef call_args5(struct lifter *l, LLVMTypeRef ty, LLVMValueRef f)
{
	LLVMValueRef args[5];

	for (unsigned r = 0; r < 5; r++)
		args[r] = rd(l, BPF_REG_1 + r);
	return LLVMBuildCall2(l->b, ty, f, args, 5, "");
}

static int lift_call(struct lifter *l, size_t idx, const struct bpf_insn *in)
{
	struct gpuext_runtime *rt = gpuext_prog__runtime(l->prog);
	char name[192];
	LLVMValueRef f;

	if (in->src_reg == BPF_PSEUDO_CALL) {
		long fi = func_index(l, (size_t)isa_jump_target(in, idx));

		if (fi < 0)
			return fail(l, idx, -EINVAL, "call target %" PRId64 " is not a function start",
				    isa_jump_target(in, idx));
		wr(l, BPF_REG_0, call_args5(l, l->fn_ty, l->fns[fi]));
		return 0;
	}
	if (in->src_reg == BPF_PSEUDO_KFUNC_CALL) {
		const struct gpuext_func_proto *p =
			gpuext_runtime__find_func(rt, GPUEXT_FUNC_KFUNC, (uint32_t)in->imm);

		if (!p)
			return fail(l, idx, -ENOENT, "kfunc %d is not registered", in->imm);
		snprintf(name, sizeof(name), "gpuext_rt_kfunc_%s", p->name);
	} else {
		snprintf(name, sizeof(name), "gpuext_rt_helper_%u", (uint32_t)in->imm);
	}
	f = get_fn(l, name, l->helper_ty);
	add_fn_attr(l->ctx, f, "nounwind");
	wr(l, BPF_REG_0, call_args5(l, l->helper_ty, f));
	/* As the interpreter does: r1-r5 hold a poison value after a helper. */
	for (unsigned r = BPF_REG_1; r <= BPF_REG_5; r++)
		wr(l, r, c64(l, BADCALL_POISON));
	return 0;
}

/* callx: a switch over the program's functions by code address (insn index). */
static int lift_callx(struct lifter *l, const struct bpf_insn *in)
{
	size_t n = gpuext_prog__func_cnt(l->prog);
	LLVMBasicBlockRef cont = LLVMAppendBasicBlockInContext(l->ctx, l->fn, "callx.ret");
	LLVMBasicBlockRef bad = LLVMAppendBasicBlockInContext(l->ctx, l->fn, "callx.bad");
	LLVMValueRef sw = LLVMBuildSwitch(l->b, rd(l, in->dst_reg), bad, (unsigned)n);

	for (size_t i = 0; i < n; i++) {
		char bn[32];
		LLVMBasicBlockRef bb;

		snprintf(bn, sizeof(bn), "callx.f%zu", i);
		bb = LLVMAppendBasicBlockInContext(l->ctx, l->fn, bn);
		LLVMAddCase(sw, c64(l, gpuext_prog__func_start(l->prog, i)), bb);
		LLVMPositionBuilderAtEnd(l->b, bb);
		wr(l, BPF_REG_0, call_args5(l, l->fn_ty, l->fns[i]));
		LLVMBuildBr(l->b, cont);
	}
	/* The verifier proved the register holds a code address. */
	LLVMPositionBuilderAtEnd(l->b, bad);
	LLVMBuildUnreachable(l->b);
	LLVMPositionBuilderAtEnd(l->b, cont);
	return 0;
}

static LLVMBasicBlockRef target_bb(struct lifter *l, size_t idx, int64_t t)
{
	if (t < (int64_t)l->start || t >= (int64_t)l->end || !l->bbs[t - l->start]) {
		fail(l, idx, -EINVAL, "jump target %" PRId64 " is outside function %zu", t, l->fidx);
		return NULL;
	}
	return l->bbs[t - l->start];
}

static int lift_jcond(struct lifter *l, size_t idx, const struct bpf_insn *in,
		      const struct isa_decoded *d)
{
	bool is64 = isa_class(in->code) == BPF_JMP;
	LLVMTypeRef ty = is64 ? l->i64 : l->i32;
	LLVMValueRef a = rd(l, in->dst_reg), b, c;
	LLVMBasicBlockRef yes = target_bb(l, idx, isa_jump_target(in, idx));
	LLVMBasicBlockRef no = target_bb(l, idx, (int64_t)idx + 1);
	LLVMIntPredicate pred;

	if (!yes || !no)
		return l->err;
	b = d->use_imm ? c64(l, (uint64_t)(int64_t)in->imm) : rd(l, in->src_reg);
	if (!is64) {
		a = LLVMBuildTrunc(l->b, a, ty, "");
		b = LLVMBuildTrunc(l->b, b, ty, "");
	}
	switch (isa_op(in->code)) {
	case BPF_JEQ: pred = LLVMIntEQ; break;
	case BPF_JNE: pred = LLVMIntNE; break;
	case BPF_JGT: pred = LLVMIntUGT; break;
	case BPF_JGE: pred = LLVMIntUGE; break;
	case BPF_JLT: pred = LLVMIntULT; break;
	case BPF_JLE: pred = LLVMIntULE; break;
	case BPF_JSGT: pred = LLVMIntSGT; break;
	case BPF_JSGE: pred = LLVMIntSGE; break;
	case BPF_JSLT: pred = LLVMIntSLT; break;
	case BPF_JSLE: pred = LLVMIntSLE; break;
	case BPF_JSET:
		a = LLVMBuildAnd(l->b, a, b, "");
		b = LLVMConstInt(ty, 0, false);
		pred = LLVMIntNE;
		break;
	default:
		return fail(l, idx, -EINVAL, "unknown jump operation 0x%02x", isa_op(in->code));
	}
	c = LLVMBuildICmp(l->b, pred, a, b, "");
	LLVMBuildCondBr(l->b, c, yes, no);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Functions                                                            */
/* ------------------------------------------------------------------ */

static bool is_terminated(struct lifter *l)
{
	LLVMBasicBlockRef bb = LLVMGetInsertBlock(l->b);

	return LLVMGetBasicBlockTerminator(bb) != NULL;
}

/* Marks the first instruction of every basic block of [start, end). */
static int find_blocks(struct lifter *l)
{
	const struct bpf_insn *insns = gpuext_prog__insns(l->prog);
	size_t n = l->end - l->start;
	bool *lead = calloc(n ? n : 1, sizeof(*lead));

	if (!lead)
		return -ENOMEM;
	lead[0] = true;
	for (size_t i = l->start; i < l->end; i += l->dec[i].slots ? l->dec[i].slots : 1) {
		const struct isa_decoded *d = &l->dec[i];
		int64_t t;

		if (d->kind != ISA_JA && d->kind != ISA_JCOND && d->kind != ISA_EXIT)
			continue;
		if (i + 1 < l->end)
			lead[i + 1 - l->start] = true;
		if (d->kind == ISA_EXIT)
			continue;
		t = isa_jump_target(&insns[i], i);
		if (t < (int64_t)l->start || t >= (int64_t)l->end) {
			free(lead);
			return fail(l, i, -EINVAL, "jump target %" PRId64 " is outside function %zu",
				    t, l->fidx);
		}
		lead[t - l->start] = true;
	}
	for (size_t i = 0; i < n; i++) {
		char name[32];

		if (!lead[i])
			continue;
		snprintf(name, sizeof(name), i ? "insn%zu" : "body", l->start + i);
		l->bbs[i] = LLVMAppendBasicBlockInContext(l->ctx, l->fn, name);
	}
	free(lead);
	return 0;
}

static int lift_insn(struct lifter *l, size_t idx)
{
	const struct bpf_insn *in = &gpuext_prog__insns(l->prog)[idx];
	const struct isa_decoded *d = &l->dec[idx];
	LLVMBasicBlockRef t;

	switch (d->kind) {
	case ISA_ALU: return lift_alu(l, idx, in, d);
	case ISA_BSWAP: return lift_bswap(l, in);
	case ISA_LDDW: return lift_lddw(l, idx, in);
	case ISA_LDX: lift_ldx(l, idx, in, d); return 0;
	case ISA_ST:
	case ISA_STX: lift_store(l, idx, in, d); return 0;
	case ISA_ATOMIC: return lift_atomic(l, idx, in, d);
	case ISA_JA:
		t = target_bb(l, idx, isa_jump_target(in, idx));
		if (!t)
			return l->err;
		LLVMBuildBr(l->b, t);
		return 0;
	case ISA_JCOND: return lift_jcond(l, idx, in, d);
	case ISA_CALL: return lift_call(l, idx, in);
	case ISA_CALLX: return lift_callx(l, in);
	case ISA_EXIT:
		LLVMBuildRet(l->b, rd(l, BPF_REG_0));
		return 0;
	}
	return fail(l, idx, -EINVAL, "instruction kind %d", (int)d->kind);
}

static int lift_func(struct lifter *l, size_t fi)
{
	size_t cnt = gpuext_prog__func_cnt(l->prog);
	LLVMBasicBlockRef entry;
	LLVMValueRef idx;
	int err;

	l->fidx = fi;
	l->fn = l->fns[fi];
	l->start = gpuext_prog__func_start(l->prog, fi);
	l->end = fi + 1 < cnt ? gpuext_prog__func_start(l->prog, fi + 1) : gpuext_prog__insn_cnt(l->prog);
	if (l->start >= l->end)
		return fail(l, l->start, -EINVAL, "function %zu is empty", fi);
	l->bbs = calloc(l->end - l->start, sizeof(*l->bbs));
	if (!l->bbs)
		return -ENOMEM;

	/* Frame: registers and the stack, all in the entry block. */
	entry = LLVMAppendBasicBlockInContext(l->ctx, l->fn, "entry");
	LLVMPositionBuilderAtEnd(l->b, entry);
	l->stack = LLVMBuildAlloca(l->b, l->stack_ty, "stack");
	LLVMSetAlignment(l->stack, 16);
	for (unsigned r = 0; r < BPF_REG_10; r++) {
		char name[8];

		snprintf(name, sizeof(name), "r%u.slot", r);
		l->regs[r] = LLVMBuildAlloca(l->b, l->i64, name);
	}
	idx = c64(l, GPUEXT_STACK_SIZE);
	{
		LLVMValueRef end = LLVMBuildGEP2(l->b, l->i8, l->stack, &idx, 1, "stack.end");

		if (l->td->stack_as != l->td->mem_as)
			end = LLVMBuildAddrSpaceCast(l->b, end, l->ptr_mem, "");
		l->fp = LLVMBuildPtrToInt(l->b, end, l->i64, "r10");
	}
	/* r1-r5 are the arguments; the rest start at 0, as in the interpreter. */
	wr(l, BPF_REG_0, c64(l, 0));
	for (unsigned r = 0; r < 5; r++)
		wr(l, BPF_REG_1 + r, LLVMGetParam(l->fn, r));
	for (unsigned r = BPF_REG_6; r <= BPF_REG_9; r++)
		wr(l, r, c64(l, 0));

	err = find_blocks(l);
	if (err)
		goto out;
	LLVMBuildBr(l->b, l->bbs[0]);
	for (size_t i = l->start; i < l->end && !l->err;) {
		const struct isa_decoded *d = &l->dec[i];
		LLVMBasicBlockRef bb = l->bbs[i - l->start];

		if (bb) {
			if (!is_terminated(l))
				LLVMBuildBr(l->b, bb);
			LLVMPositionBuilderAtEnd(l->b, bb);
		}
		err = lift_insn(l, i);
		if (err)
			goto out;
		i += d->slots;
	}
	/* A path running off the end: the verifier rejects it. */
	if (!l->err && !is_terminated(l))
		LLVMBuildUnreachable(l->b);
	err = l->err;
out:
	free(l->bbs);
	l->bbs = NULL;
	return err ? err : l->err;
}

static void func_name(struct lifter *l, size_t fi, char *buf, size_t len)
{
	const char *n = gpuext_prog__func_name(l->prog, fi);
	size_t i;

	i = (size_t)snprintf(buf, len, "%s__", l->entry);
	if (!n || !n[0]) {
		snprintf(buf + (i < len ? i : len), i < len ? len - i : 0, "f%zu", fi);
		return;
	}
	for (; *n && i + 1 < len; n++) {
		char c = *n;

		buf[i++] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || c == '_') ? c : '_';
	}
	buf[i < len ? i : len - 1] = '\0';
}

static int decode_all(struct lifter *l)
{
	const struct bpf_insn *insns = gpuext_prog__insns(l->prog);
	size_t cnt = gpuext_prog__insn_cnt(l->prog);

	l->dec = calloc(cnt ? cnt : 1, sizeof(*l->dec));
	if (!l->dec)
		return -ENOMEM;
	for (size_t i = 0; i < cnt;) {
		char why[128];

		if (isa_decode(insns, cnt, i, &l->dec[i], why, sizeof(why)))
			return fail(l, i, -EINVAL, "invalid instruction: %s", why);
		i += l->dec[i].slots;
	}
	return 0;
}

int gpuext_cg_lift(struct gpuext_prog *prog, LLVMContextRef ctx,
		   const struct gpuext_cg_lift_opts *opts, LLVMModuleRef *out)
{
	struct lifter l = { .prog = prog, .ctx = ctx };
	enum gpuext_cg_target target = GPUEXT_CG_HOST;
	const char *entry_name = NULL;
	size_t nf;
	int err;

	if (!prog || !ctx || !out)
		return GPUEXT_ERR(EINVAL);
	*out = NULL;
	if (opts) {
		if (opts->sz < offsetof(struct gpuext_cg_lift_opts, target) + sizeof(opts->target))
			return GPUEXT_ERR(EINVAL);
		target = opts->target;
		if (opts->sz >= offsetof(struct gpuext_cg_lift_opts, entry_name) + sizeof(const char *))
			entry_name = opts->entry_name;
		if (opts->sz >= offsetof(struct gpuext_cg_lift_opts, mem_align) + sizeof(opts->mem_align))
			l.mem_align = opts->mem_align;
	}
	l.td = gpuext_cg_target_desc(target);
	if (!l.td)
		return GPUEXT_ERR(EINVAL);
	nf = gpuext_prog__func_cnt(prog);
	if (!nf || !gpuext_prog__insn_cnt(prog))
		return GPUEXT_ERR(EINVAL);
	if (entry_name)
		snprintf(l.entry, sizeof(l.entry), "%s", entry_name);
	else
		gpuext_cg_entry_name(prog, l.entry, sizeof(l.entry));

	err = decode_all(&l);
	if (err)
		goto out;

	l.mod = LLVMModuleCreateWithNameInContext(l.entry, ctx);
	LLVMSetTarget(l.mod, l.td->triple);
	LLVMSetDataLayout(l.mod, l.td->datalayout);
	l.b = LLVMCreateBuilderInContext(ctx);
	l.i1 = LLVMInt1TypeInContext(ctx);
	l.i8 = LLVMInt8TypeInContext(ctx);
	l.i16 = LLVMInt16TypeInContext(ctx);
	l.i32 = LLVMInt32TypeInContext(ctx);
	l.i64 = LLVMInt64TypeInContext(ctx);
	l.ptr_mem = LLVMPointerTypeInContext(ctx, l.td->mem_as);
	l.ptr_stack = LLVMPointerTypeInContext(ctx, l.td->stack_as);
	l.stack_ty = LLVMArrayType2(l.i8, GPUEXT_STACK_SIZE);
	{
		LLVMTypeRef a5[5] = { l.i64, l.i64, l.i64, l.i64, l.i64 };

		l.fn_ty = LLVMFunctionType(l.i64, a5, 5, false);
		l.helper_ty = l.fn_ty;
	}

	/* Declare every function first: calls may go forwards. */
	l.fns = calloc(nf, sizeof(*l.fns));
	if (!l.fns) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nf; i++) {
		char name[256];

		func_name(&l, i, name, sizeof(name));
		l.fns[i] = LLVMAddFunction(l.mod, name, l.fn_ty);
		LLVMSetLinkage(l.fns[i], LLVMInternalLinkage);
		add_fn_attr(ctx, l.fns[i], "nounwind");
	}
	for (size_t i = 0; i < nf; i++) {
		err = lift_func(&l, i);
		if (err)
			goto out;
	}

	/* The public entry: i64 @entry(ptr ctx, i64 ctx_len). */
	{
		LLVMTypeRef params[2] = { l.ptr_mem, l.i64 };
		LLVMTypeRef ety = LLVMFunctionType(l.i64, params, 2, false);
		LLVMValueRef ef = LLVMAddFunction(l.mod, l.entry, ety), args[5], r;

		add_fn_attr(ctx, ef, "nounwind");
		LLVMSetValueName2(LLVMGetParam(ef, 0), "ctx", 3);
		LLVMSetValueName2(LLVMGetParam(ef, 1), "ctx_len", 7);
		LLVMPositionBuilderAtEnd(l.b, LLVMAppendBasicBlockInContext(ctx, ef, "entry"));
		args[0] = LLVMBuildPtrToInt(l.b, LLVMGetParam(ef, 0), l.i64, "r1");
		args[1] = LLVMGetParam(ef, 1);
		args[2] = args[3] = args[4] = c64(&l, 0);
		r = LLVMBuildCall2(l.b, l.fn_ty, l.fns[0], args, 5, "r0");
		LLVMBuildRet(l.b, r);
	}
	*out = l.mod;
	l.mod = NULL;
out:
	if (l.b)
		LLVMDisposeBuilder(l.b);
	if (l.mod)
		LLVMDisposeModule(l.mod);
	free(l.fns);
	free(l.dec);
	return err ? GPUEXT_ERR(-err) : 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * eBPF -> PTX: lift (codegen/lift.c) for NVPTX, link the device runtime
 * (ptx_runtime.c) and a test kernel, give every helper/kfunc the module
 * still lacks a stub, internalise all but the kernel and the host-filled
 * globals, O2 for the chosen sm, and print PTX with LLVM's NVPTX backend.
 *
 * Each call uses its own LLVMContext: nothing is shared between calls or
 * threads except LLVM's target registry (gpuext_cg_init_llvm(), once).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include "codegen.h"
#include "internal.h"
#include "ptx/ptx.h"
#include "ptx/ptx_impl.h"
#include "target.h"

#define PTX_TRIPLE (gpuext_cg_target_desc(GPUEXT_CG_PTX)->triple)

static const char *const sm_list[] = { "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90" };

bool gpuext_ptx_sm_supported(const char *sm)
{
	for (size_t i = 0; sm && i < sizeof(sm_list) / sizeof(sm_list[0]); i++)
		if (!strcmp(sm, sm_list[i]))
			return true;
	return false;
}

/* LLVM errors raised as diagnostics (they would otherwise end the process). */
void gpuext_ptx_diag_handler(LLVMDiagnosticInfoRef di, void *user)
{
	struct gpuext_ptx_diag *d = user;
	char *msg;
	size_t len;

	if (LLVMGetDiagInfoSeverity(di) != LLVMDSError)
		return;
	msg = LLVMGetDiagInfoDescription(di);
	len = strlen(d->text);
	if (len < sizeof(d->text) - 1)
		snprintf(d->text + len, sizeof(d->text) - len, "%s%s", len ? "; " : "", msg);
	LLVMDisposeMessage(msg);
	d->error = true;
}

static bool has_prefix(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

/*
 * Gives every declared helper/kfunc without a device implementation a body:
 * kfuncs return -EINVAL (they advise a host driver; on a GPU they mean
 * nothing), unknown helpers -EOPNOTSUPP. Any other undefined function is an
 * error: the PTX would not link.
 */
int gpuext_ptx_define_stubs(struct gpuext_runtime *rt, const char *who, LLVMModuleRef mod,
			     LLVMContextRef ctx)
{
	LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
	int err = 0;

	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
		size_t nlen;
		const char *name = LLVMGetValueName2(f, &nlen);
		LLVMTypeRef rty = LLVMGetReturnType(LLVMGlobalGetValueType(f));
		long long val;

		if (!LLVMIsDeclaration(f) || has_prefix(name, "llvm."))
			continue;
		if (has_prefix(name, "gpuext_rt_kfunc_")) {
			val = -EINVAL;
		} else if (has_prefix(name, "gpuext_rt_helper_")) {
			val = -EOPNOTSUPP;
		} else {
			gpuext_log(rt, GPUEXT_LOG_WARN,
				   "ptx: %s: the lifted module calls %s, which the device "
				   "runtime does not define", who, name);
			err = -ENOSYS;
			continue;
		}
		LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, f, "stub"));
		switch (LLVMGetTypeKind(rty)) {
		case LLVMVoidTypeKind:
			LLVMBuildRetVoid(b);
			break;
		case LLVMIntegerTypeKind:
			LLVMBuildRet(b, LLVMConstInt(rty, (unsigned long long)val, true));
			break;
		case LLVMPointerTypeKind:
			LLVMBuildRet(b, LLVMConstNull(rty));
			break;
		default:
			LLVMBuildUnreachable(b);
			gpuext_log(rt, GPUEXT_LOG_WARN,
				   "ptx: %s: %s returns a type the stub cannot produce", who, name);
			err = -ENOSYS;
		}
		LLVMSetLinkage(f, LLVMInternalLinkage);
	}
	LLVMDisposeBuilder(b);
	return err;
}

static bool is_ptr_copy(LLVMValueRef p)
{
	return LLVMIsAGetElementPtrInst(p) || LLVMIsABitCastInst(p) || LLVMIsAAddrSpaceCastInst(p) ||
	       LLVMIsAIntToPtrInst(p) || LLVMIsAPtrToIntInst(p) || LLVMIsAZExtInst(p) ||
	       LLVMIsATruncInst(p) || LLVMIsASExtInst(p);
}

/*
 * Does @p surely point into an alloca (the eBPF stack)? Looks through
 * address arithmetic (the verifier lets a program add any bounded scalar to
 * a stack pointer), and through a phi or select whose every input does. A
 * phi already on the walk (a pointer stepping through the stack in a loop)
 * does not decide: its other inputs do.
 */
struct phi_walk {
	LLVMValueRef on[32];
	int n;
};

static int is_stack_ptr_at(LLVMValueRef p, int depth, struct phi_walk *w)
{
	/* 1: stack, 0: not, -1: a phi already on the walk (no answer from here) */
	if (!p || depth > 32)
		return 0;
	if (LLVMIsAAllocaInst(p))
		return 1;
	if (is_ptr_copy(p))
		return is_stack_ptr_at(LLVMGetOperand(p, 0), depth + 1, w);
	if (LLVMIsABinaryOperator(p)) {
		LLVMOpcode op = LLVMGetInstructionOpcode(p);

		/* O2 writes an add whose operands share no bits as `or disjoint` */
		if (op == LLVMAdd || op == LLVMOr) {
			int a = is_stack_ptr_at(LLVMGetOperand(p, 0), depth + 1, w);
			int b = is_stack_ptr_at(LLVMGetOperand(p, 1), depth + 1, w);

			return a == 1 || b == 1 ? 1 : a < 0 || b < 0 ? -1 : 0;
		}
		if (op == LLVMSub)
			return is_stack_ptr_at(LLVMGetOperand(p, 0), depth + 1, w);
		return 0;
	}
	if (LLVMIsAPHINode(p)) {
		unsigned n = LLVMCountIncoming(p);
		int seen = 0, r;

		for (int i = 0; i < w->n; i++)
			if (w->on[i] == p)
				return -1;
		if (w->n == (int)(sizeof(w->on) / sizeof(w->on[0])))
			return 0;
		w->on[w->n++] = p;
		r = 0;
		for (unsigned i = 0; i < n; i++) {
			int x = is_stack_ptr_at(LLVMGetIncomingValue(p, i), depth + 1, w);

			if (x == 0) {
				r = 0;
				seen = 0;
				break;
			}
			seen |= x == 1;
			r = 1;
		}
		w->n--;
		return r && seen ? 1 : 0;
	}
	if (LLVMIsASelectInst(p)) {
		int a = is_stack_ptr_at(LLVMGetOperand(p, 1), depth + 1, w);
		int b = is_stack_ptr_at(LLVMGetOperand(p, 2), depth + 1, w);

		return a == 1 && b == 1 ? 1 : 0;
	}
	return 0;
}

static bool is_stack_ptr(LLVMValueRef p)
{
	struct phi_walk w = { .n = 0 };

	return is_stack_ptr_at(p, 0, &w) == 1;
}

/*
 * Could @p point into the eBPF stack? The conservative side of
 * is_stack_ptr(): yes for an alloca, a function argument (a subprogram's
 * pointer), a value loaded from somewhere that might be the stack (a
 * spilled pointer), a call that is not one of the runtime's own, anything
 * unknown or too deep. Only add and sub carry a pointer through arithmetic
 * (the verifier refuses any other operation on a pointer; O2 may spell an
 * add as or/xor), so the other operations end the walk.
 */
static bool may_be_stack_at(LLVMValueRef p, int depth)
{
	if (!p)
		return false;
	if (depth > 32)
		return true;
	if (LLVMIsAAllocaInst(p) || LLVMIsAArgument(p))
		return true;
	if (LLVMIsAGlobalValue(p) || LLVMIsAConstantInt(p) || LLVMIsAConstantPointerNull(p) ||
	    LLVMIsAUndefValue(p))
		return false;
	if (LLVMIsAConstantExpr(p))
		return LLVMGetNumOperands(p) > 0 && may_be_stack_at(LLVMGetOperand(p, 0), depth + 1);
	if (is_ptr_copy(p))
		return may_be_stack_at(LLVMGetOperand(p, 0), depth + 1);
	if (LLVMIsABinaryOperator(p)) {
		LLVMOpcode op = LLVMGetInstructionOpcode(p);

		if (op == LLVMAdd || op == LLVMOr || op == LLVMXor)
			return may_be_stack_at(LLVMGetOperand(p, 0), depth + 1) ||
			       may_be_stack_at(LLVMGetOperand(p, 1), depth + 1);
		if (op == LLVMSub)
			return may_be_stack_at(LLVMGetOperand(p, 0), depth + 1);
		return false;
	}
	if (LLVMIsAPHINode(p)) {
		for (unsigned i = 0; i < LLVMCountIncoming(p); i++)
			if (may_be_stack_at(LLVMGetIncomingValue(p, i), depth + 1))
				return true;
		return false;
	}
	if (LLVMIsASelectInst(p))
		return may_be_stack_at(LLVMGetOperand(p, 1), depth + 1) ||
		       may_be_stack_at(LLVMGetOperand(p, 2), depth + 1);
	if (LLVMIsALoadInst(p))
		return may_be_stack_at(LLVMGetOperand(p, 0), depth + 1);
	if (LLVMIsACallInst(p)) {
		LLVMValueRef callee = LLVMGetCalledValue(p);
		size_t nl = 0;
		const char *name;

		/* the runtime's pointer laundering (mov.b64 $0, $1): the pointer it copies */
		if (LLVMIsAInlineAsm(callee)) {
			for (unsigned i = 0; i < LLVMGetNumArgOperands(p); i++)
				if (may_be_stack_at(LLVMGetOperand(p, i), depth + 1))
					return true;
			return false;
		}
		if (!LLVMIsAFunction(callee))
			return true;
		if (LLVMGetIntrinsicID(callee))
			return false;
		/* helpers return map values and ring records, never the stack */
		name = LLVMGetValueName2(callee, &nl);
		return strncmp(name, "gpuext_rt_", 10) && strncmp(name, "gx.", 3);
	}
	return true;
}

/*
 * PTX has no atomics on .local memory (ptxas refuses `atom.local`, and a
 * generic atom on a local address is undefined), yet eBPF may do atomics
 * on its stack. The stack is private to the thread, so a plain
 * load/op/store has the same result. Returns the number rewritten.
 */
unsigned gpuext_ptx_demote_stack_atomics(LLVMModuleRef mod, LLVMContextRef ctx)
{
	LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
	unsigned n = 0;

	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
		for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb;
		     bb = LLVMGetNextBasicBlock(bb)) {
			LLVMValueRef next;

			for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in; in = next) {
				LLVMOpcode op = LLVMGetInstructionOpcode(in);
				LLVMValueRef p, old, res = NULL;
				LLVMTypeRef ty;

				next = LLVMGetNextInstruction(in);
				if (op != LLVMAtomicCmpXchg && op != LLVMAtomicRMW)
					continue;
				p = LLVMGetOperand(in, 0);
				if (!is_stack_ptr(p))
					continue;
				LLVMPositionBuilderBefore(b, in);
				if (op == LLVMAtomicCmpXchg) {
					LLVMValueRef cmp = LLVMGetOperand(in, 1);
					LLVMValueRef nv = LLVMGetOperand(in, 2);
					LLVMValueRef eq, agg;

					ty = LLVMTypeOf(cmp);
					old = LLVMBuildLoad2(b, ty, p, "");
					LLVMSetAlignment(old, LLVMGetAlignment(in));
					eq = LLVMBuildICmp(b, LLVMIntEQ, old, cmp, "");
					LLVMSetAlignment(LLVMBuildStore(b, LLVMBuildSelect(b, eq, nv, old, ""), p),
							 LLVMGetAlignment(in));
					agg = LLVMGetUndef(LLVMTypeOf(in));
					agg = LLVMBuildInsertValue(b, agg, old, 0, "");
					res = LLVMBuildInsertValue(b, agg, eq, 1, "");
				} else {
					LLVMValueRef v = LLVMGetOperand(in, 1), nv;

					ty = LLVMTypeOf(v);
					old = LLVMBuildLoad2(b, ty, p, "");
					LLVMSetAlignment(old, LLVMGetAlignment(in));
					switch (LLVMGetAtomicRMWBinOp(in)) {
					case LLVMAtomicRMWBinOpXchg: nv = v; break;
					case LLVMAtomicRMWBinOpAdd: nv = LLVMBuildAdd(b, old, v, ""); break;
					case LLVMAtomicRMWBinOpSub: nv = LLVMBuildSub(b, old, v, ""); break;
					case LLVMAtomicRMWBinOpAnd: nv = LLVMBuildAnd(b, old, v, ""); break;
					case LLVMAtomicRMWBinOpOr: nv = LLVMBuildOr(b, old, v, ""); break;
					case LLVMAtomicRMWBinOpXor: nv = LLVMBuildXor(b, old, v, ""); break;
					case LLVMAtomicRMWBinOpUMax:	/* gpuext_atomic_max() */
						nv = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGT, v, old, ""),
								     v, old, "");
						break;
					default:
						/* Not one an eBPF program makes: leave it (ptxas will say so). */
						LLVMInstructionEraseFromParent(old);
						continue;
					}
					LLVMSetAlignment(LLVMBuildStore(b, nv, p), LLVMGetAlignment(in));
					res = old;
				}
				LLVMReplaceAllUsesWith(in, res);
				LLVMInstructionEraseFromParent(in);
				n++;
			}
		}
	}
	LLVMDisposeBuilder(b);
	return n;
}

unsigned gpuext_ptx_global_atomics(LLVMModuleRef mod, LLVMContextRef ctx)
{
	LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
	LLVMTypeRef gptr = LLVMPointerTypeInContext(ctx, 1);
	unsigned n = 0;

	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
		for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb;
		     bb = LLVMGetNextBasicBlock(bb))
			for (LLVMValueRef in = LLVMGetFirstInstruction(bb); in;
			     in = LLVMGetNextInstruction(in)) {
				LLVMOpcode op = LLVMGetInstructionOpcode(in);
				LLVMValueRef p;

				if (op != LLVMAtomicCmpXchg && op != LLVMAtomicRMW)
					continue;
				p = LLVMGetOperand(in, 0);
				if (LLVMGetPointerAddressSpace(LLVMTypeOf(p)) != 0 ||
				    may_be_stack_at(p, 0))
					continue;
				LLVMPositionBuilderBefore(b, in);
				LLVMSetOperand(in, 0, LLVMBuildAddrSpaceCast(b, p, gptr, ""));
				n++;
			}
	LLVMDisposeBuilder(b);
	return n;
}

/* Everything but the kernel and the globals the host writes becomes internal. */
static void internalize(LLVMModuleRef mod)
{
	static const char *const keep[] = { GPUEXT_PTX_KERNEL, "gpuext_rt_maps",
					     "gpuext_rt_prandom_seed", "gpuext_rt_vars" };

	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
		const char *name = LLVMGetValueName(f);

		if (LLVMIsDeclaration(f) || !strcmp(name, GPUEXT_PTX_KERNEL))
			continue;
		LLVMSetLinkage(f, LLVMInternalLinkage);
	}
	for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g)) {
		const char *name = LLVMGetValueName(g);
		bool kept = false;

		if (LLVMIsDeclaration(g))
			continue;
		for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
			kept |= !strcmp(name, keep[i]);
		if (!kept)
			LLVMSetLinkage(g, LLVMInternalLinkage);
	}
}

static int link_runtime(struct gpuext_prog *prog, LLVMContextRef ctx, LLVMModuleRef mod,
			bool per_thread)
{
	bool vars = LLVMGetNamedFunction(mod, "gpuext_rt_var") != NULL;
	LLVMMemoryBufferRef mb;
	LLVMModuleRef rtmod = NULL;
	char *ir = NULL, *msg = NULL;
	int err;

	err = gpuext_ptx_runtime_ir(prog->map_cnt, per_thread, vars, GPUEXT_PTX_PROG_FN, &ir);
	if (err)
		return err;
	mb = LLVMCreateMemoryBufferWithMemoryRangeCopy(ir, strlen(ir), "gpuext_ptx_runtime");
	free(ir);
	if (LLVMParseIRInContext(ctx, mb, &rtmod, &msg)) { /* takes mb */
		gpuext_log(prog->rt, GPUEXT_LOG_WARN, "ptx: device runtime IR does not parse: %s",
			   msg ? msg : "?");
		LLVMDisposeMessage(msg);
		return -EINVAL;
	}
	LLVMSetTarget(rtmod, LLVMGetTarget(mod));
	LLVMSetDataLayout(rtmod, LLVMGetDataLayoutStr(mod));
	if (LLVMLinkModules2(mod, rtmod)) { /* destroys rtmod */
		gpuext_log(prog->rt, GPUEXT_LOG_WARN,
			   "ptx: program %s: linking the device runtime failed", prog->name);
		return -EINVAL;
	}
	return 0;
}

int gpuext_ptx_emit(struct gpuext_prog *prog, const char *sm, bool per_thread, char **text,
		    size_t *len)
{
	GPUEXT_OPTS(gpuext_cg_lift_opts, lo, .target = GPUEXT_CG_PTX,
		    .entry_name = GPUEXT_PTX_PROG_FN);
	struct gpuext_ptx_diag diag = { .text = "", .error = false };
	LLVMTargetMachineRef tm = NULL;
	LLVMMemoryBufferRef out = NULL;
	LLVMModuleRef mod = NULL;
	LLVMContextRef ctx = NULL;
	LLVMTargetDataRef td;
	LLVMTargetRef target;
	char *msg = NULL, *dl;
	int err;

	if (!prog || !text || !len)
		return GPUEXT_ERR(EINVAL);
	*text = NULL;
	*len = 0;
	if (!sm)
		sm = GPUEXT_PTX_DEFAULT_SM;
	if (!gpuext_ptx_sm_supported(sm)) {
		gpuext_log(prog->rt, GPUEXT_LOG_WARN,
			   "ptx: unsupported target '%s' (use sm_75, sm_80, sm_86, sm_87, sm_89 or sm_90)",
			   sm);
		return GPUEXT_ERR(EINVAL);
	}
	gpuext_cg_init_llvm();
	if (LLVMGetTargetFromTriple(PTX_TRIPLE, &target, &msg)) {
		gpuext_log(prog->rt, GPUEXT_LOG_WARN,
			   "ptx: this LLVM has no NVPTX target (%s): install llvm-22 with NVPTX",
			   msg ? msg : "?");
		LLVMDisposeMessage(msg);
		return GPUEXT_ERR(ENOSYS);
	}
	tm = LLVMCreateTargetMachine(target, PTX_TRIPLE, sm, GPUEXT_PTX_ISA_FEATURE,
				     LLVMCodeGenLevelDefault, LLVMRelocDefault,
				     LLVMCodeModelDefault);
	if (!tm)
		return GPUEXT_ERR(ENOMEM);

	ctx = LLVMContextCreate();
	LLVMContextSetDiagnosticHandler(ctx, gpuext_ptx_diag_handler, &diag);
	err = gpuext_cg_lift(prog, ctx, &lo, &mod);
	if (err) {
		gpuext_log(prog->rt, GPUEXT_LOG_WARN, "ptx: program %s: lifting failed (%d)",
			   prog->name, err);
		goto out;
	}
	/* Whatever the lifter put there, the NVPTX machine's layout is the one that holds. */
	td = LLVMCreateTargetDataLayout(tm);
	dl = LLVMCopyStringRepOfTargetData(td);
	LLVMSetDataLayout(mod, dl);
	LLVMSetTarget(mod, PTX_TRIPLE);
	LLVMDisposeMessage(dl);
	LLVMDisposeTargetData(td);

	err = link_runtime(prog, ctx, mod, per_thread);
	if (err)
		goto out;
	{
		char who[96];

		snprintf(who, sizeof(who), "program %s", prog->name);
		err = gpuext_ptx_define_stubs(prog->rt, who, mod, ctx);
	}
	if (err)
		goto out;
	internalize(mod);
	gpuext_ptx_demote_stack_atomics(mod, ctx);
	if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
		gpuext_log(prog->rt, GPUEXT_LOG_WARN, "ptx: program %s: invalid module: %.600s",
			   prog->name, msg ? msg : "?");
		err = -EINVAL;
		goto out;
	}
	LLVMDisposeMessage(msg);
	msg = NULL;
	err = gpuext_cg_optimize(mod, tm);
	if (err) {
		gpuext_log(prog->rt, GPUEXT_LOG_WARN, "ptx: program %s: O2 failed (%d)", prog->name,
			   err);
		goto out;
	}
	/* O2 folds pointer round trips, which can reveal more stack atomics. */
	if (gpuext_ptx_demote_stack_atomics(mod, ctx))
		gpuext_cg_optimize(mod, tm);
	gpuext_ptx_global_atomics(mod, ctx);
	if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &msg, &out) ||
	    diag.error) {
		gpuext_log(prog->rt, GPUEXT_LOG_WARN, "ptx: program %s: NVPTX code generation "
			   "failed: %s%s%s", prog->name, msg ? msg : "", msg && diag.error ? "; " : "",
			   diag.text);
		err = -EINVAL;
		goto out;
	}
	{
		size_t n = LLVMGetBufferSize(out);
		char *t = malloc(n + 1);

		if (!t) {
			err = -ENOMEM;
			goto out;
		}
		memcpy(t, LLVMGetBufferStart(out), n);
		t[n] = '\0';
		*len = strlen(t); /* the buffer may carry a trailing NUL */
		*text = t;
	}
out:
	LLVMDisposeMessage(msg);
	if (out)
		LLVMDisposeMemoryBuffer(out);
	if (mod)
		LLVMDisposeModule(mod);
	if (ctx)
		LLVMContextDispose(ctx);
	LLVMDisposeTargetMachine(tm);
	if (err < 0)
		errno = -err;
	return err;
}

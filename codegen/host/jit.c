// SPDX-License-Identifier: Apache-2.0
/*
 * The host JIT: verify, lift for GPUEXT_CG_HOST (maps and variables become
 * constant addresses), define the runtime functions the lifted module
 * calls, run O2, and hand the module to an ORC LLJIT.
 *
 * Helpers and kfuncs: the lifted code calls gpuext_rt_helper_<id> /
 * gpuext_rt_kfunc_<name>; this file defines each as a one-line IR function
 * that calls jit_call() (by constant address) with a key naming the
 * function, which O2 inlines into the call site. jit_call() finds the
 * registry entry (the key carries its slot, so a lookup is one compare),
 * and calls it with the run's struct gpuext_exec. The exec of the current
 * run is found through a thread-local pointer, since the contract's entry
 * signature has no room for it. A helper that fails ends the run with a
 * longjmp back to gpuext_jit__run(): the JIT frames hold nothing to clean
 * up.
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>

#include "codegen.h"
#include "gpuext/verifier.h"
#include "host/jit.h"
#include "internal.h"
#include "target.h"

/* Owned by the caller of gpuext_jit__new(); lives until gpuext_jit__free(). */
struct gpuext_jit {
	struct gpuext_prog *prog;
	LLVMOrcLLJITRef lljit;
	uint64_t (*entry)(void *ctx, uint64_t ctx_len);
	struct gpuext_jit_stats stats;
};

/* One run in progress on this thread; lives on gpuext_jit__run()'s stack. */
struct jit_run {
	struct gpuext_exec *ex;
	struct gpuext_runtime *rt;
	const void *stack_hi;	/* above every JIT frame of this run */
	jmp_buf jb;
};

static _Thread_local struct jit_run *cur_run;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* key: registry slot << 40 | kind << 32 | id */
static uint64_t jit_call(uint64_t key, uint64_t r1, uint64_t r2, uint64_t r3, uint64_t r4,
			 uint64_t r5)
{
	struct jit_run *run = cur_run;
	struct gpuext_runtime *rt = run->rt;
	size_t slot = (size_t)(key >> 40);
	enum gpuext_func_kind kind = (enum gpuext_func_kind)((key >> 32) & 0xff);
	uint32_t id = (uint32_t)key;
	const struct gpuext_func_proto *p;
	uint64_t ret;

	if (slot < rt->func_cnt && rt->funcs[slot].kind == kind && rt->funcs[slot].id == id)
		p = &rt->funcs[slot];
	else
		p = gpuext_runtime__find_func(rt, kind, id);
	if (!p || !p->fn) {
		gpuext_exec__fail(run->ex, -ENOENT, "%s %u is %s",
				  kind == GPUEXT_FUNC_KFUNC ? "kfunc" : "helper", id,
				  p ? "declared but has no host implementation" : "not registered");
		longjmp(run->jb, 1);
	}
	/* The program's frames lie between this frame and the runner's. */
	gpuext_exec_set_native_stack(run->ex, __builtin_frame_address(0), run->stack_hi);
	ret = p->fn(run->ex, r1, r2, r3, r4, r5);
	if (gpuext_exec_err(run->ex))
		longjmp(run->jb, 1);
	return ret;
}

static int llvm_err(struct gpuext_prog *prog, LLVMErrorRef e, const char *what)
{
	char *msg = LLVMGetErrorMessage(e);

	gpuext_log(gpuext_prog__runtime(prog), GPUEXT_LOG_WARN, "jit: prog '%s': %s: %s",
		   gpuext_prog__name(prog), what, msg);
	LLVMDisposeErrorMessage(msg);
	return -EINVAL;
}

/* Defines every gpuext_rt_helper_<id> / gpuext_rt_kfunc_<name> the module declares. */
static int define_runtime(struct gpuext_prog *prog, LLVMContextRef ctx, LLVMModuleRef mod)
{
	struct gpuext_runtime *rt = gpuext_prog__runtime(prog);
	LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
	LLVMTypeRef a6[6] = { i64, i64, i64, i64, i64, i64 };
	LLVMTypeRef tramp_ty = LLVMFunctionType(i64, a6, 6, false);
	LLVMValueRef tramp = LLVMConstIntToPtr(LLVMConstInt(i64, (uint64_t)(uintptr_t)jit_call, false),
					       LLVMPointerTypeInContext(ctx, 0));
	LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);

	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
		const char *name = LLVMGetValueName(f);
		const struct gpuext_func_proto *p = NULL;
		enum gpuext_func_kind kind;
		uint32_t id;
		LLVMValueRef args[6];

		if (!LLVMIsDeclaration(f) || LLVMGetIntrinsicID(f))
			continue;
		if (!strncmp(name, "gpuext_rt_helper_", 17)) {
			kind = GPUEXT_FUNC_HELPER;
			id = (uint32_t)strtoul(name + 17, NULL, 10);
			p = gpuext_runtime__find_func(rt, kind, id);
		} else if (!strncmp(name, "gpuext_rt_kfunc_", 16)) {
			kind = GPUEXT_FUNC_KFUNC;
			p = gpuext_runtime__find_func_by_name(rt, kind, name + 16);
			if (!p) {
				gpuext_log(rt, GPUEXT_LOG_WARN, "jit: prog '%s': kfunc %s is not registered",
					   gpuext_prog__name(prog), name + 16);
				LLVMDisposeBuilder(b);
				return -ENOENT;
			}
			id = p->id;
		} else {
			gpuext_log(rt, GPUEXT_LOG_WARN, "jit: prog '%s': nothing defines %s on the host",
				   gpuext_prog__name(prog), name);
			LLVMDisposeBuilder(b);
			return -ENOTSUP;
		}
		/* The slot is a hint: a registry that changed since is searched again. */
		size_t slot = p ? (size_t)(p - rt->funcs) : 0xffffff;

		args[0] = LLVMConstInt(i64, (uint64_t)slot << 40 | (uint64_t)kind << 32 | id, false);
		LLVMSetLinkage(f, LLVMInternalLinkage);
		LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, f, "entry"));
		for (unsigned i = 0; i < 5; i++)
			args[1 + i] = LLVMGetParam(f, i);
		LLVMBuildRet(b, LLVMBuildCall2(b, tramp_ty, tramp, args, 6, ""));
	}
	LLVMDisposeBuilder(b);
	return 0;
}

static size_t count_insns(LLVMModuleRef mod)
{
	size_t n = 0;

	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
		for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
			for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
				n++;
	return n;
}

int gpuext_jit__new(struct gpuext_prog *prog, const struct gpuext_jit_opts *opts,
		    struct gpuext_jit **out)
{
	struct gpuext_jit_opts o = { .sz = sizeof(o) };
	GPUEXT_OPTS(gpuext_cg_lift_opts, lo, .target = GPUEXT_CG_HOST, .entry_name = "gpuext_jit_entry");
	LLVMContextRef ctx = NULL;
	LLVMModuleRef mod = NULL;
	LLVMOrcThreadSafeContextRef tsc = NULL;
	LLVMTargetMachineRef tm = NULL;
	LLVMOrcExecutorAddress addr = 0;
	struct gpuext_jit *jit;
	LLVMErrorRef e;
	char why[256];
	uint64_t t;
	int err;

	if (!prog || !out)
		return GPUEXT_ERR(EINVAL);
	*out = NULL;
	if (opts) {
		if (opts->sz < sizeof(size_t))
			return GPUEXT_ERR(EINVAL);
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	}
	jit = calloc(1, sizeof(*jit));
	if (!jit)
		return GPUEXT_ERR(ENOMEM);
	jit->prog = prog;

	t = now_ns();
	if (!o.verified) {
		GPUEXT_OPTS(gpuext_verify_opts, vo, .type = GPUEXT_PROG_HOST, .ctx_size = o.ctx_size);
		GPUEXT_OPTS(gpuext_verify_result, vr);

		err = gpuext_prog__verify(prog, &vo, &vr);
		if (err) {
			if (err == -EACCES)
				gpuext_log(gpuext_prog__runtime(prog), GPUEXT_LOG_WARN,
					   "jit: prog '%s' is not compiled: the verifier rejects it (%s at "
					   "insn %u), and JIT code runs unchecked",
					   gpuext_prog__name(prog), gpuext_rule_name(vr.rule), vr.insn_idx);
			goto fail;
		}
	}
	jit->stats.verify_ns = now_ns() - t;

	t = now_ns();
	gpuext_cg_init_llvm();
	e = LLVMOrcCreateLLJIT(&jit->lljit, NULL);
	if (e) {
		err = llvm_err(prog, e, "creating the ORC JIT");
		goto fail;
	}
	err = gpuext_cg_target_machine(GPUEXT_CG_HOST, NULL, &tm, why, sizeof(why));
	if (err) {
		gpuext_log(gpuext_prog__runtime(prog), GPUEXT_LOG_WARN, "jit: %s", why);
		goto fail;
	}
	jit->stats.setup_ns = now_ns() - t;

	t = now_ns();
	ctx = LLVMContextCreate();
	err = gpuext_cg_lift(prog, ctx, &lo, &mod);
	if (err)
		goto fail;
	LLVMSetTarget(mod, LLVMOrcLLJITGetTripleString(jit->lljit));
	LLVMSetDataLayout(mod, LLVMOrcLLJITGetDataLayoutStr(jit->lljit));
	err = define_runtime(prog, ctx, mod);
	if (err)
		goto fail;
	jit->stats.lift_ns = now_ns() - t;

	t = now_ns();
	err = gpuext_cg_optimize(mod, tm);
	LLVMDisposeTargetMachine(tm);
	tm = NULL;
	if (err)
		goto fail;
	jit->stats.opt_ns = now_ns() - t;
	jit->stats.ir_insns = count_insns(mod);

	t = now_ns();
	tsc = LLVMOrcCreateNewThreadSafeContextFromLLVMContext(ctx);
	ctx = NULL; /* owned by tsc (and the module by the JIT below) */
	e = LLVMOrcLLJITAddLLVMIRModule(jit->lljit, LLVMOrcLLJITGetMainJITDylib(jit->lljit),
					LLVMOrcCreateNewThreadSafeModule(mod, tsc));
	mod = NULL;
	LLVMOrcDisposeThreadSafeContext(tsc);
	if (e) {
		err = llvm_err(prog, e, "adding the module");
		goto fail;
	}
	/* Compiling happens here, on first lookup. */
	e = LLVMOrcLLJITLookup(jit->lljit, &addr, lo.entry_name);
	if (e) {
		err = llvm_err(prog, e, "compiling");
		goto fail;
	}
	jit->stats.compile_ns = now_ns() - t;
	jit->entry = (uint64_t (*)(void *, uint64_t))(uintptr_t)addr;
	*out = jit;
	return 0;
fail:
	if (tm)
		LLVMDisposeTargetMachine(tm);
	if (mod)
		LLVMDisposeModule(mod);
	if (ctx)
		LLVMContextDispose(ctx);
	gpuext_jit__free(jit);
	return GPUEXT_ERR(err < 0 ? -err : EINVAL);
}

/*
 * UBSan's -fsanitize=function checks a signature word in front of every
 * function called through a pointer; machine code from LLVM has none.
 */
#if defined(__clang__)
__attribute__((no_sanitize("function")))
#endif
static uint64_t call_entry(const struct gpuext_jit *jit, void *ctx, uint64_t ctx_len)
{
	return jit->entry(ctx, ctx_len);
}

int gpuext_jit__run(struct gpuext_jit *jit, struct gpuext_run_opts *opts, uint64_t *r0)
{
	struct gpuext_run_opts o = { .sz = sizeof(o) };
	struct jit_run run, *prev;
	volatile uint64_t ret = 0;
	volatile bool done = false;
	struct gpuext_prog *prog;
	int err;

	if (!jit || !r0)
		return GPUEXT_ERR(EINVAL);
	prog = jit->prog;
	if (opts) {
		if (opts->sz < sizeof(size_t))
			return GPUEXT_ERR(EINVAL);
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	}
	o.sz = sizeof(o);
	if (o.cpu >= gpuext_runtime__nr_cpu_slots(prog->rt)) {
		gpuext_log(prog->rt, GPUEXT_LOG_WARN,
			   "prog '%s': cpu %u is out of range (the runtime has %u per-CPU slots)",
			   prog->name, o.cpu, gpuext_runtime__nr_cpu_slots(prog->rt));
		return GPUEXT_ERR(EINVAL);
	}
	run.ex = gpuext_exec_new_native(prog, &o);
	if (!run.ex)
		return GPUEXT_ERR(ENOMEM);
	run.rt = prog->rt;
	run.stack_hi = __builtin_frame_address(0);
	prev = cur_run; /* a helper may run another JIT program on this thread */
	cur_run = &run;
	if (setjmp(run.jb) == 0) {
		ret = call_entry(jit, o.ctx, o.ctx_len);
		done = true;
	}
	cur_run = prev;
	err = gpuext_exec_err(run.ex);
	gpuext_exec_free(run.ex);
	if (opts && opts->sz >= offsetof(struct gpuext_run_opts, insn_executed) + sizeof(uint64_t))
		opts->insn_executed = 0;
	if (!err && !done)
		err = -EFAULT;
	if (err)
		return GPUEXT_ERR(-err);
	*r0 = ret;
	return 0;
}

const struct gpuext_jit_stats *gpuext_jit__stats(const struct gpuext_jit *jit)
{
	return jit ? &jit->stats : NULL;
}

void gpuext_jit__free(struct gpuext_jit *jit)
{
	if (!jit)
		return;
	if (jit->lljit) {
		LLVMErrorRef e = LLVMOrcDisposeLLJIT(jit->lljit);

		if (e)
			llvm_err(jit->prog, e, "tearing down the JIT");
	}
	free(jit);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The lifter and the host JIT against the reference interpreter.
 *
 * Differential: every case of the ISA corpus (tests/isa/\*.isa) that the
 * verifier accepts as a host program (ctx_size = the case's input length)
 * and that expects a result runs twice, each time in a fresh runtime with
 * the same maps and input: once in the interpreter, once JIT-compiled. r0,
 * the input memory after the run and the contents of every array/hash map
 * must be identical. Cases are skipped only for a reason that is printed:
 * the verifier rejects them, they expect an error, or codegen reports it
 * cannot do something (which then must be explained in the summary).
 *
 * Plus: target descriptions agree with LLVM's TargetMachines, every corpus
 * program lifts to a module LLVM's verifier accepts for every target, and
 * the lifted IR is deterministic.
 */
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "asm.h"
#include "codegen.h"
#include "gpuext/verifier.h"
#include "host/jit.h"
#include "internal.h"
#include "target.h"
#include "testlib.h"

static struct test_log tlog;

struct counts {
	unsigned cases, run, agree, differ;
	unsigned skip_rejected, skip_error, skip_setup, skip_codegen;
};

/* One side of a differential run: its own runtime, maps, input and program. */
struct side {
	struct gpuext_runtime *rt;
	struct isa_case_env env;
	bool env_ok;
	struct gpuext_prog *prog;
};

static int side_init(struct side *s, const struct isa_case *tc, char *why, size_t why_len)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = test_log_print, .print_user = &tlog,
		    .prandom_seed = 1);
	int err;

	memset(s, 0, sizeof(*s));
	err = gpuext_runtime__new(&ro, &s->rt);
	if (err) {
		snprintf(why, why_len, "no runtime");
		return err;
	}
	err = isa_case_env_init(&s->env, s->rt, tc, why, why_len);
	if (err)
		return err;
	s->env_ok = true;
	err = gpuext_prog__new(s->rt, tc->name, s->env.insns, s->env.insn_cnt, s->env.maps,
			       s->env.map_cnt, &s->prog);
	if (err)
		snprintf(why, why_len, "gpuext_prog__new: %d", err);
	return err;
}

static void side_fini(struct side *s)
{
	gpuext_prog__free(s->prog);
	if (s->env_ok)
		isa_case_env_fini(&s->env);
	gpuext_runtime__free(s->rt);
}

/* Same keys and values in every array/hash map of both sides? */
static bool maps_equal(const struct side *a, const struct side *b, char *why, size_t why_len)
{
	for (size_t m = 0; m < a->env.map_cnt; m++) {
		struct gpuext_map *ma = a->env.maps[m], *mb = b->env.maps[m];
		uint32_t type = gpuext_map__type(ma);
		uint32_t ks = gpuext_map__key_size(ma);
		size_t vs = (size_t)((gpuext_map__value_size(ma) + 7) & ~7u) *
			    gpuext_runtime__nr_cpu_slots(a->rt);
		uint8_t *k = calloc(1, ks), *va = calloc(1, vs), *vb = calloc(1, vs);
		const void *prev = NULL;
		bool ok = true;

		if (type == BPF_MAP_TYPE_RINGBUF || !k || !va || !vb) {
			free(k); free(va); free(vb);
			continue;
		}
		while (ok && gpuext_map__next_key(ma, prev, k) == 0) {
			int ea = gpuext_map__lookup(ma, k, va), eb = gpuext_map__lookup(mb, k, vb);

			if (ea || eb || memcmp(va, vb, vs)) {
				snprintf(why, why_len, "map '%s' differs (lookup %d/%d)",
					 gpuext_map__name(ma), ea, eb);
				ok = false;
			}
			prev = k;
		}
		free(k); free(va); free(vb);
		if (!ok)
			return false;
	}
	return true;
}

static void run_case(const struct isa_case *tc, struct counts *c)
{
	struct side a, b;
	struct gpuext_jit *jit = NULL;
	uint64_t r0_interp = 0, r0_jit = 0;
	char why[512] = "", where[128];
	int ea, eb, err;

	snprintf(where, sizeof(where), "tests/isa/%s.isa", tc->family);
	c->cases++;
	test_log_clear(&tlog);
	if (tc->error || tc->error_any) {
		c->skip_error++;
		return;
	}
	ea = side_init(&a, tc, why, sizeof(why));
	eb = ea ? ea : side_init(&b, tc, why, sizeof(why));
	if (ea || eb) {
		c->skip_setup++;
		test_fail(where, tc->line, "%s: setup failed: %s", tc->name, why);
		if (!ea)
			side_fini(&b);
		side_fini(&a);
		return;
	}
	{
		GPUEXT_OPTS(gpuext_jit_opts, jo, .ctx_size = (uint32_t)b.env.mem_len);

		err = gpuext_jit__new(b.prog, &jo, &jit);
	}
	if (err == -EACCES) {
		c->skip_rejected++;
		if (getenv("GPUEXT_TEST_VERBOSE"))
			printf("  skip %s/%s: the verifier rejects it\n", tc->family, tc->name);
		goto out;
	}
	if (err) {
		c->skip_codegen++;
		printf("  skip %s/%s: codegen cannot do it (%d): %.300s\n", tc->family, tc->name, err,
		       tlog.buf);
		goto out;
	}
	{
		GPUEXT_OPTS(gpuext_run_opts, oa, .ctx = a.env.mem, .ctx_len = a.env.mem_len,
			    .ctx_writable = true, .insn_limit = 10000000);
		GPUEXT_OPTS(gpuext_run_opts, ob, .ctx = b.env.mem, .ctx_len = b.env.mem_len,
			    .ctx_writable = true);

		ea = gpuext_prog__run(a.prog, &oa, &r0_interp);
		eb = gpuext_jit__run(jit, &ob, &r0_jit);
	}
	c->run++;
	test_checks++;
	if (ea != eb)
		snprintf(why, sizeof(why), "interpreter returns %d, JIT %d: %.300s", ea, eb, tlog.buf);
	else if (r0_interp != r0_jit)
		snprintf(why, sizeof(why), "r0: interpreter 0x%llx, JIT 0x%llx",
			 (unsigned long long)r0_interp, (unsigned long long)r0_jit);
	else if (a.env.mem_len != b.env.mem_len ||
		 (a.env.mem_len && memcmp(a.env.mem, b.env.mem, a.env.mem_len)))
		snprintf(why, sizeof(why), "input memory differs after the run");
	else
		maps_equal(&a, &b, why, sizeof(why));
	if (why[0]) {
		c->differ++;
		test_fail(where, tc->line, "%s: %s", tc->name, why);
	} else {
		c->agree++;
	}
out:
	gpuext_jit__free(jit);
	side_fini(&b);
	side_fini(&a);
}

/* Every corpus program the verifier accepts lifts to valid IR for every target. */
static void lift_all_targets(const struct isa_corpus *corpus)
{
	unsigned lifted[4] = { 0 }, cases = 0;

	for (size_t i = 0; i < corpus->cnt; i++) {
		const struct isa_case *tc = &corpus->cases[i];
		struct side s;
		char why[256];

		if (tc->error || tc->error_any)
			continue;
		if (side_init(&s, tc, why, sizeof(why))) {
			side_fini(&s);
			continue;
		}
		{
			GPUEXT_OPTS(gpuext_verify_opts, vo, .type = GPUEXT_PROG_HOST,
				    .ctx_size = (uint32_t)s.env.mem_len);
			GPUEXT_OPTS(gpuext_verify_result, vr);

			if (gpuext_prog__verify(s.prog, &vo, &vr)) {
				side_fini(&s);
				continue;
			}
		}
		cases++;
		for (int t = GPUEXT_CG_HOST; t <= GPUEXT_CG_SPIRV_VULKAN; t++) {
			GPUEXT_OPTS(gpuext_cg_lift_opts, lo, .target = (enum gpuext_cg_target)t);
			LLVMContextRef ctx = LLVMContextCreate();
			LLVMModuleRef mod = NULL;
			char *msg = NULL;
			int err = gpuext_cg_lift(s.prog, ctx, &lo, &mod);

			/* Maps by runtime id cannot be named on a device: a documented refusal. */
			if (err == -ENOTSUP && t != GPUEXT_CG_HOST) {
				lifted[t]++;
			} else if (err) {
				test_fail(__FILE__, __LINE__, "%s/%s: lift for %s: %d", tc->family, tc->name,
					  gpuext_cg_target_name(t), err);
			} else if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
				test_fail(__FILE__, __LINE__, "%s/%s: %s module is invalid: %.400s",
					  tc->family, tc->name, gpuext_cg_target_name(t), msg);
			} else if (gpuext_cg_optimize(mod, NULL)) {
				test_fail(__FILE__, __LINE__, "%s/%s: O2 failed", tc->family, tc->name);
			} else {
				lifted[t]++;
			}
			test_checks++;
			LLVMDisposeMessage(msg);
			if (mod)
				LLVMDisposeModule(mod);
			LLVMContextDispose(ctx);
		}
		side_fini(&s);
	}
	printf("lift: %u verified cases; valid modules: host %u, ptx %u, spirv %u, spirv-vulkan %u\n",
	       cases, lifted[0], lifted[1], lifted[2], lifted[3]);
	for (int t = 0; t < 4; t++)
		CHECK_EQ_INT(lifted[t], cases);
}

/* Lifting twice gives the same text. */
static void lift_deterministic(const struct isa_corpus *corpus)
{
	for (size_t i = 0; i < corpus->cnt; i++) {
		const struct isa_case *tc = &corpus->cases[i];
		char *text[2] = { NULL, NULL }, why[256];
		struct side s;

		if (strcmp(tc->family, "call") && strcmp(tc->family, "callx"))
			continue;
		if (tc->error || tc->error_any || side_init(&s, tc, why, sizeof(why))) {
			if (!(tc->error || tc->error_any))
				side_fini(&s);
			continue;
		}
		for (int k = 0; k < 2; k++) {
			GPUEXT_OPTS(gpuext_cg_lift_opts, lo, .target = GPUEXT_CG_PTX);
			LLVMContextRef ctx = LLVMContextCreate();
			LLVMModuleRef mod = NULL;

			if (gpuext_cg_lift(s.prog, ctx, &lo, &mod) == 0) {
				text[k] = LLVMPrintModuleToString(mod);
				LLVMDisposeModule(mod);
			}
			LLVMContextDispose(ctx);
		}
		CHECK(text[0] && text[1] && !strcmp(text[0], text[1]));
		LLVMDisposeMessage(text[0]);
		LLVMDisposeMessage(text[1]);
		side_fini(&s);
	}
}

/* ------------------------------------------------------------------ */
/* The JIT's runtime: helpers, failures, the verifier gate              */
/* ------------------------------------------------------------------ */

static uint64_t h_always_fails(struct gpuext_exec *ex, uint64_t a1, uint64_t a2, uint64_t a3,
			       uint64_t a4, uint64_t a5)
{
	(void)a1; (void)a2; (void)a3; (void)a4; (void)a5;
	gpuext_exec__fail(ex, -EPERM, "test helper says no");
	return 0;
}

static uint64_t h_add3(struct gpuext_exec *ex, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
		       uint64_t a5)
{
	(void)a4; (void)a5;
	return a1 + a2 + a3 + gpuext_exec__cpu(ex);
}

/* Builds @src in @rt, JITs it (verified as host) and runs it both ways. */
static void jit_and_interp(struct gpuext_runtime *rt, const char *src, int want_jit_new,
			   int want_err, uint64_t want_r0, uint32_t cpu)
{
	GPUEXT_OPTS(gpuext_asm_opts, ao, .rt = rt);
	GPUEXT_OPTS(gpuext_jit_opts, jo);
	GPUEXT_OPTS(gpuext_run_opts, ro, .cpu = cpu);
	struct bpf_insn *code = NULL;
	struct gpuext_prog *prog = NULL;
	struct gpuext_jit *jit = NULL;
	uint64_t r0i = 0, r0j = 0;
	size_t cnt = 0;
	char err[256];
	int e;

	CHECK_EQ_INT(gpuext_asm(src, &ao, &code, &cnt, err, sizeof(err)), 0);
	CHECK_EQ_INT(gpuext_prog__new(rt, "rt_test", code, cnt, NULL, 0, &prog), 0);
	free(code);
	e = gpuext_jit__new(prog, &jo, &jit);
	CHECK_EQ_INT(e, want_jit_new);
	if (!e) {
		CHECK_EQ_INT(gpuext_prog__run(prog, &ro, &r0i), want_err);
		CHECK_EQ_INT(gpuext_jit__run(jit, &ro, &r0j), want_err);
		if (!want_err) {
			CHECK_EQ_U64(r0i, want_r0);
			CHECK_EQ_U64(r0j, want_r0);
		}
		CHECK_EQ_U64(ro.insn_executed, 0); /* the JIT counts nothing */
	}
	gpuext_jit__free(jit);
	gpuext_prog__free(prog);
}

static void jit_runtime(void)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = test_log_print, .print_user = &tlog,
		    .nr_cpu_slots = 4);
	struct gpuext_func_proto fails = { GPUEXT_FUNC_HELPER, 1000, "test_fails", h_always_fails,
					   GPUEXT_RET_INTEGER, { GPUEXT_ARG_NONE }, 0 };
	struct gpuext_func_proto add3 = { GPUEXT_FUNC_HELPER, 1001, "test_add3", h_add3,
					  GPUEXT_RET_INTEGER,
					  { GPUEXT_ARG_SCALAR, GPUEXT_ARG_SCALAR, GPUEXT_ARG_SCALAR }, 0 };
	struct gpuext_func_proto nofn = { GPUEXT_FUNC_KFUNC, 0, "test_declared_only", NULL,
					  GPUEXT_RET_INTEGER, { GPUEXT_ARG_NONE }, 0 };
	struct gpuext_runtime *rt = NULL;

	CHECK_EQ_INT(gpuext_runtime__new(&ro, &rt), 0);
	if (!rt)
		return;
	CHECK(gpuext_runtime__register_func(rt, &fails) >= 0);
	CHECK(gpuext_runtime__register_func(rt, &add3) >= 0);
	CHECK(gpuext_runtime__register_func(rt, &nofn) >= 0);

	/* A helper's arguments, its result, r6 kept across the call, the exec's cpu. */
	jit_and_interp(rt, "r6 = 0x64\nr1 = 0x1\nr2 = 0x2\nr3 = 0x3\ncall test_add3\n"
			   "r0 += r6\nexit\n", 0, 0, 1 + 2 + 3 + 2 + 100, 2);
	/* A helper that fails ends the run with its error (longjmp out of JIT code). */
	test_log_clear(&tlog);
	jit_and_interp(rt, "r6 = 0x1\ncall test_fails\nr0 = 0x5\nexit\n", 0, -EPERM, 0, 0);
	CHECK_STR_CONTAINS(tlog.buf, "prog 'rt_test' (native code): test helper says no");
	/* A declared kfunc without a host implementation: -ENOENT at the call. */
	jit_and_interp(rt, "call kfunc[test_declared_only]\nexit\n", 0, -ENOENT, 0, 0);
	/* A helper reading the JIT's stack (check_mem on native frames): "%s" of "hi". */
	test_log_clear(&tlog);
	jit_and_interp(rt,
		       "*(u32 *)(r10 - 0x8) = 0x7325\n*(u32 *)(r10 - 0x10) = 0x6968\n"
		       "r1 = r10\nr1 += -0x8\nr2 = 0x3\nr3 = r10\nr3 += -0x10\nr4 = 0x0\nr5 = 0x0\n"
		       "call bpf_trace_printk\nexit\n", 0, 0, 2, 0);
	CHECK_STR_CONTAINS(tlog.buf, "trace_printk: hi\ntrace_printk: hi");
	/* The verifier gate: an out-of-bounds read is never compiled. */
	test_log_clear(&tlog);
	jit_and_interp(rt, "r0 = *(u64 *)(r10 + 0x8)\nexit\n", -EACCES, 0, 0, 0);
	CHECK_STR_CONTAINS(tlog.buf, "the verifier rejects it");
	/* A cpu slot the runtime does not have: the interpreter's error. */
	{
		GPUEXT_OPTS(gpuext_asm_opts, ao, .rt = rt);
		GPUEXT_OPTS(gpuext_run_opts, o, .cpu = 4);
		struct bpf_insn *code = NULL;
		struct gpuext_prog *prog = NULL;
		struct gpuext_jit *jit = NULL;
		size_t cnt = 0;
		uint64_t r0;
		char err[128];

		if (!gpuext_asm("r0 = 0x0\nexit\n", &ao, &code, &cnt, err, sizeof(err)) &&
		    !gpuext_prog__new(rt, "cpu", code, cnt, NULL, 0, &prog) &&
		    !gpuext_jit__new(prog, NULL, &jit))
			CHECK_EQ_INT(gpuext_jit__run(jit, &o, &r0), -EINVAL);
		else
			CHECK(false);
		CHECK_EQ_INT(gpuext_jit__run(jit, NULL, NULL), -EINVAL);
		gpuext_jit__free(jit);
		gpuext_prog__free(prog);
		free(code);
	}
	gpuext_runtime__free(rt);
}

static void target_descs(void)
{
	for (int t = GPUEXT_CG_HOST; t <= GPUEXT_CG_SPIRV_VULKAN; t++) {
		const struct gpuext_cg_target_desc *d = gpuext_cg_target_desc(t);
		LLVMTargetMachineRef tm = NULL;
		char err[256] = "";

		CHECK(d != NULL);
		CHECK_EQ_INT(gpuext_cg_target_by_name(gpuext_cg_target_name(t)), t);
		/* The host TM for the data layout check: the generic CPU is enough. */
		CHECK_EQ_INT(gpuext_cg_target_machine(t, t == GPUEXT_CG_HOST ? "x86-64" : NULL, &tm,
						      err, sizeof(err)), 0);
		if (!tm) {
			printf("target %s: %s\n", d->name, err);
			continue;
		}
		{
			LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
			char *dl = LLVMCopyStringRepOfTargetData(td);

			test_checks++;
			if (strcmp(dl, d->datalayout))
				test_fail(__FILE__, __LINE__, "%s data layout: LLVM says %s, we say %s",
					  d->name, dl, d->datalayout);
			LLVMDisposeMessage(dl);
			LLVMDisposeTargetData(td);
		}
		LLVMDisposeTargetMachine(tm);
	}
	CHECK_EQ_INT(gpuext_cg_target_by_name("nope"), -1);
}

int main(void)
{
	struct isa_corpus corpus = { 0 };
	struct counts c = { 0 };
	char err[512] = "";
	int r;

	target_descs();
	jit_runtime();
	r = isa_corpus_load_dir(&corpus, GPUEXT_TEST_DATA_DIR "/isa", err, sizeof(err));
	CHECK_EQ_INT(r, 0);
	if (r) {
		printf("corpus: %s\n", err);
		return test_done("codegen_jit");
	}
	for (size_t i = 0; i < corpus.cnt; i++)
		run_case(&corpus.cases[i], &c);
	printf("\nISA corpus, interpreter vs host JIT: %u cases\n"
	       "  run %u: agree %u, differ %u\n"
	       "  skipped %u: verifier rejects %u, expects an error %u, codegen cannot %u, setup %u\n\n",
	       c.cases, c.run, c.agree, c.differ,
	       c.skip_rejected + c.skip_error + c.skip_codegen + c.skip_setup, c.skip_rejected,
	       c.skip_error, c.skip_codegen, c.skip_setup);
	CHECK_EQ_INT(c.differ, 0);
	CHECK_EQ_INT(c.skip_codegen, 0);
	CHECK(c.run >= 200);
	lift_all_targets(&corpus);
	lift_deterministic(&corpus);
	isa_corpus_free(&corpus);
	return test_done("codegen_jit");
}

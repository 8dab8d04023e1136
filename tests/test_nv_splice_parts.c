/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The PTX splicer's parts that need no ptxas, so they run wherever the
 * project builds (tests/test_nv_splice.c, which assembles what it splices,
 * is skipped without the CUDA toolkit): the hoister (ptx_hoist.c), the
 * inliner (ptx_inline.c), and malformed modules, each refused with -EINVAL
 * and the line and reason, including what the splicer's fuzzer
 * (tests/fuzz/fuzz_splice.c) found.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nv_impl.h"
#include "nvprobe.h"
#include "ptx_splice.h"
#include "ptx_text.h"
#include "ptx_twin.h"
#include "testlib.h"
#include "nv/splice_test.h"

static void expect_einval(const char *what, const char *ptx, const char *msg)
{
	struct gx_pack pk = { .events = 0xf, .ptx = (char *)hand_probes,
			      .ptx_len = sizeof(hand_probes) - 1 };
	char err[256] = "", *out = NULL;
	size_t olen = 5;

	CHECK_EQ_INT(gx_ptx_splice(ptx, strlen(ptx), &pk, &out, &olen, NULL, err, sizeof(err)),
		     -EINVAL);
	CHECK(!out && olen == 0);
	test_checks++;
	if (strncmp(err, msg, strlen(msg)))
		test_fail(__FILE__, __LINE__, "%s: error \"%s\", want it to start \"%s\"", what, err,
			  msg);
}

/* The inliner with a hoisting plan of @b for the site @sfx: the site's text and the moved code. */
static char *inline_hoisted(const struct gx_probe_body *b, const char *sfx, char **h)
{
	static const char *const args[GX_PROBE_NARGS] = { "%k", "%g", "%a", "%v", "%s" };
	static const unsigned bits[GX_PROBE_NARGS] = { 64, 64, 64, 64, 32 };
	struct gx_hoist_plan *plan = gx_hoist_plan_make(b, false);
	char *t;

	*h = NULL;
	CHECK(plan != NULL);
	t = gx_probe_body_inline(b, args, bits, sfx, plan, h);
	gx_hoist_plan_free(plan);
	return t;
}

/* inline_hoisted() of the probe function gpuext_probe_exit defined in @src. */
static char *hoist_src(const char *src, size_t len, const char *sfx, char **h)
{
	struct gx_probe_body b;
	char err[200], *t = NULL;

	*h = NULL;
	CHECK_EQ_INT(gx_probe_body_parse(src, len, "gpuext_probe_exit", &b, err, sizeof(err)), 0);
	if (b.text)
		t = inline_hoisted(&b, sfx, h);
	gx_probe_body_free(&b);
	return t;
}

/* The same with a plan for the site's own start (@at_site) or the function's. */
static char *hoist_src_at(const char *src, bool at_site, char **h)
{
	static const char *const args[GX_PROBE_NARGS] = { "%k", "%g", "%a", "%v", "%s" };
	static const unsigned bits[GX_PROBE_NARGS] = { 64, 64, 64, 64, 32 };
	struct gx_hoist_plan *plan;
	struct gx_probe_body b;
	char err[200], *t = NULL;

	*h = NULL;
	CHECK_EQ_INT(gx_probe_body_parse(src, strlen(src), "gpuext_probe_exit", &b, err,
					 sizeof(err)), 0);
	if (!b.text)
		return NULL;
	plan = gx_hoist_plan_make(&b, at_site);
	CHECK(plan != NULL);
	if (plan)
		t = gx_probe_body_inline(&b, args, bits, "L", plan, h);
	gx_hoist_plan_free(plan);
	gx_probe_body_free(&b);
	return t;
}

/*
 * An exit's election written as the probes' wrapper writes it for a site
 * with no warp guard (codegen/ptx/ptx_probe.c): lane 0 is the linear thread
 * index mod 32. At the site's start that passes like a branch on %laneid,
 * so what follows it moves ahead; a mask of anything but a thread index, or
 * an index not masked (warp_id != 0, which skips whole warps), ends the
 * region; so does the election at the function's start.
 */
static void test_hoist_lane_index(void)
{
	static const char fmt[] =
		".func gpuext_probe_exit(\n\t.param .b64 p_0\n)\n{\n"
		"\t.reg .pred \t%%p<3>;\n\t.reg .b32 \t%%r<12>;\n\t.reg .b64 \t%%rd<4>;\n"
		"\tld.param.b64 \t%%rd1, [p_0];\n"
		"\tactivemask.b32 \t%%r10;\n"
		"\tmov.u32 \t%%r1, %%tid.z;\n\tmov.u32 \t%%r2, %%ntid.y;\n"
		"\tmov.u32 \t%%r3, %%tid.y;\n\tmov.u32 \t%%r4, %%ntid.x;\n"
		"\tmov.u32 \t%%r5, %%%s;\n"
		"\tmad.lo.s32 \t%%r6, %%r1, %%r2, %%r3;\n"
		"\tmad.lo.s32 \t%%r7, %%r6, %%r4, %%r5;\n"
		"\t%s.b32 \t%%r8, %%r7, %s;\n"
		"\tsetp.ne.b32 \t%%p1, %%r8, 0;\n"
		"\t@%%p1 bra \t$L__BB0_2;\n"
		"\tmov.u32 \t%%r9, %%ctaid.x;\n\tmul.wide.u32 \t%%rd2, %%r9, 8;\n"
		"\tadd.s64 \t%%rd3, %%rd1, %%rd2;\n"
		"\tst.global.u64 \t[%%rd3], %%rd2;\n"
		"$L__BB0_2:\n\tret;\n}\n";
	static const struct {
		const char *x, *op, *imm;
		bool at_site, passes;
	} c[] = {
		{ "tid.x", "and", "31", true, true },	/* the wrapper's election */
		{ "tid.x", "and", "31", false, false },	/* at the function's start: no */
		{ "ctaid.y", "and", "31", true, false },	/* not a thread index */
		{ "tid.x", "shr", "5", true, false },	/* warp_id != 0 */
		{ "tid.x", "and", "15", true, false },	/* not mod 32 */
		{ "tid.y", "and", "31", true, false },	/* tid.y where tid.x goes: not the index */
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char src[2048], *t, *h;
		unsigned f0 = test_failures;

		snprintf(src, sizeof(src), fmt, c[i].x, c[i].op, c[i].imm);
		t = hoist_src_at(src, c[i].at_site, &h);
		CHECK(t != NULL && h != NULL);
		if (!t || !h) {
			free(t);
			free(h);
			continue;
		}
		/* before the branch: moves at a site; the election itself always */
		if (c[i].at_site)
			CHECK_STR_CONTAINS(h, "setp.ne.b32 \t%L_h_p1, %L_h_r8, 0;");
		if (c[i].passes) {
			CHECK_STR_CONTAINS(h, "mov.u32 \t%L_h_r9, %ctaid.x;");
			CHECK_STR_CONTAINS(h, "mul.wide.u32 \t%L_h_rd2, %L_h_r9, 8;");
			CHECK_STR_CONTAINS(t, "add.s64 \t%rd3, %rd1, %L_h_rd2;");
			CHECK(!strstr(t, "%ctaid.x"));
		} else {
			CHECK_STR_CONTAINS(t, "mov.u32 \t%r9, %ctaid.x;");
			CHECK(!strstr(h, "%ctaid.x") && !strstr(h, "mul.wide"));
		}
		if (test_failures != f0)
			fprintf(stderr, "  case %zu (%s %s %s, %s)\n", i, c[i].x, c[i].op, c[i].imm,
				c[i].at_site ? "site" : "function");
		free(t);
		free(h);
	}
	/*
	 * Other arithmetic of %tid masked with 31 is no lane: (tid.y << 2) & 31 < 4
	 * passes in whole warps only (warp 0 of a 32 x 8 block), and what follows
	 * it would run in the warps it skips. Nor is the index once written again.
	 */
	{
		static const char shl[] =
			".func gpuext_probe_exit(\n\t.param .b64 p_0\n)\n{\n"
			"\t.reg .pred \t%p<3>;\n\t.reg .b32 \t%r<12>;\n\t.reg .b64 \t%rd<4>;\n"
			"\tld.param.b64 \t%rd1, [p_0];\n"
			"\tmov.u32 \t%r1, %tid.y;\n\tshl.b32 \t%r2, %r1, 2;\n"
			"\tand.b32 \t%r8, %r2, 31;\n\tsetp.lt.u32 \t%p1, %r8, 4;\n"
			"\t@%p1 bra \t$L__BB0_2;\n"
			"\tmov.u32 \t%r9, %ctaid.x;\n\tst.global.u32 \t[%rd1], %r9;\n"
			"$L__BB0_2:\n\tret;\n}\n";
		static const char twice[] =
			".func gpuext_probe_exit(\n\t.param .b64 p_0\n)\n{\n"
			"\t.reg .pred \t%p<3>;\n\t.reg .b32 \t%r<12>;\n\t.reg .b64 \t%rd<4>;\n"
			"\tld.param.b64 \t%rd1, [p_0];\n"
			"\tmov.u32 \t%r1, %tid.z;\n\tmov.u32 \t%r2, %ntid.y;\n"
			"\tmov.u32 \t%r3, %tid.y;\n\tmov.u32 \t%r4, %ntid.x;\n"
			"\tmov.u32 \t%r5, %tid.x;\n"
			"\tmad.lo.s32 \t%r6, %r1, %r2, %r3;\n"
			"\tmad.lo.s32 \t%r7, %r6, %r4, %r5;\n"
			"\tadd.s32 \t%r7, %r7, 1;\n"
			"\tand.b32 \t%r8, %r7, 31;\n\tsetp.ne.b32 \t%p1, %r8, 0;\n"
			"\t@%p1 bra \t$L__BB0_2;\n"
			"\tmov.u32 \t%r9, %ctaid.x;\n\tst.global.u32 \t[%rd1], %r9;\n"
			"$L__BB0_2:\n\tret;\n}\n";
		const char *src[2] = { shl, twice };

		for (int i = 0; i < 2; i++) {
			char *t, *h;

			t = hoist_src_at(src[i], true, &h);
			CHECK(t && h && strstr(t, "mov.u32 \t%r9, %ctaid.x;") && !strstr(h, "%ctaid.x"));
			free(t);
			free(h);
		}
	}
}

/*
 * Hoisting: what depends only on the thread's place and on constants leaves
 * the site (renamed, declared, in body order), the rest stays: a lane mask,
 * a timer, %smid (volatile), a guarded line, a register written twice, a
 * global load, inline assembly but a register copy, a carry, two
 * statements on a line, a symbol of the body's own. Constants are copied,
 * not moved, and what stays live is bounded (GX_HOIST_LIVE_MAX).
 */
static void test_hoist(void)
{
	static const char probes[] =
		".visible .const .align 8 .b8 gpuext_rt_maps[40];\n"
		".func gpuext_probe_exit(\n\t.param .b64 p_0,\n\t.param .b64 p_1,\n"
		"\t.param .b64 p_2,\n\t.param .b64 p_3,\n\t.param .b32 p_4\n)\n{\n"
		"\t.reg .pred \t%p<4>;\n\t.reg .b32 \t%r<24>;\n\t.reg .b64 \t%rd<12>;\n"
		"\t.local .align 4 .b8 loc[8];\n"
		"\tld.param.b64 \t%rd1, [p_0];\n"
		"\tactivemask.b32 \t%r1;\n"			/* stays */
		"\tmov.u32 \t%r2, %lanemask_lt;\n"		/* stays: a lane mask */
		"\tand.b32 \t%r11, %r1, %r2;\n"
		"\tsetp.ne.b32 \t%p1, %r11, 0;\n"		/* the leader election */
		"\t@%p1 bra \t$L__BB0_2;\n"			/* the region goes on past it */
		"\tmov.u32 \t%r3, %ntid.x;\n"			/* moves */
		"\tmov.u32 \t%r4, %tid.y;\n"			/* moves */
		"\tmad.lo.s32 \t%r5, %r4, %r3, 7;\n"		/* moves */
		"\tmov.b64 \t%rd7, gpuext_rt_maps;\n"		/* a constant: copied */
		"\t// begin inline asm\n\tmov.b64 %rd2, %rd7;\n\t// end inline asm\n"	/* copied */
		"\tld.const.u64 \t%rd3, [%rd2+8];\n"		/* a constant: copied */
		"\tmul.wide.u32 \t%rd4, %r5, 8;\n"		/* moves */
		"\tadd.s64 \t%rd5, %rd3, %rd4;\n"		/* moves: live at the site */
		"\tmov.u64 \t%rd6, %globaltimer;\n"		/* stays: a timer */
		"\tmov.u32 \t%r12, %smid;\n"			/* stays: volatile */
		"\t@%p1 add.s32 \t%r6, %r5, 1;\n"		/* stays: guarded */
		"\tadd.s32 \t%r7, %r5, 2;\n"			/* stays: %r7 written twice */
		"\tadd.s32 \t%r7, %r7, 3;\n"
		"\tld.global.u32 \t%r8, [%rd5];\n"		/* stays: a global load */
		"\tadd.s32 \t%r9, %r8, 1;\n"			/* stays: reads it */
		"\t// begin inline asm\n\t{\n\t.reg .b32 t;\n\tmov.u32 t, %ctaid.x;\n"
		"\tmov.u32 %r10, t;\n\t}\n\t// end inline asm\n"	/* stays: asm */
		"\tadd.cc.u32 \t%r13, %r3, 1;\n\taddc.u32 \t%r14, %r4, 0;\n"	/* stay: a carry */
		"\tmov.u32 \t%r15, %ctaid.y; mov.u32 \t%r16, %ctaid.z;\n"	/* stays: two on a line */
		"\tmov.u64 \t%rd8, loc;\n"			/* stays: the body's own symbol */
		"\tst.global.u64 \t[%rd5], %rd6;\n"
		"\tst.global.v4.u32 \t[%rd5+8], {%r10, %r9, %r7, %r6};\n"
		"\tst.global.v4.u32 \t[%rd5+24], {%r12, %r13, %r14, %r15};\n"
		"\tst.global.u32 \t[%rd5+40], %r16;\n"
		"\tst.global.u64 \t[%rd5+48], %rd1;\n"
		"\tst.global.u64 \t[%rd5+56], %rd8;\n"
		"\tsetp.ne.u32 \t%p3, %r4, 0;\n"		/* stays: %p3 written twice */
		"\tbar.red.or.pred \t%p3, 0, %p3;\n"	/* writes %p3 */
		"\tselp.u32 \t%r17, 1, 0, %p3;\n"		/* stays: reads the barrier's %p3 */
		"\tst.global.u32 \t[%rd5+64], %r17;\n"
		"$L__BB0_2:\n\tbar.warp.sync \t%r1;\n"	/* writes nothing: the election stands */
		"\tret;\n}\n";
	struct gx_probe_body b;
	char err[200], *t, *h = NULL;

	CHECK_EQ_INT(gx_probe_body_parse(probes, sizeof(probes) - 1, "gpuext_probe_exit", &b, err,
					 sizeof(err)), 0);
	t = inline_hoisted(&b, "S1", &h);
	CHECK(t != NULL && h != NULL);
	if (t && h) {
		const char *a;

		/* moved: declared, renamed, each after what it reads */
		CHECK_STR_CONTAINS(h, "\t.reg .b32 %S1_h_r5;\n");
		CHECK_STR_CONTAINS(h, "\t.reg .b64 %S1_h_rd5;\n");
		a = strstr(h, "mov.u32 \t%S1_h_r3, %ntid.x;");
		CHECK(a && strstr(h, "mov.u32 \t%S1_h_r4, %tid.y;") &&
		      strstr(h, "mad.lo.s32 \t%S1_h_r5, %S1_h_r4, %S1_h_r3, 7;") > a);
		CHECK(strstr(h, "add.s64 \t%S1_h_rd5, %S1_h_rd3, %S1_h_rd4;") >
		      strstr(h, "ld.const.u64 \t%S1_h_rd3, [%S1_h_rd2+8];"));
		CHECK_STR_CONTAINS(h, "mov.b64 %S1_h_rd2, %S1_h_rd7;");
		/* gone from the site, which reads the moved value by its new name */
		CHECK(!strstr(t, "%ntid.x") && !strstr(t, "%tid.y") && !strstr(t, "mad.lo"));
		CHECK_STR_CONTAINS(t, "ld.global.u32 \t%r8, [%S1_h_rd5];");
		/* constants: the site keeps its own */
		CHECK_STR_CONTAINS(t, "ld.const.u64 \t%rd3, [%rd2+8];");
		CHECK_STR_CONTAINS(t, "mov.b64 %rd2, %rd7;");
		/* stays */
		CHECK_STR_CONTAINS(t, "activemask.b32 \t%r1;");
		CHECK_STR_CONTAINS(t, "mov.u32 \t%r2, %lanemask_lt;");
		CHECK_STR_CONTAINS(t, "mov.u64 \t%rd6, %globaltimer;");
		CHECK_STR_CONTAINS(t, "mov.u32 \t%r12, %smid;");
		CHECK_STR_CONTAINS(t, "@%p1 add.s32 \t%r6, %S1_h_r5, 1;");
		CHECK_STR_CONTAINS(t, "add.s32 \t%r7, %S1_h_r5, 2;");
		CHECK_STR_CONTAINS(t, "add.s32 \t%r9, %r8, 1;");
		CHECK_STR_CONTAINS(t, "mov.u32 t, %ctaid.x;");
		CHECK_STR_CONTAINS(t, "mov.u32 %r10, t;");
		CHECK_STR_CONTAINS(t, "add.cc.u32 \t%r13, %S1_h_r3, 1;");
		CHECK_STR_CONTAINS(t, "mov.u32 \t%r15, %ctaid.y; mov.u32 \t%r16, %ctaid.z;");
		CHECK_STR_CONTAINS(t, "mov.u64 \t%rd8, loc;");
		CHECK_STR_CONTAINS(t, "mov.b64 %rd1, %k;");
		CHECK_STR_CONTAINS(t, "setp.ne.u32 \t%p3, %S1_h_r4, 0;");
		CHECK_STR_CONTAINS(t, "selp.u32 \t%r17, 1, 0, %p3;");
		CHECK(!strstr(h, "lanemask") && !strstr(h, "globaltimer") && !strstr(h, "%smid") &&
		      !strstr(h, "ld.global") && !strstr(h, "%r7") && !strstr(h, "%p1") &&
		      !strstr(h, "t, ") && !strstr(h, ".cc") && !strstr(h, "%ctaid") &&
		      !strstr(h, "loc"));
	}
	free(t);
	free(h);
	gx_probe_body_free(&b);
	/*
	 * A branch on activemask alone (a vote: the same for the whole warp) ends
	 * the region like any other; so does one on %laneid. Constants nothing
	 * moved reads are not written at the start at all.
	 */
	{
		static const char vote[] =
			".func gpuext_probe_exit(\n\t.param .b64 p_0\n)\n{\n"
			"\t.reg .pred \t%p<3>;\n\t.reg .b32 \t%r<6>;\n\t.reg .b64 \t%rd<4>;\n"
			"\tld.param.b64 \t%rd1, [p_0];\n"
			"\tmov.b64 \t%rd2, gpuext_rt_maps;\n"	/* a constant nothing moved reads */
			"\tld.const.u64 \t%rd3, [%rd2];\n"
			"\tactivemask.b32 \t%r1;\n\tsetp.ne.b32 \t%p1, %r1, -1;\n"
			"\t@%p1 bra \t$L__BB0_2;\n"
			"\tmov.u32 \t%r2, %ctaid.x;\n"
			"\tst.global.u32 \t[%rd3], %r2;\n"
			"$L__BB0_2:\n\tmov.u32 \t%r3, %laneid;\n\tsetp.lt.u32 \t%p2, %r3, 4;\n"
			"\t@%p2 bra \t$L__BB0_3;\n\tmov.u32 \t%r4, %ctaid.y;\n"
			"\tst.global.u32 \t[%rd1], %r4;\n$L__BB0_3:\n\tret;\n}\n";

		t = hoist_src(vote, sizeof(vote) - 1, "S5", &h);
		CHECK(t && h && !strcmp(h, "") && strstr(t, "mov.u32 \t%r2, %ctaid.x;") &&
		      strstr(t, "mov.u32 \t%r4, %ctaid.y;") &&
		      strstr(t, "ld.const.u64 \t%rd3, [%rd2];"));
		free(t);
		free(h);
	}
	/*
	 * A register read on a line above the one that writes it (a rotated
	 * loop, say; in SSA the one write still comes first on every path):
	 * the moved lines go out in an order where each follows its sources.
	 */
	{
		static const char loop[] =
			".func gpuext_probe_exit(\n\t.param .b64 p_0\n)\n{\n"
			"\t.reg .b32 \t%r<4>;\n\t.reg .b64 \t%rd<3>;\n"
			"\tld.param.b64 \t%rd1, [p_0];\n"
			"\tmad.lo.s32 \t%r3, %r1, %r2, 7;\n"
			"\tmov.u32 \t%r1, %ntid.x;\n\tmov.u32 \t%r2, %tid.y;\n"
			"\tst.global.u32 \t[%rd1], %r3;\n\tret;\n}\n";

		t = hoist_src(loop, sizeof(loop) - 1, "S4", &h);
		CHECK(t && h && strstr(h, "mov.u32 \t%S4_h_r1, %ntid.x;") &&
		      strstr(h, "mov.u32 \t%S4_h_r2, %tid.y;") &&
		      strstr(h, "mad.lo.s32 \t%S4_h_r3, %S4_h_r1, %S4_h_r2, 7;") >
		      strstr(h, "mov.u32 \t%S4_h_r2, %tid.y;") &&
		      strstr(t, "st.global.u32 \t[%rd1], %S4_h_r3;") && !strstr(t, "%ntid.x"));
		free(t);
		free(h);
	}
	/*
	 * A branch that can skip whole warps (here on %tid.y) ends what may
	 * move: what follows it runs in few warps, and would run in all of them.
	 */
	{
		static const char skip[] =
			".func gpuext_probe_exit(\n\t.param .b64 p_0\n)\n{\n"
			"\t.reg .pred \t%p<3>;\n\t.reg .b32 \t%r<9>;\n\t.reg .b64 \t%rd<4>;\n"
			"\tld.param.b64 \t%rd1, [p_0];\n"
			"\tmov.u32 \t%r1, %tid.y;\n\tsetp.ne.u32 \t%p1, %r1, 0;\n"
			"\tmov.u32 \t%r2, %ctaid.x;\n"
			"\t@%p1 bra \t$L__BB0_2;\n"
			"\tmov.u32 \t%r3, %ctaid.y;\n\tmul.wide.u32 \t%rd2, %r3, 8;\n"
			"\tst.global.u64 \t[%rd1], %rd2;\n\tst.global.u32 \t[%rd1+8], %r2;\n"
			"$L__BB0_2:\n\tret;\n}\n";

		t = hoist_src(skip, sizeof(skip) - 1, "S3", &h);
		CHECK(t && h);
		if (t && h) {
			/* before the branch: moves; after it: stays */
			CHECK_STR_CONTAINS(h, "mov.u32 \t%S3_h_r2, %ctaid.x;");
			CHECK_STR_CONTAINS(t, "mov.u32 \t%r3, %ctaid.y;");
			CHECK_STR_CONTAINS(t, "mul.wide.u32 \t%rd2, %r3, 8;");
			CHECK(!strstr(h, "%ctaid.y") && !strstr(h, "mul.wide"));
		}
		free(t);
		free(h);
	}
	/*
	 * Ten 64-bit values of the thread's place, each stored: 20 registers
	 * would stay live from the start; the site keeps enough of them that
	 * what it reads of the moved ones fits GX_HOIST_LIVE_MAX.
	 */
	{
		static const char *const sr[10] = { "%tid.x", "%tid.y", "%tid.z", "%ntid.x",
			"%ntid.y", "%ntid.z", "%ctaid.x", "%ctaid.y", "%ctaid.z", "%nctaid.x" };
		char body[4096], name[16];
		size_t o;
		unsigned units = 0, moved = 0;

		o = (size_t)snprintf(body, sizeof(body), "%s",
				     ".func gpuext_probe_exit(\n\t.param .b64 p_0\n)\n{\n"
				     "\t.reg .b32 \t%r<12>;\n\t.reg .b64 \t%rd<24>;\n"
				     "\tld.param.b64 \t%rd1, [p_0];\n");
		for (int i = 0; i < 10; i++)
			o += (size_t)snprintf(body + o, sizeof(body) - o,
					      "\tmov.u32 \t%%r%d, %s;\n\tmul.wide.u32 \t%%rd%d, %%r%d, 3;\n",
					      i + 1, sr[i], i + 2, i + 1);
		for (int i = 0; i < 10; i++)
			o += (size_t)snprintf(body + o, sizeof(body) - o,
					      "\tst.global.u64 \t[%%rd1+%d], %%rd%d;\n", 8 * i, i + 2);
		snprintf(body + o, sizeof(body) - o, "\tret;\n}\n");
		t = hoist_src(body, strlen(body), "S2", &h);
		CHECK(t != NULL && h != NULL);
		for (int i = 0; t && h && i < 10; i++) {
			snprintf(name, sizeof(name), "%%S2_h_rd%d]", i + 2);
			name[strlen(name) - 1] = ';';	/* "%S2_h_rdN;" as the site's store reads it */
			if (strstr(t, name)) {
				units += 2;
				moved++;
			}
		}
		CHECK(units <= GX_HOIST_LIVE_MAX);
		CHECK_EQ_U64(moved, GX_HOIST_LIVE_MAX / 2);	/* as many as fit */
		free(t);
		free(h);
	}
}

/* The inliner on a body with two exits, a label and its parameters read late. */
static void test_inline(void)
{
	static const char probes[] =
		".visible .global .align 4 .u32 g;\n"
		".func gpuext_probe_exit(\n\t.param .b64 p_0,\n\t.param .b64 p_1,\n"
		"\t.param .b64 p_2,\n\t.param .b64 p_3,\n\t.param .b32 p_4\n)\n{\n"
		"\t.reg .pred \t%p<2>;\n\t.reg .b32 \t%r<3>;\n\t.reg .b64 \t%rd<2>;\n"
		"\tld.param.b32 \t%r1, [p_4];\n\tsetp.eq.s32 \t%p1, %r1, 0;\n"
		"\t@%p1 bra \t$L__BB0_2;\n\tld.param.b64 \t%rd1, [p_2];\n"
		"\tst.global.u32 \t[g], %r1;\n\tret;\n$L__BB0_2:\n\tret;\n}\n";
	static const char *const args[GX_PROBE_NARGS] = { "%k", "%g", "%a", "%v", "%s" };
	static const unsigned bits[GX_PROBE_NARGS] = { 64, 64, 64, 64, 32 };
	struct gx_probe_body b;
	char err[200];
	char *t;

	CHECK_EQ_INT(gx_probe_body_parse(probes, sizeof(probes) - 1, "gpuext_probe_exit", &b, err,
					 sizeof(err)), 0);
	CHECK_EQ_INT(b.nparams, 5);
	CHECK(!strcmp(b.params[0], "p_0") && !strcmp(b.params[4], "p_4"));
	t = gx_probe_body_inline(&b, args, bits, "X7", NULL, NULL);
	CHECK(t != NULL);
	if (t) {
		static const char want[] = "\t{\t// gpuext: gpuext_probe_exit inlined (hal/nvidia/ptx_inline.c)\n"
			     "\n\t.reg .pred \t%p<2>;\n\t.reg .b32 \t%r<3>;\n\t.reg .b64 \t%rd<2>;\n"
			     "\tmov.b32 %r1, %s;\n\tsetp.eq.s32 \t%p1, %r1, 0;\n"
			     "\t@%p1 bra \t$L__BB0_2_X7;\n\tmov.b64 %rd1, %a;\n"
			     "\tst.global.u32 \t[g], %r1;\n\tbra $X7_end;\n$L__BB0_2_X7:\n"
			     "\tbra $X7_end;\n$X7_end:\n\t}\n";

		test_checks++;
		if (strcmp(t, want))
			test_fail(__FILE__, __LINE__, "inlined body:\n%s\nwant:\n%s", t, want);
		free(t);
	}
	gx_probe_body_free(&b);
	/* A declaration only, or no function at all: an error naming it. */
	CHECK_EQ_INT(gx_probe_body_parse(".func gpuext_probe_load(.param .b64 a);\n", 40,
					 "gpuext_probe_load", &b, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "no definition of gpuext_probe_load");
	CHECK_EQ_INT(gx_probe_body_parse(probes, sizeof(probes) - 1, "gpuext_probe_entry", &b, err,
					 sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "no definition of gpuext_probe_entry");
}

static void test_malformed(void)
{
#define HDR ".version 8.0\n.target sm_80\n.address_size 64\n"
	expect_einval("no .version", ".target sm_80\n.address_size 64\n.visible .entry k()\n"
		      "{\n\tret;\n}\n", "line 3: function k before the .version");
	expect_einval("no closing brace", HDR "\n.visible .entry k()\n{\n\tret;\n",
		      "line 5: body of k does not end");
	expect_einval("missing ';'", HDR ".visible .entry k()\n{\n\t.reg .b32 %r1;\n"
		      "\tmov.u32 %r1, 1\n}\n", "line 7: '}' inside a statement");
	expect_einval("open comment", HDR "/* never closed\n.visible .entry k()\n{\n\tret;\n}\n",
		      "line 4: unterminated /* comment");
	expect_einval("instruction at top level", HDR "mov.u32 %r1, 1;\n",
		      "line 4: instruction outside a function");
	expect_einval("stray brace", HDR "}\n", "line 4: '}' outside a function");
	expect_einval("bad address", HDR ".visible .entry k(.param .u64 p)\n{\n"
		      "\t.reg .b32 %r<2>;\n\t.reg .b64 %rd<2>;\n\tld.global.u32 %r1, %rd1;\n"
		      "\tret;\n}\n", "line 8: ld.global.u32: cannot read the address operand '%rd1'");
	expect_einval("unterminated string", HDR ".file 1 \"a.cu\n.visible .entry k()\n{\n}\n",
		      "line 4: unterminated string");
	expect_einval("bad version", ".version eight\n.target sm_80\n", "line 1: bad .version");
	expect_einval("32-bit module", ".version 8.0\n.target sm_80\n.address_size 32\n",
		      "line 3: only 64-bit modules");
	expect_einval("not PTX", "hello world\n", "line 1: statement \"hello world\" does not end");
	expect_einval(".version after a kernel", HDR ".visible .entry k()\n{\n\tret;\n}\n"
		      ".version 7.0\n.target sm_50\n", "line 8: .version after the module's first function");
	expect_einval("a second .target", HDR ".target sm_90\n", "line 4: .target given twice");
	expect_einval("no .address_size", ".version 8.0\n.target sm_80\n\n.visible .entry k()\n"
		      "{\n\tret;\n}\n", "line 4: kernel k: the module has no .address_size 64");
	{
		struct gx_pack pk = { .events = 0xf };
		char err[128], *out = NULL;
		size_t olen;

		/* A pack claiming probes without their PTX. */
		CHECK_EQ_INT(gx_ptx_splice(HDR, strlen(HDR), &pk, &out, &olen, NULL, err, sizeof(err)),
			     -EINVAL);
		CHECK_STR_CONTAINS(err, "no probe PTX");
		CHECK_EQ_INT(gx_ptx_splice(NULL, 0, &pk, &out, &olen, NULL, err, sizeof(err)),
			     -EINVAL);
	}
	{
		/*
		 * A malformed ld.param that also says .global (a load site) in a
		 * second kernel. The entry site used to follow it, so its load site
		 * came first and read the first kernel's parameter name after that
		 * was freed (fuzz_splice found it; ASan builds failed here), with the
		 * first kernel's id. Now the entry site comes first, and the load site
		 * carries this kernel's id and parameter.
		 */
		static const char two[] = HDR ".visible .entry first(.param .u64 first_p)\n{\n\tret;\n}\n"
			".visible .entry second(.param .u64 second_p)\n{\n\t.reg .b64 %rd<3>;\n"
			"\tld.param.global.u64 %rd1, [%rd2];\n\tret;\n}\n";
		struct gx_pack pk = { .events = 0xf, .ptx = (char *)hand_probes,
				      .ptx_len = sizeof(hand_probes) - 1 };
		char err[128], *out = NULL, id[64];
		size_t olen;

		CHECK_EQ_INT(gx_ptx_splice(two, sizeof(two) - 1, &pk, &out, &olen, NULL, err, sizeof(err)),
			     0);
		if (out) {
			const char *e2 = strstr(out, ".visible .entry second(");

			snprintf(id, sizeof(id), "mov.u64 %%gxs_d, %llu;",
				 (unsigned long long)gx_kernel_id("second", 6));
			const char *ld = e2 ? strstr(e2, "ld.param.global.u64 %rd1, [%rd2];") : NULL;

			CHECK(ld && strstr(e2, id) && strstr(e2, "mov.u64 %gxs_c, second_p;"));
			CHECK(ld && strstr(e2, "gpuext_probe_entry inlined") < ld);
			CHECK_EQ_INT(count_str(e2, id), 3);	/* load, entry, exit sites */
			CHECK(!strstr(e2, "first_p"));
		}
		free(out);
	}
#undef HDR
}

/*
 * gx_ptx_has_back_branch, and what it decides: the entry site waits for its
 * lanes (bar.warp.sync) only when the entry probe's body loops (ptx_splice.c,
 * emit_site says why the wait costs a loop-free entry probe the whole kernel,
 * and why a loop needs it).
 */
static void test_entry_sync(void)
{
	static const char kernel[] =
		".version 7.8\n.target sm_80\n.address_size 64\n"
		".visible .entry k(.param .u64 p)\n{\n\t.reg .b64 %rd<3>;\n"
		"\tld.param.u64 %rd1, [p];\n\tcvta.to.global.u64 %rd2, %rd1;\n"
		"\tst.global.u32 [%rd2], 1;\n\tret;\n}\n";
#define ENTRY_HEAD ".func gpuext_probe_entry(.param .b64 e_k, .param .b64 e_g, .param .b64 e_a, " \
		   ".param .b64 e_v, .param .b32 e_s)\n{\n\t.reg .pred %p<2>;\n\t.reg .b64 %rd<4>;\n"
	static const char straight[] = ENTRY_HEAD
		"\tld.param.u64 %rd1, [e_k];\n\tsetp.eq.u64 %p1, %rd1, 0;\n\t@%p1 bra $L__BB0_2;\n"
		"\tatom.global.add.u64 %rd2, [%rd1], 1;\n$L__BB0_2:\n\tret;\n}\n";
	static const char loop[] = ENTRY_HEAD
		"\tld.param.u64 %rd1, [e_k];\n$L__BB0_1:\n\tatom.global.cas.b64 %rd2, [%rd1], 0, 1;\n"
		"\tsetp.ne.u64 %p1, %rd2, 0;\n\t@%p1 bra $L__BB0_1;\n\tret;\n}\n";
#undef ENTRY_HEAD
	const char *packs[2] = { straight, loop };

	/* forward branches only, and labels that share a prefix with the branch's target */
	CHECK(!gx_ptx_has_back_branch(""));
	CHECK(!gx_ptx_has_back_branch("\t@%p1 bra \t$L1;\n\tmov.u32 %r1, 1;\n$L1:\n\tret;\n"));
	CHECK(!gx_ptx_has_back_branch("$L10:\n\tbra.uni $L1;\n$L1:\n"));
	CHECK(!gx_ptx_has_back_branch("$L1:\n\tbra.uni $L10;\n$L10:\n"));
	/* back: plain, guarded, negated guard, .uni, an indirect branch */
	CHECK(gx_ptx_has_back_branch("$L1:\n\tadd.s32 %r1, %r1, 1;\n\tbra $L1;\n"));
	CHECK(gx_ptx_has_back_branch("$L__BB0_3_gxs_I3:\n\t@%p2 bra \t$L__BB0_3_gxs_I3;\n"));
	CHECK(gx_ptx_has_back_branch("  $L2:\n\t@!%p2 bra.uni $L2; // again\n"));
	CHECK(gx_ptx_has_back_branch("\tbrx.idx %r1, $T;\n"));
	/* a call: the callee may loop, and this text does not show it */
	CHECK(gx_ptx_has_back_branch("\t@%p1 call.uni f, (%r1);\n"));
	CHECK(gx_ptx_has_back_branch("\tcall (%r2), g, (%r1);\n"));
	CHECK(!gx_ptx_has_back_branch("\tmov.u32 %r1, %callee;\n\tbrxfoo: \n"));
	/* a label named in a comment or an operand is no definition */
	CHECK(!gx_ptx_has_back_branch("\tmov.u32 %r1, $L5; // $L5:\n\tbra $L5;\n$L5:\n"));
	for (int i = 0; i < 2; i++) {
		struct gx_pack pack;
		struct gx_splice_stats st;
		char err[256] = "", *out = NULL;
		size_t olen = 0;

		memset(&pack, 0, sizeof(pack));
		pack.events = 1u << GX_PROBE_ENTRY;
		pack.ptx = (char *)packs[i];
		pack.ptx_len = strlen(packs[i]);
		CHECK_EQ_INT(gx_ptx_splice(kernel, sizeof(kernel) - 1, &pack, &out, &olen, &st, err,
					   sizeof(err)), 0);
		if (!out) {
			fprintf(stderr, "entry sync splice %d: %s\n", i, err);
			continue;
		}
		CHECK_EQ_INT(st.entry_sites, 1);
		CHECK_EQ_INT(count_str(out, "// gpuext: gpuext_probe_entry inlined"), 1);
		CHECK_EQ_INT(count_str(out, "\tbar.warp.sync %gxs_m;\n"), i);
		CHECK_EQ_INT(count_str(out, "\tactivemask.b32 %gxs_m;\n"), i);
		free(out);
	}
}

/*
 * Flat twins (ptx_twin.c): after a kernel whose probes read a z register,
 * a copy named NAME__gpuext_flat in which the probes' reads (inside their
 * inlined blocks, or into the splicer's own registers) are the constants a
 * launch flat in z gives, and the app's own reads are left alone. No twin
 * for probes that read no z register, nor where the module names the twin.
 */
static void test_flat_twin(void)
{
	static const char zprobe[] =
		"// gpuext-ptx-version 7.8\n// gpuext-ptx-target sm_75\n"
		".visible .global .align 8 .u64 gpuext_test_calls[4];\n"
		".func gpuext_probe_exit(.param .b64 x_k, .param .b64 x_g, .param .b64 x_a, "
		".param .b64 x_v, .param .b32 x_s)\n"
		"{\n\t.reg .b32 %r<5>;\n\t.reg .b64 %rd<3>;\n\tmov.u32 %r1, %tid.z;\n"
		"\tmov.u32 %r2, %ctaid.z;\n\tmov.u32 %r3, %ntid.z;\n\tmov.u32 %r4, %nctaid.z;\n"
		"\tadd.u32 %r1, %r1, %r2;\n\tadd.u32 %r1, %r1, %r3;\n\tadd.u32 %r1, %r1, %r4;\n"
		"\tcvt.u64.u32 %rd1, %r1;\n"
		"\tatom.global.add.u64 %rd2, [gpuext_test_calls+8], %rd1;\n\tret;\n}\n";
	static const char mod[] =
		".version 7.8\n.target sm_75\n.address_size 64\n\n"
		".visible .entry kz(.param .u64 kz_p)\n{\n\t.reg .b32 %r<3>;\n"
		"\t.reg .b64 %rd<2>;\n\tld.param.u64 %rd1, [kz_p];\n"
		"\tmov.u32 %r1, %tid.z;\n\tmov.u32 %r2, %nctaid.z;\n"
		"\tst.global.u32 [%rd1], %r1;\n\tst.global.u32 [%rd1+4], %r2;\n\tret;\n}\n";
	struct gx_pack pk = { .events = 1u << GX_PROBE_EXIT, .ptx = (char *)zprobe,
			      .ptx_len = sizeof(zprobe) - 1 };
	struct gx_splice_stats st;
	char err[256] = "", *out = NULL, *tw = NULL;
	const char *twin;
	size_t olen = 0, tl = 0;
	unsigned folded = 9;

	CHECK_EQ_INT(gx_ptx_splice(mod, sizeof(mod) - 1, &pk, &out, &olen, &st, err, sizeof(err)), 0);
	CHECK_EQ_INT(st.flat_twins, 1);
	twin = out ? strstr(out, ".visible .entry kz__gpuext_flat(") : NULL;
	CHECK(twin != NULL);
	if (twin) {
		const char *orig = strstr(out, ".visible .entry kz(");

		/* after the kernel, which keeps every read: the app's two, the probe's four */
		CHECK(orig && orig < twin);
		if (orig && orig < twin) {
			char *o = strndup(orig, (size_t)(twin - orig));

			CHECK(o && count_str(o, "%tid.z;") == 2 && count_str(o, "%ctaid.z;") == 1 &&
			      count_str(o, "%ntid.z;") == 1 && count_str(o, "%nctaid.z;") == 2);
			free(o);
		}
		/*
		 * The twin: the probe's reads are constants, in its inlined block
		 * (%tid.z) and where the hoister moved them to registers of ours
		 * (%ctaid.z, %ntid.z, %nctaid.z); the app's two reads are kept.
		 */
		CHECK_STR_CONTAINS(twin, "mov.u32 %r1, %tid.z;\n\tmov.u32 %r2, %nctaid.z;\n");
		CHECK_STR_CONTAINS(twin, "inlined (hal/nvidia/ptx_inline.c)\n\n\t.reg .b32 %r<5>;\n"
				   "\t.reg .b64 %rd<3>;\n\tmov.u32 %r1, 0;\n");
		CHECK_STR_CONTAINS(twin, "mov.u32 %gxs_I1_h_r2, 0;\n\tmov.u32 %gxs_I1_h_r3, 1;\n"
				   "\tmov.u32 %gxs_I1_h_r4, 1;\n");
		CHECK_EQ_INT(count_str(twin, "%tid.z"), 1);
		CHECK_EQ_INT(count_str(twin, "%ctaid.z"), 0);
		CHECK_EQ_INT(count_str(twin, "%ntid.z"), 0);
		CHECK_EQ_INT(count_str(twin, "%nctaid.z"), 1);
		/* the kernel's id in the twin is the kernel's: records name the app's kernel */
		CHECK_EQ_INT(count_str(out, "mov.u64 %gxs_d, "), 2);
	}
	free(out);
	out = NULL;
	/* probes that read no z register: nothing to fold, no twin */
	{
		struct gx_pack plain = { .events = 1u << GX_PROBE_EXIT, .ptx = (char *)hand_probes,
					 .ptx_len = sizeof(hand_probes) - 1 };

		CHECK_EQ_INT(gx_ptx_splice(mod, sizeof(mod) - 1, &plain, &out, &olen, &st, err,
					   sizeof(err)), 0);
		CHECK_EQ_INT(st.flat_twins, 0);
		CHECK(out && !strstr(out, "__gpuext_flat"));
		free(out);
		out = NULL;
	}
	/* a pack that asks for none (gpuext trace --no-flat-twins) gets none */
	pk.no_flat_twins = true;
	CHECK_EQ_INT(gx_ptx_splice(mod, sizeof(mod) - 1, &pk, &out, &olen, &st, err, sizeof(err)), 0);
	CHECK_EQ_INT(st.flat_twins, 0);
	CHECK(out && !strstr(out, "__gpuext_flat") && strstr(out, "%ctaid.z"));
	free(out);
	out = NULL;
	pk.no_flat_twins = false;
	/*
	 * A module with a kernel of its own named like kz's twin keeps it: kz gets
	 * no twin (that kernel gets one of its own, named after it).
	 */
	{
		static const char own[] =
			"\n.visible .entry kz__gpuext_flat(.param .u64 kt_p)\n{\n\tret;\n}\n";
		char m2[sizeof(mod) + sizeof(own)];

		snprintf(m2, sizeof(m2), "%s%s", mod, own);
		CHECK_EQ_INT(gx_ptx_splice(m2, strlen(m2), &pk, &out, &olen, &st, err, sizeof(err)),
			     0);
		CHECK_EQ_INT(st.flat_twins, 1);
		CHECK_EQ_INT(out ? count_str(out, ".entry kz__gpuext_flat(") : 0, 1);
		CHECK_EQ_INT(out ? count_str(out, ".entry kz__gpuext_flat__gpuext_flat(") : 0, 1);
		free(out);
		out = NULL;
	}
	/* the twin of a text that is not the named .entry: refused */
	CHECK_EQ_INT(gx_ptx_flat_twin(mod, sizeof(mod) - 1, "other", "gxs", &tw, &tl, &folded),
		     -EINVAL);
	CHECK(!tw && tl == 0 && folded == 0);
	{
		const char *fn = strstr(mod, ".visible .entry");

		/* the app's own reads alone: a twin with nothing folded */
		CHECK_EQ_INT(gx_ptx_flat_twin(fn, strlen(fn), "kz", "gxs", &tw, &tl, &folded), 0);
		CHECK_EQ_INT(folded, 0);
		CHECK(tw && tl == strlen(tw) && strstr(tw, ".visible .entry kz__gpuext_flat("));
		free(tw);
	}
}

/* Two branches to one label with register-only work between them become one (gx_site_merge_guards). */
static void test_merge_guards(void)
{
	static const char two[] =
		"\t{\n"
		"\tactivemask.b32 \t%r8;\n"
		"\t@%gxs_I1_h_p1 bra \t$L__BB0_3_gxs_I1;\n"
		"\tmov.b64 \t%rd3, gpuext_rt_maps;\n"
		"\t// begin inline asm\n"
		"\tmov.b64 %rd2, %rd3;\n"
		"\t// end inline asm\n"
		"\tld.const.b64 \t%rd4, [%rd2];\n"
		"\tand.b64 \t%rd1, %rd4, -8;\n"
		"\tsetp.eq.b64 \t%p2, %rd1, 0;\n"
		"\t@%p2 bra \t$L__BB0_3_gxs_I1;\n"
		"\tatom.global.add.u64 \t%rd8, [%rd1], 1;\n"
		"$L__BB0_3_gxs_I1:\n"
		"\t}\n";
	char *m = gx_site_merge_guards(two, "%gxs_qe"), *t2;

	CHECK(m != NULL);
	if (m) {
		CHECK(!strstr(m, "@%gxs_I1_h_p1 bra"));
		CHECK(!strstr(m, "@%p2 bra"));
		CHECK(strstr(m, "\tsetp.eq.b64 \t%p2, %rd1, 0;\n\tor.pred %gxs_qe, %gxs_I1_h_p1, %p2;\n"
				"\t@%gxs_qe bra $L__BB0_3_gxs_I1;\n\tatom.global.add.u64") != NULL);
		/* everything else as it was, in order */
		CHECK(strstr(m, "\tactivemask.b32 \t%r8;\n\tmov.b64 \t%rd3, gpuext_rt_maps;\n") != NULL);
		CHECK(strlen(m) == strlen(two) - strlen("\t@%gxs_I1_h_p1 bra \t$L__BB0_3_gxs_I1;\n") -
				   strlen("\t@%p2 bra \t$L__BB0_3_gxs_I1;\n") +
				   strlen("\tor.pred %gxs_qe, %gxs_I1_h_p1, %p2;\n\t@%gxs_qe bra $L__BB0_3_gxs_I1;\n"));
		free(m);
	}
	/*
	 * The same site as the preload library splices it on sm_80 and up, its
	 * atomic carrying the L2 policy (nv_load.c, gx_ptx_probes_l2keep): the
	 * "::" of the hint is no label, and the site folds the same way (it did
	 * not, and threadhist lost the fold on every GPU with the policy).
	 */
	{
		char hinted[sizeof(two) + 64], *h;
		const char *at = strstr(two, "atom.global.add.u64");

		snprintf(hinted, sizeof(hinted), "%.*satom.global.add.L2::cache_hint.u64 \t%%rd8, [%%rd1], 1, "
			 "0x14f0000000000000;%s", (int)(at - two), two,
			 strstr(at, "\n$L__BB0_3_gxs_I1:"));
		h = gx_site_merge_guards(hinted, "%gxs_qe");
		CHECK(h != NULL);
		if (h) {
			CHECK(!strstr(h, "@%gxs_I1_h_p1 bra"));
			CHECK(strstr(h, "\tor.pred %gxs_qe, %gxs_I1_h_p1, %p2;\n\t@%gxs_qe bra $L__BB0_3_gxs_I1;\n"
					"\tatom.global.add.L2::cache_hint.u64") != NULL);
			free(h);
		}
	}
	/* Left alone: a memory operation, a label or a write of the first predicate between; other labels; negation. */
	{
		static const char *const keep[] = {
			"\t@%p1 bra \tL1;\n\tld.global.u32 \t%r1, [%rd1];\n\t@%p2 bra \tL1;\n",
			"\t@%p1 bra \tL1;\n\tst.global.u32 \t[%rd1], %r1;\n\t@%p2 bra \tL1;\n",
			"\t@%p1 bra \tL1;\nL0:\n\t@%p2 bra \tL1;\n",
			"\t@%p1 bra \tL1;\n\tsetp.ne.b32 \t%p1, %r1, 0;\n\t@%p2 bra \tL1;\n",
			"\t@%p1 bra \tL1;\n\tmov.u32 \t%r1, 0;\n\t@%p2 bra \tL2;\n",
			"\t@!%p1 bra \tL1;\n\tmov.u32 \t%r1, 0;\n\t@%p2 bra \tL1;\n",
			"\t@%p1 bra \tL1;\n\t@%p3 mov.u32 \t%r1, 0;\n\t@%p2 bra \tL1;\n",
			"\t@%p1 bra \tL1;\n\tbar.sync \t0;\n\t@%p2 bra \tL1;\n",
			/* activemask would count the lanes that branch away */
			"\t@%p1 bra \tL1;\n\tactivemask.b32 \t%r1;\n\t@%p2 bra \tL1;\nL1:\n",
			/* a register written between is read after the label (a PHI's copy) */
			"\t@%p1 bra \tL1;\n\tmov.b64 \t%rd15, 5;\n\t@%p2 bra \tL1;\n"
			"\tred.global.add.u64 \t[%rd1], 1;\nL1:\n\tred.global.add.u64 \t[%rd2], %rd15;\n",
			/* ... or before the first branch (a loop back to it) */
			"L0:\n\tadd.s32 \t%r2, %r1, 1;\n\t@%p1 bra \tL1;\n\tadd.s32 \t%r1, %r1, 1;\n"
			"\t@%p2 bra \tL1;\nL1:\n",
			/* the label before the branches (a loop), or another label before it */
			"L1:\n\t@%p1 bra \tL1;\n\tmov.u32 \t%r1, 0;\n\t@%p2 bra \tL1;\n",
			"\t@%p1 bra \tL1;\n\tmov.u32 \t%r1, 0;\n\t@%p2 bra \tL1;\nL9:\nL1:\n",
		};

		for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
			m = gx_site_merge_guards(keep[i], "%gxs_qe");
			CHECK(m && !strcmp(m, keep[i]));
			if (m && strcmp(m, keep[i]))
				fprintf(stderr, "merged: %s\n", keep[i]);
			free(m);
		}
	}
	/* Three in a row: folded into the last, in order. */
	{
		static const char three[] =
			"\t@%p1 bra \tL1;\n\tmov.u32 \t%r1, 0;\n\t@%p2 bra \tL1;\n"
			"\tld.const.b64 \t%rd4, [%rd2];\n\tsetp.eq.b64 \t%p3, %rd4, 0;\n\t@%p3 bra \tL1;\n"
			"\tred.global.add.u32 \t[%rd4], 1;\nL1:\n";

		m = gx_site_merge_guards(three, "%gxs_qe");
		CHECK(m && !strcmp(m, "\tmov.u32 \t%r1, 0;\n\tor.pred %gxs_qe, %p1, %p2;\n"
				   "\tld.const.b64 \t%rd4, [%rd2];\n\tsetp.eq.b64 \t%p3, %rd4, 0;\n"
				   "\tor.pred %gxs_qe, %gxs_qe, %p3;\n\t@%gxs_qe bra L1;\n"
				   "\tred.global.add.u32 \t[%rd4], 1;\nL1:\n"));
		free(m);
	}
	/* More than a few instructions between: left alone (warps that skip would run them all). */
	t2 = malloc(4096);
	if (t2) {
		strcpy(t2, "\t@%p1 bra \tL1;\n");
		for (int i = 0; i < 9; i++)
			strcat(t2, "\tadd.s32 \t%r2, %r2, 1;\n");
		strcat(t2, "\t@%p2 bra \tL1;\n");
		m = gx_site_merge_guards(t2, "%gxs_qe");
		CHECK(m && !strcmp(m, t2));
		free(m);
		/* eight: merged */
		strcpy(t2, "\t@%p1 bra \tL1;\n");
		for (int i = 0; i < 8; i++)
			strcat(t2, "\tadd.s32 \t%r2, %r2, 1;\n");
		strcat(t2, "\t@%p2 bra \tL1;\nL1:\n");
		m = gx_site_merge_guards(t2, "%gxs_qe");
		CHECK(m && strstr(m, "or.pred %gxs_qe, %p1, %p2;") && !strstr(m, "@%p1"));
		free(m);
		free(t2);
	}
}

int main(void)
{
	test_merge_guards();
	test_entry_sync();
	test_malformed();
	test_inline();
	test_hoist();
	test_hoist_lane_index();
	test_flat_twin();
	return test_done("test_nv_splice_parts");
}

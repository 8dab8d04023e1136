/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Exit splitting (hal/nvidia/ptx_exits.c): every branch to a kernel's shared
 * `ret;` gets a `ret;` of its own, and nothing else changes. Hand-written
 * modules with the exact text expected, the cases the pass must leave
 * alone, and (where ptxas is found) every output assembled for sm_90.
 * Then the splicer on an early-return kernel with real warp-mode probes:
 * a site at each ret, lane 0 elected, the site's place arithmetic at the
 * site's own start (before the election) and no warp barrier after it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuext/gpuext.h"
#include "nvprobe.h"
#include "ptx/ptx.h"
#include "ptx_splice.h"
#include "nv_twins.h"
#include "ptx_text.h"
#include "testlib.h"

#define HEAD ".version 8.0\n.target sm_90\n.address_size 64\n\n"

static const char *ptxas = GPUEXT_PTXAS;
static unsigned assembled;

static void assemble(const char *text, const char *what)
{
	char path[] = "/tmp/gpuext-exits-XXXXXX", cmd[1200];
	int fd, rc;
	FILE *f;

	if (!ptxas[0] || access(ptxas, X_OK))
		return;
	fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	f = fdopen(fd, "w");
	CHECK(f != NULL);
	if (!f) {
		close(fd);
		unlink(path);
		return;
	}
	fputs(text, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "'%s' -arch=sm_90 -o /dev/null '%s' >/dev/null 2>&1", ptxas, path);
	rc = system(cmd);
	if (rc)
		fprintf(stderr, "%s: ptxas refused the output\n", what);
	else
		assembled++;
	CHECK_EQ_INT(rc, 0);
	unlink(path);
}

/* Splits @in; expects @want (NULL: unchanged) and @nsplit retargeted branches. */
static void expect(const char *what, const char *in, const char *want, unsigned nsplit)
{
	char *out = (char *)1;
	size_t len = 1;
	unsigned split = 99;
	int rc = gx_ptx_split_exits(in, strlen(in), &out, &len, &split);

	CHECK_EQ_INT(rc, 0);
	if (!want) {
		CHECK(out == NULL && len == 0 && split == 0);
		if (out)
			fprintf(stderr, "%s: changed, to:\n%s\n", what, out);
		free(out);
		assemble(in, what);
		return;
	}
	CHECK(out != NULL);
	CHECK_EQ_INT(split, nsplit);
	if (!out)
		return;
	CHECK_EQ_U64(len, strlen(out));
	if (strcmp(out, want))
		fprintf(stderr, "%s: got\n%s\nwant\n%s\n", what, out, want);
	CHECK(!strcmp(out, want));
	assemble(out, what);
	free(out);
}

/* nvcc's shape: the early return branches to the ret the body falls into. */
static const char early_in[] = HEAD
		".visible .entry k(\n\t.param .u64 k_p,\n\t.param .u32 k_n\n)\n{\n"
		"\t.reg .pred \t%p<2>;\n\t.reg .b32 \t%r<3>;\n\t.reg .b64 \t%rd<4>;\n\n"
		"\tld.param.u64 \t%rd1, [k_p];\n\tld.param.u32 \t%r1, [k_n];\n"
		"\tmov.u32 \t%r2, %tid.x;\n\tsetp.ge.s32 \t%p1, %r2, %r1;\n"
		"\t@%p1 bra \t$L__BB0_2;\n\n"
		"\tcvta.to.global.u64 \t%rd2, %rd1;\n\tmul.wide.s32 \t%rd3, %r2, 4;\n"
		"\tadd.s64 \t%rd2, %rd2, %rd3;\n\tst.global.u32 \t[%rd2], %r2;\n\n"
		"$L__BB0_2:\n\tret;\n\n}\n";

static void test_early_return(void)
{
	static const char want[] = HEAD
		".visible .entry k(\n\t.param .u64 k_p,\n\t.param .u32 k_n\n)\n{\n"
		"\t.reg .pred \t%p<2>;\n\t.reg .b32 \t%r<3>;\n\t.reg .b64 \t%rd<4>;\n\n"
		"\tld.param.u64 \t%rd1, [k_p];\n\tld.param.u32 \t%r1, [k_n];\n"
		"\tmov.u32 \t%r2, %tid.x;\n\tsetp.ge.s32 \t%p1, %r2, %r1;\n"
		"\t@%p1 bra \t$__gxr1;\n\n"
		"\tcvta.to.global.u64 \t%rd2, %rd1;\n\tmul.wide.s32 \t%rd3, %r2, 4;\n"
		"\tadd.s64 \t%rd2, %rd2, %rd3;\n\tst.global.u32 \t[%rd2], %r2;\n\n"
		"$L__BB0_2:\n\tret;\n\n$__gxr1:\n\tret;\n}\n";

	expect("early return", early_in, want, 1);
}

/*
 * Two kernels; branches of every accepted form (negated guard, bra.uni, a
 * trailing comment) to labels before a ret (a label run, a comment line
 * between); vector operands in braces; a branch to a label that is not
 * before a ret stays.
 */
static void test_forms(void)
{
	static const char in[] = HEAD
		".visible .entry a(\n\t.param .u64 a_p\n)\n{\n"
		"\t.reg .pred %p<3>;\n\t.reg .f32 %f<5>;\n\t.reg .b64 %rd<3>;\n"
		"\tld.param.u64 %rd1, [a_p];\n\tcvta.to.global.u64 %rd2, %rd1;\n"
		"\tld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd2];\n"
		"\tsetp.gt.f32 %p1, %f1, 0f00000000;\n\tsetp.gt.f32 %p2, %f2, 0f00000000;\n"
		"@!%p1 bra $L_end; // first\n"
		"\t@%p2 bra $L_mid;\n"
		"\tst.global.f32 [%rd2], %f3;\n"
		"\tbra.uni $L_out;\n"
		"$L_mid:\n\tst.global.f32 [%rd2+4], %f4;\n"
		"$L_end:\n// the end\n$L_out:\n\tret;\n}\n\n"
		".visible .entry b()\n{\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<2>;\n"
		"\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 bra $L_x;\n"
		"$L_x:\n\tret;\n}\n";
	static const char want[] = HEAD
		".visible .entry a(\n\t.param .u64 a_p\n)\n{\n"
		"\t.reg .pred %p<3>;\n\t.reg .f32 %f<5>;\n\t.reg .b64 %rd<3>;\n"
		"\tld.param.u64 %rd1, [a_p];\n\tcvta.to.global.u64 %rd2, %rd1;\n"
		"\tld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd2];\n"
		"\tsetp.gt.f32 %p1, %f1, 0f00000000;\n\tsetp.gt.f32 %p2, %f2, 0f00000000;\n"
		"@!%p1 bra $__gxr1; // first\n"
		"\t@%p2 bra $L_mid;\n"
		"\tst.global.f32 [%rd2], %f3;\n"
		"\tbra.uni $__gxr2;\n"
		"$L_mid:\n\tst.global.f32 [%rd2+4], %f4;\n"
		"$L_end:\n// the end\n$L_out:\n\tret;\n$__gxr1:\n\tret;\n$__gxr2:\n\tret;\n}\n\n"
		".visible .entry b()\n{\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<2>;\n"
		"\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 bra $__gxr3;\n"
		"$L_x:\n\tret;\n$__gxr3:\n\tret;\n}\n";

	expect("branch forms", in, want, 3);
}

/*
 * nvcc -lineinfo: a .loc between the label and its ret; CRLF line ends
 * (kept on every line it copies); no newline after the last brace.
 */
static void test_text_shapes(void)
{
	expect(".loc", HEAD
	       ".visible .entry k()\n{\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<2>;\n"
	       "\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 bra $L_r;\n"
	       "\tadd.u32 %r1, %r1, 1;\n$L_r:\n\t.loc\t1 9 1\n\tret;\n}\n",
	       HEAD
	       ".visible .entry k()\n{\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<2>;\n"
	       "\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 bra $__gxr1;\n"
	       "\tadd.u32 %r1, %r1, 1;\n$L_r:\n\t.loc\t1 9 1\n\tret;\n$__gxr1:\n\tret;\n}\n", 1);
	expect("CRLF, no last newline",
	       ".version 8.0\r\n.target sm_90\r\n.address_size 64\r\n"
	       ".visible .entry k()\r\n{\r\n\t.reg .pred %p<2>;\r\n\t.reg .b32 %r<2>;\r\n"
	       "\tmov.u32 %r1, %tid.x;\r\n\tsetp.eq.u32 %p1, %r1, 0;\r\n\t@%p1 bra $L_r;\r\n"
	       "\tadd.u32 %r1, %r1, 1;\r\n$L_r:\r\n\tret;\r\n}",
	       ".version 8.0\r\n.target sm_90\r\n.address_size 64\r\n"
	       ".visible .entry k()\r\n{\r\n\t.reg .pred %p<2>;\r\n\t.reg .b32 %r<2>;\r\n"
	       "\tmov.u32 %r1, %tid.x;\r\n\tsetp.eq.u32 %p1, %r1, 0;\r\n\t@%p1 bra $__gxr1;\r\n"
	       "\tadd.u32 %r1, %r1, 1;\r\n$L_r:\r\n\tret;\r\n$__gxr1:\n\tret;\n}", 1);
}

/* What the pass must leave as it is. */
static void test_left_alone(void)
{
	/* A .func's ret returns to its caller: not an exit. */
	expect(".func", HEAD
	       ".func f(.param .b32 f_x)\n{\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<2>;\n"
	       "\tld.param.b32 %r1, [f_x];\n\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 bra $L_r;\n"
	       "\tadd.u32 %r1, %r1, 1;\n$L_r:\n\tret;\n}\n", NULL, 0);
	/* A guarded ret after the label, and a label before other code. */
	expect("guarded ret", HEAD
	       ".visible .entry k()\n{\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<2>;\n"
	       "\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 bra $L_r;\n"
	       "\tbra.uni $L_s;\n$L_r:\n\t@%p1 ret;\n$L_s:\n\tadd.u32 %r1, %r1, 1;\n\tret;\n}\n",
	       NULL, 0);
	/* The branch inside a nested block. */
	expect("nested block", HEAD
	       ".visible .entry k()\n{\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<2>;\n"
	       "\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 0;\n\t{\n\t@%p1 bra $L_r;\n\t}\n"
	       "\tadd.u32 %r1, %r1, 1;\n$L_r:\n\tret;\n}\n", NULL, 0);
	/* A block comment in the body. */
	expect("block comment", HEAD
	       ".visible .entry k()\n{\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<2>;\n"
	       "\tmov.u32 %r1, %tid.x; /* x */\n\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 bra $L_r;\n"
	       "\tadd.u32 %r1, %r1, 1;\n$L_r:\n\tret;\n}\n", NULL, 0);
	/* The module names $__gxr already. */
	expect("name taken", HEAD
	       ".visible .entry k()\n{\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<2>;\n"
	       "\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 bra $__gxr1;\n"
	       "\tadd.u32 %r1, %r1, 1;\n$__gxr1:\n\tret;\n}\n", NULL, 0);
	/*
	 * The entry's brace on its header line: that body is not read, and the
	 * .func after it (whose brace stands alone) is not taken for it.
	 */
	expect("brace on the header", HEAD
	       ".visible .entry k() {\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<2>;\n"
	       "\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 bra $L_r;\n"
	       "\tadd.u32 %r1, %r1, 1;\n$L_r:\n\tret;\n}\n"
	       ".func f()\n{\n\t.reg .pred %p<2>;\n\t.reg .b32 %r<2>;\n"
	       "\tmov.u32 %r1, %tid.x;\n\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 bra $L_f;\n"
	       "\tadd.u32 %r1, %r1, 1;\n$L_f:\n\tret;\n}\n", NULL, 0);
	/* No branch to the ret. */
	expect("straight", HEAD
	       ".visible .entry k()\n{\n\t.reg .b32 %r<2>;\n\tmov.u32 %r1, %tid.x;\n"
	       "$L_r:\n\tret;\n}\n", NULL, 0);
	/* A body whose braces do not balance is not read at all. */
	{
		static const char bad[] = HEAD ".visible .entry k()\n{\n\t@%p1 bra $L_r;\n$L_r:\n\tret;\n";
		char *out = (char *)1;
		size_t len = 1;
		unsigned split = 7;

		CHECK_EQ_INT(gx_ptx_split_exits(bad, strlen(bad), &out, &len, &split), 0);
		CHECK(out == NULL && len == 0 && split == 0);
	}
}

/*
 * The region a plan may move past: the lowest-active-lane election always;
 * a branch on %laneid alone only at the site (an exit's lane-0 election);
 * the election OR'ed with a %laneid test never (it can skip whole warps).
 * @branch is the predicate line and branch; says whether %tid.y moved.
 */
static bool tid_moves(const char *branch, bool at_site)
{
	static const char *const args[GX_PROBE_NARGS] = { "%k", "%g", "%a", "%v", "%s" };
	static const unsigned bits[GX_PROBE_NARGS] = { 64, 64, 64, 64, 32 };
	char src[2048], err[200], *t = NULL, *h = NULL;
	struct gx_probe_body b;
	struct gx_hoist_plan *plan;
	bool moved = false;

	snprintf(src, sizeof(src),
		 ".func gpuext_probe_exit(\n\t.param .b64 p_0,\n\t.param .b64 p_1,\n"
		 "\t.param .b64 p_2,\n\t.param .b64 p_3,\n\t.param .b32 p_4\n)\n{\n"
		 "\t.reg .pred \t%%p<5>;\n\t.reg .b32 \t%%r<12>;\n\t.reg .b64 \t%%rd<4>;\n"
		 "\tactivemask.b32 \t%%r1;\n\tmov.u32 \t%%r2, %%lanemask_lt;\n"
		 "\tand.b32 \t%%r3, %%r1, %%r2;\n\tsetp.ne.b32 \t%%p1, %%r3, 0;\n"
		 "\tmov.u32 \t%%r4, %%laneid;\n\tsetp.gt.u32 \t%%p2, %%r4, 15;\n"
		 "%s"
		 "\tmov.u32 \t%%r5, %%tid.y;\n\tmul.wide.u32 \t%%rd1, %%r5, 8;\n"
		 "\tmov.u64 \t%%rd2, 4096;\n\tadd.s64 \t%%rd3, %%rd2, %%rd1;\n"
		 "\tred.global.add.u64 \t[%%rd3], 1;\n$L_out:\n\tret;\n}\n", branch);
	CHECK_EQ_INT(gx_probe_body_parse(src, strlen(src), "gpuext_probe_exit", &b, err, sizeof(err)), 0);
	if (!b.text)
		return false;
	plan = gx_hoist_plan_make(&b, at_site);
	CHECK(plan != NULL);
	if (plan)
		t = gx_probe_body_inline(&b, args, bits, "S", plan, &h);
	CHECK(t != NULL);
	moved = h && strstr(h, "%tid.y") && t && !strstr(t, "%tid.y");
	free(t);
	free(h);
	gx_hoist_plan_free(plan);
	gx_probe_body_free(&b);
	return moved;
}

static void test_hoist_region(void)
{
	static const char *const election = "\t@%p1 bra \t$L_out;\n";
	static const char *const lane = "\t@%p2 bra \t$L_out;\n";
	static const char *const both = "\tor.pred \t%p3, %p1, %p2;\n\t@%p3 bra \t$L_out;\n";

	CHECK(tid_moves(election, false));
	CHECK(tid_moves(election, true));
	CHECK(!tid_moves(lane, false));
	CHECK(tid_moves(lane, true));
	CHECK(!tid_moves(both, false));
	CHECK(!tid_moves(both, true));
}

static unsigned count(const char *t, const char *s)
{
	unsigned n = 0;

	for (const char *p = strstr(t, s); p; p = strstr(p + 1, s))
		n++;
	return n;
}

/*
 * The early-return kernel spliced with @obj's probes in warp mode: @want_exit
 * exit sites (one per ret after the split); each exit site reads %laneid
 * (a warp 0 guard) or takes the linear thread index mod 32 (none: the
 * wrapper's election, codegen/ptx/ptx_probe.c) and computes its predicate
 * before the inlined body (hoisted to the site),
 * the body's first branch is on that predicate, and no warp barrier follows.
 */
static void splice_early(const char *bpf, const char *what)
{
	GPUEXT_OPTS(gpuext_runtime_opts, ro);
	struct gpuext_runtime *rt = NULL;
	struct gpuext_object *obj = NULL;
	struct gx_splice_stats st;
	struct gx_pack pk = { 0 };
	char err[256], *probes = NULL, *out = NULL;
	size_t plen = 0, olen = 0;
	uint32_t ev = 0;
	const char *p;
	unsigned sites = 0;

	CHECK_EQ_INT(gpuext_runtime__new(&ro, &rt), 0);
	if (rt)
		gpuext_object__open_file(rt, bpf, NULL, &obj);
	CHECK(obj != NULL);
	if (!obj)
		goto out;
	CHECK_EQ_INT(gpuext_ptx_probe_emit(obj, "sm_90", false, &ev, &probes, &plen), 0);
	CHECK(probes && (ev & (1u << GX_PROBE_EXIT)));
	if (!probes)
		goto out;
	pk.events = ev;
	pk.ptx = probes;
	pk.ptx_len = plen;
	CHECK_EQ_INT(gx_ptx_splice(early_in, strlen(early_in), &pk, &out, &olen, &st, err,
				   sizeof(err)), 0);
	if (!out) {
		fprintf(stderr, "%s: %s\n", what, err);
		goto out;
	}
	/* the kernel's splice once: its flat twin (ptx_twin.c) repeats it */
	CHECK_EQ_INT(nv_drop_twins(out), st.flat_twins);
	olen = strlen(out);
	CHECK_EQ_INT(st.exits_split, 1);
	CHECK_EQ_INT(st.exit_sites, 2);
	CHECK_EQ_INT(count(out, "@%p1 bra \t$__gxr1;"), 1);
	for (p = strstr(out, "// gpuext: gpuext_probe_exit inlined"); p;
	     p = strstr(p + 1, "// gpuext: gpuext_probe_exit inlined")) {
		char lane[64], pred[80], br[80];
		const char *site_start, *body_end;
		unsigned n;

		sites++;
		/* this site's registers: the suffix of the line that reads %laneid before it,
		 * or of the one that masks the thread index with 31 */
		for (site_start = p; site_start > out && strncmp(site_start, "\tmov.u64 %gxs_d,", 16);
		     site_start--)
			;
		n = 0;
		{
			const char *l = strstr(site_start, ", %laneid;"), *m = strstr(site_start, ", 31;");

			if (m && m < p && (!l || m < l)) {	/* "and.b32 \t%X, %Y, 31;": the lane is %X */
				while (m > site_start && m[-1] != '\n')
					m--;
				CHECK(!strncmp(m, "\tand.b32 \t%", 11));
				l = strchr(m, ',');
			}

			CHECK(l && l < p);
			if (!l || l > p)
				break;
			while (l > site_start && l[-1] != '\t')
				l--;
			n = (unsigned)strcspn(l, ",");
			snprintf(lane, sizeof(lane), "%.*s", (int)n, l);
		}
		/* setp on it, before the body; the body branches on that predicate first */
		snprintf(pred, sizeof(pred), ", %s, 0;", lane);
		CHECK(strstr(site_start, pred) && strstr(site_start, pred) < p);
		body_end = strstr(p, "\t}\n");
		CHECK(body_end != NULL);
		{
			const char *sp = strstr(site_start, pred), *q = sp;

			while (q && q > site_start && q[-1] != '\t')
				q--;
			/* "setp.ne.b32 \t%gxs_I2_h_p1" -> the predicate's name */
			q = q ? strchr(q, '%') : NULL;
			if (q) {
				char merged[80];
				const char *b1, *b2;

				/* the branch on it, or folded into one with the next (gx_site_merge_guards) */
				snprintf(br, sizeof(br), "@%.*s bra", (int)strcspn(q, ","), q);
				snprintf(merged, sizeof(merged), "or.pred %%gxs_qe, %.*s, ",
					 (int)strcspn(q, ","), q);
				b1 = strstr(p, br);
				b2 = strstr(p, merged);
				CHECK((b1 && b1 < body_end) || (b2 && b2 < body_end));
				/*
				 * threadhist: the election and the map's NULL test are one
				 * branch, and the RED follows it.
				 */
				if (strstr(what, "threadhist")) {
					const char *g = b2 ? strstr(b2, "\n\t@%gxs_qe bra ") : NULL;
					const char *a = g ? strstr(g + 1, "\n") : NULL;

					CHECK(b2 && b2 < body_end && !(b1 && b1 < body_end));
					CHECK(g && a && !strncmp(a + 1, "\tatom.global.add.u32", 20));
				}
				CHECK(!strstr(p, "%lanemask_lt") || strstr(p, "%lanemask_lt") > body_end);
			}
		}
		/*
		 * threadhist's election is the thread index mod 32 (no warp guard), and
		 * the hoister lets the site's arithmetic past it: the map table's load
		 * and the block index come before the body, none of it inside.
		 */
		if (strstr(what, "threadhist")) {
			const char *q = strstr(site_start, "ld.const.b64");
			const char *c = strstr(site_start, ", %ctaid.x;");

			CHECK(q && q < p && c && c < p);
			CHECK(body_end && (!strstr(p, "%ctaid") || strstr(p, "%ctaid") > body_end));
			CHECK(!strstr(site_start, "%laneid") || strstr(site_start, "%laneid") > body_end);
		}
		/* the ret right after the body: no warp barrier */
		CHECK(body_end && strstr(body_end, "\tret;") &&
		      (!strstr(body_end, "bar.warp.sync") ||
		       strstr(body_end, "bar.warp.sync") > strstr(body_end, "\tret;")));
	}
	CHECK_EQ_INT(sites, 2);
	/* nothing of the exit sites at the function's start */
	CHECK(!strstr(out, "// gpuext: hoisted from the sites") ||
	      !strstr(strstr(out, "// gpuext: hoisted from the sites"), "%laneid") ||
	      strstr(strstr(out, "// gpuext: hoisted from the sites"), "%laneid") >
	      strstr(out, "ld.param"));
	assemble(out, what);
out:
	free(out);
	free(probes);
	gpuext_object__close(obj);
	gpuext_runtime__free(rt);
}

int main(void)
{
	test_early_return();
	test_forms();
	test_text_shapes();
	test_left_alone();
	test_hoist_region();
	splice_early(GPUEXT_TEST_BPF_DIR "/probe_all.bpf.o", "probe_all (warp)");
	splice_early(GPUEXT_TEST_BPF_DIR "/probe_guards.bpf.o", "probe_guards (warp)");
	splice_early(GPUEXT_TEST_PROBE_DIR "/threadhist.bpf.o", "threadhist (warp)");
	if (ptxas[0] && !access(ptxas, X_OK))
		printf("test_nv_exits: %u outputs assembled with ptxas\n", assembled);
	else
		printf("test_nv_exits: no ptxas: outputs not assembled\n");
	return test_done("test_nv_exits");
}

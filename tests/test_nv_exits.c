/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Exit splitting (hal/nvidia/ptx_exits.c): every branch to a kernel's shared
 * `ret;` gets a `ret;` of its own, and nothing else changes. Hand-written
 * modules with the exact text expected, the cases the pass must leave
 * alone, and (where ptxas is found) every output assembled for sm_90.
 * How the splicer uses it is in tests/test_nv_splice.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
static void test_early_return(void)
{
	static const char in[] = HEAD
		".visible .entry k(\n\t.param .u64 k_p,\n\t.param .u32 k_n\n)\n{\n"
		"\t.reg .pred \t%p<2>;\n\t.reg .b32 \t%r<3>;\n\t.reg .b64 \t%rd<4>;\n\n"
		"\tld.param.u64 \t%rd1, [k_p];\n\tld.param.u32 \t%r1, [k_n];\n"
		"\tmov.u32 \t%r2, %tid.x;\n\tsetp.ge.s32 \t%p1, %r2, %r1;\n"
		"\t@%p1 bra \t$L__BB0_2;\n\n"
		"\tcvta.to.global.u64 \t%rd2, %rd1;\n\tmul.wide.s32 \t%rd3, %r2, 4;\n"
		"\tadd.s64 \t%rd2, %rd2, %rd3;\n\tst.global.u32 \t[%rd2], %r2;\n\n"
		"$L__BB0_2:\n\tret;\n\n}\n";
	static const char want[] = HEAD
		".visible .entry k(\n\t.param .u64 k_p,\n\t.param .u32 k_n\n)\n{\n"
		"\t.reg .pred \t%p<2>;\n\t.reg .b32 \t%r<3>;\n\t.reg .b64 \t%rd<4>;\n\n"
		"\tld.param.u64 \t%rd1, [k_p];\n\tld.param.u32 \t%r1, [k_n];\n"
		"\tmov.u32 \t%r2, %tid.x;\n\tsetp.ge.s32 \t%p1, %r2, %r1;\n"
		"\t@%p1 bra \t$__gxr1;\n\n"
		"\tcvta.to.global.u64 \t%rd2, %rd1;\n\tmul.wide.s32 \t%rd3, %r2, 4;\n"
		"\tadd.s64 \t%rd2, %rd2, %rd3;\n\tst.global.u32 \t[%rd2], %r2;\n\n"
		"$L__BB0_2:\n\tret;\n\n$__gxr1:\n\tret;\n}\n";

	expect("early return", in, want, 1);
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

int main(void)
{
	test_early_return();
	test_forms();
	test_left_alone();
	if (ptxas[0] && !access(ptxas, X_OK))
		printf("test_nv_exits: %u outputs assembled with ptxas\n", assembled);
	else
		printf("test_nv_exits: no ptxas: outputs not assembled\n");
	return test_done("test_nv_exits");
}

/* SPDX-License-Identifier: Apache-2.0 */
/* What the splicer's two tests share (tests/test_nv_splice.c, tests/test_nv_splice_parts.c). */
#ifndef GPUEXT_TESTS_NV_SPLICE_TEST_H
#define GPUEXT_TESTS_NV_SPLICE_TEST_H

#include <string.h>

/* A probe module written by hand: each probe counts its calls in a global. */
static const char hand_probes[] =
	"// gpuext-ptx-version 7.8\n"
	"// gpuext-ptx-target sm_75\n"
	".visible .global .align 8 .u64 gpuext_test_calls[4];\n"
	".visible .global .align 4 .u32 gpuext_rt_gpu_id;\n"
	".func gpuext_probe_entry(.param .b64 e_k, .param .b64 e_g, .param .b64 e_a, "
	".param .b64 e_v, .param .b32 e_s)\n"
	"{\n\t.reg .b64 %rd<3>;\n\tld.param.u64 %rd1, [e_k];\n"
	"\tatom.global.add.u64 %rd2, [gpuext_test_calls], 1;\n\tret;\n}\n"
	".func gpuext_probe_exit(.param .b64 x_k, .param .b64 x_g, .param .b64 x_a, "
	".param .b64 x_v, .param .b32 x_s)\n"
	"{\n\t.reg .b64 %rd<2>;\n\tatom.global.add.u64 %rd1, [gpuext_test_calls+8], 1;\n\tret;\n}\n"
	".func gpuext_probe_load(.param .b64 l_k, .param .b64 l_g, .param .b64 l_a, "
	".param .b64 l_v, .param .b32 l_s)\n"
	"{\n\t.reg .b64 %rd<3>;\n\tld.param.u64 %rd1, [l_a];\n"
	"\tatom.global.add.u64 %rd2, [gpuext_test_calls+16], %rd1;\n\tret;\n}\n"
	".func gpuext_probe_store(.param .b64 s_k, .param .b64 s_g, .param .b64 s_a, "
	".param .b64 s_v, .param .b32 s_s)\n"
	"{\n\t.reg .b64 %rd<2>;\n\tatom.global.add.u64 %rd1, [gpuext_test_calls+24], 1;\n\tret;\n}\n";

/* Occurrences of @s in @t. */
static inline unsigned count_str(const char *t, const char *s)
{
	unsigned n = 0;

	for (const char *p = strstr(t, s); p; p = strstr(p + 1, s))
		n++;
	return n;
}

#endif

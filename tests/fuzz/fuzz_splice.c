/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the PTX splicer (hal/nvidia/ptx_splice.c and the
 * files it uses: ptx_scan, ptx_exits, ptx_inline, ptx_hoist, ptx_text) and
 * for the probes' L2 rewrite (ptx_text.c). The PTX comes from the
 * applications libgpuext-nvprobe.so is preloaded into (nvcc, clang, NVRTC,
 * Triton, hand-written): a crash here is a crash of the user's app. Any text
 * must give spliced PTX or an error message (not empty), never a crash, an
 * out-of-bounds read or a leak; and splicing is deterministic (the same
 * input twice, the same bytes or the same error), as the splice cache
 * relies on.
 *
 * The first byte picks the pack: bits 0-3 which of the four probes it has
 * (entry, exit, load, store; none set: all four), bit 4 per-thread mode,
 * bit 5 a kernel filter ("*k*"), bit 6 the L2 rewrite on the rest of the
 * input (as if it were a pack's probe text) instead of the splicer. Seed
 * with PTX behind a 0 byte (tools/test.sh: tests/nv/splice's .ptx, and its
 * .cu compiled by nvcc where there is one) and the PTX words of ptx.dict:
 *
 *   fuzz_splice -dict=tests/fuzz/ptx.dict -max_total_time=60 corpus/
 *   GPUEXT_FUZZ_STATS=1 fuzz_splice ...   # inputs spliced / refused at exit
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef GPUEXT_NV_SPLICE_LINKED
#include "nvprobe.h"
#include "ptx_text.h"

/*
 * Probe functions written by hand in the shapes the PTX emitter gives them
 * (codegen/ptx/ptx_probe.c): a lane election, a constant table read,
 * branches, labels, atomics, an early ret, the ctx words comment and site
 * guards, so the inliner and the hoister see what they see in real packs.
 */
static const char *const probe_text[4] = {
	".func gpuext_probe_entry(.param .b64 e_k, .param .b64 e_g, .param .b64 e_a, "
	".param .b64 e_v, .param .b32 e_s)\n"
	"{\n\t.reg .pred %p<3>;\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<5>;\n"
	"\tld.param.u64 %rd1, [e_k];\n\tmov.u32 %r1, %laneid;\n\tsetp.ne.s32 %p1, %r1, 0;\n"
	"\t@%p1 bra $L__e_out;\n\tmov.u32 %r2, %smid;\n\tmul.wide.u32 %rd2, %r2, 8;\n"
	"\tld.const.u64 %rd3, [gpuext_rt_maps];\n\tadd.s64 %rd4, %rd3, %rd2;\n"
	"\tatom.global.add.u64 %rd3, [%rd4], %rd1;\n$L__e_out:\n\tret;\n}\n",
	".func gpuext_probe_exit(.param .b64 x_k, .param .b64 x_g, .param .b64 x_a, "
	".param .b64 x_v, .param .b32 x_s)\n"
	"{\n\t.reg .pred %p<2>;\n\t.reg .b64 %rd<4>;\n"
	"\tmov.u64 %rd1, %globaltimer;\n\tld.const.u64 %rd2, [gpuext_rt_maps+8];\n"
	"\tsetp.eq.s64 %p1, %rd2, 0;\n\t@%p1 ret;\n"
	"\tred.relaxed.gpu.global.max.u64 [%rd2], %rd1;\n\tret;\n}\n",
	".func gpuext_probe_load(.param .b64 l_k, .param .b64 l_g, .param .b64 l_a, "
	".param .b64 l_v, .param .b32 l_s)\n"
	"{\n\t.reg .b32 %r<2>;\n\t.reg .b64 %rd<4>;\n"
	"\tld.param.u64 %rd1, [l_a];\n\tld.param.u32 %r1, [l_s];\n\tcvt.u64.u32 %rd2, %r1;\n"
	"\tadd.s64 %rd3, %rd1, %rd2;\n\tatom.global.add.u64 %rd1, [gpuext_rt_maps_g], %rd3;\n"
	"\tret;\n}\n",
	".func gpuext_probe_store(.param .b64 s_k, .param .b64 s_g, .param .b64 s_a, "
	".param .b64 s_v, .param .b32 s_s)\n"
	"{\n\t.reg .b64 %rd<3>;\n\tld.param.u64 %rd1, [s_v];\n\tld.param.u64 %rd2, [s_g];\n"
	"\txor.b64 %rd1, %rd1, %rd2;\n\tred.global.add.u64 [gpuext_rt_maps_g+8], %rd1;\n"
	"\tret;\n}\n",
};

static const char pack_head[] =
	"// gpuext-ptx-version 7.8\n"
	"// gpuext-ptx-target sm_75\n"
	"// gpuext-site-guards 0 1 0 0\n"
	".visible .const .align 8 .b8 gpuext_rt_maps[64];\n"
	".visible .global .align 8 .b8 gpuext_rt_maps_g[64];\n"
	".visible .const .align 4 .u32 gpuext_rt_gpu_id;\n";

static unsigned long n_spliced, n_refused, n_sites;
static char last_err[256];

static void print_stats(void)
{
	fprintf(stderr, "fuzz_splice: %lu inputs spliced (%lu sites), %lu refused (last: %s)\n",
		n_spliced, n_sites, n_refused, last_err[0] ? last_err : "-");
}

/* Two runs must agree byte for byte (the splice cache keys on the input). */
static void splice_twice(const char *ptx, size_t len, const struct gx_pack *pk)
{
	char err[256] = "", err2[256] = "", *out = NULL, *out2 = NULL;
	size_t olen = 0, olen2 = 0;
	struct gx_splice_stats st;
	int rc, rc2;

	rc = gx_ptx_splice(ptx, len, pk, &out, &olen, &st, err, sizeof(err));
	if (rc == 0 && (!out || strlen(out) != olen))
		abort();
	if (rc != 0 && rc != -ENOMEM && !err[0])
		abort();	/* an error must say what is wrong */
	if (rc == 0) {
		n_spliced++;
		n_sites += st.entry_sites + st.exit_sites + st.load_sites + st.store_sites;
	} else {
		n_refused++;
		snprintf(last_err, sizeof(last_err), "%s", err);
	}
	rc2 = gx_ptx_splice(ptx, len, pk, &out2, &olen2, NULL, err2, sizeof(err2));
	if (rc2 != rc || (rc == 0 && (olen2 != olen || memcmp(out, out2, olen))) ||
	    (rc != 0 && strcmp(err, err2)))
		abort();
	free(out);
	free(out2);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
#ifdef GPUEXT_NV_SPLICE_LINKED
	static char pack_ptx[4096];
	struct gx_pack pk;
	uint8_t sel;
	char *text;
	size_t n, at;

	static bool once;

	if (!once) {
		once = true;
		if (getenv("GPUEXT_FUZZ_STATS"))
			atexit(print_stats);
	}
	if (size < 1)
		return 0;
	sel = data[0];
	n = size - 1;
	/* The splicer takes PTX text: a C string, as the driver does (cuModuleLoadData). */
	text = malloc(n + 1);
	if (!text)
		return 0;
	memcpy(text, data + 1, n);
	text[n] = '\0';
	n = strlen(text);
	if (sel & 0x40) {
		char *out = NULL;
		size_t olen = 0;
		unsigned cnt = 0;

		if (gx_ptx_probes_l2keep(text, n, 0x14f0000000000000ull, &out, &olen, &cnt) == 0 &&
		    out && strlen(out) != olen)
			abort();
		free(out);
		free(text);
		return 0;
	}
	memset(&pk, 0, sizeof(pk));
	pk.events = sel & 0xf ? sel & 0xf : 0xf;
	pk.per_thread = sel & 0x10;
	if (sel & 0x20)
		strcpy(pk.kernel_filter, "*k*");
	at = (size_t)snprintf(pack_ptx, sizeof(pack_ptx), "%s", pack_head);
	for (int e = 0; e < 4; e++)
		if (pk.events & (1u << e))
			at += (size_t)snprintf(pack_ptx + at, sizeof(pack_ptx) - at, "%s", probe_text[e]);
	pk.ptx = pack_ptx;
	pk.ptx_len = at;
	splice_twice(text, n, &pk);
	free(text);
#else
	(void)data;
	(void)size;
#endif
	return 0;
}

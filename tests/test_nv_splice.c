/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The PTX splicer (hal/nvidia/ptx_splice.c) on real compiler output and on
 * hand-written edge cases:
 *
 *  - the tests/nv/splice CUDA sources compiled at test time with `nvcc --ptx` (vector
 *    add, tiled GEMM with shared memory, a reduction with divergent
 *    branches, early returns and a device function, vector/byte/.nc
 *    accesses, data-dependent exits), for compute_80 and compute_90, plus
 *    -G (generic accesses, DWARF .section blocks) and -lineinfo (.loc);
 *  - the same sources through clang's CUDA mode (LLVM's NVPTX printer, the
 *    one Triton and NVRTC-less JITs use), when this clang can;
 *  - tests/nv/splice/edge.ptx (comments, nested braces, initializers,
 *    predicated ret/exit, a .func callee, three entries, .version 7.0);
 *
 * each spliced with two packs (the real probes of tests/bpf/probe_all.bpf.c
 * from gpuext_ptx_probe_emit, warp and per-thread mode, and a hand-written
 * probe module) and assembled with ptxas for sm_80 and sm_90. Site counts
 * must equal an independent count of the input's global loads/stores and
 * exits; the output is deterministic; the kernel filter and a second splice
 * are checked. The parts that need no ptxas (the hoister, the inliner,
 * malformed PTX) are tests/test_nv_splice_parts.c.
 *
 * Exits 77 (skipped) without ptxas; without nvcc only the hand-written
 * inputs run (said loudly).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nv_impl.h"
#include "nvprobe.h"
#include "ptx/ptx.h"
#include "ptx_splice.h"
#include "nv_twins.h"
#include "ptx_text.h"
#include "testlib.h"
#include "nv/splice_test.h"

#define SPLICE_DIR GPUEXT_TEST_DATA_DIR "/nv/splice"
/* hal/nvidia/splice.cmake defines these; without it the tools are looked up in the environment. */
#ifndef GPUEXT_NVCC
#define GPUEXT_NVCC ""
#endif
#ifndef GPUEXT_CUDA_CLANG
#define GPUEXT_CUDA_CLANG ""
#endif

_Static_assert((int)GPUEXT_PTX_PROBE_ENTRY == (int)GX_PROBE_ENTRY &&
	       (int)GPUEXT_PTX_PROBE_EXIT == (int)GX_PROBE_EXIT &&
	       (int)GPUEXT_PTX_PROBE_LOAD == (int)GX_PROBE_LOAD &&
	       (int)GPUEXT_PTX_PROBE_STORE == (int)GX_PROBE_STORE,
	       "emitter and splicer agree on event numbers");
_Static_assert(GX_CTX_BYTES == 112 && GX_CTX_ARGS == 104 && GX_CTX_GPU == 100, "ctx layout");

static struct test_log logbuf;
static char ptxas[1024], nvcc[1024], clang[1024], tmpdir[64];


static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		if (buf) {
			buf[n] = '\0';
			if (len)
				*len = (size_t)n;
		}
	}
	fclose(f);
	return buf;
}

static int run_cmd(const char *cmd, char *out, size_t out_len)
{
	FILE *p = popen(cmd, "r");
	size_t n = 0;
	int st;

	if (!p)
		return -1;
	n = fread(out, 1, out_len - 1, p);
	out[n] = '\0';
	st = pclose(p);
	return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

static bool assemble(const char *text, size_t len, const char *sm, const char *what)
{
	char path[128], cmd[1400], out[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/spliced.ptx", tmpdir);
	f = fopen(path, "w");
	if (!f || fwrite(text, 1, len, f) != len) {
		if (f)
			fclose(f);
		return false;
	}
	fclose(f);
	snprintf(cmd, sizeof(cmd), "'%s' -arch=%s -o /dev/null '%s' 2>&1", ptxas, sm, path);
	if (run_cmd(cmd, out, sizeof(out))) {
		fprintf(stderr, "%s: ptxas -arch=%s failed:\n%s\n", what, sm, out);
		if (getenv("GPUEXT_TEST_VERBOSE"))
			fprintf(stderr, "%s\n", text);
		return false;
	}
	return true;
}

/* ------------------------------------------------------------------ */
/* An independent count of the sites: line by line, no statement parser */
/* ------------------------------------------------------------------ */

struct counts {
	unsigned kernels, loads, stores, exits;
};

static bool has_space(const char *op, const char *space)
{
	const char *p = strstr(op, space);
	size_t n = strlen(space);

	return p && (p[n] == '.' || p[n] == ':' || p[n] == '\0');
}

/*
 * Counts what the splicer must instrument in @ptx: in kernel bodies (those
 * @only_kernel prefixes, if set) exits, loads and stores; without a filter,
 * the loads and stores of .func bodies too (not their ret: no kernel exit).
 */
static void count_sites(const char *ptx, const char *only_kernel, struct counts *c)
{
	bool in_comment = false, in_entry = false, counting = false;
	bool func_pending = false, in_func = false;
	int depth = 0;

	memset(c, 0, sizeof(*c));
	for (const char *l = ptx; *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		char line[1024], op[128];
		char *p = line, *cm;

		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, l, n);
		line[n] = '\0';
		l = nl ? nl + 1 : l + n;
		/* comments */
		if (in_comment) {
			cm = strstr(line, "*/");
			if (!cm)
				continue;
			memmove(line, cm + 2, strlen(cm + 2) + 1);
			in_comment = false;
		}
		if ((cm = strstr(line, "//")))
			*cm = '\0';
		if ((cm = strstr(line, "/*"))) {
			in_comment = !strstr(cm, "*/");
			*cm = '\0';
		}
		if (!in_entry && strstr(line, ".entry ")) {
			char *name = strstr(line, ".entry ") + 7;

			in_entry = true;
			c->kernels++;
			counting = !only_kernel || !strncmp(name, only_kernel, strlen(only_kernel));
		}
		/* a .func header: a body if '{' comes before a ';' (a prototype) */
		if (!in_entry && !in_func && depth == 0 && strstr(line, ".func"))
			func_pending = true;
		if (func_pending && depth == 0 && strchr(line, '{')) {
			func_pending = false;
			in_func = true;
			counting = !only_kernel;
		} else if (func_pending && depth == 0 && strchr(line, ';')) {
			func_pending = false;
		}
		for (char *q = line; *q; q++) {
			if (*q == '{' && !(q > line && strchr(",", q[-1])) && !strchr(line, '['))
				depth++;
			if (*q == '}' && depth > 0 && !strchr(line, '[')) {
				if (--depth == 0)
					in_entry = in_func = false;
			}
		}
		if (!(in_entry || in_func) || !counting)
			continue;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '@') {
			while (*p && *p != ' ' && *p != '\t')
				p++;
			while (*p == ' ' || *p == '\t')
				p++;
		}
		sscanf(p, "%127s", op);
		if (!*p)
			continue;
		if (!strcmp(op, "ret;") || !strcmp(op, "ret") || !strncmp(op, "ret.", 4) ||
		    !strcmp(op, "exit;") || !strcmp(op, "exit")) {
			c->exits += in_entry || (in_func && !strncmp(op, "exit", 4));
			continue;
		}
		if (strncmp(op, "ld.", 3) && strncmp(op, "ldu.", 4) && strncmp(op, "st.", 3))
			continue;
		if (has_space(op, ".shared") || has_space(op, ".local") || has_space(op, ".param") ||
		    has_space(op, ".const") || strstr(op, ".async") || strstr(op, ".bulk"))
			continue;
		if (op[0] == 'l')
			c->loads++;
		else
			c->stores++;
	}
}


/* ------------------------------------------------------------------ */

struct pack_case {
	const char *name;
	struct gx_pack pack;
};

static unsigned spliced_inputs, assembled_outputs;

/*
 * Splices @ptx with @pc, checks the counts against the independent count,
 * determinism, and assembles for @sms.
 */
static void splice_one(const char *what, const char *ptx, size_t len, const struct pack_case *pc,
		       const char *const *sms, int nsms)
{
	struct gx_splice_stats st, st2;
	struct counts c;
	char err[256], label[256], *out = NULL, *out2 = NULL, *one;
	size_t olen = 0, olen2 = 0;
	int rc;

	snprintf(label, sizeof(label), "%s + %s", what, pc->name);
	count_sites(ptx, NULL, &c);
	rc = gx_ptx_splice(ptx, len, &pc->pack, &out, &olen, &st, err, sizeof(err));
	CHECK_EQ_INT(rc, 0);
	if (rc) {
		fprintf(stderr, "%s: %s\n", label, err);
		return;
	}
	spliced_inputs++;
	CHECK_EQ_U64(olen, strlen(out));
	/*
	 * Every instrumented kernel whose probes read a z register has a flat
	 * twin after it (ptx_twin.c); the counts below are of the kernels'
	 * splices, once each (one), and the twins go to ptxas with the rest.
	 */
	one = strdup(out);
	CHECK(one != NULL);
	if (!one) {
		free(out);
		return;
	}
	CHECK_EQ_INT(nv_drop_twins(one), st.flat_twins);
	CHECK_EQ_INT(count_str(out, ".entry ") - count_str(one, ".entry "), st.flat_twins);
	CHECK(st.flat_twins <= st.instrumented);
	CHECK_EQ_INT(st.kernels, c.kernels);
	CHECK_EQ_INT(st.instrumented, c.kernels);
	CHECK_EQ_INT(st.entry_sites, c.kernels);
	/*
	 * Exit probes split the exits (ptx_exits.c): a site more for
	 * each branch given its own ret, whose label it names once and defines
	 * once.
	 */
	CHECK_EQ_INT(st.exit_sites, c.exits + st.exits_split);
	if (st.exits_split)
		CHECK(pc->pack.events & (1u << GX_PROBE_EXIT));
	CHECK_EQ_INT(count_str(one, "$__gxr"), 2 * st.exits_split);
	CHECK_EQ_INT(st.load_sites, c.loads);
	CHECK_EQ_INT(st.store_sites, c.stores);
	if (st.load_sites != c.loads || st.store_sites != c.stores ||
	    st.exit_sites != c.exits + st.exits_split)
		fprintf(stderr, "%s: spliced %u/%u/%u, counted %u/%u/%u (loads/stores/exits)\n",
			label, st.load_sites, st.store_sites, st.exit_sites, c.loads, c.stores,
			c.exits + st.exits_split);
	/* Every site is one call in the output. */
	CHECK_EQ_INT(count_str(one, "// gpuext: gpuext_probe_entry inlined"), st.entry_sites);
	CHECK_EQ_INT(count_str(one, "// gpuext: gpuext_probe_exit inlined"), st.exit_sites);
	CHECK_EQ_INT(count_str(one, "// gpuext: gpuext_probe_load inlined"), st.load_sites);
	CHECK_EQ_INT(count_str(one, "// gpuext: gpuext_probe_store inlined"), st.store_sites);
	/* A load or store site's lanes reconverge after its body (ptx_splice.c, emit_site). */
	CHECK_EQ_INT(count_str(one, "\tbar.warp.sync %gxs_m;\n"),
		     st.load_sites + st.store_sites);
	/* Inlined, never called: cuLink's relocatable JIT would not inline a call. */
	CHECK(!strstr(one, "call gpuext_probe_"));
	/* One entry call per kernel, and no context in local memory (the probes build it). */
	CHECK_EQ_INT(count_str(one, "// gpuext: entry probe"), c.kernels);
	CHECK(!strstr(one, "_ctx["));
	/* The argument buffer is computed only when a probe reads ctx->args (offset 104). */
	if (c.kernels && strstr(pc->pack.ptx, "// gpuext-ctx-words 0x010100f3\n"))
		CHECK(!strstr(one, "cvta.param.u64"));
	else if (c.kernels && !strstr(pc->pack.ptx, "// gpuext-ctx-words") && strstr(ptx, "_param_0"))
		CHECK(strstr(one, "cvta.param.u64") != NULL);
	/* Deterministic. */
	rc = gx_ptx_splice(ptx, len, &pc->pack, &out2, &olen2, &st2, err, sizeof(err));
	CHECK(!rc && olen2 == olen && !memcmp(out, out2, olen));
	free(out2);
	/* Spliced twice: refused, not doubled. */
	out2 = NULL;
	CHECK_EQ_INT(gx_ptx_splice(out, olen, &pc->pack, &out2, &olen2, NULL, err, sizeof(err)),
		     -EEXIST);
	CHECK(!out2);
	for (int i = 0; i < nsms; i++) {
		char l2[300];

		snprintf(l2, sizeof(l2), "%s [%s]", label, sms[i]);
		test_checks++;
		if (assemble(out, olen, sms[i], l2))
			assembled_outputs++;
		else
			test_fail(__FILE__, __LINE__, "%s: spliced PTX does not assemble", l2);
	}
	free(one);
	free(out);
}

/* Generates PTX for @cu with nvcc; NULL (and a failure) if nvcc fails. */
static char *nvcc_ptx(const char *cu, const char *arch, const char *flags, size_t *len)
{
	char cmd[2048], out[4096], path[256];
	char *ptx;

	snprintf(path, sizeof(path), "%s/%s-%s.ptx", tmpdir, cu, arch);
	snprintf(cmd, sizeof(cmd), "'%s' --ptx -arch=%s %s -o '%s' '%s/%s.cu' 2>&1", nvcc, arch,
		 flags, path, SPLICE_DIR, cu);
	if (run_cmd(cmd, out, sizeof(out))) {
		test_fail(__FILE__, __LINE__, "nvcc failed on %s.cu: %s", cu, out);
		return NULL;
	}
	ptx = read_file(path, len);
	unlink(path);
	return ptx;
}

/*
 * LLVM's NVPTX output for @cu (clang in CUDA mode, device side only, nvcc's
 * headers); NULL when this clang cannot compile CUDA (said, not failed: a
 * clang without CUDA support is no fault of the splicer).
 */
static char *clang_ptx(const char *cu, size_t *len)
{
	char cmd[3072], out[4096], path[256], cuda[1024];
	char *ptx, *slash;

	snprintf(cuda, sizeof(cuda), "%s", nvcc);
	slash = strrchr(cuda, '/');
	if (slash)
		*slash = '\0';
	slash = strrchr(cuda, '/');
	if (slash)
		*slash = '\0'; /* .../cuda/bin/nvcc -> .../cuda */
	snprintf(path, sizeof(path), "%s/%s-llvm.ptx", tmpdir, cu);
	snprintf(cmd, sizeof(cmd), "'%s' -x cuda --cuda-device-only -S -O2 --cuda-gpu-arch=sm_80 "
		 "--cuda-path='%s' -Wno-unknown-cuda-version -o '%s' '%s/%s.cu' 2>&1", clang, cuda,
		 path, SPLICE_DIR, cu);
	if (run_cmd(cmd, out, sizeof(out))) {
		printf("test_nv_splice: %s cannot compile CUDA here (%.200s): LLVM-made PTX of %s.cu "
		       "is NOT checked\n", clang, out, cu);
		return NULL;
	}
	ptx = read_file(path, len);
	unlink(path);
	return ptx;
}

static void test_inputs(struct pack_case *packs, int npacks)
{
	static const char *const cus[] = { "vadd", "gemm", "reduce", "vecmem", "predexit" };
	static const char *const both[] = { "sm_80", "sm_90" };
	static const char *const only90[] = { "sm_90" };
	size_t len;
	char *ptx;

	/* The hand-written module: its known counts first (the counter's own check). */
	ptx = read_file(SPLICE_DIR "/edge.ptx", &len);
	CHECK(ptx);
	if (ptx) {
		struct counts c;

		count_sites(ptx, NULL, &c);
		CHECK_EQ_INT(c.kernels, 3);
		CHECK_EQ_INT(c.loads, 9);	/* 8 in kernels, 1 in helper */
		CHECK_EQ_INT(c.stores, 9);
		CHECK_EQ_INT(c.exits, 6);	/* 5 in kernels, 1 in quit_if_zero */
		for (int p = 0; p < npacks; p++)
			splice_one("edge.ptx", ptx, len, &packs[p], both, 2);
		free(ptx);
	}
	if (!nvcc[0]) {
		printf("test_nv_splice: nvcc not found: the nvcc-generated inputs are NOT checked\n");
		return;
	}
	for (size_t i = 0; i < sizeof(cus) / sizeof(cus[0]); i++) {
		for (int a = 0; a < 2; a++) {
			char what[128];

			ptx = nvcc_ptx(cus[i], a ? "compute_90" : "compute_80", "", &len);
			if (!ptx)
				continue;
			snprintf(what, sizeof(what), "%s.cu (%s)", cus[i], a ? "compute_90" : "compute_80");
			for (int p = 0; p < npacks; p++)
				splice_one(what, ptx, len, &packs[p], a ? only90 : both, a ? 1 : 2);
			free(ptx);
		}
	}
	/* -G: generic accesses everywhere, DWARF sections; -lineinfo: .loc lines. */
	ptx = nvcc_ptx("reduce", "compute_80", "-G", &len);
	if (ptx) {
		CHECK_STR_CONTAINS(ptx, ".section");
		for (int p = 0; p < npacks; p++)
			splice_one("reduce.cu -G", ptx, len, &packs[p], both, 2);
		free(ptx);
	}
	/* LLVM's NVPTX printer (what Triton and clang produce) for the same sources. */
	for (size_t i = 0; clang[0] && i < sizeof(cus) / sizeof(cus[0]); i++) {
		char what[128];

		ptx = clang_ptx(cus[i], &len);
		if (!ptx)
			break;
		CHECK_STR_CONTAINS(ptx, "Generated by LLVM NVPTX Back-End");
		snprintf(what, sizeof(what), "%s.cu (clang)", cus[i]);
		for (int p = 0; p < npacks; p++)
			splice_one(what, ptx, len, &packs[p], both, 2);
		free(ptx);
	}
	ptx = nvcc_ptx("gemm", "compute_80", "-lineinfo", &len);
	if (ptx) {
		CHECK_STR_CONTAINS(ptx, ".loc");
		for (int p = 0; p < npacks; p++)
			splice_one("gemm.cu -lineinfo", ptx, len, &packs[p], both, 2);
		free(ptx);
	}
}

/* What the splicer writes, checked on the hand-written module. */
static void test_details(const struct gx_pack *hand)
{
	struct gx_splice_stats st;
	struct gx_pack pk = *hand;
	char err[256], *out = NULL, *ptx, id[64];
	size_t len = 0, olen = 0;

	ptx = read_file(SPLICE_DIR "/edge.ptx", &len);
	if (!ptx) {
		CHECK(ptx);
		return;
	}
	CHECK_EQ_INT(gx_ptx_splice(ptx, len, &pk, &out, &olen, &st, err, sizeof(err)), 0);
	if (out) {
		const char *e1 = strstr(out, ".visible .entry edge_one("), *lbl;

		/* .version 7.0 raised to what the probes ask for (7.8). */
		CHECK_STR_CONTAINS(out, ".version 7.8\n.target sm_75");
		CHECK(!strstr(out, ".version 7.0"));
		/* The probes (globals first) before the first function; gpu id is theirs. */
		CHECK(strstr(out, "// gpuext: device probes spliced in") &&
		      strstr(out, "// gpuext: device probes spliced in") <
		      strstr(out, ".func (.param .b32 func_retval0) helper("));
		CHECK_EQ_INT(count_str(out, ".visible .global .align 4 .u32 gpuext_rt_gpu_id;"), 1);
		/* The kernel id immediate. */
		snprintf(id, sizeof(id), "mov.u64 %%gxs_d, %llu;",
			 (unsigned long long)gx_kernel_id("edge_one", 8));
		CHECK_STR_CONTAINS(out, id);
		/* The entry probe runs before the kernel's first label. */
		lbl = e1 ? strstr(e1, "$L_top:") : NULL;
		CHECK(e1 && lbl && strstr(e1, "// gpuext: gpuext_probe_entry inlined") < lbl);
		/* args: the first parameter's generic address (sm_75 >= sm_70). */
		CHECK_STR_CONTAINS(out, "mov.u64 %gxs_c, edge_one_param_0;\n"
				   "\tcvta.param.u64 %gxs_c, %gxs_c;\n");
		/* edge_two has no parameter: args = 0. */
		CHECK_STR_CONTAINS(strstr(out, "edge_two()"), "mov.u64 %gxs_c, 0;\n");
		/* The load probe's "ld.param [l_a]" reads the site's address register. */
		CHECK_STR_CONTAINS(out, "\tmov.b64 %rd1, %gxs_a;\n\tatom.global.add.u64 %rd2, "
				   "[gpuext_test_calls+16], %rd1;\n\tbra $gxs_I");
		CHECK_EQ_INT(count_str(out, "[l_a]"), 1);	/* only in the definition */
		/* A predicated ret: the probe is skipped when the predicate is false. */
		CHECK_STR_CONTAINS(out, "\t@!%p1 bra $gxs_L");
		CHECK_STR_CONTAINS(out, "\t@!%p2 bra $gxs_L");
		/* The address before the load that overwrites its register, offset kept. */
		CHECK_STR_CONTAINS(out, "mov.b64 %gxs_a, %rd4;\n\tadd.s64 %gxs_a, %gxs_a, -4;");
		CHECK_STR_CONTAINS(out, "mov.u64 %gxs_a, table;\n\tcvta.global.u64 %gxs_a, %gxs_a;\n"
				   "\tadd.s64 %gxs_a, %gxs_a, 4;");
		/* Store values: a byte of a 16-bit and of a 32-bit register, immediates. */
		CHECK_STR_CONTAINS(out, "mov.b16 %gxs_h, %rs1;\n\tcvt.u64.u16 %gxs_v, %gxs_h;\n"
				   "\tand.b64 %gxs_v, %gxs_v, 255;");
		CHECK_STR_CONTAINS(out, "mov.b32 %gxs_r0, %r4;\n\tcvt.u64.u32 %gxs_v, %gxs_r0;\n"
				   "\tand.b64 %gxs_v, %gxs_v, 255;");
		CHECK_STR_CONTAINS(out, "mov.u64 %gxs_v, 7;");
		CHECK_STR_CONTAINS(out, "mov.u64 %gxs_v, 1065353216;");
		/* Vector store: first element, 16 bytes. */
		CHECK_STR_CONTAINS(out, "\t@%p1 bra $gxs_L2;\n\tmov.b64 %gxs_a, %rd2;\n"
				   "\tadd.s64 %gxs_a, %gxs_a, 16;\n\tmov.b32 %gxs_r0, %r3;\n"
				   "\tcvt.u64.u32 %gxs_v, %gxs_r0;\n"
				   "\t@!%p1 st.global.v4.u32 [%rd2+16], {%r3, %r4, %r5, %r2};\n");
		/* ... and the site passes address, value and size 16 to the inlined store probe. */
		CHECK_STR_CONTAINS(strstr(out, "\t@!%p1 st.global.v4.u32 [%rd2+16]"),
				   "\tmov.u32 %gxs_r0, 16;\n\tactivemask.b32 %gxs_m;\n"
				   "\t{\t// gpuext: gpuext_probe_store inlined");
		/* Generic accesses are probed only when global. */
		CHECK_EQ_INT(count_str(out, "isspacep.global %gxs_q, %gxs_a;"), 2);
		/* The callee's load is a site, with the callee's id; its ret is no exit site. */
		CHECK_STR_CONTAINS(out, "\tmov.b64 %gxs_a, %rd1;\n\tld.global.u32 %r1, [%rd1];\n"
				   "\tmov.b32 %gxs_r0, %r1;\n");
		snprintf(id, sizeof(id), "mov.u64 %%gxs_d, %llu;",
			 (unsigned long long)gx_kernel_id("helper", 6));
		CHECK_EQ_INT(count_str(out, id), 1);
		CHECK_EQ_INT(st.funcs_instrumented, 2);	/* helper (a load), quit_if_zero (its exit) */
		CHECK_STR_CONTAINS(out, "\n" GX_SPLICE_FUNC " helper\n");
		CHECK_STR_CONTAINS(out, "\n" GX_SPLICE_FUNC " quit_if_zero\n");
		CHECK_EQ_INT(st.load_sites, 9);
		CHECK_EQ_INT(st.store_sites, 9);
		CHECK_EQ_INT(st.exit_sites, 6);
		/* quit_if_zero's exit ends the thread: an exit site with its id, before the exit */
		snprintf(id, sizeof(id), "mov.u64 %%gxs_d, %llu;",
			 (unsigned long long)gx_kernel_id("quit_if_zero", 12));
		CHECK_EQ_INT(count_str(out, id), 1);
		CHECK(strstr(out, id) && strstr(strstr(out, id), "\texit;") &&
		      strstr(strstr(out, id), "\texit;") < strstr(out, ".entry edge_one"));
		/* Triton's spaced operands: "[ %rd2 + 48 ]", "{ %r10, %r11 }" */
		CHECK_STR_CONTAINS(out, "mov.b64 %gxs_a, %rd2;\n\tadd.s64 %gxs_a, %gxs_a, 48;\n"
				   "\t@%p2 ld.global.ca.v2.b32 { %r10, %r11 }, [ %rd2 + 48 ];\n"
				   "\tmov.b32 %gxs_r0, %r10;");
		free(out);
		out = NULL;
	}
	/* Only some events: only their sites. */
	pk.events = 1u << GX_PROBE_ENTRY | 1u << GX_PROBE_EXIT;
	CHECK_EQ_INT(gx_ptx_splice(ptx, len, &pk, &out, &olen, &st, err, sizeof(err)), 0);
	CHECK_EQ_INT(st.entry_sites, 3);
	CHECK_EQ_INT(st.exit_sites, 6);
	CHECK_EQ_INT(st.load_sites + st.store_sites, 0);
	if (out) {
		CHECK(!strstr(out, "gpuext_probe_load inlined") &&
		      !strstr(out, "gpuext_probe_store inlined"));
		CHECK_EQ_INT(count_str(out, "gpuext_probe_exit inlined"), 6);
		test_checks++;
		if (!assemble(out, olen, "sm_80", "edge.ptx entry+exit"))
			test_fail(__FILE__, __LINE__, "entry/exit-only splice does not assemble");
		free(out);
		out = NULL;
	}
	/*
	 * The PTX in nvcc's fatbins has no indentation ("exit;" starts a line):
	 * the same sites, the .func's exit included (on the GPU it was missed).
	 */
	{
		char *flat = malloc(len + 1), *o = flat;
		struct gx_splice_stats fst;

		for (size_t i = 0; flat && i < len; i++)
			if (!((ptx[i] == ' ' || ptx[i] == '\t') && (i == 0 || o == flat || o[-1] == '\n')))
				*o++ = ptx[i];
		CHECK(flat != NULL);
		if (flat) {
			memset(&fst, 0, sizeof(fst));
			CHECK_EQ_INT(gx_ptx_splice(flat, (size_t)(o - flat), &pk, &out, &olen, &fst, err,
						   sizeof(err)), 0);
			CHECK_EQ_INT(fst.exit_sites, 6);
			CHECK_EQ_INT(fst.entry_sites, 3);
			test_checks++;
			if (out && !assemble(out, olen, "sm_80", "edge.ptx unindented"))
				test_fail(__FILE__, __LINE__, "the unindented splice does not assemble");
			free(out);
			out = NULL;
			free(flat);
		}
	}
	/* The kernel filter: a glob over names. */
	pk = *hand;
	snprintf(pk.kernel_filter, sizeof(pk.kernel_filter), "edge_t*");
	CHECK_EQ_INT(gx_ptx_splice(ptx, len, &pk, &out, &olen, &st, err, sizeof(err)), 0);
	CHECK_EQ_INT(st.kernels, 3);
	CHECK_EQ_INT(st.instrumented, 2);
	CHECK_EQ_INT(st.entry_sites, 2);
	CHECK_EQ_INT(st.exit_sites, 2);
	CHECK_EQ_INT(st.load_sites, 1);
	CHECK_EQ_INT(st.store_sites, 1);
	if (out) {
		const char *e1 = strstr(out, ".visible .entry edge_one(");

		CHECK(e1 && strstr(e1, ".visible .entry edge_two") &&
		      !memmem(e1, (size_t)(strstr(e1, ".visible .entry edge_two") - e1), "gxs_", 4));
		free(out);
		out = NULL;
	}
	snprintf(pk.kernel_filter, sizeof(pk.kernel_filter), "nothing_*");
	CHECK_EQ_INT(gx_ptx_splice(ptx, len, &pk, &out, &olen, &st, err, sizeof(err)), 0);
	CHECK_EQ_INT(st.instrumented, 0);
	CHECK(out && olen == len && !memcmp(out, ptx, len));
	free(out);
	out = NULL;
	/* Our prefix avoids the module's names: a module already using gxs_ gets gxs1_. */
	{
		size_t l2 = len + 64;
		char *p2 = malloc(l2 + 1);

		if (p2) {
			snprintf(p2, l2 + 1, "%s\n// gxs_ appears here\n", ptx);
			pk = *hand;
			CHECK_EQ_INT(gx_ptx_splice(p2, strlen(p2), &pk, &out, &olen, &st, err,
						   sizeof(err)), 0);
			CHECK(out && strstr(out, "%gxs1_d") && strstr(out, "$gxs1_I1_end:"));
			free(out);
			out = NULL;
			free(p2);
		}
	}
	/* Site guards: entry sites test block (0,0,0), exit sites warp 0, each skipping the site. */
	{
		size_t hl = strlen(hand->ptx) + 64;
		char *hp = malloc(hl);

		if (hp) {
			snprintf(hp, hl, "// gpuext-site-guards 2 1 0 0\n%s", hand->ptx);
			pk = *hand;
			pk.ptx = hp;
			pk.ptx_len = strlen(hp);
			CHECK_EQ_INT(gx_ptx_splice(ptx, len, &pk, &out, &olen, &st, err, sizeof(err)), 0);
			/* each kernel's splice once: the flat twins (ptx_twin.c) repeat them */
			if (out) {
				CHECK_EQ_INT(nv_drop_twins(out), st.flat_twins);
				olen = strlen(out);
			}
			if (out) {
				const char *e1 = strstr(out, ".visible .entry edge_one(");
				const char *site = e1 ? strstr(e1, "// gpuext: entry probe") : NULL;

				const char *hoist = e1 ? strstr(e1, "// gpuext: hoisted from the sites") : NULL;

				/*
				 * At the entry: the block test, its branch past the site, then
				 * the site (the module's second: the first is helper's load).
				 * The exits' warp test is computed once at the function's
				 * start (hoisted, before any instruction of the kernel).
				 */
				CHECK(site && strstr(site, "mov.u32 %gxs_r0, %ctaid.x;") &&
				      strstr(site, "setp.ne.u32 %gxs_qb, %gxs_r0, 0;\n\t@%gxs_qb bra $gxs_G2;") <
				      strstr(site, "// gpuext: gpuext_probe_entry inlined"));
				CHECK(hoist && site && hoist < site &&
				      strstr(hoist, "setp.ge.u32 %gxs_qw, %gxs_r0, 32;") < site &&
				      strstr(hoist, "setp.ne.u32 %gxs_qb") > site);
				/* site 2, helper's exit: no warp barrier (the exit follows), the guard's label */
				CHECK_STR_CONTAINS(out, "$gxs_I2_end:\n\t}\n$gxs_G2:\n\texit;\n");
				/*
				 * 6 exits test warp 0, in the 3 kernels that have exits and in
				 * quit_if_zero (once each at the start); no entry site tests
				 * it; loads and stores test nothing. 3 kernels test block
				 * (0,0,0) for their entry.
				 */
				CHECK_EQ_INT(count_str(out, "@%gxs_qw bra $gxs_G"), 6);
				CHECK_EQ_INT(count_str(out, "setp.ge.u32 %gxs_qw, %gxs_r0, 32;"), 4);
				CHECK_EQ_INT(count_str(out, "@%gxs_qb bra $gxs_G"), 3);
				CHECK_EQ_INT(count_str(out, "%ctaid.x;\n\tmov.u32 %gxs_r1, %ctaid.y;"), 3);
				test_checks++;
				if (!assemble(out, olen, "sm_80", "edge.ptx with site guards"))
					test_fail(__FILE__, __LINE__, "the guarded splice does not assemble");
				free(out);
				out = NULL;
			}
			free(hp);
		}
	}
	/* An old module (.version 6.0, sm_52): raised to the pack's 7.8 and sm_75. */
	{
		static const char old[] =
			"// an sm_52 module\n.version 6.0\n.target sm_52\n.address_size 64\n\n"
			".visible .entry old_k(.param .u64 old_k_p)\n{\n\t.reg .b64 %rd<3>;\n"
			"\t.reg .b32 %r<2>;\n\tld.param.u64 %rd1, [old_k_p];\n"
			"\tcvta.to.global.u64 %rd2, %rd1;\n\tld.global.u32 %r1, [%rd2];\n"
			"\tst.global.u32 [%rd2+4], %r1;\n\tret;\n}\n";

		pk = *hand;
		CHECK_EQ_INT(gx_ptx_splice(old, sizeof(old) - 1, &pk, &out, &olen, &st, err,
					   sizeof(err)), 0);
		if (out) {
			CHECK_STR_CONTAINS(out, "// an sm_52 module\n.version 7.8\n"
					   ".target sm_75\n.address_size 64\n");
			CHECK_STR_CONTAINS(out, "cvta.param.u64 %gxs_c, %gxs_c;");
			CHECK_EQ_INT(st.load_sites + st.store_sites + st.exit_sites, 3);
			test_checks++;
			if (!assemble(out, olen, "sm_80", "old module"))
				test_fail(__FILE__, __LINE__, "the raised sm_52 module does not assemble");
			free(out);
			out = NULL;
		}
	}
	/*
	 * A .func body (a device function not inlined) gets load/store sites,
	 * global and generic ones (not shared), with the function's own id as
	 * the kernel id and no argument buffer; its ret is no exit site. With a
	 * kernel filter it gets none: its accesses are counted instead, so the
	 * preload library can say a memory trace misses them.
	 */
	{
		static const char fn[] =
			".version 7.8\n.target sm_75\n.address_size 64\n\n"
			".func (.param .b32 r) dev(.param .b64 p)\n{\n\t.reg .b64 %rd<3>;\n"
			"\t.reg .b32 %r<4>;\n\t.reg .pred %p<2>;\n\t.shared .align 4 .b8 sh[16];\n"
			"\tld.param.u64 %rd1, [p];\n\tld.global.u32 %r1, [%rd1];\n"
			"\tld.u32 %r2, [%rd1+4];\n\tld.shared.u32 %r3, [sh];\n"
			"\tsetp.ne.u32 %p1, %r1, 0;\n"
			"\t@%p1 st.global.v2.u32 [%rd1+8], {%r1, %r2};\n"
			"\tst.param.b32 [r], %r3;\n\tret;\n}\n"
			".visible .entry fk(.param .u64 fk_p)\n{\n\t.reg .b64 %rd<2>;\n"
			"\t.reg .b32 %r<2>;\n\tld.param.u64 %rd1, [fk_p];\n"
			"\tld.global.u32 %r1, [%rd1];\n\tret;\n}\n";

		const char *dev, *fk;

		pk = *hand;
		CHECK_EQ_INT(gx_ptx_splice(fn, sizeof(fn) - 1, &pk, &out, &olen, &st, err,
					   sizeof(err)), 0);
		CHECK_EQ_INT(st.funcs_instrumented, 1);
		CHECK_EQ_INT(st.func_accesses, 0);
		CHECK_EQ_INT(st.instrumented, 1);	/* kernels: fk */
		CHECK_EQ_INT(st.load_sites, 3);		/* dev's ld.global and ld, fk's ld.global */
		CHECK_EQ_INT(st.store_sites, 1);	/* dev's predicated st.global.v2 */
		CHECK_EQ_INT(st.exit_sites, 1);		/* fk's ret, not dev's */
		CHECK_EQ_INT(st.entry_sites, 1);	/* fk's */
		dev = out ? strstr(out, ") dev(") : NULL;
		fk = out ? strstr(out, ".entry fk(") : NULL;
		CHECK(dev && fk && dev < fk);
		if (dev && fk) {
			char id[64], *body = strndup(dev, (size_t)(fk - dev));

			snprintf(id, sizeof(id), "mov.u64 %%gxs_d, %llu;",
				 (unsigned long long)gx_kernel_id("dev", 3));
			CHECK(body != NULL);
			if (body) {
				CHECK_EQ_INT(count_str(body, id), 3);
				CHECK_EQ_INT(count_str(body, "mov.u64 %gxs_c, 0;"), 3);
				CHECK_EQ_INT(count_str(body, "gpuext_probe_load inlined"), 2);
				CHECK_EQ_INT(count_str(body, "gpuext_probe_store inlined"), 1);
				CHECK_EQ_INT(count_str(body, "gpuext_probe_exit inlined"), 0);
				CHECK_EQ_INT(count_str(body, "gpuext_probe_entry inlined"), 0);
				CHECK(!strstr(body, "ld.shared.u32 %r3, [sh];\n\t// gpuext"));
			}
			free(body);
		}
		/* which functions carry sites travels with the text, for kernels.txt */
		CHECK_STR_CONTAINS(out, "\n" GX_SPLICE_FUNC " dev\n");
		CHECK(out && !strstr(out, GX_SPLICE_UNTRACED));
		test_checks++;
		if (out && !assemble(out, olen, "sm_80", "instrumented .func"))
			test_fail(__FILE__, __LINE__, "the module with an instrumented .func does not "
				  "assemble");
		free(out);
		out = NULL;

		/*
		 * A .func taking registers (hand-written PTX): a stored parameter's
		 * value is captured at its width, not read as an unknown register (0).
		 */
		{
			static const char regp[] =
				".version 7.8\n.target sm_75\n.address_size 64\n\n"
				".func (.reg .b32 %rr) regf(.reg .b64 %pa, .reg .b32 %pv)\n{\n"
				"\tst.global.u32 [%pa], %pv;\n\tmov.b32 %rr, %pv;\n\tret;\n}\n"
				".visible .entry rk(.param .u64 rk_p)\n{\n\t.reg .b64 %rd<2>;\n"
				"\t.reg .b32 %r<3>;\n\tld.param.u64 %rd1, [rk_p];\n\tmov.u32 %r1, 7;\n"
				"\tcall (%r2), regf, (%rd1, %r1);\n\tret;\n}\n";
			char *o2 = NULL;
			size_t o2len = 0;

			pk = *hand;
			CHECK_EQ_INT(gx_ptx_splice(regp, sizeof(regp) - 1, &pk, &o2, &o2len, &st, err,
						   sizeof(err)), 0);
			CHECK_EQ_INT(st.store_sites, 1);
			CHECK_STR_CONTAINS(o2, "mov.b32 %gxs_r0, %pv;\n\tcvt.u64.u32 %gxs_v, %gxs_r0;");
			CHECK(o2 && !strstr(o2, "mov.u64 %gxs_v, 0;\n\tmov.u32 %gxs_r0, 4;"));
			test_checks++;
			if (o2 && !assemble(o2, o2len, "sm_80", ".func with .reg parameters"))
				test_fail(__FILE__, __LINE__, "a .func with .reg parameters, spliced, does "
					  "not assemble");
			free(o2);
		}

		/* a filter that takes every kernel of the module: the .func's callers are all traced */
		snprintf(pk.kernel_filter, sizeof(pk.kernel_filter), "fk");
		CHECK_EQ_INT(gx_ptx_splice(fn, sizeof(fn) - 1, &pk, &out, &olen, &st, err,
					   sizeof(err)), 0);
		CHECK_EQ_INT(st.funcs_instrumented, 1);
		CHECK_EQ_INT(st.func_accesses, 0);
		CHECK_EQ_INT(st.load_sites, 3);
		free(out);
		out = NULL;

		/* one that leaves a kernel out: the .func gets no site, its accesses are counted */
		{
			static const char other[] = ".visible .entry other_k()\n{\n\tret;\n}\n";
			char *fn2 = malloc(sizeof(fn) + sizeof(other));

			CHECK(fn2 != NULL);
			if (fn2) {
				snprintf(fn2, sizeof(fn) + sizeof(other), "%s%s", fn, other);
				CHECK_EQ_INT(gx_ptx_splice(fn2, strlen(fn2), &pk, &out, &olen, &st,
							   err, sizeof(err)), 0);
				CHECK_EQ_INT(st.kernels, 2);
				CHECK_EQ_INT(st.instrumented, 1);
				CHECK_EQ_INT(st.funcs_instrumented, 0);
				CHECK_EQ_INT(st.func_accesses, 3);	/* ld.global, ld, st.global.v2 */
				CHECK_EQ_INT(st.load_sites, 1);		/* fk's own */
				/* the count travels with the text (the splice cache gives back text only) */
				CHECK_STR_CONTAINS(out, "\n" GX_SPLICE_UNTRACED " 3\n");
				CHECK(out && !strstr(out, GX_SPLICE_FUNC));
				free(out);
				out = NULL;
				free(fn2);
			}
		}
	}
	/*
	 * Names of any length (C++ templates run to thousands of characters):
	 * the kernel id hashes the whole name, as kernels.txt does, and the
	 * first parameter (named after the kernel by nvcc) is found whole. A
	 * .func with no global access is instrumented but not listed.
	 */
	{
		size_t nl = 700, cap = 4 * nl + 1024;
		char *name = malloc(nl + 1), *fname = malloc(nl + 1), *mod = malloc(cap);

		CHECK(name && fname && mod);
		if (name && fname && mod) {
			char id[64];

			for (size_t i = 0; i < nl; i++) {
				name[i] = (char)('a' + i % 26);
				fname[i] = (char)('A' + i % 26);
			}
			name[nl] = fname[nl] = '\0';
			snprintf(mod, cap,
				 ".version 7.8\n.target sm_75\n.address_size 64\n\n"
				 ".func %s(.param .b64 f_p)\n{\n\t.reg .b64 %%rd<2>;\n\t.reg .b32 %%r<2>;\n"
				 "\tld.param.u64 %%rd1, [f_p];\n\tld.global.u32 %%r1, [%%rd1];\n\tret;\n}\n"
				 ".func quiet(.param .b32 q_p)\n{\n\t.reg .b32 %%r<2>;\n"
				 "\tld.param.u32 %%r1, [q_p];\n\tret;\n}\n"
				 ".visible .entry %s(.param .u64 %s_param_0)\n{\n\t.reg .b64 %%rd<2>;\n"
				 "\t.reg .b32 %%r<2>;\n\tld.param.u64 %%rd1, [%s_param_0];\n"
				 "\tld.global.u32 %%r1, [%%rd1];\n\tret;\n}\n", fname, name, name, name);
			pk = *hand;
			CHECK_EQ_INT(gx_ptx_splice(mod, strlen(mod), &pk, &out, &olen, &st, err,
						   sizeof(err)), 0);
			snprintf(id, sizeof(id), "mov.u64 %%gxs_d, %llu;",
				 (unsigned long long)gx_kernel_id(name, nl));
			CHECK(out && count_str(out, id) >= 2);	/* entry, load, exit sites */
			snprintf(id, sizeof(id), "mov.u64 %%gxs_d, %llu;",
				 (unsigned long long)gx_kernel_id(fname, nl));
			CHECK(out && count_str(out, id) == 1);	/* the .func's load */
			CHECK(out && strstr(out, "_param_0;\n\tcvta.param.u64 %gxs_c, %gxs_c;"));
			if (out) {
				char *want = malloc(nl + 64);

				CHECK(want != NULL);
				if (want) {
					snprintf(want, nl + 64, "\n" GX_SPLICE_FUNC " %s\n", fname);
					CHECK(strstr(out, want) != NULL);
					free(want);
				}
				CHECK(!strstr(out, GX_SPLICE_FUNC " quiet"));
			}
			CHECK_EQ_INT(st.funcs_instrumented, 1);
			test_checks++;
			if (out && !assemble(out, olen, "sm_80", "700-character names"))
				test_fail(__FILE__, __LINE__, "the module with long names does not assemble");
			free(out);
			out = NULL;
		}
		free(name);
		free(fname);
		free(mod);
	}
	/*
	 * The entry site after the prologue (parameter loads, moves, integer
	 * arithmetic), before the first branch; before the first store, global
	 * load or predicated statement when one of those comes first.
	 */
	{
		static const char pro[] =
			".version 7.8\n.target sm_75\n.address_size 64\n\n"
			".visible .entry pro_k(.param .u64 pro_k_p)\n{\n\t.reg .b64 %rd<3>;\n"
			"\t.reg .b32 %r<3>;\n\t.reg .pred %p<2>;\n\tld.param.u64 %rd1, [pro_k_p];\n"
			"\tmov.u32 %r1, %tid.x;\n\tmad.lo.s32 %r2, %r1, 4, 1;\n"
			"\tsetp.ge.u32 %p1, %r2, 29;\n\t@%p1 bra $L_out;\n"
			"\tcvta.to.global.u64 %rd2, %rd1;\n\tst.global.u32 [%rd2], %r1;\n"
			"$L_out:\n\tret;\n}\n"
			".visible .entry st_k(.param .u64 st_k_p)\n{\n\t.reg .b64 %rd<2>;\n"
			"\tld.param.u64 %rd1, [st_k_p];\n\tst.global.u64 [%rd1], %rd1;\n\tret;\n}\n"
			".visible .entry ld_k(.param .u64 ld_k_p)\n{\n\t.reg .b64 %rd<3>;\n"
			"\tld.param.u64 %rd1, [ld_k_p];\n\tld.global.u64 %rd2, [%rd1];\n"
			"\tst.global.u64 [%rd1+8], %rd2;\n\tret;\n}\n"
			".visible .entry pred_k(.param .u64 pred_k_p)\n{\n\t.reg .b64 %rd<2>;\n"
			"\t.reg .b32 %r<2>;\n\t.reg .pred %p<2>;\n\tmov.u32 %r1, %tid.x;\n"
			"\tsetp.eq.u32 %p1, %r1, 0;\n\t@%p1 mov.u32 %r1, 5;\n"
			"\tld.param.u64 %rd1, [pred_k_p];\n\tst.global.u32 [%rd1], %r1;\n\tret;\n}\n"
			/* a carry chain stays whole; a clock read stays after the probe */
			".visible .entry cc_k(.param .u64 cc_k_p)\n{\n\t.reg .b64 %rd<3>;\n"
			"\t.reg .b32 %r<4>;\n\tmov.u32 %r1, %ctaid.x;\n\tadd.cc.u32 %r2, %r1, 7;\n"
			"\taddc.u32 %r3, %r1, 0;\n\tld.param.u64 %rd1, [cc_k_p];\n"
			"\tst.global.u32 [%rd1], %r3;\n\tret;\n}\n"
			".visible .entry clk_k(.param .u64 clk_k_p)\n{\n\t.reg .b64 %rd<3>;\n"
			"\t.reg .b32 %r<2>;\n\tmov.u32 %r1, %ntid.x;\n\tmov.u64 %rd2, %clock64;\n"
			"\tld.param.u64 %rd1, [clk_k_p];\n\tst.global.u64 [%rd1], %rd2;\n\tret;\n}\n";
		static const char *const before[][2] = {
			{ "setp.ge.u32 %p1, %r2, 29;", "@%p1 bra $__gxr1;" },	/* its own ret */
			{ "ld.param.u64 %rd1, [st_k_p];", "st.global.u64 [%rd1], %rd1;" },
			{ "ld.param.u64 %rd1, [ld_k_p];", "ld.global.u64 %rd2, [%rd1];" },
			{ "setp.eq.u32 %p1, %r1, 0;", "@%p1 mov.u32 %r1, 5;" },
			{ "mov.u32 %r1, %ctaid.x;", "add.cc.u32 %r2, %r1, 7;" },
			{ "mov.u32 %r1, %ntid.x;", "mov.u64 %rd2, %clock64;" },
		};

		pk = *hand;
		CHECK_EQ_INT(gx_ptx_splice(pro, sizeof(pro) - 1, &pk, &out, &olen, &st, err,
					   sizeof(err)), 0);
		if (out) {
			CHECK_EQ_INT(st.entry_sites, 6);
			for (size_t i = 0; i < sizeof(before) / sizeof(before[0]); i++) {
				const char *a = strstr(out, before[i][0]);
				const char *site = a ? strstr(a, "// gpuext: entry probe") : NULL;
				const char *b = a ? strstr(a, before[i][1]) : NULL;

				/* the site right after the last prologue statement, before the next */
				CHECK(a && site && b && site < b);
				CHECK(a && strspn(a + strlen(before[i][0]), "\n\t") ==
				      (size_t)(site - a - strlen(before[i][0])));
			}
			test_checks++;
			if (!assemble(out, olen, "sm_80", "entry after the prologue"))
				test_fail(__FILE__, __LINE__, "the prologue case does not assemble");
			free(out);
			out = NULL;
		}
	}
	free(ptx);
}


/*
 * The constant bank: the emitted probes keep their map table in .const; a
 * module whose own .const data leaves less room than that gets the table
 * in the global space instead (ptxas refuses more than 64 KiB a module).
 */
static void test_const_bank(const struct gx_pack *emitted)
{
	static const struct {
		const char *text;
		uint64_t bytes;
	} sizes[] = {
		/* size, plus alignment less one: the padding ptxas may put before it */
		{ ".const .align 4 .b8 t[100];\n", 103 },
		{ "\t.visible .const .align 8 .u64 a[3][4] = {1, 2};\n", 103 },
		{ ".const .v4 .f32 v[2];\n", 47 },
		{ ".weak .const .b32 x[] = {1, 2, 3};\n", 15 },
		{ ".const .f64 one;\n", 15 },
		{ ".const .align 16 .b8 h[0x20];\n", 47 },
		{ "\tld.const.u32 %r1, [t];\n.global .b8 g[10];\n.extern .const .b8 e[10];\n", 0 },
		{ ".const .b8 a[10];\n// .const .b8 b[7]; (a comment line: not counted)\n"
		  ".const .u16 c[5];", 21 },
	};
	char head[200], err[256], *mod, *out = NULL;
	size_t olen = 0, cap = 70000;
	struct gx_splice_stats st;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t got = gx_ptx_const_bytes(sizes[i].text, strlen(sizes[i].text));

		test_checks++;
		if (got != sizes[i].bytes)
			test_fail(__FILE__, __LINE__, "const bytes of \"%s\": %llu, want %llu",
				  sizes[i].text, (unsigned long long)got,
				  (unsigned long long)sizes[i].bytes);
	}
	/* Text that does not end in a NUL (ASan builds would see a read past it). */
	{
		char *raw = malloc(20);

		if (raw) {
			memcpy(raw, ".const .b8 z[9];\n.co", 20);
			CHECK_EQ_U64(gx_ptx_const_bytes(raw, 20), 9);
			free(raw);
		}
	}
	CHECK(emitted && gx_ptx_const_bytes(emitted->ptx, emitted->ptx_len) > 0);
	if (!emitted)
		return;
	/*
	 * 1,000 bytes of the app's own: room. 65,489 (aligned 8): 65,533 with
	 * ours packed tight, but ptxas pads ours to 48 and refuses the module:
	 * out. 65,520: out.
	 */
	for (int c = 0; c < 3; c++) {
		static const unsigned app_bytes[] = { 1000, 65489, 65520 };
		int full = c > 0;

		mod = malloc(cap);
		if (!mod) {
			CHECK(mod);
			return;
		}
		snprintf(head, sizeof(head), ".version 7.8\n.target sm_75\n.address_size 64\n\n"
			 ".visible .const .align 8 .b8 app_table[%u];\n", app_bytes[c]);
		snprintf(mod, cap, "%s.visible .entry k(.param .u64 k_p)\n{\n\t.reg .b64 %%rd<3>;\n"
			 "\t.reg .b32 %%r<2>;\n\tld.param.u64 %%rd1, [k_p];\n"
			 "\tld.const.u32 %%r1, [app_table+64];\n\tst.global.u32 [%%rd1], %%r1;\n"
			 "\tret;\n}\n", head);
		CHECK_EQ_INT(gx_ptx_splice(mod, strlen(mod), emitted, &out, &olen, &st, err,
					   sizeof(err)), 0);
		if (out) {
			/* the kernel's splice once: its flat twin (ptx_twin.c) repeats it */
			CHECK_EQ_INT(nv_drop_twins(out), st.flat_twins);
			olen = strlen(out);
			CHECK_EQ_INT(st.probes_in_global, full);
			CHECK_EQ_INT(count_str(out, ".visible .const .align 8 .b8 gpuext_rt_maps["),
				     !full);
			CHECK_EQ_INT(count_str(out, ".visible .global .align 8 .b8 gpuext_rt_maps["),
				     full);
			/* the app's own constant load is the app's: left as it was */
			CHECK_STR_CONTAINS(out, "ld.const.u32 %r1, [app_table+64];");
			if (full)
				CHECK_EQ_INT(count_str(out, "ld.const."), 1);
			else
				CHECK(count_str(out, "ld.const.") > 1);	/* the probes' table loads too */
			test_checks++;
			if (!assemble(out, olen, "sm_80", full ? "a full constant bank" : "room in the bank"))
				test_fail(__FILE__, __LINE__, "the spliced module (constant bank %s) does "
					  "not assemble", full ? "full" : "with room");
			free(out);
			out = NULL;
		}
		free(mod);
	}
}

/*
 * gx_ptx_probes_l2keep: the L2 policy goes on plain integer atomics and
 * reductions of global memory only, and the emitted probes with it spliced
 * into a module still assemble (sm_80: the least a cache hint needs).
 */
static void test_l2keep(const struct gx_pack *emitted)
{
	static const char text[] =
		"// gpuext-ptx-version 7.0\n// gpuext-ptx-target sm_75\n"
		"\tatom.global.add.u64 \t%rd8, [%rd7], 1;\n"
		"\t@%p1 red.global.max.u64 [%rd2+8], %rd3; // a comment\n"
		"\t@!%p2 atom.global.or.b32 %r1, [%rd2], 4;\n"
		"\tatom.global.cas.b64 %rd1, [%rd2], %rd3, %rd4;\n"
		"\tatom.global.exch.b64 %rd1, [%rd2], %rd3;\n"
		"\tred.release.gpu.global.xor.b32 [%rd9], %r2;\n"
		"\tatom.global.add.f32 %f1, [%rd2], %f2;\n"
		"\tatom.global.add.L2::cache_hint.u64 %rd5, [%rd2], 1, %rd6;\n"
		"\tatom.add.u64 %rd5, [%rd2], 1;\n"
		"\tld.global.u64 %rd5, [%rd2];\n"
		"\tatom.global.add.u64 %rd8, [%rd7], 1;";	/* no newline at the end */
	static const char want[] =	/* a cache hint needs PTX 7.4 and sm_80 */
		"// gpuext-ptx-version 7.4\n// gpuext-ptx-target sm_80\n"
		"\tatom.global.add.L2::cache_hint.u64 \t%rd8, [%rd7], 1, 0x14f0000000000000;\n"
		"\t@%p1 red.global.max.L2::cache_hint.u64 [%rd2+8], %rd3, 0x14f0000000000000; "
		"// a comment\n"
		"\t@!%p2 atom.global.or.L2::cache_hint.b32 %r1, [%rd2], 4, 0x14f0000000000000;\n"
		"\tatom.global.cas.b64 %rd1, [%rd2], %rd3, %rd4;\n"
		"\tatom.global.exch.b64 %rd1, [%rd2], %rd3;\n"
		"\tred.release.gpu.global.xor.b32 [%rd9], %r2;\n"
		"\tatom.global.add.f32 %f1, [%rd2], %f2;\n"
		"\tatom.global.add.L2::cache_hint.u64 %rd5, [%rd2], 1, %rd6;\n"
		"\tatom.add.u64 %rd5, [%rd2], 1;\n"
		"\tld.global.u64 %rd5, [%rd2];\n"
		"\tatom.global.add.L2::cache_hint.u64 %rd8, [%rd7], 1, 0x14f0000000000000;";
	char err[256], *out = NULL, *sp = NULL;
	size_t olen = 0, splen = 0;
	unsigned n = 0;
	struct gx_splice_stats st;
	struct gx_pack hinted;

	CHECK_EQ_INT(gx_ptx_probes_l2keep(text, sizeof(text) - 1, 0x14f0000000000000ull, &out,
					  &olen, &n), 0);
	if (out) {
		CHECK_EQ_INT(n, 4);
		CHECK_EQ_U64(olen, strlen(out));
		test_checks++;
		if (strcmp(out, want))
			test_fail(__FILE__, __LINE__, "l2keep rewrite:\n%s\nwant:\n%s", out, want);
		free(out);
		out = NULL;
	}
	{	/* nothing to hint: the text as it was, markers too */
		static const char plain[] = "// gpuext-ptx-target sm_75\n\tld.global.u64 %rd5, [%rd2];\n";

		CHECK_EQ_INT(gx_ptx_probes_l2keep(plain, sizeof(plain) - 1, 1, &out, &olen, &n), 0);
		CHECK_EQ_INT(n, 0);
		CHECK(out && !strcmp(out, plain));
		free(out);
		out = NULL;
	}
	{	/*
		 * A ';' in a (malformed) guard before the atom: the ';' that ends the
		 * instruction is the one after its type. It was the first of the line,
		 * and the copy between the type and it had a negative size (fuzz_splice).
		 */
		static const char semi[] = "\t@!%ld.;lobal.nc.f32\tatom.global.add.u32 %r8, [%rd2], 1;\n";
		static const char semi_want[] = "\t@!%ld.;lobal.nc.f32\tatom.global.add.L2::cache_hint.u32 "
						"%r8, [%rd2], 1, 0x0000000000000001;\n";

		CHECK_EQ_INT(gx_ptx_probes_l2keep(semi, sizeof(semi) - 1, 1, &out, &olen, &n), 0);
		CHECK_EQ_INT(n, 1);
		CHECK(out && olen == strlen(out) && !strcmp(out, semi_want));
		free(out);
		out = NULL;
	}
	if (!emitted)
		return;
	CHECK_EQ_INT(gx_ptx_probes_l2keep(emitted->ptx, emitted->ptx_len, 0x14f0000000000000ull,
					  &out, &olen, &n), 0);
	if (!out)
		return;
	CHECK(n >= 2);	/* probe_all's map atomics (not the ring's scoped drop counter) */
	CHECK_EQ_INT(count_str(out, "L2::cache_hint"), n);
	hinted = *emitted;
	hinted.ptx = out;
	hinted.ptx_len = olen;
	{
		static const char mod[] =
			".version 7.8\n.target sm_80\n.address_size 64\n\n"
			".visible .entry k(.param .u64 k_p)\n{\n\t.reg .b64 %rd<3>;\n"
			"\t.reg .b32 %r<2>;\n\tld.param.u64 %rd1, [k_p];\n"
			"\tcvta.to.global.u64 %rd2, %rd1;\n\tld.global.u32 %r1, [%rd2];\n"
			"\tst.global.u32 [%rd2+4], %r1;\n\tret;\n}\n";

		CHECK_EQ_INT(gx_ptx_splice(mod, sizeof(mod) - 1, &hinted, &sp, &splen, &st, err,
					   sizeof(err)), 0);
	}
	if (sp) {
		CHECK(count_str(sp, "L2::cache_hint") >= n);
		test_checks++;
		if (!assemble(sp, splen, "sm_80", "probes with the L2 policy"))
			test_fail(__FILE__, __LINE__, "probes with the L2 policy do not assemble");
		free(sp);
		sp = NULL;
	}
	free(out);
	out = NULL;
	/*
	 * Probes that say they assemble for sm_75, in an sm_75 module: with the
	 * hint the pack asks for sm_80, and the splice raises the module's target.
	 */
	{
		static const char mod75[] =
			".version 7.8\n.target sm_75\n.address_size 64\n\n"
			".visible .entry k(.param .u64 k_p)\n{\n\t.reg .b64 %rd<3>;\n"
			"\tld.param.u64 %rd1, [k_p];\n\tcvta.to.global.u64 %rd2, %rd1;\n"
			"\tst.global.u32 [%rd2], 1;\n\tret;\n}\n";
		char *p75 = strdup(emitted->ptx), *m = p75 ? strstr(p75, "// gpuext-ptx-target sm_") : NULL;

		CHECK(m != NULL);
		if (m) {
			memcpy(m + 24, "75", 2);
			CHECK_EQ_INT(gx_ptx_probes_l2keep(p75, strlen(p75), 0x14f0000000000000ull, &out,
							  &olen, &n), 0);
		}
		if (out) {
			CHECK_STR_CONTAINS(out, "// gpuext-ptx-target sm_80");
			hinted = *emitted;
			hinted.ptx = out;
			hinted.ptx_len = olen;
			CHECK_EQ_INT(gx_ptx_splice(mod75, sizeof(mod75) - 1, &hinted, &sp, &splen, &st,
						   err, sizeof(err)), 0);
		}
		if (sp) {
			CHECK_STR_CONTAINS(sp, ".target sm_80");
			test_checks++;
			if (!assemble(sp, splen, "sm_80", "an sm_75 module with the L2 policy"))
				test_fail(__FILE__, __LINE__, "an sm_75 module with the policy does not "
					  "assemble");
			free(sp);
		}
		free(out);
		free(p75);
	}
}


static bool find_tool(char *out, size_t len, const char *env, const char *def)
{
	const char *p = getenv(env);

	if (!p || !*p)
		p = def;
	if (!p || !*p || strstr(p, "NOTFOUND") || access(p, X_OK)) {
		out[0] = '\0';
		return false;
	}
	snprintf(out, len, "%s", p);
	return true;
}

int main(void)
{
	struct pack_case packs[3];
	int npacks = 0;
	struct gpuext_runtime *rt = NULL;
	struct gpuext_object *obj = NULL;
	char *emitted[2] = { NULL, NULL };

	if (!find_tool(ptxas, sizeof(ptxas), "GPUEXT_PTXAS", GPUEXT_PTXAS)) {
		printf("test_nv_splice: SKIP: ptxas not found (GPUEXT_PTXAS): spliced PTX cannot be "
		       "checked; install the CUDA toolkit (/usr/local/cuda/bin/ptxas) and re-run cmake\n");
		return 77;
	}
	find_tool(nvcc, sizeof(nvcc), "GPUEXT_NVCC", GPUEXT_NVCC);
	find_tool(clang, sizeof(clang), "GPUEXT_CUDA_CLANG", GPUEXT_CUDA_CLANG);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/gpuext-splice-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}

	memset(packs, 0, sizeof(packs));
	packs[npacks].name = "hand-written probes";
	packs[npacks].pack.events = 0xf;
	packs[npacks].pack.ptx = (char *)hand_probes;
	packs[npacks].pack.ptx_len = sizeof(hand_probes) - 1;
	npacks++;
	/* The real probes, both modes. */
	{
		GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = test_log_print, .print_user = &logbuf);

		if (!gpuext_runtime__new(&ro, &rt))
			gpuext_object__open_file(rt, GPUEXT_TEST_BPF_DIR "/probe_all.bpf.o", NULL, &obj);
		CHECK(obj);
	}
	for (int m = 0; obj && m < 2; m++) {
		const char *sm = getenv("GPUEXT_SPLICE_SM") ? getenv("GPUEXT_SPLICE_SM") : "sm_80";
		uint32_t ev = 0;
		size_t len = 0;

		CHECK_EQ_INT(gpuext_ptx_probe_emit(obj, sm, m == 1, &ev, &emitted[m], &len), 0);
		if (!emitted[m])
			continue;
		/* GPUEXT_SPLICE_DUMP=DIR: keep the probe text, e.g. to run spliced modules on a GPU. */
		if (getenv("GPUEXT_SPLICE_DUMP")) {
			char path[512];
			FILE *f;

			snprintf(path, sizeof(path), "%s/probe_all-%s.ptx", getenv("GPUEXT_SPLICE_DUMP"),
				 m ? "thread" : "warp");
			f = fopen(path, "w");
			if (f) {
				fwrite(emitted[m], 1, len, f);
				fclose(f);
			}
			for (size_t i = 0; i < gpuext_object__map_cnt(obj); i++)
				printf("probe_all map %zu: %s\n", i,
				       gpuext_map__name(gpuext_object__map(obj, i)));
		}
		/*
		 * The context words probe_all reads: kernel_id (0-1), addr (4-5),
		 * value (6-7), block_id[0] (16), sm_id (24); nothing else is
		 * filled at its sites (the warp/lane/grid stores are left out).
		 */
		CHECK_STR_CONTAINS(emitted[m], "\n// gpuext-ctx-words 0x010100f3\n");
		packs[npacks].name = m ? "probe_all (per-thread)" : "probe_all (warp)";
		packs[npacks].pack.events = ev;
		packs[npacks].pack.per_thread = m == 1;
		packs[npacks].pack.ptx = emitted[m];
		packs[npacks].pack.ptx_len = len;
		npacks++;
	}

	test_inputs(packs, npacks);
	test_details(&packs[0].pack);
	test_const_bank(npacks > 1 ? &packs[1].pack : NULL);
	test_l2keep(npacks > 2 ? &packs[2].pack : NULL);
	/* The preload's own kernels assemble too: the ring drain's tidy kernel (nv_maps.c). */
	CHECK(assemble(nv_tidy_ptx(), strlen(nv_tidy_ptx()), "sm_80", "ring tidy kernel"));
	CHECK(assemble(nv_tidy_ptx(), strlen(nv_tidy_ptx()), "sm_90", "ring tidy kernel"));
	/* it clears the header's full_mark (cons + 16, ptx.h) after it writes cons, behind a fence */
	CHECK(strstr(nv_tidy_ptx(), "mov.u64 %rd15, 0;") &&
	      strstr(nv_tidy_ptx(), "st.volatile.global.u64 [%rd11], %rd12;\n\tmembar.gl;\n"
				    "\tst.volatile.global.u64 [%rd11+16], %rd15;"));
	/* the L2 policy kernel (nv_maps.c, nv_l2keep_measure): createpolicy needs sm_80 */
	CHECK(assemble(nv_l2keep_ptx(), strlen(nv_l2keep_ptx()), "sm_80", "L2 policy kernel"));
	CHECK(assemble(nv_l2keep_ptx(), strlen(nv_l2keep_ptx()), "sm_90", "L2 policy kernel"));
	printf("test_nv_splice: %u splices, %u ptxas runs passed (packs: %d)\n", spliced_inputs,
	       assembled_outputs, npacks);

	free(emitted[0]);
	free(emitted[1]);
	gpuext_object__close(obj);
	gpuext_runtime__free(rt);
	{
		char path[128];

		snprintf(path, sizeof(path), "%s/spliced.ptx", tmpdir);
		unlink(path);
		rmdir(tmpdir);
	}
	return test_done("test_nv_splice");
}

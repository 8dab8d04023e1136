/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Device probes as PTX functions: every SEC("probe/entry|exit|load|store")
 * program of one object is lifted (codegen/lift.c), linked with the device
 * runtime into ONE module (one gpuext_rt_maps table: object-wide map
 * indexes), wrapped in `.func gpuext_probe_<event>(kernel_id, args, addr,
 * value, size)` (ptx.h) and
 * printed as PTX without a module header, for hal/nvidia/ptx_splice.c to
 * append to an application's module (ptx.h has the contract).
 *
 * Why one module per object: the loader gives every program of an object
 * the object's map list as prog->maps (core/loader.c), so an entry and an
 * exit probe naming the same map carry the same index; one runtime module
 * with one table keeps that true on the GPU.
 */
#include <stddef.h>
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
#include "gpuext/probe.h"
#include "gpuext/verifier.h"
#include "internal.h"
#include "ptx/ptx.h"
#include "ptx/ptx_impl.h"
#include "target.h"

#define PTX_TRIPLE (gpuext_cg_target_desc(GPUEXT_CG_PTX)->triple)

static const char *const ev_names[GPUEXT_PTX_PROBE_NR] = { "entry", "exit", "load", "store" };

/*
 * "probe/entry" (or "probe/entry/anything") -> GPUEXT_PTX_PROBE_ENTRY ...;
 * -1 for another "probe/..." section (a typo the user must hear about);
 * -2 for a section that is not a probe at all.
 */
static int probe_event(const char *sec)
{
	if (!sec || strncmp(sec, "probe/", 6))
		return -2;
	sec += 6;
	for (int i = 0; i < GPUEXT_PTX_PROBE_NR; i++) {
		size_t n = strlen(ev_names[i]);

		if (!strncmp(sec, ev_names[i], n) && (sec[n] == '\0' || sec[n] == '/'))
			return i;
	}
	return -1;
}

/*
 * Where a probe runs, declared by its section: "probe/<event>/warp0" runs
 * only in warp 0 of each block (linear thread index < 32), "/block0" only in
 * block (0,0,0), "/first" in warp 0 of block (0,0,0); no such word: every
 * thread that reaches the site. The splicer tests it in the kernel before
 * the site, ahead of the warp's leader election, so the other warps pay a
 * compare and a branch (hal/nvidia/ptx_splice.h).
 */
static uint32_t probe_guard(const char *sec)
{
	const char *g = sec ? strchr(sec + 6, '/') : NULL;
	size_t n;

	if (!g || strncmp(sec, "probe/", 6))
		return 0;
	g++;
	n = strcspn(g, "/");
	if (n == 5 && !strncmp(g, "warp0", 5))
		return GPUEXT_PTX_GUARD_WARP0;
	if (n == 6 && !strncmp(g, "block0", 6))
		return GPUEXT_PTX_GUARD_BLOCK0;
	if (n == 5 && !strncmp(g, "first", 5))
		return GPUEXT_PTX_GUARD_WARP0 | GPUEXT_PTX_GUARD_BLOCK0;
	return 0;
}

static bool starts_with(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

/*
 * Only the probe functions and the globals the host fills stay visible;
 * every other symbol becomes internal and is renamed gpuext_<name> (the text
 * lands in an application's module: no name of ours may clash with one of
 * its own, and NVPTX would spell the runtime's "gx.x" as "gx_$_x").
 */
static void probe_internalize(LLVMModuleRef mod)
{
	static const char *const keep[] = { "gpuext_rt_maps", "gpuext_rt_prandom_seed",
					     "gpuext_rt_vars", "gpuext_rt_gpu_id" };
	char name[256];

	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
		const char *n = LLVMGetValueName(f);

		if (LLVMIsDeclaration(f))
			continue;
		if (starts_with(n, "gpuext_probe_") && LLVMGetLinkage(f) != LLVMInternalLinkage)
			continue;
		LLVMSetLinkage(f, LLVMInternalLinkage);
	}
	for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g)) {
		const char *n = LLVMGetValueName(g);
		bool kept = false;

		if (LLVMIsDeclaration(g))
			continue;
		for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
			kept |= !strcmp(n, keep[i]);
		if (!kept)
			LLVMSetLinkage(g, LLVMInternalLinkage);
	}
	for (int pass = 0; pass < 2; pass++) {
		LLVMValueRef v = pass ? LLVMGetFirstGlobal(mod) : LLVMGetFirstFunction(mod);

		for (; v; v = pass ? LLVMGetNextGlobal(v) : LLVMGetNextFunction(v)) {
			const char *n = LLVMGetValueName(v);
			size_t i, o;

			if (LLVMIsDeclaration(v) || starts_with(n, "gpuext_") || starts_with(n, "llvm."))
				continue;
			o = (size_t)snprintf(name, sizeof(name), "gpuext_");
			for (i = 0; n[i] && o + 1 < sizeof(name); i++) {
				char c = n[i];

				name[o++] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
					     (c >= '0' && c <= '9') || c == '_') ? c : '_';
			}
			name[o] = '\0';
			LLVMSetValueName2(v, name, o);
		}
	}
}

static int link_ir(struct gpuext_runtime *rt, LLVMContextRef ctx, LLVMModuleRef mod,
		   const char *ir, const char *what)
{
	LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy(ir, strlen(ir), what);
	LLVMModuleRef m = NULL;
	char *msg = NULL;

	if (LLVMParseIRInContext(ctx, mb, &m, &msg)) { /* takes mb */
		gpuext_log(rt, GPUEXT_LOG_WARN, "ptx: %s IR does not parse: %s", what,
			   msg ? msg : "?");
		LLVMDisposeMessage(msg);
		return -EINVAL;
	}
	LLVMSetTarget(m, LLVMGetTarget(mod));
	LLVMSetDataLayout(m, LLVMGetDataLayoutStr(mod));
	if (LLVMLinkModules2(mod, m)) { /* destroys m */
		gpuext_log(rt, GPUEXT_LOG_WARN, "ptx: linking the %s failed", what);
		return -EINVAL;
	}
	return 0;
}

/*
 * The gpuext_probe_<event> wrappers: the calling convention the splicer
 * relies on (hal/nvidia/ptx_splice.h):
 *
 *   .func gpuext_probe_<event>(.param .b64 kernel_id, .param .b64 args,
 *                              .param .b64 addr, .param .b64 value, .param .b32 size)
 *
 * The wrapper builds struct gpuext_probe_ctx itself, from special registers,
 * in an alloca, and calls the lifted probes, which are always inlined. After
 * O2 the alloca is gone (SROA): a field no probe reads is never computed, one
 * it reads is computed where it is read, and a probe whose first test is
 * "warp_id != 0: return" costs that test and nothing more. The kernel side of
 * a site is the five arguments in registers and this function's body, which
 * the splicer inlines (hal/nvidia/ptx_inline.c); nothing in local memory (GPU
 * run 4: the context the splicer stored in local memory at every site cost
 * 1.4-4.8x on kernels where the probes returned at once). Programs whose
 * section names a guard (probe/<event>/warp0|block0|first) are skipped by the
 * site for the other threads; one that asks for more than its event's sites
 * test checks the rest here.
 *
 * %globaltimer and %smid are read with inline asm that has no side effect,
 * so an unread one is deleted; the NVVM intrinsics for them are not.
 */
static int wrapper_ir(size_t *cnt, uint32_t (*guard)[GPUEXT_PTX_MAX_PROGS],
		      const uint32_t *site, size_t nprogs, bool per_thread, char **out)
{
	static const char *const xyz[3] = { "x", "y", "z" };
	static const struct {
		const char *sreg;
		unsigned off;
	} vec3[] = { { "nctaid", offsetof(struct gpuext_probe_ctx, grid_dim) },
		     { "ntid", offsetof(struct gpuext_probe_ctx, block_dim) },
		     { "ctaid", offsetof(struct gpuext_probe_ctx, block_id) },
		     { "tid", offsetof(struct gpuext_probe_ctx, thread_id) } };
	size_t cap = 20480 + nprogs * 256, len = 0;
	char *buf = malloc(cap);

#define W(...) len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0, __VA_ARGS__)
#define FIELD(f) (unsigned)offsetof(struct gpuext_probe_ctx, f)
	if (!buf)
		return -ENOMEM;
	buf[0] = '\0';
	W("declare i32 @llvm.nvvm.activemask()\n"
	  "declare i32 @llvm.nvvm.read.ptx.sreg.lanemask.lt()\n"
	  "declare i32 @llvm.nvvm.read.ptx.sreg.laneid()\n"
	  "declare void @llvm.nvvm.bar.warp.sync(i32)\n"
	  "@gpuext_rt_gpu_id = addrspace(4) externally_initialized global i32 0, align 4\n");
	for (size_t v = 0; v < 4; v++)
		for (int d = 0; d < 3; d++)
			W("declare i32 @llvm.nvvm.read.ptx.sreg.%s.%s()\n", vec3[v].sreg, xyz[d]);
	for (int e = 0; e < GPUEXT_PTX_PROBE_NR; e++)
		for (size_t i = 0; i < cnt[e]; i++)
			W("declare i64 @gpuext_pr_%s_%zu(ptr, i64)\n", ev_names[e], i);
	for (int e = 0; e < GPUEXT_PTX_PROBE_NR; e++) {
		if (!cnt[e])
			continue;
		W("define void @gpuext_probe_%s(i64 %%kid, i64 %%args, i64 %%addr, i64 %%value, "
		  "i32 %%size) {\nentry:\n  %%ctx = alloca [%zu x i8], align 8\n", ev_names[e],
		  sizeof(struct gpuext_probe_ctx));
		/* The linear thread index: warp_id's (below) and the exit's election's. */
		W("  %%e_tz = call i32 @llvm.nvvm.read.ptx.sreg.tid.z()\n"
		  "  %%e_ny = call i32 @llvm.nvvm.read.ptx.sreg.ntid.y()\n"
		  "  %%e_ty = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()\n"
		  "  %%e_nx = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()\n"
		  "  %%e_tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
		  "  %%lt1 = mul i32 %%e_tz, %%e_ny\n"
		  "  %%lt2 = add i32 %%lt1, %%e_ty\n"
		  "  %%lt3 = mul i32 %%lt2, %%e_nx\n"
		  "  %%lt4 = add i32 %%lt3, %%e_tx\n");
		if (!per_thread) {
			/*
			 * The lowest active lane runs; the others wait at the warp
			 * barrier. Lowest = no active lane below it: one AND with
			 * %lanemask_lt, no find-first-set and compare with %laneid
			 * (three instructions fewer on the path every warp takes).
			 */
			/*
			 * At an exit, lane 0 runs, wherever it leaves: every warp has
			 * a lane 0 and it leaves once, so an exit probe runs exactly
			 * once per warp even when the warp's lanes leave by several
			 * exits (the splicer gives each branch to a kernel's shared
			 * ret its own: hal/nvidia/ptx_exits.c). Lanes that leave
			 * without lane 0 run nothing.
			 *
			 * Lane 0 is told from the linear thread index, not %laneid: a
			 * warp is 32 consecutive linear indices from a multiple of 32,
			 * so the lane is the index mod 32. The index is what warp_id
			 * is made of (above); %laneid
			 * would be one more S2R on every warp's way out (threadhist,
			 * in one process on an H200: stencil 1.0405 -> 1.0374, decode
			 * 1.0281 -> 1.0267; bench/gpu/README.md). The splicer's hoister
			 * knows this form of the election (hal/nvidia/ptx_hoist.c), so
			 * the site's arithmetic still moves ahead of it. Not under a
			 * warp 0 guard: there warp_id is a constant, nothing else needs
			 * the index, and %laneid alone is cheaper (kernelretsnoop on
			 * the decode step 1.088 -> 1.095 with the index).
			 */
			if (e == GPUEXT_PTX_PROBE_EXIT && (site[e] & GPUEXT_PTX_GUARD_WARP0))
				W("  %%mask = call i32 @llvm.nvvm.activemask()\n"
				  "  %%l0 = call i32 @llvm.nvvm.read.ptx.sreg.laneid()\n"
				  "  %%isl = icmp eq i32 %%l0, 0\n"
				  "  br i1 %%isl, label %%lead, label %%join\n"
				  "lead:\n");
			else if (e == GPUEXT_PTX_PROBE_EXIT)
				W("  %%mask = call i32 @llvm.nvvm.activemask()\n"
				  "  %%l0 = and i32 %%lt4, 31\n"
				  "  %%isl = icmp eq i32 %%l0, 0\n"
				  "  br i1 %%isl, label %%lead, label %%join\n"
				  "lead:\n");
			else
				W("  %%mask = call i32 @llvm.nvvm.activemask()\n"
				  "  %%below = call i32 @llvm.nvvm.read.ptx.sreg.lanemask.lt()\n"
				  "  %%lower = and i32 %%mask, %%below\n"
				  "  %%isl = icmp eq i32 %%lower, 0\n"
				  "  br i1 %%isl, label %%lead, label %%join\n"
				  "lead:\n");
		}
		W("  %%f_kid = getelementptr inbounds i8, ptr %%ctx, i64 %u\n"
		  "  store i64 %%kid, ptr %%f_kid, align 8\n"
		  "  %%tmr = call i64 asm \"mov.u64 $0, %%globaltimer;\", \"=l\"()\n"
		  "  %%f_tmr = getelementptr inbounds i8, ptr %%ctx, i64 %u\n"
		  "  store i64 %%tmr, ptr %%f_tmr, align 8\n"
		  "  %%f_addr = getelementptr inbounds i8, ptr %%ctx, i64 %u\n"
		  "  store i64 %%addr, ptr %%f_addr, align 8\n"
		  "  %%f_val = getelementptr inbounds i8, ptr %%ctx, i64 %u\n"
		  "  store i64 %%value, ptr %%f_val, align 8\n"
		  "  %%f_size = getelementptr inbounds i8, ptr %%ctx, i64 %u\n"
		  "  store i32 %%size, ptr %%f_size, align 4\n"
		  "  %%f_ev = getelementptr inbounds i8, ptr %%ctx, i64 %u\n"
		  "  store i32 %d, ptr %%f_ev, align 4\n",
		  FIELD(kernel_id), FIELD(timer_ns), FIELD(addr), FIELD(value), FIELD(size),
		  FIELD(event), e);
		/*
		 * What the site's guard already tested is a constant here: under
		 * probe/EVENT/warp0 (and /first) every program of the event runs in
		 * warp 0 only, so its warp_id is 0; under block0, block_id is
		 * (0,0,0). A program's own "if (ctx->warp_id != 0) return 0" (the
		 * verifier wants its ring submissions under warp-uniform control) then
		 * folds away, with the three %tid reads it needed: at an exit they
		 * held each block's warp 0 on its way out (an exit probe's way to its
		 * store cost the decode step 1.8 points, bench/gpu/README.md).
		 */
		for (size_t v = 0; v < 4; v++)
			for (int d = 0; d < 3; d++) {
				char val[24] = "0";

				if (strcmp(vec3[v].sreg, "ctaid") || !(site[e] & GPUEXT_PTX_GUARD_BLOCK0))
					snprintf(val, sizeof(val), "%%%s_%s", vec3[v].sreg, xyz[d]);
				W("  %%%s_%s = call i32 @llvm.nvvm.read.ptx.sreg.%s.%s()\n"
				  "  %%f_%s_%s = getelementptr inbounds i8, ptr %%ctx, i64 %u\n"
				  "  store i32 %s, ptr %%f_%s_%s, align 4\n",
				  vec3[v].sreg, xyz[d], vec3[v].sreg, xyz[d], vec3[v].sreg, xyz[d],
				  vec3[v].off + 4u * (unsigned)d, val, vec3[v].sreg, xyz[d]);
			}
		/* warp = linear thread index / 32 (not %warpid, which names a hardware slot) */
		W("  %%lane = call i32 @llvm.nvvm.read.ptx.sreg.laneid()\n"
		  "  %%f_lane = getelementptr inbounds i8, ptr %%ctx, i64 %u\n"
		  "  store i32 %%lane, ptr %%f_lane, align 4\n"
		  "  %%warp = lshr i32 %%lt4, 5\n"
		  "  %%f_warp = getelementptr inbounds i8, ptr %%ctx, i64 %u\n"
		  "  store i32 %s, ptr %%f_warp, align 4\n"
		  "  %%sm = call i32 asm \"mov.u32 $0, %%smid;\", \"=r\"()\n"
		  "  %%f_sm = getelementptr inbounds i8, ptr %%ctx, i64 %u\n"
		  "  store i32 %%sm, ptr %%f_sm, align 4\n"
		  "  %%gpu = load i32, ptr addrspace(4) @gpuext_rt_gpu_id, align 4\n"
		  "  %%f_gpu = getelementptr inbounds i8, ptr %%ctx, i64 %u\n"
		  "  store i32 %%gpu, ptr %%f_gpu, align 4\n"
		  "  %%f_args = getelementptr inbounds i8, ptr %%ctx, i64 %u\n"
		  "  store i64 %%args, ptr %%f_args, align 8\n",
		  FIELD(lane_id), FIELD(warp_id), site[e] & GPUEXT_PTX_GUARD_WARP0 ? "0" : "%warp",
		  FIELD(sm_id), FIELD(gpu_id), FIELD(args));
		/* A program whose section asks for more than the site tests checks the rest itself. */
		W("  %%gw = icmp ult i32 %%lt4, 32\n"
		  "  %%gb0 = or i32 %%ctaid_x, %%ctaid_y\n"
		  "  %%gb1 = or i32 %%gb0, %%ctaid_z\n"
		  "  %%gb = icmp eq i32 %%gb1, 0\n"
		  "  %%gwb = and i1 %%gw, %%gb\n");
		for (size_t i = 0; i < cnt[e]; i++) {
			uint32_t extra = guard[e][i] & ~site[e];
			const char *c = extra == (GPUEXT_PTX_GUARD_WARP0 | GPUEXT_PTX_GUARD_BLOCK0) ?
					"gwb" : extra == GPUEXT_PTX_GUARD_WARP0 ? "gw" : "gb";

			if (extra)
				W("  br i1 %%%s, label %%p%zu, label %%n%zu\np%zu:\n", c, i, i, i);
			W("  %%r%zu = call i64 @gpuext_pr_%s_%zu(ptr %%ctx, i64 %zu)\n", i, ev_names[e],
			  i, sizeof(struct gpuext_probe_ctx));
			if (extra)
				W("  br label %%n%zu\nn%zu:\n", i, i);
		}
		/*
		 * The others wait for the leader, so that the warp leaves the site
		 * together (ptx_splice.c, emit_site). Not at an exit, where every
		 * lane's next instruction ends it: there the wait only held the
		 * warp's slot (hand-edited stencil under threadhist, H100: 1.084x
		 * with it and the splicer's own, 1.076x without either). Nor at the
		 * entry, where the lanes arrive together and ptxas reconverges them
		 * after the leader's branch itself; a barrier there cost every load
		 * of the kernel two R2UR. Where an entry probe loops, the splicer
		 * puts its own barrier after the site (ptx_splice.c, emit_site, says
		 * why and how much).
		 */
		if (!per_thread)
			W("  br label %%join\n"
			  "join:\n%s", e == GPUEXT_PTX_PROBE_EXIT || e == GPUEXT_PTX_PROBE_ENTRY ? "" :
			  "  call void @llvm.nvvm.bar.warp.sync(i32 %mask)\n");
		W("  ret void\n}\n");
	}
#undef FIELD
#undef W
	if (len >= cap) {
		free(buf);
		return -E2BIG;
	}
	*out = buf;
	return 0;
}

/*
 * NVPTX prints a whole module; the splicer wants the body only. Drops the
 * .version/.target/.address_size lines and says in comments which PTX ISA
 * version and target the text needs (the splicer raises the app's module
 * to them).
 */
static int strip_header(const char *in, size_t n, const char *sm, uint32_t events, uint32_t words,
			const uint32_t *site, char **text, size_t *len)
{
	char version[16] = "8.0", head[256];
	size_t hl, o = 0;
	const char *p = in, *end = in + n;
	char *buf;

	for (const char *q = in; q < end;) {
		const char *nl = memchr(q, '\n', (size_t)(end - q));
		const char *s = q;

		while (s < end && (*s == ' ' || *s == '\t'))
			s++;
		if (starts_with(s, ".version")) {
			sscanf(s + 8, " %15[0-9.]", version);
			break;
		}
		q = nl ? nl + 1 : end;
	}
	hl = (size_t)snprintf(head, sizeof(head),
			      "// gpuext device probes (codegen/ptx/ptx_probe.c):%s%s%s%s\n"
			      "// gpuext-ptx-version %s\n// gpuext-ptx-target %s\n"
			      "// gpuext-ctx-words 0x%08x\n"
			      "// gpuext-site-guards %u %u %u %u\n",
			      events & 1 ? " entry" : "", events & 2 ? " exit" : "",
			      events & 4 ? " load" : "", events & 8 ? " store" : "", version, sm,
			      words, site[0], site[1], site[2], site[3]);
	buf = malloc(hl + n + 1);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, head, hl);
	o = hl;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *next = nl ? nl + 1 : end, *s = p;

		while (s < next && (*s == ' ' || *s == '\t'))
			s++;
		/*
		 * The probe functions lose .visible: the driver JITs through
		 * cuLink, which compiles relocatable code and never inlines a
		 * .visible function, so every site paid a CALL with the ABI's
		 * register moves (GPU run 5, H100: launchlate, which returns at
		 * once, cost 2.5x on a stencil). A module-local .func is inlined.
		 */
		if (starts_with(s, ".visible .func gpuext_probe_"))
			p = s + strlen(".visible ");
		if (!starts_with(s, ".version") && !starts_with(s, ".target") &&
		    !starts_with(s, ".address_size")) {
			memcpy(buf + o, p, (size_t)(next - p));
			o += (size_t)(next - p);
		}
		p = next;
	}
	buf[o] = '\0';
	*text = buf;
	*len = o;
	return 0;
}

/*
 * Which 4-byte words of struct gpuext_probe_ctx a probe reads (bit w: bytes
 * 4w..4w+3), so the splicer fills only those at every site instead of all 112
 * bytes in every thread (GPU run 3: the fill alone cost 1.3-8x). A forward
 * dataflow over the verified bytecode tracks registers holding ctx + a
 * constant (r1 at entry, copies, += / -= constants); a load through one at a
 * constant offset reads those words. Anything else done with such a pointer —
 * passed to a call, stored, other arithmetic, two offsets meeting at a join,
 * an access outside the struct — and every word is read (conservative).
 */
#define CTX_WORDS ((uint32_t)(sizeof(struct gpuext_probe_ctx) / 4))
#define CTX_ALL ((uint32_t)((1ull << CTX_WORDS) - 1))
#define NOT_CTX INT32_MIN

static uint32_t ctx_span(int32_t off, unsigned size)
{
	uint32_t m = 0;

	if (off < 0 || (uint32_t)off + size > sizeof(struct gpuext_probe_ctx))
		return CTX_ALL;
	for (uint32_t w = (uint32_t)off / 4; w <= ((uint32_t)off + size - 1) / 4; w++)
		m |= 1u << w;
	return m;
}

static bool ctx_merge(int32_t *into, const int32_t *from)
{
	bool changed = false;

	for (int r = 0; r < 11; r++) {
		if (into[r] == from[r])
			continue;
		/* NOT_CTX meeting ctx+k: keep ctx+k (over-reads, never under-reads) */
		if (into[r] == NOT_CTX) {
			into[r] = from[r];
			changed = true;
		} else if (from[r] != NOT_CTX) {
			return into[0] = INT32_MAX, true;	/* two offsets: give up */
		}
	}
	return changed;
}

static unsigned ldx_bytes(uint8_t code)
{
	switch (BPF_SIZE(code)) {
	case BPF_B:
		return 1;
	case BPF_H:
		return 2;
	case BPF_W:
		return 4;
	default:
		return 8;
	}
}

static uint32_t ctx_words(const struct gpuext_runtime *rt, const struct bpf_insn *in, size_t cnt)
{
	int32_t (*st)[11] = NULL;
	size_t *work = NULL, nw = 0;
	bool *queued = NULL;
	uint32_t words = 0;

	if (!in || !cnt)
		return CTX_ALL;
	st = malloc(cnt * sizeof(*st));
	work = malloc(cnt * sizeof(*work));
	queued = calloc(cnt, sizeof(*queued));
	if (!st || !work || !queued) {
		words = CTX_ALL;
		goto out;
	}
	for (size_t i = 0; i < cnt; i++)
		for (int r = 0; r < 11; r++)
			st[i][r] = NOT_CTX;
	st[0][1] = 0;
	work[nw++] = 0;
	queued[0] = true;
	while (nw && words != CTX_ALL) {
		size_t pc = work[--nw], succ[2];
		const struct bpf_insn *n = &in[pc];
		uint8_t cls = BPF_CLASS(n->code), op = BPF_OP(n->code);
		int32_t r[11];
		int ns = 0;

		queued[pc] = false;
		memcpy(r, st[pc], sizeof(r));
		if (r[0] == INT32_MAX || n->dst_reg > 10 || n->src_reg > 10) {
			words = CTX_ALL;
			break;
		}
		succ[ns++] = pc + 1;
		switch (cls) {
		case BPF_LDX:
			if (r[n->src_reg] != NOT_CTX)
				words |= ctx_span(r[n->src_reg] + n->off,
						  ldx_bytes(n->code));
			r[n->dst_reg] = NOT_CTX;
			break;
		case BPF_ST:
		case BPF_STX:
			if (r[n->dst_reg] != NOT_CTX || (cls == BPF_STX && r[n->src_reg] != NOT_CTX))
				words = CTX_ALL;
			if (cls == BPF_STX && BPF_MODE(n->code) == BPF_ATOMIC) {
				r[0] = NOT_CTX;	/* cmpxchg writes r0, fetch forms src */
				r[n->src_reg] = NOT_CTX;
			}
			break;
		case BPF_LD:
			if (n->code != (BPF_LD | BPF_IMM | BPF_DW))
				words = CTX_ALL;
			r[n->dst_reg] = NOT_CTX;
			succ[0] = pc + 2;
			break;
		case BPF_ALU64:
		case BPF_ALU:
			if (cls == BPF_ALU64 && op == BPF_MOV && BPF_SRC(n->code) == BPF_X && !n->off) {
				r[n->dst_reg] = r[n->src_reg];
			} else if (cls == BPF_ALU64 && (op == BPF_ADD || op == BPF_SUB) &&
				   BPF_SRC(n->code) == BPF_K && r[n->dst_reg] != NOT_CTX) {
				int64_t o = (int64_t)r[n->dst_reg] + (op == BPF_ADD ? n->imm : -(int64_t)n->imm);

				r[n->dst_reg] = o < -4096 || o > 4096 ? INT32_MAX : (int32_t)o;
				if (r[n->dst_reg] == INT32_MAX)
					words = CTX_ALL;
			} else {
				/* a mov over a ctx copy only drops it; other ALU on one: unknown */
				if ((op != BPF_MOV && r[n->dst_reg] != NOT_CTX) ||
				    (BPF_SRC(n->code) == BPF_X && r[n->src_reg] != NOT_CTX))
					words = CTX_ALL;
				r[n->dst_reg] = NOT_CTX;
			}
			break;
		case BPF_JMP:
		case BPF_JMP32:
			if (op == BPF_EXIT) {
				ns = 0;
			} else if (op == BPF_CALL) {
				/* helpers/kfuncs: only the arguments they take; subprograms: r1-r5 */
				const struct gpuext_func_proto *fp = n->src_reg == 1 ? NULL :
					gpuext_runtime__find_func(rt, n->src_reg == 2 ?
						GPUEXT_FUNC_KFUNC : GPUEXT_FUNC_HELPER, (uint32_t)n->imm);

				for (int a = 1; a <= 5; a++) {
					if (fp && fp->args[a - 1] == GPUEXT_ARG_NONE)
						break;	/* its arguments end here */
					if (r[a] != NOT_CTX)
						words = CTX_ALL;
				}
				for (int a = 0; a <= 5; a++)
					r[a] = NOT_CTX;
			} else if (op == BPF_JA) {
				succ[0] = pc + 1 + (cls == BPF_JMP ? n->off : n->imm);
			} else {
				succ[ns++] = pc + 1 + n->off;
			}
			break;
		default:
			words = CTX_ALL;
		}
		for (int k = 0; k < ns; k++) {
			if (succ[k] >= cnt) {
				words = CTX_ALL;
				break;
			}
			if (ctx_merge(st[succ[k]], r) && !queued[succ[k]]) {
				queued[succ[k]] = true;
				work[nw++] = succ[k];
			}
		}
	}
out:
	free(st);
	free(work);
	free(queued);
	return words;
}

/*
 * eBPF registers are integers, so a pointer the probe computes (a stack slot
 * it hands a helper as a map key, a field of a map value) reaches the
 * runtime as inttoptr(ptrtoint(P) + C), which LLVM does not turn back into
 * P + C: the stack slot then escapes, stays in local memory (512 bytes per
 * thread in every instrumented kernel) and a key is stored and reloaded.
 * This rewrites each such inttoptr into a GEP on P (same address space
 * only); the next O2 forwards the store to the load and deletes the slot.
 * Returns how many it rewrote.
 */
static unsigned fold_int_ptr_round_trips(LLVMModuleRef mod, LLVMContextRef ctx)
{
	LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
	LLVMTypeRef i8 = LLVMInt8TypeInContext(ctx);
	unsigned n = 0;

	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
		for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
			for (LLVMValueRef in = LLVMGetFirstInstruction(bb), next; in; in = next) {
				LLVMValueRef add, x = NULL, c = NULL, gep;

				next = LLVMGetNextInstruction(in);
				if (LLVMGetInstructionOpcode(in) != LLVMIntToPtr)
					continue;
				add = LLVMGetOperand(in, 0);
				if (!LLVMIsAInstruction(add) || LLVMGetInstructionOpcode(add) != LLVMAdd)
					continue;
				for (int k = 0; k < 2 && !x; k++) {
					LLVMValueRef a = LLVMGetOperand(add, (unsigned)k);
					LLVMValueRef o = LLVMGetOperand(add, (unsigned)!k);

					if (LLVMIsAPtrToIntInst(a) && LLVMTypeOf(LLVMGetOperand(a, 0)) ==
					    LLVMTypeOf(in)) {
						x = LLVMGetOperand(a, 0);
						c = o;
					}
				}
				if (!x)
					continue;
				LLVMPositionBuilderBefore(b, in);
				gep = LLVMBuildGEP2(b, i8, x, &c, 1, "");
				LLVMReplaceAllUsesWith(in, gep);
				LLVMInstructionEraseFromParent(in);
				n++;
			}
	LLVMDisposeBuilder(b);
	return n;
}

/* A call that only reads a special register (%globaltimer, %smid, %tid...): movable. */
static bool is_sreg_read(LLVMValueRef in)
{
	LLVMValueRef callee;
	const char *n;
	size_t len;

	if (!LLVMIsACallInst(in) || LLVMGetNumArgOperands(in) != 0)
		return false;
	callee = LLVMGetCalledValue(in);
	if (LLVMIsAInlineAsm(callee)) {
		n = LLVMGetInlineAsmAsmString(callee, &len);
		return !LLVMGetInlineAsmHasSideEffects(callee) && len > 4 && !strncmp(n, "mov.", 4) &&
		       memchr(n, '%', len);
	}
	n = LLVMGetValueName2(callee, &len);
	return len > 23 && !strncmp(n, "llvm.nvvm.read.ptx.sreg.", 24) &&
	       strcmp(n, "llvm.nvvm.read.ptx.sreg.laneid") != 0;
}

/* Whether @bb lies on a cycle of the CFG (is reachable from its own successors). */
static bool in_cycle(LLVMBasicBlockRef bb)
{
	LLVMBasicBlockRef stack[256], seen[256];
	size_t sp = 0, ns = 0;
	LLVMValueRef t = LLVMGetBasicBlockTerminator(bb);

	for (unsigned i = 0; t && i < LLVMGetNumSuccessors(t) && sp < 256; i++)
		stack[sp++] = LLVMGetSuccessor(t, i);
	while (sp) {
		LLVMBasicBlockRef b = stack[--sp];
		bool dup = false;

		if (b == bb)
			return true;
		for (size_t k = 0; k < ns && !dup; k++)
			dup = seen[k] == b;
		if (dup)
			continue;
		if (ns == 256)
			return true;	/* too big to tell: say yes, nothing moves */
		seen[ns++] = b;
		t = LLVMGetBasicBlockTerminator(b);
		for (unsigned i = 0; t && i < LLVMGetNumSuccessors(t); i++) {
			if (sp == 256)
				return true;
			stack[sp++] = LLVMGetSuccessor(t, i);
		}
	}
	return false;
}

/*
 * The wrapper reads every special register the probes use at its top, where
 * it fills the context, and O2 leaves them there: a probe that returns at
 * once for most warps ("warp_id != 0") would still read %globaltimer in all
 * of them (GPU run 5, H100: launchlate, which returns at once in all blocks
 * but one, cost 2.6x on a stencil, against 1.14x for smload). Each such read
 * whose users all sit in one basic block outside any loop moves to just
 * before the first of them, past the early exits. Returns how many moved.
 */
static unsigned sink_sreg_reads(LLVMModuleRef mod, LLVMContextRef ctx)
{
	LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
	unsigned n = 0;

	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
		for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
			for (LLVMValueRef in = LLVMGetFirstInstruction(bb), next; in; in = next) {
				LLVMBasicBlockRef ub = NULL;
				LLVMValueRef first = NULL;
				bool one = true;

				next = LLVMGetNextInstruction(in);
				if (!is_sreg_read(in))
					continue;
				for (LLVMUseRef u = LLVMGetFirstUse(in); u && one; u = LLVMGetNextUse(u)) {
					LLVMValueRef user = LLVMGetUser(u);

					if (!LLVMIsAInstruction(user) || LLVMIsAPHINode(user)) {
						one = false;
						break;
					}
					if (!ub)
						ub = LLVMGetInstructionParent(user);
					one = ub == LLVMGetInstructionParent(user);
				}
				/* Not into a loop: a probe sees one timer value however often it reads it. */
				if (!one || !ub || ub == bb || in_cycle(ub))
					continue;
				for (LLVMValueRef x = LLVMGetFirstInstruction(ub); x && !first;
				     x = LLVMGetNextInstruction(x))
					for (LLVMUseRef u = LLVMGetFirstUse(in); u; u = LLVMGetNextUse(u))
						if (LLVMGetUser(u) == x) {
							first = x;
							break;
						}
				if (!first)
					continue;
				LLVMInstructionRemoveFromParent(in);
				LLVMPositionBuilderBefore(b, first);
				LLVMInsertIntoBuilder(b, in);
				n++;
			}
	LLVMDisposeBuilder(b);
	return n;
}

/* Checks @prog may become device code: verified as a device probe, object-wide map indexes. */
static int check_prog(struct gpuext_object *obj, struct gpuext_prog *prog)
{
	struct gpuext_runtime *rt = gpuext_prog__runtime(prog);
	GPUEXT_OPTS(gpuext_verify_opts, vo, .type = GPUEXT_PROG_DEVICE_PROBE);
	struct gpuext_verify_result res = { .sz = sizeof(res) };
	int err;

	/*
	 * Core keeps no "verified as" mark on a program, so the probe is
	 * verified here, as the type its section names: nothing reaches a
	 * GPU that the verifier did not accept as a device probe.
	 */
	err = gpuext_prog__verify(prog, &vo, &res);
	if (err || !res.accepted) {
		gpuext_log(rt, GPUEXT_LOG_WARN, "ptx: probe %s (SEC(\"%s\")) is not verified as a "
			   "device_probe (%s at insn %u): refusing to emit it", gpuext_prog__name(prog),
			   gpuext_prog__section(prog), err == -EACCES || !err ?
			   gpuext_rule_name(res.rule) : strerror(-err), res.insn_idx);
		return -EPERM;
	}
	if (gpuext_prog__map_cnt(prog) > gpuext_object__map_cnt(obj))
		goto bad_maps;
	for (size_t i = 0; i < gpuext_prog__map_cnt(prog); i++)
		if (gpuext_prog__map(prog, i) != gpuext_object__map(obj, i))
			goto bad_maps;
	return 0;
bad_maps:
	gpuext_log(rt, GPUEXT_LOG_WARN, "ptx: probe %s: its map list is not the object's, so map "
		   "indexes would differ between probes", gpuext_prog__name(prog));
	return -EINVAL;
}

/*
 * The alignment the verifier proves for each of @prog's loads and stores
 * (gpuext_verify_result.mem_align), for the lifter: a u64 field of a map
 * value is then one st.u64, not eight st.u8 (PTX has no misaligned access, so
 * an unproven one is split into bytes). NULL when it cannot be had: the
 * lifter then assumes bytes, as before. check_prog() accepted @prog already.
 */
static uint8_t *proven_align(struct gpuext_prog *prog)
{
	GPUEXT_OPTS(gpuext_verify_opts, vo, .type = GPUEXT_PROG_DEVICE_PROBE);
	struct gpuext_verify_result res = { .sz = sizeof(res) };
	size_t n = gpuext_prog__insn_cnt(prog);

	res.mem_align = calloc(n ? n : 1, 1);
	if (res.mem_align && (gpuext_prog__verify(prog, &vo, &res) || !res.accepted)) {
		free(res.mem_align);
		return NULL;
	}
	return res.mem_align;
}

int gpuext_ptx_probe_emit(struct gpuext_object *obj, const char *sm, bool per_thread,
			  uint32_t *events, char **text, size_t *len)
{
	struct gpuext_ptx_diag diag = { .text = "", .error = false };
	size_t cnt[GPUEXT_PTX_PROBE_NR] = { 0 }, nprogs = 0;
	uint32_t guard[GPUEXT_PTX_PROBE_NR][GPUEXT_PTX_MAX_PROGS] = { { 0 } }, g;
	uint32_t site[GPUEXT_PTX_PROBE_NR] = { 3, 3, 3, 3 };
	struct gpuext_runtime *rt;
	LLVMTargetMachineRef tm = NULL;
	LLVMMemoryBufferRef out = NULL;
	LLVMModuleRef mod = NULL;
	LLVMContextRef ctx = NULL;
	LLVMTargetRef target;
	char *msg = NULL, *ir = NULL;
	uint32_t ev = 0, words = 0;
	bool vars = false;
	int err = 0;

	if (!obj || !text || !len)
		return GPUEXT_ERR(EINVAL);
	*text = NULL;
	*len = 0;
	if (events)
		*events = 0;
	if (!gpuext_object__prog_cnt(obj))
		return GPUEXT_ERR(ENOENT);
	rt = gpuext_prog__runtime(gpuext_object__prog(obj, 0));
	if (!sm)
		sm = GPUEXT_PTX_DEFAULT_SM;
	if (!gpuext_ptx_sm_supported(sm)) {
		gpuext_log(rt, GPUEXT_LOG_WARN, "ptx: unsupported target '%s' (use sm_75, sm_80, "
			   "sm_86, sm_87, sm_89 or sm_90)", sm);
		return GPUEXT_ERR(EINVAL);
	}
	for (size_t i = 0; i < gpuext_object__prog_cnt(obj); i++) {
		struct gpuext_prog *p = gpuext_object__prog(obj, i);
		int e = probe_event(gpuext_prog__section(p));

		if (e == -2)
			continue;
		if (e == -1) {
			gpuext_log(rt, GPUEXT_LOG_WARN, "ptx: program %s: unknown probe section "
				   "'%s' (use probe/entry, probe/exit, probe/load or probe/store)",
				   gpuext_prog__name(p), gpuext_prog__section(p));
			return GPUEXT_ERR(EINVAL);
		}
		err = check_prog(obj, p);
		if (err)
			return GPUEXT_ERR(-err);
		if (cnt[e] == GPUEXT_PTX_MAX_PROGS) {
			gpuext_log(rt, GPUEXT_LOG_WARN, "ptx: object %s has more than %d probe/%s "
				   "programs", gpuext_object__name(obj), GPUEXT_PTX_MAX_PROGS,
				   ev_names[e]);
			return GPUEXT_ERR(E2BIG);
		}
		/* The site tests what every program of the event asks for. */
		g = probe_guard(gpuext_prog__section(p));
		guard[e][cnt[e]++] = g;
		site[e] &= g;
		nprogs++;
	}
	for (int e = 0; e < GPUEXT_PTX_PROBE_NR; e++) {
		if (!cnt[e])
			site[e] = 0;
		cnt[e] = 0;	/* counted again while lifting */
	}
	if (!nprogs) {
		gpuext_log(rt, GPUEXT_LOG_WARN, "ptx: object %s has no SEC(\"probe/...\") program",
			   gpuext_object__name(obj));
		return GPUEXT_ERR(ENOENT);
	}

	gpuext_cg_init_llvm();
	if (LLVMGetTargetFromTriple(PTX_TRIPLE, &target, &msg)) {
		gpuext_log(rt, GPUEXT_LOG_WARN, "ptx: this LLVM has no NVPTX target (%s)",
			   msg ? msg : "?");
		LLVMDisposeMessage(msg);
		return GPUEXT_ERR(ENOSYS);
	}
	tm = LLVMCreateTargetMachine(target, PTX_TRIPLE, sm, GPUEXT_PTX_ISA_FEATURE,
				     LLVMCodeGenLevelDefault, LLVMRelocDefault, LLVMCodeModelDefault);
	if (!tm)
		return GPUEXT_ERR(ENOMEM);
	ctx = LLVMContextCreate();
	LLVMContextSetDiagnosticHandler(ctx, gpuext_ptx_diag_handler, &diag);
	mod = LLVMModuleCreateWithNameInContext("gpuext_probes", ctx);
	{
		LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
		char *dl = LLVMCopyStringRepOfTargetData(td);

		LLVMSetDataLayout(mod, dl);
		LLVMSetTarget(mod, PTX_TRIPLE);
		LLVMDisposeMessage(dl);
		LLVMDisposeTargetData(td);
	}

	/* Each probe lifted under its own entry name (its subprograms are prefixed with it). */
	for (size_t i = 0; i < gpuext_object__prog_cnt(obj) && !err; i++) {
		struct gpuext_prog *p = gpuext_object__prog(obj, i);
		int e = probe_event(gpuext_prog__section(p));
		char name[64];
		LLVMModuleRef pm = NULL;

		if (e < 0)
			continue;
		snprintf(name, sizeof(name), "gpuext_pr_%s_%zu", ev_names[e], cnt[e]++);
		ev |= 1u << e;
		words |= ctx_words(rt, gpuext_prog__insns(p), gpuext_prog__insn_cnt(p));
		{
			uint8_t *align = proven_align(p);
			GPUEXT_OPTS(gpuext_cg_lift_opts, lo, .target = GPUEXT_CG_PTX, .entry_name = name,
				    .mem_align = align);

			err = gpuext_cg_lift(p, ctx, &lo, &pm);
			free(align);
		}
		if (err) {
			gpuext_log(rt, GPUEXT_LOG_WARN, "ptx: probe %s: lifting failed (%d)",
				   gpuext_prog__name(p), err);
			break;
		}
		LLVMSetDataLayout(pm, LLVMGetDataLayoutStr(mod));
		LLVMSetTarget(pm, PTX_TRIPLE);
		if (LLVMLinkModules2(mod, pm)) {
			gpuext_log(rt, GPUEXT_LOG_WARN, "ptx: probe %s: linking failed",
				   gpuext_prog__name(p));
			err = -EINVAL;
		}
	}
	if (err)
		goto out;
	vars = LLVMGetNamedFunction(mod, "gpuext_rt_var") != NULL;
	{
		size_t nm = gpuext_object__map_cnt(obj);
		struct gpuext_ptx_map_desc *shapes = calloc(nm ? nm : 1, sizeof(*shapes));
		bool w0 = nprogs > 0;	/* does only warp 0 of a block ever run a probe? */

		/* The same shape fields the host writes (ptx.h, hal/nvidia/nv_maps.c). */
		for (size_t i = 0; shapes && i < nm; i++) {
			struct gpuext_map *m = gpuext_object__map(obj, i);

			shapes[i].type = gpuext_map__type(m);
			shapes[i].key_size = gpuext_map__key_size(m);
			shapes[i].value_size = gpuext_map__value_size(m);
			shapes[i].stride = gpuext_ptx_probe_stride(shapes[i].type,
								   shapes[i].value_size);
			/* what the host writes for an array or a hash (hal/nvidia/nv_maps.c) */
			shapes[i].max_entries = gpuext_map__max_entries(m);
		}
		for (int e = 0; e < GPUEXT_PTX_PROBE_NR; e++)
			for (size_t i = 0; i < cnt[e]; i++)
				w0 &= (guard[e][i] & GPUEXT_PTX_GUARD_WARP0) != 0;
		err = shapes ? gpuext_ptx_runtime_ir_shaped(nm, shapes, per_thread, vars, w0, &ir) :
			       -ENOMEM;
		free(shapes);
	}
	if (!err)
		err = link_ir(rt, ctx, mod, ir, "device runtime");
	free(ir);
	ir = NULL;
	if (!err)
		err = wrapper_ir(cnt, guard, site, nprogs, per_thread, &ir);
	if (!err)
		err = link_ir(rt, ctx, mod, ir, "probe wrappers");
	free(ir);
	if (!err)
		err = gpuext_ptx_define_stubs(rt, "probes", mod, ctx);
	if (err)
		goto out;
	/* The wrappers' context alloca only vanishes when the probes are inlined into them. */
	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
		if (starts_with(LLVMGetValueName(f), "gpuext_pr_") && !LLVMIsDeclaration(f))
			LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
						LLVMCreateEnumAttribute(ctx,
						LLVMGetEnumAttributeKindForName("alwaysinline", 12), 0));
	probe_internalize(mod);
	if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
		gpuext_log(rt, GPUEXT_LOG_WARN, "ptx: probes of %s: invalid module: %.600s",
			   gpuext_object__name(obj), msg ? msg : "?");
		err = -EINVAL;
		goto out;
	}
	LLVMDisposeMessage(msg);
	msg = NULL;
	gpuext_ptx_demote_stack_atomics(mod, ctx);
	err = gpuext_cg_optimize(mod, tm);
	if (!err && fold_int_ptr_round_trips(mod, ctx))
		err = gpuext_cg_optimize(mod, tm);
	/* O2 folds pointer round trips, which can reveal more stack atomics */
	if (!err && gpuext_ptx_demote_stack_atomics(mod, ctx))
		err = gpuext_cg_optimize(mod, tm);
	if (err)
		goto out;
	sink_sreg_reads(mod, ctx);
	gpuext_ptx_global_atomics(mod, ctx);
	if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &msg, &out) ||
	    diag.error) {
		gpuext_log(rt, GPUEXT_LOG_WARN, "ptx: probes of %s: NVPTX code generation failed: "
			   "%s%s%s", gpuext_object__name(obj), msg ? msg : "",
			   msg && diag.error ? "; " : "", diag.text);
		err = -EINVAL;
		goto out;
	}
	{
		const char *b = LLVMGetBufferStart(out);
		size_t n = LLVMGetBufferSize(out);

		while (n && b[n - 1] == '\0')
			n--;
		err = strip_header(b, n, sm, ev, words, site, text, len);
	}
	if (!err && events)
		*events = ev;
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

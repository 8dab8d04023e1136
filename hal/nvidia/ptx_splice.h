/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The probe ABI the splicer (ptx_splice.c) writes into a kernel, for the
 * preload library and the tools (private to hal/nvidia; not installed).
 *
 * A site is the body of the probe function, inlined by the splicer
 * (ptx_inline.c) as if called like this, with nothing in local memory:
 *
 *   call gpuext_probe_<event>, (kernel_id, args, addr, value, size)
 *        .b64 kernel_id  gx_kernel_id(mangled .entry name), an immediate
 *        .b64 args       generic address of the kernel's parameter buffer (the
 *                        first .param, cvta.param: PTX ISA 7.7, sm_70+; the
 *                        splicer raises .version to 7.7 when needed); 0 when
 *                        the kernel has no parameters, the module's (raised)
 *                        .target is below sm_70, or no probe reads ctx->args
 *        .b64 addr       load/store sites: the global address (base register +
 *                        offset, as the instruction computes it; a global
 *                        variable operand through cvta.global); else 0
 *        .b64 value      load/store sites: the value stored (stores) or loaded
 *                        (loads): the first element of a vector, masked to the
 *                        element size, zero-extended; else 0
 *        .b32 size       load/store sites: bytes the instruction accesses (a
 *                        .v4.f32 access: 16); else 0
 * addr and value are 0 as well when no probe reads them: the probe text says
 * which 4-byte words of struct gpuext_probe_ctx the probes read
 * ("// gpuext-ctx-words 0xMASK", codegen/ptx/ptx_probe.c; absent: all).
 *
 * The probe function (codegen/ptx/ptx_probe.c) builds struct
 * gpuext_probe_ctx (gpuext/probe.h) itself: timer_ns = %globaltimer when
 * read, event, grid_dim = %nctaid, block_dim = %ntid, block_id = %ctaid,
 * thread_id = %tid, lane_id = %laneid, warp_id = linear thread index in the
 * block / 32 (not %warpid, which names a hardware warp slot and changes under
 * preemption), sm_id = %smid, gpu_id = the probe text's global
 * `.visible .const .u32 gpuext_rt_gpu_id` (0 until the preload library
 * writes the GPU id (the system's number of the GPU, nv_util.h) into it with
 * cuModuleGetGlobal + cuMemcpyHtoD
 * after the load). The probes are inlined into it, so a field no probe reads
 * is never computed.
 *
 * Calls come from every thread that reaches the site (divergent sites
 * included); in warp mode the probe function elects the lowest active lane,
 * lane 0 at exits (ptx.h, gpuext_ptx_probe_emit). Sites: entry once per
 * thread, after the kernel's prologue of parameter loads, moves and
 * arithmetic, before its first other instruction or label (ptx_text.c,
 * gx_ptx_entry_may_follow); exit before every ret/exit of the .entry body
 * (predicated ones only when the predicate holds), after every branch to a
 * shared ret got its own (ptx_exits.c); load/store after every ld.global/ldu.global/st.global (any qualifiers, .v2/.v4/.v8)
 * and every generic ld/st whose address isspacep.global, in the .entry body
 * only: .func bodies (the kernel's callees) are not instrumented.
 *
 * Why no context in memory: GPU run 4 (H200) built the context in local
 * memory at every site, and that alone cost 1.4x (gemm) to 3.6x (stencil)
 * with probes that returned at once.
 */
#ifndef GPUEXT_NV_PTX_SPLICE_H
#define GPUEXT_NV_PTX_SPLICE_H

#include <stdbool.h>
#include <stddef.h>

#include "gpuext/probe.h"

#define GX_CTX_KERNEL_ID ((unsigned)offsetof(struct gpuext_probe_ctx, kernel_id))
#define GX_CTX_TIMER	 ((unsigned)offsetof(struct gpuext_probe_ctx, timer_ns))
#define GX_CTX_ADDR	 ((unsigned)offsetof(struct gpuext_probe_ctx, addr))
#define GX_CTX_VALUE	 ((unsigned)offsetof(struct gpuext_probe_ctx, value))
#define GX_CTX_SIZE	 ((unsigned)offsetof(struct gpuext_probe_ctx, size))
#define GX_CTX_EVENT	 ((unsigned)offsetof(struct gpuext_probe_ctx, event))
#define GX_CTX_GRID	 ((unsigned)offsetof(struct gpuext_probe_ctx, grid_dim))
#define GX_CTX_BLOCK	 ((unsigned)offsetof(struct gpuext_probe_ctx, block_dim))
#define GX_CTX_BLOCK_ID	 ((unsigned)offsetof(struct gpuext_probe_ctx, block_id))
#define GX_CTX_THREAD_ID ((unsigned)offsetof(struct gpuext_probe_ctx, thread_id))
#define GX_CTX_LANE	 ((unsigned)offsetof(struct gpuext_probe_ctx, lane_id))
#define GX_CTX_WARP	 ((unsigned)offsetof(struct gpuext_probe_ctx, warp_id))
#define GX_CTX_SM	 ((unsigned)offsetof(struct gpuext_probe_ctx, sm_id))
#define GX_CTX_GPU	 ((unsigned)offsetof(struct gpuext_probe_ctx, gpu_id))
#define GX_CTX_ARGS	 ((unsigned)offsetof(struct gpuext_probe_ctx, args))
#define GX_CTX_BYTES	 ((unsigned)sizeof(struct gpuext_probe_ctx))

/*
 * Site guards (codegen/ptx/ptx.h GPUEXT_PTX_GUARD_*, from the sections
 * probe/<event>/warp0|block0|first; "// gpuext-site-guards E X L S" in the
 * probe text): the splicer tests them before a site, and the threads they
 * exclude skip it, before any leader election.
 */
#define GX_GUARD_WARP0	1u	/* linear thread index in the block < 32 */
#define GX_GUARD_BLOCK0	2u	/* %ctaid == (0,0,0) */

/* The module global the preload library sets to the GPU id (nv_gpu_rank()). */
#define GX_GPU_ID_SYMBOL "gpuext_rt_gpu_id"

/* ---- inlining the probe functions into the sites (ptx_inline.c) ------- */

#define GX_PROBE_NARGS 5	/* kernel_id, args, addr, value, size */

/* One probe function of the pack's PTX: its parameter names and its body. */
struct gx_probe_body {
	char name[48];
	char params[GX_PROBE_NARGS][64];
	int nparams;
	char *text;		/* between the function's braces */
	size_t len;
};

/*
 * Finds the definition of ".func @name(...)" in @ptx. 0, -ENOMEM, or -EINVAL
 * with what is wrong in @err (no definition, unnamed parameter, no closing
 * brace at the start of a line).
 */
int gx_probe_body_parse(const char *ptx, size_t len, const char *name, struct gx_probe_body *b,
			char *err, size_t err_len);
void gx_probe_body_free(struct gx_probe_body *b);

/*
 * Hoisting (ptx_hoist.c says what moves and why): a plan made once per
 * probe body; NULL on ENOMEM. GX_HOIST_LIVE_MAX: 32-bit registers a site's
 * moved code may keep live from the function's start. @at_site: the code
 * goes to the site's own start instead (exit sites, ptx_splice.c), where
 * nothing stays live across the kernel's code (no limit), and a branch on
 * %laneid alone, or on the linear thread index mod 32 (an exit's election),
 * does not end what may move.
 */
#define GX_HOIST_LIVE_MAX 6
/* Appends @n bytes of @s to the malloc'd text *@o (NUL-terminated); false on ENOMEM. */
bool gx_text_put(char **o, size_t *len, size_t *cap, const char *s, size_t n);
struct gx_hoist_plan;
struct gx_hoist_plan *gx_hoist_plan_make(const struct gx_probe_body *b, bool at_site);
void gx_hoist_plan_free(struct gx_hoist_plan *plan);
/* Whether the body's line @line (0-based) moves; whether register @tok is renamed at the site. */
bool gx_hoist_line_moved(const struct gx_hoist_plan *plan, int line);
bool gx_hoist_reg_renamed(const struct gx_hoist_plan *plan, const char *tok, size_t n, bool site);
/*
 * What moves, for the site @sfx: its registers declared ("%@sfx_h_NAME")
 * and its lines, to go at the function's start; "" when nothing does (or
 * @plan is NULL). malloc'd; NULL on ENOMEM.
 */
char *gx_hoist_text(const struct gx_hoist_plan *plan, const char *sfx);

/*
 * The body as a nested block for one site: parameter k read from register
 * @args[k] (@arg_bits[k] wide), labels suffixed "_@sfx", "ret;" a branch to
 * the block's end label $@sfx_end. With @plan (may be NULL: nothing moves),
 * the lines it moves are left out and their registers renamed, and with
 * @hoisted the moved code for the function's start comes back in *@hoisted
 * (gx_hoist_text). malloc'd; NULL on ENOMEM (*@hoisted NULL too).
 */
char *gx_probe_body_inline(const struct gx_probe_body *b, const char *const args[GX_PROBE_NARGS],
			   const unsigned arg_bits[GX_PROBE_NARGS], const char *sfx,
			   const struct gx_hoist_plan *plan, char **hoisted);
/*
 * A site's inlined text with "@%P bra L;" ... "@%Q bra L;" (the same L, at
 * most a few register-only instructions between, none writing P) made one
 * branch: "or.pred PRED, %P, %Q; @PRED bra L;". The leader election and a
 * map's NULL test then guard the probe's one memory operation together, and
 * ptxas predicates it instead of branching twice. Malloc'd, or NULL.
 */
char *gx_site_merge_guards(const char *text, const char *pred);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Seams between the files of codegen/ptx (not for users of ptx.h). */
#ifndef GPUEXT_CODEGEN_PTX_IMPL_H
#define GPUEXT_CODEGEN_PTX_IMPL_H

#include <stdbool.h>
#include <stddef.h>

#include <llvm-c/Core.h>

struct gpuext_ptx_map_desc;

struct gpuext_runtime;

/*
 * The device runtime as LLVM IR text (no triple/datalayout: the caller sets
 * the lifted module's): the map table sized for @map_cnt maps, the helpers,
 * gpuext_rt_var when @with_vars, and the test kernel calling @entry (none
 * when @entry is NULL). *out is malloc'd. 0 or -ENOMEM.
 */
int gpuext_ptx_runtime_ir(size_t map_cnt, bool per_thread, bool with_vars, const char *entry,
			  char **out);

/*
 * The runtime for device probes: as gpuext_ptx_runtime_ir() without a test
 * kernel, with each map's type, key_size, value_size and stride (@shapes,
 * @map_cnt of them; the rest of each entry is ignored) compiled in as
 * constants, so O2 specialises every map helper to its map. The host fills
 * gpuext_rt_maps exactly as for the generic runtime. @warp0_only: every
 * probe of the object runs in warp 0 of its block only (probe/EVENT/warp0 or
 * /first), so a ring shard is chosen from %smid and %ctaid.x alone: %warpid
 * would spread nothing more (warp 0 of each block writes) and its S2R is on
 * every block's way out. 0, -EINVAL, -ENOMEM.
 */
int gpuext_ptx_runtime_ir_shaped(size_t map_cnt, const struct gpuext_ptx_map_desc *shapes,
				 bool per_thread, bool with_vars, bool warp0_only, char **out);

/* Is @sm one gpuext emits for ("sm_75" .. "sm_90")? */
bool gpuext_ptx_sm_supported(const char *sm);

/* LLVM errors raised as diagnostics (they would otherwise end the process). */
struct gpuext_ptx_diag {
	char text[1024];
	bool error;
};
void gpuext_ptx_diag_handler(LLVMDiagnosticInfoRef di, void *user);

/*
 * Gives every declared helper/kfunc of @mod without a device implementation
 * a body: kfuncs return -EINVAL (they advise a host driver; on a GPU they
 * mean nothing), unknown helpers -EOPNOTSUPP. Any other undefined function
 * is an error (-ENOSYS, logged naming @who): the PTX would not link.
 */
int gpuext_ptx_define_stubs(struct gpuext_runtime *rt, const char *who, LLVMModuleRef mod,
			    LLVMContextRef ctx);

/*
 * PTX has no atomics on .local memory, yet eBPF may do atomics on its stack:
 * every atomic whose address surely is the stack becomes a plain
 * load/op/store (the stack is private to the thread). Returns the number
 * rewritten.
 */
unsigned gpuext_ptx_demote_stack_atomics(LLVMModuleRef mod, LLVMContextRef ctx);

/*
 * Puts every atomic of @mod whose address is generic and surely not the
 * eBPF stack in the global space (an addrspacecast to addrspace(1) before
 * it): eBPF atomics work on the stack (demoted to plain code), map values and
 * ring records, and on NVIDIA the latter two are device memory. An address
 * that might be the stack (through a subprogram's argument, a reload of a
 * spill, a call) stays generic. A generic atomic
 * makes ptxas test the space at run time and keep a shared-memory fallback
 * whose predicate the warp waits on: an exit probe's map update became a
 * returning ATOM plus a long-scoreboard stall instead of a RED. Returns the
 * number rewritten.
 */
unsigned gpuext_ptx_global_atomics(LLVMModuleRef mod, LLVMContextRef ctx);

#endif

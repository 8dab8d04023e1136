/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Codegen: one lifter from verified eBPF to LLVM IR (lift.c), then per
 * target: host x86-64 through an ORC JIT (host/), PTX through LLVM's NVPTX
 * backend (ptx/), SPIR-V through LLVM's SPIR-V backend (spirv/). The
 * interpreter (core/interp.c) stays the reference every target is checked
 * against.
 *
 * The lifted module's contract, shared by every target runtime:
 *  - the entry is `i64 @<entry>(ptr %ctx, i64 %ctx_len)` (r1, r2); r10 is a
 *    512-byte-per-frame stack array; every subprogram is its own function;
 *  - helpers are calls to `i64 @gpuext_rt_helper_<id>(i64, i64, i64, i64, i64)`,
 *    kfuncs to `i64 @gpuext_rt_kfunc_<name>(...)` (5 x i64), each defined by
 *    the target's runtime (host: a C trampoline into the registry; device: a
 *    device function of its runtime module);
 *  - map references (ld_imm64 src=1/2/5/6) become `ptr @gpuext_rt_map(i32 idx)`
 *    and `ptr @gpuext_rt_map_value(i32 idx, i32 off)` with idx the index in
 *    gpuext_prog__map(), or, when the target fixes them at codegen time,
 *    constants (host JIT: the struct gpuext_map pointer);
 *  - on device targets, variables (ld_imm64 src=3) become `ptr @gpuext_rt_var(i32 id)`;
 *  - eBPF semantics are kept where LLVM would call them undefined (division
 *    and modulo by zero, INT_MIN/-1, shift amounts masked, 32-bit results
 *    zero-extended).
 */
#ifndef GPUEXT_CODEGEN_H
#define GPUEXT_CODEGEN_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "gpuext/gpuext.h"

enum gpuext_cg_target {
	GPUEXT_CG_HOST = 0,	/* x86-64, in-process ORC JIT */
	GPUEXT_CG_PTX,		/* NVPTX 64, PTX text */
	GPUEXT_CG_SPIRV,	/* SPIR-V Kernel flavour (OpenCL, Physical64): Level Zero, AMD */
	GPUEXT_CG_SPIRV_VULKAN,	/* SPIR-V Shader flavour (Vulkan compute, PhysicalStorageBuffer64) */
};

const char *gpuext_cg_target_name(enum gpuext_cg_target t);
int gpuext_cg_target_by_name(const char *name);	/* "host", "ptx", "spirv", "spirv-vulkan"; -1 */

struct gpuext_cg_lift_opts {
	size_t sz;
	enum gpuext_cg_target target;	/* data layout, triple, address spaces */
	const char *entry_name;		/* default: the program's name */
	/*
	 * NULL, or the verifier's gpuext_verify_result.mem_align for this
	 * program: loads and stores get that alignment (capped at their size)
	 * instead of 1 where the base is not the frame pointer.
	 */
	const uint8_t *mem_align;
};

/*
 * Lifts @prog into a new module in @ctx (the caller owns both). The program
 * should have been verified; the lifter relies on it (no bounds checks).
 * 0 or a negative errno, the reason logged through the program's runtime.
 */
int gpuext_cg_lift(struct gpuext_prog *prog, LLVMContextRef ctx,
		   const struct gpuext_cg_lift_opts *opts, LLVMModuleRef *out);

/* Runs LLVM's O2 pipeline on @mod for @tm (NULL: target-independent). */
int gpuext_cg_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm);

#endif

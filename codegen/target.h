/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the lifter and the emitters need to know about each codegen target:
 * triple, data layout, address spaces, how map references are spelled, and
 * a TargetMachine for it. Internal to libgpuext (codegen/ only).
 */
#ifndef GPUEXT_CODEGEN_TARGET_H
#define GPUEXT_CODEGEN_TARGET_H

#include <stdbool.h>
#include <stddef.h>

#include <llvm-c/TargetMachine.h>

#include "codegen.h"

/* Static description of one target; lives for the whole process. */
struct gpuext_cg_target_desc {
	enum gpuext_cg_target target;
	const char *name;	/* "host", "ptx", "spirv", "spirv-vulkan" */
	const char *triple;
	const char *datalayout;	/* checked against the TargetMachine's in tests */
	/*
	 * Address space of every pointer made from an eBPF register
	 * (inttoptr): context, map values, ring-buffer records, and the stack
	 * once its address is taken. Generic on every target.
	 */
	unsigned mem_as;
	/* Address space of the per-frame stack alloca (private/function). */
	unsigned stack_as;
	/*
	 * Map (src=1/2/5/6) and variable (src=3) references become constant
	 * addresses fixed at codegen time (the host JIT). Otherwise they are
	 * calls to gpuext_rt_map(i32 idx), gpuext_rt_map_value(i32 idx, i32 off)
	 * and gpuext_rt_var(i32 id), defined by the target's runtime module.
	 */
	bool const_refs;
};

const struct gpuext_cg_target_desc *gpuext_cg_target_desc(enum gpuext_cg_target t);

/*
 * Initialises LLVM's X86, NVPTX and SPIR-V targets once per process (LLVM's
 * target registry is process-global). Safe to call from any thread.
 */
void gpuext_cg_init_llvm(void);

/*
 * A TargetMachine for @t at O2. @cpu: NULL picks the default ("sm_70" for
 * PTX, the host CPU for host). 0 or -EINVAL with @err filled. The caller
 * disposes of it with LLVMDisposeTargetMachine().
 */
int gpuext_cg_target_machine(enum gpuext_cg_target t, const char *cpu,
			     LLVMTargetMachineRef *out, char *err, size_t err_len);

/*
 * Name the lifter gives the entry when opts->entry_name is NULL: the
 * program's name with every character outside [A-Za-z0-9_] replaced by '_'
 * (PTX and SPIR-V want identifiers; "alu64-add" -> "alu64_add").
 */
void gpuext_cg_entry_name(const struct gpuext_prog *prog, char *buf, size_t len);

#endif

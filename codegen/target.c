// SPDX-License-Identifier: Apache-2.0
/*
 * Codegen targets: names, triples, data layouts, address spaces, target
 * machines, and the O2 pipeline every target runs on the lifted module.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "internal.h"
#include "target.h"

/*
 * Data layouts as LLVM 22 spells them for each triple; test_codegen_jit
 * checks them against the TargetMachines so a new LLVM cannot drift silently.
 */
static const struct gpuext_cg_target_desc descs[] = {
	[GPUEXT_CG_HOST] = {
		.target = GPUEXT_CG_HOST, .name = "host", .triple = "x86_64-pc-linux-gnu",
		.datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128",
		.mem_as = 0, .stack_as = 0, .const_refs = true,
	},
	[GPUEXT_CG_PTX] = {
		.target = GPUEXT_CG_PTX, .name = "ptx", .triple = "nvptx64-nvidia-cuda",
		.datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64",
		/* Generic pointers everywhere; NVPTX moves allocas to .local itself. */
		.mem_as = 0, .stack_as = 0,
	},
	[GPUEXT_CG_SPIRV] = {
		.target = GPUEXT_CG_SPIRV, .name = "spirv", .triple = "spirv64-unknown-unknown",
		.datalayout = "e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-n8:16:32:64-G1",
		/* Generic (4) for memory, Function (0) for the stack alloca. */
		.mem_as = 4, .stack_as = 0,
	},
	[GPUEXT_CG_SPIRV_VULKAN] = {
		.target = GPUEXT_CG_SPIRV_VULKAN, .name = "spirv-vulkan",
		.triple = "spirv64-unknown-vulkan1.3-compute",
		.datalayout = "e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-n8:16:32:64-G1",
		/*
		 * Vulkan has no Generic storage class: memory reached through an
		 * integer must be PhysicalStorageBuffer64. codegen/spirv/ rewrites
		 * the address spaces it needs (spirv.h); the lifter emits the
		 * Kernel flavour's.
		 */
		.mem_as = 4, .stack_as = 0,
	},
};

const struct gpuext_cg_target_desc *gpuext_cg_target_desc(enum gpuext_cg_target t)
{
	if ((unsigned)t >= sizeof(descs) / sizeof(descs[0]))
		return NULL;
	return &descs[t];
}

const char *gpuext_cg_target_name(enum gpuext_cg_target t)
{
	const struct gpuext_cg_target_desc *d = gpuext_cg_target_desc(t);

	return d ? d->name : "unknown";
}

int gpuext_cg_target_by_name(const char *name)
{
	for (size_t i = 0; name && i < sizeof(descs) / sizeof(descs[0]); i++)
		if (!strcmp(descs[i].name, name))
			return (int)i;
	return -1;
}

static void init_llvm_once(void)
{
	LLVMInitializeX86TargetInfo();
	LLVMInitializeX86Target();
	LLVMInitializeX86TargetMC();
	LLVMInitializeX86AsmPrinter();
	LLVMInitializeNVPTXTargetInfo();
	LLVMInitializeNVPTXTarget();
	LLVMInitializeNVPTXTargetMC();
	LLVMInitializeNVPTXAsmPrinter();
	LLVMInitializeSPIRVTargetInfo();
	LLVMInitializeSPIRVTarget();
	LLVMInitializeSPIRVTargetMC();
	LLVMInitializeSPIRVAsmPrinter();
}

void gpuext_cg_init_llvm(void)
{
	/* LLVM's target registry is process-wide; registering twice is not allowed. */
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, init_llvm_once);
}

int gpuext_cg_target_machine(enum gpuext_cg_target t, const char *cpu,
			     LLVMTargetMachineRef *out, char *err, size_t err_len)
{
	const struct gpuext_cg_target_desc *d = gpuext_cg_target_desc(t);
	char *msg = NULL, *host_cpu = NULL, *host_features = NULL;
	const char *triple = d ? d->triple : NULL, *features = "";
	LLVMTargetRef target;

	if (!d || !out)
		return -EINVAL;
	gpuext_cg_init_llvm();
	if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
		snprintf(err, err_len, "no LLVM target for %s: %s", triple, msg ? msg : "?");
		LLVMDisposeMessage(msg);
		return -EINVAL;
	}
	if (t == GPUEXT_CG_HOST && !cpu) {
		host_cpu = LLVMGetHostCPUName();
		host_features = LLVMGetHostCPUFeatures();
		cpu = host_cpu;
		features = host_features;
	} else if (!cpu) {
		cpu = t == GPUEXT_CG_PTX ? "sm_70" : "";
	}
	*out = LLVMCreateTargetMachine(target, triple, cpu, features, LLVMCodeGenLevelDefault,
				       LLVMRelocPIC, LLVMCodeModelDefault);
	LLVMDisposeMessage(host_cpu);
	LLVMDisposeMessage(host_features);
	if (!*out) {
		snprintf(err, err_len, "LLVM could not create a %s target machine for cpu '%s'",
			 triple, cpu);
		return -EINVAL;
	}
	return 0;
}

void gpuext_cg_entry_name(const struct gpuext_prog *prog, char *buf, size_t len)
{
	const char *n = gpuext_prog__name(prog);
	size_t i = 0;

	if (!len)
		return;
	if (!n || !n[0])
		n = "prog";
	/* An identifier may not start with a digit. */
	if (n[0] >= '0' && n[0] <= '9' && i + 1 < len)
		buf[i++] = '_';
	for (; *n && i + 1 < len; n++) {
		char c = *n;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_';

		buf[i++] = ok ? c : '_';
	}
	buf[i] = '\0';
}

int gpuext_cg_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm)
{
	LLVMPassBuilderOptionsRef pbo = LLVMCreatePassBuilderOptions();
	LLVMErrorRef e;

	if (!pbo)
		return -ENOMEM;
	e = LLVMRunPasses(mod, "default<O2>", tm, pbo);
	LLVMDisposePassBuilderOptions(pbo);
	if (e) {
		char *msg = LLVMGetErrorMessage(e);

		gpuext_log(NULL, GPUEXT_LOG_WARN, "codegen: LLVM O2 pipeline failed: %s", msg);
		LLVMDisposeErrorMessage(msg);
		return -EINVAL;
	}
	return 0;
}

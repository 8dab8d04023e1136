/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SPIR-V backend: the lifted module (codegen.h) through LLVM's SPIR-V
 * backend, in two flavours.
 *
 *  - Kernel (GPUEXT_CG_SPIRV): spirv64, OpenCL environment, Physical64
 *    addressing, SPIR-V 1.4. One OpenCL kernel
 *      gpuext_isa_entry(global ulong *mem, ulong len, global ulong *r0_out)
 *    calls the program with r1 = mem, r2 = len and stores r0. For Level Zero
 *    and OpenCL drivers that ingest SPIR-V.
 *
 *  - Vulkan (GPUEXT_CG_SPIRV_VULKAN): Shader, SPIR-V 1.6, Vulkan 1.3 with
 *    buffer device address: addressing model PhysicalStorageBuffer64. Every
 *    eBPF pointer is a 64-bit device address: the input memory, the result
 *    slot, the eBPF stacks and the device maps and variables (array and
 *    per-CPU array maps, ld_imm64 src=3) all live in one buffer the runner allocates,
 *    so pointer <-> integer conversions and pointer arithmetic across the
 *    stack and the input memory keep eBPF's flat-memory semantics. The
 *    compute entry point "main" (local size 1x1x1) reads a 32-byte push
 *    constant block (struct gpuext_spirv_vk_args).
 *
 * docs/spirv.md says what runs where and why the rest does not.
 */
#ifndef GPUEXT_CODEGEN_SPIRV_H
#define GPUEXT_CODEGEN_SPIRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuext/gpuext.h"

/* Name of the Kernel flavour's OpenCL kernel and of the Vulkan entry point. */
#define GPUEXT_SPIRV_KERNEL_NAME "gpuext_isa_entry"
#define GPUEXT_SPIRV_VK_ENTRY_NAME "main"

/*
 * Vulkan flavour: the eBPF stacks (one static slot per stack allocation of
 * each function: eBPF forbids recursion, so no two live frames share a slot)
 * take at most this many bytes, placed by the runner after the memory.
 */
#define GPUEXT_SPIRV_VK_STACK_MAX (64u * 1024u)

/*
 * Vulkan flavour: the data area, right after the stacks (stack +
 * GPUEXT_SPIRV_VK_STACK_MAX, so 8-aligned), holds the program's device maps
 * and the runtime's variables, each 8-aligned, in order: every array and
 * per-CPU array map of gpuext_prog__map() (max_entries values of
 * value_size rounded up to 8 bytes, key order; per-CPU arrays keep one slot,
 * CPU 0: one invocation), then every registered variable (ld_imm64 src=3)
 * in registration order. Other map types take no room. The emitter bakes
 * these offsets into the module; the runner copies the area in before the
 * dispatch and back after.
 */
struct gpuext_spirv_vk_slot {
	uint64_t off;		/* from the start of the data area */
	uint64_t size;		/* 0: not on the device */
	uint32_t stride, entries, value_size;
};

/*
 * Fills @maps[i] for each map of @prog (NULL: skipped) and @vars[j] for each
 * variable of its runtime (NULL: skipped); *@size is the area's size.
 */
int gpuext_spirv_vk_data_layout(struct gpuext_prog *prog, struct gpuext_spirv_vk_slot *maps,
				size_t map_cap, struct gpuext_spirv_vk_slot *vars, size_t var_cap,
				uint64_t *size);
/* The maps' and variables' current contents as a data area (malloc'd). */
int gpuext_spirv_vk_data_save(struct gpuext_prog *prog, void **blob, size_t *len);
/* Writes a data area back into the maps and variables. */
int gpuext_spirv_vk_data_load(struct gpuext_prog *prog, const void *blob, size_t len);

/* The Vulkan flavour's push constant block (all device addresses). */
struct gpuext_spirv_vk_args {
	uint64_t mem;		/* r1 */
	uint64_t mem_len;	/* r2 */
	uint64_t stack;		/* GPUEXT_SPIRV_VK_STACK_MAX bytes, 16-aligned */
	uint64_t r0_out;	/* 8 bytes: r0 at exit */
};

struct gpuext_spirv_emit_opts {
	size_t sz;
	bool vulkan;		/* false: Kernel flavour */
	/*
	 * Out: why the module would not behave like the interpreter even though
	 * it was emitted (a helper, kfunc or map reference lowered to a stub of
	 * the device runtime), "" when it is exact. The runner refuses inexact
	 * modules.
	 */
	char *inexact;
	size_t inexact_len;
	/* Out: why emission failed (LLVM's or our message), NUL-terminated. */
	char *err;
	size_t err_len;
	/*
	 * Lift and compile in this process instead of a forked child. For
	 * debugging only: LLVM aborts the process on some unsupported input,
	 * and LLVM 22's SPIR-V backend keeps state between compilations in one
	 * process (a later module can get duplicate ids: "Id 2 is defined more
	 * than once"). GPUEXT_SPIRV_IN_PROCESS=1 in the environment does the same.
	 */
	bool in_process;
};

/*
 * Lifts @prog and compiles it to a SPIR-V binary (malloc'd into *bin, *len
 * bytes; free() it). The program should have been verified. 0, or -ENOTSUP
 * (LLVM or this backend cannot express it: opts->err says what), -ENOMEM,
 * -EINVAL.
 */
int gpuext_spirv_emit_opts(struct gpuext_prog *prog, struct gpuext_spirv_emit_opts *opts,
			   void **bin, size_t *len);
int gpuext_spirv_emit(struct gpuext_prog *prog, bool vulkan, void **bin, size_t *len);

/* ------------------------------------------------------------------ */
/* Vulkan runner: libvulkan.so.1 is dlopen'ed, never linked.           */
/* ------------------------------------------------------------------ */

struct gpuext_spirv_vk;

struct gpuext_spirv_vk_opts {
	size_t sz;
	/*
	 * Substring of the device name to pick ("llvmpipe", "NVIDIA"); NULL:
	 * the first discrete/integrated GPU, else the first CPU device.
	 */
	const char *device;
	const struct gpuext_runtime *rt;	/* for log messages; may be NULL */
};

/* -ENODEV (no loader, no device, missing features: the log says which). */
int gpuext_spirv_vk__open(const struct gpuext_spirv_vk_opts *opts, struct gpuext_spirv_vk **out);
void gpuext_spirv_vk__close(struct gpuext_spirv_vk *vk);
const char *gpuext_spirv_vk__device_name(const struct gpuext_spirv_vk *vk);

/*
 * Runs a Vulkan-flavour module once (one workgroup of one invocation):
 * @mem (may be NULL when @mem_len is 0) is copied in, r1 = its device
 * address, r2 = @mem_len; after the run the memory is copied back and *r0
 * set. @err (optional) receives the reason of a failure.
 */
int gpuext_spirv_vk__run_spv(struct gpuext_spirv_vk *vk, const void *spv, size_t spv_len,
			     void *mem, size_t mem_len, uint64_t *r0, char *err, size_t err_len);
/* The same with a data area (@data, @data_len: copied in and back; may be NULL/0). */
int gpuext_spirv_vk__run_spv_data(struct gpuext_spirv_vk *vk, const void *spv, size_t spv_len,
				  void *mem, size_t mem_len, void *data, size_t data_len,
				  uint64_t *r0, char *err, size_t err_len);

/*
 * Emits @prog (Vulkan flavour) and runs it on @vk like gpuext_prog__run()
 * runs it in the interpreter. -ENOTSUP when the module would be inexact or
 * cannot be emitted (the reason in @err).
 */
int gpuext_spirv_vk__run_prog(struct gpuext_spirv_vk *vk, struct gpuext_prog *prog, void *mem,
			      size_t mem_len, uint64_t *r0, char *err, size_t err_len);

/*
 * One-shot convenience for `gpuext run-prog --backend spirv-vulkan` and the
 * conformance plugin: opens the first usable device (GPUEXT_VK_DEVICE in
 * the environment picks one by name), emits, runs, closes. Messages go to
 * the program's runtime log.
 */
int gpuext_spirv_vk_run(struct gpuext_prog *prog, void *mem, size_t len, uint64_t *r0);

#endif

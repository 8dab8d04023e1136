/* SPDX-License-Identifier: Apache-2.0 */
/* Internal to codegen/spirv/: the seams between its files. */
#ifndef GPUEXT_CODEGEN_SPIRV_IMPL_H
#define GPUEXT_CODEGEN_SPIRV_IMPL_H

#include <stdarg.h>
#include <stddef.h>

/* A bounded message buffer; text past the end is dropped. */
struct strbuf {
	char buf[1024];
	size_t len;
};

void sb_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Finishes LLVM's Shader-flavour output for Vulkan with buffer device
 * address (spirv_vk_fix.c): addressing model PhysicalStorageBuffer64,
 * CrossWorkgroup pointers -> PhysicalStorageBuffer, ArrayStride on those
 * pointer types, push-constant accesses as OpAccessChain, no linkage.
 * Writes a malloc'd binary to *out. 0 or -ENOTSUP/-EINVAL (reason in @err).
 */
int gpuext_spirv_vk_fix(const void *in, size_t in_len, void **out, size_t *out_len,
			struct strbuf *err);

#endif

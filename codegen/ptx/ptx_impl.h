/* SPDX-License-Identifier: Apache-2.0 */
/* Seams between the files of codegen/ptx (not for users of ptx.h). */
#ifndef GPUEXT_CODEGEN_PTX_IMPL_H
#define GPUEXT_CODEGEN_PTX_IMPL_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The device runtime as LLVM IR text (no triple/datalayout: the caller sets
 * the lifted module's): the map table sized for @map_cnt maps, the helpers,
 * gpuext_rt_var when @with_vars, and the test kernel calling @entry (none
 * when @entry is NULL). *out is malloc'd. 0 or -ENOMEM.
 */
int gpuext_ptx_runtime_ir(size_t map_cnt, bool per_thread, bool with_vars, const char *entry,
			  char **out);

/* Is @sm one gpuext emits for ("sm_75" .. "sm_90")? */
bool gpuext_ptx_sm_supported(const char *sm);

#endif

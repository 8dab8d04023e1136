/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Flat twins of instrumented kernels (ptx_twin.c): the preload library
 * launches NAME GX_FLAT_TWIN_SUFFIX instead of NAME when the launch's block
 * and grid are 1 in z (nv_launch.c).
 */
#ifndef GPUEXT_HAL_NVIDIA_PTX_TWIN_H
#define GPUEXT_HAL_NVIDIA_PTX_TWIN_H

#include <stddef.h>

/* Appended to a kernel's name to name its flat twin. */
#define GX_FLAT_TWIN_SUFFIX "__gpuext_flat"

/*
 * The flat twin of the spliced .entry function @fn (@n bytes, from its
 * header to its closing brace; named @name; @pfx the splicer's register
 * prefix) into *@out (malloc'd, NUL-terminated, *@out_len bytes), with
 * *@folded the z-register reads made constants (0: the twin is not worth
 * having). 0, -EINVAL (no ".entry @name" in @fn) or -ENOMEM.
 */
int gx_ptx_flat_twin(const char *fn, size_t n, const char *name, const char *pfx, char **out,
		     size_t *out_len, unsigned *folded);

#endif

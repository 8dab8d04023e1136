/* SPDX-License-Identifier: Apache-2.0 */
/* Stateless readers of PTX text for the splicer (ptx_text.c); gx_ptx_const_bytes() is in nvprobe.h. */
#ifndef GPUEXT_HAL_NVIDIA_PTX_TEXT_H
#define GPUEXT_HAL_NVIDIA_PTX_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "@%p1 op ..." / "@!%p1 op ...": the guard into @guard (@glen bytes), *@neg; returns the rest. */
const char *gx_ptx_split_guard(const char *t, char *guard, size_t glen, bool *neg);
/* Splits @ops in place at top-level commas (outside {} and []); at most @max. Returns the count. */
int gx_ptx_split_operands(char *ops, char **out, int max);
/* The first element of "{%f1, %f2}", or the operand itself; "" when none. */
void gx_ptx_first_elem(const char *op, char *out, size_t len);
/* An integer or 0f/0d float immediate (its bits) into *@v; false if @t is not one. */
bool gx_ptx_parse_imm(const char *t, unsigned long long *v);
/* A declaration inside a body (.reg .local .shared .param .const .pragma)? */
bool gx_ptx_is_decl(const char *t);
/* May the entry site come after body statement @t (the kernel's prologue)? */
bool gx_ptx_entry_may_follow(const char *t);
/*
 * Does PTX text @t (one statement a line, as the inliner writes a probe's
 * body) branch back to a label above the branch, branch indirectly (brx) or
 * call a function (whose body it cannot see)? A loop, then, or maybe one,
 * that ptxas may leave the warp split after (ptx_splice.c).
 */
bool gx_ptx_has_back_branch(const char *t);
/*
 * The probes' PTX (@n bytes) with their .const variables and loads moved to
 * the global space. 0 and a malloc'd *@out (*@out_len bytes, NUL-terminated),
 * -ENOMEM, or -E2BIG when something of the constant space would be left.
 */
int gx_ptx_probes_in_global(const char *ptx, size_t n, char **out, size_t *out_len);
/*
 * The probes' PTX (@n bytes) with an L2 cache-eviction policy on their integer
 * read-modify-writes of global memory: "atom.global.OP.TYPE d, [a], b;" and
 * "red.global.OP.TYPE [a], b;" (OP add/or/and/xor/min/max/inc/dec, TYPE u/s/b
 * 32/64, no other qualifier) get ".L2::cache_hint" and @pol, a policy value
 * that createpolicy made on the GPU (nv_maps.c, nv_l2keep_measure), as an immediate. CAS,
 * exchanges and qualified forms (release, scopes) are left alone. 0 and a
 * malloc'd *@out (*@out_len bytes, NUL-terminated) with *@count rewritten
 * (NULL: not said), or -ENOMEM.
 */
int gx_ptx_probes_l2keep(const char *ptx, size_t n, uint64_t pol, char **out, size_t *out_len,
			 unsigned *count);
/*
 * Module @ptx (@n bytes) with every branch to an .entry's shared `ret;` given
 * a `ret;` of its own (ptx_exits.c says why and when). 0 with *@out NULL when
 * nothing changed; 0 with a malloc'd *@out (*@out_len bytes, NUL-terminated)
 * and *@split = branches retargeted; -ENOMEM.
 */
int gx_ptx_split_exits(const char *ptx, size_t n, char **out, size_t *out_len, unsigned *split);

#endif

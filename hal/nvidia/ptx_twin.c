/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Flat twins: a second copy of each instrumented kernel for launches whose
 * block and grid are flat in z (%ntid.z == %nctaid.z == 1, what almost every
 * launch is), in which the probes' reads of %tid.z, %ctaid.z, %ntid.z and
 * %nctaid.z are the constants they must then be (0, 0, 1, 1).
 *
 * Why: a probe's context names the thread's place in the launch, and the
 * global warp index (threadhist), the warp-0 guard and the block index
 * (kernelretsnoop, kerneldur) all read the z components. Folded, those
 * reads and the multiplies on them go: in one process on an H200 (ptxab,
 * 60 pairs, the probes' z reads made constants by hand) threadhist on the
 * stencil 1.0321 -> 1.0279 (with 32-bit counters: see bench/gpu/README.md),
 * kernelretsnoop 1.0243 -> 1.0189, kerneldur 1.0254 -> 1.0134; on the
 * decode step 0.2 to 0.4 points each. The same test made at run time inside
 * one kernel (a uniform branch at its start to one of two bodies) cost more
 * than it saved (1.054 against 1.032): ptxas scheduled both bodies worse. So
 * the twin is a kernel of its own and the preload library picks it at launch
 * (nv_launch.c), where the dims are known.
 *
 * Only the probes' lines change: the app's own reads of the z registers in
 * the twin are left as they are, so the twin runs the app's code exactly as
 * the original does. A probe line is one inside a block the splicer opened
 * for an inlined probe body ("{ // gpuext: ... inlined") or one that writes
 * a register of the splicer's own (the prefix s->pfx: the sites' hoisted
 * code and guards). A kernel whose probes read no z register gets no twin.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_splice_impl.h"
#include "ptx_twin.h"

/* The z register @p names (at a '%'), and the constant it is in a flat launch; NULL if none. */
static const char *flat_value(const char *p, size_t *len)
{
	static const struct {
		const char *reg, *val;
	} z[] = {
		{ "%tid.z", "0" }, { "%ctaid.z", "0" }, { "%ntid.z", "1" }, { "%nctaid.z", "1" },
	};

	for (size_t i = 0; i < sizeof(z) / sizeof(z[0]); i++) {
		size_t n = strlen(z[i].reg);

		if (!strncmp(p, z[i].reg, n) && !gx_sp_is_ident(p[n]) && p[n] != '.') {
			*len = n;
			return z[i].val;
		}
	}
	return NULL;
}

/*
 * If line [@l, @e) is "mov.u32|mov.b32 DST, %<z register>;" with DST ours
 * (@ours: in a probe block, or DST starts with %<pfx>_), the offset of the
 * register operand in the line, its length and the constant; else -1.
 */
static long z_move(const char *l, const char *e, const char *pfx, bool ours, size_t *len,
		   const char **val)
{
	const char *p = l, *dst;
	size_t pl = strlen(pfx);

	while (p < e && (*p == ' ' || *p == '\t'))
		p++;
	if (e - p < 8 || (strncmp(p, "mov.u32", 7) && strncmp(p, "mov.b32", 7)) ||
	    (p[7] != ' ' && p[7] != '\t'))
		return -1;
	p += 7;
	while (p < e && (*p == ' ' || *p == '\t'))
		p++;
	dst = p;
	while (p < e && *p != ',' && *p != ';')
		p++;
	if (p >= e || *p != ',')
		return -1;
	if (!ours && !(dst[0] == '%' && (size_t)(p - dst) > pl + 1 && !strncmp(dst + 1, pfx, pl) &&
		       dst[1 + pl] == '_'))
		return -1;
	p++;
	while (p < e && (*p == ' ' || *p == '\t'))
		p++;
	if (p >= e || *p != '%' || !(*val = flat_value(p, len)))
		return -1;
	/* nothing but blanks and the ';' after the operand */
	for (const char *q = p + *len; q < e && *q != ';'; q++)
		if (*q != ' ' && *q != '\t')
			return -1;
	return (long)(p - l);
}

int gx_ptx_flat_twin(const char *fn, size_t n, const char *name, const char *pfx, char **out,
		     size_t *out_len, unsigned *folded)
{
	const char *ent = NULL, *p, *end = fn + n;
	size_t nl = strlen(name), sl = strlen(GX_FLAT_TWIN_SUFFIX), cap;
	int depth = 0, probe_depth = -1;
	unsigned nf = 0;
	char *o;
	size_t ol = 0;

	*out = NULL;
	*out_len = 0;
	if (folded)
		*folded = 0;
	/* the name right after ".entry" */
	for (p = fn; p + 6 <= end; p++) {
		if (!memcmp(p, ".entry", 6) && (p + 6 == end || p[6] == ' ' || p[6] == '\t' ||
						p[6] == '\n')) {
			ent = p + 6;
			break;
		}
	}
	if (!ent)
		return -EINVAL;
	while (ent < end && (*ent == ' ' || *ent == '\t' || *ent == '\n' || *ent == '\r'))
		ent++;
	if ((size_t)(end - ent) <= nl || memcmp(ent, name, nl) || gx_sp_is_ident(ent[nl]))
		return -EINVAL;
	cap = n + sl + 1;
	o = malloc(cap);
	if (!o)
		return -ENOMEM;
	memcpy(o, fn, (size_t)(ent - fn) + nl);
	ol = (size_t)(ent - fn) + nl;
	memcpy(o + ol, GX_FLAT_TWIN_SUFFIX, sl);
	ol += sl;
	/* line by line from the name on; a constant is never longer than the register it replaces */
	for (p = ent + nl; p < end;) {
		const char *e = memchr(p, '\n', (size_t)(end - p)), *val = NULL;
		size_t len = 0, ll;
		bool opens_probe;
		long at;

		e = e ? e + 1 : end;
		ll = (size_t)(e - p);
		opens_probe = memchr(p, '{', ll) && memmem(p, ll, "// gpuext:", 10) &&
			      memmem(p, ll, "inlined", 7);
		at = z_move(p, e, pfx, probe_depth >= 0 && depth >= probe_depth, &len, &val);
		if (at >= 0) {
			size_t vl = strlen(val);

			memcpy(o + ol, p, (size_t)at);
			ol += (size_t)at;
			memcpy(o + ol, val, vl);
			ol += vl;
			memcpy(o + ol, p + at + (long)len, ll - (size_t)at - len);
			ol += ll - (size_t)at - len;
			nf++;
		} else {
			memcpy(o + ol, p, ll);
			ol += ll;
		}
		/* braces outside comments; a probe block lasts until its own '}' closes */
		for (const char *q = p; q < e; q++) {
			if (q + 1 < e && q[0] == '/' && q[1] == '/')
				break;
			if (*q == '{') {
				depth++;
				if (opens_probe && probe_depth < 0)
					probe_depth = depth;
			} else if (*q == '}') {
				if (depth == probe_depth)
					probe_depth = -1;
				depth--;
			}
		}
		p = e;
	}
	o[ol] = '\0';
	if (folded)
		*folded = nf;
	*out = o;
	*out_len = ol;
	return 0;
}

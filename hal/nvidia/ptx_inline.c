/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inlining the probe functions into the sites, as PTX text.
 *
 * Why the splicer does it and not ptxas: whether ptxas inlines a call
 * depends on how the driver compiles. Through cuLink (relocatable code, what
 * the preload library used until GPU run 6) it never did, .visible or not:
 * every site paid a CALL plus the ABI's register moves in every thread (GPU
 * run 5, H100: launchlate, whose probe returns at once in all blocks but
 * one, cost 2.5x on a stencil; the SASS showed CALL.ABS.NOINC at each site).
 * Inlined here, the probe's early exits (warp_id != 0, ...) are a few
 * instructions in the kernel whatever the JIT does.
 *
 * The probe text comes from codegen/ptx/ptx_probe.c (LLVM's NVPTX printer):
 * a function is ".func NAME(params)\n{\n ... \n}\n" with the closing brace
 * alone at the start of a line, parameters read by "ld.param.T %r, [P];".
 * The body goes into a nested { } block, so its .reg (and .local)
 * declarations shadow the kernel's own names; its labels get a per-site
 * suffix (labels are function-wide in PTX); "ret;" becomes a branch to the
 * end of the block; each parameter load becomes a mov from the site's
 * register for that argument.
 *
 * With a hoisting plan (ptx_hoist.c) the lines it moves are left out and
 * the registers they write are named by the site's new names.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_splice.h"

static void set_err(char *err, size_t len, const char *what, const char *name)
{
	if (err && len)
		snprintf(err, len, "the pack's probe PTX: %s of %s", what, name);
}

static int is_id(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '$' || c == '.';
}

int gx_probe_body_parse(const char *ptx, size_t len, const char *name, struct gx_probe_body *b,
			char *err, size_t err_len)
{
	char head[96];
	const char *p = ptx, *end = ptx + len, *hdr = NULL, *q, *body, *close;

	memset(b, 0, sizeof(*b));
	snprintf(b->name, sizeof(b->name), "%s", name);
	snprintf(head, sizeof(head), ".func %s(", name);
	/* The definition: the header followed (after its ')') by a '{' line, not a ';'. */
	while ((p = memmem(p, (size_t)(end - p), head, strlen(head)))) {
		q = memchr(p, ')', (size_t)(end - p));
		if (!q)
			break;
		q++;
		while (q < end && (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r'))
			q++;
		if (q < end && *q == '{') {
			hdr = p;
			break;
		}
		p += strlen(head);
	}
	if (!hdr) {
		set_err(err, err_len, "no definition", name);
		return -EINVAL;
	}
	/* Parameter names, in order: the last identifier of each comma-separated item. */
	for (const char *s = hdr + strlen(head); *s != ')' && b->nparams < GX_PROBE_NARGS;) {
		const char *e = s, *id = NULL;
		size_t n;

		while (*e != ',' && *e != ')')
			e++;
		for (const char *t = s; t < e; t++)
			if (is_id(*t) && (t == s || !is_id(t[-1])))
				id = t;
		if (!id) {
			set_err(err, err_len, "a parameter without a name", name);
			return -EINVAL;
		}
		for (n = 0; id + n < e && is_id(id[n]); n++)
			;
		if (n >= sizeof(b->params[0])) {
			set_err(err, err_len, "a parameter name too long", name);
			return -EINVAL;
		}
		memcpy(b->params[b->nparams], id, n);
		b->params[b->nparams++][n] = '\0';
		s = *e == ',' ? e + 1 : e;
	}
	body = memchr(hdr, '{', (size_t)(end - hdr)) + 1;
	close = body;
	while ((close = memmem(close, (size_t)(end - close), "\n}", 2)) &&
	       close + 2 < end && close[2] != '\n' && close[2] != '\r')
		close += 2;
	if (!close) {
		set_err(err, err_len, "no closing brace", name);
		return -EINVAL;
	}
	b->len = (size_t)(close + 1 - body);
	b->text = malloc(b->len + 1);
	if (!b->text)
		return -ENOMEM;
	memcpy(b->text, body, b->len);
	b->text[b->len] = '\0';
	return 0;
}

void gx_probe_body_free(struct gx_probe_body *b)
{
	free(b->text);
	memset(b, 0, sizeof(*b));
}

bool gx_text_put(char **o, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t nc = (*cap ? *cap * 2 : 4096) + n;
		char *p = realloc(*o, nc);

		if (!p)
			return false;
		*o = p;
		*cap = nc;
	}
	memcpy(*o + *len, s, n);
	*len += n;
	(*o)[*len] = '\0';
	return true;
}

/* "ld.param.T DST, [PARAM];" reading parameter k: 0 and DST, else -1. */
static int param_load(const struct gx_probe_body *b, const char *l, size_t n, char *dst,
		      size_t dlen)
{
	const char *p = l, *e = l + n, *d, *br;
	size_t dl;

	while (p < e && (*p == ' ' || *p == '\t'))
		p++;
	if ((size_t)(e - p) < 9 || strncmp(p, "ld.param.", 9))
		return -1;
	d = p;
	while (d < e && *d != ' ' && *d != '\t')
		d++;
	while (d < e && (*d == ' ' || *d == '\t'))
		d++;
	for (dl = 0; d + dl < e && d[dl] != ','; dl++)
		;
	br = memchr(d, '[', (size_t)(e - d));
	if (!br || dl == 0 || dl >= dlen || d[0] != '%')
		return -1;
	memcpy(dst, d, dl);
	dst[dl] = '\0';
	for (int k = 0; k < b->nparams; k++) {
		size_t pl = strlen(b->params[k]);

		if ((size_t)(e - br) > pl + 2 && !strncmp(br + 1, b->params[k], pl) && br[1 + pl] == ']')
			return k;
	}
	return -1;
}

char *gx_probe_body_inline(const struct gx_probe_body *b, const char *const args[GX_PROBE_NARGS],
			   const unsigned arg_bits[GX_PROBE_NARGS], const char *sfx,
			   const struct gx_hoist_plan *plan, char **hoisted)
{
	size_t len = 0, cap = 0;
	char *o = NULL, tmp[256];
	bool ok = true;
	int li = 0;

	if (hoisted) {
		*hoisted = gx_hoist_text(plan, sfx);
		if (!*hoisted)
			return NULL;
	}
	snprintf(tmp, sizeof(tmp), "\t{\t// gpuext: %s inlined (hal/nvidia/ptx_inline.c)\n", b->name);
	ok = gx_text_put(&o, &len, &cap, tmp, strlen(tmp));
	for (const char *l = b->text; ok && l < b->text + b->len; li++) {
		const char *nl = memchr(l, '\n', (size_t)(b->text + b->len - l));
		size_t n = nl ? (size_t)(nl - l) : (size_t)(b->text + b->len - l);
		char dst[64];
		int k = param_load(b, l, n, dst, sizeof(dst));

		if (gx_hoist_line_moved(plan, li)) {
			;	/* at the function's start now */
		} else if (k >= 0) {
			snprintf(tmp, sizeof(tmp), "\tmov.b%u %s, %s;\n", arg_bits[k], dst, args[k]);
			ok = gx_text_put(&o, &len, &cap, tmp, strlen(tmp));
		} else {
			/*
			 * Copy, suffixing labels, turning "ret;" into a branch to the end,
			 * and naming moved registers by the site's names.
			 */
			for (size_t i = 0; ok && i < n;) {
				if (l[i] == '$' && (i == 0 || !is_id(l[i - 1]))) {
					size_t j = i + 1;

					while (j < n && is_id(l[j]) && l[j] != '.')
						j++;
					ok = gx_text_put(&o, &len, &cap, l + i, j - i) &&
					     gx_text_put(&o, &len, &cap, "_", 1) &&
					     gx_text_put(&o, &len, &cap, sfx, strlen(sfx));
					i = j;
				} else if (!strncmp(l + i, "ret;", 4) && (i == 0 || !is_id(l[i - 1]))) {
					snprintf(tmp, sizeof(tmp), "bra $%s_end;", sfx);
					ok = gx_text_put(&o, &len, &cap, tmp, strlen(tmp));
					i += 4;
				} else if (l[i] == '%' && plan) {
					size_t j = i + 1;

					while (j < n && (is_id(l[j]) || l[j] == '.'))
						j++;
					if (gx_hoist_reg_renamed(plan, l + i, j - i, true))
						ok = gx_text_put(&o, &len, &cap, "%", 1) &&
						     gx_text_put(&o, &len, &cap, sfx, strlen(sfx)) &&
						     gx_text_put(&o, &len, &cap, "_h_", 3) &&
						     gx_text_put(&o, &len, &cap, l + i + 1, j - i - 1);
					else
						ok = gx_text_put(&o, &len, &cap, l + i, j - i);
					i = j;
				} else {
					ok = gx_text_put(&o, &len, &cap, l + i, 1);
					i++;
				}
			}
			ok = ok && gx_text_put(&o, &len, &cap, "\n", 1);
		}
		l = nl ? nl + 1 : b->text + b->len;
	}
	snprintf(tmp, sizeof(tmp), "$%s_end:\n\t}\n", sfx);
	if (!ok || !gx_text_put(&o, &len, &cap, tmp, strlen(tmp))) {
		free(o);
		if (hoisted) {
			free(*hoisted);
			*hoisted = NULL;
		}
		return NULL;
	}
	return o;
}

/* ------------------------------------------------------------------ */
/* One guard where a site has two                                      */
/* ------------------------------------------------------------------ */

#define MERGE_MAX_BETWEEN 8	/* instructions between the two branches */

struct mline {
	const char *p, *e;	/* the line, without its '\n' */
	const char *ins;	/* its first non-blank character */
};

/* "@%P bra LABEL;" (no negation): P and LABEL, or false. */
static bool guard_bra(const struct mline *m, const char **pred, size_t *pl, const char **lab,
		      size_t *ll)
{
	const char *q = m->ins, *e = m->e;

	if (e - q < 3 || q[0] != '@' || q[1] != '%')
		return false;
	*pred = ++q;
	while (q < e && (is_id(*q) || *q == '%') && *q != '.')
		q++;
	*pl = (size_t)(q - *pred);
	while (q < e && (*q == ' ' || *q == '\t'))
		q++;
	if (e - q < 4 || strncmp(q, "bra", 3) || (q[3] != ' ' && q[3] != '\t'))
		return false;
	q += 3;
	while (q < e && (*q == ' ' || *q == '\t'))
		q++;
	*lab = q;
	while (q < e && *q != ';')
		q++;
	*ll = (size_t)(q - *lab);
	return q < e && *ll > 0;
}

/*
 * An instruction that only writes a register from registers, immediates
 * and the constant bank: no other memory, no control flow, no barrier, no
 * vote and no activemask (which, run before the branch, would count the
 * lanes that branch away). Not guarded.
 */
static bool pure_insn(const char *q, const char *e)
{
	static const char *const ops[] = {
		"mov.", "add.", "sub.", "mul.", "mad.", "shl.", "shr.", "and.", "or.", "xor.",
		"not.", "neg.", "min.", "max.", "cvt.", "cvta.", "selp.", "setp.", "ld.const.",
	};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		size_t n = strlen(ops[i]);

		if ((size_t)(e - q) > n && !strncmp(q, ops[i], n))
			return true;
	}
	return false;
}

/* The register the instruction at @q writes (its first operand): *r, *rl; false if none. */
static bool dst_reg(const char *q, const char *e, const char **r, size_t *rl)
{
	while (q < e && *q != ' ' && *q != '\t')
		q++;
	while (q < e && (*q == ' ' || *q == '\t'))
		q++;
	if (q >= e || *q != '%')
		return false;
	*r = q++;
	while (q < e && is_id(*q) && *q != '.')
		q++;
	*rl = (size_t)(q - *r);
	return true;
}

/* Whether line @m holds register @r (@rl bytes) as a whole token. */
static bool line_has_reg(const struct mline *m, const char *r, size_t rl)
{
	for (const char *q = m->p; q + rl <= m->e; q++) {
		q = memchr(q, '%', (size_t)(m->e - q));
		if (!q || q + rl > m->e)
			return false;
		if (!strncmp(q, r, rl) && (q + rl == m->e || !is_id(q[rl]) || q[rl] == '.'))
			return true;
	}
	return false;
}

/*
 * Whether folding the branch at line @i into the one at @j (both to label
 * @l, @ll bytes) keeps the site's meaning: the label is defined after @j
 * with no other label between @i and it, so what lies between is entered
 * from @i alone, and no register the lines between @i and @j write is read
 * anywhere outside [@i, label) (where a lane that took the first branch
 * used to see it unwritten).
 */
static bool merge_keeps_meaning(const struct mline *ml, size_t nl, size_t i, size_t j,
				const char *l, size_t ll)
{
	size_t lab = 0;

	for (size_t k = j + 1; k < nl && !lab; k++) {
		const struct mline *m = &ml[k];
		const char *q = m->ins;

		while (q < m->e && (is_id(*q) || *q == '$'))
			q++;
		/*
		 * "LABEL:", not an instruction whose name holds "::" (is_id takes
		 * '.'): the L2 policy nv_load.c puts on the probes' atomics made
		 * "atom.global.add.L2::cache_hint.u32 ..." read as another label,
		 * so no site of a live splice was folded (threadhist on an H200's
		 * stencil 1.028x folded, 1.044x not: ptxab, in one process).
		 */
		if (q == m->ins || q >= m->e || *q != ':' || (q + 1 < m->e && q[1] == ':'))
			continue;	/* not "LABEL:" */
		if ((size_t)(q - m->ins) != ll || strncmp(m->ins, l, ll))
			return false;	/* another label first */
		lab = k;
	}
	if (!lab)
		return false;
	for (size_t k = i + 1; k < j; k++) {
		const char *r;
		size_t rl;

		if (ml[k].ins >= ml[k].e || !strncmp(ml[k].ins, "//", 2) ||
		    !dst_reg(ml[k].ins, ml[k].e, &r, &rl))
			continue;
		for (size_t x = 0; x < nl; x++)
			if ((x <= i || x >= lab) && line_has_reg(&ml[x], r, rl))
				return false;
	}
	return true;
}

char *gx_site_merge_guards(const char *text, const char *pred)
{
	size_t n = 0, cap = 0, len = 0, nl = 0;
	struct mline *ml = NULL;
	char *o = NULL;
	bool ok = true, *drop;
	const char **merged;	/* per line: the first branch's predicate folded into it, or NULL */
	size_t *mlen;

	for (const char *p = text; *p;) {
		const char *e = strchr(p, '\n');

		if (!e)
			e = p + strlen(p);
		if (nl == cap) {
			struct mline *t = realloc(ml, (cap = cap ? cap * 2 : 64) * sizeof(*ml));

			if (!t) {
				free(ml);
				return NULL;
			}
			ml = t;
		}
		ml[nl].p = p;
		ml[nl].e = e;
		ml[nl].ins = p;
		while (ml[nl].ins < e && (*ml[nl].ins == ' ' || *ml[nl].ins == '\t'))
			ml[nl].ins++;
		nl++;
		p = *e ? e + 1 : e;
	}
	drop = calloc(nl ? nl : 1, sizeof(*drop));
	merged = calloc(nl ? nl : 1, sizeof(*merged));
	mlen = calloc(nl ? nl : 1, sizeof(*mlen));
	if (!drop || !merged || !mlen) {
		ok = false;
		goto out;
	}
	for (size_t i = 0; i < nl; i++) {
		const char *p1, *l1, *p2, *l2, *w;
		size_t n1, b1, n2, b2, wl, between = 0;

		if (drop[i] || !guard_bra(&ml[i], &p1, &n1, &l1, &b1))
			continue;
		if (merged[i]) {	/* a chain: PRED holds the branches folded so far */
			p1 = pred;
			n1 = strlen(pred);
		}
		for (size_t j = i + 1; j < nl; j++) {
			const struct mline *m = &ml[j];

			if (m->ins >= m->e || !strncmp(m->ins, "//", 2))
				continue;	/* blank, a comment ("begin inline asm") */
			if (guard_bra(m, &p2, &n2, &l2, &b2)) {
				if (b2 == b1 && !strncmp(l1, l2, b1) && !merged[j] &&
				    merge_keeps_meaning(ml, nl, i, j, l1, b1)) {
					drop[i] = true;
					merged[j] = p1;
					mlen[j] = n1;
				}
				break;
			}
			if (!pure_insn(m->ins, m->e) || ++between > MERGE_MAX_BETWEEN ||
			    (dst_reg(m->ins, m->e, &w, &wl) && wl == n1 && !strncmp(w, p1, n1)))
				break;
		}
	}
	for (size_t i = 0; ok && i < nl; i++) {
		const struct mline *m = &ml[i];
		const char *p2, *l2;
		size_t n2, b2;

		if (merged[i] && guard_bra(m, &p2, &n2, &l2, &b2)) {
			/* the fold; the branch too unless a later one takes it over */
			ok = gx_text_put(&o, &len, &n, "\tor.pred ", 9) &&
			     gx_text_put(&o, &len, &n, pred, strlen(pred)) &&
			     gx_text_put(&o, &len, &n, ", ", 2) &&
			     gx_text_put(&o, &len, &n, merged[i], mlen[i]) &&
			     gx_text_put(&o, &len, &n, ", ", 2) &&
			     gx_text_put(&o, &len, &n, p2, n2) && gx_text_put(&o, &len, &n, ";\n", 2);
			if (ok && !drop[i])
				ok = gx_text_put(&o, &len, &n, "\t@", 2) &&
				     gx_text_put(&o, &len, &n, pred, strlen(pred)) &&
				     gx_text_put(&o, &len, &n, " bra ", 5) &&
				     gx_text_put(&o, &len, &n, l2, b2) &&
				     gx_text_put(&o, &len, &n, ";\n", 2);
			continue;
		}
		if (drop[i])
			continue;
		ok = gx_text_put(&o, &len, &n, m->p, (size_t)(m->e - m->p)) &&
		     (!*m->e || gx_text_put(&o, &len, &n, "\n", 1));
	}
out:
	free(ml);
	free(drop);
	free(merged);
	free(mlen);
	if (!ok) {
		free(o);
		return NULL;
	}
	return o ? o : strdup("");
}

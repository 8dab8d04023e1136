/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Exit splitting: every branch to a kernel's shared `ret` gets a `ret` of
 * its own, before the splicer puts exit sites at the rets.
 *
 * nvcc merges a kernel's returns into one: `if (out of range) return;` and
 * the end of the body both reach `$L__BB0_2: ret;`, the early lanes by a
 * branch. Unchanged, ptxas then turns the branch into a predicated EXIT,
 * and those lanes leave at once. With an exit site at the shared ret, the
 * site's code follows a merge point: ptxas makes the warp reconverge there
 * (BSSY/BSYNC) and cannot schedule the site's arithmetic into the body's
 * load latency. Measured on the H100 (hand-edited PTX of the 5-point
 * stencil under threadhist, 5 x 20 launches each in one process): 1.084x
 * as shipped before, 1.069x with the site's arithmetic moved into both
 * predecessors, 1.027x with a ret per branch and nothing hoisted, 1.060x
 * with a ret per branch and the arithmetic hoisted to the kernel's start.
 *
 * How often a probe runs does not change, in either mode. Lanes that
 * branch to the end leave through an exit site of their own; per thread,
 * each lane still runs the probe once, and in warp mode lane 0 runs it
 * at whichever exit it takes (codegen/ptx/ptx_probe.c), so a warp still
 * runs it once however its lanes leave. Electing the lowest active lane
 * instead ran it once per exit a warp's lanes took: 9,216 exits counted
 * for the 8,192 warps of the GPU check's GEMM, whose lane 0 alone writes
 * a timestamp at the end. Two things do change: a warp-0 probe that
 * stamps the time (kernelretsnoop, kerneldur) stamps lane 0's exit, where
 * the lowest active lane of each exit stamped that exit's; and a warp
 * whose lane 0 leaves by an `exit` in a device function that has no exit
 * site (one the kernel filter left out: ptx_splice.c) is not counted,
 * where its other lanes would have been.
 *
 * Kernels the kernel filter leaves out are split as well: the text means
 * the same, and they keep no sites. The new rets come before each body's
 * closing brace, so the splicer's error messages count lines of the split
 * text (2 lines more per new ret above the one named).
 *
 * Text-level and conservative: only a `.entry` body's top level (its '{'
 * on a line of its own), only a label whose next statement (past blank
 * lines, other labels and .loc directives) is an unguarded `ret;`, only
 * `bra` / `bra.uni` lines that name such a label, and nothing at all in a
 * body with a block comment or an unbalanced brace that is not a line of
 * its own. The new labels are "$__gxr<n>", and a module that already has
 * that name is left alone.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_splice.h"
#include "ptx_text.h"

struct xline {
	const char *p;		/* the line, without its '\n' */
	size_t n;
	const char *t;		/* trimmed: first non-blank */
	size_t tn;		/* trimmed length, up to a "//" comment */
};

struct xbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

/* Appends through the inliner's text buffer (gx_text_put); after a failure, nothing more. */
static void xput(struct xbuf *b, const char *s, size_t n)
{
	if (!b->oom && !gx_text_put(&b->p, &b->len, &b->cap, s, n))
		b->oom = true;
}

static void trim(struct xline *l)
{
	const char *c;

	l->t = l->p;
	while (l->t < l->p + l->n && (*l->t == ' ' || *l->t == '\t' || *l->t == '\r'))
		l->t++;
	l->tn = (size_t)(l->p + l->n - l->t);
	c = l->tn > 1 ? memmem(l->t, l->tn, "//", 2) : NULL;
	if (c)
		l->tn = (size_t)(c - l->t);
	while (l->tn && (l->t[l->tn - 1] == ' ' || l->t[l->tn - 1] == '\t' || l->t[l->tn - 1] == '\r'))
		l->tn--;
}

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '%';
}

/* "NAME:" alone: the label's length, else 0. */
static size_t label_len(const struct xline *l)
{
	size_t i = 0;

	if (l->tn < 2 || l->t[l->tn - 1] != ':')
		return 0;
	if (!(isalpha((unsigned char)l->t[0]) || l->t[0] == '_' || l->t[0] == '$' || l->t[0] == '%'))
		return 0;
	while (i < l->tn - 1 && ident_char(l->t[i]))
		i++;
	return i == l->tn - 1 ? i : 0;
}

/* A source-line directive (nvcc -lineinfo / -G puts one between a label and its ret). */
static bool is_loc(const struct xline *l)
{
	return l->tn > 5 && !memcmp(l->t, ".loc", 4) && (l->t[4] == ' ' || l->t[4] == '\t');
}

static bool is_ret(const struct xline *l)
{
	return l->tn == 4 && !memcmp(l->t, "ret;", 4);
}

/*
 * "[@[!]%p] bra[.uni] NAME;": where NAME starts in the line, its length in
 * *@len; else NULL.
 */
static const char *branch_target(const struct xline *l, size_t *len)
{
	const char *p = l->t, *e = l->t + l->tn, *name;

	if (p < e && *p == '@') {
		p++;
		if (p < e && *p == '!')
			p++;
		while (p < e && ident_char(*p))
			p++;
		if (p == e || (*p != ' ' && *p != '\t'))
			return NULL;
		while (p < e && (*p == ' ' || *p == '\t'))
			p++;
	}
	if (e - p >= 8 && !memcmp(p, "bra.uni", 7) && (p[7] == ' ' || p[7] == '\t'))
		p += 8;
	else if (e - p >= 4 && !memcmp(p, "bra", 3) && (p[3] == ' ' || p[3] == '\t'))
		p += 4;
	else
		return NULL;
	while (p < e && (*p == ' ' || *p == '\t'))
		p++;
	name = p;
	while (p < e && ident_char(*p))
		p++;
	if (p == name || p + 1 != e || *p != ';')
		return NULL;
	*len = (size_t)(p - name);
	return name;
}

static size_t count_char(const struct xline *l, char c)
{
	size_t k = 0;

	for (size_t i = 0; i < l->tn; i++)
		k += l->t[i] == c;
	return k;
}

struct xfunc {
	size_t open, close;	/* line indices of the body's '{' and '}' */
};

/*
 * Splits the exits of the .entry body between lines @f->open and @f->close:
 * writes the body's lines with branches retargeted, then the new rets,
 * into @o. Returns how many branches it retargeted.
 */
static unsigned split_body(const struct xline *ls, const struct xfunc *f, unsigned *seq,
			   struct xbuf *o)
{
	size_t n = f->close - f->open - 1;
	bool *retlab = calloc(n ? n : 1, sizeof(bool));
	unsigned *newlab = calloc(n ? n : 1, sizeof(unsigned));
	unsigned done = 0;
	int depth = 1;
	bool ok = retlab && newlab;

	/*
	 * Readable throughout? No block comments; a brace opens or closes a
	 * block only on a line of its own, and other lines balance theirs
	 * (vector operands: ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];).
	 */
	for (size_t i = f->open + 1; ok && i < f->close; i++) {
		const struct xline *l = &ls[i];
		size_t ob = count_char(l, '{'), cb = count_char(l, '}');

		if (memmem(l->p, l->n, "/*", 2))
			ok = false;
		else if (ob != cb && !(l->tn == 1 && ob + cb == 1))
			ok = false;
	}
	/* Labels at depth 1 whose next statement is ret; */
	for (size_t i = f->open + 1; ok && i < f->close; i++) {
		const struct xline *l = &ls[i];
		size_t j;

		if (l->tn == 1 && l->t[0] == '{')
			depth++;
		else if (l->tn == 1 && l->t[0] == '}')
			depth--;
		if (depth != 1 || !label_len(l))
			continue;
		for (j = i + 1; j < f->close && (!ls[j].tn || label_len(&ls[j]) || is_loc(&ls[j])); j++)
			;
		if (j < f->close && is_ret(&ls[j]))
			retlab[i - f->open - 1] = true;
	}
	/* Branches at depth 1 to one of them. */
	depth = 1;
	for (size_t i = f->open + 1; ok && i < f->close; i++) {
		const struct xline *l = &ls[i];
		const char *name;
		size_t len;

		if (l->tn == 1 && l->t[0] == '{')
			depth++;
		else if (l->tn == 1 && l->t[0] == '}')
			depth--;
		if (depth != 1 || !(name = branch_target(l, &len)))
			continue;
		for (size_t k = f->open + 1; k < f->close; k++) {
			if (!retlab[k - f->open - 1] || label_len(&ls[k]) != len ||
			    memcmp(ls[k].t, name, len))
				continue;
			newlab[i - f->open - 1] = ++*seq;
			done++;
			break;
		}
	}
	for (size_t i = f->open + 1; i < f->close; i++) {
		const struct xline *l = &ls[i];
		unsigned nl = ok ? newlab[i - f->open - 1] : 0;

		if (nl) {
			size_t len;
			const char *name = branch_target(l, &len);
			char lab[32];
			int k = snprintf(lab, sizeof(lab), "$__gxr%u", nl);

			xput(o, l->p, (size_t)(name - l->p));
			xput(o, lab, (size_t)k);
			xput(o, name + len, (size_t)(l->p + l->n - (name + len)));
		} else {
			xput(o, l->p, l->n);
		}
		xput(o, "\n", 1);
	}
	for (size_t i = 0; ok && i < n; i++) {
		char add[64];
		int k;

		if (!newlab[i])
			continue;
		k = snprintf(add, sizeof(add), "$__gxr%u:\n\tret;\n", newlab[i]);
		xput(o, add, (size_t)k);
	}
	if (!retlab || !newlab)
		o->oom = true;
	free(retlab);
	free(newlab);
	return ok ? done : 0;
}

int gx_ptx_split_exits(const char *ptx, size_t n, char **out, size_t *out_len, unsigned *split)
{
	struct xline *ls = NULL;
	size_t nl = 0, cap = 0;
	struct xbuf o = { 0 };
	unsigned seq = 0, done = 0;
	bool pending = false;

	*out = NULL;
	*out_len = 0;
	if (split)
		*split = 0;
	if (memmem(ptx, n, "$__gxr", 6))
		return 0;
	for (const char *p = ptx; p < ptx + n;) {
		const char *e = memchr(p, '\n', (size_t)(ptx + n - p));
		size_t len = e ? (size_t)(e - p) : (size_t)(ptx + n - p);

		if (nl == cap) {
			struct xline *nls = realloc(ls, (cap = cap ? 2 * cap : 1024) * sizeof(*ls));

			if (!nls) {
				free(ls);
				return -ENOMEM;
			}
			ls = nls;
		}
		ls[nl].p = p;
		ls[nl].n = len;
		trim(&ls[nl]);
		nl++;
		p += len + 1;
	}
	for (size_t i = 0; i < nl && !o.oom;) {
		const struct xline *l = &ls[i];
		struct xfunc f;
		int depth;

		if (memmem(l->t, l->tn, ".entry", 6))
			pending = true;
		/*
		 * The body's '{' is expected on a line of its own (nvcc, NVRTC,
		 * LLVM); a header that opens it on its own line, or a declaration
		 * that ends in ';', leaves that .entry alone.
		 */
		if (pending && !(l->tn == 1 && l->t[0] == '{') &&
		    (memchr(l->t, '{', l->tn) || (l->tn && l->t[l->tn - 1] == ';')))
			pending = false;
		if (!pending || !(l->tn == 1 && l->t[0] == '{')) {
			xput(&o, l->p, l->n);
			if (i + 1 < nl || (l->p + l->n < ptx + n))
				xput(&o, "\n", 1);
			i++;
			continue;
		}
		/* An .entry body: find its closing brace (braces counted on every line). */
		pending = false;
		f.open = i;
		depth = 1;
		for (f.close = i + 1; f.close < nl; f.close++) {
			depth += (int)count_char(&ls[f.close], '{') - (int)count_char(&ls[f.close], '}');
			if (depth <= 0)
				break;
		}
		if (f.close >= nl || !(ls[f.close].tn == 1 && ls[f.close].t[0] == '}')) {
			/* not a body this pass can read: the rest as it is */
			xput(&o, l->p, (size_t)(ptx + n - l->p));
			break;
		}
		xput(&o, l->p, l->n);
		xput(&o, "\n", 1);
		done += split_body(ls, &f, &seq, &o);
		i = f.close;
	}
	free(ls);
	if (o.oom) {
		free(o.p);
		return -ENOMEM;
	}
	if (!done) {
		free(o.p);
		return 0;
	}
	*out = o.p;
	*out_len = o.len;
	if (split)
		*split = done;
	return 0;
}

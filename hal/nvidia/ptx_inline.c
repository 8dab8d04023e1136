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
 * Hoisting (gx_probe_body_inline's @hoisted): the part of a probe that
 * depends only on the thread's place in the launch (%tid, %ntid, %ctaid,
 * %nctaid, %laneid, %smid, %warpid), on constants and on the module's
 * constant tables (ld.const: the map descriptors) moves to the start of
 * the function, so it runs once, while the kernel's own first loads are in
 * flight, instead of on the way out of every warp: an exit site then holds
 * a warp (and its block's slot on the SM) only for the leader election and
 * the map access. Measured on the H100 with hand-edited PTX of the stencil
 * under threadhist: 1.095x -> 1.071x. Only pure instructions whose
 * register is written once in the body move (mov, add, sub, mul, mad, shl,
 * shr, and, or, xor, not, neg, min, max, cvt, cvta, selp, setp, ld.const),
 * none under a guard, none from inline assembly that reads a special
 * register (the probes read %smid and the timers for their records so),
 * and only while the values that stay live across the kernel are at most
 * GX_HOIST_LIVE_MAX 32-bit registers, so a kernel near a register limit
 * is not pushed past it by much.
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

/* Appends @n bytes to the growing buffer; false on ENOMEM. */
static bool put(char **o, size_t *len, size_t *cap, const char *s, size_t n)
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

/* ---- hoisting ---------------------------------------------------------- */

#define HOIST_MAX_REGS 512	/* bodies with more registers are not hoisted */
#define HOIST_MAX_LINES 4096
#define HOIST_MAX_OPS 8

struct hreg {
	char name[24];		/* "%rd15" */
	char type[8];		/* ".b64" (from the family's .reg declaration) */
	int defs;		/* lines that write it */
	int def_line;		/* the one that does, when defs == 1 */
	bool hoist, live;	/* moved; used by a line that stays */
	bool lane;		/* differs between the lanes of a warp (lane masks, votes) */
	bool dup;		/* a constant (symbols, immediates, ld.const): the site keeps
				 * its own copy, so it is never live across the kernel */
};

struct hline {
	const char *p;
	size_t n;
	bool cand;		/* pure, unguarded: may move if its registers do */
	bool sreg;		/* reads a special register (the thread's place) */
	bool moved;		/* taken out of the site */
	bool emit;		/* written at the function's start (moved or a constant) */
};

struct hoister {
	struct hreg regs[HOIST_MAX_REGS];
	int nregs;
	char fam[16][16], famtype[16][8];	/* .reg .b32 %r<26>; -> "%r", ".b32" */
	int nfam;
	struct hline lines[HOIST_MAX_LINES];
	int nlines;
};

static const char *const hoist_sregs[] = {
	"%tid.x", "%tid.y", "%tid.z", "%ntid.x", "%ntid.y", "%ntid.z", "%ctaid.x", "%ctaid.y",
	"%ctaid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z", "%laneid", "%smid", "%warpid",
	"%nsmid", "%nwarpid",
};

static const char *const hoist_ops[] = {
	"mov", "add", "sub", "mul", "mad", "shl", "shr", "and", "or", "xor", "not", "neg",
	"min", "max", "cvt", "cvta", "selp", "setp",
};

static int reg_is(const char *a, size_t n, const char *name)
{
	return strlen(name) == n && !memcmp(a, name, n);
}

/* The register @a (@n bytes) if the body declares its family: its index, else -1. */
static int hreg_find(struct hoister *h, const char *a, size_t n, bool add)
{
	for (int i = 0; i < h->nregs; i++)
		if (reg_is(a, n, h->regs[i].name))
			return i;
	if (!add)
		return -1;
	for (int f = 0; f < h->nfam; f++) {
		size_t fl = strlen(h->fam[f]);

		if (n > fl && n < sizeof(h->regs[0].name) && !memcmp(a, h->fam[f], fl)) {
			size_t i = fl;

			while (i < n && a[i] >= '0' && a[i] <= '9')
				i++;
			if (i != n || h->nregs == HOIST_MAX_REGS)
				continue;
			memcpy(h->regs[h->nregs].name, a, n);
			h->regs[h->nregs].name[n] = '\0';
			memcpy(h->regs[h->nregs].type, h->famtype[f], sizeof(h->regs[0].type));
			h->regs[h->nregs].def_line = -1;
			return h->nregs++;
		}
	}
	return -1;
}

/* Next "%name" token in [*p, e): its start and length, or false. */
static bool next_pct(const char **p, const char *e, const char **tok, size_t *n)
{
	const char *q = *p;

	while (q < e && *q != '%')
		q++;
	if (q >= e)
		return false;
	*tok = q++;
	while (q < e && (is_id(*q) || *q == '.'))
		q++;
	/* "%r5." is not a register name: a trailing dot is punctuation */
	*n = (size_t)(q - *tok);
	*p = q;
	return true;
}

/* ".reg .b32 %r<26>;" -> a register family. */
static void hoist_family(struct hoister *h, const char *l, size_t n)
{
	const char *t, *pc, *lt;
	char type[8];
	size_t tl;

	t = memmem(l, n, ".reg", 4);
	if (!t || h->nfam == 16)
		return;
	t += 4;
	while (t < l + n && (*t == ' ' || *t == '\t'))
		t++;
	for (tl = 0; t + tl < l + n && is_id(t[tl]); tl++)
		;
	pc = memchr(t, '%', (size_t)(l + n - t));
	lt = pc ? memchr(pc, '<', (size_t)(l + n - pc)) : NULL;
	if (!tl || tl >= sizeof(type) || !pc || !lt || (size_t)(lt - pc) >= sizeof(h->fam[0]))
		return;
	memcpy(type, t, tl);
	type[tl] = '\0';
	memcpy(h->fam[h->nfam], pc, (size_t)(lt - pc));
	h->fam[h->nfam][lt - pc] = '\0';
	snprintf(h->famtype[h->nfam], sizeof(h->famtype[0]), "%s", type);
	h->nfam++;
}

/*
 * One instruction line: whether it may move (@cand) and the registers it
 * writes (first operand) and reads. Registers of lines that cannot be
 * parsed are marked written twice, so nothing that depends on them moves.
 */
static void hoist_scan_line(struct hoister *h, int li, bool in_asm)
{
	struct hline *L = &h->lines[li];
	const char *p = L->p, *e = L->p + L->n, *op, *ope, *tok, *dst_end;
	bool guarded = false;
	size_t n, opn;
	bool writes, cand, sreg_ok = true;
	int ndst = 0;

	while (p < e && (*p == ' ' || *p == '\t'))
		p++;
	if (p >= e || *p == '/' || *p == '$' || *p == '.' || *p == '}')
		return;	/* comment, label, declaration, block end */
	if (*p == '{') {
		/* a compound inline-asm statement: whatever it names may be written there */
		for (const char *q = p; next_pct(&q, e, &tok, &n);) {
			int r = hreg_find(h, tok, n, true);

			if (r >= 0)
				h->regs[r].defs += 2;
		}
		return;
	}
	if (*p == '@') {
		/* "@%p bra ...", "@!%p st ...": the guard is read; the line stays */
		guarded = true;
		while (p < e && *p != ' ' && *p != '\t')
			p++;
		while (p < e && (*p == ' ' || *p == '\t'))
			p++;
	}
	op = p;
	while (p < e && *p != ' ' && *p != '\t' && *p != ';')
		p++;
	ope = p;
	for (opn = 0; op + opn < ope && op[opn] != '.'; opn++)
		;
	cand = false;
	for (size_t i = 0; i < sizeof(hoist_ops) / sizeof(hoist_ops[0]); i++)
		if (reg_is(op, opn, hoist_ops[i]))
			cand = true;
	if ((size_t)(ope - op) > 9 && !strncmp(op, "ld.const.", 9))
		cand = true;
	writes = !(opn == 2 && !strncmp(op, "st", 2)) && !(opn >= 3 && !strncmp(op, "red", 3)) &&
		 !(opn == 3 && !strncmp(op, "bra", 3)) && !(opn == 3 && !strncmp(op, "bar", 3)) &&
		 !(opn == 3 && !strncmp(op, "ret", 3)) && !(opn == 4 && !strncmp(op, "exit", 4)) &&
		 !(opn == 6 && !strncmp(op, "membar", 6)) && !(opn == 5 && !strncmp(op, "fence", 5)) &&
		 !(opn == 8 && !strncmp(op, "prefetch", 8));
	dst_end = memchr(p, ',', (size_t)(e - p));
	if (!dst_end)
		dst_end = e;
	for (const char *q = p; next_pct(&q, e, &tok, &n);) {
		int r = hreg_find(h, tok, n, true);
		bool known = false;

		if (r < 0) {
			for (size_t i = 0; i < sizeof(hoist_sregs) / sizeof(hoist_sregs[0]); i++)
				if (reg_is(tok, n, hoist_sregs[i]))
					known = true;
			/* a timer, a lane mask, a site argument: not the thread's place */
			if (!known || in_asm)
				sreg_ok = false;
			L->sreg = true;
			continue;
		}
		if (writes && tok < dst_end) {
			h->regs[r].defs++;
			h->regs[r].def_line = li;
			ndst++;
		}
	}
	/* one written register, and for setp not "%p|%q" */
	L->cand = cand && !guarded && sreg_ok && ndst == 1 && !memchr(p, '|', (size_t)(dst_end - p));
}

/* Renames every hoisted register of [p, p + n) to "%SFX_h_NAME" into the buffer. */
static bool put_renamed(struct hoister *h, char **o, size_t *len, size_t *cap, const char *p,
			size_t n, const char *sfx, bool site)
{
	const char *e = p + n, *q = p, *tok;
	size_t tn;

	while (next_pct(&q, e, &tok, &tn)) {
		int r = hreg_find(h, tok, tn, false);

		if (!put(o, len, cap, p, (size_t)(tok - p)))
			return false;
		if (r >= 0 && h->regs[r].hoist && !(site && h->regs[r].dup)) {
			if (!put(o, len, cap, "%", 1) || !put(o, len, cap, sfx, strlen(sfx)) ||
			    !put(o, len, cap, "_h_", 3) ||
			    !put(o, len, cap, tok + 1, tn - 1))
				return false;
		} else if (!put(o, len, cap, tok, tn)) {
			return false;
		}
		p = q;
	}
	return put(o, len, cap, p, (size_t)(e - p));
}

/*
 * Decides what moves (h->lines[].moved, h->regs[].hoist) and writes the
 * moved lines, their registers declared, into *@out (malloc'd, "" if none).
 */
/* 32-bit registers a value of register @r takes. */
static unsigned hreg_units(const struct hreg *r)
{
	return r->type[1] && !strcmp(r->type + 2, "64") ? 2 : 1;
}

/* Keeps at the site every register whose line reads one that stays there. */
static void hoist_close(struct hoister *h)
{
	/* a register moves only if every register its line reads moves too */
	for (bool changed = true; changed;) {
		changed = false;
		for (int i = 0; i < h->nregs; i++) {
			struct hline *L;
			const char *q, *tok, *e;
			size_t n;

			if (!h->regs[i].hoist)
				continue;
			L = &h->lines[h->regs[i].def_line];
			q = L->p;
			e = L->p + L->n;
			while (next_pct(&q, e, &tok, &n)) {
				int r = hreg_find(h, tok, n, false);

				if (r >= 0 && r != i && !h->regs[r].hoist) {
					h->regs[i].hoist = false;
					changed = true;
					break;
				}
			}
		}
	}
}

/* Marks moved lines and live registers (moved, read by a line that stays); their units. */
static unsigned hoist_live(struct hoister *h)
{
	unsigned live = 0;

	for (int i = 0; i < h->nregs; i++)
		h->regs[i].live = false;
	for (int li = 0; li < h->nlines; li++)
		h->lines[li].moved = h->lines[li].emit = false;
	for (int i = 0; i < h->nregs; i++)
		if (h->regs[i].hoist) {
			h->lines[h->regs[i].def_line].emit = true;
			h->lines[h->regs[i].def_line].moved = !h->regs[i].dup;
		}
	for (int li = 0; li < h->nlines; li++) {
		const char *q = h->lines[li].p, *e = q + h->lines[li].n, *tok;
		size_t n;

		if (h->lines[li].moved)
			continue;
		while (next_pct(&q, e, &tok, &n)) {
			int r = hreg_find(h, tok, n, false);

			if (r >= 0 && h->regs[r].hoist && !h->regs[r].dup)
				h->regs[r].live = true;
		}
	}
	for (int i = 0; i < h->nregs; i++)
		if (h->regs[i].hoist && h->regs[i].live)
			live += hreg_units(&h->regs[i]);
	return live;
}

/*
 * Decides what moves (h->lines[].moved, h->regs[].hoist) and writes the
 * moved lines, their registers declared, into *@out (malloc'd, "" if none).
 * Over GX_HOIST_LIVE_MAX live units, values go back to the site one at a
 * time, each time the one whose return frees the most (its moved sources
 * become live in its place), until the rest fits.
 */
static bool hoist_plan(struct hoister *h, const char *sfx, char **out)
{
	size_t len = 0, cap = 0;
	char *o = NULL, tmp[96];
	bool ok = true;
	unsigned live;

	*out = NULL;
	for (int i = 0; i < h->nregs; i++) {
		struct hreg *r = &h->regs[i];

		r->hoist = r->defs == 1 && r->def_line >= 0 && h->lines[r->def_line].cand;
	}
	hoist_close(h);
	/* constants: no special register read, only constants read */
	for (int i = 0; i < h->nregs; i++)
		h->regs[i].dup = h->regs[i].hoist && !h->lines[h->regs[i].def_line].sreg;
	for (bool changed = true; changed;) {
		changed = false;
		for (int i = 0; i < h->nregs; i++) {
			const struct hline *L;
			const char *q, *tok, *e;
			size_t n;

			if (!h->regs[i].dup)
				continue;
			L = &h->lines[h->regs[i].def_line];
			q = L->p;
			e = L->p + L->n;
			while (next_pct(&q, e, &tok, &n)) {
				int r = hreg_find(h, tok, n, false);

				if (r >= 0 && r != i && !h->regs[r].dup) {
					h->regs[i].dup = false;
					changed = true;
					break;
				}
			}
		}
	}
	while ((live = hoist_live(h)) > GX_HOIST_LIVE_MAX) {
		bool keep[HOIST_MAX_REGS];
		unsigned best_live = ~0u, least_live = ~0u;
		int best = -1, best_moved = -1, least = -1;

		for (int i = 0; i < h->nregs; i++)
			keep[i] = h->regs[i].hoist;
		/* try each live value back at the site */
		for (int c = 0; c < h->nregs; c++) {
			unsigned l;
			int moved = 0;

			if (!keep[c] || h->regs[c].dup || !h->regs[c].live)
				continue;
			h->regs[c].hoist = false;
			hoist_close(h);
			for (int i = 0; i < h->nregs; i++)
				moved += h->regs[i].hoist && !h->regs[i].dup;
			l = hoist_live(h);
			/* the most moved code that leaves less live; then the least live */
			if (l < live && (moved > best_moved || (moved == best_moved && l < best_live))) {
				best = c;
				best_live = l;
				best_moved = moved;
			}
			if (l < least_live) {
				least = c;
				least_live = l;
			}
			for (int i = 0; i < h->nregs; i++)
				h->regs[i].hoist = keep[i];
			hoist_live(h);	/* back to the live marks of @keep */
		}
		if (best < 0)
			best = least;	/* none frees anything alone: one back all the same */
		if (best < 0)
			break;	/* cannot be: a live value was there to try */
		h->regs[best].hoist = false;
		hoist_close(h);
	}
	ok = put(&o, &len, &cap, "", 0);
	for (int i = 0; ok && i < h->nregs; i++)
		if (h->regs[i].hoist) {
			snprintf(tmp, sizeof(tmp), "\t.reg %s %%%s_h_%s;\n", h->regs[i].type, sfx,
				 h->regs[i].name + 1);
			ok = put(&o, &len, &cap, tmp, strlen(tmp));
		}
	/* in an order where each line follows the lines it reads from */
	for (bool more = true; ok && more;) {
		int wrote = 0;

		more = false;
		for (int li = 0; ok && li < h->nlines; li++) {
			const char *q, *e, *tok;
			size_t n;
			bool ready = true;
			int self = -1;

			if (!h->lines[li].emit || h->lines[li].cand == false)
				continue;
			q = h->lines[li].p;
			e = q + h->lines[li].n;
			for (int i = 0; i < h->nregs; i++)
				if (h->regs[i].def_line == li)
					self = i;
			while (next_pct(&q, e, &tok, &n)) {
				int r = hreg_find(h, tok, n, false);

				if (r >= 0 && r != self && h->regs[r].def_line >= 0 &&
				    h->lines[h->regs[r].def_line].cand)
					ready = false;	/* its source is not written out yet */
			}
			if (!ready) {
				more = true;
				continue;
			}
			ok = put_renamed(h, &o, &len, &cap, h->lines[li].p, h->lines[li].n, sfx, false) &&
			     put(&o, &len, &cap, "\n", 1);
			h->lines[li].cand = false;	/* written */
			wrote++;
		}
		if (more && !wrote)
			ok = false;	/* a cycle: cannot be (one write each), but never loop */
	}
	if (!ok) {
		free(o);
		return false;
	}
	*out = o;
	return true;
}

/*
 * Only what every warp that enters the site runs may move: a line after a
 * branch that can skip whole warps (warp_id != 0, a NULL map, a full ring)
 * runs in few warps, and at the function's start it would run in all of
 * them (launchlate's entry probe, which returns at once in every block but
 * one, went from 1.02x to 1.06x on the stencil so). A branch on a lane
 * mask, a vote or %laneid (the leader election) still lets one lane of
 * every warp through: the region goes on past it. It ends at the first
 * other branch, and at any unconditional one or ret.
 */
static void hoist_region(struct hoister *h)
{
	bool region = true;

	for (int li = 0; li < h->nlines; li++) {
		const char *p = h->lines[li].p, *e = p + h->lines[li].n, *q, *tok, *op;
		size_t n;
		bool lane = false, guarded = false, guard_lane = false, writes;
		int dst = -1;

		if (!region) {
			h->lines[li].cand = false;
			continue;
		}
		while (p < e && (*p == ' ' || *p == '\t'))
			p++;
		if (p >= e || *p == '/' || *p == '$' || *p == '.' || *p == '}' || *p == '{')
			continue;
		if (*p == '@') {
			guarded = true;
			q = p;
			if (next_pct(&q, e, &tok, &n)) {
				int r = hreg_find(h, tok, n, false);

				guard_lane = r >= 0 && h->regs[r].lane;
			}
			while (p < e && *p != ' ' && *p != '\t')
				p++;
			while (p < e && (*p == ' ' || *p == '\t'))
				p++;
		}
		op = p;
		if (!strncmp(op, "bra", 3) || !strncmp(op, "ret", 3)) {
			/* a lane-dependent branch keeps the region; any other ends it */
			if (!(guarded && guard_lane && !strncmp(op, "bra", 3)))
				region = false;
			continue;
		}
		writes = strncmp(op, "st.", 3) && strncmp(op, "red.", 4) && strncmp(op, "bar", 3);
		lane = guard_lane || !strncmp(op, "activemask", 10) || !strncmp(op, "vote", 4) ||
		       !strncmp(op, "shfl", 4) || !strncmp(op, "match", 5) ||
		       !strncmp(op, "redux", 5) || !strncmp(op, "elect", 5);
		for (q = p; next_pct(&q, e, &tok, &n);) {
			int r = hreg_find(h, tok, n, false);

			if (dst < 0 && r >= 0)
				dst = r;	/* the first register named: what the line writes */
			else if (r >= 0)
				lane |= h->regs[r].lane;
			else if (n >= 9 && !strncmp(tok, "%lanemask", 9))
				lane = true;
			else if (n == 7 && !strncmp(tok, "%laneid", 7))
				lane = true;
		}
		if (writes && dst >= 0 && lane)
			h->regs[dst].lane = true;
	}
}

/* Splits the body into lines and scans them; false if it is too large to hoist from. */
static bool hoist_scan(struct hoister *h, const struct gx_probe_body *b)
{
	bool in_asm = false;

	/* first the register families, which a body declares before it uses them */
	for (const char *l = b->text; l < b->text + b->len;) {
		const char *nl = memchr(l, '\n', (size_t)(b->text + b->len - l));
		size_t n = nl ? (size_t)(nl - l) : (size_t)(b->text + b->len - l);
		const char *t = l;

		if (h->nlines == HOIST_MAX_LINES)
			return false;
		h->lines[h->nlines].p = l;
		h->lines[h->nlines++].n = n;
		while (t < l + n && (*t == ' ' || *t == '\t'))
			t++;
		if ((size_t)(l + n - t) >= 4 && !strncmp(t, ".reg", 4))
			hoist_family(h, l, n);
		l = nl ? nl + 1 : b->text + b->len;
	}
	for (int li = 0; li < h->nlines; li++) {
		const char *l = h->lines[li].p;
		size_t n = h->lines[li].n;

		if (memmem(l, n, "// begin inline asm", 19))
			in_asm = true;
		else if (memmem(l, n, "// end inline asm", 17))
			in_asm = false;
		else
			hoist_scan_line(h, li, in_asm);
	}
	hoist_region(h);
	return h->nregs < HOIST_MAX_REGS;
}

char *gx_probe_body_inline(const struct gx_probe_body *b, const char *const args[GX_PROBE_NARGS],
			   const unsigned arg_bits[GX_PROBE_NARGS], const char *sfx, char **hoisted)
{
	struct hoister *h = NULL;
	size_t len = 0, cap = 0;
	char *o = NULL, tmp[256];
	bool ok = true;
	int li = 0;

	if (hoisted) {
		*hoisted = NULL;
		h = calloc(1, sizeof(*h));
		if (!h)
			return NULL;
		if (!hoist_scan(h, b))
			memset(h, 0, sizeof(*h));	/* too large: nothing moves */
		if (!hoist_plan(h, sfx, hoisted)) {
			free(h);
			return NULL;
		}
	}
	snprintf(tmp, sizeof(tmp), "\t{\t// gpuext: %s inlined (hal/nvidia/ptx_inline.c)\n", b->name);
	ok = put(&o, &len, &cap, tmp, strlen(tmp));
	for (const char *l = b->text; ok && l < b->text + b->len; li++) {
		const char *nl = memchr(l, '\n', (size_t)(b->text + b->len - l));
		size_t n = nl ? (size_t)(nl - l) : (size_t)(b->text + b->len - l);
		char dst[64];
		int k = param_load(b, l, n, dst, sizeof(dst));

		if (h && li < h->nlines && h->lines[li].moved) {
			;	/* at the function's start now */
		} else if (k >= 0) {
			snprintf(tmp, sizeof(tmp), "\tmov.b%u %s, %s;\n", arg_bits[k], dst, args[k]);
			ok = put(&o, &len, &cap, tmp, strlen(tmp));
		} else {
			/*
			 * Copy, suffixing labels, turning "ret;" into a branch to the end,
			 * and naming moved registers by their new names.
			 */
			for (size_t i = 0; ok && i < n;) {
				if (l[i] == '$' && (i == 0 || !is_id(l[i - 1]))) {
					size_t j = i + 1;

					while (j < n && is_id(l[j]) && l[j] != '.')
						j++;
					ok = put(&o, &len, &cap, l + i, j - i) &&
					     put(&o, &len, &cap, "_", 1) &&
					     put(&o, &len, &cap, sfx, strlen(sfx));
					i = j;
				} else if (!strncmp(l + i, "ret;", 4) && (i == 0 || !is_id(l[i - 1]))) {
					snprintf(tmp, sizeof(tmp), "bra $%s_end;", sfx);
					ok = put(&o, &len, &cap, tmp, strlen(tmp));
					i += 4;
				} else if (l[i] == '%' && h) {
					const char *q = l + i, *tok;
					size_t tn;

					next_pct(&q, l + n, &tok, &tn);
					ok = put_renamed(h, &o, &len, &cap, tok, tn, sfx, true);
					i += tn;
				} else {
					ok = put(&o, &len, &cap, l + i, 1);
					i++;
				}
			}
			ok = ok && put(&o, &len, &cap, "\n", 1);
		}
		l = nl ? nl + 1 : b->text + b->len;
	}
	free(h);
	snprintf(tmp, sizeof(tmp), "$%s_end:\n\t}\n", sfx);
	if (!ok || !put(&o, &len, &cap, tmp, strlen(tmp))) {
		free(o);
		if (hoisted) {
			free(*hoisted);
			*hoisted = NULL;
		}
		return NULL;
	}
	return o;
}

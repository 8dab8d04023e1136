/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Readers of PTX text that need no splicer state (ptx_splice.c calls them):
 * a statement's guard, operands, immediates, declarations; which prologue
 * statements the entry site may follow; how much of the constant bank a
 * module's .const variables take; the probes' text moved out of that bank.
 * Lives in the LD_PRELOAD library with the splicer: libc only.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvprobe.h"
#include "ptx_text.h"

/* Splits "@%p1 op ..." / "@!%p1 op ..." into the guard and the rest. */
const char *gx_ptx_split_guard(const char *t, char *guard, size_t glen, bool *neg)
{
	size_t n = 0;

	guard[0] = '\0';
	*neg = false;
	if (*t != '@')
		return t;
	t++;
	if (*t == '!') {
		*neg = true;
		t++;
	}
	while (*t && *t != ' ' && n < glen - 1)
		guard[n++] = *t++;
	guard[n] = '\0';
	while (*t == ' ')
		t++;
	return t;
}

/* Splits operands at top-level commas (outside {} and []). Returns the count. */
int gx_ptx_split_operands(char *ops, char **out, int max)
{
	int n = 0, depth = 0;
	char *start = ops;

	for (char *c = ops;; c++) {
		if (*c == '{' || *c == '[')
			depth++;
		else if (*c == '}' || *c == ']')
			depth--;
		if ((*c == ',' && depth == 0) || !*c) {
			bool end = !*c;

			*c = '\0';
			while (*start == ' ')
				start++;
			for (char *e = c; e > start && e[-1] == ' ';)
				*--e = '\0';
			if (n < max)
				out[n++] = start;
			if (end)
				break;
			start = c + 1;
		}
	}
	return n;
}

/* The first element of "{%f1, %f2}", or the operand itself; "" when none. */
void gx_ptx_first_elem(const char *op, char *out, size_t len)
{
	size_t n = 0;

	if (*op == '{')
		op++;
	while (*op == ' ')
		op++;
	while (*op && *op != ',' && *op != '}' && *op != ' ' && n < len - 1)
		out[n++] = *op++;
	out[n] = '\0';
}

bool gx_ptx_parse_imm(const char *t, unsigned long long *v)
{
	char *end;
	bool neg = false;

	if ((t[0] == '0') && (t[1] == 'f' || t[1] == 'F' || t[1] == 'd' || t[1] == 'D')) {
		/* 0fXXXXXXXX / 0dXXXXXXXXXXXXXXXX: the IEEE bits in hex */
		*v = strtoull(t + 2, &end, 16);
		return *end == '\0' && end != t + 2;
	}
	if (*t == '-') {
		neg = true;
		t++;
	}
	*v = strtoull(t, &end, 0);
	if (*end == 'U' || *end == 'u')
		end++;
	if (neg)
		*v = -*v;
	return *end == '\0' && end != t;
}

bool gx_ptx_is_decl(const char *t)
{
	static const char *const d[] = { ".reg", ".local", ".shared", ".param", ".const", ".pragma" };

	for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++)
		if (!strncmp(t, d[i], strlen(d[i])))
			return true;
	return false;
}

/*
 * May the entry site come after statement @t? Only for what has no effect
 * outside the thread's registers and no control flow: parameter loads,
 * moves (special registers included) and arithmetic, unpredicated. Not a
 * carry chain (add.cc ... addc: the carry flag lives only in straight-line
 * code, and the probe branches), and not a read of a clock or a performance
 * counter: an app that times itself from its first instruction keeps the
 * probe's cost out of what it measures, as before.
 * The entry site then sits after the kernel's own prologue (its parameters,
 * thread and block indices, bounds tests), just before its first branch,
 * label, memory access or call: the probe still runs exactly once per
 * thread and before anything another thread could see, and ptxas issues
 * the kernel's special-register reads together with the site's guard
 * instead of after it (the guard was the first thing every warp waited on).
 */
bool gx_ptx_entry_may_follow(const char *t)
{
	static const char *const pure[] = { "mov", "cvta", "cvt", "add", "sub", "mul", "mad", "shl",
					    "shr", "and", "or", "xor", "not", "setp", "selp", "neg",
					    "min", "max" };
	size_t n = strcspn(t, ". \t"), op = strcspn(t, " \t");
	static const char *const clocks[] = { "%clock", "%globaltimer", "%pm" };

	for (const char *c = strstr(t, ".cc"); c && c < t + op; c = strstr(c + 1, ".cc"))
		if (c[3] == '.' || c[3] == ' ' || c[3] == '\t' || !c[3])
			return false;
	for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++)
		if (strstr(t + op, clocks[i]))
			return false;
	if (!strncmp(t, "ld.param.", 9)) {
		/* a parameter load names no other state space ("ld.param.global" is malformed) */
		static const char *const spaces[] = { ".global", ".shared", ".local", ".const" };

		for (size_t i = 0; i < sizeof(spaces) / sizeof(spaces[0]); i++)
			if (memmem(t + 8, op - 8, spaces[i], strlen(spaces[i])))
				return false;
		return true;
	}
	for (size_t i = 0; i < sizeof(pure) / sizeof(pure[0]); i++)
		if (n == strlen(pure[i]) && !strncmp(t, pure[i], n))
			return true;
	return false;
}

/* Bytes of a scalar PTX type token (".b32", ".f64", ...), 0 if not one. */
static unsigned type_bytes(const char *t, size_t n)
{
	unsigned bits = 0;

	if (n < 3 || t[0] != '.' || !strchr("bsuf", t[1]))
		return 0;
	for (size_t i = 2; i < n; i++) {
		if (t[i] < '0' || t[i] > '9')
			return 0;
		bits = bits * 10 + (unsigned)(t[i] - '0');
	}
	return bits == 8 || bits == 16 || bits == 32 || bits == 64 ? bits / 8 : 0;
}

/*
 * An upper bound of the bytes the .const variables defined in @t (@n bytes)
 * take: every line that starts with [.visible|.weak|.common] .const (module
 * scope: code reads constants with ld.const, it never declares them) counts
 * its type x vector width x array dimensions, an unsized dimension counting
 * the initializer's values, plus its alignment less one (ptxas pads between
 * variables). Lines in block comments count too: an overestimate only moves
 * our table out of the bank sooner.
 */
uint64_t gx_ptx_const_bytes(const char *t, size_t n)
{
	static const char *const linkage[] = { ".visible", ".weak", ".common" };
	const char *end = t + n;
	uint64_t total = 0;

	for (const char *l = t; l < end;) {
		const char *e = memchr(l, '\n', (size_t)(end - l));
		const char *l0 = l, *le = e ? e : end, *oeq;
		size_t len = (size_t)(le - l);
		char line[512], *p = line, *eq;
		uint64_t elem = 0, vec = 1, count = 1, align = 0;

		/* @t need not end in a NUL: each line is read from a bounded copy */
		memcpy(line, l, len < sizeof(line) ? len : sizeof(line) - 1);
		line[len < sizeof(line) ? len : sizeof(line) - 1] = '\0';
		l = le + 1;
		p += strspn(p, " \t");
		for (size_t i = 0; i < sizeof(linkage) / sizeof(linkage[0]); i++) {
			size_t k = strlen(linkage[i]);

			if (!strncmp(p, linkage[i], k) && (p[k] == ' ' || p[k] == '\t'))
				p += k + strspn(p + k, " \t");
		}
		if (strncmp(p, ".const", 6) || (p[6] != ' ' && p[6] != '\t'))
			continue;
		p += 6;
		/* [.align N] [.vN] .type name[dims] [= init]; */
		for (;;) {
			size_t k;

			p += strspn(p, " \t");
			k = strcspn(p, " \t;[=");
			if (!k || *p != '.')
				break;
			if (k == 6 && !strncmp(p, ".align", 6)) {
				align = strtoull(p + 6, &p, 0);
				continue;
			}
			if (k == 3 && p[1] == 'v' && strchr("248", p[2]))
				vec = (uint64_t)(p[2] - '0');
			else if (type_bytes(p, k))
				elem = type_bytes(p, k);
			p += k;
		}
		if (!elem)
			elem = 8;	/* a type this does not know: count it as the widest */
		eq = strchr(p, '=');
		oeq = memchr(l0, '=', len);	/* in the whole line, past the copy too */
		for (char *d = strchr(p, '['); d && (!eq || d < eq); d = strchr(d + 1, '[')) {
			unsigned long long dim = strtoull(d + 1, NULL, 0);

			if (!dim && oeq) {	/* name[] = { ... }: as many as the initializer holds */
				dim = 1;
				for (const char *c = oeq; c < le; c++)
					dim += *c == ',';
			}
			count *= dim ? dim : 1;
		}
		if (!align)
			align = elem * vec;
		total += elem * vec * count + (align ? align - 1 : 0);
	}
	return total;
}

/*
 * The probes' text with their constant-space variables and loads moved to
 * the global space: for a module whose own .const data leaves no room for
 * ours. 0 and a malloc'd *@out, -ENOMEM, or -E2BIG where something of the
 * constant space is left that this rewrite does not know.
 */
int gx_ptx_probes_in_global(const char *ptx, size_t n, char **out, size_t *out_len)
{
	static const char *const from[] = { " .const ", "\t.const ", "\n.const ", "ld.const." };
	static const char *const to[] = { " .global ", "\t.global ", "\n.global ", "ld.global." };
	const size_t nfrom = sizeof(from) / sizeof(from[0]);
	char *o = malloc(2 * n + 1);
	size_t w = 0;

	if (!o)
		return -ENOMEM;
	for (size_t i = 0; i < n;) {
		size_t k = 0;

		for (; k < nfrom; k++)
			if (n - i >= strlen(from[k]) && !memcmp(ptx + i, from[k], strlen(from[k])))
				break;
		if (k < nfrom) {
			memcpy(o + w, to[k], strlen(to[k]));
			w += strlen(to[k]);
			i += strlen(from[k]);
		} else {
			o[w++] = ptx[i++];
		}
	}
	o[w] = '\0';
	/* Nothing of the constant space may be left (a form this rewrite does not know). */
	if (gx_ptx_const_bytes(o, w) || strstr(o, "ld.const") || strstr(o, "cvta.const") ||
	    strstr(o, "cvta.to.const") || !strncmp(o, ".const ", 7)) {
		free(o);
		return -E2BIG;
	}
	*out = o;
	*out_len = w;
	return 0;
}

static bool label_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '$' || c == '%';
}

/* Does the statement at @p (up to @e) have opcode @op, with or without qualifiers? */
static bool opcode_is(const char *p, const char *e, const char *op)
{
	size_t n = strlen(op);

	return (size_t)(e - p) > n && !memcmp(p, op, n) &&
	       (p[n] == '.' || p[n] == ' ' || p[n] == '\t');
}

bool gx_ptx_has_back_branch(const char *t)
{
	const char **seen = NULL;	/* the labels defined so far (each up to its ':') */
	size_t nseen = 0, cap = 0;
	bool back = false;

	for (const char *l = t; l && *l && !back;) {
		const char *nl = strchr(l, '\n'), *e = nl ? nl : l + strlen(l), *p = l, *q;

		while (p < e && (*p == ' ' || *p == '\t'))
			p++;
		for (q = p; q < e && label_char(*q); q++)
			;
		if (q > p && q < e && *q == ':') {	/* "NAME:" */
			if (nseen == cap) {
				const char **g = realloc(seen, (cap ? cap * 2 : 16) * sizeof(*seen));

				if (!g) {	/* no memory: say "loop", the safe answer */
					back = true;
					break;
				}
				seen = g;
				cap = cap ? cap * 2 : 16;
			}
			seen[nseen++] = p;
		} else {
			if (p < e && *p == '@') {	/* a guard */
				while (p < e && *p != ' ' && *p != '\t')
					p++;
				while (p < e && (*p == ' ' || *p == '\t'))
					p++;
			}
			if (opcode_is(p, e, "brx") || opcode_is(p, e, "call")) {
				back = true;	/* indirect, or a callee this text does not show */
			} else if (opcode_is(p, e, "bra")) {
				const char *semi = memchr(p, ';', (size_t)(e - p)), *a;

				for (q = semi ? semi : e; q > p && !label_char(q[-1]); q--)
					;
				for (a = q; a > p && label_char(a[-1]); a--)
					;
				for (size_t i = 0; i < nseen && !back && q > a; i++)
					back = !strncmp(seen[i], a, (size_t)(q - a)) && seen[i][q - a] == ':';
			}
		}
		l = nl ? nl + 1 : NULL;
	}
	free(seen);
	return back;
}

/* "add" .. "dec": the integer read-modify-writes that take an L2 cache hint here. */
static bool l2keep_op(const char *op, size_t n)
{
	static const char *const ops[] = { "add", "or", "and", "xor", "min", "max", "inc", "dec" };

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strlen(ops[i]) == n && !memcmp(op, ops[i], n))
			return true;
	return false;
}

static bool l2keep_type(const char *ty, size_t n)
{
	static const char *const tys[] = { "u32", "u64", "s32", "s64", "b32", "b64" };

	for (size_t i = 0; i < sizeof(tys) / sizeof(tys[0]); i++)
		if (n == 3 && !memcmp(ty, tys[i], 3))
			return true;
	return false;
}

/*
 * If line @l (@n bytes, no newline) is "[guard] atom.global.OP.TYPE ...;" or
 * "red.global.OP.TYPE ...;" with OP and TYPE above, the offsets of the dot
 * before TYPE and of the ';' in *@dot / *@semi.
 */
static bool l2keep_line(const char *l, size_t n, size_t *dot, size_t *semi)
{
	size_t i = 0, m, op, opn, ty;
	const char *s;

	while (i < n && (l[i] == ' ' || l[i] == '\t'))
		i++;
	if (i < n && l[i] == '@') {	/* a guard: "@%p1 " or "@!%p1 " */
		while (i < n && l[i] != ' ' && l[i] != '\t')
			i++;
		while (i < n && (l[i] == ' ' || l[i] == '\t'))
			i++;
	}
	if (n - i >= 12 && !memcmp(l + i, "atom.global.", 12))
		m = i + 12;
	else if (n - i >= 11 && !memcmp(l + i, "red.global.", 11))
		m = i + 11;
	else
		return false;
	op = m;
	while (m < n && l[m] != '.' && l[m] != ' ' && l[m] != '\t')
		m++;
	opn = m - op;
	if (m >= n || l[m] != '.' || !l2keep_op(l + op, opn))
		return false;
	ty = m + 1;
	while (m + 1 < n && l[m + 1] != ' ' && l[m + 1] != '\t')
		m++;
	if (!l2keep_type(l + ty, m + 1 - ty))	/* exactly OP.TYPE: nothing else qualified */
		return false;
	/* the ';' that ends this instruction, after its type (a malformed guard may hold one too) */
	s = memchr(l + m, ';', n - m);
	if (!s || memmem(l, n, "L2::", 4))
		return false;
	*dot = ty - 1;
	*semi = (size_t)(s - l);
	return true;
}

int gx_ptx_probes_l2keep(const char *ptx, size_t n, uint64_t pol, char **out, size_t *out_len,
			 unsigned *count)
{
	static const char hint[] = ".L2::cache_hint";
	char imm[24];
	size_t cap = n + 64, w = 0, k;
	unsigned c = 0;
	bool need;
	char *o;

	for (size_t i = 0; i < n; i++)	/* room: every line could take a hint */
		cap += ptx[i] == '\n' ? sizeof(hint) + sizeof(imm) + 2 : 0;
	o = malloc(cap + sizeof(hint) + sizeof(imm) + 2);
	if (!o)
		return -ENOMEM;
	k = (size_t)snprintf(imm, sizeof(imm), ", 0x%016llx", (unsigned long long)pol);
	for (size_t i = 0; i < n;) {	/* a hint needs PTX 7.4 and sm_80: raise what the text asks */
		const char *nl = memchr(ptx + i, '\n', n - i);
		size_t len = nl ? (size_t)(nl - (ptx + i)) : n - i, dot, semi;

		c += l2keep_line(ptx + i, len, &dot, &semi);
		i += len + (nl != NULL);
	}
	need = c > 0;
	c = 0;
	for (size_t i = 0; i < n;) {
		const char *nl = memchr(ptx + i, '\n', n - i);
		size_t len = nl ? (size_t)(nl - (ptx + i)) : n - i, dot, semi;
		unsigned a = 0, b = 0;
		char v[16] = "";

		if (len > 24)	/* the marker's value, NUL-terminated */
			snprintf(v, sizeof(v), "%.*s", (int)(len - 22 < 15 ? len - 22 : 15), ptx + i + 22);
		if (need && len > 22 && !memcmp(ptx + i, "// gpuext-ptx-version ", 22) &&
		    sscanf(v, "%u.%u", &a, &b) == 2 && (a < 7 || (a == 7 && b < 4))) {
			w += (size_t)sprintf(o + w, "// gpuext-ptx-version 7.4");
		} else if (need && len > 24 && !memcmp(ptx + i, "// gpuext-ptx-target sm_", 24) &&
			   sscanf(v + 2, "%u", &a) == 1 && a < 80) {
			w += (size_t)sprintf(o + w, "// gpuext-ptx-target sm_80");
		} else if (l2keep_line(ptx + i, len, &dot, &semi)) {
			memcpy(o + w, ptx + i, dot);
			w += dot;
			memcpy(o + w, hint, sizeof(hint) - 1);
			w += sizeof(hint) - 1;
			memcpy(o + w, ptx + i + dot, semi - dot);
			w += semi - dot;
			memcpy(o + w, imm, k);
			w += k;
			memcpy(o + w, ptx + i + semi, len - semi);
			w += len - semi;
			c++;
		} else {
			memcpy(o + w, ptx + i, len);
			w += len;
		}
		i += len;
		if (nl) {
			o[w++] = '\n';
			i++;
		}
	}
	o[w] = '\0';
	*out = o;
	*out_len = w;
	if (count)
		*count = c;
	return 0;
}

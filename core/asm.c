/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The assembler: reads exactly what core/disasm.c writes (see the syntax in
 * asm.h), so that a program can be printed, edited and assembled back, and
 * the ISA corpus can be written as text. A recursive-descent parser over one
 * line at a time; labels are resolved in a second pass.
 */
#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asm.h"
#include "internal.h"

enum fixup_kind {
	FIX_OFF16,	/* jump offset in off: target - (idx + 1) */
	FIX_IMM32,	/* gotol / local call: target - (idx + 1) in imm */
	FIX_FUNC,	/* ld_imm64 src 4: target - (idx + 1) in imm, as Linux counts */
};

struct fixup {
	size_t idx;
	enum fixup_kind kind;
	char *label;
	int64_t helper;		/* "call NAME": helper id if no such label, else -1 */
	int line, col;
};

struct label {
	char *name;
	size_t idx;
	int line;
};

/* Parser state for one gpuext_asm() call. */
struct asm_state {
	const struct gpuext_asm_opts *opts;
	struct bpf_insn *insns;
	size_t cnt, cap;
	struct fixup *fix;
	size_t fix_cnt, fix_cap;
	struct label *labels;
	size_t label_cnt, label_cap;
	/* current line */
	const char *line;	/* start of the line (column 1) */
	const char *p;		/* cursor */
	int line_no;
	char *err;
	size_t err_len;
	bool failed;
};

static bool fail(struct asm_state *s, const char *at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Records the first error with its line and column; always returns false. */
static bool fail(struct asm_state *s, const char *at, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (s->failed)
		return false;
	s->failed = true;
	if (!s->err || !s->err_len)
		return false;
	n = snprintf(s->err, s->err_len, "line %d, column %d: ", s->line_no,
		     (int)((at ? at : s->p) - s->line) + 1);
	if (n < 0 || (size_t)n >= s->err_len)
		return false;
	va_start(ap, fmt);
	vsnprintf(s->err + n, s->err_len - (size_t)n, fmt, ap);
	va_end(ap);
	return false;
}

static void *grow(void *arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *n;

	if (need <= *cap)
		return arr;
	ncap = *cap ? *cap * 2 : 16;
	while (ncap < need)
		ncap *= 2;
	n = realloc(arr, ncap * elem);
	if (!n)
		return NULL;
	*cap = ncap;
	return n;
}

static bool emit(struct asm_state *s, struct bpf_insn in)
{
	struct bpf_insn *n = grow(s->insns, &s->cap, s->cnt + 1, sizeof(*n));

	if (!n)
		return fail(s, NULL, "out of memory");
	s->insns = n;
	s->insns[s->cnt++] = in;
	return true;
}

/* ------------------------------------------------------------------ */
/* Lexical helpers                                                     */
/* ------------------------------------------------------------------ */

static void skip_ws(struct asm_state *s)
{
	while (*s->p == ' ' || *s->p == '\t')
		s->p++;
}

static bool at_end(struct asm_state *s)
{
	skip_ws(s);
	return *s->p == '\0';
}

static bool is_ident_start(char c) { return isalpha((unsigned char)c) || c == '_' || c == '.'; }
static bool is_ident(char c) { return isalnum((unsigned char)c) || c == '_' || c == '.'; }

/* Accepts literal punctuation @lit (after optional blanks). */
static bool accept(struct asm_state *s, const char *lit)
{
	size_t n = strlen(lit);

	skip_ws(s);
	if (strncmp(s->p, lit, n))
		return false;
	s->p += n;
	return true;
}

/* Accepts a whole word (not a prefix of a longer identifier). */
static bool accept_word(struct asm_state *s, const char *w)
{
	size_t n = strlen(w);

	skip_ws(s);
	if (strncmp(s->p, w, n) || is_ident(s->p[n]))
		return false;
	s->p += n;
	return true;
}

static bool expect(struct asm_state *s, const char *lit)
{
	if (accept(s, lit))
		return true;
	return fail(s, NULL, "expected '%s'", lit);
}

/* Copies an identifier into @buf; false if there is none. */
static bool ident(struct asm_state *s, char *buf, size_t len)
{
	const char *b;
	size_t n;

	skip_ws(s);
	if (!is_ident_start(*s->p))
		return false;
	b = s->p;
	while (is_ident(*s->p))
		s->p++;
	n = (size_t)(s->p - b);
	if (n >= len)
		return fail(s, b, "name is longer than %zu characters", len - 1);
	memcpy(buf, b, n);
	buf[n] = '\0';
	return true;
}

/*
 * A number: optional sign, then 0x<hex> or decimal. *neg says whether a '-'
 * was seen; the magnitude is returned in *mag. Overflow beyond 64 bits fails.
 */
static bool number(struct asm_state *s, bool *neg, uint64_t *mag, bool *signed_explicit)
{
	const char *b;
	uint64_t v = 0;
	int base = 10;

	skip_ws(s);
	b = s->p;
	*neg = false;
	if (signed_explicit)
		*signed_explicit = false;
	if (*s->p == '-' || *s->p == '+') {
		*neg = *s->p == '-';
		if (signed_explicit)
			*signed_explicit = true;
		s->p++;
	}
	if (s->p[0] == '0' && (s->p[1] == 'x' || s->p[1] == 'X')) {
		base = 16;
		s->p += 2;
		if (!isxdigit((unsigned char)*s->p)) {
			s->p = b;
			return false;
		}
	} else if (!isdigit((unsigned char)*s->p)) {
		s->p = b;
		return false;
	}
	for (;;) {
		char c = *s->p;
		unsigned d;

		if (isdigit((unsigned char)c))
			d = (unsigned)(c - '0');
		else if (base == 16 && isxdigit((unsigned char)c))
			d = (unsigned)(tolower((unsigned char)c) - 'a' + 10);
		else
			break;
		if (v > (UINT64_MAX - d) / (uint64_t)base)
			return fail(s, b, "number does not fit in 64 bits");
		v = v * (uint64_t)base + d;
		s->p++;
	}
	if (is_ident(*s->p))
		return fail(s, s->p, "unexpected '%c' after a number", *s->p);
	*mag = v;
	return true;
}

/* A signed value in [min, max]; @what names it in messages. */
static bool int_in(struct asm_state *s, int64_t min, int64_t max, const char *what, int64_t *out)
{
	const char *b;
	bool neg;
	uint64_t mag;
	int64_t v;

	skip_ws(s);
	b = s->p;
	if (!number(s, &neg, &mag, NULL))
		return s->failed ? false
				 : fail(s, b, "expected %s (a number such as 0x10 or -8)", what);
	if (mag > (uint64_t)INT64_MAX + (neg ? 1 : 0))
		return fail(s, b, "%s is out of range [%" PRId64 ", %" PRId64 "]", what, min, max);
	v = neg ? (mag ? -(int64_t)(mag - 1) - 1 : 0) : (int64_t)mag;
	if (v < min || v > max)
		return fail(s, b, "%s %" PRId64 " is out of range [%" PRId64 ", %" PRId64 "]", what, v,
			    min, max);
	*out = v;
	return true;
}

/*
 * A 32-bit immediate. In a 64-bit context it is sign-extended by the CPU, so
 * only [INT32_MIN, INT32_MAX] means what it says; in a 32-bit context any
 * 32-bit pattern is fine (0xffffffff == -1).
 */
static bool imm32(struct asm_state *s, bool ctx64, int32_t *out)
{
	const char *b;
	bool neg;
	uint64_t mag;

	skip_ws(s);
	b = s->p;
	if (!number(s, &neg, &mag, NULL))
		return s->failed ? false : fail(s, b, "expected a register or an immediate");
	if (neg ? mag > (uint64_t)INT32_MAX + 1 : mag > (ctx64 ? (uint64_t)INT32_MAX : UINT32_MAX))
		return fail(s, b, "immediate %s0x%" PRIx64 " does not fit %s", neg ? "-" : "", mag,
			    ctx64 ? "a sign-extended 32-bit field (write it as a negative number, "
				    "or use ld_imm64 \"ll\")"
				  : "in 32 bits");
	*out = (int32_t)(neg ? (uint32_t)0 - (uint32_t)mag : (uint32_t)mag);
	return true;
}

/* A register "rN"/"wN", N in 0..10; *wide says which. */
static bool reg(struct asm_state *s, uint8_t *r, bool *wide)
{
	const char *b;
	unsigned n = 0;

	skip_ws(s);
	b = s->p;
	if ((*s->p != 'r' && *s->p != 'w') || !isdigit((unsigned char)s->p[1]))
		return fail(s, b, "expected a register (r0..r10 or w0..w10)");
	*wide = *s->p == 'r';
	s->p++;
	while (isdigit((unsigned char)*s->p) && n < 100)
		n = n * 10 + (unsigned)(*s->p++ - '0');
	if (is_ident(*s->p) || n > 10)
		return fail(s, b, "expected a register (r0..r10 or w0..w10)");
	*r = (uint8_t)n;
	return true;
}

static bool peek_reg(struct asm_state *s)
{
	skip_ws(s);
	return (*s->p == 'r' || *s->p == 'w') && isdigit((unsigned char)s->p[1]);
}

/* A register of the given width. */
static bool reg_w(struct asm_state *s, bool wide, uint8_t *r)
{
	const char *b;
	bool w;

	skip_ws(s);
	b = s->p;
	if (!reg(s, r, &w))
		return false;
	if (w != wide)
		return fail(s, b, "expected a %s register (%c0..%c10) here", wide ? "64-bit" : "32-bit",
			    wide ? 'r' : 'w', wide ? 'r' : 'w');
	return true;
}

/* "(u32 *)" / "(s8 *)"; returns the BPF size bits. */
static bool size_cast(struct asm_state *s, bool *sx, uint8_t *size)
{
	char id[8];
	const char *b;

	if (!expect(s, "("))
		return false;
	skip_ws(s);
	b = s->p;
	if (!ident(s, id, sizeof(id)))
		return s->failed ? false : fail(s, b, "expected u8, u16, u32, u64, s8, s16 or s32");
	*sx = id[0] == 's';
	if ((id[0] != 'u' && id[0] != 's') || (!strcmp(id + 1, "64") && *sx))
		return fail(s, b, "expected u8, u16, u32, u64, s8, s16 or s32");
	if (!strcmp(id + 1, "8"))
		*size = BPF_B;
	else if (!strcmp(id + 1, "16"))
		*size = BPF_H;
	else if (!strcmp(id + 1, "32"))
		*size = BPF_W;
	else if (!strcmp(id + 1, "64"))
		*size = BPF_DW;
	else
		return fail(s, b, "expected u8, u16, u32, u64, s8, s16 or s32");
	return expect(s, "*") && expect(s, ")");
}

/* "(r1 - 0x10": a register and an optional offset (xchg, cmpxchg, memref). */
static bool addr_off(struct asm_state *s, uint8_t *r, int16_t *off)
{
	bool wide;
	int64_t v = 0;

	if (!expect(s, "(") || !reg(s, r, &wide))
		return false;
	if (!wide)
		return fail(s, NULL, "a memory address needs a 64-bit register");
	if (accept(s, "+")) {
		if (!int_in(s, 0, INT16_MAX, "an offset", &v))
			return false;
	} else if (accept(s, "-")) {
		if (!int_in(s, 0, (int64_t)INT16_MAX + 1, "an offset", &v))
			return false;
		v = -v;
	}
	*off = (int16_t)v;
	return true;
}

/* "(r1 + 0x4)", "(r1 - 8)" or "(r1)". */
static bool memref(struct asm_state *s, uint8_t *r, int16_t *off)
{
	return addr_off(s, r, off) && expect(s, ")");
}

/* "*(u32 *)(r1 + 0x4)" after the leading '*'. */
static bool deref(struct asm_state *s, bool *sx, uint8_t *size, uint8_t *r, int16_t *off)
{
	return size_cast(s, sx, size) && memref(s, r, off);
}

/* ------------------------------------------------------------------ */
/* Jump targets and labels                                             */
/* ------------------------------------------------------------------ */

static bool add_fixup(struct asm_state *s, enum fixup_kind kind, const char *label, const char *at)
{
	struct fixup *f = grow(s->fix, &s->fix_cap, s->fix_cnt + 1, sizeof(*f));

	if (!f)
		return fail(s, at, "out of memory");
	s->fix = f;
	f = &s->fix[s->fix_cnt];
	f->label = strdup(label);
	if (!f->label)
		return fail(s, at, "out of memory");
	f->idx = s->cnt;
	f->kind = kind;
	f->helper = -1;
	f->line = s->line_no;
	f->col = (int)(at - s->line) + 1;
	s->fix_cnt++;
	return true;
}

/*
 * A jump target: "+0x3"/"-3" (relative, sign required) or a label. For a
 * label a fixup is recorded against the instruction about to be emitted.
 */
static bool target(struct asm_state *s, enum fixup_kind kind, int64_t *rel)
{
	char name[128];
	const char *b;
	bool neg, sgn;
	uint64_t mag;
	int64_t max = kind == FIX_OFF16 ? INT16_MAX : INT32_MAX;

	skip_ws(s);
	b = s->p;
	*rel = 0;
	if (ident(s, name, sizeof(name)))
		return add_fixup(s, kind, name, b);
	if (s->failed)
		return false;
	if (!number(s, &neg, &mag, &sgn) || !sgn)
		return s->failed ? false
				 : fail(s, b, "expected a label or a signed offset such as +0x3 or -2");
	if (neg ? mag > (uint64_t)max + 1 : mag > (uint64_t)max)
		return fail(s, b, "offset out of range for a %d-bit field", kind == FIX_OFF16 ? 16 : 32);
	*rel = neg ? -(int64_t)mag : (int64_t)mag;
	return true;
}

static bool add_label(struct asm_state *s, const char *name, const char *at)
{
	struct label *l;

	for (size_t i = 0; i < s->label_cnt; i++)
		if (!strcmp(s->labels[i].name, name))
			return fail(s, at, "label '%s' is already defined on line %d", name,
				    s->labels[i].line);
	l = grow(s->labels, &s->label_cap, s->label_cnt + 1, sizeof(*l));
	if (!l)
		return fail(s, at, "out of memory");
	s->labels = l;
	l = &s->labels[s->label_cnt];
	l->name = strdup(name);
	if (!l->name)
		return fail(s, at, "out of memory");
	l->idx = s->cnt;
	l->line = s->line_no;
	s->label_cnt++;
	return true;
}

static const struct label *find_label(const struct asm_state *s, const char *name)
{
	for (size_t i = 0; i < s->label_cnt; i++)
		if (!strcmp(s->labels[i].name, name))
			return &s->labels[i];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Instructions                                                        */
/* ------------------------------------------------------------------ */

static const struct {
	const char *text;
	uint8_t op;
	int16_t off;
} alu_ops[] = {
	/* longest first so that "<<=" is not read as "<" */
	{ "s>>=", BPF_ARSH, 0 }, { "s/=", BPF_DIV, 1 }, { "s%=", BPF_MOD, 1 },
	{ "<<=", BPF_LSH, 0 }, { ">>=", BPF_RSH, 0 }, { "+=", BPF_ADD, 0 },
	{ "-=", BPF_SUB, 0 }, { "*=", BPF_MUL, 0 }, { "/=", BPF_DIV, 0 },
	{ "|=", BPF_OR, 0 }, { "&=", BPF_AND, 0 }, { "%=", BPF_MOD, 0 },
	{ "^=", BPF_XOR, 0 },
};

static const struct {
	const char *text;
	uint8_t op;
} jmp_ops[] = {
	{ "s>=", BPF_JSGE }, { "s<=", BPF_JSLE }, { "s>", BPF_JSGT }, { "s<", BPF_JSLT },
	{ "==", BPF_JEQ }, { "!=", BPF_JNE }, { ">=", BPF_JGE }, { "<=", BPF_JLE },
	{ ">", BPF_JGT }, { "<", BPF_JLT }, { "&", BPF_JSET },
};

static const struct {
	const char *name;
	int32_t op;
} atomic_ops[] = {
	{ "add", BPF_ADD }, { "or", BPF_OR }, { "and", BPF_AND }, { "xor", BPF_XOR },
};

/* "if rD OP (rS|imm) goto T" after "if". */
static bool parse_if(struct asm_state *s)
{
	struct bpf_insn in = { 0 };
	uint8_t op = 0;
	bool wide, found = false;
	int64_t rel;
	int32_t imm;
	uint8_t dst, src;

	if (!reg(s, &dst, &wide))
		return false;
	skip_ws(s);
	for (size_t k = 0; k < sizeof(jmp_ops) / sizeof(jmp_ops[0]); k++) {
		if (accept(s, jmp_ops[k].text)) {
			op = jmp_ops[k].op;
			found = true;
			break;
		}
	}
	if (!found)
		return fail(s, NULL, "expected a comparison (==, !=, >, >=, <, <=, s>, s>=, s<, s<=, &)");
	in.code = (wide ? BPF_JMP : BPF_JMP32) | op;
	in.dst_reg = dst;
	if (peek_reg(s)) {
		if (!reg_w(s, wide, &src))
			return false;
		in.code |= BPF_X;
		in.src_reg = src;
	} else {
		if (!imm32(s, wide, &imm))
			return false;
		in.imm = imm;
	}
	if (!accept_word(s, "goto"))
		return fail(s, NULL, "expected 'goto'");
	if (!target(s, FIX_OFF16, &rel))
		return false;
	in.off = (int16_t)rel;
	return emit(s, in);
}

/* "lock *(u64 *)(r1 + 0x0) += r2" after "lock". */
static bool parse_lock(struct asm_state *s)
{
	struct bpf_insn in = { 0 };
	uint8_t size, dst, src;
	int16_t off;
	bool sx;

	if (!expect(s, "*") || !deref(s, &sx, &size, &dst, &off))
		return false;
	if (sx || (size != BPF_W && size != BPF_DW))
		return fail(s, NULL, "atomic operations are u32 or u64");
	skip_ws(s);
	if (accept(s, "+="))
		in.imm = BPF_ADD;
	else if (accept(s, "|="))
		in.imm = BPF_OR;
	else if (accept(s, "&="))
		in.imm = BPF_AND;
	else if (accept(s, "^="))
		in.imm = BPF_XOR;
	else
		return fail(s, NULL, "expected +=, |=, &= or ^= after a lock operand");
	if (!reg_w(s, size == BPF_DW, &src))
		return false;
	in.code = BPF_STX | BPF_ATOMIC | size;
	in.dst_reg = dst;
	in.src_reg = src;
	in.off = off;
	return emit(s, in);
}

/* "*(u32 *)(r1 + 0x4) = w2 | imm" after the '*'. */
static bool parse_store(struct asm_state *s)
{
	struct bpf_insn in = { 0 };
	uint8_t size, dst, src;
	int16_t off;
	int32_t imm;
	bool sx, wide;

	if (!deref(s, &sx, &size, &dst, &off))
		return false;
	if (sx)
		return fail(s, NULL, "stores take u8, u16, u32 or u64");
	if (!expect(s, "="))
		return false;
	in.dst_reg = dst;
	in.off = off;
	if (peek_reg(s)) {
		const char *b = s->p;

		if (!reg(s, &src, &wide))
			return false;
		if (size == BPF_DW && !wide)
			return fail(s, b, "a u64 store needs a 64-bit register");
		in.code = BPF_STX | BPF_MEM | size;
		in.src_reg = src;
	} else {
		if (!imm32(s, size == BPF_DW, &imm))
			return false;
		in.code = BPF_ST | BPF_MEM | size;
		in.imm = imm;
	}
	return emit(s, in);
}

static bool parse_call(struct asm_state *s)
{
	struct bpf_insn in = { .code = BPF_JMP | BPF_CALL };
	char name[128];
	const char *b;
	bool neg, sgn;
	uint64_t mag;
	int64_t rel;

	skip_ws(s);
	b = s->p;
	if (accept_word(s, "kfunc")) {
		const struct gpuext_func_proto *p;

		in.src_reg = BPF_PSEUDO_KFUNC_CALL;
		if (!expect(s, "["))
			return false;
		if (accept(s, "#")) {
			int64_t v;

			if (!int_in(s, 0, UINT32_MAX, "a kfunc id", &v))
				return false;
			in.imm = (int32_t)(uint32_t)v;
		} else {
			skip_ws(s);
			b = s->p;
			if (!ident(s, name, sizeof(name)))
				return s->failed ? false : fail(s, b, "expected a kfunc name or #<id>");
			p = s->opts->rt ? gpuext_runtime__find_func_by_name(s->opts->rt,
									    GPUEXT_FUNC_KFUNC, name)
					: NULL;
			if (!p)
				return fail(s, b, "unknown kfunc '%s'%s", name,
					    s->opts->rt ? "" : " (no runtime to look it up in)");
			in.imm = (int32_t)p->id;
		}
		return expect(s, "]") && emit(s, in);
	}
	if (is_ident_start(*s->p)) {
		const struct gpuext_func_proto *p = NULL;

		ident(s, name, sizeof(name));
		if (s->failed)
			return false;
		/* A label anywhere in the text wins over a helper of that name. */
		if (s->opts->rt)
			p = gpuext_runtime__find_func_by_name(s->opts->rt, GPUEXT_FUNC_HELPER, name);
		in.src_reg = BPF_PSEUDO_CALL;
		if (!add_fixup(s, FIX_IMM32, name, b))
			return false;
		if (p)
			s->fix[s->fix_cnt - 1].helper = p->id;
		return emit(s, in);
	}
	if (!number(s, &neg, &mag, &sgn))
		return s->failed ? false
				 : fail(s, b, "expected a helper id (0x1), a local call (+0x5, -0x5 or "
					   "a label), or kfunc[NAME]");
	if (sgn) {
		s->p = b;
		if (!target(s, FIX_IMM32, &rel))
			return false;
		in.src_reg = BPF_PSEUDO_CALL;
		in.imm = (int32_t)rel;
		return emit(s, in);
	}
	if (mag > UINT32_MAX)
		return fail(s, b, "helper id 0x%" PRIx64 " does not fit in 32 bits", mag);
	in.imm = (int32_t)(uint32_t)mag;
	return emit(s, in);
}

/* Looks a map up by name in the runtime's table; 0 if none. */
static uint32_t rt_map_id(const struct gpuext_runtime *rt, const char *name)
{
	if (!rt)
		return 0;
	for (size_t i = 0; i < rt->map_slots; i++)
		if (rt->maps[i] && !strcmp(gpuext_map__name(rt->maps[i]), name))
			return (uint32_t)i + 1;
	return 0;
}

/* The bracketed operand of a pseudo ld_imm64: a name or #number. */
static bool pseudo_ref(struct asm_state *s, uint8_t src, int32_t *imm)
{
	char name[GPUEXT_MAP_NAME_MAX];
	const char *b;
	int64_t v;

	if (!expect(s, "["))
		return false;
	skip_ws(s);
	b = s->p;
	if (src == BPF_PSEUDO_FUNC) {
		if (!target(s, FIX_FUNC, &v))
			return false;
		*imm = (int32_t)v;
	} else if (src == BPF_PSEUDO_BTF_ID) {
		if (!int_in(s, 0, UINT32_MAX, "a variable id", &v))
			return false;
		*imm = (int32_t)(uint32_t)v;
	} else if (accept(s, "#")) {
		if (!int_in(s, 0, UINT32_MAX, "a map number", &v))
			return false;
		*imm = (int32_t)(uint32_t)v;
	} else if (ident(s, name, sizeof(name))) {
		if (src == BPF_PSEUDO_MAP_FD || src == BPF_PSEUDO_MAP_VALUE) {
			uint32_t id = rt_map_id(s->opts->rt, name);

			if (!id)
				return fail(s, b, "no map named '%s' in the runtime", name);
			*imm = (int32_t)id;
		} else {
			size_t k;

			for (k = 0; k < s->opts->map_cnt; k++)
				if (s->opts->maps[k] && !strcmp(gpuext_map__name(s->opts->maps[k]), name))
					break;
			if (k == s->opts->map_cnt)
				return fail(s, b, "no map named '%s' among the program's maps", name);
			*imm = (int32_t)k;
		}
	} else {
		return s->failed ? false : fail(s, b, "expected a map name or #<number>");
	}
	return expect(s, "]");
}

/* "rD = <something> ll" after the '='; the value is already known to be lddw. */
static bool parse_lddw(struct asm_state *s, uint8_t dst)
{
	static const struct {
		const char *word;
		uint8_t src;
	} kinds[] = {
		{ "map_fd", BPF_PSEUDO_MAP_FD }, { "map_value_fd", BPF_PSEUDO_MAP_VALUE },
		{ "var", BPF_PSEUDO_BTF_ID }, { "func", BPF_PSEUDO_FUNC },
		{ "map", BPF_PSEUDO_MAP_IDX }, { "map_value", BPF_PSEUDO_MAP_IDX_VALUE },
	};
	struct bpf_insn in[2] = { { .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = dst } };
	const char *b;
	bool neg;
	uint64_t mag;

	skip_ws(s);
	b = s->p;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		if (!accept_word(s, kinds[k].word))
			continue;
		in[0].src_reg = kinds[k].src;
		if (!pseudo_ref(s, kinds[k].src, &in[0].imm))
			return false;
		if (accept(s, "+")) {
			int64_t v;

			if (!int_in(s, 0, UINT32_MAX, "a value offset", &v))
				return false;
			in[1].imm = (int32_t)(uint32_t)v;
		}
		if (!accept_word(s, "ll"))
			return fail(s, NULL, "expected 'll' after an ld_imm64 operand");
		return emit(s, in[0]) && emit(s, in[1]);
	}
	if (!number(s, &neg, &mag, NULL))
		return s->failed ? false : fail(s, b, "expected a 64-bit number or map/var/func[...]");
	if (neg && mag > (uint64_t)INT64_MAX + 1)
		return fail(s, b, "number does not fit in 64 bits");
	if (neg)
		mag = (uint64_t)0 - mag;
	in[0].imm = (int32_t)(uint32_t)mag;
	in[1].imm = (int32_t)(uint32_t)(mag >> 32);
	if (!accept_word(s, "ll"))
		return fail(s, NULL, "expected 'll'");
	return emit(s, in[0]) && emit(s, in[1]);
}

/* Does the rest of the line end with the word "ll"? */
static bool ends_with_ll(const char *p)
{
	size_t n = strlen(p);

	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	return n >= 2 && p[n - 2] == 'l' && p[n - 1] == 'l' &&
	       (n == 2 || p[n - 3] == ' ' || p[n - 3] == '\t');
}

/* "rS = atomic_fetch_add((u64 *)(r1 + 0x0), rS)" etc. after "rS =". */
static bool parse_fetch(struct asm_state *s, uint8_t src, bool wide)
{
	static const struct {
		const char *word;
		bool cmp, is64;
	} xchgs[] = {
		{ "cmpxchg_64", true, true }, { "cmpxchg32_32", true, false },
		{ "xchg_64", false, true }, { "xchg32_32", false, false },
	};
	struct bpf_insn in = { .src_reg = src };
	uint8_t size, dst, again;
	int16_t off;
	bool sx, found = false;
	const char *b;

	skip_ws(s);
	b = s->p;
	for (size_t k = 0; k < sizeof(xchgs) / sizeof(xchgs[0]); k++) {
		bool cmp = xchgs[k].cmp;

		if (!accept_word(s, xchgs[k].word))
			continue;
		if (xchgs[k].is64 != wide)
			return fail(s, b, "%s needs %s registers", xchgs[k].word,
				    xchgs[k].is64 ? "64-bit" : "32-bit");
		if (cmp && src != 0)
			return fail(s, s->line, "cmpxchg always returns in r0/w0");
		if (!addr_off(s, &dst, &off) || !expect(s, ",") || !reg_w(s, wide, &again))
			return false;
		if (cmp) {
			if (again != 0)
				return fail(s, NULL, "cmpxchg compares with r0/w0");
			if (!expect(s, ",") || !reg_w(s, wide, &again))
				return false;
			in.src_reg = again;
		} else if (again != src) {
			return fail(s, NULL, "xchg returns into its source register (r%u)", src);
		}
		if (!expect(s, ")"))
			return false;
		in.code = BPF_STX | BPF_ATOMIC | (wide ? BPF_DW : BPF_W);
		in.dst_reg = dst;
		in.off = off;
		in.imm = cmp ? BPF_CMPXCHG : BPF_XCHG;
		return emit(s, in);
	}
	if (!accept(s, "atomic_fetch_"))
		return fail(s, NULL, "expected atomic_fetch_*, xchg or cmpxchg");
	for (size_t k = 0; k < sizeof(atomic_ops) / sizeof(atomic_ops[0]); k++) {
		if (accept_word(s, atomic_ops[k].name)) {
			in.imm = atomic_ops[k].op | BPF_FETCH;
			found = true;
			break;
		}
	}
	if (!found)
		return fail(s, NULL, "expected atomic_fetch_add, _or, _and or _xor");
	if (!expect(s, "(") || !deref(s, &sx, &size, &dst, &off))
		return false;
	if (sx || size != (wide ? BPF_DW : BPF_W))
		return fail(s, NULL, "the cast must be (%s *) for %s registers", wide ? "u64" : "u32",
			    wide ? "64-bit" : "32-bit");
	if (!expect(s, ",") || !reg_w(s, wide, &again))
		return false;
	if (again != src)
		return fail(s, NULL, "atomic_fetch_* returns into its source register (r%u)", src);
	if (!expect(s, ")"))
		return false;
	in.code = BPF_STX | BPF_ATOMIC | (wide ? BPF_DW : BPF_W);
	in.dst_reg = dst;
	in.off = off;
	return emit(s, in);
}

/* Everything that starts with a register. */
static bool parse_reg_insn(struct asm_state *s)
{
	struct bpf_insn in = { 0 };
	const char *b;
	uint8_t dst, src;
	bool wide, w2, sx;
	int32_t imm;

	if (!reg(s, &dst, &wide))
		return false;
	skip_ws(s);
	for (size_t k = 0; k < sizeof(alu_ops) / sizeof(alu_ops[0]); k++) {
		if (!accept(s, alu_ops[k].text))
			continue;
		in.code = (wide ? BPF_ALU64 : BPF_ALU) | alu_ops[k].op;
		in.dst_reg = dst;
		in.off = alu_ops[k].off;
		if (peek_reg(s)) {
			if (!reg_w(s, wide, &src))
				return false;
			in.code |= BPF_X;
			in.src_reg = src;
		} else {
			if (!imm32(s, wide, &imm))
				return false;
			in.imm = imm;
		}
		return emit(s, in);
	}
	if (!accept(s, "="))
		return fail(s, NULL, "expected an assignment operator (=, +=, -=, ...)");
	in.dst_reg = dst;
	skip_ws(s);
	b = s->p;
	/* rD = *(u32 *)(rS + off) */
	if (accept(s, "*")) {
		uint8_t size;

		if (!deref(s, &sx, &size, &src, &in.off))
			return false;
		if (sx && !wide)
			return fail(s, b, "sign-extending loads write a 64-bit register");
		if (!sx && size == BPF_DW && !wide)
			return fail(s, b, "a u64 load needs a 64-bit register");
		in.code = BPF_LDX | (sx ? BPF_MEMSX : BPF_MEM) | size;
		in.src_reg = src;
		return emit(s, in);
	}
	/* rD = -rD (neg) vs rD = -0x1 (mov) */
	if (*s->p == '-' && (s->p[1] == 'r' || s->p[1] == 'w')) {
		s->p++;
		if (!reg_w(s, wide, &src))
			return false;
		if (src != dst)
			return fail(s, b, "neg works in place: expected %c%u = -%c%u", wide ? 'r' : 'w',
				    dst, wide ? 'r' : 'w', dst);
		in.code = (wide ? BPF_ALU64 : BPF_ALU) | BPF_NEG;
		return emit(s, in);
	}
	/* rD = (s8)rS */
	if (accept(s, "(")) {
		int64_t width;

		if (!accept(s, "s"))
			return fail(s, NULL, "expected (s8), (s16) or (s32)");
		if (!int_in(s, 8, 32, "a width", &width) || !expect(s, ")"))
			return false;
		if (width != 8 && width != 16 && width != 32)
			return fail(s, NULL, "expected (s8), (s16) or (s32)");
		if (!reg_w(s, wide, &src))
			return false;
		in.code = (wide ? BPF_ALU64 : BPF_ALU) | BPF_MOV | BPF_X;
		in.src_reg = src;
		in.off = (int16_t)width;
		return emit(s, in);
	}
	/* rD = le16 rD / be32 / bswap64 */
	if (!strncmp(s->p, "le", 2) || !strncmp(s->p, "be", 2) || !strncmp(s->p, "bswap", 5)) {
		uint8_t code;
		int64_t width;

		if (accept(s, "bswap"))
			code = BPF_ALU64 | BPF_END;
		else if (accept(s, "le"))
			code = BPF_ALU | BPF_END | BPF_TO_LE;
		else if (accept(s, "be"))
			code = BPF_ALU | BPF_END | BPF_TO_BE;
		else
			return false;
		if (!int_in(s, 16, 64, "a width (16, 32 or 64)", &width))
			return false;
		if (width != 16 && width != 32 && width != 64)
			return fail(s, NULL, "byte swaps are 16, 32 or 64 bits wide");
		if (!wide)
			return fail(s, s->line, "byte swaps are written on 64-bit registers (r%u)", dst);
		if (!reg_w(s, true, &src))
			return false;
		if (src != dst)
			return fail(s, NULL, "byte swaps work in place: expected r%u", dst);
		in.code = code;
		in.imm = (int32_t)width;
		return emit(s, in);
	}
	if (!strncmp(s->p, "atomic_fetch_", 13) || !strncmp(s->p, "xchg", 4) ||
	    !strncmp(s->p, "cmpxchg", 7))
		return parse_fetch(s, dst, wide);
	if (ends_with_ll(s->p)) {
		if (!wide)
			return fail(s, s->line, "ld_imm64 writes a 64-bit register");
		return parse_lddw(s, dst);
	}
	/* rD = rS / rD = imm */
	in.code = (wide ? BPF_ALU64 : BPF_ALU) | BPF_MOV;
	if (peek_reg(s)) {
		if (!reg(s, &src, &w2))
			return false;
		if (w2 != wide)
			return fail(s, b, "both registers of a move must be %s", wide ? "rN" : "wN");
		in.code |= BPF_X;
		in.src_reg = src;
		return emit(s, in);
	}
	if (!imm32(s, wide, &imm))
		return false;
	in.imm = imm;
	return emit(s, in);
}

/* ".insn code=0x.. dst=.. src=.. off=.. imm=.." */
static bool parse_raw(struct asm_state *s)
{
	struct bpf_insn in = { 0 };

	while (!at_end(s)) {
		char key[8];
		const char *b = s->p;
		int64_t v;

		if (!ident(s, key, sizeof(key)) || !expect(s, "="))
			return s->failed ? false : fail(s, b, "expected code=, dst=, src=, off= or imm=");
		if (!strcmp(key, "code") && int_in(s, 0, 255, "an opcode", &v))
			in.code = (uint8_t)v;
		else if (!strcmp(key, "dst") && int_in(s, 0, 15, "a register number", &v))
			in.dst_reg = (uint8_t)v;
		else if (!strcmp(key, "src") && int_in(s, 0, 15, "a register number", &v))
			in.src_reg = (uint8_t)v;
		else if (!strcmp(key, "off") && int_in(s, INT16_MIN, UINT16_MAX, "an offset", &v))
			in.off = (int16_t)(uint16_t)v;
		else if (!strcmp(key, "imm") && int_in(s, INT32_MIN, UINT32_MAX, "an immediate", &v))
			in.imm = (int32_t)(uint32_t)v;
		else
			return s->failed ? false : fail(s, b, "unknown field '%s'", key);
		accept(s, ",");
	}
	return emit(s, in);
}

static bool parse_insn(struct asm_state *s)
{
	int64_t rel;
	uint8_t r;
	bool wide;

	skip_ws(s);
	if (accept_word(s, "exit"))
		return emit(s, (struct bpf_insn){ .code = BPF_JMP | BPF_EXIT });
	if (accept_word(s, "goto")) {
		if (!target(s, FIX_OFF16, &rel))
			return false;
		return emit(s, (struct bpf_insn){ .code = BPF_JMP | BPF_JA, .off = (int16_t)rel });
	}
	if (accept_word(s, "gotol")) {
		if (!target(s, FIX_IMM32, &rel))
			return false;
		return emit(s, (struct bpf_insn){ .code = BPF_JMP32 | BPF_JA, .imm = (int32_t)rel });
	}
	if (accept_word(s, "callx")) {
		if (!reg(s, &r, &wide))
			return false;
		if (!wide)
			return fail(s, NULL, "callx takes a 64-bit register");
		return emit(s, (struct bpf_insn){ .code = BPF_JMP | BPF_CALL | BPF_X, .dst_reg = r });
	}
	if (accept_word(s, "call"))
		return parse_call(s);
	if (accept_word(s, "if"))
		return parse_if(s);
	if (accept_word(s, "lock"))
		return parse_lock(s);
	if (accept_word(s, ".insn"))
		return parse_raw(s);
	if (accept(s, "*"))
		return parse_store(s);
	if (peek_reg(s))
		return parse_reg_insn(s);
	return fail(s, NULL, "expected an instruction (rN = ..., *(u32 *)(...) = ..., if, goto, "
		    "call, exit, lock, or a label)");
}

/*
 * Copies one line into @buf without its comment and trailing annotation;
 * returns a pointer just past the line.
 */
static const char *cut_line(const char *text, char *buf, size_t len, bool *too_long)
{
	const char *e = strchr(text, '\n');
	size_t n = e ? (size_t)(e - text) : strlen(text);
	char *c;

	*too_long = n >= len;
	if (*too_long)
		n = len - 1;
	memcpy(buf, text, n);
	buf[n] = '\0';
	if ((c = strchr(buf, '\r')))
		*c = '\0';
	if ((c = strchr(buf, ';')))
		*c = '\0';
	for (c = buf; *c; c++) {
		if (*c == '#' && (c == buf || c[-1] == ' ' || c[-1] == '\t')) {
			/* "#" after a space is a comment, except in "[#N]"-free contexts: never */
			*c = '\0';
			break;
		}
	}
	n = strlen(buf);
	while (n && (buf[n - 1] == ' ' || buf[n - 1] == '\t'))
		buf[--n] = '\0';
	/* llvm-objdump's " <sym+0x10>" after a jump */
	if (n && buf[n - 1] == '>' && (c = strrchr(buf, '<')) && c > buf && c[-1] == ' ' &&
	    c[1] != ' ' && c[1] != '=') {
		*c = '\0';
		n = strlen(buf);
		while (n && (buf[n - 1] == ' ' || buf[n - 1] == '\t'))
			buf[--n] = '\0';
	}
	return e ? e + 1 : text + strlen(text);
}

static void free_state(struct asm_state *s)
{
	for (size_t i = 0; i < s->fix_cnt; i++)
		free(s->fix[i].label);
	for (size_t i = 0; i < s->label_cnt; i++)
		free(s->labels[i].name);
	free(s->fix);
	free(s->labels);
}

static bool resolve_fixups(struct asm_state *s)
{
	for (size_t i = 0; i < s->fix_cnt; i++) {
		const struct fixup *f = &s->fix[i];
		const struct label *l = find_label(s, f->label);
		int64_t rel;

		if (!l && f->helper >= 0) {
			s->insns[f->idx].src_reg = 0;
			s->insns[f->idx].imm = (int32_t)f->helper;
			continue;
		}
		if (!l) {
			snprintf(s->err, s->err_len, "line %d, column %d: undefined label '%s'",
				 f->line, f->col, f->label);
			return false;
		}
		rel = (int64_t)l->idx - (int64_t)f->idx - 1;
		if (f->kind == FIX_OFF16 && (rel < INT16_MIN || rel > INT16_MAX)) {
			snprintf(s->err, s->err_len,
				 "line %d, column %d: label '%s' is %" PRId64
				 " instructions away; goto reaches +-32767 (use gotol)",
				 f->line, f->col, f->label, rel);
			return false;
		}
		if (f->kind == FIX_OFF16)
			s->insns[f->idx].off = (int16_t)rel;
		else
			s->insns[f->idx].imm = (int32_t)rel;
	}
	return true;
}

int gpuext_asm(const char *text, const struct gpuext_asm_opts *opts, struct bpf_insn **out,
	       size_t *cnt, char *err, size_t err_len)
{
	struct gpuext_asm_opts o = { .sz = sizeof(o) };
	struct asm_state s = { .opts = &o, .err = err, .err_len = err_len };
	char line[1024];
	char dummy[1];

	if (!err || !err_len) {
		s.err = dummy;
		s.err_len = sizeof(dummy);
	}
	s.err[0] = '\0';
	if (!text || !out || !cnt)
		return GPUEXT_ERR(EINVAL);
	if (opts)
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	*out = NULL;
	*cnt = 0;
	s.line_no = (o.first_line ? o.first_line : 1) - 1;
	while (*text && !s.failed) {
		char name[128];
		bool too_long;
		const char *save;

		text = cut_line(text, line, sizeof(line), &too_long);
		s.line_no++;
		s.line = s.p = line;
		if (too_long) {
			fail(&s, line, "line is longer than %zu characters", sizeof(line) - 1);
			break;
		}
		skip_ws(&s);
		/* llvm-objdump's "   12:\t" index prefix */
		save = s.p;
		while (isdigit((unsigned char)*s.p))
			s.p++;
		if (s.p == save || *s.p != ':')
			s.p = save;
		else
			s.p++;
		/* "label:" */
		save = s.p;
		if (ident(&s, name, sizeof(name)) && accept(&s, ":")) {
			if (!add_label(&s, name, save))
				break;
		} else {
			s.p = save;
		}
		if (s.failed)
			break;
		if (at_end(&s))
			continue;
		if (!parse_insn(&s))
			break;
		if (!at_end(&s)) {
			fail(&s, NULL, "unexpected '%s' after the instruction", s.p);
			break;
		}
	}
	if (!s.failed && !resolve_fixups(&s))
		s.failed = true;
	free_state(&s);
	if (s.failed) {
		free(s.insns);
		return GPUEXT_ERR(EINVAL);
	}
	*out = s.insns;
	*cnt = s.cnt;
	return 0;
}

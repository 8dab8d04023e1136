/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The splicer's scanner (ptx_splice.c says why statements, not a grammar):
 * the PTX one statement at a time into s->st, with comments removed and
 * whitespace runs made one space, the source bytes it spans and its line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_splice_impl.h"

int gx_sp_fail(struct splicer *s, unsigned line, const char *fmt, ...)
{
	va_list ap;
	int n = 0;

	if (s->rc)
		return s->rc;
	if (s->err && s->err_len) {
		n = snprintf(s->err, s->err_len, "line %u: ", line);
		if (n >= 0 && (size_t)n < s->err_len) {
			va_start(ap, fmt);
			vsnprintf(s->err + n, s->err_len - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	s->rc = -EINVAL;
	return s->rc;
}

static void text_put(struct splicer *s, char c)
{
	struct stmt *t = &s->st;

	if (c == ' ' && (!t->len || t->text[t->len - 1] == ' '))
		return;
	if (t->len + 2 > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		char *p = realloc(t->text, cap);

		if (!p) {
			s->out.oom = true;
			return;
		}
		t->text = p;
		t->cap = cap;
	}
	t->text[t->len++] = c;
	t->text[t->len] = '\0';
}

bool gx_sp_is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '$';
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Skips whitespace and comments. false on an unterminated comment. */
bool gx_sp_skip_blank(struct splicer *s)
{
	while (s->pos < s->n) {
		char c = s->src[s->pos];

		if (c == '\n') {
			s->line++;
			s->pos++;
		} else if (is_space(c)) {
			s->pos++;
		} else if (c == '/' && s->pos + 1 < s->n && s->src[s->pos + 1] == '/') {
			while (s->pos < s->n && s->src[s->pos] != '\n')
				s->pos++;
		} else if (c == '/' && s->pos + 1 < s->n && s->src[s->pos + 1] == '*') {
			unsigned start = s->line;

			s->pos += 2;
			while (s->pos + 1 < s->n && !(s->src[s->pos] == '*' && s->src[s->pos + 1] == '/')) {
				if (s->src[s->pos] == '\n')
					s->line++;
				s->pos++;
			}
			if (s->pos + 1 >= s->n) {
				gx_sp_fail(s, start, "unterminated /* comment");
				return false;
			}
			s->pos += 2;
		} else {
			break;
		}
	}
	return true;
}

/*
 * Consumes one character of statement text at s->pos into the cleaned text:
 * a comment becomes a space, a string is copied whole. false on an
 * unterminated string or comment.
 */
bool gx_sp_take_char(struct splicer *s)
{
	char c = s->src[s->pos];

	if (c == '/' && s->pos + 1 < s->n && (s->src[s->pos + 1] == '/' || s->src[s->pos + 1] == '*')) {
		if (!gx_sp_skip_blank(s))
			return false;
		text_put(s, ' ');
		return true;
	}
	if (c == '"') {
		unsigned start = s->line;

		text_put(s, c);
		for (s->pos++; s->pos < s->n && s->src[s->pos] != '"'; s->pos++) {
			if (s->src[s->pos] == '\n')
				return gx_sp_fail(s, start, "unterminated string"), false;
			text_put(s, s->src[s->pos]);
		}
		if (s->pos >= s->n)
			return gx_sp_fail(s, start, "unterminated string"), false;
		text_put(s, '"');
		s->pos++;
		return true;
	}
	if (c == '\n')
		s->line++;
	text_put(s, is_space(c) ? ' ' : c);
	s->pos++;
	return true;
}

/* Reads a balanced { ... } (initializer or vector operand) into the text. */
static bool take_braces(struct splicer *s)
{
	unsigned start = s->line;
	int depth = 0;

	do {
		char c = s->src[s->pos];

		if (c == '{')
			depth++;
		else if (c == '}')
			depth--;
		if (!gx_sp_take_char(s))
			return false;
	} while (depth > 0 && s->pos < s->n);
	if (depth > 0)
		return gx_sp_fail(s, start, "unbalanced '{' in a statement"), false;
	return true;
}

static bool line_directive(const char *p, size_t left)
{
	static const char *const d[] = { ".version", ".target", ".address_size", ".file", ".loc" };

	for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
		size_t n = strlen(d[i]);

		if (left > n && !strncmp(p, d[i], n) && is_space(p[n]))
			return true;
	}
	return false;
}

/*
 * The next statement. @in_body: inside a function, where '{' after some
 * text is a vector operand, not a block.
 */
enum stmt_kind gx_sp_next_stmt(struct splicer *s, bool in_body)
{
	struct stmt *t = &s->st;
	size_t p;

	t->len = 0;
	if (t->text)
		t->text[0] = '\0';
	if (!gx_sp_skip_blank(s))
		return t->kind = ST_EOF;
	t->start = s->pos;
	t->line = s->line;
	if (s->pos >= s->n)
		return t->kind = ST_EOF;
	if (s->src[s->pos] == '{' || s->src[s->pos] == '}') {
		t->kind = s->src[s->pos] == '{' ? ST_OPEN : ST_CLOSE;
		t->end = ++s->pos;
		return t->kind;
	}
	/* label: identifier, optional blanks, ':' (not '::') */
	p = s->pos;
	if (gx_sp_is_ident(s->src[p]) || s->src[p] == '%') {
		while (p < s->n && (gx_sp_is_ident(s->src[p]) || s->src[p] == '%'))
			p++;
		{
			size_t q = p;

			while (q < s->n && (s->src[q] == ' ' || s->src[q] == '\t'))
				q++;
			if (q < s->n && s->src[q] == ':' && (q + 1 >= s->n || s->src[q + 1] != ':')) {
				for (size_t i = s->pos; i < p; i++)
					text_put(s, s->src[i]);
				s->pos = q + 1;
				t->end = s->pos;
				return t->kind = ST_LABEL;
			}
		}
	}
	if (line_directive(s->src + s->pos, s->n - s->pos)) {
		while (s->pos < s->n && s->src[s->pos] != '\n') {
			if (s->src[s->pos] == '/' && s->pos + 1 < s->n &&
			    (s->src[s->pos + 1] == '/' || s->src[s->pos + 1] == '*'))
				break;
			if (!gx_sp_take_char(s))
				return t->kind = ST_EOF;
		}
		t->end = s->pos;
		while (t->len && t->text[t->len - 1] == ' ')
			t->text[--t->len] = '\0';
		return t->kind = ST_LINE;
	}
	while (s->pos < s->n) {
		char c = s->src[s->pos];

		if (c == ';') {
			s->pos++;
			t->end = s->pos;
			while (t->len && t->text[t->len - 1] == ' ')
				t->text[--t->len] = '\0';
			return t->kind = ST_STMT;
		}
		if (c == '}') {
			while (t->len && t->text[t->len - 1] == ' ')
				t->text[--t->len] = '\0';
			gx_sp_fail(s, t->line, "'}' inside a statement (missing ';' after \"%.60s\")", t->text);
			return t->kind = ST_EOF;
		}
		if (c == '{') {
			if (strchr(t->text, '=') || in_body) {
				if (!take_braces(s))
					return t->kind = ST_EOF;
				continue;
			}
			s->pos++;
			t->end = s->pos;
			return t->kind = ST_HEADER;
		}
		if (!gx_sp_take_char(s))
			return t->kind = ST_EOF;
	}
	while (t->len && t->text[t->len - 1] == ' ')
		t->text[--t->len] = '\0';
	gx_sp_fail(s, t->line, "statement \"%.60s\" does not end (no ';')", t->text);
	return t->kind = ST_EOF;
}

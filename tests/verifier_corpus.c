/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verifier corpus reader (format: tests/verifier_corpus.h). Kept free
 * of test-harness code so another test can link it as is.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asm.h"
#include "verifier_corpus.h"

char *vc_read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *text = NULL;
	long sz;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (sz = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		text = malloc((size_t)sz + 1);
		if (text && fread(text, 1, (size_t)sz, f) != (size_t)sz) {
			free(text);
			text = NULL;
		}
		if (text)
			text[sz] = '\0';
	}
	fclose(f);
	return text;
}

enum gpuext_rule vc_rule_by_name(const char *name)
{
	for (int r = GPUEXT_RULE_NONE + 1; r < GPUEXT_RULE_CNT; r++)
		if (!strcmp(gpuext_rule_name((enum gpuext_rule)r), name))
			return (enum gpuext_rule)r;
	return GPUEXT_RULE_NONE;
}

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Copies the next word of *@p into @buf and advances; false if there is none. */
static bool word(const char **p, char *buf, size_t len)
{
	const char *s = skip_ws(*p), *e = s;

	while (*e && *e != ' ' && *e != '\t')
		e++;
	if (e == s || (size_t)(e - s) >= len)
		return false;
	memcpy(buf, s, (size_t)(e - s));
	buf[e - s] = '\0';
	*p = e;
	return true;
}

/* "KEYWORD N" at *@p: reads N and advances. */
static bool keyword_num(const char **p, const char *kw, uint32_t *out)
{
	const char *s = skip_ws(*p);
	size_t n = strlen(kw);
	char *e;
	unsigned long v;

	if (strncmp(s, kw, n) || (s[n] != ' ' && s[n] != '\t'))
		return false;
	s = skip_ws(s + n);
	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoul(s, &e, 0);
	if (errno || v > UINT32_MAX || (*e && *e != ' ' && *e != '\t'))
		return false;
	*out = (uint32_t)v;
	*p = e;
	return true;
}

int vc_parse_expect(const char *s, struct vc_expect *e, char *err, size_t err_len)
{
	char w[64];
	size_t n;

	memset(e, 0, sizeof(*e));
	if (!word(&s, w, sizeof(w)))
		goto bad;
	if (!strcmp(w, "accept")) {
		e->accept = true;
		keyword_num(&s, "ctx", &e->ctx_size);
		if (*skip_ws(s))
			goto bad;
		return 0;
	}
	if (strcmp(w, "reject") || !word(&s, w, sizeof(w)))
		goto bad;
	e->rule = vc_rule_by_name(w);
	if (e->rule == GPUEXT_RULE_NONE) {
		snprintf(err, err_len, "unknown rule '%s' (see GPUEXT_RULES in gpuext/verifier.h)", w);
		return -EINVAL;
	}
	for (bool more = true; more;) {
		more = false;
		if (keyword_num(&s, "at", &e->at))
			more = e->has_at = true;
		if (keyword_num(&s, "ctx", &e->ctx_size))
			more = true;
	}
	s = skip_ws(s);
	n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	if (n >= sizeof(e->msg))
		goto bad;
	memcpy(e->msg, s, n);
	e->msg[n] = '\0';
	return 0;
bad:
	snprintf(err, err_len, "expected 'accept [ctx N]' or 'reject RULE [at N] [ctx N] [text]'");
	return -EINVAL;
}

/* ---- .vf files ---- */

static void case_free(struct vc_case *tc)
{
	free(tc->name);
	free(tc->file);
	free(tc->maps);
	free(tc->asm_text);
}

void vc_corpus_free(struct vc_corpus *c)
{
	for (size_t i = 0; i < c->cnt; i++)
		case_free(&c->cases[i]);
	free(c->cases);
	c->cases = NULL;
	c->cnt = 0;
}

/* "NAME TYPE key=K value=V entries=N [rdonly]" */
static bool parse_map(struct vc_case *tc, const char *p)
{
	struct vc_map m = { 0 }, *n;
	char type[32], rest[32] = "";
	int used = 0;

	if (sscanf(p, "%63s %31s key=%u value=%u entries=%u%n", m.name, type, &m.key_size,
		   &m.value_size, &m.max_entries, &used) != 5)
		return false;
	p += used;
	if (word(&p, rest, sizeof(rest))) {
		if (strcmp(rest, "rdonly") || *skip_ws(p))
			return false;
		m.flags = BPF_F_RDONLY_PROG;
	}
	m.type = isa_map_type_by_name(type);
	if (!m.type)
		return false;
	n = realloc(tc->maps, (tc->map_cnt + 1) * sizeof(*n));
	if (!n)
		return false;
	tc->maps = n;
	tc->maps[tc->map_cnt++] = m;
	return true;
}

/* "TYPE [ctx N]" */
static bool parse_type(struct vc_case *tc, const char *p)
{
	char name[32];
	int t;

	if (!word(&p, name, sizeof(name)) || (t = gpuext_prog_type_by_name(name)) < 0)
		return false;
	tc->type = (enum gpuext_prog_type)t;
	if (keyword_num(&p, "ctx", &tc->expect.ctx_size) && t != GPUEXT_PROG_HOST)
		return false;
	return !*skip_ws(p);
}

static bool append_line(char **text, const char *line)
{
	size_t old = *text ? strlen(*text) : 0, add = strlen(line);
	char *n = realloc(*text, old + add + 2);

	if (!n)
		return false;
	memcpy(n + old, line, add);
	n[old + add] = '\n';
	n[old + add + 1] = '\0';
	*text = n;
	return true;
}

int vc_corpus_parse(struct vc_corpus *c, const char *text, const char *file, char *err,
		    size_t err_len)
{
	struct vc_case *tc = NULL;
	bool in_asm = false;
	int line_no = 0;
	char line[1024], why[160];

	while (*text) {
		const char *e = strchr(text, '\n');
		size_t n = e ? (size_t)(e - text) : strlen(text);
		char *p, *kw;

		line_no++;
		if (n >= sizeof(line)) {
			snprintf(err, err_len, "%s.vf:%d: line too long", file, line_no);
			return -EINVAL;
		}
		memcpy(line, text, n);
		line[n] = '\0';
		text = e ? e + 1 : text + n;
		if ((p = strchr(line, '\r')))
			*p = '\0';
		p = (char *)skip_ws(line);
		if (in_asm) {
			if (!strcmp(p, "end"))
				in_asm = false;
			else if (!append_line(&tc->asm_text, line))
				goto nomem;
			continue;
		}
		if (!*p || *p == '#')
			continue;
		kw = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		if (*p)
			*p++ = '\0';
		p = (char *)skip_ws(p);
		if (!strcmp(kw, "case")) {
			struct vc_case *nc = realloc(c->cases, (c->cnt + 1) * sizeof(*nc));

			if (!nc)
				goto nomem;
			c->cases = nc;
			tc = &c->cases[c->cnt++];
			memset(tc, 0, sizeof(*tc));
			tc->type = GPUEXT_PROG_HOST;
			tc->name = strdup(p);
			tc->file = strdup(file);
			tc->line = line_no;
			if (!tc->name || !tc->file)
				goto nomem;
			if (!*p)
				goto bad;
			continue;
		}
		if (!tc) {
			snprintf(err, err_len, "%s.vf:%d: '%s' before the first 'case'", file, line_no, kw);
			return -EINVAL;
		}
		if (!strcmp(kw, "type")) {
			if (!parse_type(tc, p))
				goto bad;
		} else if (!strcmp(kw, "map")) {
			if (!parse_map(tc, p))
				goto bad;
		} else if (!strcmp(kw, "budget")) {
			char *end;

			tc->budget = strtoull(p, &end, 0);
			if (end == p || *skip_ws(end) || !tc->budget)
				goto bad;
		} else if (!strcmp(kw, "asm")) {
			if (tc->asm_text || *p)
				goto bad;
			in_asm = true;
			tc->asm_line = line_no + 1;
			tc->asm_text = strdup("");
			if (!tc->asm_text)
				goto nomem;
		} else if (!strcmp(kw, "expect")) {
			uint32_t ctx = tc->expect.ctx_size;

			if (tc->has_expect)
				goto bad;
			if (vc_parse_expect(p, &tc->expect, why, sizeof(why))) {
				snprintf(err, err_len, "%s.vf:%d: %s", file, line_no, why);
				return -EINVAL;
			}
			if (!tc->expect.ctx_size)
				tc->expect.ctx_size = ctx;
			tc->has_expect = true;
		} else {
			snprintf(err, err_len, "%s.vf:%d: unknown keyword '%s' (case, type, map, budget, asm, expect)",
				 file, line_no, kw);
			return -EINVAL;
		}
		continue;
bad:
		snprintf(err, err_len, "%s.vf:%d: cannot read this '%s' line (format: "
			 "tests/verifier_corpus.h)", file, line_no, kw);
		return -EINVAL;
	}
	if (in_asm) {
		snprintf(err, err_len, "%s.vf: case '%s' has 'asm' without 'end'", file, tc->name);
		return -EINVAL;
	}
	for (size_t i = 0; i < c->cnt; i++) {
		struct vc_case *k = &c->cases[i];

		if (strcmp(k->file, file))
			continue;
		if (!k->asm_text || !k->has_expect) {
			snprintf(err, err_len, "%s.vf:%d: case '%s' needs 'asm' ... 'end' and 'expect'",
				 file, k->line, k->name);
			return -EINVAL;
		}
		for (size_t j = 0; j < i; j++) {
			if (!strcmp(c->cases[j].name, k->name)) {
				snprintf(err, err_len, "%s.vf:%d: case name '%s' is used twice", file,
					 k->line, k->name);
				return -EINVAL;
			}
		}
	}
	return 0;
nomem:
	snprintf(err, err_len, "out of memory");
	return -ENOMEM;
}

static int parse_vf(void *c, const char *text, const char *file, char *err, size_t err_len)
{
	return vc_corpus_parse(c, text, file, err, err_len);
}

int vc_corpus_load_dir(struct vc_corpus *c, const char *dir, char *err, size_t err_len)
{
	return isa_corpus_each_file(dir, ".vf", parse_vf, c, err, err_len);
}

int vc_env_init(struct vc_env *env, struct gpuext_runtime *rt, const struct vc_case *tc, char *err,
		size_t err_len)
{
	int r;

	memset(env, 0, sizeof(*env));
	env->maps = calloc(tc->map_cnt ? tc->map_cnt : 1, sizeof(*env->maps));
	if (!env->maps) {
		snprintf(err, err_len, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < tc->map_cnt; i++) {
		const struct vc_map *m = &tc->maps[i];
		GPUEXT_OPTS(gpuext_map_def, def, .name = m->name, .type = m->type,
			    .key_size = m->key_size, .value_size = m->value_size,
			    .max_entries = m->max_entries, .map_flags = m->flags);

		r = gpuext_map__create(rt, &def, &env->maps[i]);
		if (r) {
			snprintf(err, err_len, "map '%s': %s", m->name, strerror(-r));
			return r;
		}
		env->map_cnt++;
	}
	GPUEXT_OPTS(gpuext_asm_opts, ao, .rt = rt, .maps = env->maps, .map_cnt = env->map_cnt,
		    .first_line = tc->asm_line);
	return gpuext_asm(tc->asm_text, &ao, &env->insns, &env->insn_cnt, err, err_len);
}

void vc_env_fini(struct vc_env *env)
{
	for (size_t i = 0; i < env->map_cnt; i++)
		gpuext_map__destroy(env->maps[i]);
	free(env->maps);
	free(env->insns);
	memset(env, 0, sizeof(*env));
}

/* ---- C sources ---- */

enum gpuext_prog_type vc_type_for_section(const char *sec)
{
	if (!strncmp(sec, "socket", 6))
		return GPUEXT_PROG_SOCKET_FILTER;
	if (!strncmp(sec, "probe/", 6))
		return GPUEXT_PROG_DEVICE_PROBE;
	if (!strncmp(sec, "struct_ops/", 11))
		return GPUEXT_PROG_MEM_OPS;
	return GPUEXT_PROG_HOST;
}

void vc_csource_free(struct vc_csource *s)
{
	free(s->progs);
	s->progs = NULL;
	s->cnt = 0;
}

/* The function name of a definition line "int name(...)": the identifier before '('. */
static bool func_name(const char *line, char *out, size_t len)
{
	const char *paren = strchr(line, '('), *b;

	if (!paren)
		return false;
	while (paren > line && (paren[-1] == ' ' || paren[-1] == '\t'))
		paren--;
	b = paren;
	while (b > line && (isalnum((unsigned char)b[-1]) || b[-1] == '_'))
		b--;
	if (b == paren || (size_t)(paren - b) >= len)
		return false;
	memcpy(out, b, (size_t)(paren - b));
	out[paren - b] = '\0';
	return true;
}

int vc_csource_scan(struct vc_csource *s, const char *text, const char *file, char *err,
		    size_t err_len)
{
	struct vc_expect pending;
	bool have_pending = false, want_name = false;
	int line_no = 0, pending_line = 0;
	char line[1024], why[160];
	struct vc_cprog *cur = NULL;

	while (*text) {
		const char *e = strchr(text, '\n'), *p, *q;
		size_t n = e ? (size_t)(e - text) : strlen(text);

		line_no++;
		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, text, n);
		line[n] = '\0';
		text = e ? e + 1 : text + n;
		p = skip_ws(line);
		if (!strncmp(p, "/* expect:", 10)) {
			char buf[256];
			const char *end = strstr(p, "*/");

			if (!end || (size_t)(end - p - 10) >= sizeof(buf)) {
				snprintf(err, err_len, "%s:%d: an expectation is one line: /* expect: ... */",
					 file, line_no);
				return -EINVAL;
			}
			memcpy(buf, p + 10, (size_t)(end - p - 10));
			buf[end - p - 10] = '\0';
			if (vc_parse_expect(buf, &pending, why, sizeof(why))) {
				snprintf(err, err_len, "%s:%d: %s", file, line_no, why);
				return -EINVAL;
			}
			have_pending = true;
			pending_line = line_no;
			continue;
		}
		if (want_name) {
			if (func_name(p, cur->name, sizeof(cur->name)))
				want_name = false;
			continue;
		}
		if (strncmp(p, "SEC(\"", 5))
			continue;
		p += 5;
		q = strchr(p, '"');
		if (!q || (size_t)(q - p) >= sizeof(cur->section)) {
			snprintf(err, err_len, "%s:%d: cannot read the SEC line", file, line_no);
			return -EINVAL;
		}
		if (*p == '.') /* .maps, .rodata, ... */
			continue;
		if (!have_pending || pending_line != line_no - 1) {
			snprintf(err, err_len, "%s:%d: program without '/* expect: ... */' on the line "
				 "above its SEC", file, line_no);
			return -EINVAL;
		}
		struct vc_cprog *np = realloc(s->progs, (s->cnt + 1) * sizeof(*np));

		if (!np) {
			snprintf(err, err_len, "out of memory");
			return -ENOMEM;
		}
		s->progs = np;
		cur = &s->progs[s->cnt++];
		memset(cur, 0, sizeof(*cur));
		memcpy(cur->section, p, (size_t)(q - p));
		cur->section[q - p] = '\0';
		cur->type = vc_type_for_section(cur->section);
		cur->line = line_no;
		cur->expect = pending;
		have_pending = false;
		/* "SEC("x") int name(...)" on one line, or the name on the next */
		want_name = !func_name(q + 1, cur->name, sizeof(cur->name));
	}
	if (want_name) {
		snprintf(err, err_len, "%s:%d: no function after the SEC line", file, cur->line);
		return -EINVAL;
	}
	return 0;
}

/* ---- functions the corpus calls ---- */

static uint64_t vc_warp_sum(struct gpuext_exec *ex, uint64_t r1, uint64_t r2, uint64_t r3,
			    uint64_t r4, uint64_t r5)
{
	(void)ex; (void)r2; (void)r3; (void)r4; (void)r5;
	return r1 * 32; /* a warp of identical lanes */
}

static uint64_t vc_clock(struct gpuext_exec *ex, uint64_t r1, uint64_t r2, uint64_t r3,
			 uint64_t r4, uint64_t r5)
{
	(void)ex; (void)r1; (void)r2; (void)r3; (void)r4; (void)r5;
	return 1;
}

int vc_register_funcs(struct gpuext_runtime *rt)
{
	static const struct gpuext_func_proto protos[] = {
		{ GPUEXT_FUNC_HELPER, VC_HELPER_WARP_SUM, "gpuext_warp_sum", vc_warp_sum,
		  GPUEXT_RET_INTEGER, { GPUEXT_ARG_SCALAR },
		  GPUEXT_FN_WARP_COLLECTIVE | GPUEXT_FN_DEVICE_ONLY },
		{ GPUEXT_FUNC_HELPER, VC_HELPER_DEVICE_CLOCK, "gpuext_device_clock", vc_clock,
		  GPUEXT_RET_INTEGER, { GPUEXT_ARG_NONE }, GPUEXT_FN_DEVICE_ONLY },
		{ GPUEXT_FUNC_HELPER, VC_HELPER_HOST_TIME, "gpuext_host_time", vc_clock,
		  GPUEXT_RET_INTEGER, { GPUEXT_ARG_NONE }, GPUEXT_FN_HOST_ONLY },
	};

	for (size_t i = 0; i < sizeof(protos) / sizeof(protos[0]); i++) {
		int r = gpuext_runtime__register_func(rt, &protos[i]);

		if (r < 0)
			return r;
	}
	return 0;
}

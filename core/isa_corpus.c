/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ISA corpus reader (tests/isa/\*.isa): each case's assembly (through
 * gpuext_asm, core/asm.c), its maps, map updates and variables, its input
 * and the result or error it expects; and the runtime environment a case
 * runs in (maps created and filled, input memory). The conformance suites
 * of every backend read their cases through this (asm.h declares it).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asm.h"
#include "internal.h"

static const struct {
	const char *name;
	int err;
} errnames[] = {
	{ "EFAULT", EFAULT }, { "EINVAL", EINVAL }, { "E2BIG", E2BIG }, { "ENOENT", ENOENT },
	{ "EPERM", EPERM }, { "EACCES", EACCES }, { "ENOTSUP", ENOTSUP }, { "ERANGE", ERANGE },
	{ "ELOOP", ELOOP }, { "ENOSPC", ENOSPC }, { "ENOMEM", ENOMEM }, { "ENOEXEC", ENOEXEC },
	{ "EOVERFLOW", EOVERFLOW }, { "EDOM", EDOM },
};

int isa_errno_from_name(const char *name)
{
	for (size_t i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
		if (!strcmp(errnames[i].name, name))
			return errnames[i].err;
	return 0;
}

const char *isa_errno_name(int err)
{
	if (err < 0)
		err = -err;
	for (size_t i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
		if (errnames[i].err == err)
			return errnames[i].name;
	return "E?";
}

/* Appends the hex bytes of @p ("01 02 0a0b") to *buf; false on a bad digit. */
static bool parse_hex(const char *p, uint8_t **buf, size_t *len)
{
	for (;;) {
		int hi, lo;
		uint8_t *n;

		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			return true;
		if (!isxdigit((unsigned char)p[0]) || !isxdigit((unsigned char)p[1]))
			return false;
		hi = isdigit((unsigned char)p[0]) ? p[0] - '0' : tolower((unsigned char)p[0]) - 'a' + 10;
		lo = isdigit((unsigned char)p[1]) ? p[1] - '0' : tolower((unsigned char)p[1]) - 'a' + 10;
		n = realloc(*buf, *len + 1);
		if (!n)
			return false;
		*buf = n;
		(*buf)[(*len)++] = (uint8_t)(hi << 4 | lo);
		p += 2;
	}
}

static void case_free(struct isa_case *tc)
{
	free(tc->name);
	free(tc->family);
	free(tc->input);
	free(tc->maps);
	for (size_t i = 0; i < tc->update_cnt; i++) {
		free(tc->updates[i].key);
		free(tc->updates[i].value);
	}
	free(tc->updates);
	for (size_t i = 0; i < tc->var_cnt; i++)
		free(tc->vars[i].init);
	free(tc->vars);
	free(tc->asm_text);
	free(tc->mem);
	free(tc->error_msg);
}

void isa_corpus_free(struct isa_corpus *c)
{
	for (size_t i = 0; i < c->cnt; i++)
		case_free(&c->cases[i]);
	free(c->cases);
	c->cases = NULL;
	c->cnt = 0;
}

static bool parse_u64_word(const char *p, uint64_t *out)
{
	char *e;
	bool neg = false;

	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '-') {
		neg = true;
		p++;
	}
	if (!isdigit((unsigned char)*p))
		return false;
	errno = 0;
	*out = strtoull(p, &e, 0);
	if (errno)
		return false;
	while (*e == ' ' || *e == '\t')
		e++;
	if (*e)
		return false;
	if (neg)
		*out = (uint64_t)0 - *out;
	return true;
}

uint32_t isa_map_type_by_name(const char *name)
{
	static const struct {
		const char *name;
		uint32_t type;
	} types[] = {
		{ "array", BPF_MAP_TYPE_ARRAY }, { "percpu_array", BPF_MAP_TYPE_PERCPU_ARRAY },
		{ "hash", BPF_MAP_TYPE_HASH },   { "lru_hash", BPF_MAP_TYPE_LRU_HASH },
		{ "ringbuf", BPF_MAP_TYPE_RINGBUF },
	};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(types[i].name, name))
			return types[i].type;
	return 0;
}

/* "map NAME TYPE key=K value=V entries=N" */
static bool parse_map_line(struct isa_case *tc, char *p)
{
	struct isa_case_map m = { 0 }, *n;
	char name[GPUEXT_MAP_NAME_MAX], type[32];
	int used = 0;

	if (sscanf(p, "%63s %31s key=%u value=%u entries=%u%n", name, type, &m.key_size,
		   &m.value_size, &m.max_entries, &used) != 5 || p[used])
		return false;
	m.type = isa_map_type_by_name(type);
	if (!m.type)
		return false;
	memcpy(m.name, name, sizeof(name));
	n = realloc(tc->maps, (tc->map_cnt + 1) * sizeof(*n));
	if (!n)
		return false;
	tc->maps = n;
	tc->maps[tc->map_cnt++] = m;
	return true;
}

/* "update MAP KEYHEX VALUEHEX" (hex without spaces) */
static bool parse_update_line(struct isa_case *tc, char *p)
{
	char name[GPUEXT_MAP_NAME_MAX], key[256], val[1024];
	struct isa_case_update u = { 0 }, *n;
	size_t k;

	if (sscanf(p, "%63s %255s %1023s", name, key, val) != 3)
		return false;
	for (k = 0; k < tc->map_cnt; k++)
		if (!strcmp(tc->maps[k].name, name))
			break;
	if (k == tc->map_cnt)
		return false;
	u.map = k;
	if (!parse_hex(key, &u.key, &u.key_len) || !parse_hex(val, &u.value, &u.value_len) ||
	    u.key_len != tc->maps[k].key_size || u.value_len != tc->maps[k].value_size) {
		free(u.key);
		free(u.value);
		return false;
	}
	n = realloc(tc->updates, (tc->update_cnt + 1) * sizeof(*n));
	if (!n) {
		free(u.key);
		free(u.value);
		return false;
	}
	tc->updates = n;
	tc->updates[tc->update_cnt++] = u;
	return true;
}

/* "var ID SIZE [ro] [HEX]" */
static bool parse_var_line(struct isa_case *tc, char *p)
{
	struct isa_case_var v = { .writable = true }, *n;
	size_t init_len = 0;
	uint8_t *init = NULL;
	char *e;

	v.id = (uint32_t)strtoul(p, &e, 0);
	if (e == p)
		return false;
	p = e;
	v.size = strtoul(p, &e, 0);
	if (e == p || !v.size || v.size > 1 << 20)
		return false;
	p = e;
	while (*p == ' ' || *p == '\t')
		p++;
	if (!strncmp(p, "ro", 2) && (p[2] == ' ' || p[2] == '\0')) {
		v.writable = false;
		p += 2;
	}
	if (!parse_hex(p, &init, &init_len) || init_len > v.size) {
		free(init);
		return false;
	}
	v.init = calloc(1, v.size);
	if (!v.init) {
		free(init);
		return false;
	}
	if (init_len)
		memcpy(v.init, init, init_len);
	free(init);
	n = realloc(tc->vars, (tc->var_cnt + 1) * sizeof(*n));
	if (!n) {
		free(v.init);
		return false;
	}
	tc->vars = n;
	tc->vars[tc->var_cnt++] = v;
	return true;
}

/* Appends @line and a newline to the case's assembly text. */
static bool append_asm(struct isa_case *tc, const char *line)
{
	size_t old = tc->asm_text ? strlen(tc->asm_text) : 0, add = strlen(line);
	char *n = realloc(tc->asm_text, old + add + 2);

	if (!n)
		return false;
	memcpy(n + old, line, add);
	n[old + add] = '\n';
	n[old + add + 1] = '\0';
	tc->asm_text = n;
	return true;
}

int isa_corpus_parse(struct isa_corpus *c, const char *text, const char *family, char *err,
		     size_t err_len)
{
	struct isa_case *tc = NULL;
	bool in_asm = false;
	int line_no = 0;
	char line[1024];

	while (*text) {
		const char *e = strchr(text, '\n');
		size_t n = e ? (size_t)(e - text) : strlen(text);
		char *p, *kw;

		line_no++;
		if (n >= sizeof(line)) {
			snprintf(err, err_len, "%s.isa:%d: line too long", family, line_no);
			return -EINVAL;
		}
		memcpy(line, text, n);
		line[n] = '\0';
		text = e ? e + 1 : text + n;
		if ((p = strchr(line, '\r')))
			*p = '\0';
		p = line;
		while (*p == ' ' || *p == '\t')
			p++;
		if (in_asm) {
			if (!strcmp(p, "end")) {
				in_asm = false;
				continue;
			}
			if (!append_asm(tc, line))
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
		while (*p == ' ' || *p == '\t')
			p++;
		if (!strcmp(kw, "case")) {
			struct isa_case *nc = realloc(c->cases, (c->cnt + 1) * sizeof(*nc));

			if (!nc)
				goto nomem;
			c->cases = nc;
			tc = &c->cases[c->cnt++];
			memset(tc, 0, sizeof(*tc));
			tc->name = strdup(p);
			tc->family = strdup(family);
			tc->line = line_no;
			if (!tc->name || !tc->family)
				goto nomem;
			if (!*p)
				goto bad;
			continue;
		}
		if (!tc) {
			snprintf(err, err_len, "%s.isa:%d: '%s' before the first 'case'", family,
				 line_no, kw);
			return -EINVAL;
		}
		if (!strcmp(kw, "input")) {
			tc->has_input = true;
			if (!parse_hex(p, &tc->input, &tc->input_len))
				goto bad;
		} else if (!strcmp(kw, "mem")) {
			tc->has_mem = true;
			if (!parse_hex(p, &tc->mem, &tc->mem_len))
				goto bad;
		} else if (!strcmp(kw, "map")) {
			if (!parse_map_line(tc, p))
				goto bad;
		} else if (!strcmp(kw, "update")) {
			if (!parse_update_line(tc, p))
				goto bad;
		} else if (!strcmp(kw, "var")) {
			if (!parse_var_line(tc, p))
				goto bad;
		} else if (!strcmp(kw, "asm")) {
			if (tc->asm_text || *p)
				goto bad;
			in_asm = true;
			tc->asm_line = line_no + 1;
			tc->asm_text = strdup("");
			if (!tc->asm_text)
				goto nomem;
		} else if (!strcmp(kw, "result")) {
			tc->has_result = true;
			if (!parse_u64_word(p, &tc->result))
				goto bad;
		} else if (!strcmp(kw, "error")) {
			char name[32];
			int used = 0;

			if (sscanf(p, "%31s%n", name, &used) != 1)
				goto bad;
			if (!strcmp(name, "any")) {
				tc->error_any = true;
			} else {
				tc->error = -isa_errno_from_name(name);
				if (!tc->error)
					goto bad;
			}
			p += used;
			while (*p == ' ' || *p == '\t')
				p++;
			if (*p && !(tc->error_msg = strdup(p)))
				goto nomem;
		} else {
			snprintf(err, err_len,
				 "%s.isa:%d: unknown keyword '%s' (case, input, map, update, var, asm, "
				 "result, mem, error)", family, line_no, kw);
			return -EINVAL;
		}
		continue;
bad:
		snprintf(err, err_len, "%s.isa:%d: cannot read this '%s' line (see the format at the "
			 "top of tests/test_isa.c)", family, line_no, kw);
		return -EINVAL;
	}
	if (in_asm) {
		snprintf(err, err_len, "%s.isa: case '%s' has 'asm' without 'end'", family, tc->name);
		return -EINVAL;
	}
	for (size_t i = 0; i < c->cnt; i++) {
		struct isa_case *k = &c->cases[i];

		if (strcmp(k->family, family))
			continue;
		if (!k->asm_text || (!k->has_result && !k->error && !k->error_any)) {
			snprintf(err, err_len, "%s.isa:%d: case '%s' needs 'asm' ... 'end' and a 'result' "
				 "or an 'error'", family, k->line, k->name);
			return -EINVAL;
		}
	}
	return 0;
nomem:
	snprintf(err, err_len, "out of memory");
	return -ENOMEM;
}

static int name_cmp(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int isa_corpus_each_file(const char *dir, const char *suffix,
			 int (*parse)(void *c, const char *text, const char *stem, char *err,
				      size_t err_len),
			 void *c, char *err, size_t err_len)
{
	size_t sl = strlen(suffix);
	struct dirent **ents;
	int n, ret = 0, files = 0;

	n = scandir(dir, &ents, NULL, name_cmp);
	if (n < 0) {
		ret = -errno;
		snprintf(err, err_len, "cannot read %s: %s", dir, strerror(errno));
		return ret;
	}
	for (int i = 0; i < n; i++) {
		const char *nm = ents[i]->d_name;
		size_t len = strlen(nm);
		char path[4096], stem[256], *text = NULL;
		FILE *f;
		long sz;

		if (ret || len <= sl || strcmp(nm + len - sl, suffix) || len - sl >= sizeof(stem))
			goto next;
		snprintf(path, sizeof(path), "%s/%s", dir, nm);
		memcpy(stem, nm, len - sl);
		stem[len - sl] = '\0';
		f = fopen(path, "rb");
		if (!f) {
			ret = -errno;
			snprintf(err, err_len, "cannot open %s: %s", path, strerror(errno));
			goto next;
		}
		fseek(f, 0, SEEK_END);
		sz = ftell(f);
		fseek(f, 0, SEEK_SET);
		text = sz >= 0 ? malloc((size_t)sz + 1) : NULL;
		if (text && fread(text, 1, (size_t)sz, f) == (size_t)sz) {
			text[sz] = '\0';
			ret = parse(c, text, stem, err, err_len);
			files++;
		} else {
			snprintf(err, err_len, "cannot read %s", path);
			ret = -EIO;
		}
		free(text);
		fclose(f);
next:
		free(ents[i]);
	}
	free(ents);
	if (!ret && !files) {
		snprintf(err, err_len, "no %s files in %s", suffix, dir);
		ret = -ENOENT;
	}
	return ret;
}

static int parse_isa(void *c, const char *text, const char *family, char *err, size_t err_len)
{
	return isa_corpus_parse(c, text, family, err, err_len);
}

int isa_corpus_load_dir(struct isa_corpus *c, const char *dir, char *err, size_t err_len)
{
	return isa_corpus_each_file(dir, ".isa", parse_isa, c, err, err_len);
}

int isa_case_env_init(struct isa_case_env *env, struct gpuext_runtime *rt,
		      const struct isa_case *tc, char *err, size_t err_len)
{
	int r;

	memset(env, 0, sizeof(*env));
	env->maps = calloc(tc->map_cnt ? tc->map_cnt : 1, sizeof(*env->maps));
	env->var_bufs = calloc(tc->var_cnt ? tc->var_cnt : 1, sizeof(*env->var_bufs));
	if (!env->maps || !env->var_bufs)
		goto nomem;
	for (size_t i = 0; i < tc->map_cnt; i++) {
		GPUEXT_OPTS(gpuext_map_def, def, .name = tc->maps[i].name, .type = tc->maps[i].type,
			    .key_size = tc->maps[i].key_size, .value_size = tc->maps[i].value_size,
			    .max_entries = tc->maps[i].max_entries);

		r = gpuext_map__create(rt, &def, &env->maps[i]);
		if (r) {
			snprintf(err, err_len, "map '%s': %s", tc->maps[i].name, strerror(-r));
			return r;
		}
		env->map_cnt++;
	}
	for (size_t i = 0; i < tc->update_cnt; i++) {
		const struct isa_case_update *u = &tc->updates[i];

		r = gpuext_map__update(env->maps[u->map], u->key, u->value, 0);
		if (r) {
			snprintf(err, err_len, "update of map '%s': %s", tc->maps[u->map].name,
				 strerror(-r));
			return r;
		}
	}
	for (size_t i = 0; i < tc->var_cnt; i++) {
		env->var_bufs[i] = malloc(tc->vars[i].size);
		if (!env->var_bufs[i])
			goto nomem;
		env->var_cnt++;
		memcpy(env->var_bufs[i], tc->vars[i].init, tc->vars[i].size);
		r = gpuext_runtime__register_var(rt, tc->vars[i].id, env->var_bufs[i],
						 tc->vars[i].size, tc->vars[i].writable);
		if (r) {
			snprintf(err, err_len, "var %u: %s", tc->vars[i].id, strerror(-r));
			return r;
		}
	}
	if (tc->has_input) {
		env->mem = malloc(tc->input_len ? tc->input_len : 1);
		if (!env->mem)
			goto nomem;
		memcpy(env->mem, tc->input, tc->input_len);
		env->mem_len = tc->input_len;
	}
	{
		GPUEXT_OPTS(gpuext_asm_opts, ao, .rt = rt, .maps = env->maps, .map_cnt = env->map_cnt,
			    .first_line = tc->asm_line);

		r = gpuext_asm(tc->asm_text, &ao, &env->insns, &env->insn_cnt, err, err_len);
		if (r)
			return r;
	}
	return 0;
nomem:
	snprintf(err, err_len, "out of memory");
	return -ENOMEM;
}

void isa_case_env_fini(struct isa_case_env *env)
{
	for (size_t i = 0; i < env->map_cnt; i++)
		gpuext_map__destroy(env->maps[i]);
	free(env->maps);
	for (size_t i = 0; i < env->var_cnt; i++)
		free(env->var_bufs[i]);
	free(env->var_bufs);
	free(env->insns);
	free(env->mem);
	memset(env, 0, sizeof(*env));
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The runtime object: logging, the helper/kfunc registry, the map table and
 * registered variables. Everything else in libgpuext hangs off one of these.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* kfunc ids are ours to hand out; start high so they never look like helper ids. */
#define GPUEXT_KFUNC_ID_BASE 0x10000

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t gpuext_runtime_prandom(struct gpuext_runtime *rt)
{
	return splitmix64(&rt->prandom_state);
}

int gpuext_runtime__new(const struct gpuext_runtime_opts *opts, struct gpuext_runtime **out)
{
	struct gpuext_runtime *rt;
	int err;

	if (!out)
		return GPUEXT_ERR(EINVAL);
	*out = NULL;
	if (opts && opts->sz < sizeof(size_t))
		return GPUEXT_ERR(EINVAL);
	rt = calloc(1, sizeof(*rt));
	if (!rt)
		return GPUEXT_ERR(ENOMEM);
	if (opts) {
		/* Only read the fields the caller's struct has. */
		struct gpuext_runtime_opts o = { 0 };

		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
		rt->print = o.print;
		rt->print_user = o.print_user;
		rt->publish_maps = o.publish_maps;
		rt->nr_cpu_slots = o.nr_cpu_slots;
		rt->prandom_state = o.prandom_seed;
	}
	if (!rt->nr_cpu_slots)
		rt->nr_cpu_slots = 1;
	if (!rt->prandom_state) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		rt->prandom_state = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^
				    (uint64_t)getpid();
	}
	rt->next_kfunc_id = GPUEXT_KFUNC_ID_BASE;
	rt->next_map_id = 1;
	err = gpuext_register_std_helpers(rt);
	if (!err)
		err = gpuext_declare_gpu_kfuncs(rt);

	if (err) {
		gpuext_runtime__free(rt);
		return GPUEXT_ERR(-err);
	}
	*out = rt;
	return 0;
}

void gpuext_runtime__free(struct gpuext_runtime *rt)
{
	if (!rt)
		return;
	for (size_t i = 0; i < rt->map_slots; i++) {
		if (rt->maps[i]) {
			gpuext_log(rt, GPUEXT_LOG_DEBUG,
				   "runtime freed with map '%s' (id %zu) still alive; destroying it",
				   gpuext_map__name(rt->maps[i]), i + 1);
			gpuext_map__destroy(rt->maps[i]);
		}
	}
	free(rt->maps);
	free(rt->funcs);
	free(rt->vars);
	free(rt);
}

uint32_t gpuext_runtime__nr_cpu_slots(const struct gpuext_runtime *rt)
{
	return rt->nr_cpu_slots;
}

void gpuext_vlog(const struct gpuext_runtime *rt, enum gpuext_log_level level,
		 const char *fmt, va_list ap)
{
	char msg[1024];
	int n;

	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n < 0)
		return;
	/* One message, no trailing newline: strip any the caller added. */
	while (n > 0 && (size_t)n < sizeof(msg) && msg[n - 1] == '\n')
		msg[--n] = '\0';
	if (rt && rt->print) {
		rt->print(level, msg, rt->print_user);
		return;
	}
	if (level == GPUEXT_LOG_WARN)
		fprintf(stderr, "gpuext: %s\n", msg);
}

void gpuext_log(const struct gpuext_runtime *rt, enum gpuext_log_level level,
		const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	gpuext_vlog(rt, level, fmt, ap);
	va_end(ap);
}

/* ---- helper / kfunc registry ---- */

int gpuext_runtime__register_func(struct gpuext_runtime *rt, const struct gpuext_func_proto *proto)
{
	struct gpuext_func_proto p;

	if (!rt || !proto || !proto->name || !proto->name[0])
		return GPUEXT_ERR(EINVAL);
	if (proto->kind != GPUEXT_FUNC_HELPER && proto->kind != GPUEXT_FUNC_KFUNC)
		return GPUEXT_ERR(EINVAL);
	p = *proto;
	if (p.kind == GPUEXT_FUNC_HELPER && p.id == 0) {
		gpuext_log(rt, GPUEXT_LOG_WARN, "helper '%s': helper ids start at 1", p.name);
		return GPUEXT_ERR(EINVAL);
	}
	if (p.kind == GPUEXT_FUNC_KFUNC && p.id == 0)
		p.id = rt->next_kfunc_id++;
	for (size_t i = 0; i < rt->func_cnt; i++) {
		const struct gpuext_func_proto *q = &rt->funcs[i];

		if (q->kind != p.kind)
			continue;
		if (q->id == p.id || strcmp(q->name, p.name) == 0) {
			gpuext_log(rt, GPUEXT_LOG_WARN,
				   "%s '%s' (id %u) is already registered as '%s' (id %u)",
				   p.kind == GPUEXT_FUNC_KFUNC ? "kfunc" : "helper", p.name,
				   p.id, q->name, q->id);
			return GPUEXT_ERR(EEXIST);
		}
	}
	if (rt->func_cnt == rt->func_cap) {
		size_t cap = rt->func_cap ? rt->func_cap * 2 : 32;
		struct gpuext_func_proto *f = realloc(rt->funcs, cap * sizeof(*f));

		if (!f)
			return GPUEXT_ERR(ENOMEM);
		rt->funcs = f;
		rt->func_cap = cap;
	}
	rt->funcs[rt->func_cnt++] = p;
	return (int)p.id;
}

int gpuext_runtime__set_func_impl(struct gpuext_runtime *rt, enum gpuext_func_kind kind,
				  const char *name, gpuext_func_fn fn)
{
	for (size_t i = 0; i < rt->func_cnt; i++) {
		if (rt->funcs[i].kind == kind && strcmp(rt->funcs[i].name, name) == 0) {
			rt->funcs[i].fn = fn;
			return 0;
		}
	}
	gpuext_log(rt, GPUEXT_LOG_WARN, "%s '%s' is not declared in this runtime",
		   kind == GPUEXT_FUNC_KFUNC ? "kfunc" : "helper", name);
	return GPUEXT_ERR(ENOENT);
}

const struct gpuext_func_proto *gpuext_runtime__find_func(const struct gpuext_runtime *rt,
							  enum gpuext_func_kind kind, uint32_t id)
{
	for (size_t i = 0; i < rt->func_cnt; i++)
		if (rt->funcs[i].kind == kind && rt->funcs[i].id == id)
			return &rt->funcs[i];
	return NULL;
}

const struct gpuext_func_proto *
gpuext_runtime__find_func_by_name(const struct gpuext_runtime *rt, enum gpuext_func_kind kind,
				  const char *name)
{
	for (size_t i = 0; i < rt->func_cnt; i++)
		if (rt->funcs[i].kind == kind && strcmp(rt->funcs[i].name, name) == 0)
			return &rt->funcs[i];
	return NULL;
}

const struct gpuext_func_proto *gpuext_runtime__func_at(const struct gpuext_runtime *rt,
							size_t idx)
{
	return idx < rt->func_cnt ? &rt->funcs[idx] : NULL;
}

/* ---- variables for ld_imm64 src=3 ---- */

int gpuext_runtime__register_var(struct gpuext_runtime *rt, uint32_t id, void *addr,
				 size_t size, bool writable)
{
	struct gpuext_var *v;

	if (!rt || !addr || !size)
		return GPUEXT_ERR(EINVAL);
	for (size_t i = 0; i < rt->var_cnt; i++) {
		if (rt->vars[i].id == id) {
			gpuext_log(rt, GPUEXT_LOG_WARN, "variable id %u is already registered", id);
			return GPUEXT_ERR(EEXIST);
		}
	}
	v = realloc(rt->vars, (rt->var_cnt + 1) * sizeof(*v));
	if (!v)
		return GPUEXT_ERR(ENOMEM);
	rt->vars = v;
	rt->vars[rt->var_cnt++] = (struct gpuext_var){ id, addr, size, writable };
	return 0;
}

/* ---- map table ---- */

int gpuext_runtime_add_map(struct gpuext_runtime *rt, struct gpuext_map *map, uint32_t *id)
{
	uint32_t new_id = rt->next_map_id;

	if (new_id > rt->map_slots) {
		size_t slots = rt->map_slots ? rt->map_slots * 2 : 16;
		struct gpuext_map **m = realloc(rt->maps, slots * sizeof(*m));

		if (!m)
			return GPUEXT_ERR(ENOMEM);
		memset(m + rt->map_slots, 0, (slots - rt->map_slots) * sizeof(*m));
		rt->maps = m;
		rt->map_slots = slots;
	}
	rt->maps[new_id - 1] = map;
	rt->next_map_id++;
	*id = new_id;
	return 0;
}

void gpuext_runtime_remove_map(struct gpuext_runtime *rt, uint32_t id)
{
	if (id && id <= rt->map_slots)
		rt->maps[id - 1] = NULL;
}

struct gpuext_map *gpuext_runtime__map_by_id(const struct gpuext_runtime *rt, uint32_t id)
{
	if (!rt || !id || id > rt->map_slots)
		return NULL;
	return rt->maps[id - 1];
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scenario runner: parses .scn files (format in scenario.h) and runs them
 * on a backend, feeding driver events through the backend's entry points and
 * checking expectations against the hal event stream (hal/hal.h) and, where
 * the backend can show them, its lists.
 *
 * A backend plugs in as a struct scn_driver: how to open a device and feed it
 * memory and task events. Everything else (policies, attach, events) goes
 * through the backend's struct gpuext_hal_ops, so a kernel adapter only adds
 * a driver table here.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpuext/gpuext.h"
#include "gpuext/policy.h"
#include "scenario.h"
#include "../hal/hal.h"
#include "../hal/sim/sim_mem.h"
#include "../hal/sim/sim_sched.h"

/* ------------------------------------------------------------------ */
/* Parsed scenarios                                                    */
/* ------------------------------------------------------------------ */

struct scn_line {
	unsigned no;
	char *text;		/* comment stripped, trimmed */
};

struct scn_scenario {
	char *name;		/* file name, for messages */
	char *title;
	char **variants;
	size_t variant_cnt;
	struct scn_line *lines;
	size_t line_cnt;
};

#define MAX_TOKENS 32
#define MAX_TASKS 256
#define MAX_LOG 16

/* ------------------------------------------------------------------ */
/* One run of one variant                                              */
/* ------------------------------------------------------------------ */

struct scn_event {
	struct gpuext_hal_event ev;	/* detail points into detail_buf or is NULL */
	char *detail;
	unsigned line;			/* the command that caused it */
};

struct scn_task {
	uint64_t id;
	uint32_t tgid;
	int64_t timeslice_us, level;
	int bind;			/* 0 = not bound yet, 1 = bound, -1 = refused */
	bool live;
};

struct scn_run;

/* How a backend is fed. Functions a backend lacks are NULL (-ENOSYS). */
struct scn_driver {
	const char *backend;
	/* @config: the `gpu` line's keys, comma-separated, capacity=N as given. */
	int (*open)(struct scn_run *r, uint64_t capacity, const char *config);
	void (*close)(struct scn_run *r);
	int (*add_range)(struct scn_run *r, uint32_t tgid, uint64_t va, uint64_t size);
	int (*access)(struct scn_run *r, uint32_t tgid, uint64_t va, bool write);
	int (*flush)(struct scn_run *r);
	/* 1 / 0, or -errno. */
	int (*resident)(struct scn_run *r, uint64_t block);
	/* The used list, head to tail; -ENOTSUP where the backend cannot show it. */
	int (*used_list)(struct scn_run *r, uint64_t *ids, size_t cap, size_t *n);
	int (*task_create)(struct scn_run *r, uint64_t id, uint32_t tgid, const char *comm);
	int (*task_bind)(struct scn_run *r, uint64_t id);	/* -EPERM: refused */
	int (*task_destroy)(struct scn_run *r, uint64_t id);
};

struct scn_run {
	const struct scn_scenario *s;
	const struct scn_run_opts *opts;
	struct scn_report *rep;
	const char *variant;
	bool dry;			/* parse-time check: no side effects */
	unsigned line;			/* current line number */
	char err[512];			/* a syntax error (dry) */

	const struct scn_driver *drv;
	const struct gpuext_hal_ops *hal;
	struct gpuext_runtime *rt;
	struct gpuext_hal_device *dev;
	struct sim_mem *mem;
	bool opened;
	struct gpuext_object *obj[2];	/* by enum gpuext_policy_kind */
	struct gpuext_policy *pol[2];

	struct scn_event *events;
	size_t ev_cnt, ev_cap;
	size_t cur_evict, cur_prefetch, cur_hook, cur_default;

	struct scn_task tasks[MAX_TASKS];
	size_t task_cnt;

	char log[MAX_LOG][256];		/* the runtime's last messages */
	unsigned log_cnt;
};

/* ---- small parsers ---- */

static bool parse_u64(const char *s, uint64_t *out)
{
	char *end;
	uint64_t v, mul = 1;

	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return false;
	switch (*end) {
	case 'K': case 'k': mul = 1ULL << 10; end++; break;
	case 'M': case 'm': mul = 1ULL << 20; end++; break;
	case 'G': case 'g': mul = 1ULL << 30; end++; break;
	}
	if (*end)
		return false;
	*out = v * mul;
	return true;
}

/* BLOCK:PAGE or a byte address. */
static bool parse_addr(const char *s, uint64_t *va)
{
	const char *colon = strchr(s, ':');
	uint64_t b, p;

	if (!colon)
		return parse_u64(s, va);
	{
		char blk[32];
		size_t n = (size_t)(colon - s);

		if (n == 0 || n >= sizeof(blk))
			return false;
		memcpy(blk, s, n);
		blk[n] = '\0';
		if (!parse_u64(blk, &b) || !parse_u64(colon + 1, &p) || p >= GPU_PAGES_PER_BLOCK)
			return false;
	}
	*va = (b << GPU_BLOCK_SHIFT) + (p << GPU_PAGE_SHIFT);
	return true;
}

/* "key=value" → value if @tok starts with key=. */
static const char *kv(const char *tok, const char *key)
{
	size_t n = strlen(key);

	return !strncmp(tok, key, n) && tok[n] == '=' ? tok + n + 1 : NULL;
}

static int syntax(struct scn_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int syntax(struct scn_run *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static void fail(struct scn_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct scn_run *r, const char *fmt, ...)
{
	struct scn_report *rep = r->rep;
	va_list ap;

	if (rep->failure_cnt < SCN_MAX_FAILURES) {
		struct scn_failure *f = &rep->failures[rep->failure_cnt];

		f->line = r->line;
		snprintf(f->variant, sizeof(f->variant), "%s", r->variant);
		va_start(ap, fmt);
		vsnprintf(f->text, sizeof(f->text), fmt, ap);
		va_end(ap);
	}
	rep->failure_cnt++;
	if (r->opts->trace) {
		fprintf(r->opts->trace, "  FAIL line %u\n", r->line);
	}
}

/* Appends to a bounded string. */
static void cat(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cat(char *buf, size_t len, const char *fmt, ...)
{
	size_t n = strlen(buf);
	va_list ap;

	if (n + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
}

/* ---- hooks by name ---- */

struct hook_name {
	const char *name, *alias;
	enum gpuext_policy_kind kind;
	unsigned hook;
};

static const struct hook_name hook_names[] = {
	{ "gpu_block_activate", "activate", GPUEXT_POLICY_MEM, GPUEXT_HOOK_BLOCK_ACTIVATE },
	{ "gpu_block_access", "access", GPUEXT_POLICY_MEM, GPUEXT_HOOK_BLOCK_ACCESS },
	{ "gpu_evict_prepare", "evict_prepare", GPUEXT_POLICY_MEM, GPUEXT_HOOK_EVICT_PREPARE },
	{ "gpu_page_prefetch", "prefetch", GPUEXT_POLICY_MEM, GPUEXT_HOOK_PAGE_PREFETCH },
	{ "task_init", "init", GPUEXT_POLICY_SCHED, GPUEXT_HOOK_TASK_INIT },
	{ "task_bind", "bind", GPUEXT_POLICY_SCHED, GPUEXT_HOOK_TASK_BIND },
	{ "task_destroy", "destroy", GPUEXT_POLICY_SCHED, GPUEXT_HOOK_TASK_DESTROY },
};

static const struct hook_name *find_hook(const char *name)
{
	for (size_t i = 0; i < sizeof(hook_names) / sizeof(hook_names[0]); i++)
		if (!strcmp(name, hook_names[i].name) || !strcmp(name, hook_names[i].alias))
			return &hook_names[i];
	return NULL;
}

static const char *hook_str(enum gpuext_policy_kind kind, unsigned hook)
{
	for (size_t i = 0; i < sizeof(hook_names) / sizeof(hook_names[0]); i++)
		if (hook_names[i].kind == kind && hook_names[i].hook == hook)
			return hook_names[i].name;
	return "?";
}

static bool parse_level(const char *s, int64_t *out)
{
	uint64_t v;

	if (!strcmp(s, "low"))
		*out = GPU_LEVEL_LOW;
	else if (!strcmp(s, "medium"))
		*out = GPU_LEVEL_MEDIUM;
	else if (!strcmp(s, "high"))
		*out = GPU_LEVEL_HIGH;
	else if (parse_u64(s, &v))
		*out = (int64_t)v;
	else
		return false;
	return true;
}

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

static struct scn_task *task_find(struct scn_run *r, uint64_t id)
{
	for (size_t i = 0; i < r->task_cnt; i++)
		if (r->tasks[i].id == id)
			return &r->tasks[i];
	return NULL;
}

/*
 * The lowered form of an event (scn_run_opts.lower): the decisions a kernel
 * backend must reproduce, in the vocabulary gpuext.ko's event log uses
 * (core/kernel/gpuext_kmod.h). Kfunc calls are not part of it: a kernel
 * does not log them, and the decisions they lead to are.
 */
static void lower_event(FILE *f, const struct gpuext_hal_event *ev)
{
	switch (ev->kind) {
	case GPUEXT_EV_HOOK:
		fprintf(f, "ev hook %s id=%llu ret=%lld\n", hook_str(ev->policy_kind, ev->hook),
			(unsigned long long)ev->id, (long long)ev->ret);
		break;
	case GPUEXT_EV_DEFAULT:
		fprintf(f, "ev default %s id=%llu\n", hook_str(ev->policy_kind, ev->hook),
			(unsigned long long)ev->id);
		break;
	case GPUEXT_EV_EVICT:
		fprintf(f, "ev evict %llu\n", (unsigned long long)ev->id);
		break;
	case GPUEXT_EV_PREFETCH:
		fprintf(f, "ev prefetch %llu %llu-%llu\n", (unsigned long long)ev->id,
			(unsigned long long)ev->a, (unsigned long long)ev->b);
		break;
	case GPUEXT_EV_EJECT:
		fprintf(f, "ev ejected\n");
		break;
	case GPUEXT_EV_REJECT_BIND:
		fprintf(f, "ev bind-rejected %llu\n", (unsigned long long)ev->id);
		break;
	case GPUEXT_EV_ATTR:
		fprintf(f, "ev attr task=%llu %s=%llu\n", (unsigned long long)ev->id,
			ev->a == GPU_ATTR_TIMESLICE_US ? "timeslice_us" : "level",
			(unsigned long long)ev->b);
		break;
	case GPUEXT_EV_KFUNC:
		break;
	}
}

static void on_event(const struct gpuext_hal_event *ev, void *user)
{
	struct scn_run *r = user;
	struct scn_event *e;

	if (r->ev_cnt == r->ev_cap) {
		size_t cap = r->ev_cap ? r->ev_cap * 2 : 256;
		struct scn_event *n = realloc(r->events, cap * sizeof(*n));

		if (!n)
			return;
		r->events = n;
		r->ev_cap = cap;
	}
	e = &r->events[r->ev_cnt++];
	e->ev = *ev;
	e->detail = ev->detail ? strdup(ev->detail) : NULL;
	e->ev.detail = e->detail;
	e->line = r->line;
	if (ev->kind == GPUEXT_EV_ATTR || ev->kind == GPUEXT_EV_REJECT_BIND) {
		struct scn_task *t = task_find(r, ev->id);

		if (t && ev->kind == GPUEXT_EV_REJECT_BIND)
			t->bind = -1;
		else if (t && ev->a == GPU_ATTR_TIMESLICE_US)
			t->timeslice_us = (int64_t)ev->b;
		else if (t && ev->a == GPU_ATTR_LEVEL)
			t->level = (int64_t)ev->b;
	}
	if (r->opts->lower)
		lower_event(r->opts->lower, ev);
	if (r->opts->trace) {
		const char *h = ev->kind <= GPUEXT_EV_DEFAULT ? hook_str(ev->policy_kind, ev->hook) : "";
		static const char *const kinds[] = { "hook", "default", "kfunc", "evict",
						     "prefetch", "eject", "reject-bind", "attr" };

		fprintf(r->opts->trace, "    ev %-11s %s id=%llu a=%llu b=%llu ret=%lld%s%s\n",
			ev->kind <= GPUEXT_EV_ATTR ? kinds[ev->kind] : "?", h,
			(unsigned long long)ev->id, (unsigned long long)ev->a,
			(unsigned long long)ev->b, (long long)ev->ret, ev->detail ? " " : "",
			ev->detail ? ev->detail : "");
	}
}

static void on_log(enum gpuext_log_level level, const char *msg, void *user)
{
	struct scn_run *r = user;

	if (level > GPUEXT_LOG_INFO)
		return;
	snprintf(r->log[r->log_cnt % MAX_LOG], sizeof(r->log[0]), "%s", msg);
	r->log_cnt++;
	if (r->opts->trace)
		fprintf(r->opts->trace, "    log %s\n", msg);
}

/* The runtime's last warning, for "what happened instead". */
static const char *last_log(const struct scn_run *r)
{
	return r->log_cnt ? r->log[(r->log_cnt - 1) % MAX_LOG] : "";
}

/* ------------------------------------------------------------------ */
/* The simulator's driver table                                        */
/* ------------------------------------------------------------------ */

static int sim_open(struct scn_run *r, uint64_t capacity, const char *config)
{
	char cfg[512];
	int err;

	snprintf(cfg, sizeof(cfg), "blocks=%llu%s%s", (unsigned long long)capacity,
		 *config ? "," : "", config);
	err = r->hal->open(r->rt, cfg, &r->dev);
	if (err)
		return err;
	if (!(r->mem = gpuext_hal_sim__mem(r->dev)))
		return -ENOSYS;
	return 0;
}

static int sim_add_range(struct scn_run *r, uint32_t tgid, uint64_t va, uint64_t size)
{
	struct sim_range rg = { .va = va, .size = size, .tgid = tgid };

	return sim_mem__add_range(r->mem, &rg);
}

static int sim_access(struct scn_run *r, uint32_t tgid, uint64_t va, bool write)
{
	struct sim_access a = { .va = va, .tgid = tgid, .is_write = write };

	sim_mem__access(r->mem, &a);
	return 0;
}

static int sim_flush(struct scn_run *r)
{
	sim_mem__flush(r->mem);
	return 0;
}

static int sim_used_list(struct scn_run *r, uint64_t *ids, size_t cap, size_t *n)
{
	*n = sim_mem__list_ids(r->mem, SIM_LIST_USED, ids, cap);
	return 0;
}

static int sim_resident(struct scn_run *r, uint64_t block)
{
	uint64_t ids[4096];
	enum sim_mem_list lists[] = { SIM_LIST_USED, SIM_LIST_UNUSED };

	for (size_t l = 0; l < 2; l++) {
		size_t n = sim_mem__list_ids(r->mem, lists[l], ids, sizeof(ids) / sizeof(ids[0]));

		for (size_t i = 0; i < n && i < sizeof(ids) / sizeof(ids[0]); i++)
			if (ids[i] == block)
				return 1;
	}
	return 0;
}

static int sim_task_create(struct scn_run *r, uint64_t id, uint32_t tgid, const char *comm)
{
	return sim_sched_dev__task_create(gpuext_hal_sim__sched(r->dev), id, tgid, comm);
}

static int sim_task_bind(struct scn_run *r, uint64_t id)
{
	return sim_sched_dev__task_bind(gpuext_hal_sim__sched(r->dev), id);
}

static int sim_task_destroy(struct scn_run *r, uint64_t id)
{
	return sim_sched_dev__task_destroy(gpuext_hal_sim__sched(r->dev), id);
}

static const struct scn_driver drivers[] = {
	{
		.backend = "sim",
		.open = sim_open,
		.add_range = sim_add_range,
		.access = sim_access,
		.flush = sim_flush,
		.resident = sim_resident,
		.used_list = sim_used_list,
		.task_create = sim_task_create,
		.task_bind = sim_task_bind,
		.task_destroy = sim_task_destroy,
	},
};

static const struct scn_driver *find_driver(const char *backend)
{
	for (size_t i = 0; i < sizeof(drivers) / sizeof(drivers[0]); i++)
		if (!strcmp(drivers[i].backend, backend))
			return &drivers[i];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Commands                                                            */
/* ------------------------------------------------------------------ */

/* A backend refused a command: a failure, with the runtime's last word. */
static int refused(struct scn_run *r, const char *what, int err)
{
	if (err == -ENOSYS)
		return -ENOSYS;
	fail(r, "%s: the backend refused it: %s%s%s", what, strerror(-err),
	     r->log_cnt ? "; log: " : "", last_log(r));
	return 0;
}

static bool need_device(struct scn_run *r)
{
	if (r->dry)
		return true;
	if (!r->opened)
		fail(r, "no `gpu` line before this event");
	return r->opened;
}

static int do_flush(struct scn_run *r)
{
	if (r->dry || !r->opened || !r->drv->flush)
		return 0;
	return r->drv->flush(r);
}

static void close_policy(struct scn_run *r, enum gpuext_policy_kind k)
{
	if (r->pol[k] && r->dev)
		r->hal->detach(r->dev, k);
	gpuext_policy__close(r->pol[k]);
	gpuext_object__close(r->obj[k]);
	r->pol[k] = NULL;
	r->obj[k] = NULL;
}

static int cmd_gpu(struct scn_run *r, char **tok, int n)
{
	char config[384] = "";
	uint64_t capacity = 0;

	for (int i = 1; i < n; i++) {
		const char *v = kv(tok[i], "capacity");

		if (v) {
			if (!parse_u64(v, &capacity) || !capacity)
				return syntax(r, "capacity=%s: want a number of blocks > 0", v);
		} else if (strchr(tok[i], '=')) {
			cat(config, sizeof(config), "%s%s", *config ? "," : "", tok[i]);
		} else {
			return syntax(r, "gpu: '%s' is not key=value", tok[i]);
		}
	}
	if (!capacity)
		return syntax(r, "gpu: capacity=N (blocks) is required");
	if (r->dry)
		return 0;
	if (r->opened)
		return fail(r, "a second `gpu` line"), 0;
	if (!r->drv->open)
		return -ENOSYS;
	{
		int err = r->drv->open(r, capacity, config);

		if (err)
			return err == -ENOSYS ? -ENOSYS : -ENODEV;
	}
	r->hal->set_event_sink(r->dev, on_event, r);
	r->opened = true;
	return 0;
}

static int cmd_policy(struct scn_run *r, char **tok, int n)
{
	struct gpuext_object *obj = NULL;
	struct gpuext_policy *pol = NULL;
	enum gpuext_policy_kind k;
	char path[1024] = "";
	int err;

	if (n != 2)
		return syntax(r, "policy NAME|none");
	if (r->dry || !need_device(r))
		return 0;
	if (!strcmp(tok[1], "none")) {
		close_policy(r, GPUEXT_POLICY_MEM);
		close_policy(r, GPUEXT_POLICY_SCHED);
		return 0;
	}
	for (const char *const *d = r->opts->policy_dirs; d && *d; d++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s.bpf.o", *d, tok[1]);
		f = fopen(path, "rb");
		if (f) {
			fclose(f);
			break;
		}
		path[0] = '\0';
	}
	if (!path[0])
		return fail(r, "policy %s: no %s.bpf.o in the policy directories", tok[1], tok[1]), 0;
	err = gpuext_object__open_file(r->rt, path, NULL, &obj);
	if (!err)
		err = gpuext_policy__open(obj, NULL, &pol);
	if (err) {
		fail(r, "policy %s: %s: %s; log: %s", tok[1], path, strerror(-err), last_log(r));
		gpuext_object__close(obj);
		return 0;
	}
	k = gpuext_policy__kind(pol);
	close_policy(r, k);
	err = r->hal->attach(r->dev, pol);
	if (err) {
		fail(r, "policy %s: attach: %s; log: %s", tok[1], strerror(-err), last_log(r));
		gpuext_policy__close(pol);
		gpuext_object__close(obj);
		return 0;
	}
	r->obj[k] = obj;
	r->pol[k] = pol;
	return 0;
}

static int cmd_detach(struct scn_run *r, char **tok, int n)
{
	if (n != 2 || (strcmp(tok[1], "mem") && strcmp(tok[1], "sched")))
		return syntax(r, "detach mem|sched");
	if (r->dry || !need_device(r))
		return 0;
	close_policy(r, strcmp(tok[1], "mem") ? GPUEXT_POLICY_SCHED : GPUEXT_POLICY_MEM);
	return 0;
}

static int cmd_map(struct scn_run *r, char **tok, int n)
{
	uint64_t key, val;
	struct gpuext_map *m = NULL;
	int err;

	if (n != 4 || !parse_u64(tok[2], &key) || !parse_u64(tok[3], &val))
		return syntax(r, "map NAME KEY VALUE (integers)");
	if (r->dry || !need_device(r))
		return 0;
	for (int k = 0; k < 2 && !m; k++)
		if (r->obj[k])
			m = gpuext_object__find_map(r->obj[k], tok[1]);
	if (!m)
		return fail(r, "map %s: no such map in the attached policies", tok[1]), 0;
	{
		uint8_t kb[8] = { 0 }, vb[64] = { 0 };
		uint32_t ks = gpuext_map__key_size(m), vs = gpuext_map__value_size(m);

		if (ks > sizeof(kb) || vs > sizeof(vb) || vs < 1)
			return fail(r, "map %s: key %u / value %u bytes: only integer maps", tok[1],
				    ks, vs), 0;
		memcpy(kb, &key, ks);	/* little-endian hosts: the low bytes */
		memcpy(vb, &val, vs < 8 ? vs : 8);
		err = gpuext_map__update(m, kb, vb, 0);
	}
	if (err)
		fail(r, "map %s: update: %s", tok[1], strerror(-err));
	return 0;
}

static int cmd_range(struct scn_run *r, char **tok, int n)
{
	uint64_t tgid, va, size;

	if (n != 4 || !parse_u64(tok[1], &tgid) || !parse_addr(tok[2], &va) ||
	    !parse_u64(tok[3], &size))
		return syntax(r, "range TGID VA SIZE");
	if (r->dry || !need_device(r))
		return 0;
	if (!r->drv->add_range)
		return -ENOSYS;
	{
		int err = r->drv->add_range(r, (uint32_t)tgid, va, size);

		return err ? refused(r, "range", err) : 0;
	}
}

static int cmd_access(struct scn_run *r, char **tok, int n)
{
	uint64_t tgid, va, count = 1, step = 1ULL << GPU_PAGE_SHIFT;
	bool write = false;

	if (n < 3 || !parse_u64(tok[1], &tgid) || !parse_addr(tok[2], &va))
		return syntax(r, "access TGID ADDR [r|w] [count=N] [step=BYTES|Pn]");
	for (int i = 3; i < n; i++) {
		const char *v;

		if (!strcmp(tok[i], "r") || !strcmp(tok[i], "w")) {
			write = tok[i][0] == 'w';
		} else if ((v = kv(tok[i], "count"))) {
			if (!parse_u64(v, &count) || !count)
				return syntax(r, "count=%s: want N > 0", v);
		} else if ((v = kv(tok[i], "step"))) {
			if (v[0] == 'P' ? !parse_u64(v + 1, &step) : !parse_u64(v, &step))
				return syntax(r, "step=%s: want bytes or Pn (pages)", v);
			if (v[0] == 'P')
				step <<= GPU_PAGE_SHIFT;
		} else {
			return syntax(r, "access: unknown argument '%s'", tok[i]);
		}
	}
	if (r->dry || !need_device(r))
		return 0;
	if (!r->drv->access)
		return -ENOSYS;
	for (uint64_t i = 0; i < count; i++) {
		int err = r->drv->access(r, (uint32_t)tgid, va + i * step, write);

		if (err)
			return refused(r, "access", err);
	}
	return 0;
}

static int cmd_task(struct scn_run *r, char **tok, int n)
{
	uint64_t id, tgid;
	struct scn_task *t;
	int err;

	if (n >= 2 && !strcmp(tok[1], "create")) {
		if (n != 5 || !parse_u64(tok[2], &id) || !parse_u64(tok[3], &tgid))
			return syntax(r, "task create ID TGID COMM");
		if (strlen(tok[4]) > 15)
			return syntax(r, "task create: COMM '%s' is longer than 15 characters", tok[4]);
	} else if (n == 3 && (!strcmp(tok[1], "bind") || !strcmp(tok[1], "destroy"))) {
		if (!parse_u64(tok[2], &id))
			return syntax(r, "task %s ID", tok[1]);
	} else {
		return syntax(r, "task create ID TGID COMM | task bind ID | task destroy ID");
	}
	if (r->dry || !need_device(r))
		return 0;
	t = task_find(r, id);
	if (!strcmp(tok[1], "create")) {
		if (!r->drv->task_create)
			return -ENOSYS;
		if (t && t->live)
			return fail(r, "task %llu already exists", (unsigned long long)id), 0;
		if (!t) {
			if (r->task_cnt == MAX_TASKS)
				return fail(r, "more than %d tasks", MAX_TASKS), 0;
			t = &r->tasks[r->task_cnt++];
		}
		*t = (struct scn_task){ .id = id, .tgid = (uint32_t)tgid, .live = true,
					.timeslice_us = GPU_TIMESLICE_DEFAULT_US,
					.level = GPU_LEVEL_MEDIUM };
		err = r->drv->task_create(r, id, (uint32_t)tgid, tok[4]);
		return err ? refused(r, "task create", err) : 0;
	}
	if (!t || !t->live)
		return fail(r, "task %s %llu: no such task", tok[1], (unsigned long long)id), 0;
	if (!strcmp(tok[1], "bind")) {
		if (!r->drv->task_bind)
			return -ENOSYS;
		err = r->drv->task_bind(r, id);
		if (err == -EPERM)
			t->bind = -1;
		else if (err)
			return refused(r, "task bind", err);
		else if (t->bind == 0)
			t->bind = 1;
		return 0;
	}
	if (!r->drv->task_destroy)
		return -ENOSYS;
	t->live = false;
	err = r->drv->task_destroy(r, id);
	return err ? refused(r, "task destroy", err) : 0;
}

/* ---- expectations ---- */

static void list_events(const struct scn_run *r, size_t from, enum gpuext_hal_event_kind kind,
			char *buf, size_t len)
{
	unsigned shown = 0;

	for (size_t i = from; i < r->ev_cnt; i++) {
		const struct gpuext_hal_event *e = &r->events[i].ev;

		if (e->kind != kind)
			continue;
		if (shown++ == 12) {
			cat(buf, len, " ...");
			break;
		}
		if (kind == GPUEXT_EV_PREFETCH)
			cat(buf, len, " %llu:%llu-%llu (line %u)", (unsigned long long)e->id,
			    (unsigned long long)e->a, (unsigned long long)e->b, r->events[i].line);
		else
			cat(buf, len, " %llu (line %u)", (unsigned long long)e->id, r->events[i].line);
	}
	if (!shown)
		cat(buf, len, " none");
}

static int exp_evict(struct scn_run *r, char **tok, int n, bool none)
{
	uint64_t b;

	for (int i = 1; i < n; i++)
		if (!parse_u64(tok[i], &b))
			return syntax(r, "evict B ...: '%s' is not a block id", tok[i]);
	if (none ? n != 1 : n < 2)
		return syntax(r, none ? "no-evict takes no argument" : "evict B ...");
	if (r->dry)
		return 0;
	r->rep->checks++;
	if (none) {
		size_t from = r->cur_evict;
		char got[512] = "";

		for (size_t i = from; i < r->ev_cnt; i++)
			if (r->events[i].ev.kind == GPUEXT_EV_EVICT) {
				list_events(r, from, GPUEXT_EV_EVICT, got, sizeof(got));
				fail(r, "expect no-evict: evicted%s", got);
				break;
			}
		r->cur_evict = r->ev_cnt;
		return 0;
	}
	for (int i = 1; i < n; i++) {
		size_t j = r->cur_evict;

		parse_u64(tok[i], &b);
		while (j < r->ev_cnt && r->events[j].ev.kind != GPUEXT_EV_EVICT)
			j++;
		if (j == r->ev_cnt) {
			char got[512] = "";

			list_events(r, 0, GPUEXT_EV_EVICT, got, sizeof(got));
			return fail(r, "expect evict %llu: no further eviction (all evictions:%s)",
				    (unsigned long long)b, got), 0;
		}
		if (r->events[j].ev.id != b) {
			char got[512] = "";

			list_events(r, r->cur_evict, GPUEXT_EV_EVICT, got, sizeof(got));
			r->cur_evict = j + 1;
			return fail(r, "expect evict %llu: the next eviction was %llu (evictions since "
				       "the last check:%s)", (unsigned long long)b,
				    (unsigned long long)r->events[j].ev.id, got), 0;
		}
		r->cur_evict = j + 1;
	}
	return 0;
}

static int exp_resident(struct scn_run *r, char **tok, int n, bool want)
{
	uint64_t b;

	if (n < 2)
		return syntax(r, "%s B ...", tok[0]);
	for (int i = 1; i < n; i++)
		if (!parse_u64(tok[i], &b))
			return syntax(r, "%s: '%s' is not a block id", tok[0], tok[i]);
	if (r->dry)
		return 0;
	if (!r->drv->resident)
		return r->rep->skipped++, 0;
	for (int i = 1; i < n; i++) {
		int res;

		parse_u64(tok[i], &b);
		r->rep->checks++;
		res = r->drv->resident(r, b);
		if (res < 0) {
			fail(r, "expect %s %llu: the backend cannot tell: %s", tok[0],
			     (unsigned long long)b, strerror(-res));
		} else if (!!res != want) {
			char got[512] = "";

			list_events(r, 0, GPUEXT_EV_EVICT, got, sizeof(got));
			fail(r, "expect %s %llu: it is %s (evictions:%s)", tok[0],
			     (unsigned long long)b, res ? "resident" : "not resident", got);
		}
	}
	return 0;
}

static int exp_used_list(struct scn_run *r, char **tok, int n)
{
	uint64_t want[MAX_TOKENS], got[4096];
	size_t cnt = 0;
	int err;

	for (int i = 1; i < n; i++)
		if (!parse_u64(tok[i], &want[i - 1]))
			return syntax(r, "used-list: '%s' is not a block id", tok[i]);
	if (r->dry)
		return 0;
	if (!r->drv->used_list || (err = r->drv->used_list(r, got, 4096, &cnt)) == -ENOTSUP)
		return r->rep->skipped++, 0;
	r->rep->checks++;
	if (err)
		return fail(r, "expect used-list: %s", strerror(-err)), 0;
	if (cnt != (size_t)(n - 1) || memcmp(got, want, cnt * sizeof(got[0]))) {
		char s[512] = "";

		for (size_t i = 0; i < cnt && i < 64; i++)
			cat(s, sizeof(s), " %llu", (unsigned long long)got[i]);
		fail(r, "expect used-list: the used list (head to tail) is%s", cnt ? s : " empty");
	}
	return 0;
}

static int exp_prefetch(struct scn_run *r, char **tok, int n, bool none)
{
	uint64_t b = 0, first = 0, last = 0;
	bool any_block = true;
	char *dash;

	if (none) {
		if (n > 2 || (n == 2 && !parse_u64(tok[1], &b)))
			return syntax(r, "no-prefetch [B]");
		any_block = n == 1;
	} else {
		if (n != 3 || !parse_u64(tok[1], &b) || !(dash = strchr(tok[2], '-')))
			return syntax(r, "prefetch B FIRST-LAST");
		*dash = '\0';
		if (!parse_u64(tok[2], &first) || !parse_u64(dash + 1, &last) || first > last ||
		    last >= GPU_PAGES_PER_BLOCK) {
			*dash = '-';
			return syntax(r, "prefetch B FIRST-LAST: pages 0..511, FIRST <= LAST");
		}
		*dash = '-';
	}
	if (r->dry)
		return 0;
	r->rep->checks++;
	for (size_t i = r->cur_prefetch; i < r->ev_cnt; i++) {
		const struct gpuext_hal_event *e = &r->events[i].ev;

		if (e->kind != GPUEXT_EV_PREFETCH)
			continue;
		if (none && (any_block || e->id == b)) {
			char got[512] = "";

			list_events(r, r->cur_prefetch, GPUEXT_EV_PREFETCH, got, sizeof(got));
			fail(r, "expect no-prefetch: prefetched (block:first-last)%s", got);
			break;
		}
		if (!none && e->id == b && e->a == first && e->b == last) {
			r->cur_prefetch = i + 1;
			return 0;
		}
	}
	if (!none) {
		char got[512] = "";

		list_events(r, r->cur_prefetch, GPUEXT_EV_PREFETCH, got, sizeof(got));
		fail(r, "expect prefetch %llu %llu-%llu: not seen; prefetches since the last check "
			"(block:first-last):%s", (unsigned long long)b, (unsigned long long)first,
		     (unsigned long long)last, got);
	}
	r->cur_prefetch = r->ev_cnt;
	return 0;
}

static int exp_hook(struct scn_run *r, char **tok, int n, bool dflt)
{
	const struct hook_name *h = n >= 2 ? find_hook(tok[1]) : NULL;
	enum gpuext_hal_event_kind kind = dflt ? GPUEXT_EV_DEFAULT : GPUEXT_EV_HOOK;
	size_t *cur = dflt ? &r->cur_default : &r->cur_hook;
	uint64_t ret = 0, id = 0;
	bool want_ret = false, want_id = false;
	char got[512] = "";
	unsigned shown = 0;

	if (!h)
		return syntax(r, "%s NAME: unknown hook '%s'", tok[0], n >= 2 ? tok[1] : "");
	for (int i = 2; i < n; i++) {
		const char *v;

		if ((v = kv(tok[i], "ret")) && !dflt && parse_u64(v, &ret))
			want_ret = true;
		else if ((v = kv(tok[i], "id")) && parse_u64(v, &id))
			want_id = true;
		else
			return syntax(r, "%s: bad argument '%s'", tok[0], tok[i]);
	}
	if (r->dry)
		return 0;
	r->rep->checks++;
	for (size_t i = *cur; i < r->ev_cnt; i++) {
		const struct gpuext_hal_event *e = &r->events[i].ev;

		if (e->kind != kind || e->policy_kind != h->kind || e->hook != h->hook)
			continue;
		if ((!want_ret || (uint64_t)e->ret == ret) && (!want_id || e->id == id)) {
			*cur = i + 1;
			return 0;
		}
		if (shown++ < 12)
			cat(got, sizeof(got), " id=%llu ret=%lld (line %u)",
			    (unsigned long long)e->id, (long long)e->ret, r->events[i].line);
	}
	fail(r, "expect %s %s%s: no such %s since the last check; seen:%s", tok[0], h->name,
	     want_ret ? " with that ret" : "", dflt ? "default" : "call", shown ? got : " none");
	return 0;
}

static int exp_calls(struct scn_run *r, char **tok, int n)
{
	const struct hook_name *h = n == 3 ? find_hook(tok[1]) : NULL;
	uint64_t want, got = 0;

	if (!h || !parse_u64(tok[2], &want))
		return syntax(r, "calls NAME N");
	if (r->dry)
		return 0;
	r->rep->checks++;
	for (size_t i = 0; i < r->ev_cnt; i++) {
		const struct gpuext_hal_event *e = &r->events[i].ev;

		got += e->kind == GPUEXT_EV_HOOK && e->policy_kind == h->kind && e->hook == h->hook;
	}
	if (got != want)
		fail(r, "expect calls %s %llu: called %llu times", h->name,
		     (unsigned long long)want, (unsigned long long)got);
	return 0;
}

static int exp_attr(struct scn_run *r, char **tok, int n)
{
	uint64_t id = 0, ts = 0;
	int64_t level = 0;
	bool have_id = false, have_ts = false, have_level = false;
	struct scn_task *t;

	for (int i = 1; i < n; i++) {
		const char *v;

		if ((v = kv(tok[i], "task")) && parse_u64(v, &id))
			have_id = true;
		else if ((v = kv(tok[i], "timeslice_us")) && parse_u64(v, &ts))
			have_ts = true;
		else if ((v = kv(tok[i], "level")) && parse_level(v, &level))
			have_level = true;
		else
			return syntax(r, "attr: bad argument '%s'", tok[i]);
	}
	if (!have_id || (!have_ts && !have_level))
		return syntax(r, "attr task=T [timeslice_us=V] [level=L]");
	if (r->dry)
		return 0;
	r->rep->checks++;
	t = task_find(r, id);
	if (!t)
		return fail(r, "expect attr: no task %llu", (unsigned long long)id), 0;
	if ((have_ts && t->timeslice_us != (int64_t)ts) || (have_level && t->level != level))
		fail(r, "expect attr task=%llu: timeslice_us=%lld level=%lld", (unsigned long long)id,
		     (long long)t->timeslice_us, (long long)t->level);
	return 0;
}

static int exp_bind(struct scn_run *r, char **tok, int n, int want)
{
	uint64_t id;

	if (n < 2)
		return syntax(r, "%s T ...", tok[0]);
	for (int i = 1; i < n; i++)
		if (!parse_u64(tok[i], &id))
			return syntax(r, "%s: '%s' is not a task id", tok[0], tok[i]);
	if (r->dry)
		return 0;
	for (int i = 1; i < n; i++) {
		struct scn_task *t;

		parse_u64(tok[i], &id);
		r->rep->checks++;
		t = task_find(r, id);
		if (!t || t->bind != want)
			fail(r, "expect %s %llu: %s", tok[0], (unsigned long long)id,
			     !t ? "no such task" : t->bind == 0 ? "it never bound" :
			     t->bind > 0 ? "its bind succeeded" : "its bind was refused");
	}
	return 0;
}

static int exp_ejected(struct scn_run *r, char **tok, int n, bool want)
{
	char text[256] = "";
	const char *why = NULL;

	if (!want && n != 1)
		return syntax(r, "not-ejected takes no argument");
	for (int i = 1; i < n; i++)
		cat(text, sizeof(text), "%s%s", i > 1 ? " " : "", tok[i]);
	if (r->dry)
		return 0;
	r->rep->checks++;
	for (size_t i = 0; i < r->ev_cnt && !why; i++)
		if (r->events[i].ev.kind == GPUEXT_EV_EJECT)
			why = r->events[i].detail ? r->events[i].detail : "";
	for (int k = 0; k < 2 && !why; k++)
		if (r->pol[k])
			why = gpuext_policy__ejected(r->pol[k]);
	if (want && !why)
		fail(r, "expect ejected: the policy is still attached and healthy");
	else if (want && *text && !strstr(why, text))
		fail(r, "expect ejected %s: ejected, but because: %s", text, why);
	else if (!want && why)
		fail(r, "expect not-ejected: ejected: %s", why);
	return 0;
}

static int cmd_expect(struct scn_run *r, char **tok, int n)
{
	const char *w;

	if (n < 2)
		return syntax(r, "expect WHAT ...");
	tok++, n--;
	w = tok[0];
	if (!r->dry && !r->opened)
		return fail(r, "expect before a `gpu` line"), 0;
	if (!r->dry) {
		int err = do_flush(r);

		if (err)
			return err;
	}
	if (!strcmp(w, "evict"))
		return exp_evict(r, tok, n, false);
	if (!strcmp(w, "no-evict"))
		return exp_evict(r, tok, n, true);
	if (!strcmp(w, "resident"))
		return exp_resident(r, tok, n, true);
	if (!strcmp(w, "not-resident"))
		return exp_resident(r, tok, n, false);
	if (!strcmp(w, "used-list"))
		return exp_used_list(r, tok, n);
	if (!strcmp(w, "prefetch"))
		return exp_prefetch(r, tok, n, false);
	if (!strcmp(w, "no-prefetch"))
		return exp_prefetch(r, tok, n, true);
	if (!strcmp(w, "hook"))
		return exp_hook(r, tok, n, false);
	if (!strcmp(w, "default"))
		return exp_hook(r, tok, n, true);
	if (!strcmp(w, "calls"))
		return exp_calls(r, tok, n);
	if (!strcmp(w, "attr"))
		return exp_attr(r, tok, n);
	if (!strcmp(w, "bind-rejected"))
		return exp_bind(r, tok, n, -1);
	if (!strcmp(w, "bound"))
		return exp_bind(r, tok, n, 1);
	if (!strcmp(w, "ejected"))
		return exp_ejected(r, tok, n, true);
	if (!strcmp(w, "not-ejected"))
		return exp_ejected(r, tok, n, false);
	return syntax(r, "expect: unknown expectation '%s'", w);
}

/*
 * The lowered form of a command: the driver events alone, $V substituted and
 * variant selectors gone; an expectation becomes `sync` (it services the
 * open fault batch, as every expectation does). `map` is kept: a kernel
 * backend writes the policy's map too. Each line starts with the .scn line
 * number, so a difference can be traced back to the script.
 */
static void lower_command(FILE *f, unsigned line, char **tok, int n)
{
	if (!strcmp(tok[0], "scenario") || !strcmp(tok[0], "variants"))
		return;
	if (!strcmp(tok[0], "expect")) {
		fprintf(f, "%u sync\n", line);
		return;
	}
	fprintf(f, "%u", line);
	for (int i = 0; i < n; i++)
		fprintf(f, " %s", tok[i]);
	fputc('\n', f);
}

/* Substitutes $V, splits on blanks, runs one line. */
static int exec_line(struct scn_run *r, const struct scn_line *ln)
{
	char buf[1024], *tok[MAX_TOKENS], *p = buf;
	const char *s = ln->text;
	size_t o = 0;
	int n = 0;

	r->line = ln->no;
	while (*s && o + 1 < sizeof(buf)) {
		if (s[0] == '$' && s[1] == 'V') {
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s", r->variant);
			s += 2;
		} else {
			buf[o++] = *s++;
		}
	}
	if (o >= sizeof(buf))
		return syntax(r, "line too long");
	buf[o] = '\0';
	while (*p) {
		while (isspace((unsigned char)*p))
			*p++ = '\0';
		if (!*p)
			break;
		if (n == MAX_TOKENS)
			return syntax(r, "more than %d words", MAX_TOKENS);
		tok[n++] = p;
		while (*p && !isspace((unsigned char)*p))
			p++;
	}
	if (!n)
		return 0;
	{
		char *sel = strchr(tok[0], '['), *end, *save = NULL;
		bool match = false;

		if (sel) {
			end = strchr(sel, ']');
			if (!end || end[1])
				return syntax(r, "%s: a variant list is written WORD[A,B,...]", tok[0]);
			*end = '\0';
			*sel = '\0';
			for (char *v = strtok_r(sel + 1, ",", &save); v; v = strtok_r(NULL, ",", &save))
				match |= !strcmp(v, r->variant);
			if (!match && !r->dry)
				return 0;	/* not for this variant */
		}
	}
	if (r->opts && r->opts->trace && !r->dry)
		fprintf(r->opts->trace, "  %u: %s\n", ln->no, ln->text);
	if (r->opts && r->opts->lower && !r->dry)
		lower_command(r->opts->lower, ln->no, tok, n);
	if (!r->dry)
		r->rep->commands++;
	if (!strcmp(tok[0], "scenario") || !strcmp(tok[0], "variants"))
		return 0;	/* header, read at parse time */
	if (!strcmp(tok[0], "gpu"))
		return cmd_gpu(r, tok, n);
	if (!strcmp(tok[0], "policy"))
		return cmd_policy(r, tok, n);
	if (!strcmp(tok[0], "detach"))
		return cmd_detach(r, tok, n);
	if (!strcmp(tok[0], "map"))
		return cmd_map(r, tok, n);
	if (!strcmp(tok[0], "range"))
		return cmd_range(r, tok, n);
	if (!strcmp(tok[0], "access"))
		return cmd_access(r, tok, n);
	if (!strcmp(tok[0], "flush")) {
		if (n != 1)
			return syntax(r, "flush takes no argument");
		return need_device(r) ? do_flush(r) : 0;
	}
	if (!strcmp(tok[0], "task"))
		return cmd_task(r, tok, n);
	if (!strcmp(tok[0], "expect"))
		return cmd_expect(r, tok, n);
	return syntax(r, "unknown command '%s'", tok[0]);
}

/* ------------------------------------------------------------------ */
/* Parsing                                                             */
/* ------------------------------------------------------------------ */

void scn_free(struct scn_scenario *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->line_cnt; i++)
		free(s->lines[i].text);
	for (size_t i = 0; i < s->variant_cnt; i++)
		free(s->variants[i]);
	free(s->lines);
	free(s->variants);
	free(s->title);
	free(s->name);
	free(s);
}

static int add_variants(struct scn_scenario *s, const char *text)
{
	char *copy = strdup(text), *save = NULL;
	int err = 0;

	if (!copy)
		return -ENOMEM;
	for (char *v = strtok_r(copy, " \t", &save); v && !err; v = strtok_r(NULL, " \t", &save)) {
		char **n;

		if (strlen(v) >= sizeof(((struct scn_failure *)0)->variant)) {
			err = -EINVAL;
			break;
		}
		n = realloc(s->variants, (s->variant_cnt + 1) * sizeof(*n));
		if (!n || !(n[s->variant_cnt] = strdup(v)))
			err = -ENOMEM;
		if (n)
			s->variants = n;
		if (!err)
			s->variant_cnt++;
	}
	free(copy);
	return err;
}

int scn_parse_text(const char *name, const char *text, struct scn_scenario **out, char *err,
		   size_t err_len)
{
	struct scn_scenario *s = calloc(1, sizeof(*s));
	struct scn_report rep = { 0 };
	struct scn_run_opts o = { .sz = sizeof(o), .only_variant = -1 };
	unsigned no = 0;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->name = strdup(name);
	for (const char *p = text; *p; ) {
		const char *nl = strchr(p, '\n'), *end = nl ? nl : p + strlen(p), *hash;
		char *line;
		size_t len;

		no++;
		hash = memchr(p, '#', (size_t)(end - p));
		len = (size_t)((hash ? hash : end) - p);
		while (len && isspace((unsigned char)p[0]))
			p++, len--;
		while (len && isspace((unsigned char)p[len - 1]))
			len--;
		if (len) {
			struct scn_line *n = realloc(s->lines, (s->line_cnt + 1) * sizeof(*n));

			line = strndup(p, len);
			if (!n || !line) {
				free(line);
				if (n)
					s->lines = n;
				scn_free(s);
				return -ENOMEM;
			}
			s->lines = n;
			s->lines[s->line_cnt++] = (struct scn_line){ .no = no, .text = line };
			if (!strncmp(line, "scenario ", 9) && !s->title) {
				s->title = strdup(line + 9);
			} else if (!strncmp(line, "variants ", 9)) {
				if (s->variant_cnt || add_variants(s, line + 9)) {
					snprintf(err, err_len, "%s:%u: one `variants` line of names "
						 "(at most 31 characters each)", name, no);
					scn_free(s);
					return -EINVAL;
				}
			}
		}
		p = nl ? nl + 1 : end;
	}
	if (!s->variant_cnt && add_variants(s, "-")) {
		scn_free(s);
		return -ENOMEM;
	}
	if (!s->variant_cnt || !strcmp(s->variants[0], "-")) {
		free(s->variants[0]);
		s->variants[0] = strdup("");
	}
	/* Check every line's syntax in every variant now, not half-way through a run. */
	for (size_t v = 0; v < s->variant_cnt; v++) {
		struct scn_run r = { .s = s, .opts = &o, .rep = &rep, .variant = s->variants[v],
				     .dry = true };

		for (size_t i = 0; i < s->line_cnt; i++) {
			if (exec_line(&r, &s->lines[i]) == -EINVAL) {
				snprintf(err, err_len, "%s:%u: %s", name, s->lines[i].no, r.err);
				scn_free(s);
				return -EINVAL;
			}
		}
	}
	if (!s->title)
		s->title = strdup(name);
	*out = s;
	return 0;
}

int scn_parse_file(const char *path, struct scn_scenario **out, char *err, size_t err_len)
{
	FILE *f = fopen(path, "rb");
	const char *base = strrchr(path, '/');
	char *text;
	long len;
	int ret;

	*out = NULL;
	if (!f) {
		snprintf(err, err_len, "%s: %s", path, strerror(errno));
		return -errno;
	}
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	text = len >= 0 ? malloc((size_t)len + 1) : NULL;
	if (!text || fread(text, 1, (size_t)len, f) != (size_t)len) {
		fclose(f);
		free(text);
		snprintf(err, err_len, "%s: cannot read", path);
		return -EIO;
	}
	fclose(f);
	text[len] = '\0';
	ret = scn_parse_text(base ? base + 1 : path, text, out, err, err_len);
	free(text);
	return ret;
}

const char *scn_title(const struct scn_scenario *s) { return s->title; }
size_t scn_variant_cnt(const struct scn_scenario *s) { return s->variant_cnt; }
const char *scn_variant(const struct scn_scenario *s, size_t idx)
{
	return idx < s->variant_cnt ? s->variants[idx] : NULL;
}

/* ------------------------------------------------------------------ */
/* Running                                                             */
/* ------------------------------------------------------------------ */

static int run_variant(const struct scn_scenario *s, const struct scn_run_opts *o,
		       const struct scn_driver *drv, const struct gpuext_hal_ops *hal,
		       const char *variant, struct scn_report *rep)
{
	struct scn_run *r = calloc(1, sizeof(*r));
	int ret = 0;

	if (!r)
		return -ENOMEM;
	*r = (struct scn_run){ .s = s, .opts = o, .rep = rep, .variant = variant, .drv = drv,
			       .hal = hal };
	{
		GPUEXT_OPTS(gpuext_runtime_opts, ro, .print = on_log, .print_user = r,
			    .prandom_seed = 1);

		ret = gpuext_runtime__new(&ro, &r->rt);
	}
	if (o->trace)
		fprintf(o->trace, "%s [%s] on %s\n", s->name, variant, drv->backend);
	if (o->lower)
		fprintf(o->lower, "variant %s %s\n", s->name, *variant ? variant : "-");
	for (size_t i = 0; !ret && i < s->line_cnt; i++)
		ret = exec_line(r, &s->lines[i]);
	if (!ret)
		ret = do_flush(r);
	if (o->lower)
		fprintf(o->lower, "end\n");
	close_policy(r, GPUEXT_POLICY_MEM);
	close_policy(r, GPUEXT_POLICY_SCHED);
	if (r->dev)
		hal->close(r->dev);
	gpuext_runtime__free(r->rt);
	for (size_t i = 0; i < r->ev_cnt; i++)
		free(r->events[i].detail);
	free(r->events);
	free(r);
	return ret;
}

int scn_run(const struct scn_scenario *s, const struct scn_run_opts *opts,
	    struct scn_report *report)
{
	struct scn_run_opts o = { .sz = sizeof(o), .only_variant = -1 };
	const struct gpuext_hal_ops *hal;
	const struct scn_driver *drv;

	if (opts)
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	if (!o.backend)
		o.backend = "sim";
	memset(report, 0, sizeof(*report));
	hal = gpuext_hal_find(o.backend);
	drv = find_driver(o.backend);
	if (!hal || !drv)
		return -ENODEV;
	for (size_t v = 0; v < s->variant_cnt; v++) {
		int err;

		if (o.only_variant >= 0 && (size_t)o.only_variant != v)
			continue;
		err = run_variant(s, &o, drv, hal, s->variants[v], report);
		if (err)
			return err;
	}
	return 0;
}

void scn_report_print(const struct scn_scenario *s, const struct scn_report *r, FILE *f)
{
	for (unsigned i = 0; i < r->failure_cnt && i < SCN_MAX_FAILURES; i++) {
		const struct scn_failure *x = &r->failures[i];

		fprintf(f, "%s:%u%s%s%s: %s\n", s->name, x->line, x->variant[0] ? " [" : "",
			x->variant, x->variant[0] ? "]" : "", x->text);
	}
	if (r->failure_cnt > SCN_MAX_FAILURES)
		fprintf(f, "%s: ... and %u more\n", s->name, r->failure_cnt - SCN_MAX_FAILURES);
}

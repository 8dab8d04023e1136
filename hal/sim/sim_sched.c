/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scheduling model (see sim_sched.h for what it models and why): an
 * event loop over one engine, a runlist rebuilt whenever a group is bound,
 * destroyed or changes attributes, and the gpu_sched_ops hooks with the
 * bpf_gpu_set_attr / bpf_gpu_reject_bind kfuncs.
 *
 * A hook's kfunc effects are staged in the call and applied only when the
 * call returns normally: a call that ends in an ejection leaves nothing
 * half-applied, and every group falls back to the defaults.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim_sched.h"

#define NONE UINT64_MAX
#define CALL_MAGIC 0x53434844u	/* "SCHD": the user pointer is a struct sched_call */
#define MAX_STAGED 16

struct task {
	struct sim_tenant_spec spec;
	char comm[16];
	uint32_t tgid;
	uint64_t id;
	uint32_t ts_us, level;
	bool created, bound, rejected, destroyed;
	uint64_t next_arrival;	/* next submission, NONE if no more */
	uint64_t submitted;
	/* pending kernels: submission times, FIFO (a ring) */
	uint64_t *q;
	size_t qcap, qhead, qlen;
	uint64_t remaining;	/* of the head kernel */
	uint64_t *lat;
	size_t nlat, latcap;
	uint64_t gpu_ns, failed;
	uint64_t rng;
};

struct sched {
	const struct sim_sched_opts *o;
	uint64_t horizon, switch_ns, preempt_ns;
	struct task *t;
	size_t n;
	uint64_t now;
	size_t *rl;		/* runlist: task indices, levels interleaved */
	size_t rl_len, rl_cap, cursor;
	bool ejected;
	int err;		/* -ENOMEM during the run */
	struct sim_sched_result *res;
};

/* One hook call in flight: handed to the kfuncs as gpuext_exec__user(). */
struct sched_call {
	uint32_t magic;
	unsigned hook;
	struct sched *s;
	struct task *t;
	struct gpu_task_ctx ctx;	/* what the program sees; kfuncs update it */
	bool reject;
	unsigned nstaged;
	struct { uint32_t attr; uint64_t value; } staged[MAX_STAGED];
};

static uint64_t mix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

const char *sim_sched_level_name(uint32_t level)
{
	switch (level) {
	case GPU_LEVEL_LOW: return "LOW";
	case GPU_LEVEL_MEDIUM: return "MEDIUM";
	case GPU_LEVEL_HIGH: return "HIGH";
	}
	return "?";
}

static void emit(struct sched *s, enum gpuext_hal_event_kind kind, unsigned hook, uint64_t id,
		 uint64_t a, uint64_t b, int64_t ret, const char *detail)
{
	struct gpuext_hal_event ev = {
		.kind = kind, .hook = hook, .policy_kind = GPUEXT_POLICY_SCHED, .id = id,
		.a = a, .b = b, .ret = ret, .time_ns = s->now, .detail = detail,
	};

	if (s->o->on_event)
		s->o->on_event(&ev, s->o->event_user);
}

/* ---- the runlist (NVIDIA's level interleave; see sim_sched.h) ---- */

static bool on_runlist(const struct task *t)
{
	return t->bound && !t->rejected && !t->destroyed;
}

static void rl_push(struct sched *s, size_t i)
{
	if (s->rl_len == s->rl_cap) {
		size_t cap = s->rl_cap ? 2 * s->rl_cap : 64;
		size_t *p = realloc(s->rl, cap * sizeof(*p));

		if (!p) {
			s->err = -ENOMEM;
			return;
		}
		s->rl = p;
		s->rl_cap = cap;
	}
	s->rl[s->rl_len++] = i;
}

static size_t rl_level(struct sched *s, uint32_t level, bool push)
{
	size_t cnt = 0;

	for (size_t i = 0; i < s->n; i++)
		if (on_runlist(&s->t[i]) && s->t[i].level == level) {
			cnt++;
			if (push)
				rl_push(s, i);
		}
	return cnt;
}

/* Each MEDIUM entry preceded by every HIGH entry. */
static size_t rl_medium(struct sched *s)
{
	size_t cnt = 0;

	for (size_t i = 0; i < s->n; i++)
		if (on_runlist(&s->t[i]) && s->t[i].level == GPU_LEVEL_MEDIUM) {
			cnt += rl_level(s, GPU_LEVEL_HIGH, true);
			rl_push(s, i);
			cnt++;
		}
	return cnt;
}

static void rl_rebuild(struct sched *s, size_t last)
{
	size_t lows = 0;

	s->rl_len = 0;
	/* each LOW entry preceded by the MEDIUM sequence and every HIGH entry */
	for (size_t i = 0; i < s->n; i++)
		if (on_runlist(&s->t[i]) && s->t[i].level == GPU_LEVEL_LOW) {
			rl_medium(s);
			rl_level(s, GPU_LEVEL_HIGH, true);
			rl_push(s, i);
			lows++;
		}
	if (!lows && !rl_medium(s))
		rl_level(s, GPU_LEVEL_HIGH, true);
	/* carry on after the group that ran last, wherever it now sits */
	s->cursor = 0;
	for (size_t k = 0; k < s->rl_len; k++)
		if (s->rl[k] == last) {
			s->cursor = (k + 1) % s->rl_len;
			break;
		}
}

/* ---- kfuncs ---- */

static struct sched_call *kf_call(struct gpuext_exec *ex, uint64_t ctx_arg)
{
	struct sched_call *c = gpuext_exec__user(ex);

	if (!c || c->magic != CALL_MAGIC || ctx_arg != (uint64_t)(uintptr_t)&c->ctx)
		return NULL;
	return c;
}

static uint64_t kf_set_attr(struct gpuext_exec *ex, uint64_t r1, uint64_t attr, uint64_t value,
			    uint64_t r4, uint64_t r5)
{
	struct sched_call *c = kf_call(ex, r1);
	int ret = 0;

	(void)r4;
	(void)r5;
	if (!c)
		return (uint64_t)(int64_t)-EINVAL;
	switch (attr) {
	case GPU_ATTR_TIMESLICE_US:
		if (value < GPU_TIMESLICE_MIN_US || value > GPU_TIMESLICE_MAX_US)
			ret = -EINVAL;
		break;
	case GPU_ATTR_LEVEL:
		if (value > GPU_LEVEL_HIGH)
			ret = -EINVAL;
		break;
	default:
		ret = -EINVAL;
	}
	if (!ret && c->nstaged == MAX_STAGED)
		ret = -E2BIG;
	if (!ret) {
		c->staged[c->nstaged].attr = (uint32_t)attr;
		c->staged[c->nstaged++].value = value;
		if (attr == GPU_ATTR_TIMESLICE_US)
			c->ctx.timeslice_us = (uint32_t)value;
		else
			c->ctx.level = (uint32_t)value;
	}
	emit(c->s, GPUEXT_EV_KFUNC, c->hook, c->t->id, attr, value, ret, GPUEXT_KF_SET_ATTR);
	return (uint64_t)(int64_t)ret;
}

static uint64_t kf_reject_bind(struct gpuext_exec *ex, uint64_t r1, uint64_t r2, uint64_t r3,
			       uint64_t r4, uint64_t r5)
{
	struct sched_call *c = kf_call(ex, r1);
	int ret = 0;

	(void)r2;
	(void)r3;
	(void)r4;
	(void)r5;
	if (!c)
		return (uint64_t)(int64_t)-EINVAL;
	if (c->hook != GPUEXT_HOOK_TASK_BIND)
		ret = -EINVAL;
	else
		c->reject = true;
	emit(c->s, GPUEXT_EV_KFUNC, c->hook, c->t->id, 0, 0, ret, GPUEXT_KF_REJECT_BIND);
	return (uint64_t)(int64_t)ret;
}

/* ---- hooks ---- */

static void eject(struct sched *s, size_t last)
{
	const char *why = gpuext_policy__ejected(s->o->policy);

	s->ejected = true;
	s->res->ejected = true;
	snprintf(s->res->eject_reason, sizeof(s->res->eject_reason), "%s", why ? why : "ejected");
	emit(s, GPUEXT_EV_EJECT, 0, 0, 0, 0, -ECANCELED, s->res->eject_reason);
	/* like sched_ext falling back to the fair class: every group gets the defaults */
	for (size_t i = 0; i < s->n; i++) {
		s->t[i].ts_us = GPU_TIMESLICE_DEFAULT_US;
		s->t[i].level = GPU_LEVEL_MEDIUM;
	}
	rl_rebuild(s, last);
}

/* Calls @hook for @t. Returns true if the policy refused a bind. */
static bool call_hook(struct sched *s, size_t ti, unsigned hook, size_t last)
{
	struct task *t = &s->t[ti];
	struct sched_call c = { .magic = CALL_MAGIC, .hook = hook, .s = s, .t = t };
	struct gpuext_mem_region region = { &c.ctx, sizeof(c.ctx), false };
	uint64_t args[1] = { (uint64_t)(uintptr_t)&c.ctx }, ret = 0;
	bool changed = false;
	int err;

	c.ctx.task_id = t->id;
	c.ctx.now_ns = s->now;
	c.ctx.engine = t->spec.engine;
	c.ctx.tgid = t->tgid;
	memcpy(c.ctx.comm, t->comm, sizeof(c.ctx.comm));
	c.ctx.timeslice_us = t->ts_us;
	c.ctx.level = t->level;
	if (!s->o->policy || s->ejected) {
		emit(s, GPUEXT_EV_DEFAULT, hook, t->id, 0, 0, 0, NULL);
		return false;
	}
	err = gpuext_policy__call(s->o->policy, hook, args, 1, &region, 1, &c, &ret);
	if (err == -ECANCELED) {
		eject(s, last);
		emit(s, GPUEXT_EV_DEFAULT, hook, t->id, 0, 0, 0, NULL);
		return false;
	}
	if (err) {	/* -ENOENT: the policy leaves this hook to the default */
		emit(s, GPUEXT_EV_DEFAULT, hook, t->id, 0, 0, err, NULL);
		return false;
	}
	emit(s, GPUEXT_EV_HOOK, hook, t->id, 0, 0, (int64_t)ret, NULL);
	for (unsigned k = 0; k < c.nstaged; k++) {
		if (c.staged[k].attr == GPU_ATTR_TIMESLICE_US) {
			changed |= t->ts_us != c.staged[k].value;
			t->ts_us = (uint32_t)c.staged[k].value;
		} else {
			changed |= t->level != c.staged[k].value;
			t->level = (uint32_t)c.staged[k].value;
		}
		emit(s, GPUEXT_EV_ATTR, hook, t->id, c.staged[k].attr, c.staged[k].value, 0, NULL);
	}
	if (changed)
		rl_rebuild(s, last);
	if (c.reject)
		emit(s, GPUEXT_EV_REJECT_BIND, hook, t->id, 0, 0, -EPERM, t->comm);
	return c.reject;
}

/* ---- tenants ---- */

static bool q_push(struct sched *s, struct task *t, uint64_t at)
{
	if (t->qlen == t->qcap) {
		size_t cap = t->qcap ? 2 * t->qcap : 8;
		uint64_t *p = malloc(cap * sizeof(*p));

		if (!p) {
			s->err = -ENOMEM;
			return false;
		}
		for (size_t k = 0; k < t->qlen; k++)
			p[k] = t->q[(t->qhead + k) % t->qcap];
		free(t->q);
		t->q = p;
		t->qcap = cap;
		t->qhead = 0;
	}
	t->q[(t->qhead + t->qlen++) % t->qcap] = at;
	if (t->qlen == 1)
		t->remaining = t->spec.kernel_ns;
	return true;
}

static bool more_to_submit(const struct task *t)
{
	return t->spec.count ? t->submitted < t->spec.count : true;
}

/* When @t submits next after a submission/completion at @at. */
static void plan_next(struct sched *s, struct task *t, uint64_t at)
{
	uint64_t next;

	if (!more_to_submit(t)) {
		t->next_arrival = NONE;
		return;
	}
	if (t->spec.arrivals) {
		next = t->spec.arrivals[t->submitted];
	} else {
		uint64_t think = t->spec.think_ns;

		if (think)
			think = think / 2 + mix64(&t->rng) % (think + 1);
		next = at + think;
	}
	t->next_arrival = next > s->horizon ? NONE : next;
}

static void task_finish(struct sched *s, size_t i, size_t last)
{
	struct task *t = &s->t[i];

	if (t->destroyed || !t->created)
		return;
	call_hook(s, i, GPUEXT_HOOK_TASK_DESTROY, last);
	t->destroyed = true;
	rl_rebuild(s, last);
}

static bool finished(const struct task *t)
{
	return t->created && t->next_arrival == NONE && !t->qlen;
}

/* Submits @t's next kernel (arriving at t->next_arrival). */
static void submit(struct sched *s, size_t i, size_t last)
{
	struct task *t = &s->t[i];
	uint64_t at = t->next_arrival;

	t->submitted++;
	if (!t->bound && !t->rejected) {
		if (call_hook(s, i, GPUEXT_HOOK_TASK_BIND, last))
			t->rejected = true;
		else
			t->bound = true;
		rl_rebuild(s, last);
	}
	if (t->rejected) {
		/* a refused bind leaves the context unusable: every launch fails */
		t->failed++;
		if (t->spec.arrivals)
			plan_next(s, t, at);
		else
			plan_next(s, t, at + (t->spec.think_ns ? 0 : t->spec.kernel_ns));
		return;
	}
	if (!q_push(s, t, at))
		return;
	if (t->spec.arrivals)
		plan_next(s, t, at);
	else
		t->next_arrival = NONE;	/* closed loop: planned at completion */
}

/* Processes creations and submissions due by now, in time order. */
static void deliver(struct sched *s, size_t last)
{
	for (;;) {
		uint64_t best = NONE;
		size_t bi = 0;

		for (size_t i = 0; i < s->n; i++) {
			struct task *t = &s->t[i];
			uint64_t at = t->created ? t->next_arrival : t->spec.start_ns;

			if (!t->destroyed && at < best) {
				best = at;
				bi = i;
			}
		}
		if (best == NONE || best > s->now || s->err)
			return;
		if (!s->t[bi].created) {
			uint64_t now = s->now;

			s->t[bi].created = true;
			s->now = best;	/* the hook sees the creation time */
			call_hook(s, bi, GPUEXT_HOOK_TASK_INIT, last);
			s->now = now;
			s->t[bi].next_arrival = s->t[bi].spec.arrivals ? s->t[bi].spec.arrivals[0]
								       : s->t[bi].spec.start_ns;
			if (s->t[bi].next_arrival > s->horizon)
				s->t[bi].next_arrival = NONE;
		} else {
			uint64_t now = s->now;

			s->now = best;
			submit(s, bi, last);
			s->now = now;
		}
		if (finished(&s->t[bi]) && s->t[bi].spec.count)
			task_finish(s, bi, last);
	}
}

static uint64_t next_event(const struct sched *s)
{
	uint64_t best = NONE;

	for (size_t i = 0; i < s->n; i++) {
		const struct task *t = &s->t[i];
		uint64_t at = t->created ? t->next_arrival : t->spec.start_ns;

		if (!t->destroyed && at < best)
			best = at;
	}
	return best;
}

static bool has_work(const struct task *t)
{
	return on_runlist(t) && t->qlen;
}

/* A runnable group of a higher level than @lvl exists (level_preempts). */
static bool higher_waiting(const struct sched *s, uint32_t lvl)
{
	for (size_t i = 0; i < s->n; i++)
		if (has_work(&s->t[i]) && s->t[i].level > lvl)
			return true;
	return false;
}

/*
 * The next runlist entry with work, from the cursor on. With level_preempts
 * only the highest level that has work may run. NONE if nothing has work.
 */
static size_t pick_next(struct sched *s)
{
	uint32_t want = 0;

	for (size_t i = 0; s->o->level_preempts && i < s->n; i++)
		if (has_work(&s->t[i]) && s->t[i].level > want)
			want = s->t[i].level;
	for (size_t k = 0; k < s->rl_len; k++) {
		size_t e = (s->cursor + k) % s->rl_len;

		if (has_work(&s->t[s->rl[e]]) && s->t[s->rl[e]].level >= want) {
			s->cursor = (e + 1) % s->rl_len;
			return s->rl[e];
		}
	}
	return NONE;
}

static bool record_latency(struct sched *s, struct task *t, uint64_t lat)
{
	if (t->nlat == t->latcap) {
		size_t cap = t->latcap ? 2 * t->latcap : 256;
		uint64_t *p = realloc(t->lat, cap * sizeof(*p));

		if (!p) {
			s->err = -ENOMEM;
			return false;
		}
		t->lat = p;
		t->latcap = cap;
	}
	t->lat[t->nlat++] = lat;
	return true;
}

/* Runs group @i for one slice starting at s->now. Returns true if it was cut off with work left. */
static bool run_slice(struct sched *s, size_t i)
{
	struct task *t = &s->t[i];
	uint64_t end = s->now + (uint64_t)t->ts_us * 1000;

	while (has_work(t) && s->now < end && !s->err) {
		uint64_t stop = s->now + t->remaining, ev;

		/* a higher level arrived while this group's context was being loaded */
		if (s->o->level_preempts && higher_waiting(s, t->level))
			break;
		if (stop > end)
			stop = end;
		if (s->o->level_preempts) {
			ev = next_event(s);
			if (ev > s->now && ev < stop)
				stop = ev;	/* look at arrivals as they happen */
		}
		t->gpu_ns += stop - s->now;
		s->res->busy_ns += stop - s->now;
		t->remaining -= stop - s->now;
		s->now = stop;
		if (!t->remaining) {
			uint64_t sub = t->q[t->qhead];

			t->qhead = (t->qhead + 1) % t->qcap;
			t->qlen--;
			t->remaining = t->qlen ? t->spec.kernel_ns : 0;
			record_latency(s, t, s->now - sub);
			if (!t->spec.arrivals)
				plan_next(s, t, s->now);
		}
		deliver(s, i);
		if (finished(t) && t->spec.count) {
			task_finish(s, i, i);
			return false;
		}
		if (s->o->level_preempts && higher_waiting(s, t->level))
			break;
	}
	return has_work(t);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t pct(const uint64_t *v, size_t n, unsigned p)
{
	size_t k;

	if (!n)
		return 0;
	k = (n * p + 99) / 100;	/* nearest rank */
	return v[k ? k - 1 : 0];
}

static void summarise(struct sched *s)
{
	struct sim_sched_result *r = s->res;
	uint64_t done = 0;

	r->elapsed_ns = s->now;
	r->tenant_cnt = s->n;
	for (size_t i = 0; i < s->n; i++) {
		struct task *t = &s->t[i];
		struct sim_tenant_result *o = &r->tenants[i];
		uint64_t sum = 0;

		memcpy(o->comm, t->comm, sizeof(o->comm));
		o->tgid = t->tgid;
		o->task_id = t->id;
		o->timeslice_us = t->ts_us;
		o->level = t->level;
		o->rejected = t->rejected;
		o->submitted = t->submitted;
		o->completed = t->nlat;
		o->failed = t->failed;
		if (t->nlat)
			qsort(t->lat, t->nlat, sizeof(*t->lat), cmp_u64);
		for (size_t k = 0; k < t->nlat; k++)
			sum += t->lat[k];
		o->p50_ns = pct(t->lat, t->nlat, 50);
		o->p99_ns = pct(t->lat, t->nlat, 99);
		o->max_ns = t->nlat ? t->lat[t->nlat - 1] : 0;
		o->mean_ns = t->nlat ? sum / t->nlat : 0;
		o->gpu_ns = t->gpu_ns;
		o->gpu_share = r->elapsed_ns ? (double)t->gpu_ns / (double)r->elapsed_ns : 0;
		o->kernels_per_s = r->elapsed_ns ? t->nlat * 1e9 / (double)r->elapsed_ns : 0;
		done += t->nlat;
	}
	r->busy_fraction = r->elapsed_ns ? (double)r->busy_ns / (double)r->elapsed_ns : 0;
	r->kernels_per_s = r->elapsed_ns ? done * 1e9 / (double)r->elapsed_ns : 0;
}

static int check_specs(const struct sim_tenant_spec *sp, size_t n, const struct sim_sched_opts *o)
{
	if (!sp || !n || n > SIM_SCHED_MAX_TENANTS) {
		gpuext_log(o->rt, GPUEXT_LOG_WARN, "sim sched: need 1..%d tenants (got %zu)",
			   SIM_SCHED_MAX_TENANTS, n);
		return -EINVAL;
	}
	if (o->policy && (!o->rt || gpuext_policy__kind(o->policy) != GPUEXT_POLICY_SCHED)) {
		gpuext_log(o->rt, GPUEXT_LOG_WARN,
			   "sim sched: policy '%s' needs a runtime and must be a gpu_sched_ops policy",
			   gpuext_policy__name(o->policy));
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		const char *why = NULL;

		if (!sp[i].comm || !sp[i].comm[0])
			why = "has no comm";
		else if (!sp[i].kernel_ns)
			why = "has kernel_ns 0";
		else if (sp[i].arrivals && !sp[i].count)
			why = "gives arrivals without a count";
		for (uint64_t k = 1; !why && sp[i].arrivals && k < sp[i].count; k++)
			if (sp[i].arrivals[k] < sp[i].arrivals[k - 1])
				why = "has arrivals out of order";
		if (!why && sp[i].arrivals && sp[i].arrivals[0] < sp[i].start_ns)
			why = "submits before its start";
		if (why) {
			gpuext_log(o->rt, GPUEXT_LOG_WARN, "sim sched: tenant %zu (%s) %s", i,
				   sp[i].comm ? sp[i].comm : "?", why);
			return -EINVAL;
		}
	}
	return 0;
}

int sim_sched_run(const struct sim_tenant_spec *tenants, size_t n,
		  const struct sim_sched_opts *opts, struct sim_sched_result *out)
{
	struct sim_sched_opts o = { .sz = sizeof(o) };
	struct sched s = { 0 };
	size_t last = NONE;
	bool last_cut = false;
	int err;

	if (!out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	if (opts) {
		if (opts->sz < sizeof(size_t))
			return -EINVAL;
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	}
	err = check_specs(tenants, n, &o);
	if (err)
		return err;
	if (o.policy) {
		gpuext_runtime__set_func_impl(o.rt, GPUEXT_FUNC_KFUNC, GPUEXT_KF_SET_ATTR, kf_set_attr);
		gpuext_runtime__set_func_impl(o.rt, GPUEXT_FUNC_KFUNC, GPUEXT_KF_REJECT_BIND,
					      kf_reject_bind);
	}
	s.o = &o;
	s.res = out;
	s.n = n;
	s.horizon = o.horizon_ns ? o.horizon_ns : SIM_SCHED_HORIZON_NS;
	s.switch_ns = !o.switch_ns ? SIM_SCHED_SWITCH_NS : o.switch_ns == SIM_SCHED_NO_COST ? 0 : o.switch_ns;
	s.preempt_ns = !o.preempt_ns ? SIM_SCHED_PREEMPT_NS
				     : o.preempt_ns == SIM_SCHED_NO_COST ? 0 : o.preempt_ns;
	s.t = calloc(n, sizeof(*s.t));
	if (!s.t)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct task *t = &s.t[i];
		uint64_t seed = o.seed ^ (0x5eed0000ULL + i);

		t->spec = tenants[i];
		snprintf(t->comm, sizeof(t->comm), "%s", tenants[i].comm);
		t->tgid = tenants[i].tgid ? tenants[i].tgid : 2000 + (uint32_t)i;
		t->id = i + 1;
		t->ts_us = GPU_TIMESLICE_DEFAULT_US;
		t->level = GPU_LEVEL_MEDIUM;
		t->next_arrival = NONE;
		t->rng = mix64(&seed);
	}
	for (;;) {
		size_t pick = NONE;

		deliver(&s, last);
		if (s.err)
			break;
		pick = pick_next(&s);
		if (pick == NONE) {
			uint64_t ev = next_event(&s);

			if (ev == NONE)
				break;
			s.now = ev;	/* idle until the next creation or submission */
			continue;
		}
		if (pick != last) {
			uint64_t cost = last == NONE ? s.switch_ns : last_cut ? s.preempt_ns : s.switch_ns;

			if (last != NONE && last_cut)
				out->preemptions++;
			out->switches++;
			out->overhead_ns += cost;
			s.now += cost;
			deliver(&s, last);
		}
		last = pick;
		last_cut = run_slice(&s, pick);
	}
	/* whatever is left (tenants running until the horizon) exits now */
	for (size_t i = 0; i < n && !s.err; i++)
		task_finish(&s, i, last);
	err = s.err;
	if (!err)
		summarise(&s);
	for (size_t i = 0; i < n; i++) {
		free(s.t[i].q);
		free(s.t[i].lat);
	}
	free(s.t);
	free(s.rl);
	return err;
}

const struct sim_tenant_result *sim_sched_tenant(const struct sim_sched_result *r,
						 const char *comm)
{
	for (size_t i = 0; i < r->tenant_cnt; i++)
		if (!strncmp(r->tenants[i].comm, comm, sizeof(r->tenants[i].comm)))
			return &r->tenants[i];
	return NULL;
}

void sim_sched_print(FILE *f, const char *const *labels, const struct sim_sched_result *const *res,
		     size_t n)
{
	fprintf(f, "%-12s %-14s %7s %6s %7s %6s %5s %9s %9s %9s %8s %6s\n", "policy", "tenant",
		"tgid", "level", "ts_us", "done", "fail", "p50_ms", "p99_ms", "max_ms", "kern/s",
		"gpu%");
	for (size_t k = 0; k < n; k++) {
		const struct sim_sched_result *r = res[k];

		for (size_t i = 0; i < r->tenant_cnt; i++) {
			const struct sim_tenant_result *t = &r->tenants[i];

			fprintf(f, "%-12s %-14s %7u %6s %7u %6llu %5llu %9.3f %9.3f %9.3f %8.1f %5.1f%%\n",
				i ? "" : labels[k], t->comm, t->tgid, sim_sched_level_name(t->level),
				t->timeslice_us, (unsigned long long)t->completed,
				(unsigned long long)t->failed, t->p50_ns / 1e6, t->p99_ns / 1e6,
				t->max_ns / 1e6, t->kernels_per_s, 100 * t->gpu_share);
		}
		fprintf(f, "%-12s %-14s busy %.1f%%, %.1f kernels/s, %llu switches (%llu preemptions), "
			"overhead %.2f ms over %.1f ms%s%s\n", "", "(all)", 100 * r->busy_fraction,
			r->kernels_per_s, (unsigned long long)r->switches,
			(unsigned long long)r->preemptions, r->overhead_ns / 1e6, r->elapsed_ns / 1e6,
			r->ejected ? "; EJECTED: " : "", r->ejected ? r->eject_reason : "");
	}
}

/* ---- preset scenarios ---- */

#define MS 1000000ULL
#define US 1000ULL

static const struct sim_sched_scenario scenarios[] = {
	{ "lc-be",
	  "2 LC inference + 4 BE training processes, compute-bound (the seed's setup)",
	  6,
	  {
		  /* LC: one decode step = a 3 ms kernel, then ~10 ms of host work */
		  { .comm = "lc_infer_0", .kernel_ns = 3 * MS, .think_ns = 10 * MS },
		  { .comm = "lc_infer_1", .kernel_ns = 3 * MS, .think_ns = 10 * MS, .start_ns = 1 * MS },
		  /* BE: 20 ms training kernels back to back */
		  { .comm = "be_train_0", .kernel_ns = 20 * MS },
		  { .comm = "be_train_1", .kernel_ns = 20 * MS },
		  { .comm = "be_train_2", .kernel_ns = 20 * MS },
		  { .comm = "be_train_3", .kernel_ns = 20 * MS },
	  },
	  2000 * MS },
	{ "lc-short",
	  "1 LC with short 500 us kernels + 4 BE processes",
	  5,
	  {
		  { .comm = "lc_infer_0", .kernel_ns = 500 * US, .think_ns = 5 * MS },
		  { .comm = "be_train_0", .kernel_ns = 20 * MS },
		  { .comm = "be_train_1", .kernel_ns = 20 * MS },
		  { .comm = "be_train_2", .kernel_ns = 20 * MS },
		  { .comm = "be_train_3", .kernel_ns = 20 * MS },
	  },
	  2000 * MS },
	{ "be-be",
	  "2 equal BE training processes (fair sharing)",
	  2,
	  {
		  { .comm = "be_train_0", .kernel_ns = 20 * MS },
		  { .comm = "be_train_1", .kernel_ns = 20 * MS },
	  },
	  1000 * MS },
};

const struct sim_sched_scenario *sim_sched_scenario_list(size_t *count)
{
	*count = sizeof(scenarios) / sizeof(scenarios[0]);
	return scenarios;
}

const struct sim_sched_scenario *sim_sched_scenario_find(const char *name)
{
	for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		if (!strcmp(scenarios[i].name, name))
			return &scenarios[i];
	return NULL;
}

/* ---- event by event (conformance scenarios, the sim backend) ---- */

#define DEV_MAX_TASKS 64

/* A runlist driven one driver event at a time; owned by the sim device. */
struct sim_sched_dev {
	struct sim_sched_opts o;
	struct sim_sched_result res;	/* only the ejection fields are used */
	struct sched s;
};

int sim_sched_dev__new(struct gpuext_runtime *rt, struct sim_sched_dev **out)
{
	struct sim_sched_dev *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	d->s.t = calloc(DEV_MAX_TASKS, sizeof(*d->s.t));
	if (!d->s.t) {
		free(d);
		return -ENOMEM;
	}
	d->o.sz = sizeof(d->o);
	d->o.rt = rt;
	d->s.o = &d->o;
	d->s.res = &d->res;
	*out = d;
	return 0;
}

void sim_sched_dev__free(struct sim_sched_dev *d)
{
	if (!d)
		return;
	free(d->s.t);
	free(d->s.rl);
	free(d);
}

int sim_sched_dev__attach(struct sim_sched_dev *d, struct gpuext_policy *p)
{
	if (d->o.policy)
		return -EBUSY;
	gpuext_runtime__set_func_impl(d->o.rt, GPUEXT_FUNC_KFUNC, GPUEXT_KF_SET_ATTR, kf_set_attr);
	gpuext_runtime__set_func_impl(d->o.rt, GPUEXT_FUNC_KFUNC, GPUEXT_KF_REJECT_BIND,
				      kf_reject_bind);
	d->o.policy = p;
	d->s.ejected = false;
	return 0;
}

int sim_sched_dev__detach(struct sim_sched_dev *d)
{
	if (!d->o.policy)
		return -ENOENT;
	d->o.policy = NULL;
	return 0;
}

void sim_sched_dev__set_event_sink(struct sim_sched_dev *d, gpuext_hal_event_fn fn, void *user)
{
	d->o.on_event = fn;
	d->o.event_user = user;
}

static struct task *dev_task(struct sim_sched_dev *d, uint64_t id, size_t *idx)
{
	for (size_t i = 0; i < d->s.n; i++)
		if (d->s.t[i].id == id && !d->s.t[i].destroyed) {
			*idx = i;
			return &d->s.t[i];
		}
	return NULL;
}

int sim_sched_dev__task_create(struct sim_sched_dev *d, uint64_t id, uint32_t tgid,
			       const char *comm)
{
	size_t i;
	struct task *t;

	if (dev_task(d, id, &i))
		return -EEXIST;
	if (d->s.n == DEV_MAX_TASKS)
		return -E2BIG;
	t = &d->s.t[d->s.n];
	memset(t, 0, sizeof(*t));
	snprintf(t->comm, sizeof(t->comm), "%s", comm);
	t->tgid = tgid;
	t->id = id;
	t->ts_us = GPU_TIMESLICE_DEFAULT_US;
	t->level = GPU_LEVEL_MEDIUM;
	t->created = true;
	i = d->s.n++;
	call_hook(&d->s, i, GPUEXT_HOOK_TASK_INIT, NONE);
	return 0;
}

int sim_sched_dev__task_bind(struct sim_sched_dev *d, uint64_t id)
{
	size_t i;
	struct task *t = dev_task(d, id, &i);

	if (!t)
		return -ENOENT;
	if (t->bound || t->rejected)
		return t->rejected ? -EPERM : 0;
	if (call_hook(&d->s, i, GPUEXT_HOOK_TASK_BIND, NONE)) {
		t->rejected = true;
		return -EPERM;
	}
	t->bound = true;
	rl_rebuild(&d->s, NONE);
	return 0;
}

int sim_sched_dev__task_destroy(struct sim_sched_dev *d, uint64_t id)
{
	size_t i;
	struct task *t = dev_task(d, id, &i);

	if (!t)
		return -ENOENT;
	call_hook(&d->s, i, GPUEXT_HOOK_TASK_DESTROY, NONE);
	t->destroyed = true;
	rl_rebuild(&d->s, NONE);
	return 0;
}

int sim_sched_dev__task_attr(struct sim_sched_dev *d, uint64_t id, uint32_t *timeslice_us,
			     uint32_t *level)
{
	size_t i;
	struct task *t = dev_task(d, id, &i);

	if (!t)
		return -ENOENT;
	*timeslice_us = t->ts_us;
	*level = t->level;
	return 0;
}

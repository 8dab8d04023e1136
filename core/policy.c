/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Policies: struct_ops variables of type gpu_mem_ops / gpu_sched_ops bound
 * to their hooks. Each member is verified as its own hook (what its
 * arguments are, which kfuncs it may call, what it may return), and each
 * call runs under an instruction budget; a failing call ejects the policy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuext/policy.h"
#include "host/jit.h"
#include "internal.h"

#define DEFAULT_CALL_BUDGET 100000

/* ---- hook descriptions: the verifier's view of each struct_ops member ---- */

#define ARG_PTR(n, what, size)                                                              \
	{ "arg" #n " (" what ")", (n) * 8, 8, false, true, (size), false, false }
#define ARG_HANDLE(n, what) { "arg" #n " (" what ")", (n) * 8, 8, false, true, 0, false, false }
#define ARG_SCALAR(n, what) { "arg" #n " (" what ")", (n) * 8, 8, false, false, 0, false, false }

static const struct gpuext_ctx_field block_hook_args[] = {
	ARG_PTR(0, "struct gpu_mem_ctx *", sizeof(struct gpu_mem_ctx)),
	ARG_HANDLE(1, "struct gpu_block *"),
	ARG_HANDLE(2, "struct gpu_list *"),
};

static const struct gpuext_ctx_field evict_hook_args[] = {
	ARG_PTR(0, "struct gpu_mem_ctx *", sizeof(struct gpu_mem_ctx)),
	ARG_HANDLE(1, "struct gpu_list *used"),
	ARG_HANDLE(2, "struct gpu_list *unused"),
};

static const struct gpuext_ctx_field prefetch_hook_args[] = {
	ARG_PTR(0, "struct gpu_mem_ctx *", sizeof(struct gpu_mem_ctx)),
	ARG_SCALAR(1, "page_index"),
	ARG_PTR(2, "const struct gpu_page_tree *", sizeof(struct gpu_page_tree)),
	ARG_PTR(3, "const struct gpu_page_range *", sizeof(struct gpu_page_range)),
	ARG_HANDLE(4, "struct gpu_region *"),
};

static const struct gpuext_ctx_field task_hook_args[] = {
	ARG_PTR(0, "struct gpu_task_ctx *", sizeof(struct gpu_task_ctx)),
};

static bool host_helper(const struct gpuext_func_proto *p)
{
	return p->kind == GPUEXT_FUNC_HELPER && !(p->flags & GPUEXT_FN_DEVICE_ONLY);
}

static bool is(const struct gpuext_func_proto *p, const char *name)
{
	return p->kind == GPUEXT_FUNC_KFUNC && !strcmp(p->name, name);
}

/* Per-hook allow-lists: the same rules core/kernel enforces with the kfunc set's filter. */
static bool allow_block_hook(const struct gpuext_func_proto *p)
{
	return host_helper(p) || is(p, GPUEXT_KF_MOVE_HEAD) || is(p, GPUEXT_KF_MOVE_TAIL) ||
	       is(p, GPUEXT_KF_LIST_NTH) || is(p, GPUEXT_KF_BLOCK_ID);
}

static bool allow_prefetch_hook(const struct gpuext_func_proto *p)
{
	return host_helper(p) || is(p, GPUEXT_KF_SET_PREFETCH);
}

static bool allow_task_hook(const struct gpuext_func_proto *p)
{
	return host_helper(p) || is(p, GPUEXT_KF_SET_ATTR);
}

static bool allow_bind_hook(const struct gpuext_func_proto *p)
{
	return allow_task_hook(p) || is(p, GPUEXT_KF_REJECT_BIND);
}

#define N(a) (sizeof(a) / sizeof((a)[0]))
/* r1 = the hook's arguments as an array of u64 (the BPF_PROG convention) */
#define OPS_CTX(f_) .ctx_size = N(f_) * 8, .fields = f_, .field_cnt = N(f_), .ctx_is_args = true

static const struct gpuext_prog_type_desc mem_descs[GPUEXT_MEM_HOOK_CNT] = {
	[GPUEXT_HOOK_BLOCK_ACTIVATE] = { .name = "gpu_mem_ops.gpu_block_activate",
					 OPS_CTX(block_hook_args), .allow = allow_block_hook,
					 .ret_min = 0, .ret_max = 0 },
	[GPUEXT_HOOK_BLOCK_ACCESS] = { .name = "gpu_mem_ops.gpu_block_access",
				       OPS_CTX(block_hook_args), .allow = allow_block_hook,
				       .ret_min = 0, .ret_max = 1 },
	[GPUEXT_HOOK_EVICT_PREPARE] = { .name = "gpu_mem_ops.gpu_evict_prepare",
					OPS_CTX(evict_hook_args), .allow = allow_block_hook,
					.ret_min = 0, .ret_max = 0 },
	[GPUEXT_HOOK_PAGE_PREFETCH] = { .name = "gpu_mem_ops.gpu_page_prefetch",
					OPS_CTX(prefetch_hook_args), .allow = allow_prefetch_hook,
					.ret_min = 0, .ret_max = 1 },
};

static const struct gpuext_prog_type_desc sched_descs[GPUEXT_SCHED_HOOK_CNT] = {
	[GPUEXT_HOOK_TASK_INIT] = { .name = "gpu_sched_ops.task_init", OPS_CTX(task_hook_args),
				    .allow = allow_task_hook, .ret_min = 0, .ret_max = 0 },
	[GPUEXT_HOOK_TASK_BIND] = { .name = "gpu_sched_ops.task_bind", OPS_CTX(task_hook_args),
				    .allow = allow_bind_hook, .ret_min = 0, .ret_max = 0 },
	[GPUEXT_HOOK_TASK_DESTROY] = { .name = "gpu_sched_ops.task_destroy",
				       OPS_CTX(task_hook_args), .allow = allow_task_hook,
				       .ret_min = 0, .ret_max = 0 },
};

static const char *const mem_hooks[GPUEXT_MEM_HOOK_CNT] = {
	"gpu_block_activate", "gpu_block_access", "gpu_evict_prepare", "gpu_page_prefetch",
};
static const char *const sched_hooks[GPUEXT_SCHED_HOOK_CNT] = {
	"task_init", "task_bind", "task_destroy",
};

static int hook_index(const char *type_name, const char *member, enum gpuext_policy_kind *kind)
{
	if (!strcmp(type_name, "gpu_mem_ops")) {
		*kind = GPUEXT_POLICY_MEM;
		for (int i = 0; i < GPUEXT_MEM_HOOK_CNT; i++)
			if (!strcmp(member, mem_hooks[i]))
				return i;
	} else if (!strcmp(type_name, "gpu_sched_ops")) {
		*kind = GPUEXT_POLICY_SCHED;
		for (int i = 0; i < GPUEXT_SCHED_HOOK_CNT; i++)
			if (!strcmp(member, sched_hooks[i]))
				return i;
	}
	return -1;
}

const struct gpuext_prog_type_desc *gpuext_hook_desc(const char *type_name, const char *member)
{
	enum gpuext_policy_kind kind;
	int i = hook_index(type_name, member, &kind);

	if (i < 0)
		return NULL;
	return kind == GPUEXT_POLICY_MEM ? &mem_descs[i] : &sched_descs[i];
}

/* ---- kfunc declarations (implementations come from the backend) ---- */

int gpuext_declare_gpu_kfuncs(struct gpuext_runtime *rt)
{
	static const struct gpuext_func_proto kf[] = {
		{ GPUEXT_FUNC_KFUNC, 0, GPUEXT_KF_MOVE_HEAD, NULL, GPUEXT_RET_INTEGER,
		  { GPUEXT_ARG_PTR_TO_BTF_ID, GPUEXT_ARG_PTR_TO_BTF_ID }, GPUEXT_FN_HOST_ONLY },
		{ GPUEXT_FUNC_KFUNC, 0, GPUEXT_KF_MOVE_TAIL, NULL, GPUEXT_RET_INTEGER,
		  { GPUEXT_ARG_PTR_TO_BTF_ID, GPUEXT_ARG_PTR_TO_BTF_ID }, GPUEXT_FN_HOST_ONLY },
		{ GPUEXT_FUNC_KFUNC, 0, GPUEXT_KF_LIST_NTH, NULL, GPUEXT_RET_HANDLE_OR_NULL,
		  { GPUEXT_ARG_PTR_TO_BTF_ID, GPUEXT_ARG_SCALAR }, GPUEXT_FN_HOST_ONLY },
		{ GPUEXT_FUNC_KFUNC, 0, GPUEXT_KF_BLOCK_ID, NULL, GPUEXT_RET_INTEGER,
		  { GPUEXT_ARG_PTR_TO_BTF_ID }, GPUEXT_FN_HOST_ONLY },
		{ GPUEXT_FUNC_KFUNC, 0, GPUEXT_KF_SET_PREFETCH, NULL, GPUEXT_RET_INTEGER,
		  { GPUEXT_ARG_PTR_TO_BTF_ID, GPUEXT_ARG_SCALAR, GPUEXT_ARG_SCALAR },
		  GPUEXT_FN_HOST_ONLY },
		{ GPUEXT_FUNC_KFUNC, 0, GPUEXT_KF_SET_ATTR, NULL, GPUEXT_RET_INTEGER,
		  { GPUEXT_ARG_PTR_TO_BTF_ID, GPUEXT_ARG_SCALAR, GPUEXT_ARG_SCALAR },
		  GPUEXT_FN_HOST_ONLY },
		{ GPUEXT_FUNC_KFUNC, 0, GPUEXT_KF_REJECT_BIND, NULL, GPUEXT_RET_INTEGER,
		  { GPUEXT_ARG_PTR_TO_BTF_ID }, GPUEXT_FN_HOST_ONLY },
	};

	for (size_t i = 0; i < N(kf); i++) {
		int err = gpuext_runtime__register_func(rt, &kf[i]);

		if (err < 0)
			return err;
	}
	return 0;
}

/* ---- policies ---- */

struct gpuext_policy {
	struct gpuext_runtime *rt;
	struct gpuext_object *obj;
	enum gpuext_policy_kind kind;
	char name[64];
	struct gpuext_prog *hooks[GPUEXT_MEM_HOOK_CNT];	/* NULL = not implemented */
	struct gpuext_jit *jit[GPUEXT_MEM_HOOK_CNT];	/* machine code, when opts.jit and bounded */
	uint64_t budget;
	char *ejected;
	struct gpuext_policy_stats stats;
};

int gpuext_policy__open(struct gpuext_object *obj, const struct gpuext_policy_opts *opts,
			struct gpuext_policy **out)
{
	struct gpuext_policy_opts o = { .sz = sizeof(o) };
	const struct gpuext_struct_ops *so = NULL;
	struct gpuext_runtime *rt;
	struct gpuext_policy *p;

	if (!obj || !out)
		return GPUEXT_ERR(EINVAL);
	*out = NULL;
	if (opts) {
		if (opts->sz < sizeof(size_t))
			return GPUEXT_ERR(EINVAL);
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	}
	if (!gpuext_object__prog_cnt(obj)) {
		gpuext_log(NULL, GPUEXT_LOG_WARN, "%s: the object has no programs, so no policy",
			   gpuext_object__name(obj));
		return GPUEXT_ERR(ENOENT);
	}
	rt = gpuext_prog__runtime(gpuext_object__prog(obj, 0));
	for (size_t i = 0; i < gpuext_object__struct_ops_cnt(obj); i++) {
		const struct gpuext_struct_ops *s = gpuext_object__struct_ops(obj, i);

		if (strcmp(s->type_name, "gpu_mem_ops") && strcmp(s->type_name, "gpu_sched_ops"))
			continue;
		if (!o.var_name || !strcmp(o.var_name, s->var_name)) {
			so = s;
			break;
		}
	}
	if (!so) {
		gpuext_log(rt, GPUEXT_LOG_WARN,
			   "%s: no struct gpu_mem_ops / gpu_sched_ops variable%s%s (put one in "
			   "SEC(\".struct_ops.link\"))",
			   gpuext_object__name(obj), o.var_name ? " named " : "",
			   o.var_name ? o.var_name : "");
		return GPUEXT_ERR(ENOENT);
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return GPUEXT_ERR(ENOMEM);
	p->rt = rt;
	p->obj = obj;
	p->budget = o.call_budget ? o.call_budget : DEFAULT_CALL_BUDGET;
	p->kind = strcmp(so->type_name, "gpu_mem_ops") ? GPUEXT_POLICY_SCHED : GPUEXT_POLICY_MEM;
	/* the ops' name[] field (same layout in BPF and here), else the variable name */
	{
		size_t noff = p->kind == GPUEXT_POLICY_MEM ? offsetof(struct gpu_mem_ops, name)
							   : offsetof(struct gpu_sched_ops, name);

		if (so->data && so->data_size >= noff + 16 && ((const char *)so->data)[noff])
			snprintf(p->name, sizeof(p->name), "%.15s", (const char *)so->data + noff);
		else
			snprintf(p->name, sizeof(p->name), "%s", so->var_name);
	}
	for (size_t m = 0; m < so->member_cnt; m++) {
		const struct gpuext_struct_ops_member *mb = &so->members[m];
		enum gpuext_policy_kind kind;
		int hook = hook_index(so->type_name, mb->member, &kind);
		struct gpuext_verify_result res = { .sz = sizeof(res) };
		int err;

		if (hook < 0) {
			gpuext_log(rt, GPUEXT_LOG_WARN, "policy '%s': struct %s has no hook '%s'",
				   p->name, so->type_name, mb->member);
			gpuext_policy__close(p);
			return GPUEXT_ERR(EINVAL);
		}
		GPUEXT_OPTS(gpuext_verify_opts, vo, .type_desc = gpuext_hook_desc(so->type_name, mb->member),
			    .log_level = o.log_level);
		err = gpuext_prog__verify(mb->prog, &vo, &res);
		if (err) {
			gpuext_log(rt, GPUEXT_LOG_WARN,
				   "policy '%s': hook %s (program '%s') rejected by the verifier: %s at insn %u",
				   p->name, mb->member, gpuext_prog__name(mb->prog),
				   err == -EACCES ? gpuext_rule_name(res.rule) : strerror(-err),
				   res.insn_idx);
			gpuext_policy__close(p);
			return GPUEXT_ERR(-err);
		}
		p->hooks[hook] = mb->prog;
		if (o.jit && res.max_work && res.max_work <= p->budget) {
			const struct gpuext_prog_type_desc *hd =
				gpuext_hook_desc(so->type_name, mb->member);
			GPUEXT_OPTS(gpuext_jit_opts, jo, .ctx_size = hd->ctx_size, .verified = true);

			err = gpuext_jit__new(mb->prog, &jo, &p->jit[hook]);
			if (err) {
				gpuext_log(rt, GPUEXT_LOG_WARN,
					   "policy '%s': hook %s could not be compiled (%s); it runs in the "
					   "interpreter", p->name, mb->member, strerror(-err));
				p->jit[hook] = NULL;
			} else {
				p->stats.jitted_hooks++;
			}
		}
	}
	*out = p;
	return 0;
}

void gpuext_policy__close(struct gpuext_policy *p)
{
	if (!p)
		return;
	for (int i = 0; i < GPUEXT_MEM_HOOK_CNT; i++)
		gpuext_jit__free(p->jit[i]);
	free(p->ejected);
	free(p);
}

enum gpuext_policy_kind gpuext_policy__kind(const struct gpuext_policy *p) { return p->kind; }
const char *gpuext_policy__name(const struct gpuext_policy *p) { return p->name; }
const char *gpuext_policy__ejected(const struct gpuext_policy *p) { return p->ejected; }

bool gpuext_policy__has_hook(const struct gpuext_policy *p, unsigned hook)
{
	unsigned n = p->kind == GPUEXT_POLICY_MEM ? GPUEXT_MEM_HOOK_CNT : GPUEXT_SCHED_HOOK_CNT;

	return hook < n && p->hooks[hook];
}

void gpuext_policy__stats(const struct gpuext_policy *p, struct gpuext_policy_stats *out)
{
	*out = p->stats;
}

int gpuext_policy__call(struct gpuext_policy *p, unsigned hook, const uint64_t *args,
			unsigned nargs, const struct gpuext_mem_region *regions, size_t region_cnt,
			void *user, uint64_t *ret)
{
	const char *hname;
	struct gpuext_prog *prog;
	int err;

	if (p->ejected)
		return -ECANCELED;
	if (!gpuext_policy__has_hook(p, hook))
		return -ENOENT;
	prog = p->hooks[hook];
	hname = p->kind == GPUEXT_POLICY_MEM ? mem_hooks[hook] : sched_hooks[hook];
	GPUEXT_OPTS(gpuext_run_opts, ro, .ctx = (void *)args, .ctx_len = (size_t)nargs * 8,
		    .user = user, .insn_limit = p->budget, .regions = regions,
		    .region_cnt = region_cnt);
	if (p->jit[hook])
		err = gpuext_jit__run(p->jit[hook], &ro, ret);
	else
		err = gpuext_prog__run(prog, &ro, ret);
	p->stats.calls[hook]++;
	p->stats.insns += ro.insn_executed;
	if (ro.insn_executed > p->stats.max_call_insns)
		p->stats.max_call_insns = ro.insn_executed;
	if (err) {
		char why[256];

		if (err == -E2BIG)
			snprintf(why, sizeof(why),
				 "hook %s exceeded its budget of %llu instructions per call",
				 hname, (unsigned long long)p->budget);
		else
			snprintf(why, sizeof(why), "hook %s failed: %s (after %llu instructions)",
				 hname, strerror(-err), (unsigned long long)ro.insn_executed);
		p->ejected = strdup(why);
		gpuext_log(p->rt, GPUEXT_LOG_WARN, "policy '%s' ejected: %s; the default resumes",
			   p->name, why);
		return -ECANCELED;
	}
	return 0;
}

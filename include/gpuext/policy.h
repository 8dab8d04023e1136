/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Policies: a struct_ops variable of a BPF object (struct gpu_mem_ops or
 * struct gpu_sched_ops, see gpu_ops.h), verified member by member with the
 * context, kfuncs and return range of that hook, then called by a backend
 * at its hook points.
 *
 * The driver never waits on a policy: every call has an instruction budget;
 * a call that faults, errors or exceeds it ejects the policy (with a logged
 * reason) and the backend falls back to its default for that call and all
 * later ones.
 */
#ifndef GPUEXT_POLICY_H
#define GPUEXT_POLICY_H

#include "gpuext/gpu_ops.h"
#include "gpuext/gpuext.h"
#include "gpuext/verifier.h"

#ifdef __cplusplus
extern "C" {
#endif

enum gpuext_policy_kind {
	GPUEXT_POLICY_MEM = 0,	/* struct gpu_mem_ops */
	GPUEXT_POLICY_SCHED,	/* struct gpu_sched_ops */
};

/* Hook indices, in struct order. */
enum gpuext_mem_hook {
	GPUEXT_HOOK_BLOCK_ACTIVATE = 0,
	GPUEXT_HOOK_BLOCK_ACCESS,
	GPUEXT_HOOK_EVICT_PREPARE,
	GPUEXT_HOOK_PAGE_PREFETCH,
	GPUEXT_MEM_HOOK_CNT,
};

enum gpuext_sched_hook {
	GPUEXT_HOOK_TASK_INIT = 0,
	GPUEXT_HOOK_TASK_BIND,
	GPUEXT_HOOK_TASK_DESTROY,
	GPUEXT_SCHED_HOOK_CNT,
};

struct gpuext_policy;

struct gpuext_policy_opts {
	size_t sz;
	/* Which struct_ops variable of the object; NULL = the only/first one. */
	const char *var_name;
	/* Per-call instruction budget; 0 = 100000. */
	uint64_t call_budget;
	/* Verifier log level for the members (0 = rejections only). */
	uint32_t log_level;
	/*
	 * Run hooks as host machine code (the ORC JIT) instead of the reference
	 * interpreter. Only hooks whose longest path, as the verifier bounded it,
	 * fits the call budget are compiled: machine code cannot be stopped midway,
	 * so the static bound takes the place of the interpreter's counter.
	 */
	bool jit;
};

/*
 * Binds a struct_ops variable of @obj as a policy: every member program is
 * verified as its hook (context, allowed kfuncs, return range). -EACCES
 * when a member is rejected (the log names the hook and the rule), -ENOENT
 * without a gpu_mem_ops/gpu_sched_ops variable, -EINVAL for an unknown
 * member. The policy keeps pointers into @obj: close it first.
 */
int gpuext_policy__open(struct gpuext_object *obj, const struct gpuext_policy_opts *opts,
			struct gpuext_policy **out);
void gpuext_policy__close(struct gpuext_policy *p);

enum gpuext_policy_kind gpuext_policy__kind(const struct gpuext_policy *p);
const char *gpuext_policy__name(const struct gpuext_policy *p);	/* the ops' name field, or the variable */
bool gpuext_policy__has_hook(const struct gpuext_policy *p, unsigned hook);
/* NULL while healthy; after an ejection, why. */
const char *gpuext_policy__ejected(const struct gpuext_policy *p);

struct gpuext_policy_stats {
	uint64_t calls[4];	/* per hook index (the larger of both hook counts) */
	uint32_t jitted_hooks;	/* hooks running as machine code */
	uint64_t insns;		/* executed, all hooks */
	uint64_t max_call_insns;
};
void gpuext_policy__stats(const struct gpuext_policy *p, struct gpuext_policy_stats *out);

/*
 * Calls @hook with the hook's arguments (pointers and scalars as u64, in
 * prototype order). @user is handed to kfuncs (gpuext_exec__user()): the
 * backend's state for this call; @regions are the structs the arguments
 * point to (read-only for the program). Returns 0 and sets *ret; -ENOENT if the
 * policy does not implement the hook (use the default); -ECANCELED if the
 * policy is (or just got) ejected (use the default).
 */
int gpuext_policy__call(struct gpuext_policy *p, unsigned hook, const uint64_t *args,
			unsigned nargs, const struct gpuext_mem_region *regions, size_t region_cnt,
			void *user, uint64_t *ret);

/*
 * The verifier's description of a struct_ops hook (context, kfuncs, return
 * range), or NULL if @type_name/@member is not part of the ABI.
 */
const struct gpuext_prog_type_desc *gpuext_hook_desc(const char *type_name, const char *member);

/*
 * Every runtime declares the kfuncs of gpu_ops.h with their signatures; a
 * backend supplies implementations with gpuext_runtime__set_func_impl().
 * Their names, for that call:
 */
#define GPUEXT_KF_MOVE_HEAD "bpf_gpu_block_move_head"
#define GPUEXT_KF_MOVE_TAIL "bpf_gpu_block_move_tail"
#define GPUEXT_KF_LIST_NTH "bpf_gpu_list_nth"
#define GPUEXT_KF_BLOCK_ID "bpf_gpu_block_id"
#define GPUEXT_KF_SET_PREFETCH "bpf_gpu_set_prefetch_region"
#define GPUEXT_KF_SET_ATTR "bpf_gpu_set_attr"
#define GPUEXT_KF_REJECT_BIND "bpf_gpu_reject_bind"

#ifdef __cplusplus
}
#endif
#endif

// SPDX-License-Identifier: GPL-2.0-only
/*
 * The struct_ops types gpu_mem_ops / gpu_sched_ops and the seven kfuncs.
 *
 * Attach is link based (policies put their struct_ops variables in
 * SEC(".struct_ops.link")): reg() fills the kind's slot, unreg() empties it
 * and waits for RCU, so when the loader's link goes away (close, exit,
 * SIGKILL) no call into the policy is still running and the defaults take
 * over. Which kfunc a hook may call is decided at load time by the kfunc
 * set's filter, with the same allow-lists as the user-space verifier
 * (core/policy.c); everything a kfunc is handed is checked again at run time.
 */
#define pr_fmt(fmt) "gpuext: " fmt

#include <linux/bpf.h>
#include <linux/bpf_verifier.h>
#include <linux/btf.h>
#include <linux/btf_ids.h>
#include <linux/module.h>
#include <linux/string.h>

#include "gpuext_internal.h"

static const char *const mem_hooks[GPUEXT_MEM_HOOKS] = {
	"gpu_block_activate", "gpu_block_access", "gpu_evict_prepare", "gpu_page_prefetch",
};
static const char *const sched_hooks[GPUEXT_SCHED_HOOKS] = {
	"task_init", "task_bind", "task_destroy",
};

struct gpuext_slot gpuext_slots[GPUEXT_KINDS] = {
	[GPUEXT_KIND_MEM] = { .type_name = "gpu_mem_ops", .hooks = mem_hooks },
	[GPUEXT_KIND_SCHED] = { .type_name = "gpu_sched_ops", .hooks = sched_hooks },
};
DEFINE_MUTEX(gpuext_attach_lock);

static struct btf *gpuext_btf;	/* our module's BTF, from the types' init() */

const char *gpuext_hook_name(enum gpuext_kind kind, unsigned int hook)
{
	unsigned int n = kind == GPUEXT_KIND_MEM ? GPUEXT_MEM_HOOKS : GPUEXT_SCHED_HOOKS;

	return hook < n ? gpuext_slots[kind].hooks[hook] : "?";
}

/* ---- ejection ------------------------------------------------------------ */

void gpuext_eject(enum gpuext_kind kind, void *kdata, const char *hook, const char *fmt, ...)
{
	struct gpuext_slot *s = &gpuext_slots[kind];
	char why[128], ev[224], name[16];
	va_list ap;

	if (READ_ONCE(s->kdata) != kdata)
		return;
	/* reg() cannot reuse the slot before ->ejected is set (below): name is ours. */
	memcpy(name, s->name, sizeof(name));
	/*
	 * Only while the slot still calls this attachment, and only once: the
	 * cmpxchg cannot clear a newer policy's ops. Dispatch reads ops under
	 * RCU; unreg() waits for the calls still running.
	 */
	if (cmpxchg((__force void **)&s->ops, kdata, NULL) != kdata)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(ev, sizeof(ev), "policy %s hook %s: %s", name, hook, why);
	strscpy(s->eject_reason, ev, sizeof(s->eject_reason));
	s->eject_count++;
	atomic_set(&s->ejected, 1);	/* from here on a new policy may attach */
	pr_warn("policy %s (%s) ejected at hook %s: %s; the default resumes\n",
		name, s->type_name, hook, why);
	snprintf(ev, sizeof(ev), "ejected policy=%s hook=%s %s", name, hook, why);
	gpuext_event_str(ev);
}

bool gpuext_check_ret(enum gpuext_kind kind, void *kdata, unsigned int hook, int ret, int max)
{
	if (ret < 0 || ret > max) {
		gpuext_eject(kind, kdata, gpuext_hook_name(kind, hook),
			     "returned %d, outside 0..%d", ret, max);
		return false;
	}
	/* Ejected during this call (too many bad kfunc calls): its decisions are void. */
	return rcu_access_pointer(gpuext_slots[kind].ops) == kdata;
}

void gpuext_kfunc_failed(enum gpuext_kind kind, const char *kfunc, int err)
{
	struct gpuext_slot *s = &gpuext_slots[kind];
	void *kdata = READ_ONCE(s->kdata);
	int n = atomic_inc_return(&s->bad_calls);

	if (gpuext_kfunc_err_limit && n > gpuext_kfunc_err_limit && kdata)
		gpuext_eject(kind, kdata, kfunc, "more than %u invalid kfunc calls (last: %s %d)",
			     gpuext_kfunc_err_limit, kfunc, err);
}

/* ---- struct_ops: shared callbacks ----------------------------------------- */

static bool gpuext_is_valid_access(int off, int size, enum bpf_access_type type,
				   const struct bpf_prog *prog, struct bpf_insn_access_aux *info)
{
	return bpf_tracing_btf_ctx_access(off, size, type, prog, info);
}

/* Contexts, trees and ranges are read-only: policies advise, the driver decides. */
static int gpuext_btf_struct_access(struct bpf_verifier_log *log, const struct bpf_reg_state *reg,
				    int off, int size)
{
	bpf_log(log, "gpuext: hook arguments are read-only (write of %d bytes at offset %d)\n",
		size, off);
	return -EACCES;
}

static const struct bpf_func_proto *gpuext_get_func_proto(enum bpf_func_id func_id,
							  const struct bpf_prog *prog)
{
	return bpf_base_func_proto(func_id, prog);
}

static const struct bpf_verifier_ops gpuext_verifier_ops = {
	.get_func_proto = gpuext_get_func_proto,
	.is_valid_access = gpuext_is_valid_access,
	.btf_struct_access = gpuext_btf_struct_access,
};

static int gpuext_st_init(struct btf *btf)
{
	gpuext_btf = btf;
	return 0;
}

static int gpuext_check_member(const struct btf_type *t, const struct btf_member *member,
			       const struct bpf_prog *prog)
{
	/* Hooks run under the device spinlock: nothing may sleep. */
	if (prog->sleepable)
		return -EINVAL;
	return 0;
}

/*
 * The only data member is name[16]: printable characters. A name filling
 * all 16 bytes (legal C, accepted by the user-space loader) is cut to 15
 * so that the kernel's copy is NUL-terminated.
 */
static int gpuext_init_member(const struct btf_type *t, const struct btf_member *member,
			      void *kdata, const void *udata, u32 name_off)
{
	u32 moff = __btf_member_bit_offset(t, member) / 8;
	const char *src = (const char *)udata + name_off;
	size_t i, n;

	if (moff != name_off)
		return 0;
	n = strnlen(src, 16);
	if (n == 0) {
		pr_warn("a policy needs a name (struct_ops member .name)\n");
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		if (src[i] < 0x21 || src[i] > 0x7e) {
			pr_warn("policy name has a non-printable character at %zu\n", i);
			return -EINVAL;
		}
	}
	strscpy_pad((char *)kdata + name_off, src, 16);
	if (n == 16)
		pr_notice("policy name %.16s cut to 15 characters\n", src);
	return 1;
}

static int gpuext_mem_init_member(const struct btf_type *t, const struct btf_member *member,
				  void *kdata, const void *udata)
{
	return gpuext_init_member(t, member, kdata, udata, offsetof(struct gpu_mem_ops, name));
}

static int gpuext_sched_init_member(const struct btf_type *t, const struct btf_member *member,
				    void *kdata, const void *udata)
{
	return gpuext_init_member(t, member, kdata, udata, offsetof(struct gpu_sched_ops, name));
}

static int gpuext_reg(enum gpuext_kind kind, void *kdata, const char *name)
{
	struct gpuext_slot *s = &gpuext_slots[kind];
	int i, n = kind == GPUEXT_KIND_MEM ? GPUEXT_MEM_HOOKS : GPUEXT_SCHED_HOOKS;
	char ev[96];

	mutex_lock(&gpuext_attach_lock);
	/* An ejected attachment keeps its link but no longer owns the slot. */
	if (s->kdata && !atomic_read(&s->ejected)) {
		pr_warn("cannot attach %s (%s): %s is attached; detach it first\n",
			name, s->type_name, s->name);
		mutex_unlock(&gpuext_attach_lock);
		return -EBUSY;
	}
	strscpy(s->name, name, sizeof(s->name));
	atomic_set(&s->ejected, 0);
	atomic_set(&s->bad_calls, 0);
	for (i = 0; i < n; i++) {
		atomic64_set(&s->calls[i], 0);
		atomic64_set(&s->defaults[i], 0);
	}
	s->attach_count++;
	WRITE_ONCE(s->kdata, kdata);
	rcu_assign_pointer(s->ops, kdata);
	mutex_unlock(&gpuext_attach_lock);
	pr_info("attached %s (%s)\n", name, s->type_name);
	snprintf(ev, sizeof(ev), "attached %s (%s)", name, s->type_name);
	gpuext_event_str(ev);
	return 0;
}

static void gpuext_unreg(enum gpuext_kind kind, void *kdata, const char *name)
{
	struct gpuext_slot *s = &gpuext_slots[kind];
	char ev[96];

	mutex_lock(&gpuext_attach_lock);
	if (s->kdata == kdata) {
		RCU_INIT_POINTER(s->ops, NULL);
		WRITE_ONCE(s->kdata, NULL);
	}
	mutex_unlock(&gpuext_attach_lock);
	/*
	 * Whether it still owned the slot or was ejected (or replaced) before,
	 * calls that loaded its ops may still run: they end before its
	 * programs can be freed, which happens once we return.
	 */
	synchronize_rcu();
	pr_info("detached %s (%s)\n", name, s->type_name);
	snprintf(ev, sizeof(ev), "detached %s (%s)", name, s->type_name);
	gpuext_event_str(ev);
}

/* ---- struct gpu_mem_ops ---------------------------------------------------- */

static int gpuext_mem_reg(void *kdata, struct bpf_link *link)
{
	return gpuext_reg(GPUEXT_KIND_MEM, kdata, ((struct gpu_mem_ops *)kdata)->name);
}

static void gpuext_mem_unreg(void *kdata, struct bpf_link *link)
{
	gpuext_unreg(GPUEXT_KIND_MEM, kdata, ((struct gpu_mem_ops *)kdata)->name);
}

/* CFI stubs: the prototypes the trampolines are built against. Never called. */
static int stub_block_activate(struct gpu_mem_ctx *ctx, struct gpu_block *block,
			       struct gpu_list *list)
{
	return 0;
}

static int stub_block_access(struct gpu_mem_ctx *ctx, struct gpu_block *block,
			     struct gpu_list *list)
{
	return 0;
}

static int stub_evict_prepare(struct gpu_mem_ctx *ctx, struct gpu_list *used,
			      struct gpu_list *unused)
{
	return 0;
}

static int stub_page_prefetch(struct gpu_mem_ctx *ctx, u32 page_index,
			      const struct gpu_page_tree *tree,
			      const struct gpu_page_range *max_region,
			      struct gpu_region *result_region)
{
	return 0;
}

static struct gpu_mem_ops gpuext_mem_stubs = {
	.gpu_block_activate = stub_block_activate,
	.gpu_block_access = stub_block_access,
	.gpu_evict_prepare = stub_evict_prepare,
	.gpu_page_prefetch = stub_page_prefetch,
};

static struct bpf_struct_ops gpuext_mem_st_ops = {
	.verifier_ops = &gpuext_verifier_ops,
	.init = gpuext_st_init,
	.check_member = gpuext_check_member,
	.init_member = gpuext_mem_init_member,
	.reg = gpuext_mem_reg,
	.unreg = gpuext_mem_unreg,
	.cfi_stubs = &gpuext_mem_stubs,
	.name = "gpu_mem_ops",
	.owner = THIS_MODULE,
};

/* ---- struct gpu_sched_ops -------------------------------------------------- */

static int gpuext_sched_reg(void *kdata, struct bpf_link *link)
{
	return gpuext_reg(GPUEXT_KIND_SCHED, kdata, ((struct gpu_sched_ops *)kdata)->name);
}

static void gpuext_sched_unreg(void *kdata, struct bpf_link *link)
{
	gpuext_unreg(GPUEXT_KIND_SCHED, kdata, ((struct gpu_sched_ops *)kdata)->name);
}

static int stub_task(struct gpu_task_ctx *ctx)
{
	return 0;
}

static struct gpu_sched_ops gpuext_sched_stubs = {
	.task_init = stub_task,
	.task_bind = stub_task,
	.task_destroy = stub_task,
};

static struct bpf_struct_ops gpuext_sched_st_ops = {
	.verifier_ops = &gpuext_verifier_ops,
	.init = gpuext_st_init,
	.check_member = gpuext_check_member,
	.init_member = gpuext_sched_init_member,
	.reg = gpuext_sched_reg,
	.unreg = gpuext_sched_unreg,
	.cfi_stubs = &gpuext_sched_stubs,
	.name = "gpu_sched_ops",
	.owner = THIS_MODULE,
};

/* ---- kfuncs ------------------------------------------------------------- */

/* @list was handed to the hook running now on its device (the device lock is held). */
static bool list_in_hook(const struct gpu_list *list)
{
	return list && list->dev && list->hook_token &&
	       list->hook_token == list->dev->cur_token;
}

static void list_moved(struct gpu_list *list)
{
	list->cur = NULL;
}

static int block_move(struct gpu_block *block, struct gpu_list *list, bool head,
		      const char *kfunc)
{
	if (!list_in_hook(list) || !block || block->list != list) {
		gpuext_kfunc_failed(GPUEXT_KIND_MEM, kfunc, -EINVAL);
		return -EINVAL;
	}
	if (head)
		list_move(&block->node, &list->blocks);
	else
		list_move_tail(&block->node, &list->blocks);
	list_moved(list);
	return 0;
}

__bpf_kfunc_start_defs();

/* Reorder only: @block stays on @list, which must be a list this hook was given. */
__bpf_kfunc int bpf_gpu_block_move_head(struct gpu_block *block, struct gpu_list *list)
{
	return block_move(block, list, true, "bpf_gpu_block_move_head");
}

__bpf_kfunc int bpf_gpu_block_move_tail(struct gpu_block *block, struct gpu_list *list)
{
	return block_move(block, list, false, "bpf_gpu_block_move_tail");
}

__bpf_kfunc struct gpu_block *bpf_gpu_list_nth(struct gpu_list *list, u32 n)
{
	struct list_head *pos;
	u32 i;

	if (!list_in_hook(list)) {
		gpuext_kfunc_failed(GPUEXT_KIND_MEM, "bpf_gpu_list_nth", -EINVAL);
		return NULL;
	}
	if (n >= list->count)
		return NULL;	/* the end of a walk, not an error */
	if (list->cur && n == list->cur_n + 1) {
		pos = list->cur->next;
	} else {
		pos = list->blocks.next;
		for (i = 0; i < n; i++)
			pos = pos->next;
	}
	list->cur = pos;
	list->cur_n = n;
	return list_entry(pos, struct gpu_block, node);
}

__bpf_kfunc u64 bpf_gpu_block_id(struct gpu_block *block)
{
	/* The block of a hook or of list_nth: on a list handed to this hook. */
	if (!block || !list_in_hook(block->list)) {
		gpuext_kfunc_failed(GPUEXT_KIND_MEM, "bpf_gpu_block_id", -EINVAL);
		return (u64)-EINVAL;
	}
	return block->info.block_id;
}

__bpf_kfunc int bpf_gpu_set_prefetch_region(struct gpu_region *region, u32 first_page,
					    u32 last_page)
{
	u32 first, last;

	if (!region || !region->hook_token || first_page > last_page)
		goto bad;
	/* The driver clamps to what it allows. */
	first = max(first_page, region->max.first_page);
	last = min(last_page, region->max.last_page);
	if (first > last)
		goto bad;
	region->set.first_page = first;
	region->set.last_page = last;
	region->is_set = true;
	return 0;
bad:
	gpuext_kfunc_failed(GPUEXT_KIND_MEM, "bpf_gpu_set_prefetch_region", -EINVAL);
	return -EINVAL;
}

static struct gpuext_sched_call *sched_call_of(struct gpu_task_ctx *ctx)
{
	struct gpuext_sched_call *c = container_of(ctx, struct gpuext_sched_call, ctx);

	return ctx && c->magic == GPUEXT_SCHED_CALL_MAGIC ? c : NULL;
}

__bpf_kfunc int bpf_gpu_set_attr(struct gpu_task_ctx *ctx, u32 attr, u64 value)
{
	struct gpuext_sched_call *c = sched_call_of(ctx);
	int err = -EINVAL;

	if (!c)
		goto out;
	switch (attr) {
	case GPU_ATTR_TIMESLICE_US:
		if (value < GPU_TIMESLICE_MIN_US || value > GPU_TIMESLICE_MAX_US)
			goto out;
		c->ctx.timeslice_us = value;	/* applied if the hook returns normally */
		break;
	case GPU_ATTR_LEVEL:
		if (value > GPU_LEVEL_HIGH)
			goto out;
		c->ctx.level = value;
		break;
	default:
		goto out;	/* -EINVAL, as on the simulator */
	}
	c->attr_changed = true;
	return 0;
out:
	gpuext_kfunc_failed(GPUEXT_KIND_SCHED, "bpf_gpu_set_attr", err);
	return err;
}

__bpf_kfunc int bpf_gpu_reject_bind(struct gpu_task_ctx *ctx)
{
	struct gpuext_sched_call *c = sched_call_of(ctx);

	/* The filter keeps it to task_bind; check anyway, ctx is all we get. */
	if (!c || c->hook != 1) {
		gpuext_kfunc_failed(GPUEXT_KIND_SCHED, "bpf_gpu_reject_bind", -EINVAL);
		return -EINVAL;
	}
	c->reject = true;
	return 0;
}

__bpf_kfunc_end_defs();

BTF_KFUNCS_START(gpuext_kfunc_ids)
BTF_ID_FLAGS(func, bpf_gpu_block_move_head)
BTF_ID_FLAGS(func, bpf_gpu_block_move_tail)
BTF_ID_FLAGS(func, bpf_gpu_list_nth, KF_RET_NULL)
BTF_ID_FLAGS(func, bpf_gpu_block_id)
BTF_ID_FLAGS(func, bpf_gpu_set_prefetch_region)
BTF_ID_FLAGS(func, bpf_gpu_set_attr)
BTF_ID_FLAGS(func, bpf_gpu_reject_bind)
BTF_KFUNCS_END(gpuext_kfunc_ids)

/* Unsorted (unlike the set above): index = enum below. */
enum {
	KF_MOVE_HEAD, KF_MOVE_TAIL, KF_LIST_NTH, KF_BLOCK_ID, KF_SET_PREFETCH,
	KF_SET_ATTR, KF_REJECT_BIND, KF_CNT,
};
BTF_ID_LIST(gpuext_kfunc_btf_ids)
BTF_ID(func, bpf_gpu_block_move_head)
BTF_ID(func, bpf_gpu_block_move_tail)
BTF_ID(func, bpf_gpu_list_nth)
BTF_ID(func, bpf_gpu_block_id)
BTF_ID(func, bpf_gpu_set_prefetch_region)
BTF_ID(func, bpf_gpu_set_attr)
BTF_ID(func, bpf_gpu_reject_bind)

BTF_ID_LIST(gpuext_type_btf_ids)
BTF_ID(struct, gpu_mem_ops)
BTF_ID(struct, gpu_sched_ops)

#define BIT_KF(k) (1u << (k))
#define BLOCK_KFUNCS (BIT_KF(KF_MOVE_HEAD) | BIT_KF(KF_MOVE_TAIL) | BIT_KF(KF_LIST_NTH) | \
		      BIT_KF(KF_BLOCK_ID))

/* Per-hook allow-lists, the same as core/policy.c's (allow_*_hook). */
static const u32 mem_allowed[GPUEXT_MEM_HOOKS] = {
	BLOCK_KFUNCS,			/* gpu_block_activate */
	BLOCK_KFUNCS,			/* gpu_block_access */
	BLOCK_KFUNCS,			/* gpu_evict_prepare */
	BIT_KF(KF_SET_PREFETCH),	/* gpu_page_prefetch */
};
static const u32 sched_allowed[GPUEXT_SCHED_HOOKS] = {
	BIT_KF(KF_SET_ATTR),				/* task_init */
	BIT_KF(KF_SET_ATTR) | BIT_KF(KF_REJECT_BIND),	/* task_bind */
	BIT_KF(KF_SET_ATTR),				/* task_destroy */
};

/*
 * Load-time allow-list (non-zero: the verifier says "calling kernel
 * function X is not allowed"). The hook is known before verification: the
 * program's attach_btf_id names the struct_ops type, expected_attach_type
 * the member. Programs of other struct_ops types get none of our kfuncs.
 */
static int gpuext_kfunc_filter(const struct bpf_prog *prog, u32 kfunc_id)
{
	u32 member = prog->expected_attach_type, k, allowed;

	for (k = 0; k < KF_CNT; k++)
		if (gpuext_kfunc_btf_ids[k] == kfunc_id)
			break;
	if (k == KF_CNT)
		return 0;	/* not ours */
	if (prog->type != BPF_PROG_TYPE_STRUCT_OPS || !gpuext_btf ||
	    prog->aux->attach_btf != gpuext_btf)
		return -EACCES;
	if (prog->aux->attach_btf_id == gpuext_type_btf_ids[0] && member < GPUEXT_MEM_HOOKS)
		allowed = mem_allowed[member];
	else if (prog->aux->attach_btf_id == gpuext_type_btf_ids[1] &&
		 member < GPUEXT_SCHED_HOOKS)
		allowed = sched_allowed[member];
	else
		return -EACCES;
	return allowed & BIT_KF(k) ? 0 : -EACCES;
}

static const struct btf_kfunc_id_set gpuext_kfunc_set = {
	.owner = THIS_MODULE,
	.set = &gpuext_kfunc_ids,
	.filter = gpuext_kfunc_filter,
};

int gpuext_ops_register(void)
{
	int err;

	/* kfuncs first: struct_ops programs are verified against them. */
	err = register_btf_kfunc_id_set(BPF_PROG_TYPE_STRUCT_OPS, &gpuext_kfunc_set);
	if (err) {
		pr_err("registering the kfuncs failed: %d (module BTF missing?)\n", err);
		return err;
	}
	err = register_bpf_struct_ops(&gpuext_mem_st_ops, gpu_mem_ops);
	if (err) {
		pr_err("registering struct_ops gpu_mem_ops failed: %d\n", err);
		return err;
	}
	err = register_bpf_struct_ops(&gpuext_sched_st_ops, gpu_sched_ops);
	if (err) {
		pr_err("registering struct_ops gpu_sched_ops failed: %d\n", err);
		return err;
	}
	return 0;
}

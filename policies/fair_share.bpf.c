// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * fair_share: every process gets the same GPU time per runlist round, however
 * many task groups (contexts, streams) it opens.
 *
 * The stock runlist gives each task group its own 1024 us slice, so a process
 * with eight groups gets eight times the GPU of a process with one. Here a
 * process's PROC_SLICE_US is split between its live groups: a group's slice
 * is PROC_SLICE_US / groups, set when the group is created and again when it
 * first submits (by then its siblings exist). A process may bind at most
 * MAX_GROUPS groups; further binds are refused, so no tenant can flood the
 * runlist, and the slice never drops below PROC_SLICE_US / MAX_GROUPS.
 *
 * When it wins: multi-tenant GPUs where tenants do not choose their own
 * stream counts (KRYPTON's isolation argument). A group can only set its own
 * slice, so a process whose groups bind before its siblings are created keeps
 * a larger share until they rebind.
 */
#include "common.h"

#define PROC_SLICE_US GPU_TIMESLICE_DEFAULT_US
#define MAX_GROUPS 8

struct groups {
	__u32 alive;	/* created and not destroyed */
	__u32 bound;	/* admitted by task_bind */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);		/* tgid */
	__type(value, struct groups);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);		/* task id */
	__type(value, __u8);		/* 1 = admitted */
} admitted SEC(".maps");

static __always_inline void set_share(struct gpu_task_ctx *tctx, __u32 groups)
{
	__u32 slice = PROC_SLICE_US / (groups ? groups : 1);

	bpf_gpu_set_attr(tctx, GPU_ATTR_TIMESLICE_US, max_u32(slice, GPU_TIMESLICE_MIN_US));
}

SEC("struct_ops/task_init")
int BPF_PROG(fs_init, struct gpu_task_ctx *tctx)
{
	struct groups *g, first = { .alive = 1 };
	__u32 tgid = tctx->tgid;

	g = bpf_map_lookup_elem(&procs, &tgid);
	if (g)
		g->alive++;
	else
		bpf_map_update_elem(&procs, &tgid, &first, BPF_ANY);
	set_share(tctx, g ? g->alive : 1);
	return 0;
}

SEC("struct_ops/task_bind")
int BPF_PROG(fs_bind, struct gpu_task_ctx *tctx)
{
	__u32 tgid = tctx->tgid;
	__u64 id = tctx->task_id;
	struct groups *g = bpf_map_lookup_elem(&procs, &tgid);
	__u8 yes = 1;

	if (!g)
		return 0;	/* created before the policy was attached */
	if (g->bound >= MAX_GROUPS) {
		bpf_gpu_reject_bind(tctx);
		return 0;
	}
	g->bound++;
	bpf_map_update_elem(&admitted, &id, &yes, BPF_ANY);
	set_share(tctx, min_u32(g->alive, MAX_GROUPS));
	return 0;
}

SEC("struct_ops/task_destroy")
int BPF_PROG(fs_destroy, struct gpu_task_ctx *tctx)
{
	__u32 tgid = tctx->tgid;
	__u64 id = tctx->task_id;
	struct groups *g = bpf_map_lookup_elem(&procs, &tgid);

	if (!g)
		return 0;
	if (bpf_map_lookup_elem(&admitted, &id) && g->bound)
		g->bound--;
	bpf_map_delete_elem(&admitted, &id);
	if (g->alive <= 1)
		bpf_map_delete_elem(&procs, &tgid);
	else
		g->alive--;
	return 0;
}

SEC(".struct_ops.link")
struct gpu_sched_ops fair_share = {
	.task_init = (void *)fs_init,
	.task_bind = (void *)fs_bind,
	.task_destroy = (void *)fs_destroy,
	.name = "fair_share",
};

char LICENSE[] SEC("license") = "Dual BSD/GPL";

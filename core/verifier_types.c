/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Program types: their contexts, allowed calls and return ranges, and the
 * names of the verifier's rules.
 */
#include <stddef.h>
#include <string.h>

#include "gpuext/probe.h"
#include "verifier_impl.h"

static const char *const rule_names[] = {
	[GPUEXT_RULE_NONE] = "none",
#define X(id, str, desc) [GPUEXT_RULE_##id] = str,
	GPUEXT_RULES(X)
#undef X
};

static const char *const rule_descs[] = {
	[GPUEXT_RULE_NONE] = "accepted",
#define X(id, str, desc) [GPUEXT_RULE_##id] = desc,
	GPUEXT_RULES(X)
#undef X
};

const char *gpuext_rule_name(enum gpuext_rule rule)
{
	return (unsigned)rule < GPUEXT_RULE_CNT ? rule_names[rule] : "?";
}

const char *gpuext_rule_desc(enum gpuext_rule rule)
{
	return (unsigned)rule < GPUEXT_RULE_CNT ? rule_descs[rule] : "?";
}

static bool allow_host(const struct gpuext_func_proto *p)
{
	return !(p->flags & GPUEXT_FN_DEVICE_ONLY);
}

static bool allow_device(const struct gpuext_func_proto *p)
{
	return !(p->flags & GPUEXT_FN_HOST_ONLY);
}

/* struct __sk_buff fields a privileged socket filter reads (u32 each); cb[] is writable. */
#define SKB(name, off) { name, off, 4, false, false, 0, false, false }
#define SKB_CB(name, off) { name, off, 4, true, false, 0, false, false }
static const struct gpuext_ctx_field skb_fields[] = {
	SKB("len", 0), SKB("pkt_type", 4), SKB("mark", 8), SKB("queue_mapping", 12),
	SKB("protocol", 16), SKB("vlan_present", 20), SKB("vlan_tci", 24), SKB("vlan_proto", 28),
	SKB("priority", 32), SKB("ingress_ifindex", 36), SKB("ifindex", 40), SKB("tc_index", 44),
	SKB_CB("cb[0]", 48), SKB_CB("cb[1]", 52), SKB_CB("cb[2]", 56), SKB_CB("cb[3]", 60),
	SKB_CB("cb[4]", 64), SKB("hash", 68),
};

/* struct_ops members get their arguments as an array of u64 (BPF_PROG convention). */
#define ARG(n) { "arg" #n, (n) * 8, 8, false, false, 0, false, false }
static const struct gpuext_ctx_field ops_args[] = { ARG(0), ARG(1), ARG(2), ARG(3), ARG(4) };

#define PF(field, sz, div)                                                              \
	{ #field, offsetof(struct gpuext_probe_ctx, field), sz, false, false, 0, false, div }
#define PF3(field, div)                                                                 \
	{ #field "[0]", offsetof(struct gpuext_probe_ctx, field), 4, false, false, 0, false, div }, \
	{ #field "[1]", offsetof(struct gpuext_probe_ctx, field) + 4, 4, false, false, 0, false, div }, \
	{ #field "[2]", offsetof(struct gpuext_probe_ctx, field) + 8, 4, false, false, 0, false, div }
static const struct gpuext_ctx_field probe_fields[] = {
	PF(kernel_id, 8, false), PF(timer_ns, 8, false), PF(addr, 8, true), PF(value, 8, true),
	PF(size, 4, false), PF(event, 4, false), PF3(grid_dim, false), PF3(block_dim, false),
	PF3(block_id, false), PF3(thread_id, true), PF(lane_id, 4, true), PF(warp_id, 4, false),
	PF(sm_id, 4, false), PF(gpu_id, 4, false),
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct gpuext_prog_type_desc descs[GPUEXT_PROG_TYPE_CNT] = {
	[GPUEXT_PROG_HOST] = {
		.name = "host", .ctx_size = 0, .ctx_writable = true, .r2_is_ctx_size = true,
		.allow = allow_host, .ret_min = INT64_MIN, .ret_max = INT64_MAX,
	},
	[GPUEXT_PROG_SOCKET_FILTER] = {
		.name = "socket_filter", .ctx_size = 192, .fields = skb_fields,
		.field_cnt = N(skb_fields), .allow = allow_host, .ret_min = INT64_MIN,
		.ret_max = INT64_MAX, .allow_ptr_leaks = true,
	},
	/* Until the policy ABI types each member's arguments, they are scalars and
	 * a member returns 0 (default) or 1 (handled). */
	[GPUEXT_PROG_MEM_OPS] = {
		.name = "mem_ops", .ctx_size = sizeof(uint64_t) * 5, .fields = ops_args,
		.field_cnt = N(ops_args), .allow = allow_host, .ret_min = 0, .ret_max = 1,
		.ctx_is_args = true,
	},
	[GPUEXT_PROG_SCHED_OPS] = {
		.name = "sched_ops", .ctx_size = sizeof(uint64_t) * 5, .fields = ops_args,
		.field_cnt = N(ops_args), .allow = allow_host, .ret_min = 0, .ret_max = 1,
		.ctx_is_args = true,
	},
	[GPUEXT_PROG_DEVICE_PROBE] = {
		.name = "device_probe", .ctx_size = sizeof(struct gpuext_probe_ctx),
		.fields = probe_fields, .field_cnt = N(probe_fields), .allow = allow_device,
		.ret_min = 0, .ret_max = 0, .simt = true, .max_work = 100000,
	},
};

const struct gpuext_prog_type_desc *gpuext_prog_type_desc(enum gpuext_prog_type type)
{
	return (unsigned)type < GPUEXT_PROG_TYPE_CNT ? &descs[type] : NULL;
}

const char *gpuext_prog_type_name(enum gpuext_prog_type type)
{
	return (unsigned)type < GPUEXT_PROG_TYPE_CNT ? descs[type].name : "?";
}

int gpuext_prog_type_by_name(const char *name)
{
	for (int i = 0; i < GPUEXT_PROG_TYPE_CNT; i++)
		if (!strcmp(descs[i].name, name))
			return i;
	return -1;
}

// SPDX-License-Identifier: Apache-2.0
/*
 * Verifier corpus: device probes. Per-lane context fields (lane_id,
 * thread_id, addr, value) make branches divergent; warp-collective helpers
 * and ring-buffer submissions must run under warp-uniform control; the work
 * per invocation is bounded (100000 instructions); a probe returns 0.
 */
#include "vf_common.h"

struct rec {
	__u64 kernel_id, addr;
	__u32 sm, warp;
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} trace SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");

/* expect: accept */
SEC("probe/entry")
int vf_probe_count_hits(struct gpuext_probe_ctx *ctx)
{
	__u32 key = 0;
	__u64 *n = bpf_map_lookup_elem(&hits, &key);

	if (n)
		__sync_fetch_and_add(n, ctx->block_dim[0]);
	return 0;
}

/* expect: accept */
SEC("probe/entry")
int vf_probe_uniform_collective(struct gpuext_probe_ctx *ctx)
{
	__u64 total = gpuext_warp_sum(ctx->size);
	__u32 key = 0;
	__u64 *n;

	if (ctx->warp_id == 0) { /* uniform: the whole warp takes it */
		n = bpf_map_lookup_elem(&hits, &key);
		if (n)
			*n += gpuext_warp_sum(total);
	}
	return 0;
}

/* expect: reject divergent-collective */
SEC("probe/entry")
int vf_probe_collective_under_lane_branch(struct gpuext_probe_ctx *ctx)
{
	__u64 v = 0;

	if (ctx->lane_id == 0)
		v = gpuext_warp_sum(1);
	VF_OPAQUE(v);
	return 0;
}

/* expect: reject divergent-collective */
SEC("probe/load")
int vf_probe_collective_under_addr_branch(struct gpuext_probe_ctx *ctx)
{
	__u64 v = 0;

	if (ctx->addr & 0x80)
		v = gpuext_warp_sum(ctx->size);
	VF_OPAQUE(v);
	return 0;
}

/* expect: accept */
SEC("probe/exit")
int vf_probe_uniform_submit(struct gpuext_probe_ctx *ctx)
{
	struct rec *r;

	if (ctx->event != 1)
		return 0;
	r = bpf_ringbuf_reserve(&trace, sizeof(*r), 0);
	if (!r)
		return 0;
	r->kernel_id = ctx->kernel_id;
	r->addr = 0;
	r->sm = ctx->sm_id;
	r->warp = ctx->warp_id;
	bpf_ringbuf_submit(r, 0);
	return 0;
}

/* expect: reject divergent-submit */
SEC("probe/store")
int vf_probe_submit_under_lane_branch(struct gpuext_probe_ctx *ctx)
{
	struct rec *r = bpf_ringbuf_reserve(&trace, sizeof(*r), 0);

	if (!r)
		return 0;
	r->kernel_id = ctx->kernel_id;
	r->addr = ctx->addr;
	r->sm = ctx->sm_id;
	r->warp = ctx->warp_id;
	if (ctx->thread_id[0] & 1)
		bpf_ringbuf_submit(r, 0);
	else
		bpf_ringbuf_discard(r, 0);
	return 0;
}

/* expect: accept */
SEC("probe/entry")
int vf_probe_loop_64(struct gpuext_probe_ctx *ctx)
{
	__u64 h = ctx->kernel_id;
	int i;

	for (i = 0; i < 64; i++) {
		h ^= h >> 7;
		h *= 0x100000001b3ULL;
		VF_OPAQUE(h);
	}
	return h == 42 ? 0 : 0;
}

/* expect: reject work-bound */
SEC("probe/entry")
int vf_probe_loop_30000(struct gpuext_probe_ctx *ctx)
{
	__u64 h = ctx->kernel_id;
	int i;

	for (i = 0; i < 30000; i++) {
		h ^= h >> 7;
		VF_OPAQUE(h);
	}
	VF_OPAQUE(h);
	return 0;
}

/* expect: reject ret-range */
SEC("probe/entry")
int vf_probe_returns_one(struct gpuext_probe_ctx *ctx)
{
	return ctx->warp_id == 3 ? 1 : 0;
}

/* expect: reject bad-call */
SEC("probe/entry")
int vf_probe_calls_host_only(struct gpuext_probe_ctx *ctx)
{
	__u64 t = gpuext_host_time();

	VF_OPAQUE(t);
	return 0;
}

/* expect: accept */
SEC("probe/entry")
int vf_probe_device_clock(struct gpuext_probe_ctx *ctx)
{
	__u64 t = gpuext_device_clock() + ctx->timer_ns;

	VF_OPAQUE(t);
	return 0;
}

/* expect: reject readonly */
SEC("probe/entry")
int vf_probe_writes_ctx(struct gpuext_probe_ctx *ctx)
{
	ctx->lane_id = 0;
	return 0;
}

/* expect: reject ctx-access */
SEC("probe/entry")
int vf_probe_reads_past_ctx(struct gpuext_probe_ctx *ctx)
{
	__u32 *p = (__u32 *)ctx, v = p[40]; /* byte 160 of a 104-byte context */

	VF_OPAQUE(v);
	return 0;
}

/* expect: accept */
SEC("probe/load")
int vf_probe_lane_value_in_map(struct gpuext_probe_ctx *ctx)
{
	__u32 key = 0;
	__u64 *n = bpf_map_lookup_elem(&hits, &key);

	if (n && ctx->lane_id < 32) /* divergent branch, no collective inside */
		__sync_fetch_and_add(n, ctx->value);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

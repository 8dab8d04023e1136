// SPDX-License-Identifier: Apache-2.0
/*
 * Site guards for tests/test_codegen_ptx_probe.c: the entry probe runs in
 * block (0,0,0) only; of the two exit probes, one runs in warp 0 of every
 * block and one in warp 0 of block (0,0,0), so the exit sites test warp 0
 * (what both ask) and the second program tests block (0,0,0) itself.
 * The warp 0 exit also writes a ring: not every probe of the object runs in
 * warp 0 only (the entry's block 0 guard takes all its warps), so the ring's
 * shard is still chosen with %warpid (ptx_runtime.c, warp0_only).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "gpuext/probe.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} exits SEC(".maps");

static __always_inline void hit(__u32 key)
{
	__u64 *n = bpf_map_lookup_elem(&hits, &key);

	if (n)
		__sync_fetch_and_add(n, 1);
}

/*
 * The tests of block_id and warp_id repeat what the section guarantees (as
 * the tools' own do, for the verifier): the wrapper stores those fields as
 * 0, so the tests fold away with their %ctaid / %tid reads.
 */
SEC("probe/entry/block0")
int guard_entry(struct gpuext_probe_ctx *ctx)
{
	if (ctx->block_id[0] | ctx->block_id[1] | ctx->block_id[2])
		return 0;
	hit(0);
	return 0;
}

SEC("probe/exit/warp0")
int guard_exit_warp0(struct gpuext_probe_ctx *ctx)
{
	__u64 *r;

	if (ctx->warp_id != 0)
		return 0;
	hit(1);
	r = bpf_ringbuf_reserve(&exits, sizeof(*r), 0);
	if (r) {
		*r = ctx->timer_ns;
		bpf_ringbuf_submit(r, 0);
	}
	return 0;
}

SEC("probe/exit/first")
int guard_exit_first(struct gpuext_probe_ctx *ctx)
{
	hit(2);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

// SPDX-License-Identifier: Apache-2.0
/*
 * Device probes for tests/test_codegen_ptx_probe.c: one program per probe
 * event, sharing maps across events (entry and exit both count in `calls`,
 * so both must index it the same way on the GPU), with every device map
 * kind: array, per-GPU array, hash (open addressing) and ring buffer.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "gpuext/probe.h"

static __u64 (* const gpuext_get_globaltimer)(void) = (void *)0x1100;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} per_sm SEC(".maps");

/* Accesses per kernel: hash keyed by the kernel id. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u64);
} by_kernel SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} events SEC(".maps");

struct rec {
	__u64 kernel_id, t;
	__u32 block, sm;
};

static __always_inline void count(__u32 key)
{
	__u64 *n = bpf_map_lookup_elem(&calls, &key);

	if (n)
		__sync_fetch_and_add(n, 1);
}

SEC("probe/entry")
int probe_entry(struct gpuext_probe_ctx *ctx)
{
	__u32 zero = 0;
	__u64 *s = bpf_map_lookup_elem(&per_sm, &zero);

	count(0);
	if (s)
		*s += 1;
	return 0;
}

SEC("probe/exit")
int probe_exit(struct gpuext_probe_ctx *ctx)
{
	struct rec *r;

	count(1);
	r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r)
		return 0;
	r->kernel_id = ctx->kernel_id;
	r->t = gpuext_get_globaltimer();
	r->block = ctx->block_id[0];
	r->sm = ctx->sm_id;
	bpf_ringbuf_submit(r, 0);
	return 0;
}

SEC("probe/load")
int probe_load(struct gpuext_probe_ctx *ctx)
{
	__u64 one = 1, k = ctx->kernel_id, *n;

	count(2);
	n = bpf_map_lookup_elem(&by_kernel, &k);
	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&by_kernel, &k, &one, BPF_NOEXIST);
	return 0;
}

SEC("probe/store")
int probe_store(struct gpuext_probe_ctx *ctx)
{
	__u64 k = ctx->addr >> 12;

	count(3);
	if (ctx->value == 0)
		bpf_map_delete_elem(&by_kernel, &k);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

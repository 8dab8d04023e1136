// SPDX-License-Identifier: Apache-2.0
/*
 * memtrace: every global load and store, with its real address.
 *
 * After each global load/store the splicer calls these probes with the
 * address the thread accessed (ctx->addr, per lane) and the access size. Each
 * thread writes one record {address, size, load/store, kernel, block, thread}
 * to the `accesses` ring buffer, so run it with --per-thread (gpuext trace
 * does that for memtrace by default): in warp mode only the leader's address
 * would be recorded. `gpuext trace memtrace --out FILE` writes the accesses in
 * the simulator's trace format (hal/sim/trace_io.h), so `gpuext sim --trace
 * FILE` replays what a real GPU did. A full ring buffer drops records and the
 * drops are counted and reported.
 */
#include "probes.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24);
} accesses SEC(".maps");

static __always_inline int record(struct gpuext_probe_ctx *ctx, __u32 flags)
{
	struct gx_rec_mem *r = bpf_ringbuf_reserve(&accesses, sizeof(*r), 0);

	if (!r)
		return 0;
	r->addr = ctx->addr;
	r->kernel_id = ctx->kernel_id;
	r->size = ctx->size;
	r->flags = flags;
	r->block = gx_block_linear(ctx);
	r->thread = ctx->thread_id[0] + ctx->block_dim[0] *
		    (ctx->thread_id[1] + ctx->block_dim[1] * ctx->thread_id[2]);
	bpf_ringbuf_submit(r, 0);
	return 0;
}

SEC("probe/load")
int memtrace_load(struct gpuext_probe_ctx *ctx)
{
	return record(ctx, 0);
}

SEC("probe/store")
int memtrace_store(struct gpuext_probe_ctx *ctx)
{
	return record(ctx, GX_MEM_STORE);
}

char LICENSE[] SEC("license") = "GPL";

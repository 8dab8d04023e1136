// SPDX-License-Identifier: Apache-2.0
/*
 * memtrace: every global load and store, with its real address.
 *
 * After each global load/store the splicer calls these probes with the
 * address the thread accessed (ctx->addr, per lane) and the access size,
 * in kernels and in the device functions the compiler did not inline (whose
 * records carry the function's id as the kernel id: hal/nvidia/README.md).
 * Run it with --per-thread (gpuext trace does that for memtrace by default):
 * in warp mode only the leader's address would be recorded.
 *
 * One record per warp when it can: the lanes vote (gpuext_warp_ballot) on
 * whether their addresses are affine in the lane number, addr = first lane's
 * + (lane - first) x stride, first with the access size as the stride
 * (consecutive: the common case, one shuffle and one vote), else with the
 * second lane's distance (or the access size when the next lane is idle). If all agree, the lowest
 * lane writes one record {address, stride, lane mask, size, load/store,
 * kernel, block, first thread}; a coalesced warp then costs one 48-byte
 * record instead of 32. Otherwise each lane writes its own (lane mask 1).
 * The votes run under warp-uniform control only, as the verifier requires.
 * `gpuext trace` expands the records into single accesses, and `--out FILE`
 * writes them in the simulator's trace format (hal/sim/trace_io.h), so
 * `gpuext sim --trace FILE` replays what a real GPU did. A full ring buffer
 * drops records and the drops are counted and reported.
 */
#include "probes.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24);
} accesses SEC(".maps");

static __always_inline int record(struct gpuext_probe_ctx *ctx, __u32 flags)
{
	__u64 lane = ctx->lane_id, addr = ctx->addr, size = ctx->size;
	__u64 mask = gpuext_warp_ballot(1);
	/*
	 * Consecutive (stride = size) is the common case: addr = base + (lane -
	 * lead) x size in every lane exactly when addr - lane x size is the same
	 * in every lane, which one shuffle and one vote tell.
	 */
	__u64 k = addr - lane * size;
	__u64 agree = gpuext_warp_ballot(k == gpuext_warp_first(k));
	__u64 stride = size, fits = 1;
	struct gx_rec_mem *r;

	/*
	 * Otherwise the second lane's distance, if that lane is active. agree and
	 * mask are the same in every lane: the branch is warp-uniform.
	 */
	if (agree != mask) {
		__u64 base = gpuext_warp_first(addr), lead = gpuext_warp_first(lane);
		__u64 next = gpuext_warp_shfl(addr, lead + 1);

		stride = (mask >> (lead + 1)) & 1 ? next - base : size;
		fits = (__s64)stride == (__s64)(__s32)stride;
		agree = gpuext_warp_ballot(addr == base + (lane - lead) * stride);
	}

	if (fits && agree == mask) {
		if (mask & ((1ull << lane) - 1))
			return 0;	/* the lowest lane (lead) writes for the warp */
	} else {
		mask = 1ull << lane;	/* each lane alone */
		stride = 0;
	}
	r = bpf_ringbuf_reserve(&accesses, sizeof(*r), 0);
	if (!r)
		return 0;
	r->addr = addr;
	r->kernel_id = ctx->kernel_id;
	r->size = size;
	r->flags = flags;
	r->block = gx_block_linear(ctx);
	r->thread = ctx->thread_id[0] + ctx->block_dim[0] *
		    (ctx->thread_id[1] + ctx->block_dim[1] * ctx->thread_id[2]);
	r->lanes = mask >> lane;	/* the writer is the first lane */
	r->stride = stride;
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

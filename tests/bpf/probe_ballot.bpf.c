// SPDX-License-Identifier: Apache-2.0
/*
 * A warp's ballot of true (its active lanes) taken where every lane runs and
 * stored by lane 0 alone, for tests/test_codegen_ptx_probe.c. The device
 * runtime reads the active mask for the collectives once per program
 * (codegen/ptx/ptx_runtime.c, gx.warp_mask) and a constant ballot is that
 * mask with no vote; the read must stay where the ballot is, not sink into
 * lane 0's branch, where it would see lane 0 alone and store 1.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "gpuext/probe.h"

/* GPUEXT_FUNC_warp_ballot (gpuext/gpuext.h) */
static __u64 (*const ballot)(__u64 pred) = (void *)0x1106;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lanes SEC(".maps");

SEC("probe/load")
int ballot_lane0(struct gpuext_probe_ctx *ctx)
{
	__u32 key = 0;
	__u64 *v = bpf_map_lookup_elem(&lanes, &key);
	__u64 all = ballot(1);

	if (!v)
		return 0;
	if (ctx->lane_id == 0)
		*v = all;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

// SPDX-License-Identifier: Apache-2.0
/*
 * smload: how evenly are blocks spread over the SMs?
 *
 * At kernel entry, warp 0 of each block adds 1 to blocks[%smid]. `gpuext
 * trace smload` prints a table of blocks per SM, and the imbalance (busiest
 * SM over the mean of the SMs that got any block). The sum over all SMs is
 * the number of blocks launched, which makes the tool checkable.
 */
#include "probes.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, GX_SMLOAD_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} blocks SEC(".maps");

SEC("probe/entry/warp0")
int smload_entry(struct gpuext_probe_ctx *ctx)
{
	__u32 key = ctx->sm_id % GX_SMLOAD_SLOTS;
	__u64 *v;

	if (ctx->warp_id != 0)
		return 0;
	v = bpf_map_lookup_elem(&blocks, &key);
	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

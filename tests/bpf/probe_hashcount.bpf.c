// SPDX-License-Identifier: Apache-2.0
/*
 * A device probe with a hash map, for the preload library's hash mirror on
 * a GPU: warp 0 of every block counts the block under key 0 (every block of
 * every launch) and under its grid's x size (the blocks of launches of that
 * size). tools/gpu/probes.sh runs two vecadds of different sizes at once
 * under it: each process mirrors its own change into the one shared map, so
 * `gpuext trace` must show key 0 = both apps' blocks and each grid size its
 * own app's (before the thirteenth session the last process's rebuild won).
 * A block that finds the key missing inserts it; when another block got there
 * first (BPF_NOEXIST fails), it adds to that one. The map has room for 4096
 * keys though it holds 3: a device insert reserves room before it claims a
 * bucket, so with 16 entries the hundreds of blocks that miss the key at the
 * start ran past the reservation and got -E2BIG while the first insert was
 * still in flight, and their counts were lost (first GPU run of this check:
 * 110 of 256 blocks counted). At most one insert per resident block is in
 * flight at a time (2 keys x 132 SMs x 8 blocks on an H100), far below 4096.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "gpuext/probe.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} blocks SEC(".maps");

static __always_inline void count(__u32 key)
{
	__u64 one = 1, *v = bpf_map_lookup_elem(&blocks, &key);

	if (v) {
		__sync_fetch_and_add(v, 1);
		return;
	}
	if (!bpf_map_update_elem(&blocks, &key, &one, BPF_NOEXIST))
		return;
	v = bpf_map_lookup_elem(&blocks, &key);
	if (v)
		__sync_fetch_and_add(v, 1);
}

SEC("probe/entry/warp0")
int hashcount_entry(struct gpuext_probe_ctx *ctx)
{
	if (ctx->warp_id != 0)
		return 0;
	count(0);
	count(ctx->grid_dim[0]);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

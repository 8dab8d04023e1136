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
 * first (BPF_NOEXIST fails), it adds to that one. The map is small (16
 * entries, 3 used) on purpose: hundreds of blocks miss each key at the start
 * and insert at once, and each must see the others' insert (-EEXIST), not a
 * table full of inserts in flight (-E2BIG). Until the device insert claimed
 * its bucket before taking room, this check's first GPU run counted 110 of
 * 256 blocks (codegen/ptx/ptx.h).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "gpuext/probe.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
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

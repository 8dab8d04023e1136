// SPDX-License-Identifier: Apache-2.0
/*
 * A probe object whose maps cannot be placed on a GPU: `huge` is 320 MiB,
 * more than one device map may take (hal/nvidia/nv_maps.c NV_MAP_BYTES_MAX,
 * 256 MiB), so the preload library marks the context broken and its probes
 * "see no maps": every lookup must return NULL and every update fail, and the
 * app must run as it would without probes. tools/gpu/probes.sh runs vecadd
 * under it and compares the app's checksum with the uninstrumented run (a
 * lookup that returned key x stride instead of NULL faulted the kernel).
 * Every kind of access is here: array and hash lookups, a hash update, a
 * global variable (a direct value, which has no NULL: it must land in
 * scratch), a ring query and a ring reserve.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "gpuext/probe.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 40u << 20);
	__type(key, __u32);
	__type(value, __u64);
} huge SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} recs SEC(".maps");

__u64 exits_seen;

SEC("probe/exit")
int unplaced_exit(struct gpuext_probe_ctx *ctx)
{
	__u32 k = ctx->block_id[0] & 3, big = ctx->block_id[0];
	__u64 one = 1, *v;

	v = bpf_map_lookup_elem(&hits, &k);
	if (v)
		__sync_fetch_and_add(v, 1);
	v = bpf_map_lookup_elem(&huge, &big);
	if (v)
		*v = ctx->timer_ns;
	v = bpf_map_lookup_elem(&seen, &k);
	if (v)
		__sync_fetch_and_add(v, 1);
	else
		bpf_map_update_elem(&seen, &k, &one, BPF_ANY);
	__sync_fetch_and_add(&exits_seen, 1);
	if (bpf_ringbuf_query(&recs, BPF_RB_AVAIL_DATA) < (1 << 15)) {
		__u64 *r = bpf_ringbuf_reserve(&recs, sizeof(*r), 0);

		if (r) {
			*r = exits_seen;
			bpf_ringbuf_submit(r, 0);
		}
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

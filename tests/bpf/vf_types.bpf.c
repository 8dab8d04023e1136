// SPDX-License-Identifier: Apache-2.0
/*
 * Verifier corpus: what each program type allows. struct_ops members
 * (mem_ops) read their u64 arguments and return 0 or 1; host programs get a
 * buffer and may not leak pointers or call device-only helpers; socket
 * filters read __sk_buff fields, write only cb[], and (privileged, as in
 * Linux) may store pointers.
 */
#include "vf_common.h"

struct slot {
	__u64 hits;
	__u64 where;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 128);
	__type(key, __u64);
	__type(value, struct slot);
} pages SEC(".maps");

/* ---- mem_ops (struct_ops/...) ---- */

/* expect: accept */
SEC("struct_ops/page_accessed")
int vf_ops_count_page(unsigned long long *ctx)
{
	__u64 page = ctx[0];
	struct slot *s = bpf_map_lookup_elem(&pages, &page);

	if (!s)
		return 0;
	__sync_fetch_and_add(&s->hits, 1);
	return 1;
}

/* expect: accept */
SEC("struct_ops/evict_prepare")
int vf_ops_pick_lower(unsigned long long *ctx)
{
	return ctx[0] < ctx[1];
}

/* expect: reject ret-range */
SEC("struct_ops/page_accessed")
int vf_ops_returns_two(unsigned long long *ctx)
{
	return ctx[0] ? 2 : 0;
}

/* expect: reject ret-range */
SEC("struct_ops/page_accessed")
int vf_ops_returns_arg(unsigned long long *ctx)
{
	return (int)ctx[2];
}

/* expect: reject ctx-access */
SEC("struct_ops/page_accessed")
int vf_ops_reads_arg6(unsigned long long *ctx)
{
	return ctx[6] == 0;
}

/* expect: reject ctx-access */
SEC("struct_ops/page_accessed")
int vf_ops_half_arg(unsigned long long *ctx)
{
	__u32 *half = (__u32 *)ctx;

	return half[1] == 0; /* the upper half of arg0: not a field */
}

/* expect: reject readonly */
SEC("struct_ops/page_accessed")
int vf_ops_writes_arg(unsigned long long *ctx)
{
	ctx[1] = 0;
	return 0;
}

/* expect: reject bad-call */
SEC("struct_ops/page_accessed")
int vf_ops_calls_device_helper(unsigned long long *ctx)
{
	return gpuext_device_clock() > ctx[0];
}

/* ---- host (any other section) ---- */

/* expect: accept ctx 64 */
SEC("host/parse")
int vf_host_sum_buffer(__u64 *buf)
{
	__u64 sum = 0;
	int i;

	for (i = 0; i < 8; i++)
		sum += buf[i];
	return sum & 0xffff;
}

/* expect: reject ctx-access ctx 16 */
SEC("host/parse")
int vf_host_past_buffer(__u64 *buf)
{
	return buf[2] & 1; /* bytes 16..23 of a 16-byte buffer */
}

/* expect: reject ptr-leak */
SEC("host/track")
int vf_host_stores_pointer(void *ctx)
{
	__u64 key = 1;
	struct slot *s = bpf_map_lookup_elem(&pages, &key);

	if (!s)
		return 0;
	s->where = (__u64)(long)s;
	return 0;
}

/* expect: reject ptr-leak */
SEC("host/track")
long vf_host_returns_pointer(void *ctx)
{
	__u64 key = 2;
	struct slot *s = bpf_map_lookup_elem(&pages, &key);

	return (long)s;
}

/* expect: reject bad-call */
SEC("host/track")
int vf_host_calls_collective(void *ctx)
{
	return gpuext_warp_sum(1) & 1;
}

/* expect: accept */
SEC("host/track")
int vf_host_time(void *ctx)
{
	__u64 key = gpuext_host_time();
	struct slot init = { .hits = 1 };

	bpf_map_update_elem(&pages, &key, &init, BPF_NOEXIST);
	return 0;
}

/* ---- socket filters ---- */

/* expect: accept */
SEC("socket")
int vf_sk_fields_and_cb(struct __sk_buff *skb)
{
	skb->cb[0] = skb->len;
	skb->cb[1] = skb->mark ^ skb->hash;
	return skb->protocol == 8 ? skb->cb[0] : 0;
}

/* expect: reject readonly */
SEC("socket")
int vf_sk_writes_len(struct __sk_buff *skb)
{
	skb->len = 0;
	return 0;
}

/* expect: reject ctx-access */
SEC("socket")
int vf_sk_reads_past_fields(struct __sk_buff *skb)
{
	__u32 *raw = (__u32 *)skb, v = raw[50];

	VF_OPAQUE(v);
	return v;
}

/* expect: accept */
SEC("socket")
int vf_sk_stores_pointer(struct __sk_buff *skb)
{
	__u64 key = skb->hash;
	struct slot *s = bpf_map_lookup_elem(&pages, &key);

	if (!s)
		return 0;
	s->where = (__u64)(long)s; /* privileged socket filters may leak */
	return 1;
}

/* expect: reject scalar-deref */
SEC("socket")
int vf_sk_deref_mark(struct __sk_buff *skb)
{
	__u32 *p = (__u32 *)(long)skb->mark;

	return *p;
}

/* expect: reject scalar-deref */
SEC("socket")
int vf_sk_deref_lookup_result_as_int(struct __sk_buff *skb)
{
	__u64 key = 5, addr;
	struct slot *s = bpf_map_lookup_elem(&pages, &key);

	if (!s)
		return 0;
	addr = s->where; /* a number read from the map, not a pointer */
	return *(__u32 *)(long)addr;
}

char LICENSE[] SEC("license") = "GPL";

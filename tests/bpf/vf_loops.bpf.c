// SPDX-License-Identifier: Apache-2.0
/*
 * Verifier corpus: loops as clang emits them. Bounded loops (constant trip
 * counts, masked bounds, nested, counting down, early break) must pass by
 * state exploration; loops bounded only by packet data, or not at all, must
 * be refused as loop-bound.
 */
#include "vf_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} hist SEC(".maps");

/* expect: accept */
SEC("socket")
int vf_loop_lookup_64(struct __sk_buff *skb)
{
	__u64 sum = 0;
	__u32 i;

	for (i = 0; i < 64; i++) {
		__u32 key = i;
		__u64 *v = bpf_map_lookup_elem(&hist, &key);

		if (v)
			sum += *v;
	}
	return sum > skb->len;
}

/* expect: accept */
SEC("socket")
int vf_loop_prandom_100(struct __sk_buff *skb)
{
	__u32 sum = 0;
	int i;

	for (i = 0; i < 100; i++)
		sum += bpf_get_prandom_u32() & 1;
	return sum + skb->len;
}

/* expect: accept */
SEC("socket")
int vf_loop_masked_bound(struct __sk_buff *skb)
{
	__u32 n = skb->len & 31, sum = 0, i;

	for (i = 0; i < n; i++)
		sum ^= bpf_get_prandom_u32();
	return sum;
}

/* expect: accept */
SEC("socket")
int vf_loop_nested_8x8(struct __sk_buff *skb)
{
	__u32 sum = 0;
	int i, j;

	for (i = 0; i < 8; i++)
		for (j = 0; j < 8; j++)
			if (bpf_get_prandom_u32() & 1)
				sum += i * j;
	return sum + skb->len;
}

/* expect: accept */
SEC("socket")
int vf_loop_countdown(struct __sk_buff *skb)
{
	__u32 sum = skb->mark;
	int i;

	for (i = 50; i > 0; i--)
		sum = (sum << 1) ^ bpf_get_prandom_u32();
	return sum;
}

/* expect: accept */
SEC("socket")
int vf_loop_early_break(struct __sk_buff *skb)
{
	int i;

	for (i = 0; i < 200; i++)
		if (bpf_get_prandom_u32() == skb->hash)
			break;
	return i;
}

/* expect: accept */
SEC("socket")
int vf_loop_histogram_bucket(struct __sk_buff *skb)
{
	__u32 len = skb->len, bucket = 0;
	__u64 *v;

	while (len > 1 && bucket < 63) { /* log2 */
		len >>= 1;
		bucket++;
	}
	v = bpf_map_lookup_elem(&hist, &bucket);
	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

/* expect: reject loop-bound */
SEC("socket")
int vf_loop_bound_by_len(struct __sk_buff *skb)
{
	__u32 sum = 0, i;

	for (i = 0; i < skb->len; i++)
		sum += bpf_get_prandom_u32();
	return sum;
}

/* expect: reject loop-bound */
SEC("socket")
int vf_loop_forever(struct __sk_buff *skb)
{
	__u32 x = skb->len;

	for (;;) {
		x = bpf_get_prandom_u32();
		if (x == 0xffffffff && skb->len == 0x12345678 && x == 0) /* never */
			break;
	}
	return x;
}

/* expect: accept */
SEC("socket")
int vf_loop_stack_table(struct __sk_buff *skb)
{
	__u32 table[16], i;

	for (i = 0; i < 16; i++) {
		table[i] = bpf_get_prandom_u32();
		VF_OPAQUE(i);
	}
	return table[skb->mark & 15]; /* a variable-offset stack read, all bytes written */
}

char LICENSE[] SEC("license") = "GPL";

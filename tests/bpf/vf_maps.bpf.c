// SPDX-License-Identifier: Apache-2.0
/*
 * Verifier corpus: map lookups, null checks, value bounds, per-CPU counters
 * and atomics, as socket filters so the kernel's verifier can judge the same
 * code. Each program's expected verdict is in the comment above its SEC.
 */
#include "vf_common.h"

struct stats {
	__u64 packets;
	__u64 bytes;
	__u32 slots[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, struct stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} pcpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct stats);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 256);
	__type(key, __u64);
	__type(value, __u64);
} lru SEC(".maps");

/* expect: accept */
SEC("socket")
int vf_lookup_null_checked(struct __sk_buff *skb)
{
	__u32 key = 0;
	struct stats *s = bpf_map_lookup_elem(&stats, &key);

	if (!s)
		return 0;
	s->packets++;
	s->bytes += skb->len;
	return 1;
}

/* expect: reject null-deref */
SEC("socket")
int vf_lookup_no_null_check(struct __sk_buff *skb)
{
	__u32 key = 1;
	struct stats *s = bpf_map_lookup_elem(&stats, &key);

	s->packets++;
	return skb->len;
}

/* expect: accept */
SEC("socket")
int vf_percpu_counter(struct __sk_buff *skb)
{
	__u32 key = skb->len & 3;
	__u64 *cnt = bpf_map_lookup_elem(&pcpu, &key);

	if (cnt)
		*cnt += 1;
	return 0;
}

/* expect: accept */
SEC("socket")
int vf_atomic_add_value(struct __sk_buff *skb)
{
	__u32 key = 2;
	struct stats *s = bpf_map_lookup_elem(&stats, &key);

	if (!s)
		return 0;
	__sync_fetch_and_add(&s->packets, 1);
	__sync_fetch_and_add(&s->bytes, skb->len);
	return 0;
}

/* expect: accept */
SEC("socket")
int vf_index_after_check(struct __sk_buff *skb)
{
	__u32 key = 0, i = skb->mark;
	struct stats *s = bpf_map_lookup_elem(&stats, &key);

	if (!s)
		return 0;
	if (i < 16)
		s->slots[i] += 1;
	return 0;
}

/* expect: reject oob-map-value */
SEC("socket")
int vf_index_off_by_one(struct __sk_buff *skb)
{
	__u32 key = 0, i = skb->mark;
	struct stats *s = bpf_map_lookup_elem(&stats, &key);

	if (!s)
		return 0;
	if (i <= 16)
		s->slots[i] += 1;
	return 0;
}

/* expect: reject ptr-arith */
SEC("socket")
int vf_index_unchecked(struct __sk_buff *skb)
{
	__u32 key = 0, i = skb->mark;
	struct stats *s = bpf_map_lookup_elem(&stats, &key);

	if (!s)
		return 0;
	s->slots[i] = 7; /* i * 4 may be 16 GiB: refused at the pointer arithmetic */
	return 0;
}

/* expect: reject oob-map-value */
SEC("socket")
int vf_read_past_value(struct __sk_buff *skb)
{
	__u32 key = 0;
	__u64 *v = bpf_map_lookup_elem(&pcpu, &key);

	if (!v)
		return 0;
	return v[1] + skb->len; /* the value is one u64 */
}

/* expect: accept */
SEC("socket")
int vf_hash_update_or_insert(struct __sk_buff *skb)
{
	__u32 key = skb->hash;
	struct stats *s = bpf_map_lookup_elem(&flows, &key);
	struct stats init;

	if (s) {
		s->packets++;
		return 0;
	}
	__builtin_memset(&init, 0, sizeof(init));
	init.packets = 1;
	init.bytes = skb->len;
	bpf_map_update_elem(&flows, &key, &init, BPF_NOEXIST);
	return 0;
}

/* expect: reject uninit-stack */
SEC("socket")
int vf_update_partly_uninit(struct __sk_buff *skb)
{
	__u32 key = skb->hash;
	struct stats init;

	init.packets = 1; /* bytes and slots[] never written */
	VF_OPAQUE(init.packets);
	bpf_map_update_elem(&flows, &key, &init, BPF_ANY);
	return 0;
}

/* expect: accept */
SEC("socket")
int vf_lru_delete_and_count(struct __sk_buff *skb)
{
	__u64 key = skb->hash, one = 1, *v;

	v = bpf_map_lookup_elem(&lru, &key);
	if (v && *v > 100) {
		bpf_map_delete_elem(&lru, &key);
		return 0;
	}
	if (!v)
		bpf_map_update_elem(&lru, &key, &one, BPF_ANY);
	else
		__sync_fetch_and_add(v, 1);
	return 0;
}

/* expect: reject null-deref */
SEC("socket")
int vf_check_wrong_pointer(struct __sk_buff *skb)
{
	__u32 k1 = 0, k2 = 1;
	struct stats *a = bpf_map_lookup_elem(&stats, &k1);
	struct stats *b = bpf_map_lookup_elem(&stats, &k2);

	if (!a)
		return 0;
	VF_OPAQUE(b);
	b->bytes = skb->len; /* b was never checked */
	return 0;
}

/* expect: accept */
SEC("socket")
int vf_sum_slots_loop(struct __sk_buff *skb)
{
	__u32 key = 3;
	__u64 sum = 0;
	struct stats *s = bpf_map_lookup_elem(&stats, &key);
	int i;

	if (!s)
		return 0;
	for (i = 0; i < 16; i++)
		sum += s->slots[i];
	return sum > skb->len;
}

/* expect: accept */
SEC("socket")
int vf_key_from_packet_bounded(struct __sk_buff *skb)
{
	__u32 key = skb->queue_mapping & 7;
	struct stats *s = bpf_map_lookup_elem(&stats, &key);

	if (!s)
		return 0;
	return s->slots[skb->priority & 15];
}

/* expect: reject ptr-arith */
SEC("socket")
int vf_negative_index(struct __sk_buff *skb)
{
	__u32 key = 0;
	int i = (int)skb->mark;
	struct stats *s = bpf_map_lookup_elem(&stats, &key);

	if (!s)
		return 0;
	if (i < 16) /* signed: i may be negative */
		return s->slots[i];
	return 0;
}

/* expect: accept */
SEC("socket")
int vf_cmpxchg_value(struct __sk_buff *skb)
{
	__u32 key = 4;
	struct stats *s = bpf_map_lookup_elem(&stats, &key);

	if (!s)
		return 0;
	__sync_val_compare_and_swap(&s->packets, 0, (__u64)skb->len);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

// SPDX-License-Identifier: Apache-2.0
/*
 * Verifier corpus: ring-buffer records are references. Every reserved record
 * must be submitted or discarded exactly once on every path, after a NULL
 * check, and accessed only inside its reserved size.
 */
#include "vf_common.h"

struct sample {
	__u64 ts;
	__u32 len, hash;
	__u32 words[8];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/* expect: accept */
SEC("socket")
int vf_rb_reserve_submit(struct __sk_buff *skb)
{
	struct sample *s = bpf_ringbuf_reserve(&rb, sizeof(*s), 0);

	if (!s)
		return 0;
	s->ts = bpf_ktime_get_ns();
	s->len = skb->len;
	s->hash = skb->hash;
	bpf_ringbuf_submit(s, 0);
	return 0;
}

/* expect: accept */
SEC("socket")
int vf_rb_submit_or_discard(struct __sk_buff *skb)
{
	struct sample *s = bpf_ringbuf_reserve(&rb, sizeof(*s), 0);
	__u32 key = 0;
	__u64 *d;

	if (!s) {
		d = bpf_map_lookup_elem(&drops, &key);
		if (d)
			__sync_fetch_and_add(d, 1);
		return 0;
	}
	s->len = skb->len;
	if (skb->len < 64) {
		bpf_ringbuf_discard(s, 0);
		return 0;
	}
	bpf_ringbuf_submit(s, 0);
	return 1;
}

/* expect: accept */
SEC("socket")
int vf_rb_fill_loop(struct __sk_buff *skb)
{
	struct sample *s = bpf_ringbuf_reserve(&rb, sizeof(*s), 0);
	int i;

	if (!s)
		return 0;
	for (i = 0; i < 8; i++)
		s->words[i] = bpf_get_prandom_u32() ^ skb->len;
	bpf_ringbuf_submit(s, 0);
	return 0;
}

/* expect: reject ref-leak */
SEC("socket")
int vf_rb_leak_on_error_path(struct __sk_buff *skb)
{
	struct sample *s = bpf_ringbuf_reserve(&rb, sizeof(*s), 0);

	if (!s)
		return 0;
	if (skb->len < 64)
		return 0; /* forgot to discard */
	s->len = skb->len;
	bpf_ringbuf_submit(s, 0);
	return 0;
}

/* expect: reject ref-leak */
SEC("socket")
int vf_rb_never_released(struct __sk_buff *skb)
{
	struct sample *s = bpf_ringbuf_reserve(&rb, sizeof(*s), 0);

	if (!s)
		return 0;
	s->len = skb->len;
	return 1;
}

/* expect: reject ref-invalid */
SEC("socket")
int vf_rb_double_submit(struct __sk_buff *skb)
{
	struct sample *s = bpf_ringbuf_reserve(&rb, sizeof(*s), 0);

	if (!s)
		return 0;
	s->len = skb->len;
	bpf_ringbuf_submit(s, 0);
	bpf_ringbuf_submit(s, 0);
	return 0;
}

/* expect: reject ref-invalid */
SEC("socket")
int vf_rb_discard_after_submit(struct __sk_buff *skb)
{
	struct sample *s = bpf_ringbuf_reserve(&rb, sizeof(*s), 0);

	if (!s)
		return 0;
	bpf_ringbuf_submit(s, 0);
	if (skb->len > 100)
		bpf_ringbuf_discard(s, 0);
	return 0;
}

/* expect: reject null-deref */
SEC("socket")
int vf_rb_write_before_null_check(struct __sk_buff *skb)
{
	struct sample *s = bpf_ringbuf_reserve(&rb, sizeof(*s), 0);

	s->len = skb->len;
	if (s)
		bpf_ringbuf_submit(s, 0);
	return 0;
}

/* expect: reject oob-mem */
SEC("socket")
int vf_rb_write_past_record(struct __sk_buff *skb)
{
	__u32 *s = bpf_ringbuf_reserve(&rb, 16, 0);

	if (!s)
		return 0;
	s[0] = skb->len;
	s[4] = skb->hash; /* bytes 16..19 of a 16-byte record */
	bpf_ringbuf_submit(s, 0);
	return 0;
}

/* expect: reject call-arg */
SEC("socket")
int vf_rb_variable_size(struct __sk_buff *skb)
{
	void *s = bpf_ringbuf_reserve(&rb, skb->len & 0xff, 0);

	if (s)
		bpf_ringbuf_discard(s, 0);
	return 0;
}

/* expect: accept */
SEC("socket")
int vf_rb_output_stack(struct __sk_buff *skb)
{
	struct sample s;

	__builtin_memset(&s, 0, sizeof(s));
	s.len = skb->len;
	return bpf_ringbuf_output(&rb, &s, sizeof(s), 0) ? 1 : 0;
}

char LICENSE[] SEC("license") = "GPL";

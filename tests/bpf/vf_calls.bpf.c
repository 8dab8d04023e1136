// SPDX-License-Identifier: Apache-2.0
/*
 * Verifier corpus: BPF-to-BPF calls and the stack. Subprogram chains three
 * to eight frames deep pass, nine frames do not; two 300-byte frames on one
 * chain exceed the combined 512 bytes; pointers to the caller's stack and to
 * map values travel into callees; structs are zeroed before helpers read
 * them, and reading stack bytes never written is refused.
 */
#include "vf_common.h"

struct event {
	__u64 ts;
	__u32 len, mark;
	__u8 tag[16];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct event);
} last SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

static VF_NOINLINE __u64 f7(__u64 x) { VF_OPAQUE(x); return x + 7; }
static VF_NOINLINE __u64 f6(__u64 x) { VF_OPAQUE(x); return f7(x) + 6; }
static VF_NOINLINE __u64 f5(__u64 x) { VF_OPAQUE(x); return f6(x) + 5; }
static VF_NOINLINE __u64 f4(__u64 x) { VF_OPAQUE(x); return f5(x) + 4; }
static VF_NOINLINE __u64 f3(__u64 x) { VF_OPAQUE(x); return f4(x) + 3; }
static VF_NOINLINE __u64 f2(__u64 x) { VF_OPAQUE(x); return f3(x) + 2; }
static VF_NOINLINE __u64 f1(__u64 x) { VF_OPAQUE(x); return f2(x) + 1; }
static VF_NOINLINE __u64 f0(__u64 x) { VF_OPAQUE(x); return f1(x); }

/* expect: accept */
SEC("socket")
int vf_call_depth_4(struct __sk_buff *skb)
{
	return f5(skb->len) & 0xff; /* entry, f5, f6, f7: 4 frames */
}

/* expect: accept */
SEC("socket")
int vf_call_depth_7(struct __sk_buff *skb)
{
	return f2(skb->len) & 0xff; /* entry + f2..f7: 7 frames */
}

/* expect: accept */
SEC("socket")
int vf_call_depth_8(struct __sk_buff *skb)
{
	return f1(skb->len) & 0xff; /* entry + f1..f7: the 8-frame limit exactly */
}

/* expect: reject call-depth */
SEC("socket")
int vf_call_depth_9(struct __sk_buff *skb)
{
	return f0(skb->len) & 0xff; /* entry + f0..f7 = 9 frames */
}

static VF_NOINLINE int fill_event(struct event *e, __u32 len)
{
	e->ts = bpf_ktime_get_ns();
	e->len = len;
	return 0;
}

/* expect: accept */
SEC("socket")
int vf_callee_writes_caller_stack(struct __sk_buff *skb)
{
	struct event e;

	__builtin_memset(&e, 0, sizeof(e));
	fill_event(&e, skb->len);
	bpf_ringbuf_output(&events, &e, sizeof(e), 0);
	return 0;
}

static VF_NOINLINE int bump(struct event *e)
{
	if (!e)
		return 0;
	e->mark++;
	return 1;
}

/* expect: accept */
SEC("socket")
int vf_callee_checks_map_value(struct __sk_buff *skb)
{
	__u32 key = 0;

	return bump(bpf_map_lookup_elem(&last, &key)) + skb->len;
}

static VF_NOINLINE int bump_unchecked(struct event *e)
{
	e->mark++;
	return 1;
}

/* expect: reject null-deref */
SEC("socket")
int vf_callee_derefs_nullable(struct __sk_buff *skb)
{
	__u32 key = 0;

	return bump_unchecked(bpf_map_lookup_elem(&last, &key)) + skb->len;
}

static VF_NOINLINE __u64 scratch_300(__u32 seed)
{
	__u8 buf[300];

	__builtin_memset(buf, seed & 0xff, sizeof(buf));
	bpf_ringbuf_output(&events, buf, sizeof(buf), 0);
	return buf[seed % 300];
}

static VF_NOINLINE __u64 outer_300(__u32 seed)
{
	__u8 buf[300];

	__builtin_memset(buf, 1, sizeof(buf));
	bpf_ringbuf_output(&events, buf, sizeof(buf), 0);
	return scratch_300(seed) + buf[7];
}

/* expect: reject stack-size */
SEC("socket")
int vf_two_frames_300_bytes(struct __sk_buff *skb)
{
	return outer_300(skb->len) & 1;
}

/* expect: accept */
SEC("socket")
int vf_one_frame_300_bytes(struct __sk_buff *skb)
{
	__u8 buf[300];

	__builtin_memset(buf, 0, sizeof(buf));
	buf[0] = skb->len;
	bpf_ringbuf_output(&events, buf, sizeof(buf), 0);
	return 0;
}

/* expect: accept */
SEC("socket")
int vf_memset_struct_to_helper(struct __sk_buff *skb)
{
	struct event e;
	__u32 key = 0;

	__builtin_memset(&e, 0, sizeof(e));
	e.ts = bpf_ktime_get_ns();
	e.len = skb->len;
	e.tag[0] = 'p';
	bpf_map_update_elem(&last, &key, &e, BPF_ANY);
	return 0;
}

/* expect: reject uninit-stack */
SEC("socket")
int vf_struct_not_zeroed(struct __sk_buff *skb)
{
	struct event e;

	e.ts = bpf_ktime_get_ns();
	e.len = skb->len; /* mark and tag[] are never written */
	VF_OPAQUE(e.len);
	bpf_ringbuf_output(&events, &e, sizeof(e), 0);
	return 0;
}

/* expect: reject uninit-stack */
SEC("socket")
int vf_read_uninit_slot(struct __sk_buff *skb)
{
	__u64 a[4];
	__u64 *p = a;

	a[0] = skb->len;
	VF_OPAQUE(p);
	return p[0] + p[2];
}

/* expect: reject oob-stack */
SEC("socket")
int vf_stack_above_frame(struct __sk_buff *skb)
{
	__u64 a[2];
	__u64 *p = a;

	a[0] = skb->len;
	a[1] = 0;
	VF_OPAQUE(p);
	return p[8]; /* past the frame's top */
}

static VF_NOINLINE __u64 spill_heavy(__u64 a, __u64 b, __u64 c, __u64 d, __u64 e)
{
	__u64 t1 = bpf_get_prandom_u32(), t2 = bpf_get_prandom_u32();
	__u64 t3 = bpf_get_prandom_u32(), t4 = bpf_get_prandom_u32();

	return a * t1 + b * t2 + c * t3 + d * t4 + e + a + b + c + d;
}

/* expect: accept */
SEC("socket")
int vf_spills_across_calls(struct __sk_buff *skb)
{
	__u64 r = spill_heavy(skb->len, skb->mark, skb->hash, skb->priority, skb->protocol);

	return r & 1;
}

char LICENSE[] SEC("license") = "GPL";

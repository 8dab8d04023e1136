/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the verifier corpus's C cases (tests/bpf/vf_*.bpf.c): the BPF
 * headers, the corpus's extra helpers (ids from tests/verifier_corpus.h) and
 * a few map shapes. Each program carries its expected verdict in a
 * "expect:" comment on the line above its SEC (tests/verifier_corpus.h).
 */
#ifndef VF_COMMON_H
#define VF_COMMON_H

/*
 * <linux/bpf.h> needs the multiarch <asm/types.h>, which clang -target bpf
 * does not find everywhere: fall back to the types, constants and the
 * leading fields of struct __sk_buff these cases use.
 */
#if __has_include(<asm/types.h>)
#include <linux/bpf.h>
#else
typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
enum { BPF_MAP_TYPE_HASH = 1, BPF_MAP_TYPE_ARRAY = 2, BPF_MAP_TYPE_PERCPU_ARRAY = 6,
       BPF_MAP_TYPE_LRU_HASH = 9, BPF_MAP_TYPE_RINGBUF = 27 };
enum { BPF_ANY = 0, BPF_NOEXIST = 1, BPF_EXIST = 2 };
enum { BPF_F_NO_PREALLOC = 1, BPF_F_RDONLY_PROG = 1 << 7 };
struct __sk_buff {
	__u32 len, pkt_type, mark, queue_mapping, protocol, vlan_present, vlan_tci, vlan_proto;
	__u32 priority, ingress_ifindex, ifindex, tc_index, cb[5], hash;
};
#endif
#include <bpf/bpf_helpers.h>

#include "gpuext/probe.h"

/* The corpus's own helpers (vc_register_funcs()). */
static __u64 (* const gpuext_warp_sum)(__u64 v) = (void *)0x1000;	/* warp-collective, device */
static __u64 (* const gpuext_device_clock)(void) = (void *)0x1001;	/* device only */
static __u64 (* const gpuext_host_time)(void) = (void *)0x1002;		/* host only */

#define VF_NOINLINE __attribute__((noinline))

/* Keeps clang from folding a value it could otherwise see through. */
#define VF_OPAQUE(x) asm volatile("" : "+r"(x))

#endif

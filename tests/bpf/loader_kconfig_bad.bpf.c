// SPDX-License-Identifier: Apache-2.0
/* Loader test input: a non-weak .kconfig extern, unknown in user space. */
/*
 * <linux/bpf.h> needs the multiarch <asm/types.h>, which is not on the BPF
 * include path everywhere (clang -target bpf does not add it): fall back to
 * the few types and constants these tests use.
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
enum { BPF_F_NO_PREALLOC = 1 };
#endif
#include <bpf/bpf_helpers.h>

extern int CONFIG_GPUEXT_REQUIRED __kconfig;

SEC("xdp") int needs_config(void *ctx)
{
	return CONFIG_GPUEXT_REQUIRED;
}

char _license[] SEC("license") = "GPL";

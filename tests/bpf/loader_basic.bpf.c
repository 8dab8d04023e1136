// SPDX-License-Identifier: Apache-2.0
/*
 * Loader test input: maps of every supported type, global data in .rodata,
 * .data, .bss and a string section, static and global subprograms nested
 * three deep, a function address (callback), kfuncs (one registered by the
 * test, one __weak and missing) and .kconfig externs. tests/test_loader.c
 * runs the programs and checks the relocated encodings.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} arr SEC(".maps");

struct pair {
	__u64 a, b;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, struct pair);
} pcpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u64);
	__type(value, __u32);
} hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 32);
	__type(key, __u32);
	__type(value, struct pair);
} lru SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, __u32);
} hash_noprealloc SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} rb SEC(".maps");

/* Global data: 40 + 2 = 42 until the test rewrites .data. */
const volatile __u64 ro_const = 40;
__u64 data_val = 2;
__u32 data_idx = 2;
__u64 bss_counter;

SEC("xdp") int globals_sum(void *ctx)
{
	return ro_const + data_val;
}

SEC("xdp") int bss_bump(void *ctx)
{
	bss_counter += 5;
	return bss_counter;
}

/* A string literal lands in .rodata.str1.1; data_idx picks 'u' (0x75). */
SEC("xdp") int string_byte(void *ctx)
{
	const char *s = "gpuext";

	return s[data_idx & 7];
}

/* arr[1] + 1: 1 until the test stores into the map. */
SEC("xdp") int map_read(void *ctx)
{
	__u32 key = 1;
	__u64 *v = bpf_map_lookup_elem(&arr, &key);

	return v ? *v + 1 : 0;
}

/* Subprograms: static -> global -> static, three deep. */
static __attribute__((noinline)) int leaf(int x)
{
	return x * 3;
}

__attribute__((noinline)) int mid(int x)
{
	return leaf(x) + 1;
}

static __attribute__((noinline)) int top(int x)
{
	return mid(x) * 2;
}

__attribute__((noinline)) int gtop(int x)
{
	return top(x) + 100;
}

/* top(5) = (15 + 1) * 2 = 32; gtop(1) = (3 + 1) * 2 + 100 = 108: 140. */
SEC("xdp") int calls(void *ctx)
{
	return top(5) + gtop(1);
}

/* Only mid (and leaf) reached here: mid(4) = 13. */
SEC("tc") int calls_other(void *ctx)
{
	return mid(4);
}

static int callback(int x)
{
	return x + 7;
}

/* Returns a function address (ld_imm64 src=4); never run. */
SEC("xdp") int func_addr(void *ctx)
{
	long (*f)(int) = (void *)callback;

	asm volatile("" : "+r"(f));
	return f != 0;
}

extern int bpf_gpuext_test_add(int a, int b) __ksym;
extern int bpf_gpuext_test_missing(int a) __ksym __weak;

/* 40 + 2 through the registered kfunc; the missing one is skipped at run time. */
SEC("xdp") int kfuncs(void *ctx)
{
	int r = bpf_gpuext_test_add(40, 2);

	if (bpf_gpuext_test_missing)
		r += bpf_gpuext_test_missing(1);
	return r;
}

extern unsigned int LINUX_KERNEL_VERSION __kconfig;
extern int CONFIG_GPUEXT_TEST_WEAK __kconfig __weak;

SEC("xdp") int kconfig_version(void *ctx)
{
	return LINUX_KERNEL_VERSION;
}

SEC("xdp") int kconfig_weak(void *ctx)
{
	return CONFIG_GPUEXT_TEST_WEAK + 1;
}

char _license[] SEC("license") = "GPL";

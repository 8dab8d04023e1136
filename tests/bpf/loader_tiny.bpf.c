// SPDX-License-Identifier: Apache-2.0
/*
 * Loader test input for tests/test_loader_malformed.c: one program with a
 * map and a global (so .relxdp has ld_imm64 relocations), BTF and .maps.
 * The test mutates the compiled bytes in memory.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

__u64 total = 1;

SEC("xdp") int tiny(void *ctx)
{
	__u32 key = 0;
	__u64 *v = bpf_map_lookup_elem(&counts, &key);

	if (v)
		total += *v;
	return total;
}

char _license[] SEC("license") = "GPL";

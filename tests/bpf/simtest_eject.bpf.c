/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim test policy: behaves like the default (returns 0, moves nothing) for
 * its first three gpu_block_access calls, then runs a long bounded loop that
 * exceeds a small per-call budget and gets ejected.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <gpuext/gpu_ops.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} calls SEC(".maps");

SEC("struct_ops/gpu_block_access")
int BPF_PROG(eject_access, struct gpu_mem_ctx *mctx, struct gpu_block *block, struct gpu_list *list)
{
	__u32 k = 0;
	__u64 *n = bpf_map_lookup_elem(&calls, &k);
	volatile __u64 sum = 0;

	if (!n)
		return 0;
	*n += 1;
	if (*n <= 3)
		return 0;
	for (int i = 0; i < 4000; i++)
		sum += i;
	return sum == 7;
}

SEC(".struct_ops.link")
struct gpu_mem_ops simtest_eject = {
	.gpu_block_access = (void *)eject_access,
	.name = "simtest_eject",
};

char LICENSE[] SEC("license") = "GPL";

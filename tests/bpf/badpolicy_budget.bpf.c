// SPDX-License-Identifier: Apache-2.0
/*
 * Bad policy: verifiable (the loop is bounded by a constant; about 208,000
 * instructions processed, under the verifier's 1,000,000) but each call runs
 * about 1,600 x 130 = 208,000 instructions, twice the per-call budget of
 * 100,000. The first call ejects the policy and the backend carries on with
 * its default (tests/test_policies.c, conformance/scenarios/eject_budget.scn).
 *
 * The work sits in a wide unrolled body rather than many short iterations:
 * the verifier walks a bounded loop iteration by iteration, and few wide
 * iterations keep that walk fast.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <gpuext/gpu_ops.h>

static __u64 spins;

SEC("struct_ops/gpu_block_access")
int BPF_PROG(budget_access, struct gpu_mem_ctx *mctx, struct gpu_block *block,
	     struct gpu_list *list)
{
	for (__u32 i = 0; i < 1600; i++) {
#pragma unroll
		for (int j = 0; j < 64; j++)
			__sync_fetch_and_add(&spins, j);
	}
	bpf_gpu_block_move_head(block, list);
	return 1;
}

SEC(".struct_ops.link")
struct gpu_mem_ops bad_budget = {
	.gpu_block_access = (void *)budget_access,
	.name = "bad_budget",
};

char LICENSE[] SEC("license") = "Dual BSD/GPL";

// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * prefetch_seq: on a fault at page p, also fetch pages p+1 .. p+SEQ_PAGES.
 *
 * Read-ahead, as a file system does it: a forward sequential reader's next
 * faults are on the pages right after this one, so fetch them now, in the
 * same migration, instead of taking a fault for each. The window is fixed
 * (64 pages = 256 KiB) and never leaves the faulting block.
 *
 * When it wins: forward streams that the 51 % tree rule reacts to too late,
 * such as an LLM's expert weights read front to back at decode time. When it
 * loses: random or backward access, where the window is wasted bandwidth.
 */
#include "common.h"

#define SEQ_PAGES 64

SEC("struct_ops/gpu_page_prefetch")
int BPF_PROG(seq_prefetch, struct gpu_mem_ctx *mctx, __u32 page_index,
	     const struct gpu_page_tree *tree, const struct gpu_page_range *max_region,
	     struct gpu_region *result_region)
{
	__u32 first = max_u32(page_index, max_region->first_page);
	__u32 last = min_u32(page_index + SEQ_PAGES, max_region->last_page);

	if (first > last)
		return 0;
	bpf_gpu_set_prefetch_region(result_region, first, last);
	return 1;
}

SEC(".struct_ops.link")
struct gpu_mem_ops prefetch_seq = {
	.gpu_page_prefetch = (void *)seq_prefetch,
	.name = "prefetch_seq",
};

char LICENSE[] SEC("license") = "Dual BSD/GPL";

// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * prefetch_stride: detect a constant stride in each process's faults and
 * fetch the pages it will fault on next.
 *
 * Faults are measured in pages of the process's address space. When the
 * last two distances between a process's faults are equal (faults at p,
 * p+s, p+2s), the policy asks for pages p+3s .. p+(2+n)s, clipped to the
 * faulting block: n = STRIDE_DEPTH strides, fewer when the stride is wide, so
 * the region never spans more than STRIDE_SPAN pages beyond the first target.
 * Until a stride is confirmed the driver's default runs. The next fault of a
 * stream that was prefetched for lands (n+1)s further on: that continues it.
 *
 * When it wins: strided tensor walks (a column of a row-major matrix, one
 * head of a KV cache, every k-th layer's weights), which defeat both the
 * sequential window and the 51 % tree. Backward strides work too.
 */
#include "common.h"

#define STRIDE_DEPTH 4	/* strides fetched ahead */
#define STRIDE_SPAN 64	/* pages a region may cover past its first target */

struct stride_state {
	__u64 last;	/* page of the last fault */
	__s64 stride;	/* last distance, in pages */
	__u64 next;	/* first strided page past the last prefetched region */
	__u32 repeats;	/* times in a row the distance was the same */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);	/* tgid */
	__type(value, struct stride_state);
} strides SEC(".maps");

SEC("struct_ops/gpu_page_prefetch")
int BPF_PROG(stride_prefetch, struct gpu_mem_ctx *mctx, __u32 page_index,
	     const struct gpu_page_tree *tree, const struct gpu_page_range *max_region,
	     struct gpu_region *result_region)
{
	__u64 page = gpu_vpage(mctx, page_index);
	struct stride_state *st, fresh = { .last = page };
	__u32 tgid = mctx->tgid;
	__s64 d, lo, hi, n, span;

	st = bpf_map_lookup_elem(&strides, &tgid);
	if (!st) {
		bpf_map_update_elem(&strides, &tgid, &fresh, BPF_ANY);
		return 0;
	}
	d = (__s64)(page - st->last);
	if (st->repeats && page == st->next)
		d = st->stride;	/* the targets in between were prefetched: same stride */
	if (d && d == st->stride) {
		st->repeats++;
	} else {
		st->stride = d;
		st->repeats = 0;
	}
	st->last = page;
	if (!st->repeats || d <= -GPU_PAGES_PER_BLOCK || d >= GPU_PAGES_PER_BLOCK)
		return 0;

	span = d < 0 ? -d : d;
	n = span * STRIDE_DEPTH <= STRIDE_SPAN ? STRIDE_DEPTH : STRIDE_SPAN / span;
	if (n < 1)
		n = 1;
	lo = (__s64)page_index + d;
	hi = (__s64)page_index + n * d;
	if (d < 0) {
		__s64 t = lo;

		lo = hi;
		hi = t;
	}
	if (lo < max_region->first_page)
		lo = max_region->first_page;
	if (hi > max_region->last_page)
		hi = max_region->last_page;
	if (lo > hi)
		return 0;	/* the next targets are in another block */
	bpf_gpu_set_prefetch_region(result_region, (__u32)lo, (__u32)hi);
	st->next = page + (n + 1) * d;
	return 1;
}

SEC(".struct_ops.link")
struct gpu_mem_ops prefetch_stride = {
	.gpu_page_prefetch = (void *)stride_prefetch,
	.name = "prefetch_stride",
};

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The body of probe_bigrec.bpf.c and probe_bigrec_toobig.bpf.c, which differ
 * only in BIG_RING_BYTES, the size of ring `big` (a header, so that both
 * objects rebuild when it changes).
 */
#ifndef PROBE_BIGREC_H
#define PROBE_BIGREC_H
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "gpuext/probe.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, BIG_RING_BYTES);
} big SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} small SEC(".maps");

struct big_rec {
	__u64 kernel_id;
	__u8 pad[12000 - 8];
};

SEC("probe/exit")
int bigrec_exit(struct gpuext_probe_ctx *ctx)
{
	struct big_rec *r;
	__u64 buf[6] = { ctx->kernel_id, ctx->timer_ns };
	__u32 n = ctx->sm_id & 31;

	r = bpf_ringbuf_reserve(&big, sizeof(*r), 0);
	if (r) {
		r->kernel_id = ctx->kernel_id;
		bpf_ringbuf_submit(r, 0);
	}
	/* 17..48 bytes: a size the verifier knows only by its bounds */
	bpf_ringbuf_output(&small, buf, 17 + n, 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
#endif

// SPDX-License-Identifier: Apache-2.0
/* Loader test input: a CO-RE field access, which the loader refuses (for now). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct gpu_ctx {
	int a;
	int b;
} __attribute__((preserve_access_index));

SEC("xdp") int core_read(struct gpu_ctx *ctx)
{
	return ctx->b;
}

char _license[] SEC("license") = "GPL";

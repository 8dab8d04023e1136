// SPDX-License-Identifier: Apache-2.0
/*
 * Probes tests/test_codegen_ptx_probe.c must refuse to emit: one the
 * verifier rejects as a device probe (it writes its read-only context).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "gpuext/probe.h"

SEC("probe/entry")
int probe_fine(struct gpuext_probe_ctx *ctx)
{
	return 0;
}

SEC("probe/exit")
int probe_writes_ctx(struct gpuext_probe_ctx *ctx)
{
	ctx->lane_id = 7;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

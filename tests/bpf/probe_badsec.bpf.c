// SPDX-License-Identifier: Apache-2.0
/* A probe in a section no probe event has (tests/test_codegen_ptx_probe.c expects -EINVAL). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "gpuext/probe.h"

SEC("probe/retire")
int probe_typo(struct gpuext_probe_ctx *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

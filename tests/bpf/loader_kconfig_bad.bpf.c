// SPDX-License-Identifier: Apache-2.0
/* Loader test input: a non-weak .kconfig extern, unknown in user space. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern int CONFIG_GPUEXT_REQUIRED __kconfig;

SEC("xdp") int needs_config(void *ctx)
{
	return CONFIG_GPUEXT_REQUIRED;
}

char _license[] SEC("license") = "GPL";

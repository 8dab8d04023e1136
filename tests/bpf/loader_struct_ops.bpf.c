// SPDX-License-Identifier: Apache-2.0
/*
 * Loader test input: a struct_ops type defined here (not in the kernel),
 * one variable in .struct_ops.link filling both function members and one
 * in .struct_ops filling only the second.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct gpu_test_ops {
	int (*a)(void *ctx);
	int (*b)(void *ctx);
	int x;
	char name[16];
};

SEC("struct_ops/a") int test_a(void *ctx)
{
	return 11;
}

SEC("struct_ops/b") int test_b(void *ctx)
{
	return 22;
}

SEC(".struct_ops.link") struct gpu_test_ops linked_ops = {
	.a = (void *)test_a,
	.b = (void *)test_b,
	.x = 42,
	.name = "hello",
};

SEC(".struct_ops") struct gpu_test_ops plain_ops = {
	.b = (void *)test_b,
	.x = 7,
	.name = "plain",
};

char _license[] SEC("license") = "GPL";

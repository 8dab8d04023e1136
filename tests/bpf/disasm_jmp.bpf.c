// SPDX-License-Identifier: Apache-2.0
/*
 * Disassembler test input: every conditional jump, JMP and JMP32, immediate
 * and register, forward and backward; goto; exit; helper calls, local
 * (BPF-to-BPF) calls and callx.
 */
#define SEC(name) __attribute__((section(name), used))
#define __naked __attribute__((naked))

typedef unsigned long long u64;

static long (*const helper_get_prandom)(void) = (void *)7;

SEC("socket") __naked int jmp_forms(void)
{
	asm volatile(
	"r0 = 0x0;"
	"if r1 == 0x4 goto +0x1;"	"if r1 == r2 goto +0x1;"
	"if r1 != -0x4 goto +0x1;"	"if r1 != r2 goto +0x1;"
	"if r1 > 0x4 goto +0x1;"	"if r1 > r2 goto +0x1;"
	"if r1 >= 0x4 goto +0x1;"	"if r1 >= r2 goto +0x1;"
	"if r1 < 0x4 goto +0x1;"	"if r1 < r2 goto +0x1;"
	"if r1 <= 0x4 goto +0x1;"	"if r1 <= r2 goto +0x1;"
	"if r1 s> 0x4 goto +0x1;"	"if r1 s> r2 goto +0x1;"
	"if r1 s>= 0x4 goto +0x1;"	"if r1 s>= r2 goto +0x1;"
	"if r1 s< -0x4 goto +0x1;"	"if r1 s< r2 goto +0x1;"
	"if r1 s<= 0x4 goto +0x1;"	"if r1 s<= r2 goto +0x1;"
	"if r1 & 0x4 goto +0x1;"	"if r1 & r2 goto +0x1;"
	"if w1 == 0x4 goto +0x1;"	"if w1 == w2 goto +0x1;"
	"if w1 != -0x4 goto +0x1;"	"if w1 != w2 goto +0x1;"
	"if w1 > 0x4 goto +0x1;"	"if w1 > w2 goto +0x1;"
	"if w1 >= 0x4 goto +0x1;"	"if w1 >= w2 goto +0x1;"
	"if w1 < 0x4 goto +0x1;"	"if w1 < w2 goto +0x1;"
	"if w1 <= 0x4 goto +0x1;"	"if w1 <= w2 goto +0x1;"
	"if w1 s> 0x4 goto +0x1;"	"if w1 s> w2 goto +0x1;"
	"if w1 s>= 0x4 goto +0x1;"	"if w1 s>= w2 goto +0x1;"
	"if w1 s< -0x4 goto +0x1;"	"if w1 s< w2 goto +0x1;"
	"if w1 s<= 0x4 goto +0x1;"	"if w1 s<= w2 goto +0x1;"
	"if w1 & 0x4 goto +0x1;"	"if w1 & w2 goto +0x1;"
	"if r10 == 0x0 goto -0x2;"
	"goto +0x0;"
	"goto -0x3;"
	"call 0x7;"
	"callx r2;"
	"exit;"
	::: "memory");
}

static __attribute__((noinline)) u64 mix(u64 a, u64 b)
{
	return a * 31 + (b ^ (a >> 3));
}

SEC("socket") int jmp_c(u64 *ctx)
{
	u64 acc = 0;

	for (int i = 0; i < 8; i++) {
		if (ctx[i] > 100)
			acc = mix(acc, ctx[i]);
		else if ((long long)ctx[i] < -5)
			acc -= ctx[i];
		else
			acc += helper_get_prandom();
	}
	return (int)acc;
}

char LICENSE[] SEC("license") = "GPL";

// SPDX-License-Identifier: Apache-2.0
/*
 * Disassembler test input for cpu v4 additions: signed div/mod, sign-
 * extending moves and loads, unconditional byte swaps and the 32-bit-range
 * jump "gotol".
 */
#define SEC(name) __attribute__((section(name), used))
#define __naked __attribute__((naked))

typedef unsigned long long u64;

SEC("socket") __naked int v4_forms(void)
{
	asm volatile(
	"r0 s/= 0x3;"	"r0 s/= r1;"	"r0 s%%= -0x3;"	"r0 s%%= r1;"
	"w0 s/= 0x3;"	"w0 s/= w1;"	"w0 s%%= -0x3;"	"w0 s%%= w1;"
	"r1 = (s8)r2;"	"r1 = (s16)r2;"	"r1 = (s32)r2;"
	"w1 = (s8)w2;"	"w1 = (s16)w2;"
	"r0 = *(s8 *)(r1 + 0x0);"	"r0 = *(s16 *)(r1 + 0x2);"
	"r0 = *(s32 *)(r1 - 0x4);"
	"r1 = bswap16 r1;"	"r1 = bswap32 r1;"	"r1 = bswap64 r1;"
	"gotol +0x1;"	"gotol +0x0;"	"gotol -0x2;"
	"exit;"
	::: "memory");
}

SEC("socket") int v4_c(long long *ctx)
{
	long long a = ctx[0], b = ctx[1] | 1;
	signed char c = *(signed char *)&ctx[2];
	short d = *(short *)&ctx[3];

	return (int)(a / b + a % b + c + d + __builtin_bswap32((unsigned int)a));
}

char LICENSE[] SEC("license") = "GPL";

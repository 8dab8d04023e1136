// SPDX-License-Identifier: Apache-2.0
/*
 * Disassembler test input: every ALU32/ALU64 operation in both source forms,
 * neg, the byte-order conversions, and some compiler-generated arithmetic.
 * tests/test_disasm.c compares our text with llvm-objdump-22's, line by line.
 */
#define SEC(name) __attribute__((section(name), used))
#define __naked __attribute__((naked))

typedef unsigned int u32;
typedef unsigned long long u64;

SEC("socket") __naked int alu64_forms(void)
{
	asm volatile(
	"r0 = 0x1;"	"r1 = -0x7;"	"r2 = r1;"	"r3 = 0x7fffffff;"
	"r0 += 0x4;"	"r0 += r1;"	"r0 += -0x80000000;"
	"r0 -= 0x4;"	"r0 -= r2;"
	"r0 *= 0x4;"	"r0 *= r3;"
	"r0 /= 0x4;"	"r0 /= r3;"
	"r0 |= 0x4;"	"r0 |= r4;"
	"r0 &= 0x4;"	"r0 &= r5;"
	"r0 <<= 0x4;"	"r0 <<= r6;"
	"r0 >>= 0x3f;"	"r0 >>= r7;"
	"r0 = -r0;"
	"r0 %%= 0x4;"	"r0 %%= r8;"
	"r0 ^= 0x4;"	"r0 ^= r9;"
	"r0 s>>= 0x4;"	"r0 s>>= r10;"
	"r9 = r10;"
	"r1 = le16 r1;"	"r1 = le32 r1;"	"r1 = le64 r1;"
	"r1 = be16 r1;"	"r1 = be32 r1;"	"r1 = be64 r1;"
	"r0 = 0x123456789abcdef0 ll;"
	"r0 = -0x1 ll;"
	"r0 = 0x0 ll;"
	"exit;"
	::: "memory");
}

SEC("socket") __naked int alu32_forms(void)
{
	asm volatile(
	"w0 = 0x1;"	"w1 = -0x7;"	"w2 = w1;"	"w3 = 0x7fffffff;"
	"w0 += 0x4;"	"w0 += w1;"
	"w0 -= 0x4;"	"w0 -= w2;"
	"w0 *= 0x4;"	"w0 *= w3;"
	"w0 /= 0x4;"	"w0 /= w3;"
	"w0 |= 0x4;"	"w0 |= w4;"
	"w0 &= 0x4;"	"w0 &= w5;"
	"w0 <<= 0x4;"	"w0 <<= w6;"
	"w0 >>= 0x1f;"	"w0 >>= w7;"
	"w0 = -w0;"
	"w0 %%= 0x4;"	"w0 %%= w8;"
	"w0 ^= 0x4;"	"w0 ^= w9;"
	"w0 s>>= 0x4;"	"w0 s>>= w10;"
	"exit;"
	::: "memory");
}

/* What clang makes of ordinary arithmetic. */
SEC("socket") int alu_c(u64 *ctx)
{
	u64 a = ctx[0], b = ctx[1];
	u32 x = (u32)ctx[2], y = (u32)ctx[3];

	a = (a * 3 + b) ^ (b >> 7);
	a /= (b | 1);
	a %= 1000003;
	x = (x << 3) - (y >> 2);
	x /= (y | 1);
	x = (u32)((int)x >> 5);
	return (int)(a + x + (a > b) + ((long long)a < 0));
}

char LICENSE[] SEC("license") = "GPL";

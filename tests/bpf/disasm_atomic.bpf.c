// SPDX-License-Identifier: Apache-2.0
/*
 * Disassembler test input: every atomic operation in 32 and 64 bits
 * (add/or/and/xor with and without fetch, xchg, cmpxchg).
 */
#define SEC(name) __attribute__((section(name), used))
#define __naked __attribute__((naked))

typedef unsigned int u32;
typedef unsigned long long u64;

SEC("socket") __naked int atomic_forms(void)
{
	asm volatile(
	"lock *(u32 *)(r1 + 0x0) += w2;"	"lock *(u64 *)(r1 + 0x8) += r2;"
	"lock *(u32 *)(r1 + 0x0) |= w2;"	"lock *(u64 *)(r1 + 0x8) |= r2;"
	"lock *(u32 *)(r1 + 0x0) &= w2;"	"lock *(u64 *)(r1 + 0x8) &= r2;"
	"lock *(u32 *)(r1 + 0x0) ^= w2;"	"lock *(u64 *)(r1 + 0x8) ^= r2;"
	"w2 = atomic_fetch_add((u32 *)(r1 + 0x0), w2);"
	"r2 = atomic_fetch_add((u64 *)(r1 - 0x8), r2);"
	"w3 = atomic_fetch_or((u32 *)(r1 + 0x0), w3);"
	"r3 = atomic_fetch_or((u64 *)(r1 - 0x8), r3);"
	"w4 = atomic_fetch_and((u32 *)(r1 + 0x0), w4);"
	"r4 = atomic_fetch_and((u64 *)(r1 - 0x8), r4);"
	"w5 = atomic_fetch_xor((u32 *)(r1 + 0x0), w5);"
	"r5 = atomic_fetch_xor((u64 *)(r1 - 0x8), r5);"
	"w6 = xchg32_32(r1 + 0x4, w6);"
	"r6 = xchg_64(r1 + 0x8, r6);"
	"w0 = cmpxchg32_32(r1 + 0x4, w0, w7);"
	"r0 = cmpxchg_64(r10 - 0x8, r0, r7);"
	"exit;"
	::: "memory");
}

SEC("socket") int atomic_c(u64 *ctx)
{
	u64 old;

	__sync_fetch_and_add(&ctx[0], 1);
	old = __sync_fetch_and_add(&ctx[1], 5);
	__sync_fetch_and_or(&ctx[2], 2);
	old += __sync_fetch_and_xor(&ctx[3], 3);
	old += __sync_lock_test_and_set(&ctx[4], 9);
	old += __sync_val_compare_and_swap(&ctx[5], 1, 2);
	old += __sync_fetch_and_and((u32 *)&ctx[6], 0xff);
	return (int)old;
}

char LICENSE[] SEC("license") = "GPL";

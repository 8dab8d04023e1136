// SPDX-License-Identifier: Apache-2.0
/*
 * Disassembler test input: loads (LDX), stores of a register (STX) and of an
 * immediate (ST) in every size, positive and negative offsets, and a map
 * reference (a relocated ld_imm64, which the comparison skips).
 */
#define SEC(name) __attribute__((section(name), used))
#define __naked __attribute__((naked))

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

struct {
	int (*type)[2];		/* BPF_MAP_TYPE_ARRAY */
	int (*max_entries)[4];
	u32 *key;
	u64 *value;
} counters SEC(".maps");

static void *(*const map_lookup)(void *map, const void *key) = (void *)1;

SEC("socket") __naked int mem_forms(void)
{
	asm volatile(
	"w0 = *(u8 *)(r1 + 0x0);"	"w0 = *(u16 *)(r1 + 0x2);"
	"w0 = *(u32 *)(r1 + 0x4);"	"r0 = *(u64 *)(r1 + 0x8);"
	"w2 = *(u8 *)(r10 - 0x1);"	"w2 = *(u16 *)(r10 - 0x2);"
	"w2 = *(u32 *)(r10 - 0x4);"	"r2 = *(u64 *)(r10 - 0x200);"
	"*(u8 *)(r10 - 0x8) = w1;"	"*(u16 *)(r10 - 0x8) = w1;"
	"*(u32 *)(r10 - 0x8) = w1;"	"*(u64 *)(r10 - 0x8) = r1;"
	"*(u8 *)(r10 - 0x10) = 0x7f;"	"*(u16 *)(r10 - 0x10) = -0x1;"
	"*(u32 *)(r10 - 0x10) = 0x12345678;"	"*(u64 *)(r10 - 0x10) = -0x80000000;"
	"*(u64 *)(r1 + 0x7fff) = r9;"	"r0 = *(u64 *)(r1 - 0x8000);"
	"exit;"
	::: "memory");
}

SEC("socket") int mem_c(u8 *ctx)
{
	struct { u8 a; u16 b; u32 c; u64 d; } s;
	u32 key = ctx[0];
	u64 *v;

	s.a = ctx[1];
	s.b = *(u16 *)(ctx + 2);
	s.c = *(u32 *)(ctx + 4);
	s.d = *(u64 *)(ctx + 8);
	*(volatile u64 *)&s.d += s.a + s.b + s.c;
	v = map_lookup(&counters, &key);
	if (v)
		*v += s.d;
	ctx[16] = 1;
	*(u16 *)(ctx + 18) = 2;
	*(u32 *)(ctx + 20) = 3;
	*(u64 *)(ctx + 24) = 4;
	return (int)s.d;
}

char LICENSE[] SEC("license") = "GPL";

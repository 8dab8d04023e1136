/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The eBPF instruction set (RFC 9669): field accessors, an encoder, and a
 * decoder that classifies each instruction and says why an encoding is
 * invalid. Shared by the interpreter, the disassembler, the assembler, the
 * loader and (later) the verifier and codegen.
 */
#ifndef GPUEXT_CORE_ISA_H
#define GPUEXT_CORE_ISA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/bpf.h>

#ifndef BPF_MEMSX
#define BPF_MEMSX 0x80
#endif
#ifndef BPF_JCOND
#define BPF_JCOND 0xe0
#endif
/* RFC 9669 names the byte-swap source bit BPF_TO_LE/BPF_TO_BE (ALU) and uses ALU64 for bswap. */
#define GPUEXT_INSN_SIZE 8

static inline uint8_t isa_class(uint8_t code) { return code & 0x07; }
static inline uint8_t isa_op(uint8_t code) { return code & 0xf0; }
static inline uint8_t isa_src_bit(uint8_t code) { return code & 0x08; }
static inline uint8_t isa_mode(uint8_t code) { return code & 0xe0; }
static inline uint8_t isa_size(uint8_t code) { return code & 0x18; }
static inline unsigned isa_size_bytes(uint8_t code)
{
	switch (isa_size(code)) {
	case BPF_B: return 1;
	case BPF_H: return 2;
	case BPF_W: return 4;
	default: return 8;
	}
}

static inline bool isa_is_lddw(const struct bpf_insn *i)
{
	return i->code == (BPF_LD | BPF_DW | BPF_IMM);
}

static inline struct bpf_insn isa_make(uint8_t code, uint8_t dst, uint8_t src,
				       int16_t off, int32_t imm)
{
	struct bpf_insn i = { .code = code, .dst_reg = dst, .src_reg = src,
			      .off = off, .imm = imm };
	return i;
}

/* What an instruction is, after decoding. */
enum isa_kind {
	ISA_ALU,	/* ALU/ALU64 arithmetic, mov, movsx, neg, sdiv/smod */
	ISA_BSWAP,	/* END: le/be (ALU) and bswap (ALU64) */
	ISA_LDDW,	/* wide ld_imm64, two slots */
	ISA_LDX,	/* LDX MEM and MEMSX */
	ISA_ST,		/* ST MEM imm */
	ISA_STX,	/* STX MEM reg */
	ISA_ATOMIC,	/* STX ATOMIC */
	ISA_JA,		/* JMP ja (off) / JMP32 ja (imm, "gotol") */
	ISA_JCOND,	/* conditional jump, JMP or JMP32 */
	ISA_CALL,	/* helper (src 0), local (src 1), kfunc (src 2) */
	ISA_CALLX,	/* call register (dst) */
	ISA_EXIT,
};

struct isa_decoded {
	enum isa_kind kind;
	bool is64;		/* ALU64/JMP/atomic DW */
	bool use_imm;		/* K source */
	unsigned size;		/* memory access size in bytes */
	unsigned slots;		/* 1, or 2 for lddw; 0 marks an invalid slot in cached decodings */
};

/*
 * Decodes insns[idx]. On an invalid encoding returns a negative errno and
 * writes a one-line reason to @why (may be NULL).
 */
int isa_decode(const struct bpf_insn *insns, size_t cnt, size_t idx,
	       struct isa_decoded *d, char *why, size_t why_len);

/* Validates a whole program's encoding: every insn decodes, jumps land on an
 * instruction start inside the program, lddw is complete, last insn is exit
 * or an unconditional jump. Returns 0 or -EINVAL with @why filled. */
int isa_check_program(const struct bpf_insn *insns, size_t cnt, size_t *bad_idx,
		      char *why, size_t why_len);

/*
 * Code address named by ld_imm64 src=4 at @idx: relative to the instruction
 * after the first slot, as Linux and libbpf count it (insn_idx + imm + 1).
 */
static inline int64_t isa_func_addr_target(const struct bpf_insn *i, size_t idx)
{
	return (int64_t)idx + 1 + i->imm;
}

/* Jump target of a JA/JCOND/local call at @idx. */
static inline int64_t isa_jump_target(const struct bpf_insn *i, size_t idx)
{
	if (isa_class(i->code) == BPF_JMP32 && isa_op(i->code) == BPF_JA)
		return (int64_t)idx + 1 + i->imm;
	if (isa_op(i->code) == BPF_CALL)
		return (int64_t)idx + 1 + i->imm;
	return (int64_t)idx + 1 + i->off;
}

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Decoding and encoding rules of RFC 9669. Every field that the RFC says
 * must be zero is checked, so that an encoding we accept means one thing.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

static int bad(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int bad(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int decode_alu(const struct bpf_insn *i, struct isa_decoded *d, char *why, size_t wl)
{
	uint8_t op = isa_op(i->code);
	bool x = isa_src_bit(i->code);

	d->kind = ISA_ALU;
	d->is64 = isa_class(i->code) == BPF_ALU64;
	d->use_imm = !x;
	if (i->dst_reg > 9)
		return bad(why, wl, "destination r%u is not writable (r10 is read-only, r11+ do not exist)",
			   i->dst_reg);
	if (op == BPF_END) {
		d->kind = ISA_BSWAP;
		if (d->is64 && x)
			return bad(why, wl, "bswap (ALU64 END) must use source bit 0");
		if (i->src_reg || i->off)
			return bad(why, wl, "byte swap with non-zero src_reg/offset");
		if (i->imm != 16 && i->imm != 32 && i->imm != 64)
			return bad(why, wl, "byte swap width %d (must be 16, 32 or 64)", i->imm);
		return 0;
	}
	switch (op) {
	case BPF_ADD: case BPF_SUB: case BPF_MUL: case BPF_OR: case BPF_AND:
	case BPF_LSH: case BPF_RSH: case BPF_XOR: case BPF_ARSH:
		if (i->off)
			return bad(why, wl, "non-zero offset %d on an ALU operation", i->off);
		break;
	case BPF_DIV: case BPF_MOD:
		if (i->off != 0 && i->off != 1)
			return bad(why, wl, "div/mod offset %d (0 = unsigned, 1 = signed)", i->off);
		break;
	case BPF_NEG:
		if (x || i->src_reg || i->imm || i->off)
			return bad(why, wl, "neg takes no source (K form, src_reg, imm and offset 0)");
		return 0;
	case BPF_MOV:
		if (i->off == 0)
			break;
		if (!x)
			return bad(why, wl, "movsx needs a register source");
		if (i->off != 8 && i->off != 16 && !(d->is64 && i->off == 32))
			return bad(why, wl, "movsx width %d (8, 16%s)", i->off,
				   d->is64 ? " or 32" : "; 32-bit movsx has no 32");
		break;
	default:
		return bad(why, wl, "unknown ALU operation 0x%02x", op);
	}
	if (x) {
		if (i->imm)
			return bad(why, wl, "register-source ALU with non-zero imm");
		if (i->src_reg > 10)
			return bad(why, wl, "source register r%u does not exist", i->src_reg);
	} else if (i->src_reg) {
		return bad(why, wl, "immediate ALU with non-zero src_reg");
	}
	return 0;
}

static int decode_jmp(const struct bpf_insn *i, struct isa_decoded *d, char *why, size_t wl)
{
	uint8_t op = isa_op(i->code);
	bool x = isa_src_bit(i->code);
	bool j32 = isa_class(i->code) == BPF_JMP32;

	d->is64 = !j32;
	d->use_imm = !x;
	switch (op) {
	case BPF_JA:
		d->kind = ISA_JA;
		if (x || i->src_reg || i->dst_reg)
			return bad(why, wl, "ja with a register operand");
		if (j32 && i->off)
			return bad(why, wl, "gotol (JMP32 ja) takes its offset in imm; offset must be 0");
		if (!j32 && i->imm)
			return bad(why, wl, "ja takes its offset in off; imm must be 0");
		return 0;
	case BPF_CALL:
		if (j32)
			return bad(why, wl, "call is not a JMP32 operation");
		if (x) {
			d->kind = ISA_CALLX;
			if (i->src_reg || i->off || i->imm || i->dst_reg > 9)
				return bad(why, wl, "callx takes its target in dst_reg only");
			return 0;
		}
		d->kind = ISA_CALL;
		if (i->dst_reg || i->off)
			return bad(why, wl, "call with non-zero dst_reg/offset");
		if (i->src_reg > 2)
			return bad(why, wl, "call src_reg %u (0 helper, 1 local, 2 kfunc)", i->src_reg);
		return 0;
	case BPF_EXIT:
		d->kind = ISA_EXIT;
		if (j32)
			return bad(why, wl, "exit is not a JMP32 operation");
		if (x || i->src_reg || i->dst_reg || i->off || i->imm)
			return bad(why, wl, "exit with non-zero fields");
		return 0;
	case BPF_JEQ: case BPF_JGT: case BPF_JGE: case BPF_JSET: case BPF_JNE:
	case BPF_JSGT: case BPF_JSGE: case BPF_JLT: case BPF_JLE: case BPF_JSLT:
	case BPF_JSLE:
		d->kind = ISA_JCOND;
		if (i->dst_reg > 10)
			return bad(why, wl, "register r%u does not exist", i->dst_reg);
		if (x && (i->imm || i->src_reg > 10))
			return bad(why, wl, "register-source jump with non-zero imm or bad src_reg");
		if (!x && i->src_reg)
			return bad(why, wl, "immediate jump with non-zero src_reg");
		return 0;
	default:
		return bad(why, wl, "unknown jump operation 0x%02x", op);
	}
}

static int decode_mem(const struct bpf_insn *i, struct isa_decoded *d, char *why, size_t wl)
{
	uint8_t cls = isa_class(i->code), mode = isa_mode(i->code);

	d->size = isa_size_bytes(i->code);
	switch (cls) {
	case BPF_LDX:
		d->kind = ISA_LDX;
		if (mode != BPF_MEM && mode != BPF_MEMSX)
			return bad(why, wl, "LDX mode 0x%02x (MEM or MEMSX)", mode);
		if (mode == BPF_MEMSX && d->size == 8)
			return bad(why, wl, "sign-extending load of 8 bytes does not exist");
		if (i->dst_reg > 9 || i->src_reg > 10 || i->imm)
			return bad(why, wl, "load with bad registers or non-zero imm");
		return 0;
	case BPF_ST:
		d->kind = ISA_ST;
		if (mode != BPF_MEM)
			return bad(why, wl, "ST mode 0x%02x (only MEM)", mode);
		if (i->dst_reg > 10 || i->src_reg)
			return bad(why, wl, "store-immediate with a source register");
		return 0;
	case BPF_STX:
		if (i->dst_reg > 10 || i->src_reg > 10)
			return bad(why, wl, "store with a register that does not exist");
		if (mode == BPF_MEM) {
			d->kind = ISA_STX;
			if (i->imm)
				return bad(why, wl, "store-register with non-zero imm");
			return 0;
		}
		if (mode != BPF_ATOMIC)
			return bad(why, wl, "STX mode 0x%02x (MEM or ATOMIC)", mode);
		d->kind = ISA_ATOMIC;
		d->is64 = d->size == 8;
		if (d->size != 4 && d->size != 8)
			return bad(why, wl, "atomic operations are 32 or 64 bits wide");
		switch (i->imm) {
		case BPF_ADD: case BPF_OR: case BPF_AND: case BPF_XOR:
		case BPF_ADD | BPF_FETCH: case BPF_OR | BPF_FETCH:
		case BPF_AND | BPF_FETCH: case BPF_XOR | BPF_FETCH:
		case BPF_XCHG: case BPF_CMPXCHG:
			return 0;
		default:
			return bad(why, wl, "unknown atomic operation imm=0x%x", (unsigned)i->imm);
		}
	}
	return bad(why, wl, "not a memory instruction");
}

int isa_decode(const struct bpf_insn *insns, size_t cnt, size_t idx, struct isa_decoded *d,
	       char *why, size_t why_len)
{
	const struct bpf_insn *i;

	*d = (struct isa_decoded){ .slots = 1, .is64 = true };
	if (idx >= cnt)
		return bad(why, why_len, "instruction %zu is past the end (%zu instructions)", idx, cnt);
	i = &insns[idx];
	switch (isa_class(i->code)) {
	case BPF_ALU:
	case BPF_ALU64:
		return decode_alu(i, d, why, why_len);
	case BPF_JMP:
	case BPF_JMP32:
		return decode_jmp(i, d, why, why_len);
	case BPF_LDX:
	case BPF_ST:
	case BPF_STX:
		return decode_mem(i, d, why, why_len);
	case BPF_LD:
		if (!isa_is_lddw(i))
			return bad(why, why_len, "opcode 0x%02x: legacy packet loads (LD ABS/IND) and "
				   "non-DW LD IMM are not supported", i->code);
		d->kind = ISA_LDDW;
		d->slots = 2;
		d->size = 8;
		if (idx + 1 >= cnt)
			return bad(why, why_len, "ld_imm64 is cut off: its second half is missing");
		if (i->dst_reg > 9 || i->off)
			return bad(why, why_len, "ld_imm64 with bad dst_reg or non-zero offset");
		if (i->src_reg > BPF_PSEUDO_MAP_IDX_VALUE)
			return bad(why, why_len, "ld_imm64 src_reg %u (0..6 are defined)", i->src_reg);
		if (insns[idx + 1].code || insns[idx + 1].dst_reg || insns[idx + 1].src_reg ||
		    insns[idx + 1].off)
			return bad(why, why_len, "second half of ld_imm64 must have only imm set");
		return 0;
	}
	return bad(why, why_len, "unreachable");
}

int isa_check_program(const struct bpf_insn *insns, size_t cnt, size_t *bad_idx, char *why,
		      size_t why_len)
{
	struct isa_decoded d;
	uint8_t *second_half;
	size_t i;
	int err = 0;

	if (cnt == 0)
		return bad(why, why_len, "empty program");
	second_half = calloc(cnt, 1);
	if (!second_half)
		return -ENOMEM;
	/* First pass: encodings, and which slots are ld_imm64 second halves. */
	for (i = 0; i < cnt; i += d.slots) {
		err = isa_decode(insns, cnt, i, &d, why, why_len);
		if (err) {
			*bad_idx = i;
			goto out;
		}
		if (d.slots == 2)
			second_half[i + 1] = 1;
	}
	for (i = 0; i < cnt; i += d.slots) {
		int64_t t;

		isa_decode(insns, cnt, i, &d, NULL, 0);
		if (d.kind != ISA_JA && d.kind != ISA_JCOND &&
		    !(d.kind == ISA_CALL && insns[i].src_reg == BPF_PSEUDO_CALL) &&
		    !(d.kind == ISA_LDDW && insns[i].src_reg == BPF_PSEUDO_FUNC))
			continue;
		if (d.kind == ISA_LDDW)
			t = isa_func_addr_target(&insns[i], i);
		else
			t = isa_jump_target(&insns[i], i);
		if (t < 0 || t >= (int64_t)cnt) {
			*bad_idx = i;
			err = bad(why, why_len, "target %lld is outside the program (0..%zu)",
				  (long long)t, cnt - 1);
			goto out;
		}
		if (second_half[t]) {
			*bad_idx = i;
			err = bad(why, why_len, "target %lld is the second half of an ld_imm64",
				  (long long)t);
			goto out;
		}
	}
out:
	free(second_half);
	return err;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The disassembler: one instruction to one line of text in llvm-objdump's
 * BPF syntax, so that our output can be diffed against llvm-objdump-22 and
 * read by anyone who has read a BPF object dump before.
 *
 * Where llvm's text is ambiguous we deviate, because core/asm.c must be able
 * to turn every line back into the same bytes:
 *   - local calls (src 1) carry an explicit sign, "call +0x5" / "call -0x5";
 *     helper calls (src 0) print their id unsigned, "call 0x1";
 *   - kfunc calls (src 2) read "call kfunc[NAME]" or "call kfunc[#ID]";
 *   - ld_imm64 with a pseudo source names what it loads:
 *       src 1 map_fd[NAME]   src 2 map_value_fd[NAME]+OFF   src 3 var[ID]
 *       src 4 func[+REL]     src 5 map[NAME]   src 6 map_value[NAME]+OFF
 *     NAME is "#<number>" when no program (or no such map) is known.
 * Anything after " ; " is a comment (helper and function names).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* A bounded string builder: never overflows, always NUL-terminated. */
struct sbuf {
	char *p;
	size_t len, cap;
};

static void sb_printf(struct sbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!sb->cap || sb->len >= sb->cap - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(sb->p + sb->len, sb->cap - sb->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	sb->len += (size_t)n;
	if (sb->len >= sb->cap)
		sb->len = sb->cap - 1;
}

/* "0x4" / "-0x4": llvm prints immediates as signed hex. */
static void sb_simm(struct sbuf *sb, int64_t v)
{
	if (v < 0)
		sb_printf(sb, "-0x%" PRIx64, (uint64_t)0 - (uint64_t)v);
	else
		sb_printf(sb, "0x%" PRIx64, (uint64_t)v);
}

/* Jump offsets always carry a sign: "+0x3", "-0x1". */
static void sb_rel(struct sbuf *sb, int64_t v)
{
	if (v < 0)
		sb_printf(sb, "-0x%" PRIx64, (uint64_t)0 - (uint64_t)v);
	else
		sb_printf(sb, "+0x%" PRIx64, (uint64_t)v);
}

/* "r1 + 0x4" / "r1 - 0x8" */
static void sb_addr(struct sbuf *sb, unsigned reg, int16_t off)
{
	if (off < 0)
		sb_printf(sb, "r%u - 0x%x", reg, (unsigned)-(int)off);
	else
		sb_printf(sb, "r%u + 0x%x", reg, (unsigned)off);
}

/* "(r1 + 0x4)" */
static void sb_memref(struct sbuf *sb, unsigned reg, int16_t off)
{
	sb_printf(sb, "(");
	sb_addr(sb, reg, off);
	sb_printf(sb, ")");
}

static const char *size_name(uint8_t code, bool sx)
{
	switch (isa_size(code)) {
	case BPF_B: return sx ? "s8" : "u8";
	case BPF_H: return sx ? "s16" : "u16";
	case BPF_W: return sx ? "s32" : "u32";
	default: return "u64";
	}
}

static const char *alu_op_text(uint8_t op, int16_t off)
{
	switch (op) {
	case BPF_ADD: return "+=";
	case BPF_SUB: return "-=";
	case BPF_MUL: return "*=";
	case BPF_DIV: return off ? "s/=" : "/=";
	case BPF_OR: return "|=";
	case BPF_AND: return "&=";
	case BPF_LSH: return "<<=";
	case BPF_RSH: return ">>=";
	case BPF_MOD: return off ? "s%=" : "%=";
	case BPF_XOR: return "^=";
	case BPF_MOV: return "=";
	case BPF_ARSH: return "s>>=";
	}
	return "?";
}

static const char *jmp_op_text(uint8_t op)
{
	switch (op) {
	case BPF_JEQ: return "==";
	case BPF_JGT: return ">";
	case BPF_JGE: return ">=";
	case BPF_JSET: return "&";
	case BPF_JNE: return "!=";
	case BPF_JSGT: return "s>";
	case BPF_JSGE: return "s>=";
	case BPF_JLT: return "<";
	case BPF_JLE: return "<=";
	case BPF_JSLT: return "s<";
	case BPF_JSLE: return "s<=";
	}
	return "?";
}

static const char *atomic_name(int32_t imm)
{
	switch (imm & ~BPF_FETCH) {
	case BPF_ADD: return "add";
	case BPF_OR: return "or";
	case BPF_AND: return "and";
	case BPF_XOR: return "xor";
	}
	return "?";
}

static const char *atomic_op(int32_t imm)
{
	switch (imm & ~BPF_FETCH) {
	case BPF_ADD: return "+=";
	case BPF_OR: return "|=";
	case BPF_AND: return "&=";
	case BPF_XOR: return "^=";
	}
	return "?";
}

static void fmt_alu(struct sbuf *sb, const struct bpf_insn *i)
{
	bool is64 = isa_class(i->code) == BPF_ALU64;
	char r = is64 ? 'r' : 'w';
	uint8_t op = isa_op(i->code);

	if (op == BPF_END) {
		const char *kind = is64 ? "bswap" : isa_src_bit(i->code) ? "be" : "le";

		sb_printf(sb, "r%u = %s%d r%u", i->dst_reg, kind, i->imm, i->dst_reg);
		return;
	}
	if (op == BPF_NEG) {
		sb_printf(sb, "%c%u = -%c%u", r, i->dst_reg, r, i->dst_reg);
		return;
	}
	if (op == BPF_MOV && i->off) {
		sb_printf(sb, "%c%u = (s%d)%c%u", r, i->dst_reg, i->off, r, i->src_reg);
		return;
	}
	sb_printf(sb, "%c%u %s ", r, i->dst_reg, alu_op_text(op, i->off));
	if (isa_src_bit(i->code))
		sb_printf(sb, "%c%u", r, i->src_reg);
	else
		sb_simm(sb, i->imm);
}

static void fmt_jmp(struct sbuf *sb, const struct bpf_insn *i)
{
	char r = isa_class(i->code) == BPF_JMP32 ? 'w' : 'r';

	sb_printf(sb, "if %c%u %s ", r, i->dst_reg, jmp_op_text(isa_op(i->code)));
	if (isa_src_bit(i->code))
		sb_printf(sb, "%c%u", r, i->src_reg);
	else
		sb_simm(sb, i->imm);
	sb_printf(sb, " goto ");
	sb_rel(sb, i->off);
}

static void fmt_atomic(struct sbuf *sb, const struct bpf_insn *i)
{
	bool is64 = isa_size(i->code) == BPF_DW;
	char r = is64 ? 'r' : 'w';
	const char *sz = is64 ? "u64" : "u32";

	if (i->imm == BPF_XCHG) {
		sb_printf(sb, "%c%u = %s(", r, i->src_reg, is64 ? "xchg_64" : "xchg32_32");
		sb_addr(sb, i->dst_reg, i->off);
		sb_printf(sb, ", %c%u)", r, i->src_reg);
	} else if (i->imm == BPF_CMPXCHG) {
		sb_printf(sb, "%c0 = %s(", r, is64 ? "cmpxchg_64" : "cmpxchg32_32");
		sb_addr(sb, i->dst_reg, i->off);
		sb_printf(sb, ", %c0, %c%u)", r, r, i->src_reg);
	} else if (i->imm & BPF_FETCH) {
		sb_printf(sb, "%c%u = atomic_fetch_%s((%s *)", r, i->src_reg, atomic_name(i->imm), sz);
		sb_memref(sb, i->dst_reg, i->off);
		sb_printf(sb, ", %c%u)", r, i->src_reg);
	} else {
		sb_printf(sb, "lock *(%s *)", sz);
		sb_memref(sb, i->dst_reg, i->off);
		sb_printf(sb, " %s %c%u", atomic_op(i->imm), r, i->src_reg);
	}
}

static void fmt_mem(struct sbuf *sb, const struct bpf_insn *i)
{
	bool dw = isa_size(i->code) == BPF_DW;

	switch (isa_class(i->code)) {
	case BPF_LDX:
		if (isa_mode(i->code) == BPF_MEMSX)
			sb_printf(sb, "r%u = *(%s *)", i->dst_reg, size_name(i->code, true));
		else
			sb_printf(sb, "%c%u = *(%s *)", dw ? 'r' : 'w', i->dst_reg,
				  size_name(i->code, false));
		sb_memref(sb, i->src_reg, i->off);
		break;
	case BPF_ST:
		sb_printf(sb, "*(%s *)", size_name(i->code, false));
		sb_memref(sb, i->dst_reg, i->off);
		sb_printf(sb, " = ");
		sb_simm(sb, i->imm);
		break;
	case BPF_STX:
		if (isa_mode(i->code) == BPF_ATOMIC) {
			fmt_atomic(sb, i);
			break;
		}
		sb_printf(sb, "*(%s *)", size_name(i->code, false));
		sb_memref(sb, i->dst_reg, i->off);
		sb_printf(sb, " = %c%u", dw ? 'r' : 'w', i->src_reg);
		break;
	}
}

/* The name of map @m or "#<number>" when it has none we can print. */
static void sb_map(struct sbuf *sb, const struct gpuext_map *m, uint32_t num)
{
	const char *name = m ? gpuext_map__name(m) : NULL;

	if (name && *name)
		sb_printf(sb, "%s", name);
	else
		sb_printf(sb, "#%" PRIu32, num);
}

/* Function of @prog starting exactly at instruction @target, or NULL. */
static const char *func_at(const struct gpuext_prog *prog, int64_t target)
{
	if (!prog)
		return NULL;
	for (size_t f = 0; f < gpuext_prog__func_cnt(prog); f++)
		if ((int64_t)gpuext_prog__func_start(prog, f) == target)
			return gpuext_prog__func_name(prog, f);
	return NULL;
}

static void fmt_lddw(struct sbuf *sb, const struct gpuext_prog *prog,
		     const struct bpf_insn *i, size_t idx)
{
	struct gpuext_runtime *rt = prog ? gpuext_prog__runtime(prog) : NULL;
	int32_t imm2 = i[1].imm;
	uint32_t imm = (uint32_t)i->imm;
	struct gpuext_map *m = NULL;
	const char *fname;

	sb_printf(sb, "r%u = ", i->dst_reg);
	switch (i->src_reg) {
	case 0:
		sb_simm(sb, (int64_t)(((uint64_t)(uint32_t)imm2 << 32) | imm));
		sb_printf(sb, " ll");
		return;
	case BPF_PSEUDO_MAP_FD:
	case BPF_PSEUDO_MAP_VALUE:
		if (rt)
			m = gpuext_runtime__map_by_id(rt, imm);
		sb_printf(sb, "%s[", i->src_reg == BPF_PSEUDO_MAP_FD ? "map_fd" : "map_value_fd");
		sb_map(sb, m, imm);
		sb_printf(sb, "]");
		break;
	case BPF_PSEUDO_BTF_ID:
		sb_printf(sb, "var[0x%" PRIx32 "]", imm);
		break;
	case BPF_PSEUDO_FUNC:
		sb_printf(sb, "func[");
		sb_rel(sb, i->imm);
		sb_printf(sb, "]");
		break;
	case BPF_PSEUDO_MAP_IDX:
	case BPF_PSEUDO_MAP_IDX_VALUE:
		if (prog && imm < gpuext_prog__map_cnt(prog))
			m = gpuext_prog__map(prog, imm);
		sb_printf(sb, "%s[", i->src_reg == BPF_PSEUDO_MAP_IDX ? "map" : "map_value");
		sb_map(sb, m, imm);
		sb_printf(sb, "]");
		break;
	}
	/* The value forms always show their offset; the others only when set. */
	if (i->src_reg == BPF_PSEUDO_MAP_VALUE || i->src_reg == BPF_PSEUDO_MAP_IDX_VALUE || imm2)
		sb_printf(sb, "+0x%" PRIx32, (uint32_t)imm2);
	sb_printf(sb, " ll");
	if (i->src_reg == BPF_PSEUDO_FUNC && (fname = func_at(prog, isa_func_addr_target(i, idx))))
		sb_printf(sb, " ; %s", fname);
}

static void fmt_call(struct sbuf *sb, const struct gpuext_prog *prog,
		     const struct bpf_insn *i, size_t idx)
{
	struct gpuext_runtime *rt = prog ? gpuext_prog__runtime(prog) : NULL;
	const struct gpuext_func_proto *p = NULL;
	const char *fname;

	switch (i->src_reg) {
	case BPF_PSEUDO_CALL:
		sb_printf(sb, "call ");
		sb_rel(sb, i->imm);
		if ((fname = func_at(prog, isa_jump_target(i, idx))))
			sb_printf(sb, " ; %s", fname);
		return;
	case BPF_PSEUDO_KFUNC_CALL:
		if (rt)
			p = gpuext_runtime__find_func(rt, GPUEXT_FUNC_KFUNC, (uint32_t)i->imm);
		if (p && p->name)
			sb_printf(sb, "call kfunc[%s]", p->name);
		else
			sb_printf(sb, "call kfunc[#%" PRIu32 "]", (uint32_t)i->imm);
		return;
	default:
		sb_printf(sb, "call 0x%" PRIx32, (uint32_t)i->imm);
		if (rt)
			p = gpuext_runtime__find_func(rt, GPUEXT_FUNC_HELPER, (uint32_t)i->imm);
		if (p && p->name)
			sb_printf(sb, " ; %s", p->name);
	}
}

int gpuext_disasm_insn(const struct gpuext_prog *prog, const struct bpf_insn *insns,
		       size_t cnt, size_t idx, char *buf, size_t buf_len)
{
	struct sbuf sb = { .p = buf, .cap = buf_len };
	struct isa_decoded d;
	char why[160];
	const struct bpf_insn *i;
	int err;

	if (!buf || !buf_len || !insns)
		return GPUEXT_ERR(EINVAL);
	buf[0] = '\0';
	err = isa_decode(insns, cnt, idx, &d, why, sizeof(why));
	if (err) {
		sb_printf(&sb, "invalid: %s", why);
		return GPUEXT_ERR(-err);
	}
	i = &insns[idx];
	switch (d.kind) {
	case ISA_ALU:
	case ISA_BSWAP:
		fmt_alu(&sb, i);
		break;
	case ISA_LDDW:
		fmt_lddw(&sb, prog, i, idx);
		break;
	case ISA_LDX:
	case ISA_ST:
	case ISA_STX:
	case ISA_ATOMIC:
		fmt_mem(&sb, i);
		break;
	case ISA_JA:
		if (isa_class(i->code) == BPF_JMP32) {
			sb_printf(&sb, "gotol ");
			sb_rel(&sb, i->imm);
		} else {
			sb_printf(&sb, "goto ");
			sb_rel(&sb, i->off);
		}
		break;
	case ISA_JCOND:
		fmt_jmp(&sb, i);
		break;
	case ISA_CALL:
		fmt_call(&sb, prog, i, idx);
		break;
	case ISA_CALLX:
		sb_printf(&sb, "callx r%u", i->dst_reg);
		break;
	case ISA_EXIT:
		sb_printf(&sb, "exit");
		break;
	}
	return (int)d.slots;
}

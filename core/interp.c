/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reference interpreter: one plain switch over opcodes, each case the
 * RFC 9669 semantics written out. Every other executor (host JIT, PTX,
 * SPIR-V) is checked against this one, so clarity wins over speed.
 *
 * Memory safety does not rest on the verifier here: every load, store and
 * atomic is checked against the regions the program may touch (its stack,
 * its context, map values, ring-buffer records, registered variables), and
 * helper pointer arguments are checked against their typed signatures. A
 * violation ends the run with -EFAULT and a message naming the instruction.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct frame {
	uint64_t saved[4];	/* r6..r9 of the caller */
	uint64_t saved_r10;
	size_t ret_pc;
};

/* One program invocation; lives on gpuext_prog__run()'s stack. */
struct gpuext_exec {
	struct gpuext_runtime *rt;
	struct gpuext_prog *prog;
	const struct gpuext_run_opts *opts;
	uint64_t reg[11];
	struct frame frames[GPUEXT_MAX_CALL_FRAMES];
	int depth;		/* 0 = the entry function */
	size_t pc;
	int err;		/* set by gpuext_exec__fail */
	/*
	 * Native executions (gpuext_exec_new_native): the program runs as
	 * machine code and its frames live on the thread's stack, between
	 * native_stack_lo and native_stack_hi; ->stack below is not used.
	 */
	bool native;
	const void *native_stack_lo, *native_stack_hi;
	uint8_t stack[GPUEXT_STACK_SIZE * GPUEXT_MAX_CALL_FRAMES] __attribute__((aligned(16)));
};

struct gpuext_runtime *gpuext_exec__runtime(const struct gpuext_exec *ex) { return ex->rt; }
uint32_t gpuext_exec__cpu(const struct gpuext_exec *ex) { return ex->opts->cpu; }
void *gpuext_exec__user(const struct gpuext_exec *ex) { return ex->opts->user; }

static void describe_insn(const struct gpuext_exec *ex, size_t pc, char *buf, size_t len)
{
	if (gpuext_disasm_insn(ex->prog, ex->prog->insns, ex->prog->insn_cnt, pc, buf, len) < 0 &&
	    !buf[0])
		snprintf(buf, len, "opcode 0x%02x", ex->prog->insns[pc].code);
}

void gpuext_exec__fail(struct gpuext_exec *ex, int err, const char *fmt, ...)
{
	char msg[512], insn[128] = "";
	va_list ap;

	if (ex->err)
		return; /* keep the first reason */
	ex->err = err > 0 ? -err : err;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ex->native) { /* no instruction index in machine code */
		gpuext_log(ex->rt, GPUEXT_LOG_WARN, "prog '%s' (native code): %s", ex->prog->name, msg);
		return;
	}
	if (ex->pc < ex->prog->insn_cnt)
		describe_insn(ex, ex->pc, insn, sizeof(insn));
	gpuext_log(ex->rt, GPUEXT_LOG_WARN, "prog '%s': insn %zu (%s): %s", ex->prog->name, ex->pc,
		   insn, msg);
}

static bool in_range(uint64_t addr, uint64_t len, const void *base, uint64_t size)
{
	uint64_t b = (uint64_t)(uintptr_t)base;

	return addr >= b && len <= size && addr - b <= size - len;
}

int gpuext_exec__check_mem(const struct gpuext_exec *ex, uint64_t addr, uint64_t len, bool write)
{
	const struct gpuext_runtime *rt = ex->rt;

	if (len == 0)
		return 0;
	/* The current frame and its callers' frames (pointers passed down); never
	 * below the current frame: that is stack no live function owns. */
	if (ex->native) {
		const uint8_t *lo = ex->native_stack_lo, *hi = ex->native_stack_hi;

		if (lo && hi > lo && in_range(addr, len, lo, (uint64_t)(hi - lo)))
			return 0;
	} else {
		size_t live = (size_t)(ex->depth + 1) * GPUEXT_STACK_SIZE;

		if (in_range(addr, len, ex->stack + sizeof(ex->stack) - live, live))
			return 0;
	}
	if (ex->opts->ctx && in_range(addr, len, ex->opts->ctx, ex->opts->ctx_len))
		return write && !ex->opts->ctx_writable ? -EFAULT : 0;
	for (size_t i = 0; i < rt->var_cnt; i++)
		if (in_range(addr, len, rt->vars[i].addr, rt->vars[i].size))
			return write && !rt->vars[i].writable ? -EFAULT : 0;
	for (size_t i = 0; i < ex->opts->region_cnt; i++)
		if (in_range(addr, len, ex->opts->regions[i].addr, ex->opts->regions[i].len))
			return write && !ex->opts->regions[i].writable ? -EFAULT : 0;
	for (size_t i = 0; i < rt->map_slots; i++)
		if (rt->maps[i] && gpuext_map_contains(rt->maps[i], addr, len, write))
			return 0;
	return -EFAULT;
}

static bool check_access(struct gpuext_exec *ex, uint64_t addr, unsigned size, bool write)
{
	if (gpuext_exec__check_mem(ex, addr, size, write) == 0)
		return true;
	gpuext_exec__fail(ex, -EFAULT,
			  "invalid %s of %u bytes at 0x%llx: not inside the stack, the context, "
			  "a map value or a ring-buffer record%s",
			  write ? "write" : "read", size, (unsigned long long)addr,
			  write ? " (or the region is read-only)" : "");
	return false;
}

static uint64_t load(const void *p, unsigned size)
{
	uint8_t u8; uint16_t u16; uint32_t u32; uint64_t u64;

	switch (size) {
	case 1: memcpy(&u8, p, 1); return u8;
	case 2: memcpy(&u16, p, 2); return u16;
	case 4: memcpy(&u32, p, 4); return u32;
	default: memcpy(&u64, p, 8); return u64;
	}
}

static void store(void *p, unsigned size, uint64_t v)
{
	uint8_t u8 = (uint8_t)v; uint16_t u16 = (uint16_t)v; uint32_t u32 = (uint32_t)v;

	switch (size) {
	case 1: memcpy(p, &u8, 1); break;
	case 2: memcpy(p, &u16, 2); break;
	case 4: memcpy(p, &u32, 4); break;
	default: memcpy(p, &v, 8); break;
	}
}

static uint64_t sext(uint64_t v, unsigned bits)
{
	uint64_t m = 1ULL << (bits - 1);

	v &= bits == 64 ? ~0ULL : (1ULL << bits) - 1;
	return (v ^ m) - m;
}

static struct gpuext_map *live_map(const struct gpuext_exec *ex, uint64_t v)
{
	const struct gpuext_runtime *rt = ex->rt;

	for (size_t i = 0; i < rt->map_slots; i++)
		if (rt->maps[i] && (uint64_t)(uintptr_t)rt->maps[i] == v)
			return rt->maps[i];
	return NULL;
}

/* Checks the arguments of a helper/kfunc call against its prototype. */
static bool check_call_args(struct gpuext_exec *ex, const struct gpuext_func_proto *p)
{
	struct gpuext_map *map = NULL;

	for (int a = 0; a < 5 && p->args[a] != GPUEXT_ARG_NONE; a++) {
		uint64_t v = ex->reg[1 + a];
		uint64_t next = a < 4 ? ex->reg[2 + a] : 0;
		int err = 0;

		switch (p->args[a]) {
		case GPUEXT_ARG_CONST_MAP_PTR:
			map = live_map(ex, v);
			if (!map) {
				gpuext_exec__fail(ex, -EINVAL, "%s: argument %d (r%d) is not a map",
						  p->name, a + 1, a + 1);
				return false;
			}
			break;
		case GPUEXT_ARG_PTR_TO_MAP_KEY:
			err = map ? gpuext_exec__check_mem(ex, v, gpuext_map__key_size(map), false)
				  : -EINVAL;
			break;
		case GPUEXT_ARG_PTR_TO_MAP_VALUE:
			err = map ? gpuext_exec__check_mem(ex, v, gpuext_map__value_size(map), false)
				  : -EINVAL;
			break;
		case GPUEXT_ARG_PTR_TO_MEM:
			err = gpuext_exec__check_mem(ex, v, next, false);
			break;
		case GPUEXT_ARG_PTR_TO_UNINIT_MEM:
			err = gpuext_exec__check_mem(ex, v, next, true);
			break;
		case GPUEXT_ARG_PTR_TO_RINGBUF_MEM:
			err = gpuext_ringbuf_of_record(ex->rt, v) ? 0 : -EINVAL;
			break;
		case GPUEXT_ARG_PTR_TO_CTX:
			err = ex->opts->ctx && v == (uint64_t)(uintptr_t)ex->opts->ctx ? 0 : -EINVAL;
			break;
		default:
			break;
		}
		if (err) {
			gpuext_exec__fail(ex, err, "%s: argument %d (r%d = 0x%llx) is not a valid %s",
					  p->name, a + 1, a + 1, (unsigned long long)v,
					  p->args[a] == GPUEXT_ARG_PTR_TO_RINGBUF_MEM ? "ring-buffer record"
					  : p->args[a] == GPUEXT_ARG_PTR_TO_CTX	     ? "context pointer"
										     : "memory region");
			return false;
		}
	}
	return true;
}

static void do_call(struct gpuext_exec *ex, enum gpuext_func_kind kind, uint32_t id)
{
	const struct gpuext_func_proto *p = gpuext_runtime__find_func(ex->rt, kind, id);

	if (!p || !p->fn) {
		gpuext_exec__fail(ex, -ENOENT, "%s %u is %s", kind == GPUEXT_FUNC_KFUNC ? "kfunc" : "helper",
				  id, p ? "declared but has no host implementation" : "not registered");
		return;
	}
	if (!check_call_args(ex, p))
		return;
	ex->reg[0] = p->fn(ex, ex->reg[1], ex->reg[2], ex->reg[3], ex->reg[4], ex->reg[5]);
	/* r1-r5 are clobbered by calls; make reads of them obviously wrong. */
	for (int r = 1; r <= 5; r++)
		ex->reg[r] = 0xbadca11badca11ULL;
}

static bool enter_func(struct gpuext_exec *ex, size_t target)
{
	struct frame *f;
	bool is_func = false;

	for (size_t i = 0; i < ex->prog->func_cnt; i++)
		is_func |= ex->prog->funcs[i].start == target;
	if (target >= ex->prog->insn_cnt || !is_func) {
		gpuext_exec__fail(ex, -EINVAL, "call target %zu is not the start of a function", target);
		return false;
	}
	if (ex->depth + 1 >= GPUEXT_MAX_CALL_FRAMES) {
		gpuext_exec__fail(ex, -E2BIG, "call depth would exceed %d frames",
				  GPUEXT_MAX_CALL_FRAMES);
		return false;
	}
	f = &ex->frames[ex->depth++];
	memcpy(f->saved, &ex->reg[6], sizeof(f->saved));
	f->saved_r10 = ex->reg[10];
	f->ret_pc = ex->pc + 1;
	ex->reg[10] -= GPUEXT_STACK_SIZE;
	ex->pc = target;
	return true;
}

static bool cond(uint8_t op, uint64_t a, uint64_t b, bool is64)
{
	if (!is64) {
		a = (uint32_t)a;
		b = (uint32_t)b;
	}
	int64_t sa = is64 ? (int64_t)a : (int32_t)a, sb = is64 ? (int64_t)b : (int32_t)b;

	switch (op) {
	case BPF_JEQ: return a == b;
	case BPF_JNE: return a != b;
	case BPF_JGT: return a > b;
	case BPF_JGE: return a >= b;
	case BPF_JLT: return a < b;
	case BPF_JLE: return a <= b;
	case BPF_JSET: return (a & b) != 0;
	case BPF_JSGT: return sa > sb;
	case BPF_JSGE: return sa >= sb;
	case BPF_JSLT: return sa < sb;
	case BPF_JSLE: return sa <= sb;
	}
	return false;
}

static uint64_t alu(struct gpuext_exec *ex, const struct bpf_insn *in, uint64_t dst, uint64_t src,
		    bool is64)
{
	uint8_t op = isa_op(in->code);
	bool sgn = in->off == 1;

	if (!is64) {
		dst = (uint32_t)dst;
		src = (uint32_t)src;
	}
	switch (op) {
	case BPF_ADD: return dst + src;
	case BPF_SUB: return dst - src;
	case BPF_MUL: return dst * src;
	case BPF_OR: return dst | src;
	case BPF_AND: return dst & src;
	case BPF_XOR: return dst ^ src;
	case BPF_LSH: return is64 ? dst << (src & 63) : (uint32_t)(dst << (src & 31));
	case BPF_RSH: return is64 ? dst >> (src & 63) : (uint32_t)dst >> (src & 31);
	case BPF_ARSH:
		return is64 ? (uint64_t)((int64_t)dst >> (src & 63))
			    : (uint32_t)((int32_t)dst >> (src & 31));
	case BPF_NEG: return is64 ? -dst : (uint32_t)-dst;
	case BPF_MOV:
		if (in->off) /* movsx */
			return is64 ? sext(src, in->off) : (uint32_t)sext(src, in->off);
		return src;
	case BPF_DIV:
		if (src == 0)
			return 0;
		if (!sgn)
			return dst / src;
		if (is64) {
			if ((int64_t)dst == INT64_MIN && (int64_t)src == -1)
				return dst; /* overflow wraps, no trap */
			return (uint64_t)((int64_t)dst / (int64_t)src);
		}
		if ((int32_t)dst == INT32_MIN && (int32_t)src == -1)
			return (uint32_t)dst;
		return (uint32_t)((int32_t)dst / (int32_t)src);
	case BPF_MOD:
		if (src == 0)
			return dst; /* already truncated to 32 bits for ALU */
		if (!sgn)
			return dst % src;
		if (is64) {
			if ((int64_t)src == -1)
				return 0;
			return (uint64_t)((int64_t)dst % (int64_t)src);
		}
		if ((int32_t)src == -1)
			return 0;
		return (uint32_t)((int32_t)dst % (int32_t)src);
	}
	gpuext_exec__fail(ex, -EINVAL, "unknown ALU operation");
	return 0;
}

static uint64_t bswap(const struct bpf_insn *in, uint64_t v)
{
	bool to_be = isa_class(in->code) == BPF_ALU64 || isa_src_bit(in->code) == BPF_TO_BE;

	if (!to_be) { /* host is little-endian: le is a truncation */
		switch (in->imm) {
		case 16: return (uint16_t)v;
		case 32: return (uint32_t)v;
		default: return v;
		}
	}
	switch (in->imm) {
	case 16: return __builtin_bswap16((uint16_t)v);
	case 32: return __builtin_bswap32((uint32_t)v);
	default: return __builtin_bswap64(v);
	}
}

static void atomic_op(struct gpuext_exec *ex, const struct bpf_insn *in, unsigned size)
{
	uint64_t addr = ex->reg[in->dst_reg] + (int64_t)in->off;
	uint64_t src = ex->reg[in->src_reg];
	int op = in->imm;
	uint64_t old;

	if (!check_access(ex, addr, size, true))
		return;
	if (addr & (size - 1)) {
		gpuext_exec__fail(ex, -EFAULT, "misaligned %u-byte atomic at 0x%llx", size,
				  (unsigned long long)addr);
		return;
	}
	if (size == 4) {
		uint32_t *p = (uint32_t *)(uintptr_t)addr, s = (uint32_t)src;

		switch (op & ~BPF_FETCH) {
		case BPF_ADD: old = __atomic_fetch_add(p, s, __ATOMIC_SEQ_CST); break;
		case BPF_OR: old = __atomic_fetch_or(p, s, __ATOMIC_SEQ_CST); break;
		case BPF_AND: old = __atomic_fetch_and(p, s, __ATOMIC_SEQ_CST); break;
		case BPF_XOR: old = __atomic_fetch_xor(p, s, __ATOMIC_SEQ_CST); break;
		case BPF_XCHG & ~BPF_FETCH: old = __atomic_exchange_n(p, s, __ATOMIC_SEQ_CST); break;
		default: { /* cmpxchg: compare with w0, old value into w0 */
			uint32_t expected = (uint32_t)ex->reg[0];

			__atomic_compare_exchange_n(p, &expected, s, false, __ATOMIC_SEQ_CST,
						    __ATOMIC_SEQ_CST);
			old = expected;
		}
		}
		old = (uint32_t)old;
	} else {
		uint64_t *p = (uint64_t *)(uintptr_t)addr;

		switch (op & ~BPF_FETCH) {
		case BPF_ADD: old = __atomic_fetch_add(p, src, __ATOMIC_SEQ_CST); break;
		case BPF_OR: old = __atomic_fetch_or(p, src, __ATOMIC_SEQ_CST); break;
		case BPF_AND: old = __atomic_fetch_and(p, src, __ATOMIC_SEQ_CST); break;
		case BPF_XOR: old = __atomic_fetch_xor(p, src, __ATOMIC_SEQ_CST); break;
		case BPF_XCHG & ~BPF_FETCH: old = __atomic_exchange_n(p, src, __ATOMIC_SEQ_CST); break;
		default: {
			uint64_t expected = ex->reg[0];

			__atomic_compare_exchange_n(p, &expected, src, false, __ATOMIC_SEQ_CST,
						    __ATOMIC_SEQ_CST);
			old = expected;
		}
		}
	}
	if (op == BPF_CMPXCHG)
		ex->reg[0] = old;
	else if (op & BPF_FETCH)
		ex->reg[in->src_reg] = old;
}

static uint64_t lddw_value(struct gpuext_exec *ex, const struct bpf_insn *in)
{
	struct gpuext_map *map = NULL;
	uint32_t off = (uint32_t)in[1].imm;

	switch (in->src_reg) {
	case 0:
		return (uint64_t)(uint32_t)in[0].imm | ((uint64_t)(uint32_t)in[1].imm << 32);
	case BPF_PSEUDO_MAP_FD:
	case BPF_PSEUDO_MAP_VALUE:
		map = gpuext_runtime__map_by_id(ex->rt, (uint32_t)in->imm);
		break;
	case BPF_PSEUDO_MAP_IDX:
	case BPF_PSEUDO_MAP_IDX_VALUE:
		if (in->imm >= 0 && (size_t)in->imm < ex->prog->map_cnt)
			map = ex->prog->maps[in->imm];
		break;
	case BPF_PSEUDO_BTF_ID:
		for (size_t i = 0; i < ex->rt->var_cnt; i++)
			if (ex->rt->vars[i].id == (uint32_t)in->imm)
				return (uint64_t)(uintptr_t)ex->rt->vars[i].addr;
		gpuext_exec__fail(ex, -ENOENT, "variable %d is not registered", in->imm);
		return 0;
	case BPF_PSEUDO_FUNC:
		return (uint64_t)isa_func_addr_target(in, ex->pc); /* code address = insn index */
	}
	if (!map) {
		gpuext_exec__fail(ex, -ENOENT, "map %s %d does not exist",
				  in->src_reg <= BPF_PSEUDO_MAP_VALUE ? "id" : "index", in->imm);
		return 0;
	}
	if (in->src_reg == BPF_PSEUDO_MAP_FD || in->src_reg == BPF_PSEUDO_MAP_IDX)
		return (uint64_t)(uintptr_t)map;
	void *p = gpuext_map_direct_value(map, off);
	if (!p)
		gpuext_exec__fail(ex, -EINVAL, "no direct value at offset %u of map '%s'", off,
				  gpuext_map__name(map));
	return (uint64_t)(uintptr_t)p;
}

/* Decodes every slot once; the run loop then only dispatches. */
static const struct isa_decoded *decoded(struct gpuext_prog *prog)
{
	struct isa_decoded *d = __atomic_load_n(&prog->decoded, __ATOMIC_ACQUIRE), *expected = NULL;

	if (d)
		return d;
	d = calloc(prog->insn_cnt, sizeof(*d));
	if (!d)
		return NULL;
	for (size_t i = 0; i < prog->insn_cnt; i++)
		if (isa_decode(prog->insns, prog->insn_cnt, i, &d[i], NULL, 0))
			d[i].slots = 0;
	if (!__atomic_compare_exchange_n(&prog->decoded, &expected, d, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		free(d); /* another thread won */
		return expected;
	}
	return d;
}

static int run(struct gpuext_exec *ex)
{
	const struct bpf_insn *insns = ex->prog->insns;
	const size_t cnt = ex->prog->insn_cnt;
	const uint64_t limit = ex->opts->insn_limit;
	const struct isa_decoded *dec = decoded(ex->prog);
	uint64_t executed = 0;
	uint64_t *r = ex->reg;
	int ret = 0;

	if (!dec)
		return -ENOMEM;
	while (!ex->err) {
		const struct bpf_insn *in;
		const struct isa_decoded *d;
		uint8_t cls;
		uint64_t src, addr;

		if (ex->pc >= cnt) {
			gpuext_exec__fail(ex, -EINVAL, "execution fell off the end of the program");
			break;
		}
		if (limit && executed >= limit) {
			gpuext_exec__fail(ex, -E2BIG, "instruction limit of %llu reached",
					  (unsigned long long)limit);
			break;
		}
		executed++;
		in = &insns[ex->pc];
		d = &dec[ex->pc];
		if (d->slots == 0) {
			char why[128];
			struct isa_decoded tmp;

			isa_decode(insns, cnt, ex->pc, &tmp, why, sizeof(why));
			gpuext_exec__fail(ex, -EINVAL, "invalid instruction: %s", why);
			break;
		}
		cls = isa_class(in->code);
		switch (d->kind) {
		case ISA_ALU:
			src = d->use_imm ? (uint64_t)(int64_t)in->imm : r[in->src_reg];
			r[in->dst_reg] = alu(ex, in, r[in->dst_reg], src, cls == BPF_ALU64);
			if (cls == BPF_ALU)
				r[in->dst_reg] = (uint32_t)r[in->dst_reg];
			break;
		case ISA_BSWAP:
			r[in->dst_reg] = bswap(in, r[in->dst_reg]);
			break;
		case ISA_LDDW:
			r[in->dst_reg] = lddw_value(ex, in);
			ex->pc += 2;
			continue;
		case ISA_LDX:
			addr = r[in->src_reg] + (int64_t)in->off;
			if (!check_access(ex, addr, d->size, false))
				break;
			r[in->dst_reg] = load((const void *)(uintptr_t)addr, d->size);
			if (isa_mode(in->code) == BPF_MEMSX)
				r[in->dst_reg] = sext(r[in->dst_reg], d->size * 8);
			break;
		case ISA_ST:
		case ISA_STX:
			addr = r[in->dst_reg] + (int64_t)in->off;
			if (!check_access(ex, addr, d->size, true))
				break;
			store((void *)(uintptr_t)addr, d->size,
			      d->kind == ISA_ST ? (uint64_t)(int64_t)in->imm : r[in->src_reg]);
			break;
		case ISA_ATOMIC:
			atomic_op(ex, in, d->size);
			break;
		case ISA_JA:
			ex->pc = (size_t)isa_jump_target(in, ex->pc);
			continue;
		case ISA_JCOND:
			src = d->use_imm ? (uint64_t)(int64_t)in->imm : r[in->src_reg];
			if (cond(isa_op(in->code), r[in->dst_reg], src, cls == BPF_JMP)) {
				ex->pc = (size_t)isa_jump_target(in, ex->pc);
				continue;
			}
			break;
		case ISA_CALL:
			if (in->src_reg == BPF_PSEUDO_CALL) {
				if (enter_func(ex, (size_t)isa_jump_target(in, ex->pc)))
					continue;
				break;
			}
			do_call(ex, in->src_reg == BPF_PSEUDO_KFUNC_CALL ? GPUEXT_FUNC_KFUNC
									 : GPUEXT_FUNC_HELPER,
				(uint32_t)in->imm);
			break;
		case ISA_CALLX:
			if (enter_func(ex, (size_t)r[in->dst_reg]))
				continue;
			break;
		case ISA_EXIT:
			if (ex->depth == 0)
				goto done;
			{
				struct frame *f = &ex->frames[--ex->depth];

				memcpy(&r[6], f->saved, sizeof(f->saved));
				r[10] = f->saved_r10;
				ex->pc = f->ret_pc;
			}
			continue;
		}
		ex->pc++;
	}
done:
	ret = ex->err;
	if (ex->opts)
		((struct gpuext_run_opts *)ex->opts)->insn_executed = executed;
	return ret;
}

int gpuext_prog__run(struct gpuext_prog *prog, struct gpuext_run_opts *opts, uint64_t *r0)
{
	struct gpuext_run_opts o = { .sz = sizeof(o) };
	struct gpuext_exec *ex;
	int err;

	if (!prog || !r0)
		return GPUEXT_ERR(EINVAL);
	if (opts) {
		if (opts->sz < sizeof(size_t))
			return GPUEXT_ERR(EINVAL);
		memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	}
	o.sz = sizeof(o);
	if (o.cpu >= prog->rt->nr_cpu_slots) {
		gpuext_log(prog->rt, GPUEXT_LOG_WARN,
			   "prog '%s': cpu %u is out of range (the runtime has %u per-CPU slots)",
			   prog->name, o.cpu, prog->rt->nr_cpu_slots);
		return GPUEXT_ERR(EINVAL);
	}
	/* 4 KiB of stack plus state: keep it off the caller's (maybe small) stack. */
	ex = malloc(sizeof(*ex));
	if (!ex)
		return GPUEXT_ERR(ENOMEM);
	memset(ex, 0, offsetof(struct gpuext_exec, stack));
	memset(ex->stack, 0, sizeof(ex->stack));
	ex->rt = prog->rt;
	ex->prog = prog;
	ex->opts = &o;
	ex->reg[1] = (uint64_t)(uintptr_t)o.ctx;
	ex->reg[2] = o.ctx_len;
	ex->reg[10] = (uint64_t)(uintptr_t)(ex->stack + sizeof(ex->stack));
	err = run(ex);
	if (!err)
		*r0 = ex->reg[0];
	free(ex);
	if (opts && opts->sz >= offsetof(struct gpuext_run_opts, insn_executed) + sizeof(uint64_t))
		opts->insn_executed = o.insn_executed;
	return err ? GPUEXT_ERR(-err) : 0;
}

/*
 * An execution for code that is not interpreted (the host JIT): the same
 * struct helpers see, without the interpreter's stack. @opts must outlive it.
 */
struct gpuext_exec *gpuext_exec_new_native(struct gpuext_prog *prog,
					   const struct gpuext_run_opts *opts)
{
	struct gpuext_exec *ex = malloc(sizeof(*ex));

	if (!ex)
		return NULL;
	memset(ex, 0, offsetof(struct gpuext_exec, stack));
	ex->rt = prog->rt;
	ex->prog = prog;
	ex->opts = opts;
	ex->pc = SIZE_MAX;
	ex->native = true;
	return ex;
}

void gpuext_exec_set_native_stack(struct gpuext_exec *ex, const void *lo, const void *hi)
{
	ex->native_stack_lo = lo;
	ex->native_stack_hi = hi;
}

int gpuext_exec_err(const struct gpuext_exec *ex) { return ex->err; }

void gpuext_exec_free(struct gpuext_exec *ex) { free(ex); }

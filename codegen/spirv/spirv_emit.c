// SPDX-License-Identifier: Apache-2.0
/*
 * eBPF -> SPIR-V: lift (codegen/lift.c), give the lifted module a device
 * runtime and an entry point, optimise, and let LLVM's SPIR-V backend write
 * the binary; the Vulkan flavour is then finished by spirv_vk_fix.c.
 *
 * LLVM reports some unsupported input (a construct its SPIR-V backend cannot
 * select, a capability the target lacks) with report_fatal_error(), which
 * ends the process. So the whole compilation runs in a forked child by
 * default; the parent gets the binary, or the child's last message.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/IRReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "codegen.h"
#include "internal.h"
#include "spirv.h"
#include "spirv_impl.h"
#include "target.h"

#define LIFT_ENTRY "gpuext_bpf_entry"

/* LLVM address spaces of the SPIR-V backend (SPIRVUtils: storage classes). */
#define AS_FUNCTION 0
#define AS_CROSS_WORKGROUP 1
#define AS_PRIVATE 10
#define AS_PUSH_CONSTANT 13

struct emit_state {
	struct gpuext_prog *prog;
	bool vulkan;
	LLVMContextRef ctx;
	LLVMModuleRef mod;
	LLVMTargetMachineRef tm;
	LLVMTargetDataRef td;
	struct strbuf inexact;
	struct strbuf err;
	uint64_t stack_bytes;	/* Vulkan: stack slots handed out */
	LLVMValueRef stack_base;	/* Vulkan: i64 private global, the stack area's address */
};

void sb_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (sb->len + 1 >= sizeof(sb->buf))
		return;
	va_start(ap, fmt);
	n = vsnprintf(sb->buf + sb->len, sizeof(sb->buf) - sb->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		sb->len += (size_t)n < sizeof(sb->buf) - sb->len ? (size_t)n
								 : sizeof(sb->buf) - sb->len - 1;
}

/* Adds "; what" once to @sb (messages name each stubbed function once). */
static void sb_add_once(struct strbuf *sb, const char *what)
{
	if (strstr(sb->buf, what))
		return;
	sb_addf(sb, "%s%s", sb->len ? "; " : "", what);
}

static int make_tm(struct emit_state *st)
{
	char msg[256];
	int err = gpuext_cg_target_machine(st->vulkan ? GPUEXT_CG_SPIRV_VULKAN : GPUEXT_CG_SPIRV,
					   NULL, &st->tm, msg, sizeof(msg));

	if (err) {
		sb_addf(&st->err, "%s", msg);
		return -ENOTSUP;
	}
	st->td = LLVMCreateTargetDataLayout(st->tm);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Vulkan: one flat address space                                       */
/* ------------------------------------------------------------------ */

static bool ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '$' || c == '-' || c == '%' || c == '@' || c == '"';
}

/*
 * Rewrites the printed module so that every pointer is a CrossWorkgroup
 * (LLVM address space 1) pointer: `ptr` and `ptr addrspace(N)` become
 * `ptr addrspace(1)`, address-space casts become bitcasts, allocas and
 * globals move to address space 1 (the allocas are then replaced by stack
 * slots in the buffer), intrinsic names are re-mangled. The SPIR-V
 * post-pass turns CrossWorkgroup into PhysicalStorageBuffer. Working on the
 * text keeps this independent of how the lifter spells its pointers.
 */
static char *flatten_address_spaces(const char *in)
{
	size_t n = strlen(in), cap = n * 2 + 4096, o = 0, ls = 0, ols = 0;
	char *out = malloc(cap);
	bool in_str = false;

	if (!out)
		return NULL;
#define PUT(s) do { size_t l_ = strlen(s); if (o + l_ + 1 > cap) { cap = (cap + l_) * 2; \
	char *t_ = realloc(out, cap); if (!t_) { free(out); return NULL; } out = t_; } \
	memcpy(out + o, s, l_); o += l_; } while (0)
	for (size_t i = 0; i < n;) {
		char c = in[i];
		char prev = i ? in[i - 1] : '\n';

		if (prev == '\n') {	/* line starts: in the input at ls, in the output at ols */
			ls = i;
			ols = o;
		}

		if (c == '"') {
			in_str = !in_str;
			char s[2] = { c, 0 };
			PUT(s);
			i++;
			continue;
		}
		if (in_str) {
			char s[2] = { c, 0 };
			PUT(s);
			i++;
			continue;
		}
		/* A line "target datalayout = ...": allocas in address space 1. */
		if (prev == '\n' && !strncmp(in + i, "target datalayout", 17)) {
			while (i < n && in[i] != '\n')
				i++;
			PUT("target datalayout = \"e-i64:64-A1-G1\"");
			continue;
		}
		if (!ident_char(prev) && !strncmp(in + i, "ptr", 3) && !ident_char(in[i + 3])) {
			i += 3;
			PUT("ptr addrspace(1)");
			if (!strncmp(in + i, " addrspace(", 11)) {
				i += 11;
				while (i < n && in[i] != ')')
					i++;
				i++;
			}
			continue;
		}
		if (!ident_char(prev) && !strncmp(in + i, "addrspacecast", 13) &&
		    !ident_char(in[i + 13])) {
			i += 13;
			PUT("bitcast");
			continue;
		}
		/* Globals: "@name = ... global|constant" live in address space 1. */
		if (!ident_char(prev) && in[ls] == '@' &&
		    (!strncmp(in + i, "global ", 7) || !strncmp(in + i, "constant ", 9))) {
			char *a;

			out[o] = '\0';
			a = strstr(out + ols, "addrspace(");

			if (a && a < out + o) {
				o = (size_t)(a - out) + 10;
				PUT("1) ");
			} else {
				PUT("addrspace(1) ");
			}
		}
		/* Intrinsic names mangle their pointer types: .p0 -> .p1 */
		if (c == '@' && !strncmp(in + i, "@llvm.", 6)) {
			while (i < n && ident_char(in[i])) {
				if (in[i] == '.' && in[i + 1] == 'p' && in[i + 2] >= '0' &&
				    in[i + 2] <= '9') {
					PUT(".p1");
					i += 2;
					while (in[i] >= '0' && in[i] <= '9')
						i++;
					continue;
				}
				char s[2] = { in[i], 0 };
				PUT(s);
				i++;
			}
			continue;
		}
		/* alloca: append the address space before any metadata. */
		if (!ident_char(prev) && !strncmp(in + i, "alloca ", 7)) {
			size_t e = i;

			while (e < n && in[e] != '\n' && in[e] != '!')
				e++;
			while (e > i && (in[e - 1] == ' ' || in[e - 1] == ','))
				e--;
			for (; i < e; i++) {
				char s[2] = { in[i], 0 };
				PUT(s);
			}
			PUT(", addrspace(1)");
			continue;
		}
		char s[2] = { c, 0 };
		PUT(s);
		i++;
	}
#undef PUT
	out[o] = '\0';
	return out;
}

static int reparse_flat(struct emit_state *st)
{
	char *text = LLVMPrintModuleToString(st->mod), *flat, *msg = NULL;
	LLVMMemoryBufferRef buf;
	LLVMModuleRef mod = NULL;

	flat = flatten_address_spaces(text);
	LLVMDisposeMessage(text);
	if (!flat)
		return -ENOMEM;
	buf = LLVMCreateMemoryBufferWithMemoryRange(flat, strlen(flat), "flat", 0);
	if (LLVMParseIRInContext2(st->ctx, buf, &mod, &msg)) {
		sb_addf(&st->err, "flattening address spaces: %s", msg ? msg : "?");
		LLVMDisposeMessage(msg);
		LLVMDisposeMemoryBuffer(buf);
		free(flat);
		return -ENOTSUP;
	}
	LLVMDisposeMemoryBuffer(buf);
	free(flat);
	LLVMDisposeModule(st->mod);
	st->mod = mod;
	return 0;
}

/*
 * The first O2 ran while the stacks were private allocas, so it may have
 * marked functions memory(none) or parameters readnone; with the stacks in
 * the buffer that is no longer true. Drop every attribute but the
 * return-range kind of facts LLVM can find again.
 */
static void strip_attributes(LLVMModuleRef mod)
{
	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
		int np = (int)LLVMCountParams(f);

		for (int idx = -1; idx <= np; idx++) {
			LLVMAttributeIndex ai = idx < 0 ? (LLVMAttributeIndex)LLVMAttributeFunctionIndex : (LLVMAttributeIndex)idx;
			unsigned n = LLVMGetAttributeCountAtIndex(f, ai);
			LLVMAttributeRef *attrs;

			if (!n)
				continue;
			attrs = calloc(n, sizeof(*attrs));
			if (!attrs)
				continue;
			LLVMGetAttributesAtIndex(f, ai, attrs);
			for (unsigned k = 0; k < n; k++) {
				if (LLVMIsStringAttribute(attrs[k])) {
					unsigned kl;
					const char *key = LLVMGetStringAttributeKind(attrs[k], &kl);

					LLVMRemoveStringAttributeAtIndex(f, ai, key, kl);
				} else {
					LLVMRemoveEnumAttributeAtIndex(f, ai,
						LLVMGetEnumAttributeKind(attrs[k]));
				}
			}
			free(attrs);
		}
	}
}

/*
 * Atomics for the Vulkan target. LLVM 22 selects 32-bit atomics only with
 * relaxed ordering there (seq_cst asks for a capability the Vulkan target
 * lacks: "Unable to meet SPIR-V requirements"), and no 64-bit atomics at all
 * (Int64Atomics is not among its Vulkan capabilities). So: 32-bit ones
 * become monotonic; 64-bit ones become calls to gpuext_vk_atomic64_<op>,
 * which the SPIR-V post-pass turns into OpAtomic* with Int64Atomics.
 * Device scope, relaxed semantics either way: one invocation per dispatch
 * here, and eBPF's own ordering guarantee for atomics is no stronger than
 * the device's relaxed atomics plus program order on that location.
 */
/*
 * LLVM 22 selects a GEP on a CrossWorkgroup pointer for the Vulkan target as
 * OpPtrAccessChain and then demands the Addresses capability, which Shader
 * modules cannot have ("Unable to meet SPIR-V requirements"), while it
 * selects inttoptr as OpConvertUToPtr, which PhysicalStorageBuffer64 allows.
 * eBPF addresses are integers anyway: every such GEP becomes
 * inttoptr(ptrtoint(base) + byte offset).
 */
static int gep_offset(struct emit_state *st, LLVMBuilderRef b, LLVMValueRef gep, LLVMValueRef *out)
{
	LLVMTypeRef i64 = LLVMInt64TypeInContext(st->ctx);
	LLVMTypeRef t = LLVMGetGEPSourceElementType(gep);
	unsigned n = (unsigned)LLVMGetNumOperands(gep);
	LLVMValueRef off = LLVMConstInt(i64, 0, 0);

	for (unsigned k = 1; k < n; k++) {
		LLVMValueRef idx = LLVMGetOperand(gep, k), term;

		if (k > 1 && LLVMGetTypeKind(t) == LLVMStructTypeKind) {
			unsigned field = (unsigned)LLVMConstIntGetZExtValue(idx);

			term = LLVMConstInt(i64, LLVMOffsetOfElement(st->td, t, field), 0);
			t = LLVMStructGetTypeAtIndex(t, field);
		} else {
			if (k > 1) {
				if (LLVMGetTypeKind(t) != LLVMArrayTypeKind &&
				    LLVMGetTypeKind(t) != LLVMVectorTypeKind)
					return -ENOTSUP;
				t = LLVMGetElementType(t);
			}
			idx = LLVMBuildSExtOrBitCast(b, idx, i64, "");
			term = LLVMBuildMul(b, idx, LLVMConstInt(i64, LLVMABISizeOfType(st->td, t), 0), "");
		}
		off = LLVMBuildAdd(b, off, term, "");
	}
	*out = off;
	return 0;
}

static int degep(struct emit_state *st)
{
	LLVMBuilderRef b = LLVMCreateBuilderInContext(st->ctx);
	LLVMTypeRef i64 = LLVMInt64TypeInContext(st->ctx);
	int err = 0;

	for (LLVMValueRef f = LLVMGetFirstFunction(st->mod); f && !err; f = LLVMGetNextFunction(f)) {
		for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb && !err;
		     bb = LLVMGetNextBasicBlock(bb)) {
			LLVMValueRef i = LLVMGetFirstInstruction(bb);

			while (i) {
				LLVMValueRef next = LLVMGetNextInstruction(i), off, base, addr;
				LLVMTypeRef pt = LLVMTypeOf(i);

				if (LLVMGetInstructionOpcode(i) != LLVMGetElementPtr ||
				    LLVMGetTypeKind(pt) != LLVMPointerTypeKind ||
				    LLVMGetPointerAddressSpace(pt) != AS_CROSS_WORKGROUP) {
					i = next;
					continue;
				}
				LLVMPositionBuilderBefore(b, i);
				err = gep_offset(st, b, i, &off);
				if (err) {
					sb_addf(&st->err, "a GEP into a vector or scalar");
					break;
				}
				base = LLVMBuildPtrToInt(b, LLVMGetOperand(i, 0), i64, "");
				addr = LLVMBuildAdd(b, base, off, "");
				LLVMReplaceAllUsesWith(i, LLVMBuildIntToPtr(b, addr, pt, ""));
				LLVMInstructionEraseFromParent(i);
				i = next;
			}
		}
	}
	LLVMDisposeBuilder(b);
	return err;
}

/*
 * A cmpxchg's users take its {old, success} pair apart with extractvalue:
 * give them the call's result and a comparison directly (no aggregates left
 * for the backend). Returns what the remaining users (if any) should get.
 */
static LLVMValueRef split_cmpxchg(LLVMBuilderRef b, LLVMValueRef cx, LLVMValueRef old,
				  LLVMValueRef cmp, LLVMTypeRef i64, LLVMTypeRef i1)
{
	LLVMValueRef ok = LLVMBuildICmp(b, LLVMIntEQ, old, cmp, "");
	LLVMValueRef agg;
	LLVMTypeRef rt[2] = { i64, i1 };
	LLVMUseRef u = LLVMGetFirstUse(cx);

	while (u) {
		LLVMUseRef nu = LLVMGetNextUse(u);
		LLVMValueRef user = LLVMGetUser(u);

		if (LLVMGetInstructionOpcode(user) == LLVMExtractValue &&
		    LLVMGetNumIndices(user) == 1) {
			LLVMReplaceAllUsesWith(user, LLVMGetIndices(user)[0] ? ok : old);
			LLVMInstructionEraseFromParent(user);
		}
		u = nu;
	}
	agg = LLVMGetPoison(LLVMStructTypeInContext(LLVMGetTypeContext(i64), rt, 2, 0));
	if (!LLVMGetFirstUse(cx))
		return agg;
	agg = LLVMBuildInsertValue(b, agg, old, 0, "");
	return LLVMBuildInsertValue(b, agg, ok, 1, "");
}

static int lower_atomics(struct emit_state *st)
{
	LLVMContextRef c = st->ctx;
	LLVMTypeRef i64 = LLVMInt64TypeInContext(c), i1 = LLVMInt1TypeInContext(c);
	LLVMTypeRef p1 = LLVMPointerTypeInContext(c, AS_CROSS_WORKGROUP);
	LLVMBuilderRef b = LLVMCreateBuilderInContext(c);

	for (LLVMValueRef f = LLVMGetFirstFunction(st->mod); f; f = LLVMGetNextFunction(f)) {
		for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
			LLVMValueRef i = LLVMGetFirstInstruction(bb);

			while (i) {
				LLVMValueRef next = LLVMGetNextInstruction(i);
				LLVMOpcode op = LLVMGetInstructionOpcode(i);
				bool rmw = op == LLVMAtomicRMW, cx = op == LLVMAtomicCmpXchg;
				LLVMTypeRef vt;
				const char *name = NULL;

				if (!rmw && !cx) {
					i = next;
					continue;
				}
				vt = LLVMTypeOf(LLVMGetOperand(i, rmw ? 1 : 2));
				if (LLVMGetIntTypeWidth(vt) < 64) {
					if (rmw) {
						LLVMSetOrdering(i, LLVMAtomicOrderingMonotonic);
					} else {
						LLVMSetCmpXchgSuccessOrdering(i, LLVMAtomicOrderingMonotonic);
						LLVMSetCmpXchgFailureOrdering(i, LLVMAtomicOrderingMonotonic);
					}
					i = next;
					continue;
				}
				if (cx) {
					name = "gpuext_vk_atomic64_cmpxchg";
				} else {
					switch (LLVMGetAtomicRMWBinOp(i)) {
					case LLVMAtomicRMWBinOpAdd: name = "gpuext_vk_atomic64_add"; break;
					case LLVMAtomicRMWBinOpAnd: name = "gpuext_vk_atomic64_and"; break;
					case LLVMAtomicRMWBinOpOr: name = "gpuext_vk_atomic64_or"; break;
					case LLVMAtomicRMWBinOpXor: name = "gpuext_vk_atomic64_xor"; break;
					case LLVMAtomicRMWBinOpXchg: name = "gpuext_vk_atomic64_xchg"; break;
					default:
						sb_addf(&st->err, "a 64-bit atomic operation %d",
							(int)LLVMGetAtomicRMWBinOp(i));
						LLVMDisposeBuilder(b);
						return -ENOTSUP;
					}
				}
				{
					LLVMTypeRef ps[3] = { p1, i64, i64 };
					LLVMTypeRef ft = LLVMFunctionType(i64, ps, cx ? 3 : 2, 0);
					LLVMValueRef fn = LLVMGetNamedFunction(st->mod, name), args[3], call;

					if (!fn)
						fn = LLVMAddFunction(st->mod, name, ft);
					LLVMPositionBuilderBefore(b, i);
					args[0] = LLVMGetOperand(i, 0);
					args[1] = LLVMGetOperand(i, 1);
					if (cx)
						args[2] = LLVMGetOperand(i, 2);
					call = LLVMBuildCall2(b, ft, fn, args, cx ? 3 : 2, "");
					if (cx)
						call = split_cmpxchg(b, i, call, args[1], i64, i1);
					LLVMReplaceAllUsesWith(i, call);
					/* split_cmpxchg may have erased what followed. */
					next = LLVMGetNextInstruction(i);
					LLVMInstructionEraseFromParent(i);
				}
				i = next;
			}
		}
	}
	LLVMDisposeBuilder(b);
	return 0;
}

/* Lifetime markers would name allocas that no longer exist. */
static void drop_lifetime_markers(LLVMModuleRef mod)
{
	for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
		for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
			LLVMValueRef i = LLVMGetFirstInstruction(bb);

			while (i) {
				LLVMValueRef next = LLVMGetNextInstruction(i), callee;
				size_t nl;
				const char *name;

				if (LLVMGetInstructionOpcode(i) == LLVMCall &&
				    (callee = LLVMGetCalledValue(i)) && LLVMIsAFunction(callee)) {
					name = LLVMGetValueName2(callee, &nl);
					if (!strncmp(name, "llvm.lifetime.", 14))
						LLVMInstructionEraseFromParent(i);
				}
				i = next;
			}
		}
	}
}

/*
 * Replaces every alloca by a slot of the stack area in the buffer:
 * inttoptr(stack_base + off). eBPF has no recursion (the verifier rejects
 * it), so each allocation gets its own static slot.
 */
static int place_stacks(struct emit_state *st, LLVMValueRef stack_base)
{
	LLVMBuilderRef b = LLVMCreateBuilderInContext(st->ctx);
	LLVMTypeRef i64 = LLVMInt64TypeInContext(st->ctx);
	LLVMTypeRef p1 = LLVMPointerTypeInContext(st->ctx, AS_CROSS_WORKGROUP);
	int err = 0;

	for (LLVMValueRef f = LLVMGetFirstFunction(st->mod); f; f = LLVMGetNextFunction(f)) {
		for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb)) {
			LLVMValueRef i = LLVMGetFirstInstruction(bb);

			while (i) {
				LLVMValueRef next = LLVMGetNextInstruction(i);

				if (LLVMGetInstructionOpcode(i) == LLVMAlloca) {
					LLVMTypeRef t = LLVMGetAllocatedType(i);
					LLVMValueRef cnt = LLVMGetOperand(i, 0);
					uint64_t size = LLVMABISizeOfType(st->td, t);
					LLVMValueRef base, addr, ptr;

					if (!LLVMIsAConstantInt(cnt)) {
						sb_addf(&st->err, "a stack allocation of variable size");
						err = -ENOTSUP;
						goto out;
					}
					size *= LLVMConstIntGetZExtValue(cnt);
					size = (size + 15) & ~(uint64_t)15;
					LLVMPositionBuilderBefore(b, i);
					base = LLVMBuildLoad2(b, i64, stack_base, "stack.base");
					addr = LLVMBuildAdd(b, base, LLVMConstInt(i64, st->stack_bytes, 0), "");
					ptr = LLVMBuildIntToPtr(b, addr, p1, "stack");
					LLVMReplaceAllUsesWith(i, ptr);
					LLVMInstructionEraseFromParent(i);
					st->stack_bytes += size;
				}
				i = next;
			}
		}
	}
	if (st->stack_bytes > GPUEXT_SPIRV_VK_STACK_MAX) {
		sb_addf(&st->err, "the stacks take %" PRIu64 " bytes, more than the %u the runner gives",
			st->stack_bytes, GPUEXT_SPIRV_VK_STACK_MAX);
		err = -ENOTSUP;
	}
out:
	LLVMDisposeBuilder(b);
	return err;
}

/* ------------------------------------------------------------------ */
/* The device runtime: bodies for the lifter's gpuext_rt_* declarations */
/* ------------------------------------------------------------------ */

static void define_stub(struct emit_state *st, LLVMValueRef f, LLVMValueRef ret)
{
	LLVMBuilderRef b = LLVMCreateBuilderInContext(st->ctx);
	LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(st->ctx, f, "entry");
	LLVMTypeRef rt = LLVMGetReturnType(LLVMGlobalGetValueType(f));

	LLVMPositionBuilderAtEnd(b, bb);
	if (LLVMGetTypeKind(rt) == LLVMVoidTypeKind)
		LLVMBuildRetVoid(b);
	else
		LLVMBuildRet(b, ret ? ret : LLVMConstNull(rt));
	LLVMSetLinkage(f, LLVMInternalLinkage);
	LLVMDisposeBuilder(b);
}

/*
 * Vulkan flavour: maps and variables live in the buffer's data area
 * (spirv.h, gpuext_spirv_vk_data_layout()), at stack base +
 * GPUEXT_SPIRV_VK_STACK_MAX + their offset. A map's handle (what
 * ld_imm64 src=1/5 puts in a register) is the address of its first value;
 * the helpers below tell maps apart by it.
 */
struct vk_data {
	struct gpuext_spirv_vk_slot *maps, *vars;
	size_t map_cnt, var_cnt;
	bool all_maps_placed;
};

static LLVMValueRef vk_data_addr(struct emit_state *st, LLVMBuilderRef b, uint64_t off)
{
	LLVMTypeRef i64 = LLVMInt64TypeInContext(st->ctx);
	LLVMValueRef base = LLVMBuildLoad2(b, i64, st->stack_base, "stack.base");

	return LLVMBuildAdd(b, base, LLVMConstInt(i64, GPUEXT_SPIRV_VK_STACK_MAX + off, 0), "");
}

static LLVMBasicBlockRef vk_block(struct emit_state *st, LLVMValueRef f, const char *name)
{
	return LLVMAppendBasicBlockInContext(st->ctx, f, name);
}

/*
 * The helpers below are straight-line code (selects, at most one loop): a
 * Vulkan module needs structured control flow, and a chain of early returns,
 * once inlined, is not always structurizable by LLVM's SPIR-V backend
 * ("exits the selection ... but not via a structured exit").
 */

/* ptr f(i32 sel[, i32 off]): @sel picks a data-area address (+ off). */
static void define_vk_select(struct emit_state *st, LLVMValueRef f, size_t n, const uint32_t *keys,
			     const uint64_t *offs, bool add_off)
{
	LLVMBuilderRef b = LLVMCreateBuilderInContext(st->ctx);
	LLVMTypeRef i64 = LLVMInt64TypeInContext(st->ctx), i32 = LLVMInt32TypeInContext(st->ctx);
	LLVMTypeRef rt = LLVMGetReturnType(LLVMGlobalGetValueType(f));
	LLVMValueRef off = LLVMConstInt(i64, 0, 0), base, sel = LLVMGetParam(f, 0);

	LLVMPositionBuilderAtEnd(b, vk_block(st, f, "entry"));
	if (add_off)
		off = LLVMBuildZExt(b, LLVMGetParam(f, 1), i64, "");
	/* An unknown @sel (the lifter checked it: never) gets the area's start, not null. */
	for (size_t i = 0; i < n; i++)
		off = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, sel, LLVMConstInt(i32, keys[i], 0), ""),
				      LLVMBuildAdd(b, off, LLVMConstInt(i64, offs[i], 0), ""), off, "");
	base = vk_data_addr(st, b, 0);
	LLVMBuildRet(b, LLVMBuildIntToPtr(b, LLVMBuildAdd(b, base, off, ""), rt, ""));
	LLVMSetLinkage(f, LLVMInternalLinkage);
	LLVMDisposeBuilder(b);
}

/*
 * i64 helper(map, key, value, flags, _): lookup (1), update (2), delete (3)
 * on the array maps of the data area. Lookup: the value's address, 0 for a
 * key out of range; update: the host's checks in its order (-EINVAL for
 * flags > BPF_EXIST, -EEXIST for BPF_NOEXIST, -E2BIG out of range), then a
 * byte copy; delete: -EINVAL (array entries cannot be deleted).
 */
static void define_vk_map_helper(struct emit_state *st, LLVMValueRef f, unsigned id,
				 const struct vk_data *d)
{
	LLVMContextRef c = st->ctx;
	LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
	LLVMTypeRef i64 = LLVMInt64TypeInContext(c), i32 = LLVMInt32TypeInContext(c);
	LLVMTypeRef i8 = LLVMInt8TypeInContext(c);
	LLVMTypeRef p1 = LLVMPointerTypeInContext(c, AS_CROSS_WORKGROUP);
	LLVMValueRef m = LLVMGetParam(f, 0), k = LLVMGetParam(f, 1), v = LLVMGetParam(f, 2);
	LLVMValueRef flags = LLVMGetParam(f, 3), key, k64, elem, vs, found, rc;
	LLVMBasicBlockRef entry = vk_block(st, f, "entry");

#define K64(x) LLVMConstInt(i64, (uint64_t)(int64_t)(x), 1)
	LLVMPositionBuilderAtEnd(b, entry);
	if (id == 3) {
		LLVMBuildRet(b, K64(-22));
		goto done;
	}
	key = LLVMBuildLoad2(b, i32, LLVMBuildIntToPtr(b, k, p1, ""), "key");
	LLVMSetAlignment(key, 1);
	k64 = LLVMBuildZExt(b, key, i64, "");
	elem = K64(0);
	vs = K64(0);
	found = LLVMConstInt(LLVMInt1TypeInContext(c), 0, 0);
	for (size_t i = 0; i < d->map_cnt; i++) {
		const struct gpuext_spirv_vk_slot *s = &d->maps[i];
		LLVMValueRef base, hit, e;

		if (!s->size)
			continue;
		base = vk_data_addr(st, b, s->off);
		hit = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntEQ, m, base, ""),
				   LLVMBuildICmp(b, LLVMIntULT, k64, K64(s->entries), ""), "");
		e = LLVMBuildAdd(b, base, LLVMBuildMul(b, k64, K64(s->stride), ""), "");
		elem = LLVMBuildSelect(b, hit, e, elem, "");
		vs = LLVMBuildSelect(b, hit, K64(s->value_size), vs, "");
		found = LLVMBuildOr(b, found, hit, "");
	}
	if (id == 1) {
		LLVMBuildRet(b, elem);
		goto done;
	}
	rc = LLVMBuildSelect(b, found, K64(0), K64(-7), "");
	rc = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, flags, K64(1), ""), K64(-17), rc, "");
	rc = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntUGT, flags, K64(2), ""), K64(-22), rc, "");
	vs = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntEQ, rc, K64(0), ""), vs, K64(0), "");
	{
		/* Volatile bytes: no memcpy for the backend to select. */
		LLVMBasicBlockRef loop = vk_block(st, f, "copy"), end = vk_block(st, f, "done");
		LLVMValueRef phi, nx, ld, stv;

		LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntNE, vs, K64(0), ""), loop, end);
		LLVMPositionBuilderAtEnd(b, loop);
		phi = LLVMBuildPhi(b, i64, "i");
		ld = LLVMBuildLoad2(b, i8, LLVMBuildIntToPtr(b, LLVMBuildAdd(b, v, phi, ""), p1, ""), "");
		LLVMSetVolatile(ld, 1);
		stv = LLVMBuildStore(b, ld, LLVMBuildIntToPtr(b, LLVMBuildAdd(b, elem, phi, ""), p1, ""));
		LLVMSetVolatile(stv, 1);
		nx = LLVMBuildAdd(b, phi, K64(1), "");
		LLVMAddIncoming(phi, (LLVMValueRef[]){ K64(0), nx },
				(LLVMBasicBlockRef[]){ entry, loop }, 2);
		LLVMBuildCondBr(b, LLVMBuildICmp(b, LLVMIntULT, nx, vs, ""), loop, end);
		LLVMPositionBuilderAtEnd(b, end);
		LLVMBuildRet(b, rc);
	}
done:
#undef K64
	LLVMSetLinkage(f, LLVMInternalLinkage);
	LLVMDisposeBuilder(b);
}

static void define_runtime(struct emit_state *st)
{
	struct gpuext_runtime *rt = gpuext_prog__runtime(st->prog);
	struct vk_data d = { 0 };

	if (st->vulkan) {
		uint64_t size = 0;

		d.map_cnt = gpuext_prog__map_cnt(st->prog);
		d.var_cnt = rt->var_cnt;
		d.maps = calloc(d.map_cnt + 1, sizeof(*d.maps));
		d.vars = calloc(d.var_cnt + 1, sizeof(*d.vars));
		if (!d.maps || !d.vars ||
		    gpuext_spirv_vk_data_layout(st->prog, d.maps, d.map_cnt, d.vars, d.var_cnt, &size)) {
			free(d.maps);
			free(d.vars);
			d = (struct vk_data){ 0 };
			sb_add_once(&st->inexact, "no room for the device maps");
		}
		d.all_maps_placed = true;
		for (size_t i = 0; i < d.map_cnt; i++)
			if (!d.maps[i].size)
				d.all_maps_placed = false;
	}

	for (LLVMValueRef f = LLVMGetFirstFunction(st->mod); f; f = LLVMGetNextFunction(f)) {
		size_t nl;
		const char *name = LLVMGetValueName2(f, &nl);
		char what[160];

		if (!LLVMIsDeclaration(f) || LLVMGetIntrinsicID(f))
			continue;
		if (!strncmp(name, "gpuext_rt_helper_", 17)) {
			unsigned id = (unsigned)strtoul(name + 17, NULL, 10);
			const struct gpuext_func_proto *p =
				gpuext_runtime__find_func(rt, GPUEXT_FUNC_HELPER, id);

			/* One invocation, CPU slot 0: what the interpreter reports by default. */
			if (id == BPF_FUNC_get_smp_processor_id) {
				define_stub(st, f, NULL);
				continue;
			}
			if (st->vulkan && d.maps && d.all_maps_placed &&
			    (id == BPF_FUNC_map_lookup_elem || id == BPF_FUNC_map_update_elem ||
			     id == BPF_FUNC_map_delete_elem)) {
				define_vk_map_helper(st, f, id, &d);
				continue;
			}
			snprintf(what, sizeof(what), "helper %s (#%u) has no device implementation",
				 p && p->name ? p->name : "?", id);
		} else if (!strncmp(name, "gpuext_rt_kfunc_", 16)) {
			snprintf(what, sizeof(what), "kfunc %s has no device implementation", name + 16);
		} else if (!strcmp(name, "gpuext_rt_map") || !strcmp(name, "gpuext_rt_map_value")) {
			if (st->vulkan && d.maps && d.all_maps_placed) {
				uint32_t *keys = calloc(d.map_cnt + 1, sizeof(*keys));
				uint64_t *offs = calloc(d.map_cnt + 1, sizeof(*offs));

				if (keys && offs) {
					for (size_t i = 0; i < d.map_cnt; i++) {
						keys[i] = (uint32_t)i;
						offs[i] = d.maps[i].off;
					}
					define_vk_select(st, f, d.map_cnt, keys, offs,
							 !strcmp(name, "gpuext_rt_map_value"));
					free(keys);
					free(offs);
					continue;
				}
				free(keys);
				free(offs);
			}
			snprintf(what, sizeof(what), st->vulkan
				 ? "a map of a type other than array / per-CPU array (not on the device)"
				 : "map references need device maps (Vulkan flavour only)");
		} else if (!strcmp(name, "gpuext_rt_var")) {
			if (st->vulkan && d.vars) {
				uint32_t *keys = calloc(d.var_cnt + 1, sizeof(*keys));
				uint64_t *offs = calloc(d.var_cnt + 1, sizeof(*offs));

				if (keys && offs) {
					for (size_t i = 0; i < d.var_cnt; i++) {
						keys[i] = rt->vars[i].id;
						offs[i] = d.vars[i].off;
					}
					define_vk_select(st, f, d.var_cnt, keys, offs, false);
					free(keys);
					free(offs);
					continue;
				}
				free(keys);
				free(offs);
			}
			snprintf(what, sizeof(what), "variables (ld_imm64 src=3) need device memory "
				 "(Vulkan flavour only)");
		} else {
			snprintf(what, sizeof(what), "%s is not part of the device runtime", name);
		}
		sb_add_once(&st->inexact, what);
		define_stub(st, f, NULL);
	}
	free(d.maps);
	free(d.vars);
}

/* ------------------------------------------------------------------ */
/* Entry points                                                         */
/* ------------------------------------------------------------------ */

/* Converts @v (a pointer in some address space, or an i64) to @want. */
static LLVMValueRef convert_arg(LLVMBuilderRef b, LLVMValueRef v, LLVMTypeRef want)
{
	LLVMTypeRef have = LLVMTypeOf(v);

	if (have == want)
		return v;
	if (LLVMGetTypeKind(want) == LLVMPointerTypeKind) {
		if (LLVMGetTypeKind(have) == LLVMPointerTypeKind)
			return LLVMBuildAddrSpaceCast(b, v, want, "");
		return LLVMBuildIntToPtr(b, v, want, "");
	}
	if (LLVMGetTypeKind(have) == LLVMPointerTypeKind)
		return LLVMBuildPtrToInt(b, v, want, "");
	return LLVMBuildZExtOrBitCast(b, v, want, "");
}

static LLVMValueRef entry_call(LLVMBuilderRef b, LLVMValueRef entry, LLVMValueRef mem,
			       LLVMValueRef len)
{
	LLVMTypeRef ft = LLVMGlobalGetValueType(entry);
	LLVMTypeRef pt[2];
	LLVMValueRef args[2];

	LLVMGetParamTypes(ft, pt);
	args[0] = convert_arg(b, mem, pt[0]);
	args[1] = convert_arg(b, len, pt[1]);
	return LLVMBuildCall2(b, ft, entry, args, 2, "r0");
}

static int add_kernel_entry(struct emit_state *st, LLVMValueRef entry)
{
	LLVMContextRef c = st->ctx;
	LLVMTypeRef i64 = LLVMInt64TypeInContext(c);
	LLVMTypeRef g = LLVMPointerTypeInContext(c, AS_CROSS_WORKGROUP);
	LLVMTypeRef params[3] = { g, i64, g };
	LLVMTypeRef ft = LLVMFunctionType(LLVMVoidTypeInContext(c), params, 3, 0);
	LLVMValueRef k = LLVMAddFunction(st->mod, GPUEXT_SPIRV_KERNEL_NAME, ft);
	LLVMBuilderRef b = LLVMCreateBuilderInContext(c);
	LLVMValueRef r0, st0;

	LLVMSetFunctionCallConv(k, LLVMSPIRKERNELCallConv);
	LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(c, k, "entry"));
	r0 = entry_call(b, entry, LLVMGetParam(k, 0), LLVMGetParam(k, 1));
	st0 = LLVMBuildStore(b, r0, LLVMGetParam(k, 2));
	LLVMSetAlignment(st0, 8);
	LLVMBuildRetVoid(b);
	LLVMDisposeBuilder(b);
	return 0;
}

/*
 * The compute entry point, parsed from text and linked in after the last
 * optimisation: IRBuilder (and O2) fold a GEP into the push-constant block
 * to a constant expression, which LLVM 22's SPIR-V backend cannot select
 * for Vulkan ("Unable to meet SPIR-V requirements"); the parser keeps
 * instructions as they are written.
 */
static const char vk_entry_ir[] =
	"%gpuext_vk_args = type { i64, i64, i64, i64 }\n"
	"@gpuext_vk_args = external addrspace(13) global %gpuext_vk_args\n"
	"@gpuext_vk_stack_base = external addrspace(10) global i64\n"
	"declare i64 @" LIFT_ENTRY "(ptr addrspace(1), i64)\n"
	"define void @" GPUEXT_SPIRV_VK_ENTRY_NAME "() #0 {\n"
	"entry:\n"
	"  %p0 = getelementptr %gpuext_vk_args, ptr addrspace(13) @gpuext_vk_args, i32 0, i32 0\n"
	"  %mem = load i64, ptr addrspace(13) %p0, align 8\n"
	"  %p1 = getelementptr %gpuext_vk_args, ptr addrspace(13) @gpuext_vk_args, i32 0, i32 1\n"
	"  %len = load i64, ptr addrspace(13) %p1, align 8\n"
	"  %p2 = getelementptr %gpuext_vk_args, ptr addrspace(13) @gpuext_vk_args, i32 0, i32 2\n"
	"  %stack = load i64, ptr addrspace(13) %p2, align 8\n"
	"  %p3 = getelementptr %gpuext_vk_args, ptr addrspace(13) @gpuext_vk_args, i32 0, i32 3\n"
	"  %out = load i64, ptr addrspace(13) %p3, align 8\n"
	"  store i64 %stack, ptr addrspace(10) @gpuext_vk_stack_base, align 8\n"
	"  %ctx = inttoptr i64 %mem to ptr addrspace(1)\n"
	"  %r0 = call i64 @" LIFT_ENTRY "(ptr addrspace(1) %ctx, i64 %len)\n"
	"  %outp = inttoptr i64 %out to ptr addrspace(1)\n"
	"  store i64 %r0, ptr addrspace(1) %outp, align 8\n"
	"  ret void\n"
	"}\n"
	"attributes #0 = { \"hlsl.shader\"=\"compute\" \"hlsl.numthreads\"=\"1,1,1\" }\n";

static int add_vulkan_entry(struct emit_state *st)
{
	LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRange(
		vk_entry_ir, sizeof(vk_entry_ir) - 1, "vk_entry", 0);
	LLVMModuleRef m = NULL;
	char *msg = NULL;

	if (LLVMParseIRInContext2(st->ctx, buf, &m, &msg)) {
		sb_addf(&st->err, "the Vulkan entry does not parse: %s", msg ? msg : "?");
		LLVMDisposeMessage(msg);
		LLVMDisposeMemoryBuffer(buf);
		return -EINVAL;
	}
	LLVMDisposeMemoryBuffer(buf);
	LLVMSetTarget(m, LLVMGetTarget(st->mod));
	LLVMSetDataLayout(m, LLVMGetDataLayoutStr(st->mod));
	if (LLVMLinkModules2(st->mod, m)) {
		sb_addf(&st->err, "linking the Vulkan entry failed");
		return -EINVAL;
	}
	return 0;
}

/* Nothing but the entry point is visible: no Linkage capability, no imports. */
static void internalize(struct emit_state *st, const char *keep)
{
	for (LLVMValueRef f = LLVMGetFirstFunction(st->mod); f; f = LLVMGetNextFunction(f)) {
		size_t nl;

		if (LLVMIsDeclaration(f) || !strcmp(LLVMGetValueName2(f, &nl), keep))
			continue;
		LLVMSetLinkage(f, LLVMInternalLinkage);
	}
	for (LLVMValueRef g = LLVMGetFirstGlobal(st->mod); g; g = LLVMGetNextGlobal(g))
		if (!LLVMIsDeclaration(g))
			LLVMSetLinkage(g, LLVMInternalLinkage);
}

static int optimize(struct emit_state *st, const char *passes)
{
	LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
	LLVMErrorRef e = LLVMRunPasses(st->mod, passes, st->tm, po);

	LLVMDisposePassBuilderOptions(po);
	if (e) {
		char *m = LLVMGetErrorMessage(e);

		sb_addf(&st->err, "optimizing: %s", m);
		LLVMDisposeErrorMessage(m);
		return -ENOTSUP;
	}
	return 0;
}

static int emit_in_process(struct emit_state *st, void **bin, size_t *len)
{
	GPUEXT_OPTS(gpuext_cg_lift_opts, lo,
		    .target = st->vulkan ? GPUEXT_CG_SPIRV_VULKAN : GPUEXT_CG_SPIRV,
		    .entry_name = LIFT_ENTRY);
	LLVMValueRef entry, stack_base = NULL;
	LLVMMemoryBufferRef mb = NULL;
	char *msg = NULL, *dl;
	int err;

	st->ctx = LLVMContextCreate();
	err = make_tm(st);
	if (err)
		goto out;
	err = gpuext_cg_lift(st->prog, st->ctx, &lo, &st->mod);
	if (err) {
		sb_addf(&st->err, "the lifter failed (%s); see the runtime log",
			strerror(-err));
		goto out;
	}
	if (st->vulkan) {
		/*
		 * Registers and stack slots LLVM can promote become SSA values
		 * first; only what is left (stacks whose address escapes) moves
		 * to the buffer.
		 */
		err = optimize(st, "default<O2>");
		if (!err)
			err = reparse_flat(st);
		if (err)
			goto out;
		drop_lifetime_markers(st->mod);
		strip_attributes(st->mod);
	}
	LLVMSetTarget(st->mod, gpuext_cg_target_desc(st->vulkan ? GPUEXT_CG_SPIRV_VULKAN
								 : GPUEXT_CG_SPIRV)->triple);
	entry = LLVMGetNamedFunction(st->mod, LIFT_ENTRY);
	if (!entry || LLVMCountParams(entry) != 2) {
		sb_addf(&st->err, "the lifted module has no entry %s(ctx, len)", LIFT_ENTRY);
		err = -EINVAL;
		goto out;
	}
	if (st->vulkan) {
		/* External until the entry that stores it is linked in: O2 must not fold it. */
		stack_base = LLVMAddGlobalInAddressSpace(st->mod, LLVMInt64TypeInContext(st->ctx),
							 "gpuext_vk_stack_base", AS_PRIVATE);
		LLVMSetInitializer(stack_base, LLVMConstInt(LLVMInt64TypeInContext(st->ctx), 0, 0));
		st->stack_base = stack_base;
	}
	define_runtime(st);
	if (st->vulkan && st->inexact.len) {
		/*
		 * Stubs would hand out null PhysicalStorageBuffer pointers, which
		 * Vulkan SPIR-V cannot even spell (no OpConstantNull for them):
		 * nothing to run, so nothing to emit.
		 */
		sb_addf(&st->err, "%s", st->inexact.buf);
		err = -ENOTSUP;
		goto out;
	}
	dl = LLVMCopyStringRepOfTargetData(st->td);
	LLVMSetDataLayout(st->mod, dl);
	LLVMDisposeMessage(dl);
	if (st->vulkan) {
		err = place_stacks(st, stack_base);
		if (!err && !getenv("GPUEXT_SPIRV_O0"))
			err = optimize(st, "default<O2>");
		if (!err)
			err = add_vulkan_entry(st);
		if (!err)
			err = lower_atomics(st);
		if (!err)
			err = degep(st);
		internalize(st, GPUEXT_SPIRV_VK_ENTRY_NAME);
	} else {
		err = add_kernel_entry(st, entry);
		internalize(st, GPUEXT_SPIRV_KERNEL_NAME);
		if (!err && !getenv("GPUEXT_SPIRV_O0"))
			err = optimize(st, "default<O2>");
	}
	if (err)
		goto out;
	if (LLVMVerifyModule(st->mod, LLVMReturnStatusAction, &msg)) {
		sb_addf(&st->err, "the module does not verify: %.600s", msg);
		err = -EINVAL;
		goto out;
	}
	LLVMDisposeMessage(msg);
	msg = NULL;
	if (getenv("GPUEXT_SPIRV_DUMP_IR"))
		LLVMDumpModule(st->mod);
	if (LLVMTargetMachineEmitToMemoryBuffer(st->tm, st->mod, LLVMObjectFile, &msg, &mb)) {
		sb_addf(&st->err, "LLVM SPIR-V backend: %s", msg ? msg : "?");
		err = -ENOTSUP;
		goto out;
	}
	if (st->vulkan) {
		err = gpuext_spirv_vk_fix(LLVMGetBufferStart(mb), LLVMGetBufferSize(mb), bin, len,
					  &st->err);
		goto out;
	}
	*len = LLVMGetBufferSize(mb);
	*bin = malloc(*len);
	if (!*bin) {
		err = -ENOMEM;
		goto out;
	}
	memcpy(*bin, LLVMGetBufferStart(mb), *len);
out:
	LLVMDisposeMessage(msg);
	if (mb)
		LLVMDisposeMemoryBuffer(mb);
	if (st->mod)
		LLVMDisposeModule(st->mod);
	if (st->td)
		LLVMDisposeTargetData(st->td);
	if (st->tm)
		LLVMDisposeTargetMachine(st->tm);
	LLVMContextDispose(st->ctx);
	return err;
}

/* ------------------------------------------------------------------ */
/* The child process                                                    */
/* ------------------------------------------------------------------ */

struct child_hdr {
	int32_t err;
	uint32_t bin_len, inexact_len, err_len;
};

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

static char *read_fd(int fd, size_t *len)
{
	off_t end = lseek(fd, 0, SEEK_END);
	char *buf;

	if (end < 0 || lseek(fd, 0, SEEK_SET) < 0)
		return NULL;
	buf = malloc((size_t)end + 1);
	if (!buf)
		return NULL;
	*len = 0;
	while (*len < (size_t)end) {
		ssize_t r = read(fd, buf + *len, (size_t)end - *len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		*len += (size_t)r;
	}
	buf[*len] = '\0';
	return buf;
}

/* The last "LLVM ERROR: ..." line (or the last line) of the child's stderr. */
static void last_error_line(const char *log, char *out, size_t out_len)
{
	const char *e = strstr(log, "LLVM ERROR:"), *end;

	if (!e) {
		e = log + strlen(log);
		while (e > log && (e[-1] == '\n'))
			e--;
		while (e > log && e[-1] != '\n')
			e--;
	}
	end = strchr(e, '\n');
	snprintf(out, out_len, "%.*s", (int)(end ? end - e : (long)strlen(e)), e);
}

static void copy_out(char *dst, size_t dst_len, const char *src)
{
	if (dst && dst_len)
		snprintf(dst, dst_len, "%s", src);
}

int gpuext_spirv_emit_opts(struct gpuext_prog *prog, struct gpuext_spirv_emit_opts *opts,
			   void **bin, size_t *len)
{
	struct emit_state st = { .prog = prog, .vulkan = opts->vulkan };
	int res_fd = -1, log_fd = -1, status = 0, err;
	struct child_hdr h;
	char *res = NULL, *log = NULL;
	size_t res_len = 0, log_len = 0;
	pid_t pid;

	*bin = NULL;
	*len = 0;
	copy_out(opts->inexact, opts->inexact_len, "");
	copy_out(opts->err, opts->err_len, "");
	if (opts->in_process || getenv("GPUEXT_SPIRV_IN_PROCESS")) {
		err = emit_in_process(&st, bin, len);
		copy_out(opts->inexact, opts->inexact_len, st.inexact.buf);
		copy_out(opts->err, opts->err_len, st.err.buf);
		return err;
	}
	res_fd = memfd_create("gpuext-spirv", MFD_CLOEXEC);
	log_fd = memfd_create("gpuext-spirv-log", MFD_CLOEXEC);
	if (res_fd < 0 || log_fd < 0) {
		err = -errno;
		goto out;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		err = -errno;
		goto out;
	}
	if (pid == 0) {
		void *b = NULL;
		size_t l = 0;

		dup2(log_fd, STDERR_FILENO);
		err = emit_in_process(&st, &b, &l);
		h = (struct child_hdr){ .err = err, .bin_len = (uint32_t)l,
					.inexact_len = (uint32_t)st.inexact.len,
					.err_len = (uint32_t)st.err.len };
		if (write_all(res_fd, &h, sizeof(h)) || write_all(res_fd, b, l) ||
		    write_all(res_fd, st.inexact.buf, st.inexact.len) ||
		    write_all(res_fd, st.err.buf, st.err.len))
			_exit(3);
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			err = -errno;
			goto out;
		}
	}
	res = read_fd(res_fd, &res_len);
	log = read_fd(log_fd, &log_len);
	if (!WIFEXITED(status) || WEXITSTATUS(status) || !res || res_len < sizeof(h)) {
		char line[512];

		last_error_line(log ? log : "", line, sizeof(line));
		if (opts->err && opts->err_len)
			snprintf(opts->err, opts->err_len, "LLVM stopped the compilation (%s%d): %s",
				 WIFSIGNALED(status) ? "signal " : "exit ",
				 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), line);
		err = -ENOTSUP;
		goto out;
	}
	memcpy(&h, res, sizeof(h));
	if (sizeof(h) + (size_t)h.bin_len + h.inexact_len + h.err_len > res_len) {
		err = -EIO;
		goto out;
	}
	if (opts->inexact && opts->inexact_len)
		snprintf(opts->inexact, opts->inexact_len, "%.*s", (int)h.inexact_len,
			 res + sizeof(h) + h.bin_len);
	if (opts->err && opts->err_len)
		snprintf(opts->err, opts->err_len, "%.*s", (int)h.err_len,
			 res + sizeof(h) + h.bin_len + h.inexact_len);
	err = h.err;
	if (!err) {
		*bin = malloc(h.bin_len ? h.bin_len : 1);
		if (!*bin) {
			err = -ENOMEM;
			goto out;
		}
		memcpy(*bin, res + sizeof(h), h.bin_len);
		*len = h.bin_len;
	}
out:
	free(res);
	free(log);
	if (res_fd >= 0)
		close(res_fd);
	if (log_fd >= 0)
		close(log_fd);
	return err;
}

int gpuext_spirv_emit(struct gpuext_prog *prog, bool vulkan, void **bin, size_t *len)
{
	char err[512];
	GPUEXT_OPTS(gpuext_spirv_emit_opts, o, .vulkan = vulkan, .err = err,
		    .err_len = sizeof(err));
	int r = gpuext_spirv_emit_opts(prog, &o, bin, len);

	if (r)
		gpuext_log(gpuext_prog__runtime(prog), GPUEXT_LOG_WARN, "spirv: %s: %s",
			   gpuext_prog__name(prog), err);
	return r;
}

// SPDX-License-Identifier: Apache-2.0
/*
 * The Vulkan flavour's post-pass over LLVM's SPIR-V binary.
 *
 * LLVM 22's SPIR-V backend writes Shader modules with the Logical addressing
 * model only: it has no storage class for PhysicalStorageBuffer, and it
 * lowers inttoptr/ptrtoint on CrossWorkgroup pointers to OpConvertUToPtr /
 * OpConvertPtrToU, which Logical addressing forbids. The emitter therefore
 * puts every eBPF pointer in CrossWorkgroup (LLVM address space 1), and this
 * pass retypes them as PhysicalStorageBuffer pointers under the
 * PhysicalStorageBuffer64 addressing model, where those conversions, pointer
 * arithmetic (OpPtrAccessChain, given an ArrayStride) and pointer bitcasts
 * are legal. It also turns the push-constant accesses LLVM writes as
 * OpPtrAccessChain/OpBitcast into OpAccessChain (Vulkan wants a Block member
 * reached by an access chain) and drops linkage (a Vulkan module links
 * nothing).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "spirv_impl.h"

enum {
	OP_NAME_EXT = 10,	/* OpExtension */
	OP_CAPABILITY = 17,
	OP_MEMORY_MODEL = 14,
	OP_TYPE_INT = 21,
	OP_TYPE_POINTER = 32,
	OP_CONSTANT = 43,
	OP_CONSTANT_NULL = 46,
	OP_NAME = 5,
	OP_FUNCTION = 54,
	OP_FUNCTION_PARAMETER = 55,
	OP_FUNCTION_END = 56,
	OP_FUNCTION_CALL = 57,
	OP_ATOMIC_LOAD = 227,
	OP_ATOMIC_STORE = 228,
	OP_ATOMIC_EXCHANGE = 229,
	OP_ATOMIC_COMPARE_EXCHANGE = 230,
	OP_ATOMIC_IADD = 234,
	OP_ATOMIC_AND = 240,
	OP_ATOMIC_OR = 241,
	OP_ATOMIC_XOR = 242,
	CAP_INT64_ATOMICS = 12,
	SCOPE_DEVICE = 1,
	OP_VARIABLE = 59,
	OP_ACCESS_CHAIN = 65,
	OP_PTR_ACCESS_CHAIN = 67,
	OP_IN_BOUNDS_PTR_ACCESS_CHAIN = 70,
	OP_DECORATE = 71,
	OP_BITCAST = 124,

	CAP_LINKAGE = 5,
	CAP_PSB_ADDRESSES = 5347,
	ADDRESSING_PSB64 = 5348,
	SC_CROSS_WORKGROUP = 5,
	SC_PUSH_CONSTANT = 9,
	SC_PSB = 5349,
	DEC_ARRAY_STRIDE = 6,
	DEC_ALIASED = 20,
	DEC_ALIASED_POINTER = 5356,
	DEC_FUNC_PARAM_ATTR = 38,
	DEC_LINKAGE_ATTRIBUTES = 41,
	SPIRV_MAGIC = 0x07230203,
};

struct idinfo {
	/*
	 * 0, 'i' int type, 'p' pointer type, 'c' constant, 'v' variable,
	 * 'a' parameter, 'm' an imported gpuext_vk_atomic64_* marker (a: opcode)
	 */
	uint8_t kind;
	uint32_t a, b;		/* int: width; ptr: storage class, pointee; const: type, value; var: sc */
};

struct words {
	uint32_t *w;
	size_t n, cap;
};

static int put(struct words *o, const uint32_t *w, size_t n)
{
	if (o->n + n > o->cap) {
		size_t cap = (o->cap + n) * 2;
		uint32_t *t = realloc(o->w, cap * sizeof(*t));

		if (!t)
			return -ENOMEM;
		o->w = t;
		o->cap = cap;
	}
	memcpy(o->w + o->n, w, n * sizeof(*w));
	o->n += n;
	return 0;
}

static uint32_t insn(uint32_t wc, uint32_t op)
{
	return wc << 16 | op;
}

static bool is_type_section(uint32_t op)
{
	/* OpType* (19..39, 322, 4456...), OpConstant* (41..52), OpVariable, OpUndef. */
	return (op >= 19 && op <= 52) || op == OP_VARIABLE || op == 1 || op == 322;
}

/* The OpAtomic* a gpuext_vk_atomic64_<op> import stands for, 0 if none. */
static uint32_t marker_opcode(const char *name, size_t max)
{
	static const struct { const char *name; uint32_t op; } m[] = {
		{ "gpuext_vk_atomic64_add", OP_ATOMIC_IADD },
		{ "gpuext_vk_atomic64_and", OP_ATOMIC_AND },
		{ "gpuext_vk_atomic64_or", OP_ATOMIC_OR },
		{ "gpuext_vk_atomic64_xor", OP_ATOMIC_XOR },
		{ "gpuext_vk_atomic64_xchg", OP_ATOMIC_EXCHANGE },
		{ "gpuext_vk_atomic64_cmpxchg", OP_ATOMIC_COMPARE_EXCHANGE },
	};

	if (!memchr(name, '\0', max))
		return 0;
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (!strcmp(name, m[i].name))
			return m[i].op;
	return 0;
}

int gpuext_spirv_vk_fix(const void *in, size_t in_len, void **out, size_t *out_len,
			struct strbuf *err)
{
	const uint32_t *w = in;
	size_t n = in_len / 4;
	struct idinfo *ids = NULL;
	struct words o = { 0 };
	uint32_t bound, zero32 = 0, one32 = 0, version, u64 = 0, u64_ptr = 0, new_bound;
	bool caps_done = false, decos_done = false, have_psb_cap = false, atomics64 = false;
	bool skip_fn = false, in_marker = false;
	int r = 0;

	if (in_len % 4 || n < 5 || w[0] != SPIRV_MAGIC) {
		sb_addf(err, "LLVM's output is not a SPIR-V binary");
		return -EINVAL;
	}
	version = w[1];
	bound = w[3];
	ids = calloc(bound, sizeof(*ids));
	if (!ids)
		return -ENOMEM;

	/* Pass 1: what each id is. */
	for (size_t i = 5; i < n;) {
		uint32_t wc = w[i] >> 16, op = w[i] & 0xffff;

		if (!wc || i + wc > n) {
			sb_addf(err, "malformed instruction at word %zu", i);
			r = -EINVAL;
			goto out;
		}
		if (op == OP_TYPE_INT && wc >= 4 && w[i + 1] < bound)
			ids[w[i + 1]] = (struct idinfo){ 'i', w[i + 2], 0 };
		else if (op == OP_TYPE_POINTER && wc == 4 && w[i + 1] < bound)
			ids[w[i + 1]] = (struct idinfo){ 'p', w[i + 2], w[i + 3] };
		else if (op == OP_CONSTANT && wc == 4 && w[i + 2] < bound)
			ids[w[i + 2]] = (struct idinfo){ 'c', w[i + 1], w[i + 3] };
		else if (op == OP_CONSTANT_NULL && wc == 3 && w[i + 2] < bound)
			ids[w[i + 2]] = (struct idinfo){ 'n', w[i + 1], 0 };
		else if (op == OP_VARIABLE && wc >= 4 && w[i + 2] < bound)
			ids[w[i + 2]] = (struct idinfo){ 'v', w[i + 3], w[i + 1] };
		else if (op == OP_FUNCTION && wc == 5)
			in_marker = w[i + 2] < bound && ids[w[i + 2]].kind == 'm';
		else if (op == OP_FUNCTION_PARAMETER && wc == 3 && w[i + 2] < bound && !in_marker)
			ids[w[i + 2]] = (struct idinfo){ 'a', 0, w[i + 1] };
		else if (op == OP_CAPABILITY && w[i + 1] == CAP_PSB_ADDRESSES)
			have_psb_cap = true;
		else if (op == OP_DECORATE && wc >= 4 && w[i + 2] == DEC_LINKAGE_ATTRIBUTES &&
			 w[i + 1] < bound) {
			uint32_t mop = marker_opcode((const char *)(w + i + 3), (wc - 3) * 4);

			if (mop) {
				ids[w[i + 1]] = (struct idinfo){ 'm', mop, 0 };
				atomics64 = true;
			}
		}
		i += wc;
	}
	for (uint32_t id = 1; id < bound; id++) {
		if (ids[id].kind == 'i' && ids[id].a == 64 && !u64)
			u64 = id;
	}
	for (uint32_t id = 1; id < bound; id++) {
		if (ids[id].kind == 'p' && ids[id].a == SC_CROSS_WORKGROUP && ids[id].b == u64 &&
		    u64 && !u64_ptr)
			u64_ptr = id;
	}
	new_bound = bound;
	if (atomics64 && !u64) {
		sb_addf(err, "64-bit atomics without a 64-bit integer type");
		r = -EINVAL;
		goto out;
	}
	if (atomics64 && !u64_ptr)
		u64_ptr = new_bound++;
	for (uint32_t id = 1; id < bound; id++) {
		struct idinfo *c = &ids[id];

		if (c->kind == 'c' && c->b <= 1 && c->a < bound && ids[c->a].kind == 'i' &&
		    ids[c->a].a == 32) {
			if (c->b == 0 && !zero32)
				zero32 = id;
			if (c->b == 1 && !one32)
				one32 = id;
		}
	}

	r = put(&o, w, 5);
	if (r)
		goto out;
	o.w[3] = 0;	/* the bound, set at the end */
	for (size_t i = 5; i < n && !r;) {
		uint32_t wc = w[i] >> 16, op = w[i] & 0xffff;
		const uint32_t *x = w + i;

		if (!caps_done && op != OP_CAPABILITY) {
			caps_done = true;
			if (!have_psb_cap) {
				uint32_t c[2] = { insn(2, OP_CAPABILITY), CAP_PSB_ADDRESSES };

				r = put(&o, c, 2);
			}
			if (!r && atomics64) {
				uint32_t c[2] = { insn(2, OP_CAPABILITY), CAP_INT64_ATOMICS };

				r = put(&o, c, 2);
			}
			if (!r && version < 0x00010500) {
				/* "SPV_KHR_physical_storage_buffer", NUL-padded to words. */
				static const char ext[] = "SPV_KHR_physical_storage_buffer";
				uint32_t e[1 + (sizeof(ext) + 3) / 4] = { 0 };

				e[0] = insn((uint32_t)(sizeof(e) / 4), OP_NAME_EXT);
				memcpy(e + 1, ext, sizeof(ext));
				r = put(&o, e, sizeof(e) / 4);
			}
		}
		if (!decos_done && is_type_section(op)) {
			decos_done = true;
			for (uint32_t id = 1; id < bound && !r; id++) {
				struct idinfo *p = &ids[id];
				uint32_t stride = 0;

				if (p->kind != 'p' || p->a != SC_CROSS_WORKGROUP || p->b >= bound)
					continue;
				if (ids[p->b].kind == 'i')
					stride = ids[p->b].a / 8;
				else if (ids[p->b].kind == 'p')
					stride = 8;
				if (stride) {
					uint32_t d[4] = { insn(4, OP_DECORATE), id, DEC_ARRAY_STRIDE,
							  stride };

					r = put(&o, d, 4);
				}
			}
			/*
			 * eBPF pointers alias freely: a PhysicalStorageBuffer
			 * parameter must say so (Aliased), and so must a variable
			 * holding such a pointer (AliasedPointer).
			 */
			for (uint32_t id = 1; id < bound && !r; id++) {
				struct idinfo *v = &ids[id];
				uint32_t t = v->b, dec;

				if (v->kind == 'a')
					dec = DEC_ALIASED;
				else if (v->kind == 'v' && t < bound && ids[t].kind == 'p' &&
					 ids[t].b < bound && ids[ids[t].b].kind == 'p' &&
					 ids[ids[t].b].a == SC_CROSS_WORKGROUP)
					dec = DEC_ALIASED_POINTER;
				else
					continue;
				if (dec == DEC_ALIASED &&
				    (t >= bound || ids[t].kind != 'p' || ids[t].a != SC_CROSS_WORKGROUP))
					continue;
				{
					uint32_t d[3] = { insn(3, OP_DECORATE), id, dec };

					r = put(&o, d, 3);
				}
			}
			if (r)
				break;
		}
		/* The markers' declarations (OpFunction .. OpFunctionEnd) go away. */
		if (op == OP_FUNCTION && wc == 5 && x[2] < bound && ids[x[2]].kind == 'm')
			skip_fn = true;
		if (skip_fn) {
			if (op == OP_FUNCTION_END)
				skip_fn = false;
			i += wc;
			continue;
		}
		if ((op == OP_NAME || op == OP_DECORATE) && wc >= 2 && x[1] < bound &&
		    ids[x[1]].kind == 'm') {
			i += wc;
			continue;
		}
		switch (op) {
		case OP_FUNCTION_CALL:
			if (wc >= 4 && x[3] < bound && ids[x[3]].kind == 'm') {
				uint32_t aop = ids[x[3]].a;
				uint32_t a[9];
				uint32_t n;

				if (!zero32 || !one32) {
					sb_addf(err, "no 32-bit constants 0 and 1 for an atomic's scope");
					r = -ENOTSUP;
					break;
				}
				{
					/* LLVM types the marker's pointer as uchar*: retype it. */
					uint32_t bc[4] = { insn(4, OP_BITCAST), u64_ptr, new_bound++, x[4] };

					r = put(&o, bc, 4);
					if (r)
						break;
					a[3] = bc[2];	/* pointer */
				}
				a[1] = x[1];
				a[2] = x[2];
				a[4] = one32;		/* Device scope */
				a[5] = zero32;		/* relaxed */
				if (aop == OP_ATOMIC_COMPARE_EXCHANGE && wc == 7) {
					a[6] = zero32;	/* relaxed when unequal */
					a[7] = x[6];	/* value */
					a[8] = x[5];	/* comparator */
					n = 9;
				} else if (wc == 6) {
					a[6] = x[5];
					n = 7;
				} else {
					sb_addf(err, "a 64-bit atomic call with %u operands", wc);
					r = -EINVAL;
					break;
				}
				a[0] = insn(n, aop);
				r = put(&o, a, n);
				break;
			}
			r = put(&o, x, wc);
			break;
		case OP_CAPABILITY:
			if (x[1] != CAP_LINKAGE)
				r = put(&o, x, wc);
			break;
		case OP_MEMORY_MODEL: {
			uint32_t m[3] = { x[0], ADDRESSING_PSB64, x[2] };

			r = put(&o, m, 3);
			break;
		}
		case OP_DECORATE:
			/* FuncParamAttr (noalias, nowrite, ...) is Kernel-only. */
			if (wc < 3 || (x[2] != DEC_LINKAGE_ATTRIBUTES && x[2] != DEC_FUNC_PARAM_ATTR))
				r = put(&o, x, wc);
			break;
		case OP_TYPE_INT:
			r = put(&o, x, wc);
			if (!r && x[1] == u64 && u64_ptr >= bound) {
				uint32_t t[4] = { insn(4, OP_TYPE_POINTER), u64_ptr, SC_PSB, u64 };

				r = put(&o, t, 4);
			}
			break;
		case OP_TYPE_POINTER: {
			uint32_t t[4] = { x[0], x[1], x[2] == SC_CROSS_WORKGROUP ? SC_PSB : x[2], x[3] };

			r = put(&o, t, 4);
			break;
		}
		case OP_BITCAST:
			if (wc == 4 && x[3] < bound && ids[x[3]].kind == 'v' &&
			    ids[x[3]].a == SC_PUSH_CONSTANT) {
				uint32_t a[5] = { insn(5, OP_ACCESS_CHAIN), x[1], x[2], x[3], zero32 };

				if (!zero32) {
					sb_addf(err, "no 32-bit constant 0 for a push-constant access");
					r = -ENOTSUP;
					break;
				}
				r = put(&o, a, 5);
				break;
			}
			r = put(&o, x, wc);
			break;
		case OP_PTR_ACCESS_CHAIN:
		case OP_IN_BOUNDS_PTR_ACCESS_CHAIN:
			if (wc >= 5 && x[3] < bound && ids[x[3]].kind == 'v' &&
			    ids[x[3]].a == SC_PUSH_CONSTANT) {
				uint32_t a[4] = { insn(wc - 1, OP_ACCESS_CHAIN), x[1], x[2], x[3] };

				if (x[4] >= bound || ids[x[4]].kind != 'c' || ids[x[4]].b != 0) {
					sb_addf(err, "a push-constant access with a non-zero element");
					r = -ENOTSUP;
					break;
				}
				r = put(&o, a, 4);
				if (!r)
					r = put(&o, x + 5, wc - 5);
				break;
			}
			r = put(&o, x, wc);
			break;
		default:
			/*
			 * LLVM gives its atomics CrossDevice scope (0); Vulkan allows
			 * at most Device.
			 */
			if (op >= OP_ATOMIC_LOAD && op <= OP_ATOMIC_XOR && wc >= 4) {
				size_t at = op == OP_ATOMIC_STORE ? 2 : 4;
				uint32_t y[16];

				if (wc <= 16 && at < wc && x[at] < bound && one32 &&
				    ((ids[x[at]].kind == 'c' && ids[x[at]].b == 0) ||
				     ids[x[at]].kind == 'n')) {
					memcpy(y, x, wc * 4);
					y[at] = one32;
					r = put(&o, y, wc);
					break;
				}
			}
			r = put(&o, x, wc);
		}
		i += wc;
	}
	if (r)
		goto out;
	o.w[3] = new_bound;
	*out = o.w;
	*out_len = o.n * 4;
	o.w = NULL;
out:
	free(o.w);
	free(ids);
	return r;
}

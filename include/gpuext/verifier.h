/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verifier: nothing runs unverified — not on the host, not in a driver
 * hook, not on a GPU.
 *
 * Abstract interpretation over the program's paths, in the manner of the
 * Linux verifier: register types, scalar ranges with known bits, stack
 * slots, null checks, memory bounds, helper/kfunc signatures, references
 * (ring-buffer records), bounded loops by state pruning under an
 * instruction budget, call depth and combined stack, return ranges. Device
 * probes add SIMT rules (uniformity, warp-collective helpers, a static work
 * bound).
 */
#ifndef GPUEXT_VERIFIER_H
#define GPUEXT_VERIFIER_H

#include "gpuext/gpuext.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Program types: what r1 is, what may be called, what may be returned. */
enum gpuext_prog_type {
	/* r1 = a context buffer of ctx_size bytes, any access in bounds; all host helpers. */
	GPUEXT_PROG_HOST = 0,
	/* Linux's socket filter (r1 = struct __sk_buff, a few readable fields): used to
	 * compare our verdicts with the kernel's verifier. */
	GPUEXT_PROG_SOCKET_FILTER,
	/* struct gpu_mem_ops / gpu_sched_ops members: r1 = u64 args array (BTF-typed). */
	GPUEXT_PROG_MEM_OPS,
	GPUEXT_PROG_SCHED_OPS,
	/* Device probe (entry/exit/memory): SIMT rules and a work bound apply. */
	GPUEXT_PROG_DEVICE_PROBE,
	GPUEXT_PROG_TYPE_CNT,
};

const char *gpuext_prog_type_name(enum gpuext_prog_type type);
/* "host", "socket_filter", "mem_ops", "sched_ops", "device_probe"; -1 if unknown. */
int gpuext_prog_type_by_name(const char *name);

/* One readable (and maybe writable) field of a context structure. */
struct gpuext_ctx_field {
	const char *name;
	uint32_t off;
	uint32_t size;
	bool writable;
	/* The loaded value's type: a scalar, or a pointer to memory of ptr_size bytes. */
	bool is_ptr;
	uint32_t ptr_size;	/* 0: an opaque handle (kfunc argument only) */
	bool ptr_maybe_null;
	bool divergent;		/* SIMT: differs between the lanes of a warp */
};

/*
 * A program type spelled out. Built-in types have one each; backends may
 * describe their own hooks with one of these (gpuext_verify_opts.type_desc).
 */
struct gpuext_prog_type_desc {
	const char *name;
	/* Context: with fields, an access must lie inside exactly one field;
	 * without, any in-bounds access of ctx_size bytes is allowed. */
	uint32_t ctx_size;
	bool ctx_writable;
	const struct gpuext_ctx_field *fields;
	size_t field_cnt;
	/* r2 holds ctx_size (host programs receive (mem, len)). */
	bool r2_is_ctx_size;
	/* Allowed calls: a helper/kfunc is callable iff allow() says so (NULL: all). */
	bool (*allow)(const struct gpuext_func_proto *proto);
	/* Return value range in r0 at the entry function's exit. */
	int64_t ret_min, ret_max;
	/* SIMT rules (device probes): uniformity + per-invocation work bound. */
	bool simt;
	uint64_t max_work;	/* bound on instructions per invocation; 0 = none */
	/* Privileged semantics: pointers may be stored, compared and returned. */
	bool allow_ptr_leaks;
	/* r1 is an array of u64 arguments (struct_ops): loads start on an argument. */
	bool ctx_is_args;
};

const struct gpuext_prog_type_desc *gpuext_prog_type_desc(enum gpuext_prog_type type);

/* Rule identifiers: a rejection names exactly one. Stable strings for tests. */
#define GPUEXT_RULES(X)                                                                   \
	X(INVALID_INSN, "invalid-insn", "an encoding RFC 9669 does not define, or a jump outside the program") \
	X(UNREACHABLE, "unreachable", "an instruction no path reaches")                   \
	X(FALL_OFF_END, "fall-off-end", "a path runs past the last instruction")          \
	X(UNINIT_REG, "uninit-reg", "a read of a register no path has written")           \
	X(UNINIT_STACK, "uninit-stack", "a read of stack bytes that were never written")   \
	X(OOB_STACK, "oob-stack", "a stack access outside the 512-byte frame")            \
	X(OOB_MAP_VALUE, "oob-map-value", "a map value access outside [0, value_size)")   \
	X(OOB_MEM, "oob-mem", "an access outside a ring-buffer record or memory region") \
	X(CTX_ACCESS, "ctx-access", "a context access that is not one allowed field")     \
	X(READONLY, "readonly", "a write to read-only memory (ctx field, .rodata map)")    \
	X(NULL_DEREF, "null-deref", "a dereference of a pointer that may be NULL")         \
	X(NULL_ARITH, "null-ptr-arith", "arithmetic on a pointer that may be NULL")        \
	X(PTR_ARITH, "ptr-arith", "pointer arithmetic the type does not allow")            \
	X(SCALAR_DEREF, "scalar-deref", "a memory access through a scalar")                \
	X(PTR_LEAK, "ptr-leak", "a pointer written where only scalars may go, or returned") \
	X(BAD_CALL, "bad-call", "a helper/kfunc that does not exist or this type may not call") \
	X(CALL_ARG, "call-arg", "a helper/kfunc argument of the wrong type or size")       \
	X(REF_LEAK, "ref-leak", "a reserved ring-buffer record not submitted/discarded on a path") \
	X(REF_INVALID, "ref-invalid", "a release of something not reserved, or released twice") \
	X(LOOP_BOUND, "loop-bound", "a loop the verifier cannot prove bounded (budget exceeded)") \
	X(CALL_DEPTH, "call-depth", "more than 8 nested frames")                          \
	X(STACK_SIZE, "stack-size", "frames on one call chain use more than 512 bytes")    \
	X(RET_RANGE, "ret-range", "a return value outside the range of the program type")  \
	X(DIVERGENT_COLLECTIVE, "divergent-collective", "a warp-collective helper under divergent control flow") \
	X(DIVERGENT_SUBMIT, "divergent-submit", "a ring-buffer submission under divergent control flow") \
	X(WORK_BOUND, "work-bound", "a device probe whose work per invocation is unbounded or too large") \
	X(MISALIGNED, "misaligned", "an atomic access not aligned to its size")

enum gpuext_rule {
	GPUEXT_RULE_NONE = 0,
#define GPUEXT_RULE_ENUM(id, str, desc) GPUEXT_RULE_##id,
	GPUEXT_RULES(GPUEXT_RULE_ENUM)
#undef GPUEXT_RULE_ENUM
	GPUEXT_RULE_CNT,
};

const char *gpuext_rule_name(enum gpuext_rule rule);	/* "oob-map-value" */
const char *gpuext_rule_desc(enum gpuext_rule rule);

struct gpuext_verify_opts {
	size_t sz;
	enum gpuext_prog_type type;
	const struct gpuext_prog_type_desc *type_desc;	/* overrides type when set */
	/* Log: 0 = the rejection only; 1 = + the path to it; 2 = every instruction's state. */
	uint32_t log_level;
	char *log_buf;		/* NULL: log through the runtime's print callback */
	size_t log_size;
	uint64_t insn_budget;	/* processed-instruction budget; 0 = 1,000,000 */
	/* GPUEXT_PROG_HOST only: r1 = a ctx_size-byte buffer, r2 = ctx_size (0: no context). */
	uint32_t ctx_size;
};

struct gpuext_verify_result {
	size_t sz;
	bool accepted;
	enum gpuext_rule rule;	/* GPUEXT_RULE_NONE when accepted */
	uint32_t insn_idx;	/* where the rule fired */
	uint64_t insns_processed;
	uint32_t states;	/* states stored for pruning */
	uint32_t peak_states;
	uint32_t pruned;
	uint64_t time_ns;
	uint32_t stack_depth;	/* deepest combined stack, bytes */
	uint64_t max_work;	/* device: bound on instructions per invocation */
	/*
	 * In: NULL, or an array of the program's instruction count in bytes.
	 * Out (accepted programs): for each load, store and atomic, the alignment
	 * (1, 2, 4 or 8) of its address proven on every path, counting the
	 * context, the stack frame, map values and ring-buffer records as
	 * 8-aligned (a caller's context must be); 1 for other memory; 0 for
	 * every other slot. Codegen uses it to emit one wide access
	 * where it would otherwise have to assume bytes (GPUs trap on misaligned
	 * accesses).
	 */
	uint8_t *mem_align;
};

/*
 * Verifies @prog as @opts->type. Returns 0 when accepted, -EACCES when
 * rejected (res->rule says why; the log has the kernel-style report), or
 * another negative errno on an internal failure.
 */
int gpuext_prog__verify(struct gpuext_prog *prog, const struct gpuext_verify_opts *opts,
			struct gpuext_verify_result *res);

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libgpuext public API.
 *
 * Shape follows libbpf: nouns with verbs (gpuext_object__open_file(),
 * gpuext_prog__run(), gpuext_map__lookup()), options structs whose first
 * field is their size, functions that return a negative errno (and set
 * errno), one print callback per runtime for all logging, and a matching
 * __free/__close/__destroy for every resource.
 *
 * Everything hangs off a struct gpuext_runtime: there is no global mutable
 * state in the library.
 */
#ifndef GPUEXT_GPUEXT_H
#define GPUEXT_GPUEXT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/bpf.h> /* struct bpf_insn, opcode, map type and helper ids */

#ifdef __cplusplus
extern "C" {
#endif

#define GPUEXT_VERSION_MAJOR 0
#define GPUEXT_VERSION_MINOR 1
#define GPUEXT_VERSION_PATCH 0
#define GPUEXT_VERSION "0.1.0"

/* Options structs start with their size so the ABI can grow. */
#define GPUEXT_OPTS(type, name, ...) \
	struct type name = { .sz = sizeof(struct type), __VA_ARGS__ }

/* ------------------------------------------------------------------ */
/* Runtime: owns the log callback, the helper/kfunc registry, the map  */
/* table and the shared-memory namespace. Lives until __free.          */
/* ------------------------------------------------------------------ */

enum gpuext_log_level {
	GPUEXT_LOG_WARN = 0,
	GPUEXT_LOG_INFO = 1,
	GPUEXT_LOG_DEBUG = 2,
};

/* @msg is one complete message without a trailing newline. */
typedef void (*gpuext_print_fn)(enum gpuext_log_level level, const char *msg,
				void *user);

struct gpuext_runtime;

struct gpuext_runtime_opts {
	size_t sz;
	/* NULL: messages at WARN go to stderr, the rest are dropped. */
	gpuext_print_fn print;
	void *print_user;
	/*
	 * Map storage is always in shared memory. When true, each map is also
	 * given a name under /dev/shm (gpuext.<pid>.<map id>) so another
	 * process (`gpuext maps`) can find and read it while programs run.
	 */
	bool publish_maps;
	/* Slots per per-CPU map entry (CPUs, later GPUs/SMs). 0 means 1. */
	uint32_t nr_cpu_slots;
	/* Seed for bpf_get_prandom_u32(); 0 picks one from the clock. */
	uint64_t prandom_seed;
};

int gpuext_runtime__new(const struct gpuext_runtime_opts *opts,
			struct gpuext_runtime **out);
void gpuext_runtime__free(struct gpuext_runtime *rt);
/* Log through the runtime's print callback. @rt may be NULL (stderr). */
void gpuext_log(const struct gpuext_runtime *rt, enum gpuext_log_level level,
		const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void gpuext_vlog(const struct gpuext_runtime *rt, enum gpuext_log_level level,
		 const char *fmt, va_list ap);
uint32_t gpuext_runtime__nr_cpu_slots(const struct gpuext_runtime *rt);

/*
 * Variables a program may take the address of with ld_imm64 src=3
 * ("var_addr(imm)", a BTF id in the kernel). @addr/@size must outlive the
 * runtime; the interpreter lets programs access exactly [addr, addr+size).
 */
int gpuext_runtime__register_var(struct gpuext_runtime *rt, uint32_t id, void *addr,
				 size_t size, bool writable);

/* ------------------------------------------------------------------ */
/* Maps                                                                */
/* ------------------------------------------------------------------ */

struct gpuext_map;

struct gpuext_map_def {
	size_t sz;
	const char *name;	/* copied; at most GPUEXT_MAP_NAME_MAX-1 chars */
	uint32_t type;		/* BPF_MAP_TYPE_{ARRAY,PERCPU_ARRAY,HASH,LRU_HASH,RINGBUF} */
	uint32_t key_size;
	uint32_t value_size;
	uint32_t max_entries;	/* ring buffer: data size in bytes, power of 2, page multiple */
	uint32_t map_flags;	/* BPF_F_NO_PREALLOC, BPF_F_RDONLY_PROG, ... (checked) */
};

#define GPUEXT_MAP_NAME_MAX 64

/* Creates the map in @rt's map table; ids start at 1 and are never reused. */
int gpuext_map__create(struct gpuext_runtime *rt, const struct gpuext_map_def *def,
		       struct gpuext_map **out);
void gpuext_map__destroy(struct gpuext_map *map);

uint32_t gpuext_map__id(const struct gpuext_map *map);
const char *gpuext_map__name(const struct gpuext_map *map);
uint32_t gpuext_map__type(const struct gpuext_map *map);
uint32_t gpuext_map__key_size(const struct gpuext_map *map);
uint32_t gpuext_map__value_size(const struct gpuext_map *map);
uint32_t gpuext_map__max_entries(const struct gpuext_map *map);
uint32_t gpuext_map__flags(const struct gpuext_map *map);	/* BPF_F_* as created */
/*
 * Ring buffers: the largest record, in bytes without its 8-byte header, that
 * a program verified against @map reserves (bpf_ringbuf_reserve's constant)
 * or writes (bpf_ringbuf_output's size, its proven bound); 0 before any. A
 * runtime that splits a ring into shards keeps each shard at least this big.
 */
uint32_t gpuext_map__ring_max_record(const struct gpuext_map *map);
struct gpuext_map *gpuext_runtime__map_by_id(const struct gpuext_runtime *rt,
					     uint32_t id);

/*
 * User-space side (the bpf() syscall's map commands). For per-CPU maps the
 * value buffer holds nr_cpu_slots values, each rounded up to 8 bytes, as
 * the kernel does. Return 0 or a negative errno (-ENOENT, -EEXIST, -E2BIG,
 * -EINVAL, -ENOTSUP for the ring buffer).
 */
int gpuext_map__lookup(struct gpuext_map *map, const void *key, void *value);
int gpuext_map__update(struct gpuext_map *map, const void *key, const void *value,
		       uint64_t flags);
int gpuext_map__delete(struct gpuext_map *map, const void *key);
/* @key NULL: first key. -ENOENT after the last one. */
int gpuext_map__next_key(struct gpuext_map *map, const void *key, void *next_key);

/* Ring buffer consumer. */
struct gpuext_ringbuf_consumer;
/* Return non-zero to stop consuming; that value is returned by poll/consume. */
typedef int (*gpuext_ringbuf_sample_fn)(void *user, const void *data, size_t size);
int gpuext_ringbuf_consumer__new(struct gpuext_map *ringbuf, gpuext_ringbuf_sample_fn fn,
				 void *user, struct gpuext_ringbuf_consumer **out);
/* An eventfd that becomes readable when a record is submitted with wakeup. */
int gpuext_ringbuf_consumer__fd(const struct gpuext_ringbuf_consumer *c);
/* Number of records consumed, or a negative errno. */
int gpuext_ringbuf_consumer__consume(struct gpuext_ringbuf_consumer *c);
int gpuext_ringbuf_consumer__poll(struct gpuext_ringbuf_consumer *c, int timeout_ms);
void gpuext_ringbuf_consumer__free(struct gpuext_ringbuf_consumer *c);

/* ------------------------------------------------------------------ */
/* Helpers and kfuncs: one registry, typed signatures the verifier reads */
/* ------------------------------------------------------------------ */

struct gpuext_exec; /* one running program invocation (see below) */

typedef uint64_t (*gpuext_func_fn)(struct gpuext_exec *ex, uint64_t r1, uint64_t r2,
				   uint64_t r3, uint64_t r4, uint64_t r5);

enum gpuext_arg_type {
	GPUEXT_ARG_NONE = 0,		/* no more arguments */
	GPUEXT_ARG_ANYTHING,		/* any initialised scalar or pointer */
	GPUEXT_ARG_SCALAR,		/* a scalar (no pointer) */
	GPUEXT_ARG_CONST_MAP_PTR,	/* a map reference (ld_imm64 src=1/5) */
	GPUEXT_ARG_PTR_TO_MAP_KEY,	/* key_size readable bytes of the previous map arg */
	GPUEXT_ARG_PTR_TO_MAP_VALUE,	/* value_size readable bytes of the previous map arg */
	GPUEXT_ARG_PTR_TO_MEM,		/* readable memory, size in the next argument */
	GPUEXT_ARG_PTR_TO_UNINIT_MEM,	/* writable memory, size in the next argument */
	GPUEXT_ARG_CONST_SIZE,		/* size of the previous memory argument, > 0 */
	GPUEXT_ARG_CONST_SIZE_OR_ZERO,	/* same, may be 0 */
	GPUEXT_ARG_CONST_ALLOC_SIZE,	/* a known constant allocation size */
	GPUEXT_ARG_PTR_TO_CTX,		/* the program's context */
	GPUEXT_ARG_PTR_TO_RINGBUF_MEM,	/* a record returned by ringbuf_reserve (released) */
	GPUEXT_ARG_PTR_TO_BTF_ID,	/* a typed kernel/driver object (kfunc args) */
};

enum gpuext_ret_type {
	GPUEXT_RET_INTEGER = 0,
	GPUEXT_RET_VOID,
	GPUEXT_RET_MAP_VALUE_OR_NULL,
	GPUEXT_RET_RINGBUF_MEM_OR_NULL,	/* acquires a reference, size = the ALLOC_SIZE arg */
	GPUEXT_RET_HANDLE_OR_NULL,	/* an opaque driver object (kfuncs), or NULL */
};

enum gpuext_func_kind {
	GPUEXT_FUNC_HELPER = 0,	/* call src=0, imm = helper id */
	GPUEXT_FUNC_KFUNC = 1,	/* call src=2, imm = kfunc id in this runtime */
};

/* Flags of a function prototype. */
#define GPUEXT_FN_WARP_COLLECTIVE (1u << 0) /* device: must run under warp-uniform control */
#define GPUEXT_FN_DEVICE_ONLY     (1u << 1)
#define GPUEXT_FN_HOST_ONLY       (1u << 2)
#define GPUEXT_FN_DIVERGENT_RET   (1u << 3) /* device: returns a per-lane value (lane/thread id) */
#define GPUEXT_FN_UNIFORM_RET     (1u << 4) /* device: same result on every lane, even from
					     * per-lane arguments (a warp vote) */
#define GPUEXT_FN_MEM_RMW         (1u << 5) /* its PTR_TO_UNINIT_MEM argument is read, then
					     * written (an atomic max): initialised first */

/*
 * Device-only helpers every runtime declares (call src=0, imm = id), so the
 * verifier can check device probes; each GPU backend implements them on the
 * device. Ids 0x1100 and up (0x1000..0x10ff is left to tests). On the host
 * (a probe run in the interpreter) they give lane/warp/thread/block 0, sm =
 * the run's cpu slot, and CLOCK_REALTIME ns.
 */
enum gpuext_dev_helper {
	GPUEXT_FUNC_get_globaltimer = 0x1100,	/* %globaltimer, ns */
	GPUEXT_FUNC_get_sm_id = 0x1101,		/* %smid */
	GPUEXT_FUNC_get_warp_id = 0x1102,	/* linear thread index in the block / 32 */
	GPUEXT_FUNC_get_lane_id = 0x1103,	/* %laneid (per lane) */
	GPUEXT_FUNC_get_thread_id = 0x1104,	/* linear thread index in the block (per lane) */
	GPUEXT_FUNC_get_block_id = 0x1105,	/* linear block index in the grid */
	/*
	 * Warp collectives over the lanes that call together (the active
	 * lanes; in warp mode the leader alone). The verifier requires them
	 * outside lane-dependent branches. On the host a warp is one lane, lane 0.
	 */
	GPUEXT_FUNC_warp_ballot = 0x1106,	/* (pred): bit n set = lane n is active and pred != 0 */
	GPUEXT_FUNC_warp_first = 0x1107,	/* (v): v of the lowest active lane */
	GPUEXT_FUNC_warp_shfl = 0x1108,		/* (v, lane): v of that lane; 0 if it is not active */
	/*
	 * (p, size, v): *(u64 *)p = max(*p, v), unsigned, atomically, without
	 * waiting for the old value (eBPF has no atomic max; a CAS loop would
	 * wait). 0, or -EINVAL (nothing done) unless size is 8 and p 8-aligned.
	 */
	GPUEXT_FUNC_atomic_max = 0x1109,
};

struct gpuext_func_proto {
	enum gpuext_func_kind kind;
	uint32_t id;		/* helper: BPF_FUNC_*; kfunc: 0 = assign one */
	const char *name;	/* "bpf_map_lookup_elem"; kfuncs are linked by name */
	gpuext_func_fn fn;	/* host implementation; NULL = declared only (device) */
	enum gpuext_ret_type ret;
	enum gpuext_arg_type args[5];
	uint32_t flags;
};

/* The proto is copied; @name must outlive the runtime. Returns the id. */
int gpuext_runtime__register_func(struct gpuext_runtime *rt,
				  const struct gpuext_func_proto *proto);
/*
 * Gives a declared function (fn == NULL, e.g. the gpu_ops.h kfuncs every
 * runtime declares) its implementation; a backend does this when it opens.
 * -ENOENT if no such function is declared.
 */
int gpuext_runtime__set_func_impl(struct gpuext_runtime *rt, enum gpuext_func_kind kind,
				  const char *name, gpuext_func_fn fn);
const struct gpuext_func_proto *gpuext_runtime__find_func(const struct gpuext_runtime *rt,
							  enum gpuext_func_kind kind,
							  uint32_t id);
const struct gpuext_func_proto *
gpuext_runtime__find_func_by_name(const struct gpuext_runtime *rt,
				  enum gpuext_func_kind kind, const char *name);
/* Iterate: returns NULL past the end. */
const struct gpuext_func_proto *gpuext_runtime__func_at(const struct gpuext_runtime *rt,
							size_t idx);

/* Accessors a helper uses on its execution. */
struct gpuext_runtime *gpuext_exec__runtime(const struct gpuext_exec *ex);
uint32_t gpuext_exec__cpu(const struct gpuext_exec *ex);
void *gpuext_exec__user(const struct gpuext_exec *ex);
/*
 * Lets a helper check that [addr, addr+len) is memory the program may
 * read (or write): its stack, its input memory, a map value, a ring-buffer
 * record. Returns 0 or -EFAULT.
 */
int gpuext_exec__check_mem(const struct gpuext_exec *ex, uint64_t addr, uint64_t len,
			   bool write);
/* Ends the program with an error (e.g. a helper got a bad argument). */
void gpuext_exec__fail(struct gpuext_exec *ex, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ------------------------------------------------------------------ */
/* Programs and objects                                                */
/* ------------------------------------------------------------------ */

struct gpuext_prog;
struct gpuext_object;

/*
 * A program built from raw bytecode (no ELF). Map references in it use
 * ld_imm64 src=1/2 with imm = a runtime map id, or src=5/6 with imm = an
 * index into @maps.
 */
int gpuext_prog__new(struct gpuext_runtime *rt, const char *name,
		     const struct bpf_insn *insns, size_t insn_cnt,
		     struct gpuext_map *const *maps, size_t map_cnt,
		     struct gpuext_prog **out);
void gpuext_prog__free(struct gpuext_prog *prog); /* only for gpuext_prog__new() programs */

const char *gpuext_prog__name(const struct gpuext_prog *prog);
const char *gpuext_prog__section(const struct gpuext_prog *prog); /* "" for raw programs */
const struct bpf_insn *gpuext_prog__insns(const struct gpuext_prog *prog);
size_t gpuext_prog__insn_cnt(const struct gpuext_prog *prog);
size_t gpuext_prog__map_cnt(const struct gpuext_prog *prog);
struct gpuext_map *gpuext_prog__map(const struct gpuext_prog *prog, size_t idx);
struct gpuext_runtime *gpuext_prog__runtime(const struct gpuext_prog *prog);
/* Start index of each function in the program (entry first). */
size_t gpuext_prog__func_cnt(const struct gpuext_prog *prog);
uint32_t gpuext_prog__func_start(const struct gpuext_prog *prog, size_t idx);
const char *gpuext_prog__func_name(const struct gpuext_prog *prog, size_t idx);

struct gpuext_mem_region {
	const void *addr;
	size_t len;
	bool writable;
};

struct gpuext_run_opts {
	size_t sz;
	/* r1 = ctx (or a copy of mem), r2 = ctx_len. */
	void *ctx;
	size_t ctx_len;
	bool ctx_writable;
	uint32_t cpu;		/* slot for per-CPU maps and get_smp_processor_id */
	void *user;		/* returned by gpuext_exec__user() to helpers */
	/* Stop with -E2BIG after this many instructions; 0 = no limit. */
	uint64_t insn_limit;
	/* Out: instructions executed. */
	uint64_t insn_executed;
	/* More memory the program may access (e.g. structs its ctx points to). */
	const struct gpuext_mem_region *regions;
	size_t region_cnt;
};

/*
 * Runs @prog in the reference interpreter. Every memory access is checked
 * against the regions the program may touch (stack, ctx, map values, ring
 * buffer records); a fault stops the program with -EFAULT and a message
 * naming the instruction. Returns 0 and sets *r0, or a negative errno.
 */
int gpuext_prog__run(struct gpuext_prog *prog, struct gpuext_run_opts *opts, uint64_t *r0);

/* Interpreter limits (RFC 9669 / Linux). */
#define GPUEXT_STACK_SIZE 512
#define GPUEXT_MAX_CALL_FRAMES 8

struct gpuext_object_open_opts {
	size_t sz;
	/* Name for messages and map prefixes; default: file name or "mem". */
	const char *object_name;
};

/*
 * Opens a BPF ELF object (libbpf parses; nothing is loaded into a kernel),
 * creates its maps in @rt and resolves every relocation. A malformed,
 * truncated or foreign file gets -EINVAL/-ENOEXEC and a message naming the
 * section and offset at fault.
 */
int gpuext_object__open_file(struct gpuext_runtime *rt, const char *path,
			     const struct gpuext_object_open_opts *opts,
			     struct gpuext_object **out);
int gpuext_object__open_mem(struct gpuext_runtime *rt, const void *buf, size_t len,
			    const struct gpuext_object_open_opts *opts,
			    struct gpuext_object **out);
void gpuext_object__close(struct gpuext_object *obj);

const char *gpuext_object__name(const struct gpuext_object *obj);
size_t gpuext_object__prog_cnt(const struct gpuext_object *obj);
struct gpuext_prog *gpuext_object__prog(const struct gpuext_object *obj, size_t idx);
struct gpuext_prog *gpuext_object__find_prog(const struct gpuext_object *obj,
					     const char *name);
size_t gpuext_object__map_cnt(const struct gpuext_object *obj);
struct gpuext_map *gpuext_object__map(const struct gpuext_object *obj, size_t idx);
struct gpuext_map *gpuext_object__find_map(const struct gpuext_object *obj,
					   const char *name);
/* The object's BTF (a libbpf struct btf), or NULL. */
const struct btf *gpuext_object__btf(const struct gpuext_object *obj);

/* One struct_ops variable of the object (SEC(".struct_ops[.link]")). */
struct gpuext_struct_ops_member {
	const char *member;	/* member name in the struct type */
	uint32_t offset;	/* byte offset in the struct */
	struct gpuext_prog *prog; /* program filling it */
};

struct gpuext_struct_ops {
	const char *var_name;	/* the variable, e.g. "lfu_stride" */
	const char *type_name;	/* e.g. "gpu_mem_ops" */
	uint32_t type_id;	/* in gpuext_object__btf() */
	bool link;		/* from .struct_ops.link */
	const void *data;	/* initial value of the variable (non-function members) */
	uint32_t data_size;
	size_t member_cnt;	/* members filled by programs */
	const struct gpuext_struct_ops_member *members;
};

size_t gpuext_object__struct_ops_cnt(const struct gpuext_object *obj);
const struct gpuext_struct_ops *gpuext_object__struct_ops(const struct gpuext_object *obj,
							  size_t idx);

/* ------------------------------------------------------------------ */
/* Disassembler                                                        */
/* ------------------------------------------------------------------ */

/*
 * Formats one instruction (two for ld_imm64) in llvm-objdump's BPF syntax,
 * e.g. "r0 = *(u32 *)(r1 + 0x4)". @prog (may be NULL) names maps and
 * functions. Returns the number of instruction slots consumed (1 or 2),
 * or a negative errno for an invalid encoding (the text then says why).
 */
int gpuext_disasm_insn(const struct gpuext_prog *prog, const struct bpf_insn *insns,
		       size_t cnt, size_t idx, char *buf, size_t buf_len);

#ifdef __cplusplus
}
#endif
#endif /* GPUEXT_GPUEXT_H */

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to libgpuext: the structs behind the public handles and the
 * seams between core/ files. Nothing here is installed.
 */
#ifndef GPUEXT_CORE_INTERNAL_H
#define GPUEXT_CORE_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuext/gpuext.h"
#include "isa.h"

#define GPUEXT_ERR(err) (errno = (err), -(err))

/* Owned by the user; lives from gpuext_runtime__new() to __free(). */
struct gpuext_runtime {
	gpuext_print_fn print;
	void *print_user;
	bool publish_maps;
	uint32_t nr_cpu_slots;
	uint64_t prandom_state;

	/* Helper/kfunc registry: one table, both kinds. */
	struct gpuext_func_proto *funcs;
	size_t func_cnt, func_cap;
	uint32_t next_kfunc_id;

	/* Variables for ld_imm64 src=3. */
	struct gpuext_var {
		uint32_t id;
		void *addr;
		size_t size;
		bool writable;
	} *vars;
	size_t var_cnt;

	/* Every live map of this runtime, by id (slot id-1; NULL once destroyed). */
	struct gpuext_map **maps;
	size_t map_slots;
	uint32_t next_map_id;
};

/* A function (entry or subprogram) inside a linked program. */
struct gpuext_func_info {
	uint32_t start;	/* first instruction index */
	char *name;
};

/*
 * A linked program: its own copy of the instructions with every relocation
 * resolved. Owned by its object (or by the caller of gpuext_prog__new()).
 */
struct gpuext_prog {
	struct gpuext_runtime *rt;
	struct gpuext_object *obj;	/* NULL for raw programs */
	char *name;
	char *section;
	struct bpf_insn *insns;
	size_t insn_cnt;
	struct gpuext_map **maps;	/* maps referenced by src=5/6 index; not owned */
	size_t map_cnt;
	struct gpuext_func_info *funcs;	/* sorted by start; funcs[0] is the entry */
	size_t func_cnt;
	/*
	 * Decoded form of every slot, built on first run (interp.c) and
	 * published atomically; invalid encodings have slots == 0. Freed
	 * with the program.
	 */
	struct isa_decoded *decoded;
};

/* Fills prog->funcs from the call/ld_imm64 src=4 targets of prog->insns. */
int gpuext_prog_find_funcs(struct gpuext_prog *prog);
/* Initialise a prog struct that takes ownership of @insns (malloc'd). */
int gpuext_prog_init(struct gpuext_prog *prog, struct gpuext_runtime *rt,
		     struct gpuext_object *obj, const char *name, const char *section,
		     struct bpf_insn *insns, size_t insn_cnt);
void gpuext_prog_fini(struct gpuext_prog *prog);

/* runtime.c: map table bookkeeping used by maps.c */
int gpuext_runtime_add_map(struct gpuext_runtime *rt, struct gpuext_map *map, uint32_t *id);
void gpuext_runtime_remove_map(struct gpuext_runtime *rt, uint32_t id);
uint64_t gpuext_runtime_prandom(struct gpuext_runtime *rt);

/* helpers.c: registers the standard host helpers into a new runtime. */
int gpuext_register_std_helpers(struct gpuext_runtime *rt);
/* policy.c: declares the gpu_ops.h kfuncs (no implementation until a backend opens). */
int gpuext_declare_gpu_kfuncs(struct gpuext_runtime *rt);

/*
 * maps.c / ringbuf.c: the program side of maps, used by helpers and the
 * interpreter. @cpu picks the per-CPU slot.
 */
void *gpuext_map_prog_lookup(struct gpuext_map *map, const void *key, uint32_t cpu);
int gpuext_map_prog_update(struct gpuext_map *map, const void *key, const void *value,
			   uint64_t flags, uint32_t cpu);
int gpuext_map_prog_delete(struct gpuext_map *map, const void *key);
/* Address of byte @off of the value of a single-value array map (ld_imm64 src=2/6). */
void *gpuext_map_direct_value(struct gpuext_map *map, uint32_t off);
/*
 * Is [addr, addr+len) inside a value (or, for a ring buffer, a record area)
 * of @map? A write to a BPF_F_RDONLY_PROG map is refused.
 */
bool gpuext_map_contains(const struct gpuext_map *map, uint64_t addr, uint64_t len,
			 bool write);

void *gpuext_ringbuf_reserve(struct gpuext_map *rb, uint64_t size, uint64_t flags);
/* The verifier: a program writes records of up to @bytes into ring @rb (gpuext_map__ring_max_record). */
void gpuext_map_note_record(struct gpuext_map *rb, uint64_t bytes);
/* @rec must come from reserve; returns -EINVAL otherwise. */
int gpuext_ringbuf_submit(struct gpuext_map *rb, void *rec, uint64_t flags, bool discard);
int gpuext_ringbuf_output(struct gpuext_map *rb, const void *data, uint64_t size,
			  uint64_t flags);
uint64_t gpuext_ringbuf_query(struct gpuext_map *rb, uint64_t flags);
/* Finds the ring buffer map of @rt whose reserved record starts at @rec. */
struct gpuext_map *gpuext_ringbuf_of_record(struct gpuext_runtime *rt, uint64_t rec);

/*
 * interp.c: an execution (what helpers receive) for a program that runs as
 * native code (codegen/host/jit.c) instead of in the interpreter. Its frames
 * are on the thread's stack: the runner says where with set_native_stack()
 * before each helper call, so gpuext_exec__check_mem() accepts pointers into
 * them. gpuext_exec_err() is the error a helper set with gpuext_exec__fail().
 */
struct gpuext_exec *gpuext_exec_new_native(struct gpuext_prog *prog,
					   const struct gpuext_run_opts *opts);
void gpuext_exec_set_native_stack(struct gpuext_exec *ex, const void *lo, const void *hi);
int gpuext_exec_err(const struct gpuext_exec *ex);
void gpuext_exec_free(struct gpuext_exec *ex);

/* Initial value for global-data maps (.rodata/.data/.bss/.kconfig). */
int gpuext_map_set_initial(struct gpuext_map *map, const void *data, size_t len);

/*
 * hexutil.c: "b7 00 00 00 2a 00 00 00" -> bytes (whitespace between pairs
 * optional). *out is malloc'd. -EINVAL with @why naming the bad character.
 */
int gpuext_parse_hex(const char *text, uint8_t **out, size_t *len, char *why, size_t why_len);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What fuzz_verifier.c (the oracle: runtime, maps, running accepted programs)
 * and verifier_gen.c (the generator of programs likely to verify) share: the
 * maps a program may use, the program being built and what the generator
 * believes each register holds.
 */
#ifndef GPUEXT_TESTS_FUZZ_VERIFIER_GEN_H
#define GPUEXT_TESTS_FUZZ_VERIFIER_GEN_H

#include <stdbool.h>
#include <stdint.h>

#include "gpuext/gpuext.h"
#include "isa.h"

#define MAX_INSNS 4096
#define BODY_CAP 1500		/* stop adding blocks past this many slots */
#define MAX_FUNCS 5
#define MAX_DEPTH 4		/* nesting of branches/loops */

enum { M_ARR1, M_ARR4, M_HASH, M_PCPU, M_RO, M_RB, M_CNT };

struct map_def {
	const char *name;
	uint32_t type, key_size, value_size, max_entries, flags;
};

extern const struct map_def map_defs[M_CNT];
/* The maps, by M_*: created once per process by the oracle (fuzz_verifier.c). */
extern struct gpuext_map *maps[M_CNT];

/* The program's variables (ld_imm64 src 3): one writable, one read-only. */
#define VAR_RW_ID 7
#define VAR_RW_SIZE 64
#define VAR_RO_ID 8
#define VAR_RO_SIZE 16

/* What the generator believes a register (or spilled slot) holds. */
enum mk {
	MK_NONE = 0,	/* uninitialised, or differs between paths: do not read */
	MK_SCALAR,
	MK_CTX,		/* the context, offset 0 */
	MK_FP,		/* r10 */
	MK_PTR,		/* memory [lo, hi) relative to the register */
	MK_REC,		/* a ring-buffer record to release (only inside its block) */
};

struct mreg {
	uint8_t kind;
	bool wr;	/* MK_PTR: writable */
	bool var_ok;	/* MK_PTR: variable offsets allowed (not stack memory) */
	bool stack;	/* MK_PTR into the caller's stack: reads need initialised bytes */
	int32_t lo, hi;
};

struct model {
	struct mreg r[11];
	uint64_t init;		/* stack slot k (fp-8k-8 .. fp-8k-1) fully written */
	struct mreg slot[64];	/* what an initialised slot holds */
};

enum argk { A_SCALAR, A_CTX, A_STACK16, A_CNT };

struct gen {
	const uint8_t *d;
	size_t size, pos;
	struct bpf_insn insns[MAX_INSNS];
	size_t n;
	bool full;
	uint32_t ctx_len;
	struct model m;
	uint16_t lock;		/* registers a loop or block must not write */
	bool in_loop;
	int depth;
	int fn, nfuncs;
	int nargs[MAX_FUNCS];
	uint8_t args[MAX_FUNCS][5];
	uint32_t start[MAX_FUNCS];
	struct { size_t at; int fn; bool ldimm; } fix[256];
	int nfix;
	int max_slot;		/* stack slots this function may use */
	bool called[MAX_FUNCS];
};

/* Writes a program from the fuzz input g->d (g->size bytes); false when none. */
bool generate(struct gen *g);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to the BPF ELF loader (loader.c, elf_check.c, struct_ops.c).
 *
 * The loader lets libbpf parse an object (programs, maps, BTF) but links
 * the programs itself, from its own view of the ELF file: elf_check.c
 * validates every header, table and relocation before libbpf sees the
 * bytes, and leaves behind a struct ldr_elf that the linker reads without
 * re-checking bounds.
 */
#ifndef GPUEXT_CORE_LOADER_IMPL_H
#define GPUEXT_CORE_LOADER_IMPL_H

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

struct bpf_object;

/* BPF relocation types (LLVM's BPF ELF ABI). */
#define LDR_R_BPF_64_64 1	/* ld_imm64 of a map, global or function */
#define LDR_R_BPF_64_ABS64 2	/* 64-bit data (struct_ops, debug info) */
#define LDR_R_BPF_64_ABS32 3	/* 32-bit data (debug info, BTF) */
#define LDR_R_BPF_64_NODYLD32 4	/* 32-bit data not resolved at load (BTF.ext) */
#define LDR_R_BPF_64_32 10	/* call */

#ifndef EM_BPF
#define EM_BPF 247
#endif

/* One relocation, decoded; @idx is its index inside its .rel section. */
struct ldr_rel {
	uint64_t offset;
	uint32_t sym;
	uint32_t type;
	uint32_t idx;
};

/*
 * A section of the file. @data points into the caller's buffer and is only
 * valid while the object is being opened (NULL for SHT_NOBITS/SHT_NULL).
 */
struct ldr_sec {
	const char *name;
	uint32_t type;
	uint64_t flags;
	uint64_t offset, size, entsize;
	uint32_t link, info;
	const uint8_t *data;
	/* The SHT_REL section whose sh_info names this section, or 0. */
	uint32_t rel_sec;
	struct ldr_rel *rels;	/* relocations targeting this section */
	size_t rel_cnt;
	/* Executable sections: rel_at[insn] = 1 + index into rels, or 0. */
	uint32_t *rel_at;
	bool exec;
};

/* A CO-RE relocation record of .BTF.ext: which instruction it patches. */
struct ldr_core_relo {
	uint32_t sec;		/* section index */
	uint32_t insn_off;	/* byte offset in that section */
	uint32_t access_str_off;
};

/* The validated file. Lives for one gpuext_object__open_mem() call. */
struct ldr_elf {
	const char *objname;
	const uint8_t *buf;
	size_t len;
	struct ldr_sec *secs;
	size_t sec_cnt;
	Elf64_Sym *syms;	/* copied out of .symtab */
	size_t sym_cnt;
	const char *strtab;	/* symbol names */
	size_t strtab_size;
	uint32_t symtab_idx, text_idx, btf_idx, btf_ext_idx; /* 0 = none */
	struct ldr_core_relo *core;
	size_t core_cnt;
};

/*
 * Validates @buf as a BPF ELF object and fills @elf. On failure logs one
 * message naming @objname, the section and the offset at fault, frees
 * everything it allocated and returns -ENOEXEC (not a BPF ELF object at
 * all) or -EINVAL (a BPF object, but malformed).
 */
int ldr_elf_parse(struct gpuext_runtime *rt, const char *objname, const void *buf,
		  size_t len, struct ldr_elf *elf);
void ldr_elf_free(struct ldr_elf *elf);
const char *ldr_sym_name(const struct ldr_elf *elf, const Elf64_Sym *sym);
/* Index of the section named @name, or 0. */
uint32_t ldr_find_sec(const struct ldr_elf *elf, const char *name);

/*
 * What the object is made of; owned by the caller of
 * gpuext_object__open_*() until gpuext_object__close().
 */
struct gpuext_object {
	struct gpuext_runtime *rt;
	char *name;
	struct bpf_object *bobj;	/* kept open for its BTF */
	struct gpuext_prog *progs;
	size_t prog_cnt;
	/* Where each program's entry function sits in the ELF file. */
	uint32_t *prog_sec, *prog_off;
	struct gpuext_map **maps;	/* every map except struct_ops ones */
	size_t map_cnt;
	struct gpuext_struct_ops *st_ops;
	size_t st_ops_cnt;
};

/* struct_ops.c: fills obj->st_ops from the struct_ops maps of obj->bobj. */
int ldr_collect_struct_ops(struct gpuext_object *obj, const struct ldr_elf *elf);
void ldr_free_struct_ops(struct gpuext_object *obj);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The assembler (text in the disassembler's syntax -> struct bpf_insn[],
 * asm.c) and the ISA test corpus reader (tests/isa/\*.isa, isa_corpus.c)
 * built on it. Internal to libgpuext: the unit tests, the conformance plugin
 * and the backends use it to run the same corpus.
 *
 * Syntax: one instruction per line, exactly as gpuext_disasm_insn() prints
 * it (so asm(disasm(x)) == x), plus
 *   - labels: "name:" (alone or before an instruction); "goto name",
 *     "gotol name", "if r1 == 0x0 goto name", "call name" (local call),
 *     "r1 = func[name] ll";
 *   - "call bpf_map_lookup_elem": a helper by name (needs opts->rt), and
 *     "call kfunc[name]";
 *   - map_fd[NAME] (a map of opts->rt), map[NAME] (one of opts->maps);
 *     "#<number>" in place of any name;
 *   - decimal numbers anywhere a hex one is accepted;
 *   - ".insn code=0x95 dst=0 src=0 off=0 imm=0" for any raw encoding
 *     (fields optional, default 0), to write invalid programs on purpose;
 *   - comments: ';' anywhere, '#' at the start of a line or after a space;
 *     a trailing "<...>" annotation (llvm's jump target) is ignored.
 */
#ifndef GPUEXT_CORE_ASM_H
#define GPUEXT_CORE_ASM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuext/gpuext.h"

struct gpuext_asm_opts {
	size_t sz;
	/* Resolves map_fd[NAME], map_value_fd[NAME], helper and kfunc names. */
	const struct gpuext_runtime *rt;
	/* Resolves map[NAME] and map_value[NAME] to an index into @maps. */
	struct gpuext_map *const *maps;
	size_t map_cnt;
	/* Line number of the first line of @text, for messages (0 means 1). */
	int first_line;
};

/*
 * Assembles @text. On success returns 0 and a malloc'd array in *out
 * (free() it) with its length in *cnt. On failure returns -EINVAL and puts
 * "line L, column C: <what was expected>" in @err.
 */
int gpuext_asm(const char *text, const struct gpuext_asm_opts *opts, struct bpf_insn **out,
	       size_t *cnt, char *err, size_t err_len);

/* ------------------------------------------------------------------ */
/* ISA corpus: see the format description at the top of tests/test_isa.c */
/* ------------------------------------------------------------------ */

struct isa_case_map {
	char name[GPUEXT_MAP_NAME_MAX];
	uint32_t type, key_size, value_size, max_entries;
};

struct isa_case_update {	/* "update MAP KEYHEX VALUEHEX" */
	size_t map;		/* index into maps */
	uint8_t *key, *value;
	size_t key_len, value_len;
};

struct isa_case_var {		/* "var ID SIZE [ro] [HEX]" */
	uint32_t id;
	size_t size;
	bool writable;
	uint8_t *init;		/* @size bytes */
};

/* One test case; every pointer is owned by the case. */
struct isa_case {
	char *name;
	char *family;		/* file name without .isa */
	int line;		/* of the "case" line */
	bool has_input;
	uint8_t *input;
	size_t input_len;
	struct isa_case_map *maps;
	size_t map_cnt;
	struct isa_case_update *updates;
	size_t update_cnt;
	struct isa_case_var *vars;
	size_t var_cnt;
	char *asm_text;
	int asm_line;		/* line of the first assembly line */
	bool has_result;
	uint64_t result;
	bool has_mem;
	uint8_t *mem;
	size_t mem_len;
	int error;		/* expected negative errno, 0 = must succeed */
	bool error_any;		/* "error any": any failure */
	char *error_msg;	/* substring of the logged error, or NULL */
};

struct isa_corpus {
	struct isa_case *cases;
	size_t cnt;
};

/* Parses one .isa file's text and appends its cases to @c. */
int isa_corpus_parse(struct isa_corpus *c, const char *text, const char *family,
		     char *err, size_t err_len);
/* Loads every *.isa file of @dir (sorted by name). */
int isa_corpus_load_dir(struct isa_corpus *c, const char *dir, char *err, size_t err_len);
/*
 * Every file DIR/\*SUFFIX in name order: @parse(@c, its text, its name less
 * SUFFIX, @err, @err_len), stopping at the first that fails (its error is
 * returned). -ENOENT when DIR holds none. The ISA corpus and the verifier
 * corpus (tests/verifier_corpus.c) load through it.
 */
int isa_corpus_each_file(const char *dir, const char *suffix,
			 int (*parse)(void *c, const char *text, const char *stem, char *err,
				      size_t err_len),
			 void *c, char *err, size_t err_len);
/* "array", "percpu_array", "hash", "lru_hash", "ringbuf" -> BPF_MAP_TYPE_*; 0 for another name. */
uint32_t isa_map_type_by_name(const char *name);
void isa_corpus_free(struct isa_corpus *c);

/*
 * What a backend needs to run one case: its maps (created in @rt and
 * filled), its variables (registered in @rt), the program, and a copy of the
 * input memory for r1/r2. Free with isa_case_env_fini() before @rt.
 */
struct isa_case_env {
	struct gpuext_map **maps;
	size_t map_cnt;
	uint8_t **var_bufs;
	size_t var_cnt;
	struct bpf_insn *insns;
	size_t insn_cnt;
	uint8_t *mem;
	size_t mem_len;
};

int isa_case_env_init(struct isa_case_env *env, struct gpuext_runtime *rt,
		      const struct isa_case *tc, char *err, size_t err_len);
void isa_case_env_fini(struct isa_case_env *env);

/* "EFAULT" -> EFAULT (positive), 0 if unknown. */
int isa_errno_from_name(const char *name);
const char *isa_errno_name(int err);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verifier corpus reader: hand-written cases (tests/verifier/\*.vf, in
 * the assembler's syntax) and the expectations written next to the C cases
 * (tests/bpf/vf_*.bpf.c). Shared by tests/test_verifier.c and by the
 * differential test against the kernel's verifier, so both run exactly the
 * same programs with the same expected verdicts.
 *
 * A .vf file (lines starting with '#' are comments):
 *
 *   case NAME                       starts a case
 *   type TYPE [ctx N]               host (default), socket_filter, mem_ops,
 *                                   sched_ops, device_probe; host: r1 is an
 *                                   N-byte buffer and r2 = N (default 0)
 *   map NAME TYPE key=K value=V entries=N [rdonly]
 *                                   a map (array, percpu_array, hash, lru_hash,
 *                                   ringbuf); rdonly = BPF_F_RDONLY_PROG
 *   budget N                        processed-instruction budget (default: the
 *                                   verifier's); for quick loop-bound cases
 *   asm                             the program (core/asm.h syntax) up to "end"
 *   end
 *   expect accept
 *   expect reject RULE [at N] [TEXT]
 *                                   the rule that must fire (a GPUEXT_RULES
 *                                   name), optionally at instruction N and
 *                                   with TEXT somewhere in the verifier log
 *
 * A C case is one program (one SEC) of a tests/bpf/vf_NAME.bpf.c file; its
 * expectation is a one-line comment right above its SEC line holding
 * "expect:" and the words above, e.g. "expect: reject null-deref" or
 * "expect: accept ctx 64".
 *
 * Its type comes from the section: socket* -> socket_filter, probe/... ->
 * device_probe, struct_ops/... -> mem_ops, anything else -> host.
 */
#ifndef GPUEXT_TESTS_VERIFIER_CORPUS_H
#define GPUEXT_TESTS_VERIFIER_CORPUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuext/gpuext.h"
#include "gpuext/verifier.h"

/* What a case must get from gpuext_prog__verify(). */
struct vc_expect {
	bool accept;
	enum gpuext_rule rule;	/* GPUEXT_RULE_NONE when accept */
	bool has_at;
	uint32_t at;		/* instruction index where the rule fires */
	char msg[160];		/* substring of the log, "" for none */
	uint32_t ctx_size;	/* host programs: "ctx N" */
};

struct vc_map {
	char name[GPUEXT_MAP_NAME_MAX];
	uint32_t type, key_size, value_size, max_entries, flags;
};

/* One hand-written case; every pointer is owned by the case. */
struct vc_case {
	char *name;
	char *file;		/* file name without .vf */
	int line;		/* of the "case" line */
	enum gpuext_prog_type type;
	struct vc_map *maps;
	size_t map_cnt;
	uint64_t budget;	/* gpuext_verify_opts.insn_budget, 0 = default */
	char *asm_text;
	int asm_line;
	bool has_expect;
	struct vc_expect expect;
};

struct vc_corpus {
	struct vc_case *cases;
	size_t cnt;
};

int vc_corpus_parse(struct vc_corpus *c, const char *text, const char *file, char *err,
		    size_t err_len);
/* Every *.vf of @dir, sorted by name. */
int vc_corpus_load_dir(struct vc_corpus *c, const char *dir, char *err, size_t err_len);
void vc_corpus_free(struct vc_corpus *c);

/* "accept [ctx N]" | "reject RULE [at N] [ctx N] [TEXT]"; 0 or -EINVAL. */
int vc_parse_expect(const char *s, struct vc_expect *e, char *err, size_t err_len);
/* "oob-map-value" -> GPUEXT_RULE_OOB_MAP_VALUE; GPUEXT_RULE_NONE if unknown. */
enum gpuext_rule vc_rule_by_name(const char *name);

/* The maps (created in @rt) and the assembled program of one case. */
struct vc_env {
	struct gpuext_map **maps;
	size_t map_cnt;
	struct bpf_insn *insns;
	size_t insn_cnt;
};

int vc_env_init(struct vc_env *env, struct gpuext_runtime *rt, const struct vc_case *tc, char *err,
		size_t err_len);
void vc_env_fini(struct vc_env *env);

/* ---- C cases ---- */

struct vc_cprog {
	char name[128];		/* the program (function) name */
	char section[128];
	enum gpuext_prog_type type;
	int line;		/* of the SEC line */
	struct vc_expect expect;
};

struct vc_csource {
	struct vc_cprog *progs;
	size_t cnt;
};

/* Reads the programs and expectations of one vf_*.bpf.c source text. */
int vc_csource_scan(struct vc_csource *s, const char *text, const char *file, char *err,
		    size_t err_len);
void vc_csource_free(struct vc_csource *s);
enum gpuext_prog_type vc_type_for_section(const char *sec);

/*
 * Functions the corpus calls besides the standard helpers, registered in
 * @rt: a warp-collective device helper and a device-only helper (for the
 * SIMT and bad-call cases). Ids in VC_HELPER_*; C cases declare them with
 * these ids too.
 */
#define VC_HELPER_WARP_SUM	0x1000	/* "gpuext_warp_sum": u64 (u64), collective, device */
#define VC_HELPER_DEVICE_CLOCK	0x1001	/* "gpuext_device_clock": u64 (void), device only */
#define VC_HELPER_HOST_TIME	0x1002	/* "gpuext_host_time": u64 (void), host only */
int vc_register_funcs(struct gpuext_runtime *rt);

/* Reads a whole file into a NUL-terminated malloc'd buffer; NULL on error. */
char *vc_read_file(const char *path);

#endif

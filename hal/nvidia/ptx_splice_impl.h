/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The splicer's own state, shared by its files: ptx_splice.c (the module,
 * the functions, the sites) and ptx_scan.c (the scanner that reads the PTX
 * one statement at a time). Nothing outside the splicer includes this.
 */
#ifndef GPUEXT_HAL_NVIDIA_PTX_SPLICE_IMPL_H
#define GPUEXT_HAL_NVIDIA_PTX_SPLICE_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nvprobe.h"
#include "ptx_splice.h"

/* A growing output text; oom once an allocation failed (then nothing more is added). */
struct obuf {
	char *p;
	size_t len, cap;
	bool oom;
};


enum stmt_kind {
	ST_EOF,
	ST_STMT,	/* ends with ';' */
	ST_LINE,	/* a directive that ends at the newline */
	ST_LABEL,	/* name: */
	ST_OPEN,	/* '{' opening a block */
	ST_CLOSE,	/* '}' */
	ST_HEADER,	/* text followed by '{': function or .section */
};

struct stmt {
	enum stmt_kind kind;
	size_t start, end;	/* src bytes: first character .. one past its last */
	unsigned line;		/* line of start (1-based) */
	char *text;		/* comments removed, whitespace runs made one space */
	size_t len, cap;
};

/* What the splicer knows about one register declaration (.reg .b32 %r<10>;). */
struct regdecl {
	char name[48];
	bool range;		/* %r<10>: %r0 .. %r9 */
	unsigned size;		/* bytes; 0: predicate or unknown */
};

struct splicer {
	const char *src;
	size_t n, pos;
	unsigned line;
	struct stmt st;
	struct obuf out;
	size_t copied;		/* src[0 .. copied) is in out */
	const struct gx_pack *pack;
	struct gx_splice_stats *stats;
	char *err;
	size_t err_len;
	int rc;

	char pfx[16];		/* our register/label prefix, absent from the module */
	unsigned label_seq;
	int sm;			/* .target sm_XX; 0 unknown */
	unsigned ver;		/* .version as major * 10 + minor */
	bool have_version, have_target, have_addr64;
	bool seen_func;		/* a function header went by: no module header lines after it */
	size_t ver_start, ver_end, hdr_end;
	size_t sm_start, sm_end;	/* the "sm_NN" token of .target (sm_end 0: none) */
	unsigned need_ver;	/* what the probes need: PTX ISA version ... */
	int need_sm;		/* ... and target */
	uint32_t ctx_words;	/* words of the probe context the probes read (bit w: 4w..4w+3) */
	unsigned long long kid;	/* the kernel being instrumented: its id ... */
	const char *param0;	/* ... and first parameter's name ("" if none) */
	struct gx_probe_body body[GX_PROBE_NR];	/* the probe functions, inlined at the sites */
	struct gx_hoist_plan *plan[GX_PROBE_NR];	/* what moves from their sites (made at first use) */
	uint32_t guard[GX_PROBE_NR];	/* GX_GUARD_* tested before each site of the event */
	unsigned site_seq;
	bool probes_declared;
	bool in_func;		/* walking a .func body: memory sites only */
	int twin_scan;		/* 0 not yet, 1 the source never names a flat twin, 2 it may */
	bool filter_all;	/* the kernel filter matches every .entry of the module */
	struct obuf funcs;	/* GX_SPLICE_FUNC lines: the .func bodies instrumented */
	struct obuf hoist;	/* code the sites moved to the function's start ... */
	size_t hoist_at;	/* ... which is here in out (after emit_decls) */
	uint32_t guards_hoisted;	/* GX_GUARD_* whose predicate is in hoist */

	struct regdecl *regs;
	size_t nregs, capregs;
};

/* ---- ptx_scan.c ---- */

/* Records "line L: ..." in s->err (the first failure only) and returns s->rc (-EINVAL). */
int gx_sp_fail(struct splicer *s, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A character of a PTX identifier (letters, digits, _ and $). */
bool gx_sp_is_ident(char c);
/* Skips whitespace and comments. false on an unterminated comment. */
bool gx_sp_skip_blank(struct splicer *s);
/* Takes one character (a whole string literal at a '"') into s->st.text. */
bool gx_sp_take_char(struct splicer *s);
/* The next statement into s->st (@in_body: inside a function's braces). */
enum stmt_kind gx_sp_next_stmt(struct splicer *s, bool in_body);

#endif

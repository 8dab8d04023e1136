/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scenarios: scripts of driver events with the hook calls and decisions they
 * must produce, run against a backend through hal/hal.h. The same .scn file
 * runs on every backend (the simulator today, the kernel adapters later); a
 * backend's decisions must match what the file expects.
 *
 * ---- The .scn format ----------------------------------------------------
 *
 * One command per line; `#` starts a comment; blank lines are ignored.
 * Numbers are decimal or 0x hex; sizes take K/M/G suffixes (powers of 2).
 * A block is named by its id (va >> 21). An address is a byte address or
 * BLOCK:PAGE (block id, 4 KiB page index 0..511), e.g. `3:0`, `3:511`.
 *
 * Header
 *   scenario TEXT...            what the scenario proves (shown in reports)
 *   variants A B ...            run the whole script once per variant; `$V` in
 *                               any line is replaced by the variant's name
 *
 * Driver events
 *   gpu capacity=N [k=v ...]    open the device: N blocks of GPU memory; other
 *                               keys go to the backend as they are (sim:
 *                               batch=, prefetch=on|off, big_page_kb=, ...).
 *                               Must come before any other event.
 *   policy NAME                 load NAME.bpf.o (from the policy directories),
 *                               bind it and attach it; `none` detaches both kinds
 *   detach mem|sched
 *   map NAME KEY VALUE          write an entry of a map of an attached policy
 *                               (integers, sized by the map's key/value size)
 *   range TGID VA SIZE          a managed range (cudaMallocManaged) of TGID
 *   access TGID ADDR [r|w] [count=N] [step=BYTES|Pn]
 *                               GPU accesses: N of them (default 1), ADDR,
 *                               ADDR+step, ...; step defaults to one page;
 *                               Pn = n pages
 *   flush                       service the open fault batch
 *   task create ID TGID COMM    a task group is created (task_init)
 *   task bind ID                its first submission (task_bind)
 *   task destroy ID             it is gone (task_destroy)
 *
 * Any command may be limited to some variants: `expect[lfu] resident 3`,
 * `map[mem_priority] prio 100 2`.
 *
 * Expectations: `expect WHAT ...`. Each one first services the open fault batch (as a kernel
 * boundary would). Event expectations consume the event stream in order:
 * each kind keeps a cursor just past its last match.
 *   evict B ...                 the next evictions are exactly B ..., in order
 *   no-evict                    no eviction since the last evict expectation
 *   resident B ...              each B holds GPU memory
 *   not-resident B ...          none of them does
 *   used-list B ...             the used list, head (next victim) to tail, is
 *                               exactly B ... (skipped where the backend cannot
 *                               show its lists)
 *   prefetch B FIRST-LAST       a prefetch of pages FIRST..LAST of block B
 *   no-prefetch [B]             no prefetch (of B) since the last prefetch one
 *   hook NAME [ret=N] [id=B]    a policy call of hook NAME (gpu_block_access,
 *                               task_bind, ...; the gpu_/block_/page_ prefix may
 *                               be left out) returning N (for block/task B)
 *   default NAME                the backend ran its default at hook NAME
 *   calls NAME N                the policy was called N times at NAME so far
 *   attr task=T [timeslice_us=V] [level=L]
 *                               task T's attributes now (L: low, medium, high or
 *                               a number); tasks start at the backend's defaults
 *   bind-rejected T ...         each T's bind was refused
 *   bound T ...                 each T's bind succeeded
 *   ejected [TEXT...]           the policy was ejected (the reason contains TEXT)
 *   not-ejected
 *
 * ---- Running -------------------------------------------------------------
 */
#ifndef GPUEXT_CONFORMANCE_SCENARIO_H
#define GPUEXT_CONFORMANCE_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct scn_scenario;

/*
 * Reads and checks a .scn file (every line's syntax, in every variant).
 * Returns 0, or -errno with "file:line: what is wrong" in @err.
 */
int scn_parse_file(const char *path, struct scn_scenario **out, char *err, size_t err_len);
int scn_parse_text(const char *name, const char *text, struct scn_scenario **out, char *err,
		   size_t err_len);
void scn_free(struct scn_scenario *s);

const char *scn_title(const struct scn_scenario *s);	/* the `scenario` line, or the file name */
size_t scn_variant_cnt(const struct scn_scenario *s);	/* 1 without a `variants` line */
const char *scn_variant(const struct scn_scenario *s, size_t idx); /* "" without one */

struct scn_run_opts {
	size_t sz;
	const char *backend;		/* gpuext_hal_find() name; NULL = "sim" */
	/* Where `policy NAME` looks for NAME.bpf.o, in order; NULL-terminated. */
	const char *const *policy_dirs;
	FILE *trace;			/* NULL, or every command and event as it happens */
	int only_variant;		/* -1 = all, else that index */
	/*
	 * NULL, or the lowered run for a backend that cannot run the .scn
	 * itself (a kernel in a VM): per variant a `variant NAME VARIANT` line,
	 * the driver commands as "LINE WORDS..." (expectations become `sync`),
	 * the decision events as "ev ..." lines (conformance/kernel/README.md),
	 * and `end`.
	 */
	FILE *lower;
};

/* One unmet expectation (or a command the backend refused). */
struct scn_failure {
	unsigned line;
	char variant[32];
	char text[768];		/* "expect evict 3: the next eviction was 5 (line 21)" */
};

struct scn_report {
	unsigned commands;	/* executed, all variants */
	unsigned checks;	/* expectations met + unmet */
	unsigned skipped;	/* expectations the backend cannot check */
	unsigned failure_cnt;	/* all of them; the first SCN_MAX_FAILURES are kept */
#define SCN_MAX_FAILURES 16
	struct scn_failure failures[SCN_MAX_FAILURES];
};

/*
 * Runs every variant of @s on a fresh device of @opts->backend. Returns 0
 * when it ran (report->failure_cnt says whether it passed), -ENODEV if the
 * backend is absent or cannot open a device here (skip), another -errno on
 * an internal error.
 */
int scn_run(const struct scn_scenario *s, const struct scn_run_opts *opts,
	    struct scn_report *report);

/* Prints "file:line [variant]: text" for each kept failure. */
void scn_report_print(const struct scn_scenario *s, const struct scn_report *r, FILE *f);

#ifdef __cplusplus
}
#endif
#endif

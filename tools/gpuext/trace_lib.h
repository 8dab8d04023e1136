/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The parts of `gpuext trace` that need no GPU and no child process, kept
 * apart from cmd_trace.c so tests/test_trace_lib.c can check them: argument
 * parsing, log2 histograms, pairing launches with first block starts, the
 * per-SM imbalance, the kernel table of a trace directory, the memtrace ->
 * simulator trace conversion, and building the pack from a probe object.
 */
#ifndef GPUEXT_TRACE_LIB_H
#define GPUEXT_TRACE_LIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gpuext/gpuext.h"
#include "nvidia/nvprobe.h"
#include "../probes/probes.h"

struct sim_trace;

/* ---- command line -------------------------------------------------------- */

struct trace_opts {
	const char *tool;	/* a tools/probes name or a .bpf.o path */
	const char *kernel_glob;	/* --kernel; NULL = every kernel */
	int per_thread;		/* -1: the tool's default; 0 warp mode; 1 per thread */
	const char *out;	/* --out FILE */
	unsigned interval_ms;	/* --interval; default 1000, 0 = no live output */
	const char *dir;	/* --dir: trace directory to use (default: a fresh one) */
	const char *sm;		/* --sm: target of the emitted probes (default sm_80) */
	const char *preload;	/* --preload: libgpuext-nvprobe.so to use */
	bool keep;		/* --keep: leave the trace directory (and print it) */
	bool list;		/* --list */
	bool help;		/* --help */
	bool pack_only;		/* --pack-only: write the pack into --dir and stop */
	bool no_flat_twins;	/* --no-flat-twins: no flat twins (hal/nvidia/ptx_twin.c) */
	int app_argc;		/* after "--" */
	char **app_argv;	/* points into argv */
};

/*
 * Parses `gpuext trace` arguments (argv[0] = "trace"). 0, or -EINVAL with a
 * message saying what is wrong in @err. Does not touch the file system.
 */
int trace_parse_args(int argc, char **argv, struct trace_opts *o, char *err, size_t err_len);

/* ---- log2 histograms ----------------------------------------------------- */

#define TRACE_HIST_BUCKETS 64
/* Bucket b holds values in [2^b, 2^(b+1)); bucket 0 also holds 0. */
struct trace_hist {
	uint64_t b[TRACE_HIST_BUCKETS];
	uint64_t n, sum, min, max;
};

unsigned trace_log2(uint64_t v);
void trace_hist_add(struct trace_hist *h, uint64_t v);
/* Adds a device-side bucket array (bucket b = floor(log2(v))) of @n buckets. */
void trace_hist_add_buckets(struct trace_hist *h, const uint64_t *buckets, size_t n);
/* Upper bound (exclusive) of the bucket holding the p-quantile (0 < p <= 1); 0 if empty. */
uint64_t trace_hist_quantile(const struct trace_hist *h, double p);
/* "1.5us", "12ms", ... for @ns into @buf. */
const char *trace_fmt_ns(uint64_t ns, char *buf, size_t len);
/* Prints rows "[lo, hi) count |****|" for the non-empty span, values as durations when @ns. */
void trace_hist_print(FILE *f, const struct trace_hist *h, bool ns);

/* ---- slot rings (launchlate's starts: probes.h) -------------------------- */

/*
 * The reader of a slot ring: @rings counters (one per GPU) and @slots records
 * each. It takes every ring's records in claim order, each once, and counts
 * what it could not take.
 */
struct trace_slots {
	uint32_t rings;
	uint32_t slots;		/* per ring, a power of 2 */
	uint32_t patience;	/* polls an unreadable record is waited for (init: TRACE_SLOTS_PATIENCE) */
	uint64_t *next;		/* per ring: the seq it waits for (claim number + 1) */
	uint64_t *waitfor;	/* per ring: the counter when the wait for next began */
	uint64_t *giveup;	/* per ring: seqs up to this one are not waited for again */
	uint32_t *stalls;	/* per ring: polls that found next's slot unreadable */
	uint64_t taken;		/* records handed to take() */
	uint64_t lost;		/* overwritten by a later lap before a poll read them */
	uint64_t unreadable;	/* claimed, never seen whole in `patience` polls */
};
/* Polls an unreadable record (not written yet, or copied half-written) is waited for. */
#define TRACE_SLOTS_PATIENCE 50u
int trace_slots_init(struct trace_slots *s, uint32_t rings, uint32_t slots);
void trace_slots_free(struct trace_slots *s);
/* Reads slot @idx (ring r's seq q is idx r x slots + (q - 1) mod slots); 0, or nonzero: not now. */
typedef int (*trace_slot_get_fn)(void *user, uint32_t idx, struct gx_slot_start *rec);
typedef void (*trace_slot_take_fn)(void *user, uint32_t ring, const struct gx_slot_start *rec);
/*
 * One look: @ctr[r] is how many records ring r's writers claimed (the
 * counter map). Takes ring r's records from next[r] up to ctr[r] in order,
 * stopping at the first one not readable yet (a slot whose seq is older or
 * whose check fails) until it has waited `patience` polls for it; then it
 * gives up that one and, without waiting again, every unreadable one that
 * was claimed when the wait began. Skips what a later lap overwrote.
 * @final: the writers are done, so nothing unreadable is waited for.
 */
void trace_slots_poll(struct trace_slots *s, const uint64_t *ctr, trace_slot_get_fn get,
		      trace_slot_take_fn take, void *user, bool final);

/* ---- launch latency --------------------------------------------------------- */

/*
 * Pairs launches (DIR/launches.bin) with first-block starts (launchlate's slot
 * ring): per kernel K and GPU (its id mod GX_LL_GPUS, the start's ring),
 * the n-th launch of K there in host time goes with the n-th start of K there
 * in device time (first in, first out). lat[i] gets start - launch (ns, may be negative if
 * the clocks disagree) for launch i, or INT64_MIN if no start came. Returns
 * the number of pairs, or -ENOMEM.
 */
/*
 * The preload library's clock calibrations, DIR/clock-<pid>-<gpu>.txt:
 * %globaltimer - CLOCK_REALTIME of one process's GPU, within +- uncertainty.
 */
struct trace_clock {
	uint32_t pid;
	uint32_t gpu;
	int64_t offset_ns;
	uint64_t uncertainty_ns;
};
/* Reads every DIR/clock-*.txt (none = 0 entries). *out malloc'd. 0 or -errno. */
int trace_clocks_load(const char *dir, struct trace_clock **out, size_t *cnt);
/* Parses one file's text; 0 or -EINVAL (not the format nv_launch.c writes). */
int trace_clock_parse(const char *text, struct trace_clock *c);
/* The calibration of (@pid, @gpu), or NULL. */
const struct trace_clock *trace_clock_find(const struct trace_clock *c, size_t n, uint32_t pid,
					   uint32_t gpu);

/*
 * As above, with each launch's host time moved onto its GPU's clock by
 * the calibration of its (pid, gpu) in @clk: lat = start - (launch +
 * offset). Launches without one stay uncorrected; *uncorrected (if not
 * NULL) counts those that paired.
 */
long trace_match_launches(const struct gx_launch_rec *l, size_t nl,
			  const struct gx_rec_start *s, size_t ns, int64_t *lat);
long trace_match_launches_clk(const struct gx_launch_rec *l, size_t nl,
			      const struct gx_rec_start *s, size_t ns,
			      const struct trace_clock *clk, size_t nclk, int64_t *lat,
			      size_t *uncorrected);

/*
 * The first two processes whose launches share one of launchlate's start
 * rings (GPU id mod GX_LL_GPUS: the same GPU, or GPUs GX_LL_GPUS apart), in
 * launch order: 1 with their pids and GPU ids in @c, else 0. Launches with
 * no GPU (UINT32_MAX) wrote nothing and are skipped.
 */
struct trace_ring_clash {
	uint32_t pid[2], gpu[2];
};
int trace_ll_ring_clash(const struct gx_launch_rec *l, size_t nl, struct trace_ring_clash *c);

/* ---- SM load ---------------------------------------------------------------- */

struct trace_smload {
	uint64_t total;		/* blocks */
	uint32_t sms;		/* SMs that got at least one block */
	uint64_t max, min;	/* over those SMs */
	double mean;		/* over those SMs */
	double imbalance;	/* max / mean; 0 if no block */
};
void trace_smload(const uint64_t *blocks, size_t n, struct trace_smload *out);

/* ---- kerneldur ------------------------------------------------------------- */

/*
 * The launch a kerneldur state entry still holds (probes.h: the device folds
 * a launch when the next one of its kernel starts, so the last one is left):
 * 0 when there is none, else how many launches (one per process whose mirror
 * added into @s: `pending`; each GPU has entries of its own, so only
 * processes that share a GPU id add up) with *total_ns their durations
 * together: the latest end minus the start (with one process exact; with
 * several, the sums the mirror made give the total of their durations, give
 * or take the spread of their last blocks). A launch with no end after its
 * start yet (still running, or no block ended) counts none.
 */
uint64_t trace_kdur_pending(const struct gx_kdur_state *s, uint64_t *total_ns);

struct trace_kernel;
/*
 * The kernel id of kerneldur state slot @slot: the mirror added up the id
 * every process that ran the kernel on this GPU id wrote (`pending` of
 * them), modulo 2^64, so with several it is the listed kernel (@k,
 * kernels.txt) of that slot whose id times `pending` is the sum.
 */
uint64_t trace_kdur_kernel_id(const struct gx_kdur_state *s, uint32_t slot,
			      const struct trace_kernel *k, size_t n);

/* One kernel slot of kerneldur over every GPU's entry for it. */
struct trace_kdur_slot {
	uint64_t runs, total_ns, max_ns, unfinished, kernel_id;
	bool max_shared;	/* the maximum is an entry processes share: their sum, an upper bound */
};
/*
 * Folds kernel slot @slot's entries of @n GPUs (@e[g] = state[g x
 * GX_KDUR_KSLOTS + slot]; entries that never saw a launch are skipped): the
 * runs, durations and unfinished launches summed, each entry's pending
 * launch folded (trace_kdur_pending) and its duration added to @h, the
 * maximum the largest of the entries'.
 */
void trace_kdur_slot(const struct gx_kdur_state *e, unsigned n, uint32_t slot,
		     const struct trace_kernel *k, size_t nk, struct trace_hist *h,
		     struct trace_kdur_slot *out);

/* ---- kernels.txt ------------------------------------------------------------ */

struct trace_kernel {
	uint64_t id;
	uint32_t pid;
	char status[48];
	char *name;		/* whole, however long (trace_kernels_free) */
};
/*
 * Reads DIR/kernels.txt (absent = 0 kernels); lines of any length. *out is
 * freed with trace_kernels_free(). 0 or -errno.
 */
int trace_kernels_load(const char *dir, struct trace_kernel **out, size_t *cnt);
void trace_kernels_free(struct trace_kernel *k, size_t cnt);
/* The name of kernel @id, or its id in hex in @buf. */
const char *trace_kernel_name(const struct trace_kernel *k, size_t n, uint64_t id, char *buf,
			      size_t len);

/* ---- memtrace -> simulator trace ------------------------------------------- */

/*
 * One memtrace ring record (a warp's accesses, probes.h) -> its single
 * accesses in lane order, each with lanes = 1 and stride = 0, into @out (room
 * for 32). Returns how many, or 0 for a record that cannot be one (lanes
 * empty, bit 0 clear: the first lane is the record's own).
 */
size_t trace_mem_expand(const struct gx_rec_mem *w, struct gx_rec_mem out[32]);

/* What the accesses of the records kept so far add up to. */
struct trace_mem_stats {
	uint64_t accesses, loads, stores, bytes;
	uint64_t lo, hi;	/* lowest and highest address; lo > hi while empty */
};

/* An empty trace_mem_stats. */
void trace_mem_stats_init(struct trace_mem_stats *s);
/*
 * How many accesses warp record @w holds (0 for one trace_mem_expand() would
 * refuse); when @s is given, they are added to it. `gpuext trace memtrace`
 * keeps the records as they come and counts them with this, so its reader
 * copies a record once, not once per lane.
 */
size_t trace_mem_account(const struct gx_rec_mem *w, struct trace_mem_stats *s);
/*
 * The single accesses of @n warp records, in record and lane order, into a
 * new array (*out, free()d by the caller; *nout accesses). Records with no
 * first lane are skipped. 0 or -ENOMEM.
 */
int trace_mem_expand_all(const struct gx_rec_mem *w, size_t n, struct gx_rec_mem **out,
			 size_t *nout);


/*
 * Turns single accesses (trace_mem_expand()'s output; lanes and stride are
 * ignored) into a simulator trace of process @tgid: ranges are
 * the 2 MiB blocks the accesses touch, merged where contiguous; each access
 * becomes {va, tgid, kernel, is_write} where kernel numbers the kernels in
 * order of first appearance (the simulator's "launch index", < 65536). An
 * access whose id @k lists as a "device-function" (a .func body with sites:
 * it carries the function's id, not its caller's) counts as the kernel of
 * the access before it, so calls do not cut a kernel in pieces (the
 * simulator ends a kernel where the number changes). 0 or -errno (-E2BIG
 * past 65536 kernels or SIM_TRACE_MAX_RANGES ranges).
 */
int trace_memtrace_to_sim(const struct gx_rec_mem *r, size_t n, uint32_t tgid,
			  const struct trace_kernel *k, size_t nk, struct sim_trace *out,
			  char *err, size_t err_len);

/* ---- the pack ----------------------------------------------------------------- */

/* The program's section -> GX_PROBE_* event, or -1. */
int trace_probe_event(const char *section);
/*
 * Fills @p from an opened, verified probe object: the PTX of its probes
 * (gpuext_ptx_probe_emit), its maps (shm names of the runtime that opened it:
 * it must publish maps), the kernel filter and mode, and the hash over all of
 * it except the shm names (so the JIT cache survives across runs) - computed by
 * gx_pack_write(), so p->hash is left 0 here. 0 or -errno with the reason in
 * @err. trace_pack_release() frees it.
 */
int trace_build_pack(struct gpuext_object *obj, const char *sm, bool per_thread,
		     const char *kernel_glob, struct gx_pack *p, char *err, size_t err_len);
/* Whether this build links the pieces a trace needs (probe emitter, pack writer). */
bool trace_have_emitter(void);
bool trace_have_pack_writer(void);
/* gx_pack_write()/gx_pack_read() where linked, else -ENOSYS; and the matching release. */
int trace_pack_write(const char *dir, const struct gx_pack *p);
int trace_pack_read(const char *dir, struct gx_pack *p, char *err, size_t err_len);
void trace_pack_release(struct gx_pack *p);

/*
 * 32-bit counters read now (@now, @n of them) widened into 64-bit @sum:
 * each adds its change since @last modulo 2^32, and @last becomes @now.
 * Exact while no counter moves 2^32 or more between two calls.
 */
void trace_widen_u32(uint64_t *sum, uint32_t *last, const uint32_t *now, size_t n);

#endif

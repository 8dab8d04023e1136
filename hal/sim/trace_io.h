/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading and writing access traces (struct sim_range / struct sim_access of
 * trace.h): how traces recorded on a real GPU (the memtrace probe) and
 * generated workloads reach the simulator, and how tests pin a scenario.
 *
 * Two forms, both read and written here, converting losslessly:
 *
 * TEXT (tests, hand-written scenarios). One record per line; '#' starts a
 * comment; blank lines are ignored; fields are separated by blanks; numbers
 * are decimal or 0x-hex, a size may end in K, M or G (binary units):
 *
 *     range  <tgid> <va> <size>
 *     access <tgid> <va> r|w [<kernel>]
 *
 * Every range line comes before the first access line. A missing kernel
 * means "the same as the previous access" (0 for the first).
 *
 * BINARY (recorded traces; 1-3 bytes per access for the generators' patterns). All integers little-endian.
 *
 *     offset size field
 *     0      4    magic "GXTR"
 *     4      2    version, 1
 *     6      2    flags, 0 (reserved)
 *     8      4    range_cnt (<= SIM_TRACE_MAX_RANGES)
 *     12     4    reserved, 0
 *     16     8    access_cnt: number of records that follow
 *     24     24 x range_cnt ranges: u64 va, u64 size, u32 tgid, u32 reserved (0)
 *     ...    access_cnt records, then the end of the file (trailing bytes are an error)
 *
 *   A record is a tag byte and one to three LEB128 varints:
 *     tag bit 0   is_write
 *     tag bit 1   tenant switch: a varint follows, the new tenant's index in the
 *                 tenant table (the distinct tgids of the ranges, in order of first
 *                 appearance); the tenant is 0 before the first record
 *     tag bit 2   kernel change: a varint follows, the new kernel (< 65536); the
 *                 kernel is 0 before the first record
 *     tag bit 3   page delta: the delta varint below counts 4 KiB pages
 *     tag bit 4   next page: va = previous va + 4096, and no delta varint follows
 *                 (bits 3 and 4 are exclusive)
 *     tag bits 5-7  0
 *     then, unless bit 4, a zigzag varint: va - (the previous va of the same
 *     tenant, 0 at first), as a wrapping 64-bit difference (divided by 4096
 *     when bit 3). Per-tenant deltas keep a mix of two sequential streams as
 *     small as one: a sequential scan costs 1 byte an access, a stride within
 *     64 pages 2 bytes.
 *
 * Both forms are validated the same way on read and on write: ranges 2 MiB
 * aligned, a whole number of 2 MiB blocks, disjoint (the simulator has one
 * address space: block ids are va >> 21); every access inside a range of its
 * own tgid. sim_access.pad is not stored (read back as 0).
 *
 * Errors return a negative errno (-EINVAL malformed, -EIO/-ENOENT from the
 * file system, -ENOMEM) and put one message into the caller's @err buffer
 * (when given): "<name>:<line>: ..." for text, "<name>: byte 0x<off> ..." for
 * binary, saying what was wrong and what was expected.
 */
#ifndef GPUEXT_SIM_TRACE_IO_H
#define GPUEXT_SIM_TRACE_IO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "trace.h"
#include "workload.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SIM_TRACE_MAGIC "GXTR"
#define SIM_TRACE_VERSION 1
#define SIM_TRACE_HEADER_SIZE 24
#define SIM_TRACE_RANGE_SIZE 24
#define SIM_TRACE_MAX_RANGES 65536
#define SIM_TRACE_MAX_LINE 512

enum sim_trace_format {
	SIM_TRACE_AUTO = 0,	/* read: by magic; write: by name (*.txt = text, else binary) */
	SIM_TRACE_BINARY,
	SIM_TRACE_TEXT,
};

/* A good size for the @err buffers below. */
#define SIM_TRACE_ERR_LEN 320

/* ---- streaming ---- */

struct sim_trace_reader;

/* Opens @path (format by magic). Ranges are read and checked here. */
int sim_trace_reader__open(const char *path, struct sim_trace_reader **out, char *err,
			   size_t errlen);
/* Same over a buffer (kept by reference until __close); @name is for messages. */
int sim_trace_reader__open_mem(const void *buf, size_t len, const char *name,
			       struct sim_trace_reader **out, char *err, size_t errlen);
void sim_trace_reader__close(struct sim_trace_reader *r);
enum sim_trace_format sim_trace_reader__format(const struct sim_trace_reader *r);
size_t sim_trace_reader__ranges(const struct sim_trace_reader *r, const struct sim_range **out);
/* Accesses announced by the header (binary), or UINT64_MAX (text: unknown). */
uint64_t sim_trace_reader__count(const struct sim_trace_reader *r);
/*
 * Reads up to @max accesses. Returns how many (0 at the end), or a negative
 * errno for malformed input (the message in sim_trace_reader__error()); the
 * accesses before the bad record are returned by the calls before.
 */
long sim_trace_reader__next(struct sim_trace_reader *r, struct sim_access *buf, size_t max);
const char *sim_trace_reader__error(const struct sim_trace_reader *r);

struct sim_trace_writer;

/* Creates @path; the ranges are checked and written first. */
int sim_trace_writer__open(const char *path, enum sim_trace_format fmt,
			   const struct sim_range *ranges, size_t range_cnt,
			   struct sim_trace_writer **out, char *err, size_t errlen);
/* Writes to an open stream (binary needs it seekable: the count is patched at close). */
int sim_trace_writer__open_file(FILE *f, const char *name, enum sim_trace_format fmt,
				const struct sim_range *ranges, size_t range_cnt,
				struct sim_trace_writer **out, char *err, size_t errlen);
int sim_trace_writer__write(struct sim_trace_writer *w, const struct sim_access *acc, size_t n);
/* Finishes the file (binary: patches access_cnt); 0 or the first error (its message
 * into @err). Frees @w. */
int sim_trace_writer__close(struct sim_trace_writer *w, char *err, size_t errlen);
const char *sim_trace_writer__error(const struct sim_trace_writer *w);

/* ---- whole traces in memory (tests, small traces) ---- */

/* Owned by the caller; free with sim_trace__free(). */
struct sim_trace {
	struct sim_range *ranges;
	size_t range_cnt;
	struct sim_access *acc;
	size_t acc_cnt;
};

int sim_trace__load(const char *path, struct sim_trace *out, char *err, size_t errlen);
int sim_trace__load_mem(const void *buf, size_t len, const char *name, struct sim_trace *out,
			char *err, size_t errlen);
int sim_trace__save(const struct sim_trace *t, const char *path, enum sim_trace_format fmt,
		    char *err, size_t errlen);
/* Serialises to a malloc'd buffer (*buf, *len); free(*buf). */
int sim_trace__save_mem(const struct sim_trace *t, enum sim_trace_format fmt, void **buf,
			size_t *len, char *err, size_t errlen);
void sim_trace__free(struct sim_trace *t);

/* ---- entry points for the CLI ---- */

/* Converts @in (either form) to @out in @fmt (AUTO: by @out's name), streaming. */
int sim_trace_convert(const char *in, const char *out, enum sim_trace_format fmt, char *err,
		      size_t errlen);
/* Writes workload @spec (see sim_workload__new) as a trace. */
int sim_trace_record_workload(const char *spec, const struct sim_workload_opts *opts,
			      const char *out, enum sim_trace_format fmt, char *err,
			      size_t errlen);

#ifdef __cplusplus
}
#endif
#endif

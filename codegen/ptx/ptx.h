/* SPDX-License-Identifier: Apache-2.0 */
/*
 * codegen/ptx: verified eBPF -> LLVM IR (codegen/lift.c) -> PTX text through
 * LLVM's NVPTX backend, plus the device runtime the lifted module calls and a
 * CUDA Driver API runner (libcuda is dlopen'ed, never linked).
 *
 * Internal to libgpuext (not installed); used by the CLI, the conformance
 * plugin, tests/test_codegen_ptx.c and tools/gpu/ptx_isa_runner.c.
 * docs/ptx.md has the longer story.
 *
 * ---------------------------------------------------------------------
 * The test kernel: every module gpuext_ptx_emit() returns defines
 *
 *   .entry gpuext_isa_entry(.u64 mem, .u64 mem_len, .u64 mem_stride,
 *                           .u64 r0_out, .u32 n)
 *
 *   mem        device address of the input copies (global memory);
 *   mem_len    bytes of one copy: the program gets r1 = its copy, r2 = mem_len;
 *              mem_len == 0 gives r1 = 0, r2 = 0 (a program without input);
 *   mem_stride bytes between consecutive copies (>= mem_len, a multiple of 8);
 *   r0_out     device address of n u64: r0 of every thread;
 *   n          threads taking part: thread g = ctaid.x * ntid.x + tid.x with
 *              g >= n returns at once.
 *
 * Per-thread mode: thread g runs the program on copy g (n copies) and writes
 * r0_out[g]. Warp mode: in each warp the lowest active lane (activemask,
 * find-first-set) runs the program on copy g / 32 (ceil(n / 32) copies; use a
 * 1-D block whose size is a multiple of 32); r0 is broadcast with
 * shfl.sync.idx to the active lanes, and every lane writes r0_out[g].
 *
 * Module globals the host fills (cuModuleGetGlobal) before a launch:
 *   gpuext_rt_maps          struct gpuext_ptx_map_desc[max(1, map count)], indexed
 *                           like gpuext_prog__map(); zero = "no map" (helpers fail)
 *   gpuext_rt_prandom_seed  u64 mixed into bpf_get_prandom_u32()
 *   gpuext_rt_vars          struct gpuext_ptx_var[GPUEXT_PTX_MAX_VARS]
 *                           (only when the program uses ld_imm64 src=3)
 *
 * Device runtime (helpers are `i64 gpuext_rt_helper_<id>(5 x i64)`, as the
 * lifter's contract in codegen/codegen.h says):
 *   1 map_lookup_elem, 2 map_update_elem, 3 map_delete_elem: array and per-CPU
 *     array maps in device memory (a per-CPU slot is %smid % nr_slots), hash
 *     maps (and LRU hash maps, without eviction) in the layout below; other
 *     kinds: lookup gives NULL, update/delete -EOPNOTSUPP;
 *   5 ktime_get_ns: %globaltimer (ns); 8 get_smp_processor_id: %smid;
 *   7 get_prandom_u32: xorshift64* over (seed, global thread id, %clock64);
 *   130..134 ringbuf_output/reserve/submit/discard/query on a ring in device
 *     memory, split into shards (struct gpuext_ptx_ringbuf_hdr + data each,
 *     below); a warp uses one of its SM's shards; lock-free reserve by CAS
 *     (device scope), records never wrap (a discarded padding record fills
 *     the tail), a full shard (or a record larger than a shard) counts a drop
 *     in its own counter (after the headers: gpuext_ptx_rb_drops_off());
 *   every other helper id: returns -EOPNOTSUPP (-95) (e.g. trace_printk);
 *   every kfunc (gpuext_rt_kfunc_<name>): returns -EINVAL (-22): kfuncs advise a
 *     host driver and have no meaning on a GPU; the stub only lets the PTX build.
 *   0x1100.. device helpers below (also registered for the verifier by
 *     the device helpers every runtime declares, core/helpers.c).
 */
#ifndef GPUEXT_CODEGEN_PTX_H
#define GPUEXT_CODEGEN_PTX_H

/* Ring shards a warp of one SM may reserve in (the shard choice below). */
#define GPUEXT_PTX_RB_SHARDS_PER_SM 8

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpuext/gpuext.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PTX ISA version put in every module: 8.0 (CUDA 12.0+ drivers JIT it; ptxas 13 takes it). */
#define GPUEXT_PTX_ISA_FEATURE "+ptx80"
#define GPUEXT_PTX_DEFAULT_SM "sm_80"
/* Name of the test kernel and of the lifted entry inside the module. */
#define GPUEXT_PTX_KERNEL "gpuext_isa_entry"
#define GPUEXT_PTX_PROG_FN "gpuext_prog_main"

/* The device helpers (enum gpuext_dev_helper) are declared by every runtime (core/helpers.c). */

/* One map as the device sees it (entry of gpuext_rt_maps). 40 bytes. */
struct gpuext_ptx_map_desc {
	uint64_t base;		/* device address: values (array) or shard 0's ring data */
	uint64_t aux;		/* ringbuf: device address of the headers and drop counters (below) */
	uint32_t type;		/* BPF_MAP_TYPE_*; 0: no map */
	uint32_t key_size;
	uint32_t value_size;
	uint32_t max_entries;	/* ringbuf: data bytes of ONE shard, a power of 2 */
	uint32_t stride;	/* bytes between values: value_size rounded up to 8, but
				 * 4 for an array of 4-byte values in the probes' layout
				 * (gpuext_ptx_probe_stride) */
	uint32_t nr_slots;	/* per-CPU array: values per key (>= 1); ringbuf: shards,
				 * a power of 2 (1: one ring); else 1 */
};

/*
 * The stride of a map's values on the device for the probes (hal/nvidia:
 * ptx_probe.c compiles it in, nv_maps.c lays the map out by it): value_size
 * rounded up to 8, as the host's maps, but an array (or per-CPU array) of
 * 4-byte values packs them 4 apart. threadhist's 32-bit counters then take
 * half the lines (an H200's stencil: 1.0365-1.0377x with 8-byte slots,
 * 1.0349x with 4-byte ones, 60 pairs in one process); a 4-byte value cannot
 * take an 8-byte access, so none is misaligned. The host's shared-memory map
 * keeps its 8-byte stride: nv_maps.c converts.
 */
static inline uint32_t gpuext_ptx_probe_stride(uint32_t type, uint32_t value_size)
{
	if ((type == 2 /* BPF_MAP_TYPE_ARRAY */ || type == 6 /* BPF_MAP_TYPE_PERCPU_ARRAY */) &&
	    value_size == 4)
		return 4;
	return (value_size + 7u) & ~7u;
}

/*
 * A ring buffer on the device: nr_slots (a power of 2) independent shards of
 * max_entries bytes each, the map's declared size being max_entries x
 * nr_slots. Shard k has header aux + 32 k (the headers are contiguous), drop
 * counter aux + gpuext_ptx_rb_drops_off(nr_slots) + 8 k and data
 * base + k x max_entries. A thread reserves in shard
 * (%smid x GPUEXT_PTX_RB_SHARDS_PER_SM + ((%warpid + %ctaid.x) mod
 * GPUEXT_PTX_RB_SHARDS_PER_SM)) & (nr_slots - 1): the warps of one SM use
 * up to 8 shards, so CAS on prod and the drop counter are spread instead of
 * one hot address per SM (16 warps of an SM taking turns on one CAS made
 * memtrace 8.5x on a 2^16-element kernel, H100; 4 shards an SM 4.2x, 8
 * 3.3x); %ctaid.x spreads blocks whose warp 0s sit in the same warp slot.
 * Probes that all run in warp 0 only (probe/EVENT/warp0, kernelretsnoop)
 * leave %warpid out: (%smid x 8 + %ctaid.x mod 8) & (nr_slots - 1).
 * A record must fit one shard (size + 8 <= max_entries), and since records
 * never wrap, an empty shard takes it from any position only if it holds
 * 2 (size + 8) - 8 bytes: the NVIDIA host sizes the shards so, by the
 * largest record the probes write (gpuext_map__ring_max_record). nr_slots = 1 is one plain ring (what
 * gpuext_ptx_map_image() and gpuext_ptx_device__run() use); the NVIDIA
 * probes (hal/nvidia/nv_maps.c) pick more for rings of 16 KiB and up.
 *
 * In a shard, records start 8-aligned at data + (pos & (max_entries - 1))
 * with the kernel's 8-byte header (u32 len | BUSY << 31 | DISCARD << 30, u32
 * 0) and never wrap: a discarded record pads the tail when needed. The
 * header is stored BUSY at reserve (a plain store) and flipped at commit by
 * a release XOR after the payload, so a reader that sees a committed header
 * sees the whole record. A header of 0 is "reserved, not yet written": the
 * consumer zeroes what it consumed before it moves cons. A reader of the
 * whole ring gets records in order within a shard only; shards are read
 * one after the other, so order across shards (and SMs) is not kept.
 *
 * bpf_ringbuf_query(): AVAIL_DATA, CONS_POS, PROD_POS of the caller's shard;
 * RING_SIZE of the whole ring (max_entries x nr_slots).
 */
struct gpuext_ptx_ringbuf_hdr {
	uint64_t prod;		/* producer position in the shard (reserve: CAS) */
	uint64_t cons;		/* consumer position in the shard (host) */
	uint64_t spare;		/* 0, unused: the drop counters have their own lines (below) */
	uint64_t full_mark;	/* when a writer last saw the shard full, and for what size (below) */
};

/*
 * aux holds the nr_slots headers, then (from the next 128-byte line) one
 * u64 per shard: the records the shard refused for lack of space. They
 * used to sit in the header: every drop was then an atomic on the line a
 * writer's first look reads through the SM's L1, and it cost that copy
 * (kernelretsnoop on a 1.6 ms stencil, every block dropping: 1.115x with the
 * counter in the header, 1.077x without; H100, hand-edited PTX side by side).
 */
static inline size_t gpuext_ptx_rb_drops_off(uint32_t nr_slots)
{
	size_t h = (size_t)(nr_slots ? nr_slots : 1) * sizeof(struct gpuext_ptx_ringbuf_hdr);

	return (h + 127) & ~(size_t)127;
}

/* Bytes of a ring's aux block: headers and drop counters. */
static inline size_t gpuext_ptx_rb_aux_bytes(uint32_t nr_slots)
{
	return gpuext_ptx_rb_drops_off(nr_slots) + (size_t)(nr_slots ? nr_slots : 1) * 8;
}

/*
 * How long a writer trusts a shard's full_mark (below), read through a
 * possibly stale copy of its header (the SM's L1): past it, or with no mark
 * for its size, a shard it sees full is read again at device scope
 * (ptx_runtime.c, gx.rb_reserve_n). It bounds the records dropped after the
 * host drained a full shard: for up to this long after a drain the writers
 * holding an old copy of the mark still drop (the mirror
 * drains every 100 ms, and the app thread's drains are held to 1% of its
 * time, so that is about 1% of a ring's delivery at most). Each such re-read
 * is an L2 round trip at a kernel's exit: at 32 us they cost the stencil above
 * 1.8 points more than at 262 us, and 262 us against 1 ms cost kernelretsnoop
 * 0.45 points on the decode step and 0.27 on the stencil (1.0295 / 1.0287
 * against 1.0250 / 1.0260, 10 interleaved rounds, H100).
 */
#define GPUEXT_PTX_RB_FULL_NS 1048576

/*
 * full_mark, one word so that it is read and written whole: bits 63..32 hold
 * %globaltimer >> GPUEXT_PTX_RB_MARK_SHIFT (ticks of 1.024 us, modulo 2^32:
 * they wrap every 73 minutes, and an age is their difference modulo 2^32),
 * bits 31..0 the bytes the writer that saw the shard full asked for (a group
 * of records in per-thread mode; never 0, so 0 is "no mark"). A writer's
 * first look reads the mark alone, and drops at once when the mark is under
 * GPUEXT_PTX_RB_FULL_TICKS old and for no more bytes than it asks: on a full
 * ring that is one L1 hit and a compare per drop. A smaller request goes on
 * to read prod and cons, so the records that still fit are taken. The host
 * clears the mark when it moves cons (nv_maps.c), so a writer that reads the
 * header after a drain does not drop by it.
 */
#define GPUEXT_PTX_RB_MARK_SHIFT 10
#define GPUEXT_PTX_RB_FULL_TICKS 1024
_Static_assert(GPUEXT_PTX_RB_FULL_TICKS << GPUEXT_PTX_RB_MARK_SHIFT == GPUEXT_PTX_RB_FULL_NS,
	       "the mark's window is GPUEXT_PTX_RB_FULL_NS");
_Static_assert(offsetof(struct gpuext_ptx_ringbuf_hdr, full_mark) ==
			       offsetof(struct gpuext_ptx_ringbuf_hdr, cons) + 16 &&
		       offsetof(struct gpuext_ptx_ringbuf_hdr, spare) ==
			       offsetof(struct gpuext_ptx_ringbuf_hdr, cons) + 8,
	       "the host clears spare and the mark 8 and 16 bytes past cons (nv_maps.c)");

/*
 * A hash map on the device (BPF_MAP_TYPE_HASH; LRU_HASH is placed the same
 * way but never evicts). desc.base points at one block of memory:
 *
 *   struct gpuext_ptx_hash_hdr                     16 bytes
 *   bucket[nr_buckets], each bucket_size bytes:
 *     u32 state      GPUEXT_PTX_HASH_* (EMPTY = 0, so zeroed memory is an empty table)
 *     u32 hash       gpuext_ptx_hash_key(key): FNV-1a 32 over the key bytes
 *     u8  key[round8(key_size)]
 *     u8  value[round8(value_size)]            (= desc.stride)
 *
 * nr_buckets is the power of 2 >= 2 x max_entries; a key lives in the first
 * bucket from (hash & (nr_buckets - 1)) on (linear probing, wrapping) whose
 * state is FULL and whose key matches; an EMPTY bucket ends the search.
 * count holds the live entries (at most max_entries). The device claims a
 * bucket by CAS on state (EMPTY -> BUSY), fills it, then sets FULL with
 * release order; delete turns FULL into DELETED (a tombstone that keeps its
 * key). A host reader takes FULL buckets only.
 *
 * An insert claims its bucket before it takes room (count): one that finds
 * the table full gives the bucket back (EMPTY again) and fails with -E2BIG,
 * and an insert that waited on that bucket tries it again, so probe paths
 * keep no holes. An insert racing another of the same key therefore finds
 * that key (-EEXIST with BPF_NOEXIST) whenever the first insert got in, not
 * -E2BIG from a table full of inserts in flight, as Linux does under its
 * bucket lock (tests/bpf/probe_hashcount.bpf.c). A key inserted again after
 * its delete takes back its own tombstone (DELETED -> BUSY by CAS, given
 * back DELETED on a full table), so a key keeps one bucket for the whole run
 * however often it comes and goes (ptx_isa_runner's rt_hash_churn), and a
 * key is never in two buckets. A tombstone is never given to another key:
 * that key could already be further down the probe path, and only a lock
 * would tell. So inserts of ever new keys while others are deleted can still
 * end in -E2BIG below max_entries, after about 2 x max_entries distinct keys.
 */
enum {
	GPUEXT_PTX_HASH_EMPTY = 0,
	GPUEXT_PTX_HASH_BUSY = 1,
	GPUEXT_PTX_HASH_FULL = 2,
	GPUEXT_PTX_HASH_DELETED = 3,
};
struct gpuext_ptx_hash_hdr {
	uint32_t nr_buckets;
	uint32_t bucket_size;
	uint32_t count;		/* live entries (device: atomic) */
	uint32_t max_entries;	/* copy of the map's, for host readers */
};
uint32_t gpuext_ptx_hash_key(const void *key, uint32_t key_size);
/* The geometry for a map: -EINVAL for zero sizes, -E2BIG past 64 MiB. */
int gpuext_ptx_hash_layout(uint32_t key_size, uint32_t value_size, uint32_t max_entries,
			   uint32_t *nr_buckets, uint32_t *bucket_size, size_t *bytes);
/* Host-side access to a table image (single-threaded; not while a GPU writes it). */
void *gpuext_ptx_hash_lookup(void *table, uint32_t key_size, const void *key);
int gpuext_ptx_hash_insert(void *table, uint32_t key_size, uint32_t value_size, const void *key,
			   const void *value);
/*
 * The device image of hash map @map (gpuext_ptx_map_image() gives hash maps
 * this one). The live entries of the host map are inserted; -E2BIG past 64 MiB.
 */
int gpuext_ptx_hash_image(struct gpuext_map *map, struct gpuext_ptx_map_desc *desc,
			  uint8_t **image, size_t *bytes);
/*
 * A table read back from the device (@bytes of it) into hash map @map: keys
 * the device deleted go, FULL buckets are written where new or changed (BUSY
 * ones, a claim never finished, are not entries). 0, -EBADMSG for a table
 * whose header does not fit @bytes or the map's sizes, -errno when the host
 * map refuses an update (it has the same max_entries: only on a bad table).
 */
int gpuext_ptx_hash_read_back(struct gpuext_map *map, const uint8_t *table, size_t bytes);

/* ld_imm64 src=3: the device address of variable @id. */
#define GPUEXT_PTX_MAX_VARS 16
struct gpuext_ptx_var {
	uint64_t id;
	uint64_t addr;
};

/*
 * The device image of @map: *desc filled (base and aux left 0 for the loader)
 * and *image a malloc'd copy of its contents in the device layout, *bytes long
 * (array: max_entries x stride; per-CPU array: max_entries x nr_slots x
 * stride; hash, LRU hash: gpuext_ptx_hash_image()'s table; ring buffer: *image NULL
 * = zeros, *bytes = the data size, one shard: nr_slots = 1). A loader
 * (gpuext_ptx_device__run, a PTX bundle) allocates *bytes on the device,
 * copies the image, and for a ring buffer also a zeroed
 * gpuext_ptx_ringbuf_hdr (aux). -EOPNOTSUPP for a map kind not placed on the
 * device, -E2BIG past 64 MiB.
 */
int gpuext_ptx_map_image(struct gpuext_map *map, struct gpuext_ptx_map_desc *desc,
			 uint8_t **image, size_t *bytes);

/*
 * Lifts @prog (verified) for NVPTX, links the device runtime and the test kernel
 * (per-thread or warp mode, see above), runs O2 for @sm and emits PTX text.
 * @sm: "sm_75" .. "sm_90" (NULL: sm_80). Deterministic: the same program
 * gives the same text. *text is malloc'd and NUL-terminated, *len excludes
 * the NUL. 0 or a negative errno (the reason logged through the program's runtime).
 */
int gpuext_ptx_emit(struct gpuext_prog *prog, const char *sm, bool per_thread, char **text,
		    size_t *len);

/* ------------------------------------------------------------------ */
/* Device probes: PTX functions for hal/nvidia/ptx_splice.c             */
/* ------------------------------------------------------------------ */

/* Probe events; the same numbers as enum gx_probe_event (hal/nvidia/nvprobe.h). */
enum gpuext_ptx_probe_event {
	GPUEXT_PTX_PROBE_ENTRY = 0,	/* SEC("probe/entry") */
	GPUEXT_PTX_PROBE_EXIT,		/* SEC("probe/exit") */
	GPUEXT_PTX_PROBE_LOAD,		/* SEC("probe/load") */
	GPUEXT_PTX_PROBE_STORE,		/* SEC("probe/store") */
	GPUEXT_PTX_PROBE_NR,
};

/*
 * Site guards, from the section: SEC("probe/<event>/warp0") runs in warp 0
 * of each block only, "/block0" in block (0,0,0) only, "/first" in warp 0
 * of block (0,0,0). The probe text says which guards every program of an
 * event shares ("// gpuext-site-guards E X L S", one mask per event), and
 * the splicer tests them before the site, ahead of the leader election.
 */
#define GPUEXT_PTX_GUARD_WARP0	1u	/* linear thread index in the block < 32 */
#define GPUEXT_PTX_GUARD_BLOCK0	2u	/* %ctaid == (0,0,0) */
/* Programs per event in one object. */
#define GPUEXT_PTX_MAX_PROGS	16

/*
 * The probes of @obj as PTX text to splice into an application's module.
 *
 * Every program in SEC("probe/entry"|"probe/exit"|"probe/load"|"probe/store")
 * (optionally followed by "/name") is verified as GPUEXT_PROG_DEVICE_PROBE
 * (-EPERM, logged, if the verifier rejects it) and lifted; all of them, the
 * device runtime and one gpuext_rt_maps table indexed like
 * gpuext_object__map() (every program of an object shares the object's map
 * list, so two probes naming one map use one index) form one module. For
 * each event present the text defines
 *
 *   .func gpuext_probe_<entry|exit|load|store>(.param .b64 kernel_id,
 *       .param .b64 args, .param .b64 addr, .param .b64 value, .param .b32 size)
 *
 * The function builds a struct gpuext_probe_ctx (gpuext/probe.h) from its
 * arguments and the special registers (hal/nvidia/ptx_splice.h lists each
 * field's source) and runs the programs of that event in object order with
 * r1 = ctx, r2 = sizeof(struct gpuext_probe_ctx). The programs are inlined
 * and the context is an alloca that O2 dissolves: fields no program reads
 * cost nothing. The maps' shapes (type, key and value size) are compiled in
 * (gpuext_ptx_runtime_ir_shaped), so each helper call is specialised to its
 * map; the table itself (gpuext_rt_maps) and gpuext_rt_gpu_id are in the
 * constant space (.const: ptxas reads them as constant-bank operands, no
 * load from device memory), written by the host like any global
 * (cuModuleGetGlobal + copy). Warp mode (!@per_thread): every active lane
 * calls the function; the lowest active lane (activemask & %lanemask_lt
 * == 0) runs the programs, the
 * others wait at bar.warp.sync(activemask), so call sites need no uniform
 * control flow. At exits lane 0 runs them, wherever it leaves, and nobody
 * waits (the ret follows): once per warp, however its lanes leave.
 * Per-thread mode: every calling lane runs them.
 *
 * The text starts with three comment lines: a title, "// gpuext-ptx-version
 * X.Y" and "// gpuext-ptx-target sm_NN": the PTX ISA version and target the
 * module it lands in must declare at least (the splicer raises them).
 * It has no .version/.target/.address_size lines, and every module-scope
 * name in it starts with gpuext_ (the .visible ones: gpuext_probe_*,
 * gpuext_rt_maps, gpuext_rt_prandom_seed, gpuext_rt_gpu_id, gpuext_rt_vars
 * when used). A fourth comment line, "// gpuext-ctx-words 0xMASK", says which
 * 4-byte words of the context the programs read, so the caller passes args,
 * addr and value only when they are read.
 * @sm: "sm_75".."sm_90" (NULL: sm_80); the text assembles inside a module
 * for that target or a later one. *events gets bit (1 << GPUEXT_PTX_PROBE_*)
 * for each event present. Deterministic. *text malloc'd, NUL-terminated.
 * 0, -ENOENT (no probe programs), -EPERM, -EINVAL (unknown probe/ section,
 * bad sm), or another negative errno (logged through the object's runtime).
 */
int gpuext_ptx_probe_emit(struct gpuext_object *obj, const char *sm, bool per_thread,
			  uint32_t *events, char **text, size_t *len);

/* ------------------------------------------------------------------ */
/* Running on a GPU through the CUDA Driver API (libcuda.so.1, dlopen)  */
/* ------------------------------------------------------------------ */

/* An open GPU: libcuda handle, device, primary context. One per thread of use. */
struct gpuext_ptx_device;

/*
 * Opens GPU @ordinal. -ENODEV with a message in @err (no libcuda.so.1, cuInit
 * failed, no device, ...). Never allocates device memory itself.
 */
int gpuext_ptx_device__open(int ordinal, struct gpuext_ptx_device **out, char *err,
			    size_t err_len);
void gpuext_ptx_device__close(struct gpuext_ptx_device *dev);
/* "NVIDIA H100 80GB HBM3, sm_90, driver 13.0" */
const char *gpuext_ptx_device__desc(const struct gpuext_ptx_device *dev);
/* The sm the device runs, clamped to what gpuext emits (sm_75..sm_90): "sm_90". */
const char *gpuext_ptx_device__sm(const struct gpuext_ptx_device *dev);

struct gpuext_ptx_run_opts {
	size_t sz;
	bool per_thread;	/* true: per-thread mode; false: warp mode */
	/* One block of this many threads (1..1024; warp mode: a multiple of 32).
	 * 0: 1 in per-thread mode, 32 in warp mode. */
	uint32_t threads;
	const char *sm;		/* NULL: the device's */
	uint32_t timeout_ms;	/* launch + completion; 0 = 10000 */
	/* Input memory, copied to every copy; NULL/0: r1 = 0, r2 = 0. */
	const void *mem;
	size_t mem_len;
	/* Out (optional): r0 of every thread (@threads entries) ... */
	uint64_t *r0;
	/* ... and every copy after the run (copies * mem_len bytes; copies =
	 * threads in per-thread mode, threads / 32 in warp mode). */
	void *mem_out;
	/* Write device map state back to the host maps after the run (array
	 * values that changed; ring-buffer records are output to the host ring). */
	bool sync_maps;
	/* Out: why it failed (may be NULL). */
	char *err;
	size_t err_len;
	/* Out: the PTX that ran (malloc'd, caller frees) when non-NULL. */
	char **ptx;
	/* Tests: ring buffers start at this position (prod = cons), not 0, so
	 * a run can cross 2^32 (the runtime does its in-shard arithmetic in 32 bits). */
	uint64_t rb_start;
};

/*
 * Emits @prog for the device and runs it once on @dev as @opts says. Maps of
 * the program are uploaded from their host state (array, per-CPU array,
 * hash, LRU hash, ringbuf; other kinds give -EOPNOTSUPP) and, with
 * sync_maps, read back into it (a hash map's keys the device deleted are
 * deleted). 0 or a negative errno: -ENODEV,
 * -EOPNOTSUPP, -ETIMEDOUT (the kernel did not finish: the device is then
 * unusable, close it), -EIO (a CUDA error, named in err).
 */
int gpuext_ptx_device__run(struct gpuext_ptx_device *dev, struct gpuext_prog *prog,
			   struct gpuext_ptx_run_opts *opts);

/*
 * The one-call form for `gpuext run-prog --backend ptx` and the conformance
 * plugin: opens GPU 0, runs @prog once (per-thread: one thread; warp mode:
 * one warp of 32, the leader runs it) with r1 = @mem (@len bytes, written back)
 * and stores thread 0's r0 in *r0; map state is written back to the host maps.
 * -ENODEV (logged) where there is no libcuda or GPU. For many runs open a
 * device once and use gpuext_ptx_device__run().
 */
int gpuext_ptx_run(struct gpuext_prog *prog, void *mem, size_t len, bool per_thread,
		   uint64_t *r0);

#ifdef __cplusplus
}
#endif
#endif

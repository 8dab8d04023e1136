/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hal/nvidia: device probes injected into unmodified CUDA applications.
 * Internal contracts between the pieces (not installed):
 *
 *   gpuext trace (tools/gpuext/cmd_trace.c)   loads + verifies a probe object,
 *        emits its probes as PTX (codegen/ptx/ptx_probe.c), creates the maps
 *        in shared memory, writes a *pack* into a trace directory and runs
 *        the app with LD_PRELOAD=libgpuext-nvprobe.so GPUEXT_TRACE_DIR=DIR;
 *   libgpuext-nvprobe.so (preload.c, nv_maps.c)   interposes the CUDA Driver
 *        API, takes the PTX of every module (fatbin.c), splices the pack's
 *        probes in (ptx_splice.c, cached on disk: cache.c), has the driver
 *        JIT the result, places the maps on each GPU and mirrors them into
 *        the shared-memory maps the gpuext process reads while the app runs.
 *
 * The preload library links no LLVM and no libbpf: only this folder's C
 * files, libc and (dlopen'ed) libcuda.so.1.
 */
#ifndef GPUEXT_NVPROBE_H
#define GPUEXT_NVPROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- content hashes (hash.c): SHA-256, our own implementation ---------- */

struct gx_sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t fill;
};
void gx_sha256_init(struct gx_sha256 *s);
void gx_sha256_update(struct gx_sha256 *s, const void *data, size_t len);
void gx_sha256_final(struct gx_sha256 *s, uint8_t out[32]);
void gx_sha256(const void *data, size_t len, uint8_t out[32]);
/* 64 lowercase hex digits + NUL. */
void gx_hex32(const uint8_t in[32], char out[65]);
/* The kernel id a probe sees (gpuext_probe_ctx.kernel_id): FNV-1a 64 of the
 * kernel's (mangled) name. Deterministic across processes and machines. */
uint64_t gx_kernel_id(const char *name, size_t len);

/* ---- fatbin / module images (fatbin.c) ---------------------------------- */

enum gx_image_kind {
	GX_IMAGE_PTX = 1,	/* NUL-terminated PTX text */
	GX_IMAGE_FATBIN,	/* a fatbin (magic 0xBA55ED50) or its wrapper (0x466243B1) */
	GX_IMAGE_CUBIN,		/* an ELF cubin: SASS only */
	GX_IMAGE_UNKNOWN,
};
/* What kind of image cuModuleLoadData & co. were handed (@len may be 0 = unknown). */
enum gx_image_kind gx_image_kind(const void *image, size_t len);

/*
 * The PTX inside @image (PTX text, fatbin or fatbin wrapper), for running on
 * a device of compute capability @sm (e.g. 90): the member with the highest
 * virtual arch <= @sm; compressed members are decompressed. *ptx is malloc'd,
 * NUL-terminated. -ENOENT with "SASS only: no PTX member (arches: sm_80 sm_90)"
 * in @err when there is no usable PTX; -EINVAL/-E2BIG for a malformed image
 * (what and where in @err). @image_len 0: the fatbin's own header gives it.
 */
int gx_image_ptx(const void *image, size_t image_len, unsigned sm, char **ptx,
		 size_t *ptx_len, char *err, size_t err_len);

/* ---- on-disk cache (cache.c) --------------------------------------------- */

/*
 * Key = SHA-256 over (module PTX, pack hash, target sm, driver version, the
 * splicer's version). Entries live in $GPUEXT_CACHE_DIR, else
 * $XDG_CACHE_HOME/gpuext, else ~/.cache/gpuext; written atomically (temp
 * file + rename), so concurrent processes never see half an entry.
 */
void gx_cache_key(const void *module_ptx, size_t ptx_len, const uint8_t pack_hash[32],
		  unsigned sm, int driver_version, uint8_t key[32]);
/*
 * The splicer's output version in every cache key (ptx_splice.c owns it): a
 * change in what the splicer writes for the same input bumps it. 2: entry
 * sites after the kernel's prologue; 3: the probes' table in the global
 * space where the module's constant bank has no room for it; 4: the
 * GX_SPLICE_UNTRACED line; 5: load/store sites in .func bodies; 6: code
 * hoisted from the sites to the function's start (ptx_inline.c); 7: an
 * exit in a .func body is an exit site; 8: a ret for every branch to a
 * shared one (ptx_exits.c), exit sites neither hoisted nor followed by a
 * warp barrier; 9: no warp barrier after an entry site whose body has no
 * loop (ptx_splice.c, emit_site); 10: at an exit site, an election on the
 * thread index mod 32 lets the site's hoisting go on (ptx_hoist.c); 11: a
 * flat twin after each instrumented kernel whose probes read a z register
 * (ptx_twin.c); 12: two branches of a site to one label with register-only
 * work between them become one (gx_site_merge_guards), and a branch on a
 * launch-uniform value (a map's base tested for NULL) lets hoisting go on;
 * 13: that fold also where the probes' atomics carry the L2 policy (an
 * "L2::" in the instruction's name read as a label before).
 */
#define GX_SPLICE_VERSION 13
/* The comment line a spliced module ends in when loads/stores of its .func bodies got no site. */
#define GX_SPLICE_UNTRACED "// gpuext-untraced-func-accesses"
/* "GX_SPLICE_FUNC <name>": one line per .func body given load/store sites, after the module. */
#define GX_SPLICE_FUNC "// gpuext-device-function"
/* 0 and a malloc'd copy, -ENOENT if absent, other -errno on I/O errors. */
int gx_cache_get(const uint8_t key[32], const char *suffix, void **data, size_t *len);
int gx_cache_put(const uint8_t key[32], const char *suffix, const void *data, size_t len);

/* ---- the pack: what gpuext trace hands the preload library (pack.c) ---- */

enum gx_probe_event {
	GX_PROBE_ENTRY = 0,	/* SEC("probe/entry") -> .func gpuext_probe_entry */
	GX_PROBE_EXIT,		/* SEC("probe/exit")  -> .func gpuext_probe_exit */
	GX_PROBE_LOAD,		/* SEC("probe/load")  -> .func gpuext_probe_load */
	GX_PROBE_STORE,		/* SEC("probe/store") -> .func gpuext_probe_store */
	GX_PROBE_NR,
};

/* One map of the probe object, as the preload library must place it. */
struct gx_pack_map {
	char name[64];		/* the object's map name */
	char shm[128];		/* the shared-memory map gpuext trace created (core/shm.c) */
	uint32_t type;		/* BPF_MAP_TYPE_* */
	uint32_t key_size, value_size, max_entries;
	uint32_t nr_slots;	/* per-GPU array: slots per key (per-SM/warp); else 1 */
	uint32_t max_record;	/* ring buffer: the largest record the probes write, bytes
				 * without its header (gpuext_map__ring_max_record); else 0 */
};

#define GX_PACK_MAX_MAPS 16
struct gx_pack {
	uint8_t hash[32];	/* over everything below (cache key input) */
	uint32_t events;	/* bit GX_PROBE_* set: that probe is present in ptx */
	bool per_thread;	/* false: the warp leader runs, result broadcast */
	bool no_flat_twins;	/* true: no flat twins (ptx_twin.c): one JIT per kernel, not two */
	char kernel_filter[256];	/* glob over kernel names; "" = all */
	uint32_t map_cnt;
	struct gx_pack_map maps[GX_PACK_MAX_MAPS];
	char *ptx;		/* the probes + device runtime, PTX without a module header */
	size_t ptx_len;
};

/* DIR/pack, written atomically. 0 or -errno. */
int gx_pack_write(const char *dir, const struct gx_pack *p);
/* 0 or -errno with the reason in @err (missing, truncated, bad version). */
int gx_pack_read(const char *dir, struct gx_pack *p, char *err, size_t err_len);
void gx_pack_free(struct gx_pack *p);

/*
 * Files the preload library writes into the trace directory, for gpuext
 * trace and the tools:
 *   kernels.txt   "<pid> <kernel_id 16 hex> <status> <name>" per kernel seen,
 *                 status instrumented | sass-only | filtered | error:<why>
 *   launches.bin  struct gx_launch_rec records (append; one per launch)
 *   clock-<pid>-<gpu>.txt  with GPUEXT_CLOCK_SYNC=1: "pid P gpu G offset_ns O
 *                 uncertainty_ns U rounds R cost_ns C", O = %globaltimer -
 *                 CLOCK_REALTIME on that GPU within +- U (nv_launch.c)
 */
struct gx_launch_rec {
	uint64_t host_ns;	/* CLOCK_REALTIME just before the launch call */
	uint64_t kernel_id;
	uint32_t grid[3], block[3];
	uint32_t pid, gpu;
	uint64_t seq;		/* per-process launch counter */
};

/* ---- PTX splicing (ptx_splice.c) ----------------------------------------- */

struct gx_splice_stats {
	uint32_t kernels;	/* .entry functions seen */
	uint32_t instrumented;	/* of them, spliced (filter matched) */
	uint32_t entry_sites, exit_sites, load_sites, store_sites;
	uint32_t funcs_instrumented;	/* .func bodies given load/store sites (their
					 * accesses are in load_sites/store_sites) */
	uint32_t func_accesses;	/* global/generic loads and stores in .func bodies left
				 * uninstrumented (the kernel filter leaves out one of the
				 * module's kernels): the spliced
				 * text ends in "GX_SPLICE_UNTRACED <n>" then */
	uint32_t exits_split;	/* branches to a kernel's shared ret given a ret of their own
				 * (unguarded exit probes: ptx_exits.c) */
	uint32_t flat_twins;	/* instrumented kernels given a flat twin (ptx_twin.c) */
	bool probes_in_global;	/* the module's .const data left no room for the probes' table:
				 * it went to the global space (gx_ptx_const_bytes) */
};

/*
 * An upper bound of the constant-bank bytes the module-scope .const
 * variables of PTX text @t (@n bytes) take (ptxas allows 64 KiB a module).
 */
uint64_t gx_ptx_const_bytes(const char *t, size_t n);

/*
 * Splices @pack's probes into the PTX module @ptx: the probe functions
 * inlined (ptx_inline.c) at every instrumented kernel's entry, before each
 * of its exits (ret/exit), after each global load and store (real address,
 * size, stored value), per the ABI in ptx_splice.h; when the probes trace
 * loads or stores and the kernel filter (if any) takes every kernel of the
 * module, after those of every .func
 * body too (kernel id: the function's own name's). The result is one valid
 * PTX module (the probes' text before the first function, .version raised
 * if needed).
 * Deterministic. *out malloc'd, NUL-terminated. -EINVAL with line and reason
 * in @err on PTX it cannot parse.
 */
int gx_ptx_splice(const char *ptx, size_t ptx_len, const struct gx_pack *pack, char **out,
		  size_t *out_len, struct gx_splice_stats *st, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The simulator's GPU memory model: a model of NVIDIA's stock UVM (open
 * kernel modules 575.x) for managed memory on one GPU that several processes
 * share, with the gpu_mem_ops hooks of include/gpuext/gpu_ops.h at the points
 * where the driver takes its decisions.
 *
 * What is modelled (each rule names the driver function it models, in
 * sim_mem.c / sim_prefetch.c):
 *  - managed ranges split into 2 MiB VA blocks of 512 x 4 KiB pages; the GPU
 *    holds `capacity_blocks` root chunks of 2 MiB, one per resident block;
 *  - replayable faults collected into batches of `batch_size` fault entries
 *    (or until a flush / a kernel boundary), then serviced block by block in
 *    (process, address) order;
 *  - root-chunk allocation: a free chunk, else evict the head of the unused
 *    list, else the head of the used list; a chunk goes to the used tail when
 *    allocated and when the GPU first becomes resident for its block, and
 *    never on accesses to resident pages;
 *  - the 51 % bitmap-tree prefetch, with 64 KiB fault granularity growth;
 *  - a time model: compute per access + overhead per batch + bytes/bandwidth.
 *
 * Hook points (when a memory policy is attached), per serviced batch, for
 * each faulted block in (process, address) order:
 *  1. gpu_page_prefetch(ctx, page, tree, max_region = [0, 511], region): once
 *     per faulted page of the block, ascending, as the driver's
 *     compute_prefetch_mask() calls compute_prefetch_region(); the union of
 *     the regions is prefetched, stopping once one reaches page 511. 1 = use
 *     the region set with bpf_gpu_set_prefetch_region() (clamped to
 *     max_region; none set = no prefetch for that page), 0 = the stock rule.
 *  2. if the block has no chunk: gpu_evict_prepare(ctx, used, unused) when
 *     memory is full (before the victim is taken), then gpu_block_activate
 *     (ctx, block, used) once the new chunk is at the used tail.
 *  3. gpu_block_access(ctx, block, list): once per block per batch (faults
 *     on a block coalesce in the driver's batch), after the pages moved;
 *     ctx.page_index = lowest faulted page, ctx.block.fault_count includes
 *     this batch's fault entries. 0 = stock (used tail if the GPU just became
 *     resident, else no move), 1 = the policy placed it. Unused -> used list
 *     membership is always the driver's. As in the driver (allocation and
 *     first residency both move the chunk to the used tail), a policy that
 *     places new blocks in gpu_block_activate must also return 1 here, or
 *     the stock first-residency move undoes it.
 * A missing hook or an ejected policy runs the stock rule and sends a
 * GPUEXT_EV_DEFAULT event (GPUEXT_EV_EJECT once, with the reason). Handles
 * are valid only during the call they were given in; kfuncs check them and
 * return -EINVAL (list_nth: NULL) for anything else.
 *
 * Ownership: a struct sim_mem is created by sim_mem__new() and freed by
 * sim_mem__free(); it borrows the runtime (which must outlive it) and an
 * attached policy (detach or free the sim_mem before closing the policy).
 * Not thread-safe: one thread feeds one sim_mem.
 */
#ifndef GPUEXT_SIM_MEM_H
#define GPUEXT_SIM_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Relative, so tests and tools need no extra include path. */
#include "../hal.h"
#include "trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Bits set in a 64-bit word. The library is built for baseline x86-64 (no
 * POPCNT), where __builtin_popcountll() is a libgcc call; this is inlined.
 */
static inline unsigned sim_pop64(uint64_t x)
{
	x = x - ((x >> 1) & 0x5555555555555555ULL);
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (unsigned)((x * 0x0101010101010101ULL) >> 56);
}

/* Defaults (sources in sim_mem.c, next to the code that uses them). */
#define SIM_MEM_DEFAULT_CAPACITY_BLOCKS 16384ULL	/* 32 GiB (RTX 5090) */
#define SIM_MEM_DEFAULT_GBPS 25.0			/* PCIe 4.0 x16, effective */
#define SIM_MEM_DEFAULT_BATCH 256			/* uvm_perf_fault_batch_count */
#define SIM_MEM_DEFAULT_BATCH_OVERHEAD_NS 20000ULL	/* per fault batch */
#define SIM_MEM_DEFAULT_COMPUTE_NS 1ULL			/* per access */
#define SIM_MEM_DEFAULT_PREFETCH_THRESHOLD 51		/* uvm_perf_prefetch_threshold */
#define SIM_MEM_DEFAULT_BIG_PAGE_PAGES 16		/* 64 KiB GPU big pages */

/* Options; zero fields take the defaults above. Starts with its size. */
struct sim_mem_config {
	size_t sz;
	uint64_t capacity_blocks;	/* GPU memory in 2 MiB root chunks */
	double h2d_gbps;		/* host->device bandwidth, GB/s (1e9 B/s) */
	double d2h_gbps;		/* device->host bandwidth, GB/s */
	uint32_t batch_size;		/* fault entries per serviced batch */
	uint64_t batch_overhead_ns;	/* fixed cost of servicing one batch */
	uint64_t compute_ns;		/* cost of one access (hit or fault) */
	uint32_t prefetch_threshold;	/* percent, 1..100 */
	uint32_t big_page_pages;	/* fault-granularity growth in 4 KiB pages (power of 2) */
	bool prefetch_disable;		/* uvm_perf_prefetch_enable=0 */
	bool big_page_disable;		/* no 64 KiB growth (tree sees only resident|faulted) */
	uint32_t gpu_id;
};

/* Counters for a whole run or one process. Times are modelled nanoseconds. */
struct sim_mem_stats {
	uint64_t accesses;
	uint64_t faults;		/* fault entries (accesses to non-resident pages) */
	uint64_t dup_faults;		/* of which to a page already faulted in the open batch */
	uint64_t batches;		/* serviced batches (with a fault of this process) */
	uint64_t pages_h2d, bytes_h2d;	/* migrated to the GPU (faulted + prefetched) */
	uint64_t pages_d2h, bytes_d2h;	/* migrated back (evictions + host accesses) */
	uint64_t evictions;		/* root chunks evicted (per process: its blocks) */
	uint64_t prefetched_pages;	/* migrated by prefetch, not faulted */
	uint64_t prefetch_used;		/* ... later accessed on the GPU */
	uint64_t prefetch_unused;	/* ... evicted / migrated back before any access */
	uint64_t unmapped;		/* accesses outside every managed range (ignored) */
	uint64_t time_ns;		/* = compute + fault + h2d + d2h */
	uint64_t compute_ns, fault_ns, h2d_ns, d2h_ns;
};

struct sim_mem;

int sim_mem__new(struct gpuext_runtime *rt, const struct sim_mem_config *cfg,
		 struct sim_mem **out);
void sim_mem__free(struct sim_mem *m);
/* The effective configuration (defaults filled in). */
void sim_mem__config(const struct sim_mem *m, struct sim_mem_config *out);

/*
 * A managed range (cudaMallocManaged) of @r->tgid. -EINVAL unless va and size
 * are 2 MiB multiples (size > 0); -EEXIST if it overlaps a known range.
 */
int sim_mem__add_range(struct sim_mem *m, const struct sim_range *r);

/*
 * GPU accesses, in order. An access to a non-resident page is a fault entry;
 * the open batch is serviced when it holds batch_size entries, when the
 * kernel index changes, and on sim_mem__flush(). Accesses outside every
 * range are counted (stats.unmapped) and otherwise ignored.
 */
void sim_mem__access(struct sim_mem *m, const struct sim_access *a);
void sim_mem__access_n(struct sim_mem *m, const struct sim_access *a, size_t n);
/* Services the open batch, if any. */
void sim_mem__flush(struct sim_mem *m);

/*
 * The host (CPU) touches [va, va+len): the open batch is serviced first, then
 * the GPU-resident pages there migrate back (D->H, no prefetch). A block left
 * with no GPU-resident page keeps its chunk but moves to the unused list.
 * -EINVAL if the span is not inside managed ranges.
 */
int sim_mem__host_access(struct sim_mem *m, uint64_t va, uint64_t len);

void sim_mem__stats(const struct sim_mem *m, struct sim_mem_stats *out);
/* -ENOENT if @tgid never owned a range nor accessed memory. */
int sim_mem__tgid_stats(const struct sim_mem *m, uint32_t tgid, struct sim_mem_stats *out);

/* Inspection (tests, conformance, the CLI). */
enum sim_mem_list { SIM_LIST_USED = 1, SIM_LIST_UNUSED = 2 };
/* Block ids from head (evicted first) to tail; returns the list length. */
size_t sim_mem__list_ids(const struct sim_mem *m, enum sim_mem_list which, uint64_t *ids,
			 size_t cap);
/* Pages of the block at @va resident on the GPU (bit i = page i); -ENOENT if unmanaged. */
int sim_mem__block_resident(const struct sim_mem *m, uint64_t va, uint64_t mask[8]);
uint64_t sim_mem__free_blocks(const struct sim_mem *m);

/*
 * Policies: one memory policy at a time (-EBUSY for a second); detach
 * restores the stock behaviour for the next decision. A scheduling policy
 * is kept in its slot (the runlist model is not part of this file).
 */
int sim_mem__attach(struct sim_mem *m, struct gpuext_policy *p);
int sim_mem__detach(struct sim_mem *m, enum gpuext_policy_kind kind);
/* Events at hook points (hook calls, defaults, kfuncs, evictions, prefetches). */
void sim_mem__set_event_sink(struct sim_mem *m, gpuext_hal_event_fn fn, void *user);

/*
 * The stock prefetch rule on its own (sim_prefetch.c), for tests and tools:
 * the pages the driver would prefetch for a batch whose faults on one block
 * are @faulted, given the pages already @resident. Faulted and resident pages
 * are never in @out.
 */
void sim_prefetch_stock(const uint64_t resident[8], const uint64_t faulted[8],
			unsigned threshold, unsigned big_page_pages, uint64_t out[8]);
/* The tree after 64 KiB growth: resident | faulted | big pages holding a fault. */
void sim_prefetch_tree(const uint64_t resident[8], const uint64_t faulted[8],
		       unsigned big_page_pages, uint64_t tree[8]);
/*
 * compute_prefetch_region() for one faulted page on a prepared tree: the
 * largest aligned subtree holding @page whose population exceeds
 * @threshold %. false (and no region) if none does.
 */
bool sim_prefetch_region(const uint64_t tree[8], unsigned page, unsigned threshold,
			 unsigned *first, unsigned *last);

/*
 * Parses backend config text: comma-separated key=value, keys gpu_mem
 * (bytes, K/M/G/T suffixes, rounded down to 2 MiB), blocks, h2d_gbps, d2h_gbps,
 * batch, batch_overhead_us, compute_ns, prefetch (on/off), prefetch_threshold,
 * big_page_kb (0 = off), gpu_id. -EINVAL with a message in @err otherwise.
 */
int sim_mem_config__parse(const char *text, struct sim_mem_config *cfg, char *err,
			  size_t err_len);

/* The memory model behind a device that gpuext_hal_sim.open() returned. */
struct sim_mem *gpuext_hal_sim__mem(struct gpuext_hal_device *dev);
/* The device's event-driven runlist (sim_sched.h). */
struct sim_sched_dev *gpuext_hal_sim__sched(struct gpuext_hal_device *dev);

#ifdef __cplusplus
}
#endif
#endif

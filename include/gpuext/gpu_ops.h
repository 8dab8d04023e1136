/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The gpuext policy ABI: one source of truth for BPF policies (BPF C, no
 * vmlinux.h), user space (the simulator, the CLI) and kernel modules (the
 * struct_ops types core/kernel registers).
 *
 * Policies *advise*; the driver decides. A memory policy can only reorder
 * the blocks on the lists it is handed (it never removes a block or picks a
 * victim itself) and ask for a prefetch region the driver clamps. A
 * scheduling policy sets a task group's timeslice/level and may refuse a
 * bind (admission control).
 *
 * Units: the eviction unit is a 2 MiB block; the prefetch unit a 4 KiB page
 * inside a block (512 pages). Times are nanoseconds of the driver's clock
 * (modelled time on the simulator).
 */
#ifndef GPUEXT_GPU_OPS_H
#define GPUEXT_GPU_OPS_H

#if defined(__KERNEL__)
#include <linux/types.h>
typedef u8 gx_u8;
typedef u32 gx_u32;
typedef u64 gx_u64;
#elif defined(__bpf__)
typedef unsigned char gx_u8;
typedef unsigned int gx_u32;
typedef unsigned long long gx_u64;
#else
#include <stdint.h>
typedef uint8_t gx_u8;
typedef uint32_t gx_u32;
typedef uint64_t gx_u64;
#endif

#define GPU_BLOCK_SHIFT 21
#define GPU_BLOCK_SIZE (1ULL << GPU_BLOCK_SHIFT)	/* 2 MiB */
#define GPU_PAGE_SHIFT 12
#define GPU_PAGES_PER_BLOCK 512

/* ---- memory ---- */

/* Opaque driver objects: a policy passes them to kfuncs, never dereferences them. */
#if defined(__bpf__)
/*
 * Complete (empty) types on the BPF side: libbpf matches a kfunc's argument
 * types against the kernel module's BTF, and never takes a forward
 * declaration as matching the module's real struct.
 */
struct gpu_block {};
struct gpu_list {};
struct gpu_region {};
#else
struct gpu_block;	/* one 2 MiB block of a managed range (NVIDIA: a root chunk) */
struct gpu_list;	/* an eviction list (NVIDIA: the used / unused root-chunk lists) */
struct gpu_region;	/* a prefetch region being decided (write it with a kfunc) */
#endif

/* Portable facts about one block, filled by the driver before each hook. */
struct gpu_block_info {
	gx_u64 block_id;	/* va_start >> GPU_BLOCK_SHIFT */
	gx_u64 va_start;
	gx_u64 size;		/* bytes, GPU_BLOCK_SIZE */
	gx_u32 owner_tgid;	/* process that owns the range */
	gx_u32 resident_pages;	/* pages of the block resident on the GPU, 0..512 */
	gx_u32 fault_count;	/* GPU faults on this block so far */
	gx_u32 gpu_id;
};

/* The context of every memory hook (r1 / the first argument). Read-only. */
struct gpu_mem_ctx {
	gx_u64 now_ns;
	gx_u32 gpu_id;
	gx_u32 tgid;		/* process whose access triggered the hook */
	struct gpu_block_info block;	/* the block concerned (zero in evict_prepare) */
	gx_u32 page_index;	/* faulting page within the block (access, prefetch) */
	gx_u32 is_write;	/* the access was a write */
	gx_u64 capacity_blocks;	/* GPU memory, in blocks */
	gx_u64 used_blocks;	/* blocks currently resident (allocated) */
};

/* Which pages of the block are resident / faulted in this batch (bit i = page i). */
struct gpu_page_tree {
	gx_u64 resident[GPU_PAGES_PER_BLOCK / 64];
	gx_u64 faulted[GPU_PAGES_PER_BLOCK / 64];
};

/* A page range [first_page, last_page] inside one block. */
struct gpu_page_range {
	gx_u32 first_page;
	gx_u32 last_page;
};

/*
 * Memory hooks. Return values: gpu_block_access and gpu_page_prefetch return
 * 0 = driver's default, 1 = the policy handled it; the others return 0.
 */
struct gpu_mem_ops {
	/* A block became evictable (first allocation from it). */
	int (*gpu_block_activate)(struct gpu_mem_ctx *ctx, struct gpu_block *block,
				  struct gpu_list *list);
	/* A page of the block was faulted/accessed. 0 = default LRU touch, 1 = handled. */
	int (*gpu_block_access)(struct gpu_mem_ctx *ctx, struct gpu_block *block,
				struct gpu_list *list);
	/* Before the driver takes the victim from the head of unused, then used. */
	int (*gpu_evict_prepare)(struct gpu_mem_ctx *ctx, struct gpu_list *used,
				 struct gpu_list *unused);
	/* After a fault at page_index: 0 = driver default (NVIDIA: 51 % bitmap tree),
	 * 1 = use the region the policy set with bpf_gpu_set_prefetch_region(). */
	int (*gpu_page_prefetch)(struct gpu_mem_ctx *ctx, gx_u32 page_index,
				 const struct gpu_page_tree *tree,
				 const struct gpu_page_range *max_region,
				 struct gpu_region *result_region);
	char name[16];
};

/* ---- scheduling ---- */

/* The context of every scheduling hook: one task group (NVIDIA TSG, drm_sched_entity). */
struct gpu_task_ctx {
	gx_u64 task_id;
	gx_u64 now_ns;
	gx_u32 engine;		/* engine/ring the group submits to */
	gx_u32 tgid;
	char comm[16];		/* process name */
	gx_u32 timeslice_us;	/* current (default 1024 on NVIDIA) */
	gx_u32 level;		/* current interleave level / priority, GPU_LEVEL_* */
};

enum gpu_task_attr {
	GPU_ATTR_TIMESLICE_US = 1,	/* 100 .. 100000 */
	GPU_ATTR_LEVEL = 2,		/* GPU_LEVEL_LOW .. GPU_LEVEL_HIGH */
};

enum gpu_level {
	GPU_LEVEL_LOW = 0,
	GPU_LEVEL_MEDIUM = 1,	/* NVIDIA default */
	GPU_LEVEL_HIGH = 2,
};

#define GPU_TIMESLICE_MIN_US 100
#define GPU_TIMESLICE_MAX_US 100000
#define GPU_TIMESLICE_DEFAULT_US 1024

struct gpu_sched_ops {
	/* Created (cuCtxCreate / entity init). */
	int (*task_init)(struct gpu_task_ctx *ctx);
	/* First submission; the policy may refuse it with bpf_gpu_reject_bind(). */
	int (*task_bind)(struct gpu_task_ctx *ctx);
	/* Gone: clean map state. */
	int (*task_destroy)(struct gpu_task_ctx *ctx);
	char name[16];
};

/* ---- kfuncs (declared for BPF C; implemented by each backend) ---- */
#if defined(__bpf__)
#ifndef __ksym
#define __ksym __attribute__((section(".ksyms")))
#endif
/* Reorder only: move @block to the head (evicted first) / tail (evicted last) of @list.
 * 0, or -EINVAL if the block is not on that list or the list was not given to this hook. */
extern int bpf_gpu_block_move_head(struct gpu_block *block, struct gpu_list *list) __ksym;
extern int bpf_gpu_block_move_tail(struct gpu_block *block, struct gpu_list *list) __ksym;
/* The @n-th block from the head of @list, or NULL. For walking a bounded prefix. */
extern struct gpu_block *bpf_gpu_list_nth(struct gpu_list *list, gx_u32 n) __ksym;
/* Id (va_start >> 21) of a block handle, to key maps by. */
extern gx_u64 bpf_gpu_block_id(struct gpu_block *block) __ksym;
/* Ask for pages [first, last] of the faulting block; the driver clamps to max_region. */
extern int bpf_gpu_set_prefetch_region(struct gpu_region *region, gx_u32 first_page,
				       gx_u32 last_page) __ksym;
/* Scheduling: set an attribute of the task group (only from gpu_sched_ops). */
extern int bpf_gpu_set_attr(struct gpu_task_ctx *ctx, gx_u32 attr, gx_u64 value) __ksym;
/* Refuse the bind (only from task_bind): the submission fails with -EPERM. */
extern int bpf_gpu_reject_bind(struct gpu_task_ctx *ctx) __ksym;
#endif

#endif /* GPUEXT_GPU_OPS_H */

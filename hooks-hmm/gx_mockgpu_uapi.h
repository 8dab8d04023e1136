/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The ioctl ABI of gx_mockgpu.ko (/dev/gx_mockgpu), our reference HMM device:
 * a mock GPU whose memory is a bounded pool of device-private pages in 2 MiB
 * blocks. User space (hooks-hmm/vmtests/, the scenario differential) includes
 * this header; the module includes it too, so both sides share one layout.
 *
 * Every open() is a fresh device instance (its own memory pool, lists and
 * counters, registered with gpuext.ko as "mockgpuN"); processes that inherit
 * the file through fork() share the instance, so their ranges compete for the
 * same device memory.
 *
 * Addresses: a range maps a "GPU VA" window onto the caller's anonymous
 * memory at a CPU VA (both 2 MiB aligned). Block ids, the VAs policies see
 * and every address in the ioctls below are GPU VAs; gpu_va == cpu_va unless
 * the caller asks otherwise (the scenario differential uses this to replay
 * a script's addresses, e.g. block 1 = 0x200000, wherever mmap put the
 * memory). Block id = gpu_va >> 21, page = (gpu_va >> 12) & 511.
 *
 * Fault model (mirrors hal/sim/sim_mem.c, NVIDIA UVM's replayable faults):
 * GX_IOC_ACCESS queues one fault entry per non-resident page touched; the
 * batch is serviced when it reaches batch_size entries or at GX_IOC_FLUSH:
 * sorted by (owner tgid, block id), per block the prefetch hint, a 2 MiB
 * chunk (evicting the policy's victim when memory is full), the migration
 * of faulted + prefetched pages to the device (migrate_vma), then the
 * list update / gpu_block_access. GX_IOC_DEV_READ/WRITE are device accesses
 * that carry data: they fault the pages in (one batch) and copy.
 *
 * Errors: -EINVAL bad argument (the kernel log says which), -ENXIO the
 * instance is not configured yet (GX_IOC_CONFIG first), -EBUSY configured
 * twice, -EEXIST overlapping range, -ENOENT no range covers the address,
 * -EFAULT bad user pointer, -ENOMEM.
 */
#ifndef GX_MOCKGPU_UAPI_H
#define GX_MOCKGPU_UAPI_H

#if defined(__KERNEL__)
#include <linux/ioctl.h>
#include <linux/types.h>
#else
#include <linux/types.h>
#include <sys/ioctl.h>
#endif

#define GX_MOCKGPU_PATH "/dev/gx_mockgpu"
#define GX_MOCKGPU_MAX_CAPACITY 64	/* blocks of 2 MiB per instance */
#define GX_MOCKGPU_MAX_BATCH 4096
#define GX_MOCKGPU_DEFAULT_BATCH 256	/* UVM's uvm_perf_fault_batch_count */

/* gx_config.flags */
#define GX_CFG_PREFETCH_OFF (1u << 0)	/* no default prefetch (a policy may still prefetch) */

/* GX_IOC_CONFIG: once per instance, before anything else. */
struct gx_config {
	__u32 capacity_blocks;	/* 1 .. GX_MOCKGPU_MAX_CAPACITY */
	__u32 batch_size;	/* fault entries per batch; 0 = 256 */
	__u32 flags;		/* GX_CFG_* */
	__u32 gpu_id;		/* what policies see in ctx->gpu_id */
};

/* GX_IOC_RANGE_ADD / GX_IOC_RANGE_DEL (DEL reads gpu_va only). */
struct gx_range {
	__u64 cpu_va;		/* caller's anonymous private mapping, 2 MiB aligned */
	__u64 gpu_va;		/* 0 = same as cpu_va; 2 MiB aligned */
	__u64 size;		/* multiple of 2 MiB */
	__u32 tgid;		/* owner policies see; 0 = the caller's tgid */
	__u32 pad;
};

/* gx_access.flags */
#define GX_ACC_WRITE (1u << 0)
#define GX_ACC_FLUSH (1u << 1)	/* service the batch after queueing */

/* GX_IOC_ACCESS: @count GPU accesses at gpu_va, gpu_va + step, ... */
struct gx_access {
	__u64 gpu_va;
	__u64 step;		/* bytes; 0 = 4096 */
	__u32 count;		/* 1 .. 1 << 20 */
	__u32 flags;		/* GX_ACC_* */
	__u32 tgid;		/* accessing process policies see; 0 = caller */
	__u32 faults;		/* out: fault entries queued */
};

/* GX_IOC_DEV_READ / GX_IOC_DEV_WRITE: the device reads/writes [gpu_va, +len). */
struct gx_rw {
	__u64 gpu_va;
	__u64 len;		/* 1 .. 64 MiB */
	__u64 buf;		/* user pointer (must not lie in a registered range) */
	__u32 tgid;		/* 0 = caller */
	__u32 pad;
};

/* GX_IOC_BLOCK: one block's state. */
struct gx_block_state {
	__u64 block_id;		/* in: gpu_va >> 21 */
	__u64 resident[8];	/* out: bit i = page i is in device memory */
	__u32 has_chunk;	/* out: the block holds a 2 MiB device chunk */
	__u32 resident_pages;	/* out */
	__u32 fault_count;	/* out: fault entries so far */
	__u32 owner_tgid;	/* out */
};

/* GX_IOC_LIST: a gpuext.ko list of this device, head (next victim) first. */
#define GX_LIST_USED 0
#define GX_LIST_UNUSED 1
struct gx_list {
	__u32 which;		/* GX_LIST_* */
	__u32 cap;		/* entries of ids[] */
	__u64 ids;		/* user pointer to __u64[cap] */
	__u32 count;		/* out: blocks on the list (may exceed cap) */
	__u32 pad;
};

/* GX_IOC_STATS: counters since GX_IOC_CONFIG. */
struct gx_stats {
	__u64 accesses;		/* GPU accesses (GX_IOC_ACCESS, DEV_READ/WRITE pages) */
	__u64 faults;		/* fault entries queued */
	__u64 batches;		/* batches serviced */
	__u64 pages_to_dev;	/* pages migrated to the device (faulted + prefetched) */
	__u64 pages_prefetched;	/* of those, prefetched */
	__u64 evictions;	/* blocks evicted */
	__u64 pages_evicted;	/* pages migrated back by evictions */
	__u64 cpu_faults;	/* pages migrated back by CPU faults (migrate_to_ram) */
	__u64 migrate_failed;	/* pages a migration could not move (busy, raced) */
	__u64 used_blocks;	/* chunks held now */
	__u64 capacity_blocks;
	__u64 resident_pages;	/* device pages holding data now */
};

#define GX_IOC_MAGIC 'x'
#define GX_IOC_CONFIG		_IOW(GX_IOC_MAGIC, 1, struct gx_config)
#define GX_IOC_RANGE_ADD	_IOW(GX_IOC_MAGIC, 2, struct gx_range)
#define GX_IOC_RANGE_DEL	_IOW(GX_IOC_MAGIC, 3, struct gx_range)
#define GX_IOC_ACCESS		_IOWR(GX_IOC_MAGIC, 4, struct gx_access)
#define GX_IOC_FLUSH		_IO(GX_IOC_MAGIC, 5)
#define GX_IOC_DEV_READ		_IOW(GX_IOC_MAGIC, 6, struct gx_rw)
#define GX_IOC_DEV_WRITE	_IOW(GX_IOC_MAGIC, 7, struct gx_rw)
#define GX_IOC_BLOCK		_IOWR(GX_IOC_MAGIC, 8, struct gx_block_state)
#define GX_IOC_LIST		_IOWR(GX_IOC_MAGIC, 9, struct gx_list)
#define GX_IOC_STATS		_IOR(GX_IOC_MAGIC, 10, struct gx_stats)

#endif /* GX_MOCKGPU_UAPI_H */

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The PTX device runtime: LLVM IR text linked into every lifted module before
 * optimisation, so that helpers inline into the program. It defines the
 * contract's gpuext_rt_helper_<id>, gpuext_rt_map and gpuext_rt_map_value for
 * a GPU, and the test kernel gpuext_isa_entry (ptx.h has the ABI).
 *
 * Written as IR text rather than built with the C API: it reads like the
 * device code it is, and LLVM's parser checks it. Functions the lifted module
 * must see are defined with external linkage (so the linker resolves the
 * lifted module's declarations) and internalised after linking (ptx_emit.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "maps_impl.h"
#include "ptx/ptx.h"
#include "ptx/ptx_impl.h"

#define GX_STR_(x) #x
#define GX_XSTR(x) GX_STR_(x)

_Static_assert(GPUEXT_FUNC_get_globaltimer == 4352 && GPUEXT_FUNC_get_block_id == 4357 &&
	       GPUEXT_FUNC_warp_ballot == 4358 && GPUEXT_FUNC_warp_shfl == 4360 &&
	       GPUEXT_FUNC_atomic_max == 4361,
	       "device helper ids as the IR below spells them");
/* The IR below hard-codes these (linux/bpf.h); a change would be an ABI break. */
_Static_assert(BPF_MAP_TYPE_ARRAY == 2, "array map type");
_Static_assert(BPF_MAP_TYPE_PERCPU_ARRAY == 6, "per-CPU array map type");
_Static_assert(BPF_MAP_TYPE_RINGBUF == 27, "ring buffer map type");
_Static_assert(BPF_FUNC_ringbuf_output == 130 && BPF_FUNC_ringbuf_query == 134, "ringbuf ids");
_Static_assert(sizeof(struct gpuext_ptx_map_desc) == 40, "map descriptor layout");
_Static_assert(GPUEXT_PTX_RB_SHARDS_PER_SM == 8, "the shard choice below multiplies by 8");
_Static_assert(sizeof(struct gpuext_ptx_ringbuf_hdr) == 32, "ring header layout");

/*
 * Common part. %gx.desc mirrors struct gpuext_ptx_map_desc:
 *   0 base, 1 aux, 2 type, 3 key_size, 4 value_size, 5 max_entries, 6 stride, 7 nr_slots.
 * Error values are Linux errnos: EINVAL 22, E2BIG 7, EEXIST 17, EAGAIN 11,
 * EOPNOTSUPP 95.
 */
static const char rt_common[] =
	"%gx.desc = type { i64, i64, i32, i32, i32, i32, i32, i32 }\n"
	"\n"
	"@gpuext_rt_prandom_seed = addrspace(1) externally_initialized global i64 0, align 8\n"
	"\n"
	"declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
	"declare i32 @llvm.nvvm.read.ptx.sreg.tid.y()\n"
	"declare i32 @llvm.nvvm.read.ptx.sreg.tid.z()\n"
	"declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()\n"
	"declare i32 @llvm.nvvm.read.ptx.sreg.ntid.y()\n"
	"declare i32 @llvm.nvvm.read.ptx.sreg.ntid.z()\n"
	"declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()\n"
	"declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.y()\n"
	"declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.z()\n"
	"declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()\n"
	"declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.y()\n"
	"declare i32 @llvm.nvvm.read.ptx.sreg.laneid()\n"
	"declare i32 @llvm.nvvm.read.ptx.sreg.smid()\n"
	"declare i32 @llvm.nvvm.read.ptx.sreg.warpid()\n"
	"declare i64 @llvm.nvvm.read.ptx.sreg.globaltimer()\n"
	"declare i64 @llvm.nvvm.read.ptx.sreg.clock64()\n"
	"declare i32 @llvm.nvvm.activemask()\n"
	"declare i32 @llvm.nvvm.shfl.sync.idx.i32(i32, i32, i32, i32)\n"
	"declare i32 @llvm.cttz.i32(i32, i1)\n"
	"declare i1 @llvm.is.constant.i1(i1)\n"
	"declare ptr @llvm.ptrmask.p0.i64(ptr, i64)\n"
	"declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)\n"
	"\n"
	/* Linear thread index inside the block, block index inside the grid, global id. */
	"define internal i32 @gx.thread_id() {\n"
	"  %x = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
	"  %y = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()\n"
	"  %z = call i32 @llvm.nvvm.read.ptx.sreg.tid.z()\n"
	"  %nx = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()\n"
	"  %ny = call i32 @llvm.nvvm.read.ptx.sreg.ntid.y()\n"
	"  %zy = mul i32 %z, %ny\n"
	"  %zyy = add i32 %zy, %y\n"
	"  %r0 = mul i32 %zyy, %nx\n"
	"  %r = add i32 %r0, %x\n"
	"  ret i32 %r\n"
	"}\n"
	"define internal i32 @gx.block_id() {\n"
	"  %x = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()\n"
	"  %y = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.y()\n"
	"  %z = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.z()\n"
	"  %nx = call i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()\n"
	"  %ny = call i32 @llvm.nvvm.read.ptx.sreg.nctaid.y()\n"
	"  %zy = mul i32 %z, %ny\n"
	"  %zyy = add i32 %zy, %y\n"
	"  %r0 = mul i32 %zyy, %nx\n"
	"  %r = add i32 %r0, %x\n"
	"  ret i32 %r\n"
	"}\n"
	"define internal i64 @gx.global_id() {\n"
	"  %b = call i32 @gx.block_id()\n"
	"  %t = call i32 @gx.thread_id()\n"
	"  %nx = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()\n"
	"  %ny = call i32 @llvm.nvvm.read.ptx.sreg.ntid.y()\n"
	"  %nz = call i32 @llvm.nvvm.read.ptx.sreg.ntid.z()\n"
	"  %nxy = mul i32 %nx, %ny\n"
	"  %n = mul i32 %nxy, %nz\n"
	"  %b64 = zext i32 %b to i64\n"
	"  %n64 = zext i32 %n to i64\n"
	"  %t64 = zext i32 %t to i64\n"
	"  %bn = mul i64 %b64, %n64\n"
	"  %g = add i64 %bn, %t64\n"
	"  ret i64 %g\n"
	"}\n"
	"\n"
	/* ---- maps: the descriptor table and the contract's accessors ---- */
	"define ptr @gpuext_rt_map(i32 %idx) {\n"
	"  %i = zext i32 %idx to i64\n"
	"  %p = getelementptr inbounds %gx.desc, ptr addrspace(1) @gpuext_rt_maps, i64 %i\n"
	"  %g = addrspacecast ptr addrspace(1) %p to ptr\n"
	"  ret ptr %g\n"
	"}\n"
	"define ptr @gpuext_rt_map_value(i32 %idx, i32 %off) {\n"
	"  %i = zext i32 %idx to i64\n"
	"  %p = getelementptr inbounds %gx.desc, ptr addrspace(1) @gpuext_rt_maps, i64 %i\n"
	"  %base = load i64, ptr addrspace(1) %p, align 8\n"
	"  %o = zext i32 %off to i64\n"
	"  %a = add i64 %base, %o\n"
	"  %r = inttoptr i64 %a to ptr\n"
	"  ret ptr %r\n"
	"}\n"
	"\n"
	/* Element of an array / per-CPU array map for the u32 key at %kaddr, or null. */
	"define internal ptr @gx.array_elem(ptr %d, i64 %kaddr) {\n"
	"entry:\n"
	"  %tp = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 2\n"
	"  %type = load i32, ptr %tp, align 4\n"
	"  %isa = icmp eq i32 %type, 2\n"
	"  %isp = icmp eq i32 %type, 6\n"
	"  %ok = or i1 %isa, %isp\n"
	"  br i1 %ok, label %arr, label %none\n"
	"arr:\n"
	"  %kp = inttoptr i64 %kaddr to ptr\n"
	"  %key = load i32, ptr %kp, align 1\n"
	"  %mp = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 5\n"
	"  %max = load i32, ptr %mp, align 4\n"
	"  %in = icmp ult i32 %key, %max\n"
	"  br i1 %in, label %hit, label %none\n"
	"hit:\n"
	/*
	 * The base as a pointer and the element as an inbounds GEP on it: LLVM
	 * then knows the element is NULL only where the base is, and the
	 * program's test of what the lookup returned is the base's test alone
	 * (it tested base + offset too: one compare and one or a site, ~0.1-0.25
	 * points of threadhist on an H200's stencil).
	 */
	"  %basep = load ptr, ptr %d, align 8\n"
	/*
	 * A table the host never filled (a context it could not set up: "its
	 * probes see no maps") has base 0: NULL, not key x stride. With
	 * max_entries compiled in, the bounds check no longer says so.
	 */
	"  %unplaced = icmp eq ptr %basep, null\n"
	"  br i1 %unplaced, label %none, label %addr\n"
	"addr:\n"
	"  %sp = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 6\n"
	"  %stride = load i32, ptr %sp, align 4\n"
	"  %np = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 7\n"
	"  %n0 = load i32, ptr %np, align 4\n"
	"  %nz = icmp eq i32 %n0, 0\n"
	"  %n = select i1 %nz, i32 1, i32 %n0\n"
	"  %sm = call i32 @llvm.nvvm.read.ptx.sreg.smid()\n"
	"  %slot = urem i32 %sm, %n\n"
	"  %slot1 = select i1 %isp, i32 %slot, i32 0\n"
	"  %n1 = select i1 %isp, i32 %n, i32 1\n"
	"  %k64 = zext i32 %key to i64\n"
	"  %n64 = zext i32 %n1 to i64\n"
	"  %s64 = zext i32 %slot1 to i64\n"
	"  %kn = mul i64 %k64, %n64\n"
	"  %idx = add i64 %kn, %s64\n"
	"  %st64 = zext i32 %stride to i64\n"
	"  %off = mul i64 %idx, %st64\n"
	"  %r = getelementptr inbounds i8, ptr %basep, i64 %off\n"
	"  ret ptr %r\n"
	"none:\n"
	"  ret ptr null\n"
	"}\n"
	"\n"
	/* 1: bpf_map_lookup_elem(map, key) */
	"define i64 @gpuext_rt_helper_1(i64 %m, i64 %k, i64 %a3, i64 %a4, i64 %a5) {\n"
	"entry:\n"
	"  %d = inttoptr i64 %m to ptr\n"
	"  %ish = call i1 @gx.is_hash(ptr %d)\n"
	"  br i1 %ish, label %hash, label %arr\n"
	"hash:\n"
	"  %kp = inttoptr i64 %k to ptr\n"
	"  %hv = call i64 @gx.hash_lookup(ptr %d, ptr %kp)\n"
	"  ret i64 %hv\n"
	"arr:\n"
	"  %e = call ptr @gx.array_elem(ptr %d, i64 %k)\n"
	"  %r = ptrtoint ptr %e to i64\n"
	"  ret i64 %r\n"
	"}\n"
	/* 2: bpf_map_update_elem(map, key, value, flags), the host's checks in its order */
	"define i64 @gpuext_rt_helper_2(i64 %m, i64 %k, i64 %v, i64 %flags, i64 %a5) {\n"
	"entry:\n"
	"  %d = inttoptr i64 %m to ptr\n"
	"  %ish = call i1 @gx.is_hash(ptr %d)\n"
	"  br i1 %ish, label %hash, label %arr\n"
	"hash:\n"
	"  %hk = inttoptr i64 %k to ptr\n"
	"  %hvp = inttoptr i64 %v to ptr\n"
	"  %hr = call i64 @gx.hash_update(ptr %d, ptr %hk, ptr %hvp, i64 %flags)\n"
	"  ret i64 %hr\n"
	"arr:\n"
	"  %tp = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 2\n"
	"  %type = load i32, ptr %tp, align 4\n"
	"  %isa = icmp eq i32 %type, 2\n"
	"  %isp = icmp eq i32 %type, 6\n"
	"  %ok = or i1 %isa, %isp\n"
	"  br i1 %ok, label %flags1, label %unsupp\n"
	"flags1:\n"
	"  %bad = icmp ugt i64 %flags, 2\n"
	"  br i1 %bad, label %einval, label %flags2\n"
	"flags2:\n"
	"  %noexist = icmp eq i64 %flags, 1\n"
	"  br i1 %noexist, label %eexist, label %find\n"
	"find:\n"
	"  %e = call ptr @gx.array_elem(ptr %d, i64 %k)\n"
	"  %miss = icmp eq ptr %e, null\n"
	"  br i1 %miss, label %e2big, label %copy\n"
	"copy:\n"
	"  %vsp = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 4\n"
	"  %vs = load i32, ptr %vsp, align 4\n"
	"  %vs64 = zext i32 %vs to i64\n"
	"  %src = inttoptr i64 %v to ptr\n"
	"  call void @llvm.memcpy.p0.p0.i64(ptr align 1 %e, ptr align 1 %src, i64 %vs64, i1 false)\n"
	"  ret i64 0\n"
	"einval:\n"
	"  ret i64 -22\n"
	"eexist:\n"
	"  ret i64 -17\n"
	"e2big:\n"
	"  ret i64 -7\n"
	"unsupp:\n"
	"  ret i64 -95\n"
	"}\n"
	/* 3: bpf_map_delete_elem: hash entries are deleted; array entries cannot be; other
	 * maps are not on the device */
	"define i64 @gpuext_rt_helper_3(i64 %m, i64 %k, i64 %a3, i64 %a4, i64 %a5) {\n"
	"entry:\n"
	"  %d = inttoptr i64 %m to ptr\n"
	"  %ish = call i1 @gx.is_hash(ptr %d)\n"
	"  br i1 %ish, label %hash, label %arr\n"
	"hash:\n"
	"  %hk = inttoptr i64 %k to ptr\n"
	"  %hr = call i64 @gx.hash_delete(ptr %d, ptr %hk)\n"
	"  ret i64 %hr\n"
	"arr:\n"
	"  %tp = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 2\n"
	"  %type = load i32, ptr %tp, align 4\n"
	"  %isa = icmp eq i32 %type, 2\n"
	"  %isp = icmp eq i32 %type, 6\n"
	"  %ok = or i1 %isa, %isp\n"
	"  %r = select i1 %ok, i64 -22, i64 -95\n"
	"  ret i64 %r\n"
	"}\n"
	/* 5: bpf_ktime_get_ns */
	"define i64 @gpuext_rt_helper_5(i64 %a1, i64 %a2, i64 %a3, i64 %a4, i64 %a5) {\n"
	"  %t = call i64 @llvm.nvvm.read.ptx.sreg.globaltimer()\n"
	"  ret i64 %t\n"
	"}\n"
	/* 7: bpf_get_prandom_u32: xorshift64* of (seed, thread, clock): no state to keep per thread */
	"define i64 @gpuext_rt_helper_7(i64 %a1, i64 %a2, i64 %a3, i64 %a4, i64 %a5) {\n"
	"  %seed = load volatile i64, ptr addrspace(1) @gpuext_rt_prandom_seed, align 8\n"
	"  %g = call i64 @gx.global_id()\n"
	"  %c = call i64 @llvm.nvvm.read.ptx.sreg.clock64()\n"
	"  %gm = mul i64 %g, -7046029254386353131\n"	/* 0x9e3779b97f4a7c15 */
	"  %cm = mul i64 %c, -3372029247567499371\n"	/* 0xd1342543de82ef95 */
	"  %x0 = xor i64 %seed, %gm\n"
	"  %x1 = xor i64 %x0, %cm\n"
	"  %s1 = lshr i64 %x1, 12\n"
	"  %x2 = xor i64 %x1, %s1\n"
	"  %s2 = shl i64 %x2, 25\n"
	"  %x3 = xor i64 %x2, %s2\n"
	"  %s3 = lshr i64 %x3, 27\n"
	"  %x4 = xor i64 %x3, %s3\n"
	"  %m = mul i64 %x4, 2685821657736338717\n"	/* 0x2545f4914f6cdd1d */
	"  %r = lshr i64 %m, 32\n"
	"  ret i64 %r\n"
	"}\n"
	/* 8: bpf_get_smp_processor_id: the SM */
	"define i64 @gpuext_rt_helper_8(i64 %a1, i64 %a2, i64 %a3, i64 %a4, i64 %a5) {\n"
	"  %s = call i32 @llvm.nvvm.read.ptx.sreg.smid()\n"
	"  %r = zext i32 %s to i64\n"
	"  ret i64 %r\n"
	"}\n"
	"\n"
	/* ---- ring buffer ---- */
	/*
	 * A ring is nr_slots shards (ptx.h); a warp's is chosen from %smid,
	 * %warpid and %ctaid.x (ptx.h), so warps do not all CAS one address
	 * (%warpid left out where only warp 0 of a block runs probes: below,
	 * gpuext_ptx_runtime_ir_shaped).
	 * Every atomic is device (gpu) scope: the ring is in device memory and
	 * the host only touches it between copies on its own stream, never
	 * through a shared mapping.
	 */
	"define internal i64 @gx.rb_shard(ptr %d) {\n"
	"  %np = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 7\n"
	"  %n = load i32, ptr %np, align 4\n"
	"  %n0 = icmp eq i32 %n, 0\n"
	"  %n1 = select i1 %n0, i32 1, i32 %n\n"	/* 0 reads as one shard */
	"  %mask = sub i32 %n1, 1\n"
	"  %sm = call i32 @llvm.nvvm.read.ptx.sreg.smid()\n"
	"  %wp = call i32 @llvm.nvvm.read.ptx.sreg.warpid()\n"
	"  %cx = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()\n"
	"  %sub0 = add i32 %wp, %cx\n"
	"  %sub = and i32 %sub0, 7\n"	/* GPUEXT_PTX_RB_SHARDS_PER_SM - 1 */
	"  %sm4 = shl i32 %sm, 3\n"
	"  %k = or i32 %sm4, %sub\n"
	"  %s = and i32 %k, %mask\n"
	"  %r = zext i32 %s to i64\n"
	"  ret i64 %r\n"
	"}\n"
	/*
	 * Reserves %n records of %size bytes each, contiguous, in this SM's shard,
	 * and marks each BUSY: the data address of the first, or 0 (a full shard
	 * counts %n drops in its own counter). @gx.rb_reserve (below, per mode)
	 * calls it for one record or for a warp's group.
	 */
	"define internal i64 @gx.rb_reserve_n(ptr %d, i64 %size, i64 %n, i1 %count) {\n"
	"entry:\n"
	"  %tp = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 2\n"
	"  %type = load i32, ptr %tp, align 4\n"
	"  %isrb = icmp eq i32 %type, 27\n"
	"  br i1 %isrb, label %chk, label %fail\n"
	"chk:\n"
	"  %cp = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 5\n"
	"  %cap32 = load i32, ptr %cp, align 4\n"
	"  %cap = zext i32 %cap32 to i64\n"
	/*
	 * A size the header cannot hold, or a ring the host did not place
	 * (capacity 0), fails; a record larger than a shard is a drop (below).
	 */
	"  %nz = icmp ne i64 %size, 0\n"
	"  %small = icmp ule i64 %size, 1073741823\n"
	"  %placed = icmp ne i64 %cap, 0\n"
	"  %ok0 = and i1 %nz, %small\n"
	"  %ok = and i1 %ok0, %placed\n"
	"  br i1 %ok, label %go, label %fail\n"
	"go:\n"
	"  %base = load i64, ptr %d, align 8\n"
	"  %ap = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 1\n"
	"  %aux = load i64, ptr %ap, align 8\n"
	"  %sh = call i64 @gx.rb_shard(ptr %d)\n"
	"  %hoff = shl i64 %sh, 5\n"	/* 32-byte headers */
	"  %ha = add i64 %aux, %hoff\n"
	"  %hdr = inttoptr i64 %ha to ptr\n"
	"  %doff = mul i64 %sh, %cap\n"
	"  %data = add i64 %base, %doff\n"
	"  %consp = getelementptr inbounds i8, ptr %hdr, i64 8\n"
	/* The drop counter: its own line, after the headers (gpuext_ptx_rb_drops_off). */
	"  %nsp = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 7\n"
	"  %ns32 = load i32, ptr %nsp, align 4\n"
	"  %ns0 = icmp eq i32 %ns32, 0\n"
	"  %ns1 = select i1 %ns0, i32 1, i32 %ns32\n"
	"  %dropa = call i64 @gx.rb_drop_addr(i64 %aux, i32 %ns1, i64 %sh)\n"
	"  %t0 = add i64 %size, 15\n"
	"  %tot1 = and i64 %t0, -8\n"
	"  %tot = mul i64 %tot1, %n\n"	/* the whole group's bytes */
	"  %mask = sub i64 %cap, 1\n"
	"  %gfits = icmp ule i64 %tot, %cap\n"
	"  br i1 %gfits, label %first, label %drop\n"
	/*
	 * The loop reads relaxed and takes the producer a failed CAS returns;
	 * the CAS is an acquire (ptxas: an L1 invalidation after it), which keeps
	 * the record's stores after it. Formally an acquire RMW does not order
	 * the earlier relaxed load of cons before them, as the removed fence
	 * did; what keeps them after the consumer's zeroing is that they depend
	 * on the CAS, the CAS on cons through a branch, and a GPU does not
	 * speculate stores. The NVIDIA host zeroes and moves cons with a kernel of
	 * its own (hal/nvidia/nv_maps.c, gpuext_ring_tidy): every thread's zero
	 * stores, bar.sync, then membar.gl and the cons store by one thread, so
	 * a writer that sees the new cons sees the zeros before it; without that
	 * kernel, copies in stream order put the zeroing first. An acq_rel CAS put
	 * a MEMBAR in every retry (eight warps of an SM retried ~13 times each,
	 * ncu, H100); a relaxed one with an acquire fence after the winner cost
	 * a MEMBAR.ALL.GPU per record: it waits for every store the warp has in
	 * flight (launchlate on the decode step 1.071x with it, 1.054x without;
	 * kernelretsnoop 1.157x, 1.126x).
	 */
	/*
	 * The first look is a block-scope load (ld.relaxed.cta: atomic, so no
	 * data race, yet the SM's L1 may answer it from an old copy, which
	 * device scope forbids). It reads the header's full_mark alone first
	 * (ptx.h): a mark under GPUEXT_PTX_RB_FULL_NS old, left by a writer that
	 * saw the shard full at device scope for no more bytes than this one
	 * asks, is a drop at once: on a saturated ring that is one L1 hit and a
	 * compare, not three loads and the space arithmetic (kernelretsnoop with
	 * its ring full, stencil / decode, H200, ptxab side by side in one
	 * process: 1.035 / 1.037 -> 1.026 / 1.032; memtrace at 2^22 in the
	 * bench: 3.24x -> 2.95x on the H200, 2.81x -> 2.52x on the H100). A
	 * mark for more bytes than this writer asks (a per-thread group's) does
	 * not drop it: the lanes that try alone after their group did not fit
	 * still take the records that fit. Otherwise prod and cons, block scope
	 * too: a stale prod only fails the CAS, which returns the current one; a
	 * stale cons is smaller than the current one, so space it calls free is
	 * free. Only "full" needs care: a shard seen full through an old copy
	 * may have been drained since. So a full shard seen that way is read
	 * again at device scope, and one still full gets a new mark for this
	 * writer's bytes, which the writers after it drop by. (Until the
	 * nineteenth session a full look was trusted while the stamp was
	 * recent, whatever size had failed.) That re-read is relaxed: an
	 * acquire also invalidates the SM's whole L1, the kernel's own data
	 * with it (kernelretsnoop on a stencil whose every block drops, H100:
	 * 1.077x with an acquire, 1.070x relaxed). A saturated ring then costs a
	 * drop an L1 hit, not an L2 round trip, at the price of dropping for up
	 * to that long after the host drained it: the host clears the mark as
	 * it moves cons, so those are the writers that hold an old copy of the
	 * line, and all writers only where a mark from a device-scope look at
	 * the old cons lands just after the clear (a race of about a
	 * microsecond, bounded by the window too). The drop counter is on a
	 * line of its own (ptx.h), so counting a drop leaves the header's L1
	 * copy alone.
	 */
	"first:\n"
	"  %fullp = getelementptr inbounds i8, ptr %hdr, i64 24\n"
	"  %mark = load atomic i64, ptr %fullp syncscope(\"block\") monotonic, align 8\n"
	"  %now0 = call i64 @llvm.nvvm.read.ptx.sreg.globaltimer()\n"
	"  %tk64 = lshr i64 %now0, " GX_XSTR(GPUEXT_PTX_RB_MARK_SHIFT) "\n"
	"  %tk = trunc i64 %tk64 to i32\n"
	"  %mhi = lshr i64 %mark, 32\n"
	"  %mtk = trunc i64 %mhi to i32\n"
	"  %mtot = trunc i64 %mark to i32\n"
	"  %age = sub i32 %tk, %mtk\n"	/* modulo 2^32 ticks */
	"  %recent = icmp ult i32 %age, " GX_XSTR(GPUEXT_PTX_RB_FULL_TICKS) "\n"
	"  %mtot1 = add i32 %mtot, -1\n"	/* 0 (no mark) wraps: covers nothing */
	"  %tot32 = trunc i64 %tot to i32\n"	/* tot <= cap, a u32 */
	"  %covers = icmp ult i32 %mtot1, %tot32\n"
	"  %quick = and i1 %recent, %covers\n"
	"  br i1 %quick, label %drop, label %look\n"
	"look:\n"
	"  %wprod = load atomic i64, ptr %hdr syncscope(\"block\") monotonic, align 8\n"
	"  %wcons = load atomic i64, ptr %consp syncscope(\"block\") monotonic, align 8\n"
	"  br label %loop\n"
	"loop:\n"
	"  %prod = phi i64 [ %wprod, %look ], [ %seen, %again ], [ %sprod, %recheck ]\n"
	"  %cons = phi i64 [ %wcons, %look ], [ %acons, %again ], [ %scons, %recheck ]\n"
	"  %strong = phi i1 [ false, %look ], [ true, %again ], [ true, %recheck ]\n"
	/*
	 * In-shard arithmetic in 32 bits: offsets, the padding and the group's
	 * bytes are below the shard size (a u32; tot <= cap was checked), and
	 * prod - cons (at most cap, or a little more through a stale cons) is
	 * right modulo 2^32 however large the u64 positions grow; only the new
	 * producer for the CAS needs 64. It is taken signed: after a failed CAS,
	 * cons is read after the producer the CAS returned, and the host may have
	 * consumed past it meanwhile; a negative distance then reads as room and
	 * the next CAS fails and retries, as with 64-bit positions, instead of
	 * reading as full and dropping. The drop path is what memtrace runs for
	 * most of its sites once its ring is full, and its kernels are bound by
	 * instruction issue: on the H100, memtrace at 2^22 went from 2.98x to 2.86x
	 * with this (10 interleaved rounds, gpuext built both ways; the
	 * conformance case rt_ringbuf_full_pos32 crosses 2^32).
	 */
	"  %p32 = trunc i64 %prod to i32\n"
	"  %c32 = trunc i64 %cons to i32\n"
	"  %held32 = sub i32 %p32, %c32\n"
	"  %held = sext i32 %held32 to i64\n"
	/*
	 * What is held and the group's bytes past the shard: full, whatever the
	 * padding. A saturated ring (the drop path) decides here, before the
	 * exact count: memtrace at 2^22 2.86x -> 2.76x, records unchanged
	 * (10 interleaved rounds, H100).
	 */
	"  %hbt = add i64 %held, %tot\n"
	"  %surely = icmp sgt i64 %hbt, %cap\n"
	"  br i1 %surely, label %isfull, label %exact\n"
	"exact:\n"
	"  %m32 = trunc i64 %mask to i32\n"
	"  %t32 = trunc i64 %tot to i32\n"
	"  %off32 = and i32 %p32, %m32\n"
	"  %end32 = add i32 %off32, %t32\n"
	"  %wraps = icmp ugt i32 %end32, %cap32\n"
	"  %left32 = sub i32 %cap32, %off32\n"
	"  %pad32 = select i1 %wraps, i32 %left32, i32 0\n"
	"  %adv32 = add i32 %pad32, %t32\n"
	"  %adv = zext i32 %adv32 to i64\n"
	"  %used = add i64 %held, %adv\n"
	"  %np = add i64 %prod, %adv\n"
	"  %off = zext i32 %off32 to i64\n"
	"  %pad = zext i32 %pad32 to i64\n"
	"  %full = icmp ugt i64 %used, %cap\n"
	"  br i1 %full, label %isfull, label %cas\n"
	/*
	 * Full through the block-scope look, with no mark that covers this
	 * writer (none, too old, or for a larger group): read again at device
	 * scope. A drop on that look alone could be a stale copy's.
	 */
	"isfull:\n"
	"  br i1 %strong, label %stamp, label %recheck\n"
	"recheck:\n"
	"  %scons = load atomic i64, ptr %consp syncscope(\"device\") monotonic, align 8\n"
	"  %sprod = load atomic i64, ptr %hdr syncscope(\"device\") monotonic, align 8\n"
	"  br label %loop\n"
	"stamp:\n"
	"  %now = call i64 @llvm.nvvm.read.ptx.sreg.globaltimer()\n"
	"  %stk = lshr i64 %now, " GX_XSTR(GPUEXT_PTX_RB_MARK_SHIFT) "\n"
	"  %stkh = shl i64 %stk, 32\n"
	"  %totl = and i64 %tot, 4294967295\n"
	"  %nmark = or i64 %stkh, %totl\n"
	"  store atomic i64 %nmark, ptr %fullp syncscope(\"device\") monotonic, align 8\n"
	"  br label %drop\n"
	"cas:\n"
	"  %pair = cmpxchg ptr %hdr, i64 %prod, i64 %np syncscope(\"device\") acquire monotonic, align 8\n"
	"  %seen = extractvalue { i64, i1 } %pair, 0\n"
	"  %won = extractvalue { i64, i1 } %pair, 1\n"
	"  br i1 %won, label %got, label %again\n"
	"again:\n"
	"  %acons = load atomic i64, ptr %consp syncscope(\"device\") monotonic, align 8\n"
	"  br label %loop\n"
	"got:\n"
	"  br i1 %wraps, label %padrec, label %rec\n"
	"padrec:\n"
	"  %pa = add i64 %data, %off\n"
	"  %pp = inttoptr i64 %pa to ptr\n"
	"  %pl = sub i64 %pad, 8\n"
	"  %pl32 = trunc i64 %pl to i32\n"
	"  %ph = or i32 %pl32, 1073741824\n"	/* DISCARD */
	"  %pp4 = getelementptr inbounds i8, ptr %pp, i64 4\n"
	"  store i32 0, ptr %pp4, align 4\n"
	"  store atomic i32 %ph, ptr %pp syncscope(\"device\") release, align 8\n"
	"  br label %rec\n"
	"rec:\n"
	"  %roff = select i1 %wraps, i64 0, i64 %off\n"
	/* Records are 8-aligned (base, shard size and sizes are): saying so lets LLVM store a
	 * u64 field with one st.u64 instead of eight st.u8. */
	"  %ra0 = add i64 %data, %roff\n"
	"  %ra = and i64 %ra0, -8\n"
	"  %sz32 = trunc i64 %size to i32\n"
	"  %rh = or i32 %sz32, -2147483648\n"	/* BUSY */
	/*
	 * A plain store: BUSY orders nothing (a drain stops at a 0 header as at a
	 * BUSY one; consumed space is zeroed). Only the first record's header: in
	 * a warp's group each lane writes its own (rt_rb_thread), in parallel.
	 */
	"  %rp = inttoptr i64 %ra to ptr\n"
	"  %rh64 = zext i32 %rh to i64\n"
	"  store i64 %rh64, ptr %rp, align 8\n"
	"  br label %done\n"
	"done:\n"
	"  %r = add i64 %ra, 8\n"
	"  ret i64 %r\n"
	"drop:\n"
	"  br i1 %count, label %dropc, label %fail\n"
	/*
	 * Written as PTX with its scope, so that the L2 policy the NVIDIA host
	 * puts on plain map atomics (hal/nvidia/ptx_text.c, gx_ptx_probes_l2keep)
	 * leaves it alone: a drop counter is hot while it counts, and the ring
	 * tools then run the same code with or without the policy. The same
	 * REDG.E.ADD.64.STRONG.GPU as the atomicrmw it replaces.
	 */
	"dropc:\n"
	"  call void asm sideeffect \"{ .reg .b64 %g; cvta.to.global.u64 %g, $0; "
	"red.relaxed.gpu.global.add.u64 [%g], $1; }\", \"l,l,~{memory}\"(i64 %dropa, i64 %n)\n"
	"  ret i64 0\n"
	"fail:\n"
	"  ret i64 0\n"
	"}\n"
	/* Publishes (or discards) a reserved record: its header loses BUSY, after the payload. */
	/*
	 * The header holds len | BUSY (reserve wrote it; the verifier lets a record be
	 * submitted or discarded once), so one release XOR clears BUSY and sets DISCARD
	 * when asked: no read of the header first, which cost an L2 round trip per record.
	 * Written as PTX: NVPTX prints a release atomicrmw as a plain atom, and a release
	 * fence before a relaxed one added an L1 invalidation to the MEMBAR. Rings live in
	 * global memory (cuMemAlloc), hence the cvta.
	 */
	"define internal void @gx.rb_commit(i64 %rec, i32 %discard) {\n"
	"  %ha = sub i64 %rec, 8\n"
	"  %flip = or i32 %discard, -2147483648\n"
	"  call void asm sideeffect \"{ .reg .b64 %g; cvta.to.global.u64 %g, $0; "
	"red.release.gpu.global.xor.b32 [%g], $1; }\", \"l,r,~{memory}\"(i64 %ha, i32 %flip)\n"
	"  ret void\n"
	"}\n"
	/* 130: bpf_ringbuf_output(rb, data, size, flags) */
	"define i64 @gpuext_rt_helper_130(i64 %m, i64 %data, i64 %size, i64 %flags, i64 %a5) {\n"
	"entry:\n"
	"  %d = inttoptr i64 %m to ptr\n"
	"  %tp = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 2\n"
	"  %type = load i32, ptr %tp, align 4\n"
	"  %isrb = icmp eq i32 %type, 27\n"
	"  %fl = and i64 %flags, -4\n"
	"  %flok = icmp eq i64 %fl, 0\n"
	"  %dok = icmp ne i64 %data, 0\n"
	"  %sok = icmp ne i64 %size, 0\n"
	"  %o1 = and i1 %isrb, %flok\n"
	"  %o2 = and i1 %dok, %sok\n"
	"  %ok = and i1 %o1, %o2\n"
	"  br i1 %ok, label %res, label %einval\n"
	"res:\n"
	"  %rec = call i64 @gx.rb_reserve(ptr %d, i64 %size)\n"
	"  %none = icmp eq i64 %rec, 0\n"
	"  br i1 %none, label %eagain, label %copy\n"
	"copy:\n"
	"  %dst = inttoptr i64 %rec to ptr\n"
	"  %src = inttoptr i64 %data to ptr\n"
	"  call void @llvm.memcpy.p0.p0.i64(ptr align 1 %dst, ptr align 1 %src, i64 %size, i1 false)\n"
	"  call void @gx.rb_commit(i64 %rec, i32 0)\n"
	"  ret i64 0\n"
	"einval:\n"
	"  ret i64 -22\n"
	"eagain:\n"
	"  ret i64 -11\n"
	"}\n"
	/* 131: bpf_ringbuf_reserve(rb, size, flags) */
	"define i64 @gpuext_rt_helper_131(i64 %m, i64 %size, i64 %flags, i64 %a4, i64 %a5) {\n"
	"entry:\n"
	"  %fz = icmp eq i64 %flags, 0\n"
	"  br i1 %fz, label %res, label %none\n"
	"res:\n"
	"  %d = inttoptr i64 %m to ptr\n"
	"  %rec = call i64 @gx.rb_reserve(ptr %d, i64 %size)\n"
	"  ret i64 %rec\n"
	"none:\n"
	"  ret i64 0\n"
	"}\n"
	/* 132: bpf_ringbuf_submit(rec, flags); 133: bpf_ringbuf_discard(rec, flags) */
	"define i64 @gpuext_rt_helper_132(i64 %rec, i64 %flags, i64 %a3, i64 %a4, i64 %a5) {\n"
	"  call void @gx.rb_commit(i64 %rec, i32 0)\n"
	"  ret i64 0\n"
	"}\n"
	"define i64 @gpuext_rt_helper_133(i64 %rec, i64 %flags, i64 %a3, i64 %a4, i64 %a5) {\n"
	"  call void @gx.rb_commit(i64 %rec, i32 1073741824)\n"
	"  ret i64 0\n"
	"}\n"
	/*
	 * 134: bpf_ringbuf_query(rb, flags): AVAIL_DATA, CONS_POS and PROD_POS of the
	 * caller's shard (the other shards are other SMs' business), RING_SIZE of the
	 * whole ring (per-shard bytes x shards, the size the map was declared with).
	 */
	"define i64 @gpuext_rt_helper_134(i64 %m, i64 %flags, i64 %a3, i64 %a4, i64 %a5) {\n"
	"entry:\n"
	"  %d = inttoptr i64 %m to ptr\n"
	"  %tp = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 2\n"
	"  %type = load i32, ptr %tp, align 4\n"
	"  %isrb = icmp eq i32 %type, 27\n"
	"  br i1 %isrb, label %rb, label %zero\n"
	"rb:\n"
	"  %ap = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 1\n"
	"  %aux = load i64, ptr %ap, align 8\n"
	"  %unplaced = icmp eq i64 %aux, 0\n"	/* a table never filled: no headers to read */
	"  br i1 %unplaced, label %zero, label %rbq\n"
	"rbq:\n"
	"  %sh = call i64 @gx.rb_shard(ptr %d)\n"
	"  %hoff = shl i64 %sh, 5\n"
	"  %ha = add i64 %aux, %hoff\n"
	"  %hdr = inttoptr i64 %ha to ptr\n"
	"  %consp = getelementptr inbounds i8, ptr %hdr, i64 8\n"
	"  %cons = load atomic i64, ptr %consp syncscope(\"device\") acquire, align 8\n"
	"  %prod = load atomic i64, ptr %hdr syncscope(\"device\") acquire, align 8\n"
	"  %cp = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 5\n"
	"  %cap32 = load i32, ptr %cp, align 4\n"
	"  %cap = zext i32 %cap32 to i64\n"
	"  %np = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 7\n"
	"  %n = load i32, ptr %np, align 4\n"
	"  %n0 = icmp eq i32 %n, 0\n"
	"  %n1 = select i1 %n0, i32 1, i32 %n\n"
	"  %n64 = zext i32 %n1 to i64\n"
	"  %size = mul i64 %cap, %n64\n"
	"  %avail = sub i64 %prod, %cons\n"
	"  switch i64 %flags, label %zero [ i64 0, label %r0\n"
	"                                   i64 1, label %r1\n"
	"                                   i64 2, label %r2\n"
	"                                   i64 3, label %r3 ]\n"
	"r0:\n"
	"  ret i64 %avail\n"
	"r1:\n"
	"  ret i64 %size\n"
	"r2:\n"
	"  ret i64 %cons\n"
	"r3:\n"
	"  ret i64 %prod\n"
	"zero:\n"
	"  ret i64 0\n"
	"}\n"
	"\n"
	/* ---- gpuext device helpers (ids in ptx.h) ---- */
	"define i64 @gpuext_rt_helper_4352(i64 %a1, i64 %a2, i64 %a3, i64 %a4, i64 %a5) {\n"
	"  %t = call i64 @llvm.nvvm.read.ptx.sreg.globaltimer()\n"
	"  ret i64 %t\n"
	"}\n"
	"define i64 @gpuext_rt_helper_4353(i64 %a1, i64 %a2, i64 %a3, i64 %a4, i64 %a5) {\n"
	"  %s = call i32 @llvm.nvvm.read.ptx.sreg.smid()\n"
	"  %r = zext i32 %s to i64\n"
	"  ret i64 %r\n"
	"}\n"
	"define i64 @gpuext_rt_helper_4354(i64 %a1, i64 %a2, i64 %a3, i64 %a4, i64 %a5) {\n"
	"  %t = call i32 @gx.thread_id()\n"
	"  %w = lshr i32 %t, 5\n"
	"  %r = zext i32 %w to i64\n"
	"  ret i64 %r\n"
	"}\n"
	"define i64 @gpuext_rt_helper_4355(i64 %a1, i64 %a2, i64 %a3, i64 %a4, i64 %a5) {\n"
	"  %l = call i32 @llvm.nvvm.read.ptx.sreg.laneid()\n"
	"  %r = zext i32 %l to i64\n"
	"  ret i64 %r\n"
	"}\n"
	"define i64 @gpuext_rt_helper_4356(i64 %a1, i64 %a2, i64 %a3, i64 %a4, i64 %a5) {\n"
	"  %t = call i32 @gx.thread_id()\n"
	"  %r = zext i32 %t to i64\n"
	"  ret i64 %r\n"
	"}\n"
	"define i64 @gpuext_rt_helper_4357(i64 %a1, i64 %a2, i64 %a3, i64 %a4, i64 %a5) {\n"
	"  %b = call i32 @gx.block_id()\n"
	"  %r = zext i32 %b to i64\n"
	"  ret i64 %r\n"
	"}\n"
	/*
	 * Warp collectives over the lanes calling together. The verifier lets a
	 * program call them under warp-uniform control only (core/verifier.c),
	 * so at every one of them the lanes that run are the lanes that entered
	 * the program: one mask serves them all. Read as inline asm with no side
	 * effect and no memory access, LLVM takes it once (CSE) for the calls
	 * under the same branches instead of once per call, and the lowest lane
	 * (cttz) with it; the NVVM
	 * intrinsic may not be merged, as the ring's group (rt_rb_thread) needs:
	 * it runs where some lanes have returned. Convergent: LLVM may merge it
	 * with one that dominates it, but not move it under a branch it was not
	 * under. A ballot of a constant true is the mask itself, with no vote to
	 * hold the read in place, and a program that stores it from lane 0 alone
	 * had the read sunk into lane 0's branch, where it counts one lane
	 * (tests/bpf/probe_ballot.bpf.c). memtrace, whose every site votes and
	 * shuffles three to seven times, at 2^22 with its ring full (ptxab
	 * membound, H200, in one process): 3.39x -> 3.25x.
	 */
	"declare i32 @llvm.nvvm.vote.ballot.sync(i32, i1)\n"
	"define internal i32 @gx.warp_mask() {\n"
	"  %m = call i32 asm \"activemask.b32 $0;\", \"=r\"() convergent nounwind willreturn memory(none)\n"
	"  ret i32 %m\n"
	"}\n"
	"define internal i64 @gx.shfl64(i32 %m, i64 %v, i32 %src) {\n"
	"  %lo = trunc i64 %v to i32\n"
	"  %h = lshr i64 %v, 32\n"
	"  %hi = trunc i64 %h to i32\n"
	"  %slo = call i32 @llvm.nvvm.shfl.sync.idx.i32(i32 %m, i32 %lo, i32 %src, i32 31)\n"
	"  %shi = call i32 @llvm.nvvm.shfl.sync.idx.i32(i32 %m, i32 %hi, i32 %src, i32 31)\n"
	"  %a = zext i32 %slo to i64\n"
	"  %b0 = zext i32 %shi to i64\n"
	"  %b = shl i64 %b0, 32\n"
	"  %r = or i64 %b, %a\n"
	"  ret i64 %r\n"
	"}\n"
	"define i64 @gpuext_rt_helper_4358(i64 %a1, i64 %a2, i64 %a3, i64 %a4, i64 %a5) {\n"
	"entry:\n"
	"  %act = call i32 @gx.warp_mask()\n"
	"  %p = icmp ne i64 %a1, 0\n"
	"  %k = call i1 @llvm.is.constant.i1(i1 %p)\n"
	"  %all = and i1 %k, %p\n"
	"  br i1 %all, label %each, label %vote\n"
	"each:\n"
	"  %ra = zext i32 %act to i64\n"
	"  ret i64 %ra\n"
	"vote:\n"
	"  %b = call i32 @llvm.nvvm.vote.ballot.sync(i32 %act, i1 %p)\n"
	"  %r = zext i32 %b to i64\n"
	"  ret i64 %r\n"
	"}\n"
	"define i64 @gpuext_rt_helper_4359(i64 %a1, i64 %a2, i64 %a3, i64 %a4, i64 %a5) {\n"
	"  %act = call i32 @gx.warp_mask()\n"
	"  %lead = call i32 @llvm.cttz.i32(i32 %act, i1 true)\n"
	"  %r = call i64 @gx.shfl64(i32 %act, i64 %a1, i32 %lead)\n"
	"  ret i64 %r\n"
	"}\n"
	/* A source lane that is not active (or past 31) gives 0, not whatever shfl read. */
	"define i64 @gpuext_rt_helper_4360(i64 %a1, i64 %a2, i64 %a3, i64 %a4, i64 %a5) {\n"
	"  %act = call i32 @gx.warp_mask()\n"
	"  %l = trunc i64 %a2 to i32\n"
	"  %l31 = and i32 %l, 31\n"
	"  %v = call i64 @gx.shfl64(i32 %act, i64 %a1, i32 %l31)\n"
	"  %inr = icmp ult i64 %a2, 32\n"
	"  %bit = shl i32 1, %l31\n"
	"  %on = and i32 %act, %bit\n"
	"  %live = icmp ne i32 %on, 0\n"
	"  %ok = and i1 %inr, %live\n"
	"  %r = select i1 %ok, i64 %v, i64 0\n"
	"  ret i64 %r\n"
	"}\n"
	/*
	 * 4361: gpuext_atomic_max(p, size, v). The old value is not used, so
	 * ptxas makes it a RED: nothing to wait for (a plain store to a hot
	 * address cost a 1.6 M-block stencil 40%, a RED 6%: H100).
	 */
	"define i64 @gpuext_rt_helper_4361(i64 %a1, i64 %a2, i64 %a3, i64 %a4, i64 %a5) {\n"
	"entry:\n"
	"  %sz = icmp eq i64 %a2, 8\n"
	"  %lo = and i64 %a1, 7\n"
	"  %al = icmp eq i64 %lo, 0\n"
	"  %ok = and i1 %sz, %al\n"
	"  br i1 %ok, label %do, label %bad\n"
	"do:\n"
	"  %p = inttoptr i64 %a1 to ptr\n"
	"  %old = atomicrmw umax ptr %p, i64 %a3 syncscope(\"device\") monotonic, align 8\n"
	"  ret i64 0\n"
	"bad:\n"
	"  ret i64 -22\n"
	"}\n";

/*
 * Hash maps (BPF_MAP_TYPE_HASH; LRU_HASH without eviction): open addressing
 * with linear probing over a power-of-2 bucket array, layout in ptx.h
 * (struct gpuext_ptx_hash_hdr). A bucket is claimed by CAS on its state
 * (EMPTY -> BUSY), filled, then published (FULL, release); lookups and
 * racing inserters wait for BUSY to clear and then compare keys, so a key
 * is never in the table twice and an insert is visible once its CAS won
 * (the wait relies on independent thread scheduling: sm_70+, and gpuext
 * emits for sm_75+). Deleted buckets become tombstones that are
 * not reused: the table has twice the buckets max_entries asks for, and the
 * host compacts when it rewrites the image. Values are read and written in
 * place without a lock, as a kernel hash map without BPF_F_LOCK.
 */
/*
 * @gx.rb_reserve for warp mode: only the warp's leader runs the probe, so
 * one record at a time.
 */
/*
 * @gx.rb_drop_addr: the address of shard %sh's drop counter, aux +
 * gpuext_ptx_rb_drops_off(%ns) + 8 %sh, per mode. Per thread, the offset is
 * worked out in 32 bits (shards x 40 bytes: far below 4 GiB for any ring the
 * host places, at most NV_RING_MAX_SHARDS), which ptxas does in fewer
 * instructions than the 64-bit form: memtrace at 2^22 with its ring full,
 * whose every site is bound by instruction issue, 2.69x -> 2.56x (ptxab
 * membound, H200, in one process). In warp mode the same change made
 * kernelretsnoop's drop at a block's exit slower (decode step 1.0279 ->
 * 1.0288, stencil 1.0189 -> 1.0195, same method), so it keeps the 64-bit form.
 */
static const char rt_rb_warp[] =
	"define internal i64 @gx.rb_drop_addr(i64 %aux, i32 %ns, i64 %sh) {\n"
	"  %n = zext i32 %ns to i64\n"
	"  %hb = shl i64 %n, 5\n"
	"  %hb1 = add i64 %hb, 127\n"
	"  %doff0 = and i64 %hb1, -128\n"
	"  %dsh = shl i64 %sh, 3\n"
	"  %doff1 = add i64 %doff0, %dsh\n"
	"  %r = add i64 %aux, %doff1\n"
	"  ret i64 %r\n"
	"}\n"
	"define internal i64 @gx.rb_reserve(ptr %d, i64 %size) {\n"
	"  %r = call i64 @gx.rb_reserve_n(ptr %d, i64 %size, i64 1, i1 true)\n"
	"  ret i64 %r\n"
	"}\n";

/*
 * @gx.rb_reserve for per-thread mode: the lanes of a warp that reserve the
 * same size together (match.any; the active lanes when the size is a
 * constant, below) make one group; its lowest lane claims all
 * their records with one CAS and hands the address out (shfl), each lane
 * takes its own by rank. When the group does not fit, every lane tries
 * alone: the ring keeps what fits record by record, as with one lane. Without this, 32 lanes raced on one shard header
 * with a CAS each and their retries grew with the square of the contention
 * (GPU run 6, H100: memtrace at 0.55 us per record, 216x on a small
 * memory-bound kernel).
 */
static const char rt_rb_thread[] =
	"define internal i64 @gx.rb_drop_addr(i64 %aux, i32 %ns, i64 %sh) {\n"
	"  %hb = shl i32 %ns, 5\n"
	"  %hb1 = add i32 %hb, 127\n"
	"  %doff0 = and i32 %hb1, -128\n"
	"  %sh32 = trunc i64 %sh to i32\n"
	"  %dsh = shl i32 %sh32, 3\n"
	"  %doff32 = add i32 %doff0, %dsh\n"
	"  %doff1 = zext i32 %doff32 to i64\n"
	"  %r = add i64 %aux, %doff1\n"
	"  ret i64 %r\n"
	"}\n"
	"declare i32 @llvm.nvvm.match.any.sync.i64(i32, i64)\n"
	"declare i1 @llvm.is.constant.i64(i64)\n"
	"declare i32 @llvm.nvvm.read.ptx.sreg.lanemask.lt()\n"
	"declare i32 @llvm.ctpop.i32(i32)\n"
	"define internal i64 @gx.rb_reserve(ptr %d, i64 %size) {\n"
	"entry:\n"
	"  %act = call i32 @llvm.nvvm.activemask()\n"
	/*
	 * A size the program gave as a constant (bpf_ringbuf_reserve's always is)
	 * is the same in every lane at this point: the lanes that run an inlined
	 * copy of this code together came from the same call, so the active mask
	 * is the group and match.any (and the convergence checks ptxas puts
	 * around it) is skipped. After inlining, llvm.is.constant folds to a
	 * constant and one of the branches is gone. memtrace at 2^22 on the H100:
	 * 3.08x -> 2.98x, records unchanged (10 interleaved rounds; the 90%
	 * intervals of the medians touch, and the thirteenth session measured
	 * no change from it): fewer instructions, kept for that.
	 */
	"  %k = call i1 @llvm.is.constant.i64(i64 %size)\n"
	"  br i1 %k, label %grouped, label %match\n"
	"match:\n"
	"  %mg = call i32 @llvm.nvvm.match.any.sync.i64(i32 %act, i64 %size)\n"
	"  br label %grouped\n"
	"grouped:\n"
	"  %grp = phi i32 [ %act, %entry ], [ %mg, %match ]\n"
	"  %lead = call i32 @llvm.cttz.i32(i32 %grp, i1 true)\n"
	"  %lt = call i32 @llvm.nvvm.read.ptx.sreg.lanemask.lt()\n"
	"  %below = and i32 %grp, %lt\n"
	"  %rank = call i32 @llvm.ctpop.i32(i32 %below)\n"
	"  %cnt = call i32 @llvm.ctpop.i32(i32 %grp)\n"
	/*
	 * A group of one lane (memtrace's writer for a coalesced warp: the other
	 * lanes returned before the reserve) claims for itself, as a lane alone
	 * does after its group did not fit: no hand-out by shfl, and none of the
	 * convergence checks ptxas puts around a shfl.sync whose mask is not
	 * known (MATCH.ANY, REDUX, BRA.DIV: about 25 SASS instructions a site).
	 * The same code as before for a group of two or more.
	 */
	"  %one = icmp eq i32 %cnt, 1\n"
	"  br i1 %one, label %alone, label %many0\n"
	"many0:\n"
	"  %isl = icmp eq i32 %rank, 0\n"
	"  br i1 %isl, label %claim, label %join\n"
	"claim:\n"	/* two lanes or more: their drops are counted by each lane alone, below */
	"  %n = zext i32 %cnt to i64\n"
	"  %r0 = call i64 @gx.rb_reserve_n(ptr %d, i64 %size, i64 %n, i1 false)\n"
	"  br label %join\n"
	"join:\n"
	"  %v = phi i64 [ 0, %many0 ], [ %r0, %claim ]\n"
	"  %lo = trunc i64 %v to i32\n"
	"  %hi64 = lshr i64 %v, 32\n"
	"  %hi = trunc i64 %hi64 to i32\n"
	"  %slo = call i32 @llvm.nvvm.shfl.sync.idx.i32(i32 %grp, i32 %lo, i32 %lead, i32 31)\n"
	"  %shi = call i32 @llvm.nvvm.shfl.sync.idx.i32(i32 %grp, i32 %hi, i32 %lead, i32 31)\n"
	"  %blo = zext i32 %slo to i64\n"
	"  %bhi0 = zext i32 %shi to i64\n"
	"  %bhi = shl i64 %bhi0, 32\n"
	"  %b = or i64 %bhi, %blo\n"
	"  %none = icmp eq i64 %b, 0\n"
	"  br i1 %none, label %alone, label %mine\n"
	/* The group did not fit (or the ring refuses the size): each lane on its own, so a
	 * nearly full shard takes the records that fit and counts the rest as drops. */
	"alone:\n"
	"  %ra = call i64 @gx.rb_reserve_n(ptr %d, i64 %size, i64 1, i1 true)\n"
	"  ret i64 %ra\n"
	"mine:\n"
	"  %t0 = add i64 %size, 15\n"
	"  %tot = and i64 %t0, -8\n"
	"  %rk = zext i32 %rank to i64\n"
	"  %o = mul i64 %rk, %tot\n"
	"  %ro = add i64 %b, %o\n"
	"  %r = and i64 %ro, -8\n"	/* 8-aligned, as LLVM then knows */
	"  %ha = sub i64 %r, 8\n"
	"  %hp = inttoptr i64 %ha to ptr\n"
	"  %sz32 = trunc i64 %size to i32\n"
	"  %rh = or i32 %sz32, -2147483648\n"	/* BUSY, before the commit flips it */
	"  %rh64 = zext i32 %rh to i64\n"
	"  store i64 %rh64, ptr %hp, align 8\n"
	"  ret i64 %r\n"
	"}\n";

static const char rt_hash[] =
	"define internal i1 @gx.is_hash(ptr %d) {\n"
	"  %tp = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 2\n"
	"  %type = load i32, ptr %tp, align 4\n"
	"  %h = icmp eq i32 %type, 1\n"
	"  %l = icmp eq i32 %type, 9\n"
	"  %r = or i1 %h, %l\n"
	"  ret i1 %r\n"
	"}\n"
	/* FNV-1a 32 of the key bytes (gpuext_ptx_hash_key() on the host). */
	"define internal i32 @gx.fnv(ptr %p, i32 %n) {\n"
	"entry:\n"
	"  br label %loop\n"
	"loop:\n"
	"  %i = phi i32 [ 0, %entry ], [ %i1, %body ]\n"
	"  %h = phi i32 [ -2128831035, %entry ], [ %h2, %body ]\n"	/* 0x811c9dc5 */
	"  %done = icmp uge i32 %i, %n\n"
	"  br i1 %done, label %out, label %body\n"
	"body:\n"
	"  %i64 = zext i32 %i to i64\n"
	"  %bp = getelementptr inbounds i8, ptr %p, i64 %i64\n"
	"  %b = load i8, ptr %bp, align 1\n"
	"  %bz = zext i8 %b to i32\n"
	"  %h1 = xor i32 %h, %bz\n"
	"  %h2 = mul i32 %h1, 16777619\n"
	"  %i1 = add i32 %i, 1\n"
	"  br label %loop\n"
	"out:\n"
	"  ret i32 %h\n"
	"}\n"
	"define internal i1 @gx.key_eq(ptr %a, ptr %b, i32 %n) {\n"
	"entry:\n"
	"  br label %loop\n"
	"loop:\n"
	"  %i = phi i32 [ 0, %entry ], [ %i1, %same ]\n"
	"  %done = icmp uge i32 %i, %n\n"
	"  br i1 %done, label %yes, label %body\n"
	"body:\n"
	"  %i64 = zext i32 %i to i64\n"
	"  %ap = getelementptr inbounds i8, ptr %a, i64 %i64\n"
	"  %bp = getelementptr inbounds i8, ptr %b, i64 %i64\n"
	"  %av = load i8, ptr %ap, align 1\n"
	"  %bv = load i8, ptr %bp, align 1\n"
	"  %eq = icmp eq i8 %av, %bv\n"
	"  %i1 = add i32 %i, 1\n"
	"  br i1 %eq, label %same, label %no\n"
	"same:\n"
	"  br label %loop\n"
	"yes:\n"
	"  ret i1 true\n"
	"no:\n"
	"  ret i1 false\n"
	"}\n"
	/* Bucket %idx of the table at %hdr (bucket size %bs). */
	"define internal ptr @gx.bucket(ptr %hdr, i32 %bs, i32 %idx) {\n"
	"  %i64 = zext i32 %idx to i64\n"
	"  %b64 = zext i32 %bs to i64\n"
	"  %o = mul i64 %i64, %b64\n"
	"  %o16 = add i64 %o, 16\n"
	"  %p = getelementptr inbounds i8, ptr %hdr, i64 %o16\n"
	"  ret ptr %p\n"
	"}\n"
	/* The FULL bucket holding @key, or null. A BUSY bucket is waited for: the insert
	 * that claimed it has happened. */
	"define internal ptr @gx.hash_find(ptr %d, ptr %key) {\n"
	"entry:\n"
	"  %base = load i64, ptr %d, align 8\n"
	"  %unplaced = icmp eq i64 %base, 0\n"	/* a table never filled: nothing found */
	"  br i1 %unplaced, label %miss, label %go\n"
	"go:\n"
	"  %hdr = inttoptr i64 %base to ptr\n"
	"  %ksp = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 3\n"
	"  %ks = load i32, ptr %ksp, align 4\n"
	"  %nb = load i32, ptr %hdr, align 4\n"
	"  %bsp = getelementptr inbounds i8, ptr %hdr, i64 4\n"
	"  %bs = load i32, ptr %bsp, align 4\n"
	"  %h = call i32 @gx.fnv(ptr %key, i32 %ks)\n"
	"  %mask = sub i32 %nb, 1\n"
	"  %start = and i32 %h, %mask\n"
	"  br label %loop\n"
	"loop:\n"
	"  %n = phi i32 [ 0, %go ], [ %n1, %next ]\n"
	"  %idx = phi i32 [ %start, %go ], [ %idx1, %next ]\n"
	"  %more = icmp ult i32 %n, %nb\n"
	"  br i1 %more, label %probe, label %miss\n"
	"probe:\n"
	"  %bp = call ptr @gx.bucket(ptr %hdr, i32 %bs, i32 %idx)\n"
	"  br label %spin\n"
	/* An insert in flight (BUSY) has claimed its bucket: wait until it is published. */
	"spin:\n"
	"  %st = load atomic i32, ptr %bp syncscope(\"device\") acquire, align 4\n"
	"  %busy = icmp eq i32 %st, 1\n"
	"  br i1 %busy, label %spin, label %seen\n"
	"seen:\n"
	"  %empty = icmp eq i32 %st, 0\n"
	"  br i1 %empty, label %miss, label %chk\n"
	"chk:\n"
	"  %full = icmp eq i32 %st, 2\n"
	"  br i1 %full, label %chkh, label %next\n"
	"chkh:\n"
	"  %hp = getelementptr inbounds i8, ptr %bp, i64 4\n"
	"  %bh = load i32, ptr %hp, align 4\n"
	"  %heq = icmp eq i32 %bh, %h\n"
	"  br i1 %heq, label %chkk, label %next\n"
	"chkk:\n"
	"  %kp = getelementptr inbounds i8, ptr %bp, i64 8\n"
	"  %keq = call i1 @gx.key_eq(ptr %kp, ptr %key, i32 %ks)\n"
	"  br i1 %keq, label %hit, label %next\n"
	"next:\n"
	"  %n1 = add i32 %n, 1\n"
	"  %idx2 = add i32 %idx, 1\n"
	"  %idx1 = and i32 %idx2, %mask\n"
	"  br label %loop\n"
	"hit:\n"
	"  ret ptr %bp\n"
	"miss:\n"
	"  ret ptr null\n"
	"}\n"
	/* Value address inside bucket %bp: after the 8-byte state/hash and the key rounded to 8. */
	"define internal ptr @gx.hash_value(ptr %d, ptr %bp) {\n"
	"  %ksp = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 3\n"
	"  %ks = load i32, ptr %ksp, align 4\n"
	"  %k7 = add i32 %ks, 7\n"
	"  %kr = and i32 %k7, -8\n"
	"  %off = add i32 %kr, 8\n"
	"  %o64 = zext i32 %off to i64\n"
	"  %v = getelementptr inbounds i8, ptr %bp, i64 %o64\n"
	"  ret ptr %v\n"
	"}\n"
	"define internal i64 @gx.hash_lookup(ptr %d, ptr %key) {\n"
	"entry:\n"
	"  %bp = call ptr @gx.hash_find(ptr %d, ptr %key)\n"
	"  %miss = icmp eq ptr %bp, null\n"
	"  br i1 %miss, label %none, label %hit\n"
	"hit:\n"
	"  %v = call ptr @gx.hash_value(ptr %d, ptr %bp)\n"
	"  %r = ptrtoint ptr %v to i64\n"
	"  ret i64 %r\n"
	"none:\n"
	"  ret i64 0\n"
	"}\n"
	/* bpf_map_update_elem on a hash map: flags 0 ANY, 1 NOEXIST, 2 EXIST (errnos as the host's). */
	"define internal i64 @gx.hash_update(ptr %d, ptr %key, ptr %val, i64 %flags) {\n"
	"entry:\n"
	"  %bad = icmp ugt i64 %flags, 2\n"
	"  br i1 %bad, label %einval, label %find\n"
	"find:\n"
	"  %vsp = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 4\n"
	"  %vs = load i32, ptr %vsp, align 4\n"
	"  %vs64 = zext i32 %vs to i64\n"
	"  %old = call ptr @gx.hash_find(ptr %d, ptr %key)\n"
	"  %miss = icmp eq ptr %old, null\n"
	"  br i1 %miss, label %absent, label %present\n"
	"present:\n"
	"  %noex = icmp eq i64 %flags, 1\n"
	"  br i1 %noex, label %eexist, label %overwrite\n"
	"overwrite:\n"
	"  %ov = call ptr @gx.hash_value(ptr %d, ptr %old)\n"
	"  call void @llvm.memcpy.p0.p0.i64(ptr align 1 %ov, ptr align 1 %val, i64 %vs64, i1 false)\n"
	"  ret i64 0\n"
	"absent:\n"
	"  %exist = icmp eq i64 %flags, 2\n"
	"  br i1 %exist, label %enoent, label %reserve\n"
	"reserve:\n"
	"  %base = load i64, ptr %d, align 8\n"
	"  %unplaced = icmp eq i64 %base, 0\n"	/* a table never filled: no room */
	"  br i1 %unplaced, label %enomem, label %claim\n"
	/*
	 * The bucket first, then the room: an insert that finds the table full
	 * gives its claimed bucket back (EMPTY again) and says -E2BIG, and one
	 * that waited on a bucket given back tries that same bucket again, so
	 * the probe path never gets a hole. An insert racing another of the same
	 * key thus sees that key whenever the first got in (-EEXIST, or its value
	 * overwritten), as under Linux's bucket lock: counting the
	 * room first failed such inserts with -E2BIG while the first was in
	 * flight (count-or-insert on 4,352 blocks, a 16-entry map, H100: 110 of
	 * 256 blocks counted).
	 */
	"claim:\n"
	"  %hdr = inttoptr i64 %base to ptr\n"
	"  %cntp = getelementptr inbounds i8, ptr %hdr, i64 8\n"
	"  %mxp = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 5\n"
	"  %max = load i32, ptr %mxp, align 4\n"
	"  %ksp = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 3\n"
	"  %ks = load i32, ptr %ksp, align 4\n"
	"  %ks64 = zext i32 %ks to i64\n"
	"  %nb = load i32, ptr %hdr, align 4\n"
	"  %bsp = getelementptr inbounds i8, ptr %hdr, i64 4\n"
	"  %bs = load i32, ptr %bsp, align 4\n"
	"  %h = call i32 @gx.fnv(ptr %key, i32 %ks)\n"
	"  %mask = sub i32 %nb, 1\n"
	"  %start = and i32 %h, %mask\n"
	"  br label %loop\n"
	"loop:\n"
	"  %n = phi i32 [ 0, %claim ], [ %n1, %next ]\n"
	"  %idx = phi i32 [ %start, %claim ], [ %idx1, %next ]\n"
	"  %more = icmp ult i32 %n, %nb\n"
	"  br i1 %more, label %try, label %full\n"
	"try:\n"
	"  %bp = call ptr @gx.bucket(ptr %hdr, i32 %bs, i32 %idx)\n"
	"  %pair = cmpxchg ptr %bp, i32 0, i32 1 syncscope(\"device\") acq_rel acquire, align 4\n"
	"  %won = extractvalue { i32, i1 } %pair, 1\n"
	"  br i1 %won, label %room, label %wait\n"
	/* Our own key's tombstone: claimed back (DELETED -> BUSY), given back DELETED. */
	"revive:\n"
	"  %rpair = cmpxchg ptr %bp, i32 3, i32 1 syncscope(\"device\") acq_rel acquire, align 4\n"
	"  %rwon = extractvalue { i32, i1 } %rpair, 1\n"
	"  br i1 %rwon, label %room, label %wait\n"
	"room:\n"
	"  %was = phi i32 [ 0, %try ], [ 3, %revive ]\n"
	"  %cnt = atomicrmw add ptr %cntp, i32 1 syncscope(\"device\") monotonic, align 4\n"
	"  %over = icmp uge i32 %cnt, %max\n"
	"  br i1 %over, label %giveback, label %fill\n"
	"giveback:\n"
	"  %r3 = atomicrmw sub ptr %cntp, i32 1 syncscope(\"device\") monotonic, align 4\n"
	"  store atomic i32 %was, ptr %bp syncscope(\"device\") release, align 4\n"
	"  ret i64 -7\n"
	"fill:\n"
	"  %hp = getelementptr inbounds i8, ptr %bp, i64 4\n"
	"  store i32 %h, ptr %hp, align 4\n"
	"  %kp = getelementptr inbounds i8, ptr %bp, i64 8\n"
	"  call void @llvm.memcpy.p0.p0.i64(ptr align 1 %kp, ptr align 1 %key, i64 %ks64, i1 false)\n"
	"  %nv = call ptr @gx.hash_value(ptr %d, ptr %bp)\n"
	"  call void @llvm.memcpy.p0.p0.i64(ptr align 1 %nv, ptr align 1 %val, i64 %vs64, i1 false)\n"
	"  store atomic i32 2, ptr %bp syncscope(\"device\") release, align 4\n"
	"  ret i64 0\n"
	/* Someone else holds the bucket: once it is published, it may be our key; given back, ours to try. */
	"wait:\n"
	"  %st = load atomic i32, ptr %bp syncscope(\"device\") acquire, align 4\n"
	"  %busy = icmp eq i32 %st, 1\n"
	"  br i1 %busy, label %wait, label %seen\n"
	"seen:\n"
	"  %again = icmp eq i32 %st, 0\n"
	"  br i1 %again, label %try, label %chkfull\n"
	"chkfull:\n"
	"  %isfull = icmp eq i32 %st, 2\n"
	"  br i1 %isfull, label %same, label %chkdel\n"
	"same:\n"
	"  %skp = getelementptr inbounds i8, ptr %bp, i64 8\n"
	"  %keq = call i1 @gx.key_eq(ptr %skp, ptr %key, i32 %ks)\n"
	"  br i1 %keq, label %raced, label %next\n"
	"chkdel:\n"
	"  %isdel = icmp eq i32 %st, 3\n"
	"  br i1 %isdel, label %deld, label %next\n"
	"deld:\n"
	"  %dhp = getelementptr inbounds i8, ptr %bp, i64 4\n"
	"  %dh = load i32, ptr %dhp, align 4\n"
	"  %dheq = icmp eq i32 %dh, %h\n"
	"  br i1 %dheq, label %delk, label %next\n"
	"delk:\n"
	"  %dkp = getelementptr inbounds i8, ptr %bp, i64 8\n"
	"  %dkeq = call i1 @gx.key_eq(ptr %dkp, ptr %key, i32 %ks)\n"
	"  br i1 %dkeq, label %revive, label %next\n"
	"raced:\n"
	"  %noex2 = icmp eq i64 %flags, 1\n"
	"  br i1 %noex2, label %eexist, label %rwrite\n"
	"rwrite:\n"
	"  %rv = call ptr @gx.hash_value(ptr %d, ptr %bp)\n"
	"  call void @llvm.memcpy.p0.p0.i64(ptr align 1 %rv, ptr align 1 %val, i64 %vs64, i1 false)\n"
	"  ret i64 0\n"
	"next:\n"
	"  %n1 = add i32 %n, 1\n"
	"  %idx2 = add i32 %idx, 1\n"
	"  %idx1 = and i32 %idx2, %mask\n"
	"  br label %loop\n"
	"full:\n"
	"  ret i64 -7\n"
	"enomem:\n"
	"  ret i64 -12\n"
	"einval:\n"
	"  ret i64 -22\n"
	"eexist:\n"
	"  ret i64 -17\n"
	"enoent:\n"
	"  ret i64 -2\n"
	"}\n"
	"define internal i64 @gx.hash_delete(ptr %d, ptr %key) {\n"
	"entry:\n"
	"  %bp = call ptr @gx.hash_find(ptr %d, ptr %key)\n"
	"  %miss = icmp eq ptr %bp, null\n"
	"  br i1 %miss, label %enoent, label %del\n"
	"del:\n"
	"  %pair = cmpxchg ptr %bp, i32 2, i32 3 syncscope(\"device\") acq_rel monotonic, align 4\n"
	"  %won = extractvalue { i32, i1 } %pair, 1\n"
	"  br i1 %won, label %gone, label %enoent\n"
	"gone:\n"
	"  %base = load i64, ptr %d, align 8\n"
	"  %hdr = inttoptr i64 %base to ptr\n"
	"  %cntp = getelementptr inbounds i8, ptr %hdr, i64 8\n"
	"  %c = atomicrmw sub ptr %cntp, i32 1 syncscope(\"device\") monotonic, align 4\n"
	"  ret i64 0\n"
	"enoent:\n"
	"  ret i64 -2\n"
	"}\n";

/* ld_imm64 src=3 on the device: the address the host put in gpuext_rt_vars, or 0. */
static const char rt_vars[] =
	"@gpuext_rt_vars = addrspace(1) externally_initialized global [%u x { i64, i64 }] "
	"zeroinitializer, align 8\n"
	"define ptr @gpuext_rt_var(i32 %%id) {\n"
	"entry:\n"
	"  %%id64 = zext i32 %%id to i64\n"
	"  br label %%loop\n"
	"loop:\n"
	"  %%i = phi i64 [ 0, %%entry ], [ %%next, %%cont ]\n"
	"  %%ip = getelementptr inbounds [%u x { i64, i64 }], ptr addrspace(1) @gpuext_rt_vars, "
	"i64 0, i64 %%i, i32 0\n"
	"  %%v = load i64, ptr addrspace(1) %%ip, align 8\n"
	"  %%ap = getelementptr inbounds [%u x { i64, i64 }], ptr addrspace(1) @gpuext_rt_vars, "
	"i64 0, i64 %%i, i32 1\n"
	"  %%a = load i64, ptr addrspace(1) %%ap, align 8\n"
	"  %%hit = icmp eq i64 %%v, %%id64\n"
	"  %%used = icmp ne i64 %%a, 0\n"
	"  %%ok = and i1 %%hit, %%used\n"
	"  br i1 %%ok, label %%found, label %%cont\n"
	"cont:\n"
	"  %%next = add i64 %%i, 1\n"
	"  %%more = icmp ult i64 %%next, %u\n"
	"  br i1 %%more, label %%loop, label %%none\n"
	"found:\n"
	"  %%r = inttoptr i64 %%a to ptr\n"
	"  ret ptr %%r\n"
	"none:\n"
	"  ret ptr null\n"
	"}\n";

/* The per-thread test kernel (ptx.h). %s = the lifted entry. */
static const char rt_kernel_thread[] =
	"declare i64 @%s(ptr, i64)\n"
	"define ptx_kernel void @" GPUEXT_PTX_KERNEL "(ptr addrspace(1) %%mem, i64 %%len, "
	"i64 %%stride, ptr addrspace(1) %%r0out, i32 %%n) {\n"
	"entry:\n"
	"  %%tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
	"  %%ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()\n"
	"  %%cta = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()\n"
	"  %%g0 = mul i32 %%cta, %%ntid\n"
	"  %%g = add i32 %%g0, %%tid\n"
	"  %%in = icmp ult i32 %%g, %%n\n"
	"  br i1 %%in, label %%run, label %%done\n"
	"run:\n"
	"  %%g64 = zext i32 %%g to i64\n"
	"  %%off = mul i64 %%g64, %%stride\n"
	"  %%p = getelementptr i8, ptr addrspace(1) %%mem, i64 %%off\n"
	"  %%pg = addrspacecast ptr addrspace(1) %%p to ptr\n"
	"  %%has = icmp ne i64 %%len, 0\n"
	"  %%ctx = select i1 %%has, ptr %%pg, ptr null\n"
	"  %%r0 = call i64 @%s(ptr %%ctx, i64 %%len)\n"
	"  %%slot = getelementptr i64, ptr addrspace(1) %%r0out, i64 %%g64\n"
	"  store i64 %%r0, ptr addrspace(1) %%slot, align 8\n"
	"  br label %%done\n"
	"done:\n"
	"  ret void\n"
	"}\n";

/* The warp-mode test kernel: the lowest active lane runs, r0 is broadcast. */
static const char rt_kernel_warp[] =
	"declare i64 @%s(ptr, i64)\n"
	"define ptx_kernel void @" GPUEXT_PTX_KERNEL "(ptr addrspace(1) %%mem, i64 %%len, "
	"i64 %%stride, ptr addrspace(1) %%r0out, i32 %%n) {\n"
	"entry:\n"
	"  %%tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n"
	"  %%ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()\n"
	"  %%cta = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()\n"
	"  %%g0 = mul i32 %%cta, %%ntid\n"
	"  %%g = add i32 %%g0, %%tid\n"
	"  %%in = icmp ult i32 %%g, %%n\n"
	"  br i1 %%in, label %%active, label %%done\n"
	"active:\n"
	"  %%mask = call i32 @llvm.nvvm.activemask()\n"
	"  %%leader = call i32 @llvm.cttz.i32(i32 %%mask, i1 true)\n"
	"  %%lane = call i32 @llvm.nvvm.read.ptx.sreg.laneid()\n"
	"  %%g64 = zext i32 %%g to i64\n"
	"  %%isl = icmp eq i32 %%lane, %%leader\n"
	"  br i1 %%isl, label %%lead, label %%join\n"
	"lead:\n"
	"  %%w = lshr i64 %%g64, 5\n"
	"  %%off = mul i64 %%w, %%stride\n"
	"  %%p = getelementptr i8, ptr addrspace(1) %%mem, i64 %%off\n"
	"  %%pg = addrspacecast ptr addrspace(1) %%p to ptr\n"
	"  %%has = icmp ne i64 %%len, 0\n"
	"  %%ctx = select i1 %%has, ptr %%pg, ptr null\n"
	"  %%r = call i64 @%s(ptr %%ctx, i64 %%len)\n"
	"  br label %%join\n"
	"join:\n"
	"  %%rv = phi i64 [ %%r, %%lead ], [ 0, %%active ]\n"
	"  %%lo = trunc i64 %%rv to i32\n"
	"  %%hs = lshr i64 %%rv, 32\n"
	"  %%hi = trunc i64 %%hs to i32\n"
	"  %%blo = call i32 @llvm.nvvm.shfl.sync.idx.i32(i32 %%mask, i32 %%lo, i32 %%leader, i32 31)\n"
	"  %%bhi = call i32 @llvm.nvvm.shfl.sync.idx.i32(i32 %%mask, i32 %%hi, i32 %%leader, i32 31)\n"
	"  %%blo64 = zext i32 %%blo to i64\n"
	"  %%bhi64 = zext i32 %%bhi to i64\n"
	"  %%bhs = shl i64 %%bhi64, 32\n"
	"  %%b = or i64 %%bhs, %%blo64\n"
	"  %%slot = getelementptr i64, ptr addrspace(1) %%r0out, i64 %%g64\n"
	"  store i64 %%b, ptr addrspace(1) %%slot, align 8\n"
	"  br label %%done\n"
	"done:\n"
	"  ret void\n"
	"}\n";

static int append(char **buf, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int append(char **buf, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;
	char *b;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	b = realloc(*buf, *len + (size_t)n + 1);
	if (!b)
		return -ENOMEM;
	*buf = b;
	va_start(ap, fmt);
	vsnprintf(b + *len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	*len += (size_t)n;
	return 0;
}

int gpuext_ptx_runtime_ir(size_t map_cnt, bool per_thread, bool with_vars, const char *entry,
			  char **out)
{
	unsigned nmaps = map_cnt ? (unsigned)map_cnt : 1;
	size_t len = 0;
	char *buf = NULL;
	int err;

	err = append(&buf, &len, "@gpuext_rt_maps = addrspace(1) externally_initialized global "
			   "[%u x { i64, i64, i32, i32, i32, i32, i32, i32 }] zeroinitializer, "
			   "align 8\n", nmaps);
	if (!err)
		err = append(&buf, &len, "%s", rt_common);
	if (!err)
		err = append(&buf, &len, "%s", per_thread ? rt_rb_thread : rt_rb_warp);
	if (!err)
		err = append(&buf, &len, "%s", rt_hash);
	if (!err && with_vars)
		err = append(&buf, &len, rt_vars, GPUEXT_PTX_MAX_VARS, GPUEXT_PTX_MAX_VARS,
			     GPUEXT_PTX_MAX_VARS, GPUEXT_PTX_MAX_VARS);
	if (!err && entry)
		err = append(&buf, &len, per_thread ? rt_kernel_thread : rt_kernel_warp, entry,
			     entry);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	return 0;
}


/*
 * Replaces every occurrence of @from in *@buf by @to (both NUL-terminated).
 * Returns the count, or -ENOMEM.
 */
static int replace_all(char **buf, size_t *len, const char *from, const char *to)
{
	size_t fl = strlen(from), tl = strlen(to), n = 0, o = 0, cnt = 0;
	const char *p;
	char *out;

	for (p = *buf; (p = strstr(p, from)); p += fl)
		cnt++;
	if (!cnt)
		return 0;
	out = malloc(*len + cnt * tl + 1);
	if (!out)
		return -ENOMEM;
	for (const char *q = *buf; (p = strstr(q, from)); q = p + fl) {
		memcpy(out + o, q, (size_t)(p - q));
		o += (size_t)(p - q);
		memcpy(out + o, to, tl);
		o += tl;
		n = (size_t)(p + fl - *buf);
	}
	memcpy(out + o, *buf + n, *len - n);
	o += *len - n;
	out[o] = '\0';
	free(*buf);
	*buf = out;
	*len = o;
	return (int)cnt;
}

/*
 * The runtime with the maps' shapes compiled in (device probes: the object's
 * maps are known when the probes are emitted). @gpuext_rt_maps becomes an
 * LLVM constant holding each map's type, key_size, value_size, stride and
 * (arrays, hashes) max_entries, so O2 folds the helpers' dispatch on the map
 * type, the key hashing loop of maps that are not hashes, the multiplications
 * by the stride and an array's bounds check: an array lookup is an address.
 * The fields the host writes at load time that depend on the GPU or the
 * allocation (base, aux, a ring's max_entries (its shard size), nr_slots) are
 * read through an inline-asm copy of the pointer that LLVM cannot see
 * through, so none of them is ever folded to the initializer's zero. The table keeps its 40-byte layout: the host fills it
 * exactly as before (cuModuleGetGlobal + copy), and the fields it writes
 * into the "constant" are the ones the code reads from memory.
 */
int gpuext_ptx_runtime_ir_shaped(size_t map_cnt, const struct gpuext_ptx_map_desc *shapes,
				 bool per_thread, bool with_vars, bool warp0_only, char **out)
{
	static const char *const launder[][2] = {
		/* base (field 0): also 8-aligned, which LLVM then knows (one st.u64, not eight st.u8) */
		{ "  %base = load i64, ptr %d, align 8\n",
		  "  %d.c0 = addrspacecast ptr %d to ptr addrspace(4)\n"
		  "  %d.dyn0 = call ptr addrspace(4) asm \"mov.b64 $0, $1;\", \"=l,l\"(ptr addrspace(4) %d.c0)\n"
		  "  %base.raw = load i64, ptr addrspace(4) %d.dyn0, align 8\n"
		  "  %base = and i64 %base.raw, -8\n" },
		{ "  %base = load i64, ptr addrspace(1) %p, align 8\n",
		  "  %p.dyn0 = call ptr addrspace(4) asm \"mov.b64 $0, $1;\", \"=l,l\"(ptr addrspace(4) %p)\n"
		  "  %base.raw = load i64, ptr addrspace(4) %p.dyn0, align 8\n"
		  "  %base = and i64 %base.raw, -8\n" },
		{ "  %basep = load ptr, ptr %d, align 8\n",
		  "  %d.c1 = addrspacecast ptr %d to ptr addrspace(4)\n"
		  "  %d.dyn1 = call ptr addrspace(4) asm \"mov.b64 $0, $1;\", \"=l,l\"(ptr addrspace(4) %d.c1)\n"
		  "  %basep.raw = load ptr, ptr addrspace(4) %d.dyn1, align 8\n"
		  "  %basep = call ptr @llvm.ptrmask.p0.i64(ptr %basep.raw, i64 -8)\n" },
		/* the table lives in the constant space (below): its accessors point there */
		{ "ptr addrspace(1) @gpuext_rt_maps", "ptr addrspace(4) @gpuext_rt_maps" },
		{ "  %g = addrspacecast ptr addrspace(1) %p to ptr\n",
		  "  %g = addrspacecast ptr addrspace(4) %p to ptr\n" },
	};
	unsigned nmaps = map_cnt ? (unsigned)map_cnt : 1;
	char *buf = NULL, *hdr = NULL, *nl, *lines = NULL;
	size_t len = 0, hl = 0, ll = 0;
	int err, n = 0;

	if (map_cnt && !shapes)
		return -EINVAL;
	err = gpuext_ptx_runtime_ir(map_cnt, per_thread, with_vars, NULL, &buf);
	if (err)
		return err;
	len = strlen(buf);
	for (size_t i = 0; n >= 0 && i < sizeof(launder) / sizeof(launder[0]); i++)
		n = replace_all(&buf, &len, launder[i][0], launder[i][1]);
	/*
	 * Only warp 0 of a block writes (every probe is warp0-guarded): the
	 * shard from %smid and %ctaid.x. Warp 0 of a block of 8k warps sits in
	 * a hardware slot that is a multiple of 8, so %warpid added nothing
	 * there, and its S2R cost kernelretsnoop ~0.2 points on the decode step
	 * (H200, ring full, ptxab: 1.0293-1.0296 -> 1.0271-1.0280).
	 */
	if (n >= 0 && warp0_only)
		n = replace_all(&buf, &len, "  %wp = call i32 @llvm.nvvm.read.ptx.sreg.warpid()\n",
				"  %wp = add i32 0, 0\n");
	/* gpuext_rt_map_value(): base 0 (a table never filled) -> the scratch below */
	if (n >= 0)
		n = replace_all(&buf, &len, "  %a = add i64 %base, %o\n",
				"  %unplaced = icmp eq i64 %base, 0\n"
				"  %sb = ptrtoint ptr addrspace(1) @gpuext_rt_scratch to i64\n"
				"  %b = select i1 %unplaced, i64 %sb, i64 %base\n"
				"  %a = add i64 %b, %o\n");
	if (n < 0) {
		free(buf);
		return n;
	}
	/*
	 * aux, max_entries, nr_slots (fields 1, 5, 7): "  %X = getelementptr
	 * inbounds %gx.desc, ptr %P, i32 0, i32 K" becomes a laundered copy of
	 * %P and the same GEP on it. Except max_entries where an array or a hash
	 * reads it: the host writes the declared count there, so it is compiled
	 * in (the bounds check of a constant key folds away, and a lookup waits
	 * for one load, the base, not two); a ring's (its shard size) is read.
	 */
	const char *fn = "";

	for (const char *p = buf; !err && *p;) {
		static const char g[] = "getelementptr inbounds %gx.desc, ptr %";
		const char *e = strchr(p, '\n'), *eq, *gp, *pe;
		int ln = e ? (int)(e - p) : (int)strlen(p), k = -1;
		char line[512];

		snprintf(line, sizeof(line), "%.*s", ln, p);
		if (!strncmp(line, "define ", 7))
			fn = strstr(line, "@gx.array_elem(") ? "array" :
			     strstr(line, "@gx.hash_update(") ? "hash" : "";
		eq = strstr(line, " = ");
		gp = strstr(line, g);
		pe = gp ? strchr(gp + sizeof(g) - 1, ',') : NULL;
		if (ln < (int)sizeof(line) - 1 && eq && gp && pe &&
		    sscanf(pe, ", i32 0, i32 %d", &k) == 1 &&
		    (k == 1 || (k == 5 && !*fn) || k == 7)) {
			const char *ptr = gp + sizeof(g) - 2;	/* "%P" */
			const char *lhs = line + strspn(line, " ");	/* "%X" */
			int pl = (int)(pe - ptr), xl = (int)(eq - lhs);

			err = append(&lines, &ll, "  %.*s.c = addrspacecast ptr %.*s to ptr addrspace(4)\n"
				     "  %.*s.dyn = call ptr addrspace(4) asm \"mov.b64 $0, $1;\", "
				     "\"=l,l\"(ptr addrspace(4) %.*s.c)\n"
				     "  %.*s.cg = addrspacecast ptr addrspace(4) %.*s.dyn to ptr\n"
				     "%.*s%.*s.cg%s\n", xl, lhs, pl, ptr, xl, lhs, xl, lhs,
				     xl, lhs, xl, lhs, (int)(ptr - line), line, xl, lhs, pe);
		} else {
			err = append(&lines, &ll, "%.*s\n", ln, p);
		}
		p += ln + (e ? 1 : 0);
	}
	free(buf);
	if (err) {
		free(lines);
		return err;
	}
	buf = lines;
	/* The first line is the table's definition: the constant replaces it. */
	nl = strchr(buf, '\n');
	if (!nl || strncmp(buf, "@gpuext_rt_maps = ", 18)) {
		free(buf);
		return -EINVAL;
	}
	err = append(&hdr, &hl, "@gpuext_rt_maps = addrspace(4) constant [%u x { i64, i64, i32, i32, "
		     "i32, i32, i32, i32 }] [", nmaps);
	for (unsigned i = 0; !err && i < nmaps; i++) {
		struct gpuext_ptx_map_desc z = { 0 };
		const struct gpuext_ptx_map_desc *d = map_cnt ? &shapes[i] : &z;

		err = append(&hdr, &hl, "%s{ i64, i64, i32, i32, i32, i32, i32, i32 } { i64 0, i64 0, "
			     "i32 %u, i32 %u, i32 %u, i32 %u, i32 %u, i32 0 }", i ? ", " : "",
			     d->type, d->key_size, d->value_size,
			     d->type == BPF_MAP_TYPE_RINGBUF ? 0 : d->max_entries, d->stride);
	}
	/*
	 * A direct value (a global variable: a 1-entry array, ld_imm64 src=2)
	 * has no NULL to fall back on: where the host never filled the table (a
	 * context it could not set up) it points into zeroed scratch, not at 0.
	 */
	if (!err) {
		uint32_t scratch = 8;

		for (unsigned i = 0; i < map_cnt; i++)
			if (shapes[i].type == BPF_MAP_TYPE_ARRAY && shapes[i].max_entries == 1 &&
			    shapes[i].stride > scratch)
				scratch = shapes[i].stride;
		err = append(&hdr, &hl, "], align 8\n@gpuext_rt_scratch = internal addrspace(1) global "
			     "[%u x i8] zeroinitializer, align 8\n%s", scratch, nl + 1);
	}
	free(buf);
	if (err) {
		free(hdr);
		return err;
	}
	*out = hdr;
	return 0;
}

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
#include "ptx/ptx.h"
#include "ptx/ptx_impl.h"

_Static_assert(GPUEXT_FUNC_get_globaltimer == 4352 && GPUEXT_FUNC_get_block_id == 4357,
	       "device helper ids as the IR below spells them");
/* The IR below hard-codes these (linux/bpf.h); a change would be an ABI break. */
_Static_assert(BPF_MAP_TYPE_ARRAY == 2, "array map type");
_Static_assert(BPF_MAP_TYPE_PERCPU_ARRAY == 6, "per-CPU array map type");
_Static_assert(BPF_MAP_TYPE_RINGBUF == 27, "ring buffer map type");
_Static_assert(BPF_FUNC_ringbuf_output == 130 && BPF_FUNC_ringbuf_query == 134, "ringbuf ids");
_Static_assert(sizeof(struct gpuext_ptx_map_desc) == 40, "map descriptor layout");
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
	"declare i64 @llvm.nvvm.read.ptx.sreg.globaltimer()\n"
	"declare i64 @llvm.nvvm.read.ptx.sreg.clock64()\n"
	"declare i32 @llvm.nvvm.activemask()\n"
	"declare i32 @llvm.nvvm.shfl.sync.idx.i32(i32, i32, i32, i32)\n"
	"declare i32 @llvm.cttz.i32(i32, i1)\n"
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
	"  %base = load i64, ptr %d, align 8\n"
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
	"  %a = add i64 %base, %off\n"
	"  %r = inttoptr i64 %a to ptr\n"
	"  ret ptr %r\n"
	"none:\n"
	"  ret ptr null\n"
	"}\n"
	"\n"
	/* 1: bpf_map_lookup_elem(map, key) */
	"define i64 @gpuext_rt_helper_1(i64 %m, i64 %k, i64 %a3, i64 %a4, i64 %a5) {\n"
	"  %d = inttoptr i64 %m to ptr\n"
	"  %e = call ptr @gx.array_elem(ptr %d, i64 %k)\n"
	"  %r = ptrtoint ptr %e to i64\n"
	"  ret i64 %r\n"
	"}\n"
	/* 2: bpf_map_update_elem(map, key, value, flags), the host's checks in its order */
	"define i64 @gpuext_rt_helper_2(i64 %m, i64 %k, i64 %v, i64 %flags, i64 %a5) {\n"
	"entry:\n"
	"  %d = inttoptr i64 %m to ptr\n"
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
	/* 3: bpf_map_delete_elem: array entries cannot be deleted; other maps are not on the device */
	"define i64 @gpuext_rt_helper_3(i64 %m, i64 %k, i64 %a3, i64 %a4, i64 %a5) {\n"
	"  %d = inttoptr i64 %m to ptr\n"
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
	/* Reserves a record of %size bytes; its data address, or 0 (a full ring counts a drop). */
	"define internal i64 @gx.rb_reserve(ptr %d, i64 %size) {\n"
	"entry:\n"
	"  %tp = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 2\n"
	"  %type = load i32, ptr %tp, align 4\n"
	"  %isrb = icmp eq i32 %type, 27\n"
	"  br i1 %isrb, label %chk, label %fail\n"
	"chk:\n"
	"  %cp = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 5\n"
	"  %cap32 = load i32, ptr %cp, align 4\n"
	"  %cap = zext i32 %cap32 to i64\n"
	"  %withhdr = add i64 %size, 8\n"
	"  %nz = icmp ne i64 %size, 0\n"
	"  %small = icmp ule i64 %size, 1073741823\n"
	"  %fits = icmp ule i64 %withhdr, %cap\n"
	"  %ok0 = and i1 %nz, %small\n"
	"  %ok = and i1 %ok0, %fits\n"
	"  br i1 %ok, label %go, label %fail\n"
	"go:\n"
	"  %data = load i64, ptr %d, align 8\n"
	"  %ap = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 1\n"
	"  %aux = load i64, ptr %ap, align 8\n"
	"  %hdr = inttoptr i64 %aux to ptr\n"
	"  %consp = getelementptr inbounds i8, ptr %hdr, i64 8\n"
	"  %dropp = getelementptr inbounds i8, ptr %hdr, i64 16\n"
	"  %t0 = add i64 %size, 15\n"
	"  %tot = and i64 %t0, -8\n"
	"  %mask = sub i64 %cap, 1\n"
	"  br label %loop\n"
	"loop:\n"
	"  %prod = load atomic i64, ptr %hdr monotonic, align 8\n"
	"  %cons = load atomic i64, ptr %consp acquire, align 8\n"
	"  %off = and i64 %prod, %mask\n"
	"  %end = add i64 %off, %tot\n"
	"  %wraps = icmp ugt i64 %end, %cap\n"
	"  %left = sub i64 %cap, %off\n"
	"  %pad = select i1 %wraps, i64 %left, i64 0\n"
	"  %np0 = add i64 %prod, %pad\n"
	"  %np = add i64 %np0, %tot\n"
	"  %used = sub i64 %np, %cons\n"
	"  %full = icmp ugt i64 %used, %cap\n"
	"  br i1 %full, label %drop, label %cas\n"
	"cas:\n"
	"  %pair = cmpxchg ptr %hdr, i64 %prod, i64 %np acq_rel monotonic, align 8\n"
	"  %won = extractvalue { i64, i1 } %pair, 1\n"
	"  br i1 %won, label %got, label %loop\n"
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
	"  store atomic i32 %ph, ptr %pp release, align 8\n"
	"  br label %rec\n"
	"rec:\n"
	"  %roff = select i1 %wraps, i64 0, i64 %off\n"
	"  %ra = add i64 %data, %roff\n"
	"  %rp = inttoptr i64 %ra to ptr\n"
	"  %sz32 = trunc i64 %size to i32\n"
	"  %rh = or i32 %sz32, -2147483648\n"	/* BUSY */
	"  %rp4 = getelementptr inbounds i8, ptr %rp, i64 4\n"
	"  store i32 0, ptr %rp4, align 4\n"
	"  store atomic i32 %rh, ptr %rp release, align 8\n"
	"  %r = add i64 %ra, 8\n"
	"  ret i64 %r\n"
	"drop:\n"
	"  %old = atomicrmw add ptr %dropp, i64 1 monotonic, align 8\n"
	"  ret i64 0\n"
	"fail:\n"
	"  ret i64 0\n"
	"}\n"
	/* Publishes (or discards) a reserved record: its header loses BUSY. */
	"define internal void @gx.rb_commit(i64 %rec, i32 %discard) {\n"
	"  %ha = sub i64 %rec, 8\n"
	"  %h = inttoptr i64 %ha to ptr\n"
	"  %len = load i32, ptr %h, align 8\n"
	"  %clr = and i32 %len, 2147483647\n"
	"  %new = or i32 %clr, %discard\n"
	"  store atomic i32 %new, ptr %h release, align 8\n"
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
	/* 134: bpf_ringbuf_query(rb, flags) */
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
	"  %hdr = inttoptr i64 %aux to ptr\n"
	"  %consp = getelementptr inbounds i8, ptr %hdr, i64 8\n"
	"  %cons = load atomic i64, ptr %consp acquire, align 8\n"
	"  %prod = load atomic i64, ptr %hdr acquire, align 8\n"
	"  %cp = getelementptr inbounds %gx.desc, ptr %d, i32 0, i32 5\n"
	"  %cap32 = load i32, ptr %cp, align 4\n"
	"  %cap = zext i32 %cap32 to i64\n"
	"  %avail = sub i64 %prod, %cons\n"
	"  switch i64 %flags, label %zero [ i64 0, label %r0\n"
	"                                   i64 1, label %r1\n"
	"                                   i64 2, label %r2\n"
	"                                   i64 3, label %r3 ]\n"
	"r0:\n"
	"  ret i64 %avail\n"
	"r1:\n"
	"  ret i64 %cap\n"
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


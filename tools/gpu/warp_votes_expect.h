/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the extra case rt_warp_votes (tools/gpu/ptx_isa_runner.c) must give on
 * a GPU, thread by thread: shared by ptx_isa_runner.c (it runs the case) and
 * ptx_bundle_run.c (it checks a bundle's run without gpuext). The program
 * returns ballot(lane & 1) | first(lane + 100) << 32 | shfl(lane * 3, 5) << 40
 * (the gpuext_warp_* helpers, include/gpuext/gpuext.h).
 */
#ifndef GPUEXT_TOOLS_GPU_WARP_VOTES_EXPECT_H
#define GPUEXT_TOOLS_GPU_WARP_VOTES_EXPECT_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Thread @t of @threads (blocks of whole warps, the last one maybe partial).
 * Per thread, every lane of a warp votes: odd lanes in the ballot, lane 0 is
 * the first, lane 5 holds 15 when the warp has it. Warp mode: the leader
 * (lane 0) runs alone, so its ballot is empty, lane 5 is idle (0), and every
 * thread of the warp gets the leader's r0.
 */
static inline uint64_t warp_votes_expect(uint32_t t, uint32_t threads, bool warp)
{
	uint32_t k = threads - (t & ~31u), mask;
	uint64_t shfl;

	if (warp)
		return 100ull << 32;
	k = k > 32 ? 32 : k;
	mask = k == 32 ? 0xffffffffu : (1u << k) - 1;
	shfl = k > 5 ? 15 : 0;
	return (uint64_t)(0xaaaaaaaau & mask) | 100ull << 32 | shfl << 40;
}

#endif

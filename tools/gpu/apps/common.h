// SPDX-License-Identifier: Apache-2.0
/*
 * Shared by the CUDA test apps: error checks, %globaltimer, and the "GT"
 * lines - the ground truth tools/gpu/probes.sh checks the probe tools
 * against. A GT line is "GT <what> key=value ...", one fact per line.
 */
#ifndef GPUEXT_APPS_COMMON_H
#define GPUEXT_APPS_COMMON_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define CK(call)                                                                   \
	do {                                                                       \
		cudaError_t e_ = (call);                                           \
		if (e_ != cudaSuccess) {                                           \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
				cudaGetErrorString(e_));                           \
			exit(3);                                                   \
		}                                                                  \
	} while (0)

/* After every launch: a launch error is otherwise silent. */
#define CK_LAUNCH() CK(cudaGetLastError())

__device__ __forceinline__ unsigned long long gt_globaltimer()
{
	unsigned long long t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

static inline void gt_launch(const char *kernel, dim3 g, dim3 b, unsigned times = 1)
{
	unsigned long long blocks = (unsigned long long)g.x * g.y * g.z;
	unsigned tpb = b.x * b.y * b.z;

	printf("GT launch kernel=%s grid=%u,%u,%u block=%u,%u,%u blocks=%llu threads=%llu warps=%llu times=%u\n",
	       kernel, g.x, g.y, g.z, b.x, b.y, b.z, blocks * times, blocks * tpb * times,
	       blocks * ((tpb + 31) / 32) * times, times);
}

/* FNV-1a over the result bytes: equal with and without probes, or the probes changed it. */
static inline unsigned long long gt_checksum(const void *p, size_t n)
{
	const unsigned char *c = (const unsigned char *)p;
	unsigned long long h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 1099511628211ull;
	return h;
}

static inline int gt_result(bool ok, const void *p, size_t n)
{
	printf("GT result %s checksum=%016llx\n", ok ? "ok" : "WRONG", gt_checksum(p, n));
	return ok ? 0 : 1;
}

#endif

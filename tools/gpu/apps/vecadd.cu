// SPDX-License-Identifier: Apache-2.0
/*
 * vecadd N [BLOCK [3d]]: c[i] = a[i] + b[i] for i < N, one thread per element.
 * With "3d" the kernel is vecadd3d, launched with blocks (32, BLOCK/64, 2)
 * on a grid two deep in z: the launches the preload library must not give
 * a kernel's flat twin (hal/nvidia/ptx_twin.c), whose probes take z as 0.
 * Ground truth: the launch geometry, and the exact global access pattern:
 * thread i loads a+4i and b+4i and stores c+4i (4 bytes each), nothing else;
 * the grid is rounded up, so threads i >= N touch nothing. Built with plain
 * nvcc (static cudart, the default) and, as vecadd_shared, -cudart shared.
 */
#include <cstring>
#include <vector>

#include "common.h"

__global__ void vecadd(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] + b[i];
}

/* The same, its element from the thread's place in a 3-D block of a 3-D grid. */
__global__ void vecadd3d(const float *a, const float *b, float *c, int n)
{
	unsigned blk = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
	unsigned tid = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
	int i = (int)(blk * blockDim.x * blockDim.y * blockDim.z + tid);

	if (i < n)
		c[i] = a[i] + b[i];
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1 << 20;
	int bs = argc > 2 ? atoi(argv[2]) : 256;
	bool deep = argc > 3 && !strcmp(argv[3], "3d");
	std::vector<float> a(n), b(n), c(n);
	float *da, *db, *dc;
	cudaEvent_t e0, e1;
	float ms;
	bool ok = true;

	for (int i = 0; i < n; i++) {
		a[i] = (float)(i % 1000) * 0.5f;
		b[i] = (float)((i * 7) % 1013);
	}
	CK(cudaMalloc(&da, n * sizeof(float)));
	CK(cudaMalloc(&db, n * sizeof(float)));
	CK(cudaMalloc(&dc, n * sizeof(float)));
	CK(cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMemset(dc, 0xff, n * sizeof(float)));
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	dim3 g((n + bs - 1) / bs), blk(bs);
	if (deep) {
		g = dim3((n + 2 * bs - 1) / (2 * bs), 1, 2);
		blk = dim3(32, bs / 64, 2);
	}
	CK(cudaEventRecord(e0));
	if (deep)
		vecadd3d<<<g, blk>>>(da, db, dc, n);
	else
		vecadd<<<g, blk>>>(da, db, dc, n);
	CK_LAUNCH();
	CK(cudaEventRecord(e1));
	CK(cudaEventSynchronize(e1));
	CK(cudaEventElapsedTime(&ms, e0, e1));
	CK(cudaMemcpy(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		ok &= c[i] == a[i] + b[i];
	gt_launch(deep ? "vecadd3d" : "vecadd", g, blk);
	printf("GT buffers kernel=%s n=%d elem=4 a=0x%llx b=0x%llx c=0x%llx\n", deep ? "vecadd3d" : "vecadd", n,
	       (unsigned long long)da, (unsigned long long)db, (unsigned long long)dc);
	printf("GT time kernel=%s ms=%.4f\n", deep ? "vecadd3d" : "vecadd", ms);
	return gt_result(ok, c.data(), n * sizeof(float));
}

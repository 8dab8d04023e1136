// SPDX-License-Identifier: Apache-2.0
/*
 * devfunc N: y[i] = 2 x[i] + y[i] for i < N. The kernel loads x[i]; a
 * device function the compiler does not inline (__noinline__: a .func in
 * the PTX, reached by call) loads and stores y[i]. Ground truth: the exact
 * global access pattern (x+4i and y+4i loaded, y+4i stored, nothing else):
 * memtrace sees y's only if device functions are instrumented, and the
 * simulator trace must keep both in one kernel.
 */
#include <vector>

#include "common.h"

__device__ __noinline__ void axpy_at(float xv, float *y, int i)
{
	y[i] = 2.0f * xv + y[i];
}

__global__ void devfunc_axpy(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		axpy_at(x[i], y, i);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4096;
	std::vector<float> x(n), y(n), out(n);
	float *dx, *dy;
	bool ok = true;

	for (int i = 0; i < n; i++) {
		x[i] = (float)(i % 977);
		y[i] = (float)((i * 3) % 101);
	}
	CK(cudaMalloc(&dx, n * sizeof(float)));
	CK(cudaMalloc(&dy, n * sizeof(float)));
	CK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
	dim3 g((n + 255) / 256), blk(256);
	devfunc_axpy<<<g, blk>>>(dx, dy, n);
	CK_LAUNCH();
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(out.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		ok &= out[i] == 2.0f * x[i] + y[i];
	gt_launch("devfunc_axpy", g, blk);
	printf("GT buffers kernel=devfunc_axpy n=%d elem=4 x=0x%llx y=0x%llx\n", n,
	       (unsigned long long)dx, (unsigned long long)dy);
	return gt_result(ok, out.data(), n * sizeof(float));
}

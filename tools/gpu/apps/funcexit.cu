// SPDX-License-Identifier: Apache-2.0
/*
 * funcexit N: out[i] = i for i < N, except that every thread whose index is
 * a multiple of 3 ends inside a device function the compiler does not inline
 * (__noinline__: a .func in the PTX) with PTX `exit`, before it writes.
 * Ground truth: the launch geometry (every launched thread exits once, in
 * the kernel or in the function) and out[i] (-1 where the thread ended early).
 */
#include <vector>

#include "common.h"

__device__ __noinline__ void quit_if(int yes)
{
	if (yes)
		asm volatile("exit;");
}

__global__ void funcexit(int *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	quit_if(i % 3 == 0);
	if (i < n)
		out[i] = i;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4096;
	std::vector<int> out(n);
	int *dout;
	bool ok = true;

	CK(cudaMalloc(&dout, n * sizeof(int)));
	CK(cudaMemset(dout, 0xff, n * sizeof(int)));
	dim3 g((n + 255) / 256), blk(256);
	funcexit<<<g, blk>>>(dout, n);
	CK_LAUNCH();
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(out.data(), dout, n * sizeof(int), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		ok &= out[i] == (i % 3 == 0 ? -1 : i);
	gt_launch("funcexit", g, blk);
	return gt_result(ok, out.data(), n * sizeof(int));
}

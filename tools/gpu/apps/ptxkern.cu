// SPDX-License-Identifier: Apache-2.0
/* The kernel ptxload loads as PTX text (nvcc -ptx ptxkern.cu at build time). */
extern "C" __global__ void ptx_axpb(const float *x, float *y, float a, float b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		y[i] = a * x[i] + b;
}

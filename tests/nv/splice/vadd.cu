// SPDX-License-Identifier: Apache-2.0
// Splicer input (tests/test_nv_splice.c): vector add, one load pair and a store per thread.
extern "C" __global__ void vadd(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] + b[i];
}

// SPDX-License-Identifier: Apache-2.0
// Splicer input: exits the compiler predicates (guarded returns, a data-dependent loop exit).
extern "C" __global__ void predexit(const int *keys, int *out, int n, int stop)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	int k = keys[i];
	if (k == stop)
		return;
	for (int j = 0; j < 8; j++) {
		if (keys[(i + j) % n] == stop)
			return;
		k = k * 31 + j;
	}
	out[i] = k;
}

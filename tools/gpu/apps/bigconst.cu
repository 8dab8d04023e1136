// SPDX-License-Identifier: Apache-2.0
/*
 * bigconst N: y[i] = x[i] + table[i mod 16380] with a __constant__ table of
 * 65,520 bytes, 16 short of the 64 KiB constant bank a module gets. The
 * probes' own map table cannot join it there: the splicer moves it to the
 * global space for this module (and says so). Ground truth: the launch
 * geometry and the result, so threadhist must count every warp and the
 * result must not change.
 */
#include <vector>

#include "common.h"

#define TABLE 16380

__constant__ float table[TABLE];

__global__ void bigconst_add(const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		y[i] = x[i] + table[i % TABLE];
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1 << 20;
	std::vector<float> x(n), y(n), t(TABLE);
	float *dx, *dy;
	bool ok = true;

	for (int i = 0; i < TABLE; i++)
		t[i] = (float)(i % 313) * 0.25f;
	for (int i = 0; i < n; i++)
		x[i] = (float)(i % 1009);
	CK(cudaMemcpyToSymbol(table, t.data(), TABLE * sizeof(float)));
	CK(cudaMalloc(&dx, n * sizeof(float)));
	CK(cudaMalloc(&dy, n * sizeof(float)));
	CK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
	dim3 g((n + 255) / 256), blk(256);
	bigconst_add<<<g, blk>>>(dx, dy, n);
	CK_LAUNCH();
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		ok &= y[i] == x[i] + t[i % TABLE];
	gt_launch("bigconst_add", g, blk);
	return gt_result(ok, y.data(), n * sizeof(float));
}

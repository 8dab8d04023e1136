// SPDX-License-Identifier: Apache-2.0
/*
 * multistream [STREAMS] [ITERS]: each stream runs ITERS rounds of scale
 * (x = 2x + 1) then shift (x = x - 1) on its own buffer, all streams at once.
 * Ground truth: 2 x STREAMS x ITERS launches of known geometry, and the
 * result x = x0 * 2^ITERS exactly (small integers in float).
 */
#include <vector>

#include "common.h"

__global__ void ms_scale(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] = 2 * x[i] + 1;
}

__global__ void ms_shift(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] = x[i] - 1;
}

int main(int argc, char **argv)
{
	int ns = argc > 1 ? atoi(argv[1]) : 4, iters = argc > 2 ? atoi(argv[2]) : 8;
	int n = 1 << 16, bs = 128;
	std::vector<cudaStream_t> st(ns);
	std::vector<float *> d(ns);
	std::vector<float> h(n), all;
	bool ok = true;

	for (int s = 0; s < ns; s++) {
		CK(cudaStreamCreateWithFlags(&st[s], cudaStreamNonBlocking));
		CK(cudaMalloc(&d[s], n * 4));
		for (int i = 0; i < n; i++)
			h[i] = (float)((i + s) % 7);
		CK(cudaMemcpy(d[s], h.data(), n * 4, cudaMemcpyHostToDevice));
	}
	dim3 g((n + bs - 1) / bs), blk(bs);
	for (int it = 0; it < iters; it++) {
		for (int s = 0; s < ns; s++) {
			ms_scale<<<g, blk, 0, st[s]>>>(d[s], n);
			CK_LAUNCH();
			ms_shift<<<g, blk, 0, st[s]>>>(d[s], n);
			CK_LAUNCH();
		}
	}
	CK(cudaDeviceSynchronize());
	for (int s = 0; s < ns; s++) {
		CK(cudaMemcpy(h.data(), d[s], n * 4, cudaMemcpyDeviceToHost));
		for (int i = 0; i < n; i++)
			ok &= h[i] == (float)((i + s) % 7) * (float)(1u << iters);
		all.insert(all.end(), h.begin(), h.end());
	}
	gt_launch("ms_scale", g, blk, ns * iters);
	gt_launch("ms_shift", g, blk, ns * iters);
	printf("GT launches total=%d\n", 2 * ns * iters);
	return gt_result(ok, all.data(), all.size() * 4);
}

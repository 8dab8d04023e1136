// SPDX-License-Identifier: Apache-2.0
/*
 * reduce N: sum of N ints with divergent branches everywhere: an interleaved
 * tree (if (tid % (2*s) == 0)), a tail block where threads >= N load 0, and a
 * divergent exit (only thread 0 of each block goes on to the atomicAdd; the
 * rest of warp 0 leaves earlier). Ground truth: geometry, so per-thread exit
 * counts (threadhist --per-thread) must equal the launched threads exactly.
 */
#include <vector>

#include "common.h"

__global__ void reduce_divergent(const int *in, unsigned long long *out, int n)
{
	extern __shared__ int s[];
	int tid = threadIdx.x, i = blockIdx.x * blockDim.x + tid;

	s[tid] = i < n ? in[i] : 0;
	__syncthreads();
	for (unsigned st = 1; st < blockDim.x; st *= 2) {
		if (tid % (2 * st) == 0)
			s[tid] += s[tid + st];
		__syncthreads();
	}
	if (tid != 0)
		return;
	atomicAdd(out, (unsigned long long)s[0]);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000003;
	int bs = 256;
	std::vector<int> h(n);
	unsigned long long want = 0, got = 0, *dout;
	int *din;

	for (int i = 0; i < n; i++) {
		h[i] = (i * 31) % 1001;
		want += (unsigned long long)h[i];
	}
	CK(cudaMalloc(&din, n * 4));
	CK(cudaMalloc(&dout, 8));
	CK(cudaMemcpy(din, h.data(), n * 4, cudaMemcpyHostToDevice));
	CK(cudaMemset(dout, 0, 8));
	dim3 g((n + bs - 1) / bs), blk(bs);
	reduce_divergent<<<g, blk, bs * sizeof(int)>>>(din, dout, n);
	CK_LAUNCH();
	CK(cudaMemcpy(&got, dout, 8, cudaMemcpyDeviceToHost));
	gt_launch("reduce_divergent", g, blk);
	printf("GT sum want=%llu got=%llu\n", want, got);
	return gt_result(got == want, &got, sizeof(got));
}

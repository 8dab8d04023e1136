// SPDX-License-Identifier: Apache-2.0
/*
 * graph [REPLAYS]: two kernels (x = x + 1, then x = 2x) captured into a CUDA
 * graph on a stream, the graph replayed REPLAYS times. Kernels inside graphs
 * must keep working when instrumented: the result is x0 after REPLAYS rounds of
 * (x + 1) * 2, and every replay launches both kernels (threadhist --per-thread
 * counts 2 x REPLAYS x the grid's threads).
 */
#include <vector>

#include "common.h"

__global__ void g_inc(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] = x[i] + 1;
}

__global__ void g_dbl(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] = 2 * x[i];
}

int main(int argc, char **argv)
{
	int replays = argc > 1 ? atoi(argv[1]) : 10, n = 10000, bs = 128;
	std::vector<float> h(n), want(n);
	cudaStream_t st;
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	float *d;
	bool ok = true;

	for (int i = 0; i < n; i++) {
		h[i] = (float)(i % 5);
		want[i] = h[i];
		for (int r = 0; r < replays; r++)
			want[i] = (want[i] + 1) * 2;
	}
	CK(cudaStreamCreate(&st));
	CK(cudaMalloc(&d, n * 4));
	CK(cudaMemcpy(d, h.data(), n * 4, cudaMemcpyHostToDevice));
	dim3 g((n + bs - 1) / bs), blk(bs);
	CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
	g_inc<<<g, blk, 0, st>>>(d, n);
	g_dbl<<<g, blk, 0, st>>>(d, n);
	CK(cudaStreamEndCapture(st, &graph));
	CK(cudaGraphInstantiate(&exec, graph, 0));
	for (int r = 0; r < replays; r++)
		CK(cudaGraphLaunch(exec, st));
	CK(cudaStreamSynchronize(st));
	CK(cudaMemcpy(h.data(), d, n * 4, cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		ok &= h[i] == want[i];
	gt_launch("g_inc", g, blk, replays);
	gt_launch("g_dbl", g, blk, replays);
	CK(cudaGraphExecDestroy(exec));
	CK(cudaGraphDestroy(graph));
	return gt_result(ok, h.data(), n * 4);
}

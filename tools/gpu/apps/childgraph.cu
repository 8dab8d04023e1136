// SPDX-License-Identifier: Apache-2.0
/*
 * childgraph [REPLAYS]: a graph whose one node is a child graph holding
 * x = x + 1 (c_inc), replayed REPLAYS times; then the instantiated graph's
 * child node is given a child graph holding x = 2x (c_dbl) with
 * cudaGraphExecChildGraphNodeSetParams and replayed REPLAYS times more. The
 * launch records must follow the update: launchlate pairs every first-block
 * start with a launch of its own kernel (2 x REPLAYS), and the result is x0
 * plus REPLAYS, doubled REPLAYS times.
 */
#include <vector>

#include "common.h"

__global__ void c_inc(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] = x[i] + 1;
}

__global__ void c_dbl(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] = 2 * x[i];
}

/* A graph with one kernel node running @fn over @d. */
static cudaGraph_t one_kernel(void *fn, float **d, int *n, dim3 g, dim3 b)
{
	cudaGraph_t gr;
	cudaGraphNode_t node;
	cudaKernelNodeParams p = {};
	void *args[] = { d, n };

	p.func = fn;
	p.gridDim = g;
	p.blockDim = b;
	p.kernelParams = args;
	CK(cudaGraphCreate(&gr, 0));
	CK(cudaGraphAddKernelNode(&node, gr, NULL, 0, &p));
	return gr;
}

int main(int argc, char **argv)
{
	int replays = argc > 1 ? atoi(argv[1]) : 6, n = 10000, bs = 128;
	std::vector<float> h(n), want(n);
	cudaGraph_t parent, inc, dbl;
	cudaGraphNode_t child;
	cudaGraphExec_t exec;
	cudaStream_t st;
	float *d;
	bool ok = true;

	for (int i = 0; i < n; i++) {
		h[i] = (float)(i % 7);
		want[i] = h[i] + replays;
		for (int r = 0; r < replays; r++)
			want[i] *= 2;
	}
	CK(cudaStreamCreate(&st));
	CK(cudaMalloc(&d, n * 4));
	CK(cudaMemcpy(d, h.data(), n * 4, cudaMemcpyHostToDevice));
	dim3 g((n + bs - 1) / bs), blk(bs);
	inc = one_kernel((void *)c_inc, &d, &n, g, blk);
	dbl = one_kernel((void *)c_dbl, &d, &n, g, blk);
	CK(cudaGraphCreate(&parent, 0));
	CK(cudaGraphAddChildGraphNode(&child, parent, NULL, 0, inc));
	CK(cudaGraphInstantiate(&exec, parent, 0));
	for (int r = 0; r < replays; r++)
		CK(cudaGraphLaunch(exec, st));
	CK(cudaStreamSynchronize(st));
	/* same topology, another kernel: the executable graph runs c_dbl from now on */
	CK(cudaGraphExecChildGraphNodeSetParams(exec, child, dbl));
	for (int r = 0; r < replays; r++)
		CK(cudaGraphLaunch(exec, st));
	CK(cudaStreamSynchronize(st));
	CK(cudaMemcpy(h.data(), d, n * 4, cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		ok &= h[i] == want[i];
	gt_launch("c_inc", g, blk, replays);
	gt_launch("c_dbl", g, blk, replays);
	CK(cudaGraphExecDestroy(exec));
	CK(cudaGraphDestroy(parent));
	CK(cudaGraphDestroy(inc));
	CK(cudaGraphDestroy(dbl));
	return gt_result(ok, h.data(), n * 4);
}

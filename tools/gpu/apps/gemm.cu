// SPDX-License-Identifier: Apache-2.0
/*
 * gemm [N]: C = A x B for N x N floats (N a multiple of 16), 16 x 16 tiles in
 * shared memory, one 16 x 16 block per tile of C (2-D grid and block).
 * Ground truth: the geometry, and per block the %globaltimer at its start
 * and after its last store (thread (0,0) after a barrier), printed as the
 * earliest start and the latest end: every block-exit timestamp of the
 * kernel must lie between them (plus the few instructions to the exit).
 */
#include <cmath>
#include <vector>

#include "common.h"

#define T 16

__global__ void gemm_tiled(const float *A, const float *B, float *C, int n,
			   unsigned long long *tstart, unsigned long long *tend)
{
	__shared__ float sa[T][T], sb[T][T];
	int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
	int bid = blockIdx.y * gridDim.x + blockIdx.x;
	float acc = 0;

	if (threadIdx.x == 0 && threadIdx.y == 0)
		tstart[bid] = gt_globaltimer();
	for (int k0 = 0; k0 < n; k0 += T) {
		sa[threadIdx.y][threadIdx.x] = A[row * n + k0 + threadIdx.x];
		sb[threadIdx.y][threadIdx.x] = B[(k0 + threadIdx.y) * n + col];
		__syncthreads();
		for (int k = 0; k < T; k++)
			acc += sa[threadIdx.y][k] * sb[k][threadIdx.x];
		__syncthreads();
	}
	C[row * n + col] = acc;
	__syncthreads();
	if (threadIdx.x == 0 && threadIdx.y == 0)
		tend[bid] = gt_globaltimer();
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 512;
	size_t nn = (size_t)n * n;
	std::vector<float> A(nn), B(nn), C(nn);
	float *dA, *dB, *dC;
	unsigned long long *ts, *te;
	dim3 g(n / T, n / T), blk(T, T);
	int nb = g.x * g.y;
	std::vector<unsigned long long> hs(nb), he(nb);
	cudaEvent_t e0, e1;
	float ms;
	bool ok = true;

	if (n % T) {
		fprintf(stderr, "gemm: N must be a multiple of %d\n", T);
		return 2;
	}
	for (size_t i = 0; i < nn; i++) {
		A[i] = (float)((i * 13) % 17) / 17.0f - 0.5f;
		B[i] = (float)((i * 7) % 19) / 19.0f - 0.5f;
	}
	CK(cudaMalloc(&dA, nn * 4));
	CK(cudaMalloc(&dB, nn * 4));
	CK(cudaMalloc(&dC, nn * 4));
	CK(cudaMalloc(&ts, nb * 8));
	CK(cudaMalloc(&te, nb * 8));
	CK(cudaMemcpy(dA, A.data(), nn * 4, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dB, B.data(), nn * 4, cudaMemcpyHostToDevice));
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	CK(cudaEventRecord(e0));
	gemm_tiled<<<g, blk>>>(dA, dB, dC, n, ts, te);
	CK_LAUNCH();
	CK(cudaEventRecord(e1));
	CK(cudaEventSynchronize(e1));
	CK(cudaEventElapsedTime(&ms, e0, e1));
	CK(cudaMemcpy(C.data(), dC, nn * 4, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(hs.data(), ts, nb * 8, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(he.data(), te, nb * 8, cudaMemcpyDeviceToHost));
	/* Check 64 entries against a float64 reference. */
	for (int s = 0; s < 64; s++) {
		int r = (s * 37) % n, c = (s * 101) % n;
		double ref = 0;

		for (int k = 0; k < n; k++)
			ref += (double)A[(size_t)r * n + k] * B[(size_t)k * n + c];
		ok &= fabs(ref - C[(size_t)r * n + c]) <= 1e-3 * (1 + fabs(ref));
	}
	unsigned long long lo = hs[0], hi = he[0];
	for (int b = 0; b < nb; b++) {
		lo = hs[b] < lo ? hs[b] : lo;
		hi = he[b] > hi ? he[b] : hi;
	}
	gt_launch("gemm_tiled", g, blk);
	printf("GT timer kernel=gemm_tiled start=%llu end=%llu\n", lo, hi);
	printf("GT time kernel=gemm_tiled ms=%.4f\n", ms);
	return gt_result(ok, C.data(), nn * 4);
}

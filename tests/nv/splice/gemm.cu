// SPDX-License-Identifier: Apache-2.0
// Splicer input: tiled GEMM with shared-memory tiles (shared loads/stores are not probed).
#define TILE 16

__global__ void gemm_tiled(const float *A, const float *B, float *C, int n)
{
	__shared__ float as[TILE][TILE], bs[TILE][TILE];
	int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
	float acc = 0.0f;

	for (int t = 0; t < (n + TILE - 1) / TILE; t++) {
		int ac = t * TILE + threadIdx.x, br = t * TILE + threadIdx.y;

		as[threadIdx.y][threadIdx.x] = row < n && ac < n ? A[row * n + ac] : 0.0f;
		bs[threadIdx.y][threadIdx.x] = br < n && col < n ? B[br * n + col] : 0.0f;
		__syncthreads();
#pragma unroll
		for (int k = 0; k < TILE; k++)
			acc += as[threadIdx.y][k] * bs[k][threadIdx.x];
		__syncthreads();
	}
	if (row < n && col < n)
		C[row * n + col] = acc;
}

// SPDX-License-Identifier: Apache-2.0
/*
 * gather N: for i < N, c[i] = a[p(i)] and s[2 i] = a[p(i)], with the
 * permutation p(i) = (i x 7919) mod N (N a power of 2: 7919 is odd, so p is
 * one-to-one). Ground truth: the exact global access pattern, in three
 * shapes memtrace records differently: i loads idx+4i and stores c+4i
 * (consecutive: one record per warp), loads a+4p(i) (scattered: one record
 * per lane), stores s+8i (affine with a stride of twice the size: one record
 * per warp with stride 8). idx holds p, computed on the host.
 */
#include <vector>

#include "common.h"

__global__ void gather(const int *idx, const float *a, float *c, float *s, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		float v = a[idx[i]];

		c[i] = v;
		s[2 * i] = v;
	}
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4096;
	std::vector<int> idx(n);
	std::vector<float> a(n), c(n), s(2 * (size_t)n);
	int *didx;
	float *da, *dc, *ds;
	bool ok = n > 0 && !(n & (n - 1));

	if (!ok) {
		fprintf(stderr, "gather: N must be a power of 2, not %d\n", n);
		return 2;
	}
	for (int i = 0; i < n; i++) {
		idx[i] = (int)(((long long)i * 7919) % n);
		a[i] = (float)(i % 991) + 0.25f;
	}
	CK(cudaMalloc(&didx, n * sizeof(int)));
	CK(cudaMalloc(&da, n * sizeof(float)));
	CK(cudaMalloc(&dc, n * sizeof(float)));
	CK(cudaMalloc(&ds, 2 * (size_t)n * sizeof(float)));
	CK(cudaMemcpy(didx, idx.data(), n * sizeof(int), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMemset(ds, 0, 2 * (size_t)n * sizeof(float)));
	dim3 g((n + 255) / 256), blk(256);
	gather<<<g, blk>>>(didx, da, dc, ds, n);
	CK_LAUNCH();
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(c.data(), dc, n * sizeof(float), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(s.data(), ds, 2 * (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++)
		ok &= c[i] == a[idx[i]] && s[2 * (size_t)i] == a[idx[i]] && s[2 * (size_t)i + 1] == 0;
	gt_launch("gather", g, blk);
	printf("GT buffers kernel=gather n=%d elem=4 idx=0x%llx a=0x%llx c=0x%llx s=0x%llx\n", n,
	       (unsigned long long)didx, (unsigned long long)da, (unsigned long long)dc,
	       (unsigned long long)ds);
	return gt_result(ok, c.data(), n * sizeof(float));
}

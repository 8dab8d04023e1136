// SPDX-License-Identifier: Apache-2.0
/*
 * multigpu [N]: the same kernel on every GPU of the machine, with a different
 * grid on each (device d adds (d + 1) * N elements), from one process: one
 * CUDA context per GPU, so the preload library places maps and ring buffers
 * per context and must tag each record with the right GPU. Ground truth: a
 * GT device line per GPU (its ordinal, its PCI address, by which the check
 * finds the system's number of the GPU, and the blocks launched there), the
 * launch lines, and the results. Exit 77 with fewer than two GPUs.
 */
#include <vector>

#include "common.h"

__global__ void mg_add(const float *a, float *c, int n, float k)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] + k;
}

int main(int argc, char **argv)
{
	int base = argc > 1 ? atoi(argv[1]) : 100000, ndev = 0, bs = 128;
	bool ok = true;
	unsigned long long sum = 0;

	CK(cudaGetDeviceCount(&ndev));
	if (ndev < 2) {
		fprintf(stderr, "multigpu: %d GPU(s): needs two or more\n", ndev);
		return 77;
	}
	std::vector<float *> da(ndev), dc(ndev);
	std::vector<int> n(ndev);
	for (int d = 0; d < ndev; d++) {
		n[d] = (d + 1) * base;
		std::vector<float> a(n[d]);

		for (int i = 0; i < n[d]; i++)
			a[i] = (float)(i % 977);
		CK(cudaSetDevice(d));
		CK(cudaMalloc(&da[d], n[d] * sizeof(float)));
		CK(cudaMalloc(&dc[d], n[d] * sizeof(float)));
		CK(cudaMemcpy(da[d], a.data(), n[d] * sizeof(float), cudaMemcpyHostToDevice));
	}
	/* All GPUs at once: every launch is queued before any is waited for. */
	for (int d = 0; d < ndev; d++) {
		dim3 g((n[d] + bs - 1) / bs), blk(bs);

		CK(cudaSetDevice(d));
		mg_add<<<g, blk>>>(da[d], dc[d], n[d], (float)(d + 1));
		CK(cudaGetLastError());
		gt_launch("mg_add", g, blk);
		char bus[32];
		CK(cudaDeviceGetPCIBusId(bus, (int)sizeof(bus), d));
		printf("GT device kernel=mg_add gpu=%d bus=%s blocks=%u\n", d, bus, g.x);
	}
	for (int d = 0; d < ndev; d++) {
		std::vector<float> c(n[d]);

		CK(cudaSetDevice(d));
		CK(cudaDeviceSynchronize());
		CK(cudaMemcpy(c.data(), dc[d], n[d] * sizeof(float), cudaMemcpyDeviceToHost));
		for (int i = 0; i < n[d]; i++)
			ok &= c[i] == (float)(i % 977) + (float)(d + 1);
		sum += gt_checksum(c.data(), n[d] * sizeof(float));
	}
	return gt_result(ok, &sum, sizeof(sum));
}

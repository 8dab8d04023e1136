// SPDX-License-Identifier: Apache-2.0
/*
 * ptxload FILE.ptx [N]: the CUDA Driver API alone, the way frameworks load
 * generated code: reads PTX text, cuModuleLoadData, cuLaunchKernel of
 * ptx_axpb (y = a x + b). Stands in for a framework (PyTorch/Triton/CuPy)
 * kernel whose module carries PTX where no such framework is installed.
 */
#include <vector>

#include <cuda.h>

#include "common.h"

#define CU(call)                                                                   \
	do {                                                                       \
		CUresult r_ = (call);                                              \
		if (r_ != CUDA_SUCCESS) {                                          \
			const char *s_ = "?";                                      \
			cuGetErrorString(r_, &s_);                                 \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, s_); \
			exit(3);                                                   \
		}                                                                  \
	} while (0)

int main(int argc, char **argv)
{
	FILE *f = argc > 1 ? fopen(argv[1], "rb") : NULL;
	int n = argc > 2 ? atoi(argv[2]) : 65536, bs = 256;
	std::vector<char> ptx;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr dx, dy;
	float a = 2.0f, b = 5.0f;
	std::vector<float> x(n), y(n);
	bool ok = true;
	int c;

	if (!f) {
		fprintf(stderr, "usage: ptxload FILE.ptx [N]\n");
		return 2;
	}
	while ((c = fgetc(f)) != EOF)
		ptx.push_back((char)c);
	ptx.push_back('\0');
	fclose(f);
	CU(cuInit(0));
	CU(cuDeviceGet(&dev, 0));
	CU(cuDevicePrimaryCtxRetain(&ctx, dev));
	CU(cuCtxSetCurrent(ctx));
	CU(cuModuleLoadData(&mod, ptx.data()));
	CU(cuModuleGetFunction(&fn, mod, "ptx_axpb"));
	for (int i = 0; i < n; i++)
		x[i] = (float)(i % 53);
	CU(cuMemAlloc(&dx, n * 4));
	CU(cuMemAlloc(&dy, n * 4));
	CU(cuMemcpyHtoD(dx, x.data(), n * 4));
	void *args[] = { &dx, &dy, &a, &b, &n };
	unsigned g = (n + bs - 1) / bs;
	CU(cuLaunchKernel(fn, g, 1, 1, bs, 1, 1, 0, NULL, args, NULL));
	CU(cuCtxSynchronize());
	CU(cuMemcpyDtoH(y.data(), dy, n * 4));
	for (int i = 0; i < n; i++)
		ok &= y[i] == a * x[i] + b;
	gt_launch("ptx_axpb", dim3(g), dim3(bs));
	printf("GT buffers kernel=ptx_axpb n=%d elem=4 x=0x%llx y=0x%llx\n", n,
	       (unsigned long long)dx, (unsigned long long)dy);
	CU(cuModuleUnload(mod));
	CU(cuDevicePrimaryCtxRelease(dev));
	return gt_result(ok, y.data(), n * 4);
}

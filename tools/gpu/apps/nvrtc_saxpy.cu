// SPDX-License-Identifier: Apache-2.0
/*
 * nvrtc_saxpy N: compiles a saxpy kernel from source at run time with NVRTC
 * (to PTX), loads it with cuModuleLoadDataEx and launches it with
 * cuLaunchKernel: the path JIT frameworks take. Ground truth: geometry and
 * the access pattern (thread i loads x+4i and y+4i, stores y+4i, i < N).
 */
#include <cstring>
#include <vector>

#include <cuda.h>
#include <nvrtc.h>

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

static const char *src =
	"extern \"C\" __global__ void nvrtc_saxpy(float a, const float *x, float *y, int n)\n"
	"{\n"
	"	int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
	"	if (i < n)\n"
	"		y[i] = a * x[i] + y[i];\n"
	"}\n";

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100000, bs = 128;
	nvrtcProgram prog;
	const char *opts[] = { "--gpu-architecture=compute_80" };
	size_t ptx_len;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr dx, dy;
	float a = 3.0f;
	std::vector<float> x(n), y(n), out(n);
	bool ok = true;

	if (nvrtcCreateProgram(&prog, src, "saxpy.cu", 0, NULL, NULL) != NVRTC_SUCCESS ||
	    nvrtcCompileProgram(prog, 1, opts) != NVRTC_SUCCESS) {
		size_t ll;
		nvrtcGetProgramLogSize(prog, &ll);
		std::vector<char> log(ll + 1);
		nvrtcGetProgramLog(prog, log.data());
		fprintf(stderr, "nvrtc: compile failed:\n%s\n", log.data());
		return 3;
	}
	nvrtcGetPTXSize(prog, &ptx_len);
	std::vector<char> ptx(ptx_len);
	nvrtcGetPTX(prog, ptx.data());
	nvrtcDestroyProgram(&prog);

	CU(cuInit(0));
	CU(cuDeviceGet(&dev, 0));
	CU(cuDevicePrimaryCtxRetain(&ctx, dev));
	CU(cuCtxSetCurrent(ctx));
	CU(cuModuleLoadDataEx(&mod, ptx.data(), 0, NULL, NULL));
	CU(cuModuleGetFunction(&fn, mod, "nvrtc_saxpy"));
	for (int i = 0; i < n; i++) {
		x[i] = (float)(i % 100);
		y[i] = (float)(i % 37);
	}
	CU(cuMemAlloc(&dx, n * 4));
	CU(cuMemAlloc(&dy, n * 4));
	CU(cuMemcpyHtoD(dx, x.data(), n * 4));
	CU(cuMemcpyHtoD(dy, y.data(), n * 4));
	void *args[] = { &a, &dx, &dy, &n };
	unsigned g = (n + bs - 1) / bs;
	CU(cuLaunchKernel(fn, g, 1, 1, bs, 1, 1, 0, NULL, args, NULL));
	CU(cuCtxSynchronize());
	CU(cuMemcpyDtoH(out.data(), dy, n * 4));
	for (int i = 0; i < n; i++)
		ok &= out[i] == a * x[i] + y[i];
	gt_launch("nvrtc_saxpy", dim3(g), dim3(bs));
	printf("GT buffers kernel=nvrtc_saxpy n=%d elem=4 x=0x%llx y=0x%llx\n", n,
	       (unsigned long long)dx, (unsigned long long)dy);
	CU(cuMemFree(dx));
	CU(cuMemFree(dy));
	CU(cuModuleUnload(mod));
	CU(cuDevicePrimaryCtxRelease(dev));
	return gt_result(ok, out.data(), n * 4);
}

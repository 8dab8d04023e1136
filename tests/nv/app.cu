// Test input for tests/test_nv_fatbin.c: built by nvcc into a shared object,
// loaded with dlopen, so the test reads the fatbin wrapper nvcc's host code
// registers from the process's own memory (the preload library's real case).
extern "C" __global__ void scale(float *x, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] *= a;
}

extern "C" int gpuext_test_app_marker(void)
{
	return 42;
}

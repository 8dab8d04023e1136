// Test input for tests/test_nv_fatbin.c: many instantiated kernels, so the
// PTX runs past 128 KiB and its compressed member spans several zstd blocks
// (Huffman literals in four streams, FSE tables, repeat modes).
template <int N, typename T>
__global__ void stencil(const T *in, T *out, int n, T w)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	T acc = 0;

#pragma unroll
	for (int k = -N; k <= N; k++) {
		int j = i + k;

		if (j >= 0 && j < n)
			acc += in[j] * (w + (T)k);
	}
	if (i < n)
		out[i] = acc;
}

template <int N>
__global__ void reduce(const float *in, float *out, int n)
{
	__shared__ float s[256];
	int t = threadIdx.x;
	float v = 0;

	for (int i = blockIdx.x * blockDim.x * N + t; i < n; i += blockDim.x * N)
		v += in[i];
	s[t] = v;
	__syncthreads();
	for (int w = 128; w > 0; w >>= 1) {
		if (t < w)
			s[t] += s[t + w];
		__syncthreads();
	}
	if (t == 0)
		atomicAdd(out, s[0]);
}

#define INST(N)                                                                  \
	template __global__ void stencil<N, float>(const float *, float *, int, float);   \
	template __global__ void stencil<N, double>(const double *, double *, int, double); \
	template __global__ void stencil<N, int>(const int *, int *, int, int);           \
	template __global__ void reduce<N>(const float *, float *, int);

INST(1) INST(2) INST(3) INST(4) INST(5) INST(6) INST(7) INST(8)
INST(9) INST(10) INST(11) INST(12) INST(13) INST(14) INST(15) INST(16)

// SPDX-License-Identifier: Apache-2.0
// Splicer input: a reduction with divergent branches, early returns and warp shuffles.
__device__ __noinline__ float clampf(float v, float lim)
{
	return v > lim ? lim : v;
}

extern "C" __global__ void reduce(const float *in, float *out, unsigned *flags, int n, float lim)
{
	__shared__ float part[32];
	unsigned tid = threadIdx.x, i = blockIdx.x * blockDim.x * 2 + tid;
	float v = 0.0f;

	if (blockIdx.x > 4096)
		return;			/* early exit, whole block */
	if (i < n)
		v = in[i];
	if (i + blockDim.x < n)
		v += in[i + blockDim.x];
	if (v < 0.0f) {
		flags[blockIdx.x] = 1;	/* divergent store */
		v = clampf(-v, lim);
	}
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_down_sync(0xffffffffu, v, o);
	if ((tid & 31) == 0)
		part[tid / 32] = v;
	__syncthreads();
	if (tid >= 32)
		return;			/* early exit, most warps */
	v = tid < blockDim.x / 32 ? part[tid] : 0.0f;
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_down_sync(0xffffffffu, v, o);
	if (tid == 0)
		atomicAdd(out, v);
}

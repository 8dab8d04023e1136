// SPDX-License-Identifier: Apache-2.0
// Splicer input: vector loads and stores (.v2/.v4), read-only (.nc) loads, 8/16/64-bit accesses.
extern "C" __global__ void vecmem(const float4 *__restrict__ a, double2 *b, unsigned char *c,
				  short *d, long long *e, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	float4 v = __ldg(&a[i]);
	double2 w = b[i];

	w.x += v.x + v.y;
	w.y += v.z * v.w;
	b[i] = w;
	c[i] = (unsigned char)(c[i] + 1);
	d[i] = (short)(d[i] * 3);
	e[i + n] = e[i] + 7;	/* e holds 2n elements */
}

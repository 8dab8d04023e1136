// SPDX-License-Identifier: Apache-2.0
/*
 * bench_kernels WORKLOAD [REPS]: the workloads bench/gpu/run.sh times with
 * and without probes. Each prints one line
 *   BENCH workload=W size=S reps=R median_ms=M min_ms=m per=P wall_median_ms=H
 * timed with CUDA events after a warm-up (which also takes the one-time
 * module JIT out of the numbers), and "CHECK ok|WRONG" for its result.
 * H: the host's wall time of a rep, its synchronize call included.
 *
 *   tiny      launch-bound: 20000 launches of a 1-block kernel; per = us/launch
 *   gemm      2048^3 fp32 tiled GEMM (16x16 tiles), one kernel >= 1 ms
 *   stencil   5-point Jacobi sweep over 20480^2 floats (3.3 GB moved)
 *   reduce    sum of 2^30 floats, grid-stride, one kernel
 *   decode    an LLM-like decode step: 32 x (layernorm, GEMV 4096x4096,
 *             softmax over 32 heads x 4096, GEMV 4096x4096), 128 kernels
 *   membound [REPS [LOG2N]]  c = a + b over 2^LOG2N floats (default 2^22; memtrace's
 *             case: every access traced, run at a smaller size)
 *
 *   ab-decode, ab-stencil [PAIRS]  the decode step or the stencil sweep in one
 *             process, alternately with the abr_* kernels (the reference, A) and
 *             the abp_* kernels (the same code; the copy a tool probes with
 *             `gpuext trace TOOL --kernel '*abp_*'`, B), in the order A B, B A, ...
 *             (PAIRS rounded up to even, at least 4; default 10, run.sh asks 60).
 *             Prints "ABBENCH workload=W pairs=N quads=Q ratio=R ratio_lo=L
 *             ratio_hi=H cover=C ref_ms=A probe_ms=B": R the median over quads
 *             (two pairs, A B then B A) of (B + B) / (A + A), [L, H] an interval
 *             that holds the true median with probability C (order statistics,
 *             C >= 0.9 from 10 quads on), A and B the medians of the steps. Both
 *             copies run on the same buffers in the same process, so what moves a
 *             run from one process to the next (placement, clocks) cancels. The
 *             CHECK also compares the two copies' outputs from the same state.
 */
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "../../tools/gpu/apps/common.h"

__global__ void k_tiny(int *p) { if (threadIdx.x == 0) p[blockIdx.x] += 1; }

#define T 16
__global__ void k_gemm(const float *A, const float *B, float *C, int n)
{
	__shared__ float sa[T][T], sb[T][T];
	int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
	float acc = 0;

	for (int k0 = 0; k0 < n; k0 += T) {
		sa[threadIdx.y][threadIdx.x] = A[row * n + k0 + threadIdx.x];
		sb[threadIdx.y][threadIdx.x] = B[(k0 + threadIdx.y) * n + col];
		__syncthreads();
#pragma unroll
		for (int k = 0; k < T; k++)
			acc += sa[threadIdx.y][k] * sb[k][threadIdx.x];
		__syncthreads();
	}
	C[row * n + col] = acc;
}

__device__ __forceinline__ void stencil_body(const float *in, float *out, int n)
{
	int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;

	if (x <= 0 || y <= 0 || x >= n - 1 || y >= n - 1)
		return;
	size_t i = (size_t)y * n + x;
	out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - n] + in[i + n]);
}

__global__ void k_reduce(const float *in, size_t n, float *out)
{
	__shared__ float s[256];
	float acc = 0;

	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		acc += in[i];
	s[threadIdx.x] = acc;
	__syncthreads();
	for (int st = blockDim.x / 2; st > 0; st /= 2) {
		if (threadIdx.x < st)
			s[threadIdx.x] += s[threadIdx.x + st];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(out, s[0]);
}

/* Decode step kernels: one block per row (GEMV) / per head (softmax). */
__device__ __forceinline__ void layernorm_body(const float *x, float *y, int d, float *s1, float *s2)
{
	float a = 0, b = 0;

	for (int i = threadIdx.x; i < d; i += blockDim.x) {
		a += x[i];
		b += x[i] * x[i];
	}
	s1[threadIdx.x] = a;
	s2[threadIdx.x] = b;
	__syncthreads();
	for (int st = blockDim.x / 2; st > 0; st /= 2) {
		if (threadIdx.x < st) {
			s1[threadIdx.x] += s1[threadIdx.x + st];
			s2[threadIdx.x] += s2[threadIdx.x + st];
		}
		__syncthreads();
	}
	float mean = s1[0] / d, var = s2[0] / d - mean * mean, inv = rsqrtf(var + 1e-5f);
	for (int i = threadIdx.x; i < d; i += blockDim.x)
		y[i] = (x[i] - mean) * inv;
}

__device__ __forceinline__ void gemv_body(const float *W, const float *x, float *y, int d, float *s)
{
	const float *w = W + (size_t)blockIdx.x * d;
	float acc = 0;

	for (int i = threadIdx.x; i < d; i += blockDim.x)
		acc += w[i] * x[i];
	s[threadIdx.x] = acc;
	__syncthreads();
	for (int st = blockDim.x / 2; st > 0; st /= 2) {
		if (threadIdx.x < st)
			s[threadIdx.x] += s[threadIdx.x + st];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		y[blockIdx.x] = s[0] * 1e-3f;
}

__device__ __forceinline__ void softmax_body(float *x, int len, float *s)
{
	float *r = x + (size_t)blockIdx.x * len, m = -INFINITY, sum = 0;

	for (int i = threadIdx.x; i < len; i += blockDim.x)
		m = fmaxf(m, r[i]);
	s[threadIdx.x] = m;
	__syncthreads();
	for (int st = blockDim.x / 2; st > 0; st /= 2) {
		if (threadIdx.x < st)
			s[threadIdx.x] = fmaxf(s[threadIdx.x], s[threadIdx.x + st]);
		__syncthreads();
	}
	m = s[0];
	__syncthreads();
	for (int i = threadIdx.x; i < len; i += blockDim.x)
		sum += __expf(r[i] - m);
	s[threadIdx.x] = sum;
	__syncthreads();
	for (int st = blockDim.x / 2; st > 0; st /= 2) {
		if (threadIdx.x < st)
			s[threadIdx.x] += s[threadIdx.x + st];
		__syncthreads();
	}
	sum = s[0];
	for (int i = threadIdx.x; i < len; i += blockDim.x)
		r[i] = __expf(r[i] - m) / sum;
}

/*
 * The kernels, and for the in-process A/B workloads (ab-decode, ab-stencil) two
 * more copies of each with the same body: abp_* (the copy a tool probes,
 * `gpuext trace TOOL --kernel '*abp_*'`) and abr_* (the reference, left alone).
 * The add copies serve bench/gpu/ptxab.cu's membound workload (k_add is the
 * membound row's kernel).
 */
#define BENCH_KERNELS(pfx)                                                          \
	__global__ void pfx##stencil(const float *in, float *out, int n)             \
	{                                                                           \
		stencil_body(in, out, n);                                           \
	}                                                                           \
	__global__ void pfx##layernorm(const float *x, float *y, int d)             \
	{                                                                           \
		__shared__ float s1[256], s2[256];                                  \
		layernorm_body(x, y, d, s1, s2);                                    \
	}                                                                           \
	__global__ void pfx##gemv(const float *W, const float *x, float *y, int d)  \
	{                                                                           \
		__shared__ float s[256];                                            \
		gemv_body(W, x, y, d, s);                                           \
	}                                                                           \
	__global__ void pfx##softmax(float *x, int len)                             \
	{                                                                           \
		__shared__ float s[256];                                            \
		softmax_body(x, len, s);                                            \
	}                                                                           \
	__global__ void pfx##add(const float *a, const float *b, float *c, int n)   \
	{                                                                           \
		int i = blockIdx.x * blockDim.x + threadIdx.x;                      \
                                                                                    \
		if (i < n)                                                          \
			c[i] = a[i] + b[i];                                         \
	}
BENCH_KERNELS(k_)
BENCH_KERNELS(abp_)
BENCH_KERNELS(abr_)

__global__ void k_fill(float *p, size_t n, unsigned seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		unsigned h = (unsigned)i * 2654435761u ^ seed;
		h ^= h >> 13;
		h *= 0x5bd1e995u;
		p[i] = (float)(h & 0xffff) / 65536.0f - 0.5f;
	}
}

__global__ void k_ones(float *p, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		p[i] = 1.0f;
}

static float *dalloc(size_t n, unsigned seed)
{
	float *p;

	CK(cudaMalloc(&p, n * sizeof(float)));
	k_fill<<<1024, 256>>>(p, n, seed);
	CK_LAUNCH();
	return p;
}

/*
 * Each rep: GPU time between two events, and the host's wall time from the
 * first event's record to the return of the synchronize call, which is where
 * an attached tool copies what its probes wrote (hal/nvidia/README.md).
 */
static std::vector<float> g_wall;

struct timer {
	cudaEvent_t a, b;
	std::chrono::steady_clock::time_point t0;
	timer() { CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b)); }
	void start()
	{
		t0 = std::chrono::steady_clock::now();
		CK(cudaEventRecord(a));
	}
	float stop()
	{
		float ms;

		CK(cudaEventRecord(b));
		CK(cudaEventSynchronize(b));
		g_wall.push_back(std::chrono::duration<float, std::milli>(
			std::chrono::steady_clock::now() - t0).count());
		CK(cudaEventElapsedTime(&ms, a, b));
		return ms;
	}
};

static void report(const char *w, const char *size, std::vector<float> &ms, double per)
{
	std::sort(ms.begin(), ms.end());
	std::sort(g_wall.begin(), g_wall.end());
	printf("BENCH workload=%s size=%s reps=%zu median_ms=%.4f min_ms=%.4f per=%.4f "
	       "wall_median_ms=%.4f\n", w, size, ms.size(), ms[ms.size() / 2], ms[0], per,
	       g_wall.empty() ? 0.0 : g_wall[g_wall.size() / 2]);
}

int main(int argc, char **argv)
{
	std::string w = argc > 1 ? argv[1] : "tiny";
	int reps = argc > 2 ? atoi(argv[2]) : 10;
	std::vector<float> ms;
	timer t;

	if (w == "tiny") {
		int *p, launches = 20000;
		CK(cudaMalloc(&p, 4096));
		CK(cudaMemset(p, 0, 4096));
		for (int i = 0; i < 1000; i++)
			k_tiny<<<1, 32>>>(p);
		CK(cudaDeviceSynchronize());
		for (int r = 0; r < reps; r++) {
			t.start();
			for (int i = 0; i < launches; i++)
				k_tiny<<<1, 32>>>(p);
			CK_LAUNCH();
			ms.push_back(t.stop());
		}
		int v;
		CK(cudaMemcpy(&v, p, 4, cudaMemcpyDeviceToHost));
		printf("CHECK %s\n", v == 1000 + reps * launches ? "ok" : "WRONG");
		std::vector<float> s = ms;
		std::sort(s.begin(), s.end());
		report("tiny", "20000x<<<1,32>>>", ms, s[s.size() / 2] * 1e3 / launches);
	} else if (w == "gemm") {
		int n = 2048;
		float *A = dalloc((size_t)n * n, 1), *B = dalloc((size_t)n * n, 2), *C;
		CK(cudaMalloc(&C, (size_t)n * n * 4));
		dim3 g(n / T, n / T), b(T, T);
		k_gemm<<<g, b>>>(A, B, C, n);
		CK(cudaDeviceSynchronize());
		for (int r = 0; r < reps; r++) {
			t.start();
			k_gemm<<<g, b>>>(A, B, C, n);
			CK_LAUNCH();
			ms.push_back(t.stop());
		}
		/* One entry against float64. */
		std::vector<float> ha(n), hb(n);
		float c;
		CK(cudaMemcpy(ha.data(), A + (size_t)5 * n, n * 4, cudaMemcpyDeviceToHost));
		CK(cudaMemcpy2D(hb.data(), 4, B + 7, (size_t)n * 4, 4, n, cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(&c, C + (size_t)5 * n + 7, 4, cudaMemcpyDeviceToHost));
		double ref = 0;
		for (int k = 0; k < n; k++)
			ref += (double)ha[k] * hb[k];
		printf("CHECK %s\n", fabs(ref - c) < 1e-3 * (1 + fabs(ref)) ? "ok" : "WRONG");
		report("gemm", "2048^3", ms, 0);
	} else if (w == "stencil") {
		int n = 20480;
		float *in = dalloc((size_t)n * n, 3), *out;
		CK(cudaMalloc(&out, (size_t)n * n * 4));
		dim3 b(32, 8), g(n / 32, n / 8);
		k_stencil<<<g, b>>>(in, out, n);
		CK(cudaDeviceSynchronize());
		for (int r = 0; r < reps; r++) {
			t.start();
			k_stencil<<<g, b>>>(in, out, n);
			CK_LAUNCH();
			ms.push_back(t.stop());
		}
		float h[3], o;
		size_t i = (size_t)100 * n + 100;
		CK(cudaMemcpy(h, in + i - 1, 12, cudaMemcpyDeviceToHost));
		float up, dn;
		CK(cudaMemcpy(&up, in + i - n, 4, cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(&dn, in + i + n, 4, cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(&o, out + i, 4, cudaMemcpyDeviceToHost));
		float ref = 0.2f * (h[1] + h[0] + h[2] + up + dn);
		printf("CHECK %s\n", fabsf(ref - o) < 1e-5f ? "ok" : "WRONG");
		report("stencil", "20480^2", ms, 0);
	} else if (w == "reduce") {
		size_t n = (size_t)1 << 30;
		float *in, *out;
		CK(cudaMalloc(&in, n * 4));
		CK(cudaMalloc(&out, 4));
		/* Ones: the answer is n (to float rounding of the block sums). */
		k_ones<<<1024, 256>>>(in, n);
		CK_LAUNCH();
		int grid = 132 * 8;
		for (int r = -1; r < reps; r++) {
			CK(cudaMemset(out, 0, 4));
			t.start();
			k_reduce<<<grid, 256>>>(in, n, out);
			CK_LAUNCH();
			float m = t.stop();
			if (r >= 0)
				ms.push_back(m);
		}
		float s;
		CK(cudaMemcpy(&s, out, 4, cudaMemcpyDeviceToHost));
		printf("CHECK %s\n", fabs(s - (double)n) < 1e-3 * n ? "ok" : "WRONG");
		report("reduce", "2^30 floats", ms, 0);
	} else if (w == "ab-decode" || w == "ab-stencil") {
		bool dec = w == "ab-decode";
		int d = 4096, L = 32, heads = 32, ctxlen = 4096, n = 20480;
		std::vector<float *> W1, W2;
		float *x = NULL, *h = NULL, *att = NULL, *in = NULL, *out = NULL;
		if (dec) {
			for (int l = 0; l < L; l++) {
				W1.push_back(dalloc((size_t)d * d, 10 + l));
				W2.push_back(dalloc((size_t)d * d, 100 + l));
			}
			x = dalloc(d, 7);
			h = dalloc(d, 8);
			att = dalloc((size_t)heads * ctxlen, 9);
		} else {
			in = dalloc((size_t)n * n, 3);
			CK(cudaMalloc(&out, (size_t)n * n * 4));
		}
		/* one step with the reference kernels (probed = false) or the probed copies */
		auto step = [&](bool probed) {
			if (dec) {
				for (int l = 0; l < L; l++) {
					if (probed) {
						abp_layernorm<<<1, 256>>>(x, h, d);
						abp_gemv<<<d, 256>>>(W1[l], h, x, d);
						abp_softmax<<<heads, 256>>>(att, ctxlen);
						abp_gemv<<<d, 256>>>(W2[l], x, h, d);
					} else {
						abr_layernorm<<<1, 256>>>(x, h, d);
						abr_gemv<<<d, 256>>>(W1[l], h, x, d);
						abr_softmax<<<heads, 256>>>(att, ctxlen);
						abr_gemv<<<d, 256>>>(W2[l], x, h, d);
					}
				}
			} else {
				dim3 b(32, 8), g(n / 32, n / 8);
				if (probed)
					abp_stencil<<<g, b>>>(in, out, n);
				else
					abr_stencil<<<g, b>>>(in, out, n);
			}
			CK_LAUNCH();
		};
		step(false);
		step(true);
		CK(cudaDeviceSynchronize());
		/*
		 * ABBA: pair r runs A then B when r is even, B then A when odd; a quad
		 * (pairs 2q, 2q + 1) gives (B + B) / (A + A), in which an order effect
		 * (the second step of a pair faster, say) and a linear drift cancel.
		 */
		int pairs = std::max(4, reps + (reps & 1));
		std::vector<double> ta, tb, ratio;
		for (int r = 0; r < pairs; r++) {
			bool bfirst = r & 1;
			t.start();
			step(bfirst);
			float t1 = t.stop();
			t.start();
			step(!bfirst);
			float t2 = t.stop();
			ta.push_back(bfirst ? t2 : t1);
			tb.push_back(bfirst ? t1 : t2);
			if (r & 1)
				ratio.push_back((tb[r - 1] + tb[r]) / (ta[r - 1] + ta[r]));
		}
		/*
		 * Both copies from the same state, their outputs compared: the probed
		 * copy must compute what the reference does (to float rounding: the
		 * probes change what the JIT sees around the app's arithmetic).
		 */
		std::vector<float> ra, rb;
		auto outputs = [&](std::vector<float> &v) {
			if (dec) {
				v.resize((size_t)2 * d + (size_t)heads * ctxlen);
				CK(cudaMemcpy(v.data(), x, d * 4, cudaMemcpyDeviceToHost));
				CK(cudaMemcpy(v.data() + d, h, d * 4, cudaMemcpyDeviceToHost));
				CK(cudaMemcpy(v.data() + 2 * d, att, (size_t)heads * ctxlen * 4,
					      cudaMemcpyDeviceToHost));
			} else {
				v.resize((size_t)4 * n);	/* rows 99-102 */
				CK(cudaMemcpy(v.data(), out + (size_t)99 * n, (size_t)4 * n * 4,
					      cudaMemcpyDeviceToHost));
			}
		};
		float *save = NULL;
		size_t save_n = dec ? (size_t)2 * d + (size_t)heads * ctxlen : 0;
		if (dec) {
			CK(cudaMalloc(&save, save_n * 4));
			CK(cudaMemcpy(save, x, d * 4, cudaMemcpyDeviceToDevice));
			CK(cudaMemcpy(save + d, h, d * 4, cudaMemcpyDeviceToDevice));
			CK(cudaMemcpy(save + 2 * d, att, (size_t)heads * ctxlen * 4, cudaMemcpyDeviceToDevice));
		}
		auto restore = [&]() {
			if (!dec)
				return;
			CK(cudaMemcpy(x, save, d * 4, cudaMemcpyDeviceToDevice));
			CK(cudaMemcpy(h, save + d, d * 4, cudaMemcpyDeviceToDevice));
			CK(cudaMemcpy(att, save + 2 * d, (size_t)heads * ctxlen * 4, cudaMemcpyDeviceToDevice));
		};
		step(false);
		CK(cudaDeviceSynchronize());
		outputs(ra);
		restore();
		step(true);
		CK(cudaDeviceSynchronize());
		outputs(rb);
		size_t differ = 0;
		for (size_t i = 0; i < ra.size(); i++)
			differ += !(fabsf(ra[i] - rb[i]) <= 1e-4f * (1.0f + fabsf(ra[i])));
		bool good = differ == 0;
		if (dec) {
			double sum = 0;
			for (int i = 0; i < ctxlen; i++)
				sum += rb[(size_t)2 * d + i];
			good = good && fabs(sum - 1.0) < 1e-3;
			CK(cudaFree(save));
		} else {
			float hv[3], up, dn;
			size_t i = (size_t)100 * n + 100;
			CK(cudaMemcpy(hv, in + i - 1, 12, cudaMemcpyDeviceToHost));
			CK(cudaMemcpy(&up, in + i - n, 4, cudaMemcpyDeviceToHost));
			CK(cudaMemcpy(&dn, in + i + n, 4, cudaMemcpyDeviceToHost));
			good = good && fabsf(0.2f * (hv[1] + hv[0] + hv[2] + up + dn) - rb[n + 100]) < 1e-5f;
		}
		if (differ)
			printf("ab: %zu of %zu outputs of the probed copy differ from the reference's\n",
			       differ, ra.size());
		printf("CHECK %s\n", good ? "ok" : "WRONG");
		auto median = [](std::vector<double> v) {
			std::sort(v.begin(), v.end());
			size_t m = v.size();
			return m % 2 ? v[m / 2] : (v[m / 2 - 1] + v[m / 2]) / 2;
		};
		std::sort(ratio.begin(), ratio.end());
		/*
		 * Distribution-free interval of the median quad ratio: the quads below
		 * the true median are Binomial(q, 1/2), so [X(l), X(q + 1 - l)] (1-based)
		 * holds it with probability 1 - 2 P(Bin <= l - 1); l is the largest with
		 * that at least 90% (30 quads: l = 11, 90.1%).
		 */
		int nq = (int)ratio.size(), l = 1;
		double pmf = pow(0.5, nq), cdf = pmf, cover;	/* cdf = P(Bin <= l - 1) */
		for (;;) {
			double next = pmf * (nq - l + 1) / l;	/* P(Bin = l) */

			if (l + 1 > (nq + 1) / 2 || cdf + next > 0.05)
				break;
			pmf = next;
			cdf += pmf;
			l++;
		}
		cover = 1 - 2 * cdf;
		printf("ABBENCH workload=%s pairs=%d quads=%d ratio=%.4f ratio_lo=%.4f ratio_hi=%.4f "
		       "cover=%.3f ref_ms=%.4f probe_ms=%.4f\n", dec ? "decode" : "stencil", pairs, nq,
		       median(ratio), ratio[l - 1], ratio[nq - l], cover, median(ta), median(tb));
	} else if (w == "decode") {
		int d = 4096, L = 32, heads = 32, ctxlen = 4096;
		std::vector<float *> W1(L), W2(L);
		for (int l = 0; l < L; l++) {
			W1[l] = dalloc((size_t)d * d, 10 + l);
			W2[l] = dalloc((size_t)d * d, 100 + l);
		}
		float *x = dalloc(d, 7), *h = dalloc(d, 8), *att = dalloc((size_t)heads * ctxlen, 9);
		auto step = [&]() {
			for (int l = 0; l < L; l++) {
				k_layernorm<<<1, 256>>>(x, h, d);
				k_gemv<<<d, 256>>>(W1[l], h, x, d);
				k_softmax<<<heads, 256>>>(att, ctxlen);
				k_gemv<<<d, 256>>>(W2[l], x, h, d);
			}
			CK_LAUNCH();
		};
		step();
		CK(cudaDeviceSynchronize());
		for (int r = 0; r < reps; r++) {
			t.start();
			step();
			ms.push_back(t.stop());
		}
		std::vector<float> a(ctxlen);
		CK(cudaMemcpy(a.data(), att, ctxlen * 4, cudaMemcpyDeviceToHost));
		double s = 0;
		for (float v : a)
			s += v;
		printf("CHECK %s\n", fabs(s - 1.0) < 1e-3 ? "ok" : "WRONG");
		report("decode", "32x(ln+gemv4096+softmax32x4096+gemv4096)", ms, 0);
	} else if (w == "membound") {
		int lg = argc > 3 ? atoi(argv[3]) : 22;
		int n = 1 << (lg < 8 ? 8 : lg > 28 ? 28 : lg);
		float *a = dalloc(n, 1), *b = dalloc(n, 2), *c;
		CK(cudaMalloc(&c, n * 4));
		k_add<<<n / 256, 256>>>(a, b, c, n);
		CK(cudaDeviceSynchronize());
		for (int r = 0; r < reps; r++) {
			t.start();
			k_add<<<n / 256, 256>>>(a, b, c, n);
			CK_LAUNCH();
			ms.push_back(t.stop());
		}
		float ha, hb, hc;
		int at = 12345 % n;
		CK(cudaMemcpy(&ha, a + at, 4, cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(&hb, b + at, 4, cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(&hc, c + at, 4, cudaMemcpyDeviceToHost));
		printf("CHECK %s\n", hc == ha + hb ? "ok" : "WRONG");
		char sz[32];
		snprintf(sz, sizeof(sz), "2^%d floats", lg);
		char name[32];
		snprintf(name, sizeof(name), lg == 22 ? "membound" : "membound_2^%d", lg);
		report(name, sz, ms, 0);
	} else {
		fprintf(stderr, "bench_kernels: unknown workload '%s' (tiny gemm stencil reduce decode membound "
			"ab-decode ab-stencil)\n",
			w.c_str());
		return 2;
	}
	return 0;
}

// SPDX-License-Identifier: Apache-2.0
/*
 * ptxab: the in-process A/B of bench_kernels (ab-decode, ab-stencil) for PTX
 * files instead of a live `gpuext trace`, to time hand-edited splices: what
 * a barrier, a load or a store in a probe costs, without rebuilding gpuext.
 *
 * Each FILE is the PTX of bench_kernels.cu (nvcc -arch=sm_90 -ptx), spliced
 * with gpuext-splice (a pack from `gpuext trace TOOL --pack-only --dir D
 * --kernel '*abp_*'`) and edited or not. Its abr_* kernels (A) and abp_*
 * kernels (B) run the decode step, the stencil sweep or the membound step
 * (20 launches of c = a + b over 2^22 floats, as bench/gpu/run.sh's memtrace
 * row, whose ring stays full: use PTXAB_RING_FULL=1) alternately, ABBA,
 * PAIRS pairs; printed: the median over quads of (B + B) / (A + A) with its
 * distribution-free 90% interval, and each side's median step in ms. The
 * probes' maps (gpuext_rt_maps) get device memory: array maps a zeroed
 * 64 MiB buffer, rings 2048 shards of 64 KiB whose headers are zeroed
 * before every pair (nothing drains them; a pair never fills a shard).
 * The text 0xDEADBEEF00000000 in a file becomes the array buffer's address,
 * for a variant that names it as an immediate. The unspliced PTX measures
 * the method's noise (1.000, +-0.0004 on an H100). With PTXAB_RING_FULL=1
 * the ring headers are zeroed once per file, not before every pair: nothing
 * drains them, so the shards fill in the first steps and stay full, and a
 * ring probe's time is its drop path, as in bench/gpu/run.sh, where the
 * host drains every 100 ms and the rings are full most of the time.
 *
 * Where a file has a kernel's flat twin (NAME__gpuext_flat, hal/nvidia/ptx_twin.c)
 * that is what runs, as the preload library would run it for these launches,
 * all flat in z; the line says "(flat twins)". PTXAB_NO_TWINS=1 runs the
 * originals.
 *
 *   nvcc -O2 -o ptxab bench/gpu/ptxab.cu -lcuda
 *   ./ptxab decode|stencil|membound PAIRS FILE.ptx...
 *
 * bench/gpu/README.md ("Timing a splice by hand") has the steps.
 */
#include <cuda.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <vector>
#include <string>
#include <algorithm>

#define CU(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char *s_; cuGetErrorString(r_, &s_); \
	printf("CUDA %s at line %d (%s)\n", s_, __LINE__, #x); exit(1); } } while (0)

struct desc { uint64_t base, aux; uint32_t type, ks, vs, max, stride, slots; };

static std::string slurp(const char *p)
{
	FILE *f = fopen(p, "rb");
	if (!f) { printf("cannot open %s\n", p); exit(1); }
	std::string s;
	char b[65536];
	size_t n;
	while ((n = fread(b, 1, sizeof(b), f)) > 0)
		s.append(b, n);
	fclose(f);
	return s;
}

int main(int argc, char **argv)
{
	if (argc < 4 || (strcmp(argv[1], "decode") && strcmp(argv[1], "stencil") && strcmp(argv[1], "membound"))) {
		printf("usage: ptxab decode|stencil|membound PAIRS FILE.ptx...\n");
		return 2;
	}
	bool dec = !strcmp(argv[1], "decode"), mem = !strcmp(argv[1], "membound");
	int pairs = atoi(argv[2]);
	const char *full_env = getenv("PTXAB_RING_FULL");
	bool ring_full = full_env && !strcmp(full_env, "1");
	CU(cuInit(0));
	CUdevice dev; CU(cuDeviceGet(&dev, 0));
	CUcontext ctx; CU(cuDevicePrimaryCtxRetain(&ctx, dev)); CU(cuCtxSetCurrent(ctx));
	const int d = 4096, L = 32, heads = 32, ctxlen = 4096, n = 20480, madd = 1 << 22, mreps = 20;
	CUdeviceptr W1[L], W2[L], x, h, att, in = 0, out = 0, ma = 0, mb = 0, mc = 0, arr, rdata, rhdr;
	std::vector<float> host;
	auto fill = [&](CUdeviceptr p, size_t cnt, unsigned seed) {
		host.resize(cnt);
		for (size_t i = 0; i < cnt; i++)
			host[i] = ((i * 2654435761u + seed) % 1000) * 1e-3f - 0.5f;
		CU(cuMemcpyHtoD(p, host.data(), cnt * 4));
	};
	if (dec) {
		for (int l = 0; l < L; l++) {
			CU(cuMemAlloc(&W1[l], (size_t)d * d * 4)); fill(W1[l], (size_t)d * d, 10 + l);
			CU(cuMemAlloc(&W2[l], (size_t)d * d * 4)); fill(W2[l], (size_t)d * d, 100 + l);
		}
		CU(cuMemAlloc(&x, d * 4)); fill(x, d, 7);
		CU(cuMemAlloc(&h, d * 4)); fill(h, d, 8);
		CU(cuMemAlloc(&att, (size_t)heads * ctxlen * 4)); fill(att, (size_t)heads * ctxlen, 9);
	} else if (mem) {
		CU(cuMemAlloc(&ma, (size_t)madd * 4)); fill(ma, madd, 4);
		CU(cuMemAlloc(&mb, (size_t)madd * 4)); fill(mb, madd, 5);
		CU(cuMemAlloc(&mc, (size_t)madd * 4));
	} else {
		CU(cuMemAlloc(&in, (size_t)n * n * 4)); fill(in, (size_t)n * n, 3);
		CU(cuMemAlloc(&out, (size_t)n * n * 4));
	}
	const size_t arr_bytes = 64 << 20, shard = 65536, nsh = 2048, hdr_bytes = nsh * 32 + 128 + nsh * 8 + 4096;
	CU(cuMemAlloc(&arr, arr_bytes)); CU(cuMemsetD8(arr, 0, arr_bytes));
	CU(cuMemAlloc(&rdata, shard * nsh)); CU(cuMemsetD8(rdata, 0, shard * nsh));
	CU(cuMemAlloc(&rhdr, hdr_bytes));
	CUevent e0, e1; CU(cuEventCreate(&e0, 0)); CU(cuEventCreate(&e1, 0));
	printf("rings: %s\n", ring_full ? "zeroed once per file, never drained: full (PTXAB_RING_FULL=1)" :
	       "zeroed before every pair: never full");
	printf("%-40s %-8s %8s  %-18s %9s %9s\n", "module", "work", "ratio", "90% interval", "A ms", "B ms");
	for (int a = 3; a < argc; a++) {
		std::string ptx = slurp(argv[a]);
		for (size_t at; (at = ptx.find("0xDEADBEEF00000000")) != std::string::npos;) {	/* the array's address */
			char imm[24];
			snprintf(imm, sizeof(imm), "0x%016llx", (unsigned long long)arr);
			ptx.replace(at, 18, imm);
		}
		CUmodule mod;
		char log[8192] = "";
		CUjit_option o[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
		void *ov[2] = {log, (void *)(uintptr_t)sizeof(log)};
		if (cuModuleLoadDataEx(&mod, ptx.c_str(), 2, o, ov) != CUDA_SUCCESS) {
			printf("%s: load failed: %s\n", argv[a], log);
			continue;
		}
		CUdeviceptr g; size_t gs = 0;
		std::vector<desc> ds;
		if (cuModuleGetGlobal(&g, &gs, mod, "gpuext_rt_maps") == CUDA_SUCCESS && gs >= sizeof(desc)) {
			ds.resize(gs / sizeof(desc));
			CU(cuMemcpyDtoH(ds.data(), g, ds.size() * sizeof(desc)));
			for (auto &m : ds) {
				if (m.type == 2 || m.type == 6)
					m.base = arr;
				else if (m.type == 27) {
					m.base = rdata; m.aux = rhdr; m.max = shard; m.slots = nsh;
				}
			}
			CU(cuMemcpyHtoD(g, ds.data(), ds.size() * sizeof(desc)));
		}
		CUfunction f[2][5];
		const char *nm[2][5] = {{"_Z13abr_layernormPKfPfi", "_Z8abr_gemvPKfS0_Pfi", "_Z11abr_softmaxPfi", "_Z11abr_stencilPKfPfi",
					 "_Z7abr_addPKfS0_Pfi"},
					{"_Z13abp_layernormPKfPfi", "_Z8abp_gemvPKfS0_Pfi", "_Z11abp_softmaxPfi", "_Z11abp_stencilPKfPfi",
					 "_Z7abp_addPKfS0_Pfi"}};
		int twins = 0;
		for (int b = 0; b < 2; b++)
			for (int k = 0; k < 5; k++) {
				f[b][k] = NULL;
				if ((k == 4) != mem)	/* only the workload's kernels: older files lack the add */
					continue;
				/* every launch here is flat in z: the flat twin where the splice made one, as
				 * the preload library launches it (hal/nvidia/ptx_twin.c) */
				std::string tw = std::string(nm[b][k]) + "__gpuext_flat";
				if (!getenv("PTXAB_NO_TWINS") &&
				    cuModuleGetFunction(&f[b][k], mod, tw.c_str()) == CUDA_SUCCESS) {
					twins++;
					continue;
				}
				CU(cuModuleGetFunction(&f[b][k], mod, nm[b][k]));
			}
		auto step = [&](int b) {
			if (dec) {
				int dd = d, cl = ctxlen;
				for (int l = 0; l < L; l++) {
					void *a0[] = {&x, &h, &dd};
					CU(cuLaunchKernel(f[b][0], 1, 1, 1, 256, 1, 1, 0, 0, a0, 0));
					void *a1[] = {&W1[l], &h, &x, &dd};
					CU(cuLaunchKernel(f[b][1], d, 1, 1, 256, 1, 1, 0, 0, a1, 0));
					void *a2[] = {&att, &cl};
					CU(cuLaunchKernel(f[b][2], heads, 1, 1, 256, 1, 1, 0, 0, a2, 0));
					void *a3[] = {&W2[l], &x, &h, &dd};
					CU(cuLaunchKernel(f[b][1], d, 1, 1, 256, 1, 1, 0, 0, a3, 0));
				}
			} else if (mem) {
				int nn = madd;
				void *a0[] = {&ma, &mb, &mc, &nn};
				for (int r = 0; r < mreps; r++)
					CU(cuLaunchKernel(f[b][4], madd / 256, 1, 1, 256, 1, 1, 0, 0, a0, 0));
			} else {
				int nn = n;
				void *a0[] = {&in, &out, &nn};
				CU(cuLaunchKernel(f[b][3], n / 32, n / 8, 1, 32, 8, 1, 0, 0, a0, 0));
			}
		};
		auto timed = [&](int b) {
			CU(cuEventRecord(e0, 0));
			step(b);
			CU(cuEventRecord(e1, 0));
			CU(cuEventSynchronize(e1));
			float ms;
			CU(cuEventElapsedTime(&ms, e0, e1));
			return (double)ms;
		};
		CU(cuMemsetD8(rhdr, 0, hdr_bytes));
		step(0); step(1); step(0); step(1);
		CU(cuCtxSynchronize());
		std::vector<double> ta, tb, q;
		double pa = 0, pb = 0;
		for (int r = 0; r < pairs; r++) {
			if (!ring_full)
				CU(cuMemsetD8(rhdr, 0, hdr_bytes));
			bool bf = r & 1;
			double t1 = timed(bf), t2 = timed(!bf);
			double A = bf ? t2 : t1, B = bf ? t1 : t2;
			ta.push_back(A); tb.push_back(B);
			if (r & 1)
				q.push_back((B + pb) / (A + pa));
			pa = A; pb = B;
		}
		std::sort(q.begin(), q.end()); std::sort(ta.begin(), ta.end()); std::sort(tb.begin(), tb.end());
		int nq = q.size(), l = 1;
		double pmf = 1, cdf;
		for (int i = 0; i < nq; i++) pmf *= 0.5;
		cdf = pmf;
		for (;;) {
			double next = pmf * (nq - l + 1) / l;
			if (l + 1 > (nq + 1) / 2 || cdf + next > 0.05) break;
			pmf = next; cdf += pmf; l++;
		}
		const char *base = strrchr(argv[a], '/');
		printf("%-40s %-8s %8.4f  [%.4f, %.4f] %9.4f %9.4f%s\n", base ? base + 1 : argv[a], argv[1], q[nq / 2],
		       q[l - 1], q[nq - l], ta[ta.size() / 2], tb[tb.size() / 2], twins ? "  (flat twins)" : "");
		fflush(stdout);
		CU(cuModuleUnload(mod));
	}
	return 0;
}

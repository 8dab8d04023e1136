# SPDX-License-Identifier: Apache-2.0
"""torch_ext_ptx.py [N]: a PyTorch kernel whose module carries PTX.

A CUDA extension built at run time with torch.utils.cpp_extension.load_inline,
compiled for a virtual architecture only (-gencode arch=compute_80,code=compute_80),
so its fatbin holds PTX and no SASS: CUDA's runtime hands that fatbin to the
driver, which JIT-compiles it, and the preload library splices the probes in
on the way. The kernel runs on PyTorch tensors through the extension's
binding. Prints the same GT lines as the C++ apps. Exit 77 when PyTorch, its
extension toolchain (ninja, nvcc, a C++ compiler) or a GPU is missing; the
build is cached in $TORCH_EXTENSIONS_DIR, so traced runs load the same module.
"""
import os
import sys

try:
    import torch
    from torch.utils.cpp_extension import load_inline
    assert torch.cuda.is_available()
except Exception as e:  # noqa: BLE001 - any failure means "not usable here"
    print(f"torch_ext_ptx: PyTorch not usable: {e}", file=sys.stderr)
    sys.exit(77)

CPP = "void torch_axpy_launch(double a, torch::Tensor x, torch::Tensor y);"
CU = r'''
#include <torch/extension.h>
__global__ void torch_axpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
void torch_axpy_launch(double a, torch::Tensor x, torch::Tensor y)
{
    int n = (int)x.numel(), bs = 128;
    torch_axpy<<<(n + bs - 1) / bs, bs>>>((float)a, x.data_ptr<float>(), y.data_ptr<float>(), n);
}
'''

try:
    ext = load_inline(name="gx_torch_axpy_ptx", cpp_sources=CPP, cuda_sources=CU,
                      functions=["torch_axpy_launch"],
                      extra_cuda_cflags=["-gencode=arch=compute_80,code=compute_80"],
                      verbose=False)
except Exception as e:  # noqa: BLE001 - no ninja/nvcc/compiler: not usable here
    print(f"torch_ext_ptx: building the extension failed: {e}", file=sys.stderr)
    sys.exit(77)

n = int(sys.argv[1]) if len(sys.argv) > 1 else 50000
bs = 128
x = torch.arange(n, dtype=torch.float32, device="cuda") % 97
y = torch.arange(n, dtype=torch.float32, device="cuda") % 13
want = 3.0 * x.cpu() + y.cpu()
ext.torch_axpy_launch(3.0, x, y)
torch.cuda.synchronize()
got = y.cpu()
ok = bool(torch.equal(got, want))
g = (n + bs - 1) // bs
# The mangled name: what the PTX .entry and kernels.txt call it.
print(f"GT launch kernel=_Z10torch_axpyfPKfPfi grid={g},1,1 block={bs},1,1 blocks={g} "
      f"threads={g*bs} warps={g*((bs+31)//32)} times=1")
print(f"GT buffers kernel=_Z10torch_axpyfPKfPfi n={n} elem=4 x=0x{x.data_ptr():x} "
      f"y=0x{y.data_ptr():x}")
h = 1469598103934665603
for byte in got.numpy().tobytes():
    h = ((h ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
print(f"GT result {'ok' if ok else 'WRONG'} checksum={h:016x}")
sys.exit(0 if ok else 1)

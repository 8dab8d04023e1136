# SPDX-License-Identifier: Apache-2.0
"""cupy_ptx.py [N]: a framework kernel whose module carries PTX.

CuPy compiles RawKernel source with NVRTC; CUPY_COMPILE_WITH_PTX=1 makes it
load PTX (not a cubin) through cuModuleLoadData, so the probes can be
spliced in. Prints the same GT lines as the C++ apps. Exit 77 when CuPy is
not installed (tools/gpu/probes.sh then says so and uses ptxload instead).
"""
import os
import sys

os.environ["CUPY_COMPILE_WITH_PTX"] = "1"
# A cached cubin/PTX from an earlier run would skip the module load we want to see.
os.environ.setdefault("CUPY_CACHE_IN_MEMORY", "1")
try:
    import cupy as cp
except Exception as e:  # noqa: BLE001 - any import failure means "not usable here"
    print(f"cupy_ptx: CuPy not usable: {e}", file=sys.stderr)
    sys.exit(77)

SRC = r'''
extern "C" __global__ void cupy_axpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
'''

n = int(sys.argv[1]) if len(sys.argv) > 1 else 50000
bs = 128
k = cp.RawKernel(SRC, "cupy_axpy")
x = cp.arange(n, dtype=cp.float32) % 97
y = cp.arange(n, dtype=cp.float32) % 13
want = 3.0 * x.get() + y.get()
g = (n + bs - 1) // bs
k((g,), (bs,), (cp.float32(3.0), x, y, cp.int32(n)))
cp.cuda.Device().synchronize()
got = y.get()
ok = bool((got == want).all())
print(f"GT launch kernel=cupy_axpy grid={g},1,1 block={bs},1,1 blocks={g} threads={g*bs} "
      f"warps={g*((bs+31)//32)} times=1")
print(f"GT buffers kernel=cupy_axpy n={n} elem=4 x=0x{x.data.ptr:x} y=0x{y.data.ptr:x}")
h = 1469598103934665603
for byte in got.tobytes():
    h = ((h ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
print(f"GT result {'ok' if ok else 'WRONG'} checksum={h:016x}")
sys.exit(0 if ok else 1)

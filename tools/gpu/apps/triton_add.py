# SPDX-License-Identifier: Apache-2.0
"""triton_add.py [N]: a Triton kernel (z = x + y), launched through PyTorch.

Triton compiles to PTX, then to a cubin with ptxas, and loads the cubin: whether
the preload library can instrument it depends on finding PTX in what is
loaded, so tools/gpu/probes.sh reports what kernels.txt says about it (and
checks the exit counts when it was instrumented). Prints GT lines like the C++
apps; exit 77 when Triton or a CUDA device is missing.
"""
import sys

try:
    import torch
    import triton
    import triton.language as tl
    assert torch.cuda.is_available()
except Exception as e:  # noqa: BLE001 - any failure means "not usable here"
    print(f"triton_add: Triton/PyTorch not usable: {e}", file=sys.stderr)
    sys.exit(77)


@triton.jit
def triton_add(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(z_ptr + i, tl.load(x_ptr + i, mask=m) + tl.load(y_ptr + i, mask=m), mask=m)


n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
block, warps = 1024, 4
x = torch.arange(n, device="cuda", dtype=torch.float32) % 101
y = torch.arange(n, device="cuda", dtype=torch.float32) % 7
z = torch.empty_like(x)
g = triton.cdiv(n, block)
triton_add[(g,)](x, y, z, n, BLOCK=block, num_warps=warps)
torch.cuda.synchronize()
ok = bool(torch.equal(z, x + y))
t = 32 * warps
print(f"GT launch kernel=triton_add grid={g},1,1 block={t},1,1 blocks={g} threads={g * t} "
      f"warps={g * warps} times=1")
h = 1469598103934665603
for byte in z.cpu().numpy().tobytes():
    h = ((h ^ byte) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
print(f"GT result {'ok' if ok else 'WRONG'} checksum={h:016x}")
sys.exit(0 if ok else 1)

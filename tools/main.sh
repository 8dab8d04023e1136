#!/usr/bin/env bash
# The main job: install what is missing, build everything, and show what
# gpuext does on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
echo "==> building (build/)"
cmake -S . -B build -DGPUEXT_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
echo
echo "==> gpuext backends"
build/gpuext backends
echo
echo "==> RFC 9669 ISA corpus on the reference interpreter"
build/test_isa
echo
echo "==> a BPF object compiled by clang-22: disassembled, verified, run"
build/gpuext disasm build/tests/bpf/loader_tiny.bpf.o | head -n 30
build/gpuext verify build/tests/bpf/loader_tiny.bpf.o
build/gpuext run-prog build/tests/bpf/loader_tiny.bpf.o --mem-size 64
echo
echo "==> interpreter benchmark"
build/bench_interp --iters 200000 --reps 3

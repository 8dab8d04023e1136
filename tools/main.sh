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
echo "==> the main job: shipped policies vs the stock driver on the built-in simulator"
build/gpuext sim --plot build/gpuext-sim.svg --json build/gpuext-sim.json
echo "(the same results as JSON: build/gpuext-sim.json)"

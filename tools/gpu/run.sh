#!/usr/bin/env bash
# gpuext on an NVIDIA GPU: eBPF -> PTX checked against the reference interpreter.
#
#   tools/gpu/run.sh --prepare   on a machine that builds gpuext (LLVM 22, libbpf, clang-22):
#                                builds it in build-gpu/ and writes the PTX bundle
#                                build-gpu/bundle (PTX for sm_80 + sm_90 of every ISA corpus
#                                case and runtime check, with the interpreter's results)
#   tools/gpu/run.sh             on the GPU machine: runs the bundle with tools/gpu/ptx_bundle_run.c
#                                (needs only cc + the NVIDIA driver), and, where gpuext itself
#                                builds there too, also the full ptx_isa_runner (emits on the spot)
#
# Logs go to $OUT (default ./gpu-out): env.txt, build logs, ptx_bundle_run.log,
# ptx_isa_runner.log, disagreeing PTX under ptx-diff/. Exit status: 0 everything agrees,
# 1 a disagreement or failure, 2 no usable GPU / nothing could run.
# Never installs anything (the GPU machine has no network) and allocates little GPU memory
# (one block of 64 threads, < 64 MiB per launch).
set -uo pipefail
cd "$(dirname "$0")/../.."
top=$PWD
out=${OUT:-$top/gpu-out}
build=${GPUEXT_GPU_BUILD:-$top/build-gpu}
bundle=${GPUEXT_PTX_BUNDLE:-$build/bundle}
jobs=$(nproc 2>/dev/null || echo 2)
mkdir -p "$out"
say() { printf '==> %s\n' "$*" | tee -a "$out/summary.txt"; }

# What a gpuext build needs; prints the missing pieces (empty = all there).
missing_build_deps() {
  local m=()
  command -v cmake >/dev/null || m+=("cmake")
  command -v cc >/dev/null || m+=("a C compiler (cc)")
  command -v pkg-config >/dev/null || m+=("pkg-config")
  pkg-config --atleast-version=1.4 libbpf 2>/dev/null || m+=("libbpf >= 1.4 (libbpf-dev)")
  pkg-config --exists libelf 2>/dev/null || m+=("libelf (libelf-dev)")
  command -v clang-22 >/dev/null || m+=("clang-22")
  [ -f /usr/lib/llvm-22/lib/cmake/llvm/LLVMConfig.cmake ] || m+=("LLVM 22 (llvm-22-dev)")
  printf '%s\n' "${m[@]+"${m[@]}"}"
}

# Builds libgpuext and the runner in $build; 0 on success.
build_gpuext() {
  local log=$out/build.log
  say "building gpuext in $build (log: $log)"
  if ! cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUEXT_WERROR=OFF \
        >"$log" 2>&1; then
    say "cmake configure failed; tail of $log:"; tail -n 30 "$log"; return 1
  fi
  if cmake --build "$build" --target help 2>/dev/null | grep -q ptx_isa_runner; then
    cmake --build "$build" -j"$jobs" --target ptx_isa_runner >>"$log" 2>&1 || {
      say "build failed; tail of $log:"; tail -n 40 "$log"; return 1; }
  else
    # Not (yet) a CMake target: compile it against the static library.
    cmake --build "$build" -j"$jobs" --target gpuext_static >>"$log" 2>&1 || {
      say "build failed; tail of $log:"; tail -n 40 "$log"; return 1; }
    # shellcheck disable=SC2046
    cc -std=gnu17 -O2 -g -Wall -Wextra -Wno-missing-field-initializers -D_GNU_SOURCE \
       -DGPUEXT_ISA_DIR="\"$top/tests/isa\"" -I"$top/include" -I"$top/core" -I"$top/codegen" \
       "$top/tools/gpu/ptx_isa_runner.c" "$build/libgpuext.a" \
       -L/usr/lib/llvm-22/lib -Wl,-rpath,/usr/lib/llvm-22/lib -lLLVM \
       $(pkg-config --libs libbpf libelf) -ldl -lrt -lm -lpthread \
       -o "$build/ptx_isa_runner" >>"$log" 2>&1 || {
      say "compiling ptx_isa_runner failed; tail of $log:"; tail -n 30 "$log"; return 1; }
  fi
  return 0
}

if [ "${1:-}" = "--prepare" ]; then
  miss=$(missing_build_deps)
  if [ -n "$miss" ]; then
    say "cannot build gpuext here; missing:"; printf '     %s\n' "$miss"
    say "install them with tools/deps.sh (apt) first"
    exit 2
  fi
  build_gpuext || exit 1
  rm -rf "$bundle"
  say "writing the PTX bundle to $bundle"
  if ! "$build/ptx_isa_runner" --bundle "$bundle" >"$out/bundle.log" 2>&1; then
    say "writing the bundle failed; tail of $out/bundle.log:"; tail -n 30 "$out/bundle.log"
    exit 1
  fi
  tail -n 4 "$out/bundle.log"
  say "bundle ready: $(grep -c '^case ' "$bundle/manifest.txt") runs, $(du -sh "$bundle" | cut -f1)"
  say "on the GPU machine run tools/gpu/run.sh with ${bundle#"$top"/} carried along"
  exit 0
fi

# ---------------------------------------------------------------- GPU machine
: >"$out/summary.txt"
{
  echo "date: $(date -u +%FT%TZ)"; echo "host: $(uname -a)"
  [ -r /etc/os-release ] && grep -E '^PRETTY_NAME=' /etc/os-release
  command -v nvidia-smi >/dev/null && timeout 30 nvidia-smi \
      --query-gpu=index,name,driver_version,compute_cap,memory.total,memory.used --format=csv
  echo "cc: $(cc --version 2>/dev/null | head -n 1)"
  echo "ptxas: $(command -v ptxas || ls /usr/local/cuda/bin/ptxas 2>/dev/null || echo none)"
  echo "libcuda: $(ldconfig -p 2>/dev/null | grep -m1 'libcuda.so.1' || echo 'not in ldconfig cache')"
} >"$out/env.txt" 2>&1
cat "$out/env.txt"

if ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1' && [ -z "${LD_LIBRARY_PATH:-}" ]; then
  say "no libcuda.so.1 on this machine: install the NVIDIA driver (580.x for CUDA 13) or run on a GPU machine"
  exit 2
fi
if ! command -v cc >/dev/null; then
  say "no C compiler (cc): ptx_bundle_run.c cannot be built here"
  exit 2
fi

status=0
ran=0
if [ -f "$bundle/manifest.txt" ]; then
  say "compiling tools/gpu/ptx_bundle_run.c"
  runner=$(mktemp -d)/ptx_bundle_run
  if cc -std=gnu17 -O2 -Wall -Wextra -Wno-missing-field-initializers \
        "$top/tools/gpu/ptx_bundle_run.c" -ldl -o "$runner" >"$out/bundle_build.log" 2>&1; then
    # The GPU's own sm first; on sm_90+ also the sm_80 PTX (the driver's JIT path).
    for sm in "" sm_80; do
      log=$out/ptx_bundle_run${sm:+_$sm}.log
      if [ -n "$sm" ]; then
        grep -q 'running the sm_90 PTX' "$out/ptx_bundle_run.log" 2>/dev/null || break
      fi
      say "running the bundle ($(grep -c '^case ' "$bundle/manifest.txt") runs${sm:+, $sm PTX}) -> $log"
      timeout -k 10 240 "$runner" "$bundle" --timeout-ms 10000 ${sm:+--sm $sm} >"$log" 2>&1
      rc=$?
      ran=1
      grep -v '^  ' "$log" | tail -n 24
      if grep -q '^  ' "$log"; then
        echo "disagreements / notes:"; grep '^  ' "$log" | head -n 60
      fi
      case $rc in
        0) say "bundle${sm:+ ($sm PTX)}: PASS" ;;
        124|137) say "bundle${sm:+ ($sm PTX)}: TIMED OUT (over 240 s)"; status=1 ;;
        2) say "bundle: no usable GPU (see above)"; status=2; break ;;
        *) say "bundle${sm:+ ($sm PTX)}: FAIL (exit $rc)"; status=1 ;;
      esac
    done
  else
    say "compiling ptx_bundle_run.c failed:"; cat "$out/bundle_build.log"; status=1
  fi
else
  say "no PTX bundle at $bundle (make one with tools/gpu/run.sh --prepare where gpuext builds)"
fi

miss=$(missing_build_deps)
if [ -z "$miss" ]; then
  if build_gpuext; then
    say "running ptx_isa_runner (emits PTX here, runs it, compares with the interpreter)"
    timeout -k 10 420 "$build/ptx_isa_runner" --ptx-dir "$out/ptx-diff" \
        >"$out/ptx_isa_runner.log" 2>&1
    rc=$?
    ran=1
    grep -v '^  ' "$out/ptx_isa_runner.log" | tail -n 30
    grep '^  ' "$out/ptx_isa_runner.log" | head -n 60
    [ $rc -eq 0 ] && say "ptx_isa_runner: PASS" || { say "ptx_isa_runner: FAIL (exit $rc)"; [ $status -eq 0 ] && status=1; }
  else
    status=1
  fi
else
  say "gpuext itself does not build here (missing: $(echo "$miss" | paste -sd, -)); the bundle is what ran"
fi

if [ $ran -eq 0 ]; then
  say "nothing ran: carry a bundle (tools/gpu/run.sh --prepare) or install gpuext's build dependencies"
  exit 2
fi
exit $status

#!/usr/bin/env bash
# gpuext on an NVIDIA GPU: eBPF -> PTX checked against the reference interpreter.
#
#   tools/gpu/run.sh --prepare   on a machine that builds gpuext (LLVM 22, libbpf, clang-22):
#                                builds it in build-gpu/ and writes the PTX bundle
#                                build-gpu/bundle (PTX for sm_80 + sm_90 of every ISA corpus
#                                case and runtime check, with the interpreter's results)
#                                and the SPIR-V bundle build-gpu/spirv-bundle (Vulkan-flavour
#                                SPIR-V of every ISA corpus case with the interpreter's results,
#                                tools/gpu/spirv_isa_bundle.c) plus this machine's Vulkan loader
#                                in build-gpu/vulkan/ (the GPU machine may have none)
#   tools/gpu/run.sh             on the GPU machine: runs the SPIR-V bundle on the Vulkan driver
#                                with tools/gpu/spirv_bundle_run.c (cc + a loader + the ICD), the
#                                PTX bundle with tools/gpu/ptx_bundle_run.c (needs only cc + the
#                                NVIDIA driver), and, where gpuext itself builds there too, also
#                                the full ptx_isa_runner (emits on the spot)
#
# Carry build-gpu/bundle, build-gpu/spirv-bundle and build-gpu/vulkan to the GPU machine.
# Logs go to $OUT (default ./gpu-out): env.txt, build logs, spirv_bundle_run.log,
# ptx_bundle_run.log, ptx_isa_runner.log, disagreeing PTX under ptx-diff/. Exit status:
# 0 everything agrees, 1 a disagreement or failure, 2 no usable GPU / nothing could run.
# GPUEXT_VK_DEVICE picks the Vulkan device by name (default: NVIDIA where nvidia-smi exists),
# GPUEXT_VULKAN_LOADER the loader library.
# Never installs anything (the GPU machine has no network) and allocates little GPU memory
# (one block of 64 threads, < 64 MiB per launch).
set -uo pipefail
cd "$(dirname "$0")/../.."
top=$PWD
out=${OUT:-$top/gpu-out}
build=${GPUEXT_GPU_BUILD:-$top/build-gpu}
bundle=${GPUEXT_PTX_BUNDLE:-$build/bundle}
spv_bundle=${GPUEXT_SPIRV_BUNDLE:-$build/spirv-bundle}
vk_dir=$build/vulkan
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

  # SPIR-V (Vulkan flavour) bundle + the loader the GPU machine lacks.
  say "building spirv_isa_bundle"
  cmake --build "$build" -j"$jobs" --target spirv_isa_bundle >>"$out/build.log" 2>&1 || {
    say "build failed; tail of $out/build.log:"; tail -n 40 "$out/build.log"; exit 1; }
  rm -rf "$spv_bundle"
  say "writing the SPIR-V bundle to $spv_bundle"
  if ! "$build/spirv_isa_bundle" "$spv_bundle" >"$out/spirv_bundle.log" 2>&1; then
    say "writing the SPIR-V bundle failed; tail of $out/spirv_bundle.log:"
    tail -n 30 "$out/spirv_bundle.log"; exit 1
  fi
  tail -n 3 "$out/spirv_bundle.log"
  say "SPIR-V bundle ready: $(grep -c '^case ' "$spv_bundle/manifest.txt") modules, $(du -sh "$spv_bundle" | cut -f1)"
  loader=${GPUEXT_VULKAN_LOADER:-$(ldconfig -p 2>/dev/null | awk '/libvulkan\.so\.1 .*x86-64/ {print $NF; exit}')}
  rm -rf "$vk_dir"
  if [ -n "$loader" ] && [ -r "$loader" ]; then
    mkdir -p "$vk_dir" && cp -L "$loader" "$vk_dir/libvulkan.so.1"
    say "Vulkan loader for the GPU machine: $vk_dir/libvulkan.so.1 (from $(readlink -f "$loader"))"
  else
    say "no Vulkan loader here (libvulkan1): the GPU machine must bring its own"
  fi
  say "on the GPU machine run tools/gpu/run.sh with ${bundle#"$top"/}, ${spv_bundle#"$top"/} and ${vk_dir#"$top"/} carried along"
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
  echo "libvulkan: $(ldconfig -p 2>/dev/null | grep -m1 'libvulkan.so.1' || echo 'not in ldconfig cache')"
  for d in /etc/vulkan/icd.d /usr/share/vulkan/icd.d /usr/local/share/vulkan/icd.d; do
    for j in "$d"/*.json; do
      [ -f "$j" ] && echo "vulkan ICD: $j: $(tr -d ' \n' <"$j" | grep -o '"library_path":"[^"]*"')"
    done
  done
  echo "vulkan headers: $([ -d /usr/include/vulkan ] && echo /usr/include/vulkan || echo none)"
} >"$out/env.txt" 2>&1
cat "$out/env.txt"

if ! command -v cc >/dev/null; then
  say "no C compiler (cc): the bundle runners cannot be built here"
  exit 2
fi
have_cuda=1
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1' && [ -z "${LD_LIBRARY_PATH:-}" ]; then
  say "no libcuda.so.1 on this machine: the PTX runs need the NVIDIA driver (580.x for CUDA 13)"
  have_cuda=0
fi

status=0
ran=0

# SPIR-V on the Vulkan driver: the loader of the system, else the one --prepare carried.
if [ -f "$spv_bundle/manifest.txt" ]; then
  say "compiling tools/gpu/spirv_bundle_run.c"
  spv_runner=$(mktemp -d)/spirv_bundle_run
  if cc -std=c99 -O2 -Wall -Wextra -Wno-missing-field-initializers \
        "$top/tools/gpu/spirv_bundle_run.c" -ldl -o "$spv_runner" >"$out/spirv_build.log" 2>&1; then
    if [ -z "${GPUEXT_VULKAN_LOADER:-}" ]; then
      if ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1'; then
        export GPUEXT_VULKAN_LOADER=libvulkan.so.1
      elif [ -f "$vk_dir/libvulkan.so.1" ]; then
        export GPUEXT_VULKAN_LOADER=$vk_dir/libvulkan.so.1
      fi
    fi
    if [ -z "${GPUEXT_VK_DEVICE:-}" ] && command -v nvidia-smi >/dev/null; then
      export GPUEXT_VK_DEVICE=NVIDIA
    fi
    # Runs the bundle once; $1 names the attempt. Returns the runner's exit status.
    run_spirv() {
      local log=$out/spirv_bundle_run$1.log rc
      say "running the SPIR-V bundle ($(grep -c '^case ' "$spv_bundle/manifest.txt") modules) on ${GPUEXT_VK_DEVICE:-the first Vulkan GPU} with loader ${GPUEXT_VULKAN_LOADER:-none}${VK_ICD_FILENAMES:+, ICD $VK_ICD_FILENAMES} -> $log"
      timeout -k 10 120 "$spv_runner" "$spv_bundle" --timeout-ms 10000 >"$log" 2>&1
      rc=$?
      grep -v '^  ' "$log" | tail -n 32
      if grep -q '^  ' "$log"; then
        echo "disagreements / notes:"; grep '^  ' "$log" | head -n 60
      fi
      return $rc
    }
    run_spirv ""
    rc=$?
    if [ $rc -eq 2 ]; then
      say "SPIR-V bundle: no Vulkan loader/device (see above); the loader's own account (VK_LOADER_DEBUG=all):"
      VK_LOADER_DEBUG=all timeout -k 10 60 "$spv_runner" "$spv_bundle" --case - \
        >"$out/vk_loader_debug.log" 2>&1
      grep -iE 'error|warn|fail|nvidia|icd.*json|searching for driver' "$out/vk_loader_debug.log" | sort -u | head -n 40
      echo "NVIDIA userspace libraries the Vulkan driver needs (ldconfig):"
      ldconfig -p 2>/dev/null | grep -E 'lib(GLX|EGL)_nvidia|libnvidia-(glcore|glvkspirv|gpucomp|glsi|tls|eglcore)' \
        | sed 's/^/     /' || echo "     none"
      # libGLX_nvidia's ICD entry needs the GLX/graphics side; headless machines often have
      # libEGL_nvidia.so.0, which exports the same ICD entry points.
      egl=$(ldconfig -p 2>/dev/null | awk '/libEGL_nvidia\.so\.0 .*x86-64/ {print $NF; exit}')
      if [ -z "${VK_ICD_FILENAMES:-}" ] && [ -n "$egl" ]; then
        printf '{ "file_format_version": "1.0.0", "ICD": { "library_path": "%s", "api_version": "1.3.0" } }\n' \
          "$egl" >"$out/nvidia_icd_egl.json"
        say "retrying with an ICD manifest naming $egl (headless EGL variant of NVIDIA's driver)"
        VK_ICD_FILENAMES=$out/nvidia_icd_egl.json run_spirv _egl
        rc=$?
      fi
    fi
    case $rc in
      0) say "SPIR-V bundle: PASS"; ran=1 ;;
      124|137) say "SPIR-V bundle: TIMED OUT (over 120 s)"; status=1; ran=1 ;;
      2) say "SPIR-V bundle: no usable Vulkan device"; vk_nodev=1 ;;
      *) say "SPIR-V bundle: FAIL (exit $rc)"; status=1; ran=1 ;;
    esac
  else
    say "compiling spirv_bundle_run.c failed:"; cat "$out/spirv_build.log"; status=1
  fi
else
  say "no SPIR-V bundle at $spv_bundle (make one with tools/gpu/run.sh --prepare where gpuext builds)"
fi

if [ $have_cuda -eq 0 ]; then
  :
elif [ -f "$bundle/manifest.txt" ]; then
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
if [ $have_cuda -eq 0 ]; then
  say "no libcuda: the PTX bundle and ptx_isa_runner did not run"
elif [ -z "$miss" ]; then
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
if [ $status -eq 0 ] && [ "${vk_nodev:-0}" = 1 ]; then
  say "the SPIR-V bundle could not run (no Vulkan device): exit 2"
  exit 2
fi
exit $status

#!/usr/bin/env bash
# Device probes on an NVIDIA GPU: every probe tool on every CUDA test app, checked against
# the apps' ground truth, then the overhead benchmark (bench/gpu/run.sh).
#
#   tools/gpu/probes.sh --prepare   where gpuext builds (LLVM 22, libbpf, clang-22): builds
#                                   gpuext, libgpuext-nvprobe.so and the probe tools in
#                                   $GPUEXT_TRACE_BUILD (default build-gpu/trace-build) and
#                                   bundles what must run on the GPU machine into
#                                   build-gpu/trace-bundle: gpuext, libgpuext-nvprobe.so,
#                                   probes/*.bpf.o and libs.tar.xz (the shared libraries gpuext
#                                   needs beyond glibc and libstdc++, xz-compressed; reused
#                                   while the list is unchanged)
#   tools/gpu/probes.sh             on the GPU machine (nvcc, the driver; gpuext cannot be built
#                                   there): builds tools/gpu/apps with nvcc, runs them without
#                                   probes and under each tool, checks (tools/gpu/apps/check.py):
#                                   threadhist counts == launched warps/threads, memtrace
#                                   addresses == the apps' access pattern exactly (and the trace
#                                   replays in gpuext sim), block exits inside the kernel's
#                                   %globaltimer bounds, launch latency in (0, 10 ms), blocks per
#                                   SM sum to the blocks launched, device kernel durations <= the
#                                   cudaEvent time, records of an app given one GPU by UUID
#                                   carry nvidia-smi's number of it, with 2+ GPUs exits per GPU
#                                   == the blocks launched there (multigpu.cu), memtrace through a
#                                   device function (devfunc.cu), two processes' counts adding up in
#                                   one threadhist array and one hash map (probe_hashcount.bpf.c),
#                                   threadhist with a full constant
#                                   bank (bigconst.cu), the GPU's L2 policy on threadhist's map
#                                   atomic (nvprobe-PID.txt), a CUDA graph's replays paired with their
#                                   launches (graph.cu), and every app's result unchanged; then the
#                                   benchmark unless GPUEXT_NO_BENCH=1 (or GPUEXT_PROBES_NO_BENCH=1).
#
# Call it on the device with the bundle carried:
#   run(command="tools/gpu/probes.sh", carry=["build-gpu/trace-bundle"])
# Logs go to $OUT (default ./gpu-out): summary.txt, env.txt, checks.txt, bench.txt and
# logs.tar.gz (every run's output). Exit status: 0 all checks pass, 1 a check failed,
# 2 nothing could run (no GPU, no nvcc, no bundle).
# Allocates at most a few GiB of plain device memory (cudaMalloc; no managed memory).
set -uo pipefail
cd "$(dirname "$0")/../.."
top=$PWD
bundle=${GPUEXT_TRACE_BUNDLE:-$top/build-gpu/trace-bundle}
out=${OUT:-$top/gpu-out}
mkdir -p "$out"
say() { printf '==> %s\n' "$*" | tee -a "$out/summary.txt"; }

# ------------------------------------------------------------------ prepare (build machine)
if [ "${1:-}" = "--prepare" ]; then
  build=${GPUEXT_TRACE_BUILD:-$top/build-gpu/trace-build}
  jobs=${GPUEXT_JOBS:-2}
  say "building gpuext, libgpuext-nvprobe.so and the probe tools in $build"
  cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUEXT_WERROR=OFF \
      >"$out/prepare.log" 2>&1 || { say "cmake failed"; tail -n 20 "$out/prepare.log"; exit 1; }
  nice cmake --build "$build" -j"$jobs" --target gpuext gpuext-nvprobe probes test_bpf_objs \
      >>"$out/prepare.log" 2>&1 || { say "build failed"; tail -n 30 "$out/prepare.log"; exit 1; }
  mkdir -p "$bundle/probes"
  rm -f "$bundle"/probes/*.bpf.o
  cp "$build/gpuext" "$build/libgpuext-nvprobe.so" "$bundle/"
  cp "$build"/tools/probes/*.bpf.o "$bundle/probes/"
  mkdir -p "$bundle/test"
  cp "$build"/tests/bpf/probe_unplaced.bpf.o "$build"/tests/bpf/probe_bigrec.bpf.o \
     "$build"/tests/bpf/hash_count.bpf.o "$build"/tests/bpf/probe_hashcount.bpf.o "$bundle/test/"
  # The preload library goes into the apps' processes: glibc only.
  extra=$(ldd "$bundle/libgpuext-nvprobe.so" | awk '/=>/ {print $1}' |
          grep -vE '^(libc|libm|libdl|libpthread|librt)\.so' || true)
  if [ -n "$extra" ]; then
    say "libgpuext-nvprobe.so needs more than glibc: $extra"; exit 1
  fi
  # gpuext's own libraries, except glibc and the C++ runtime (newer on the GPU machine).
  libs=$(ldd "$bundle/gpuext" | awk '/=>/ {print $3}' |
         grep -vE '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s)\.so' | sort)
  list=$(for l in $libs; do echo "$(basename "$l") $(stat -Lc '%s %Y' "$l")"; done)
  if [ -f "$bundle/libs.tar.xz" ] && [ "$(cat "$bundle/libs.list" 2>/dev/null)" = "$list" ]; then
    say "libs.tar.xz is up to date ($(echo "$libs" | wc -w) libraries)"
  else
    say "compressing $(echo "$libs" | wc -w) libraries into libs.tar.xz (takes minutes)"
    tmp=$(mktemp -d)
    for l in $libs; do cp -L "$l" "$tmp/"; done
    (cd "$tmp" && tar cf - ./*.so*) | nice xz -9 -T2 >"$bundle/libs.tar.xz" || exit 1
    echo "$list" >"$bundle/libs.list"
    rm -rf "$tmp"
  fi
  size=$(du -sk "$bundle" | cut -f1)
  say "bundle ready: $bundle, $((size / 1024)) MiB ($(ls "$bundle"/probes | wc -l) tools)"
  if [ "$size" -gt $((60 * 1024)) ]; then
    say "the bundle is over 60 MiB: it will not fit a device call's 64 MiB"; exit 1
  fi
  say "on the GPU machine: run(command=\"tools/gpu/probes.sh\", carry=[\"${bundle#"$top"/}\"])"
  exit 0
fi

# ------------------------------------------------------------------ GPU machine
: >"$out/summary.txt"
: >"$out/checks.txt"
logs=$(mktemp -d /tmp/gx-logs.XXXXXX)
apps=$(mktemp -d /tmp/gx-apps.XXXXXX)
{
  echo "date: $(date -u +%FT%TZ)"; echo "host: $(uname -a)"
  [ -r /etc/os-release ] && grep -E '^PRETTY_NAME=' /etc/os-release
  command -v nvidia-smi >/dev/null && timeout 30 nvidia-smi \
      --query-gpu=index,name,driver_version,compute_cap,memory.total,memory.used --format=csv
  echo "nvcc: $(nvcc --version 2>/dev/null | tail -n 1 || echo none)"
  echo "python3: $(python3 --version 2>&1)"
  python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.is_available())' 2>&1 | tail -n 1
  python3 -c 'import triton; print("triton", triton.__version__)' 2>&1 | tail -n 1
  python3 -c 'import cupy; print("cupy", cupy.__version__)' 2>&1 | tail -n 1
} >"$out/env.txt" 2>&1
cat "$out/env.txt"
PATH=$PATH:/usr/local/cuda/bin
if ! command -v nvcc >/dev/null; then say "no nvcc: the test apps cannot be built"; exit 2; fi
if [ ! -x "$bundle/gpuext" ] || [ ! -f "$bundle/libs.tar.xz" ]; then
  say "no bundle at $bundle: run tools/gpu/probes.sh --prepare where gpuext builds, carry it"; exit 2
fi

# gpuext runs on its own libraries through the system's loader (not LD_LIBRARY_PATH, which the
# traced apps would inherit).
libdir=/tmp/gx-libs
mkdir -p "$libdir"
if ! tar -xJf "$bundle/libs.tar.xz" -C "$libdir" 2>/dev/null; then
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
      "$bundle/libs.tar.xz" "$libdir" || { say "cannot unpack libs.tar.xz"; exit 2; }
fi
loader=$(ls /lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 2>/dev/null | head -n 1)
export GPUEXT_PROBE_DIR=$bundle/probes GPUEXT_NVPROBE_LIB=$bundle/libgpuext-nvprobe.so
export GPUEXT_CACHE_DIR=/tmp/gx-cache
gx() { "$loader" --library-path "$libdir" "$bundle/gpuext" "$@"; }
if ! gx version >"$out/gpuext_version.txt" 2>&1; then
  say "the bundled gpuext does not start here:"; cat "$out/gpuext_version.txt"; exit 2
fi
gx backends >>"$out/env.txt" 2>&1

# ---- build the apps (nvcc's default: static cudart, PTX for its default arch)
say "building the test apps with nvcc"
src=$top/tools/gpu/apps
build_app() { # name, nvcc args...
  local n=$1; shift
  if ! nvcc -O2 -I"$src" -o "$apps/$n" "$@" >>"$logs/nvcc.log" 2>&1; then
    say "nvcc failed for $n (tail of nvcc.log):"; tail -n 15 "$logs/nvcc.log"; return 1
  fi
}
fails=0
for a in vecadd gemm reduce multistream graph childgraph devfunc bigconst gather funcexit; do
  build_app "$a" "$src/$a.cu" || fails=$((fails + 1))
done
build_app vecadd_shared -cudart shared "$src/vecadd.cu" || fails=$((fails + 1))
build_app nvrtc_saxpy "$src/nvrtc_saxpy.cu" -lnvrtc -lcuda || fails=$((fails + 1))
build_app ptxload "$src/ptxload.cu" -lcuda || fails=$((fails + 1))
build_app multigpu "$src/multigpu.cu" || fails=$((fails + 1))
nvcc -ptx -arch=compute_80 -o "$apps/ptxkern.ptx" "$src/ptxkern.cu" >>"$logs/nvcc.log" 2>&1 ||
  fails=$((fails + 1))
if [ "$fails" -gt 0 ]; then say "$fails app builds failed"; fi
say "static cudart check: vecadd links $(ldd "$apps/vecadd" | grep -c cudart) libcudart (0 = static);" \
    "vecadd_shared $(ldd "$apps/vecadd_shared" | grep -c cudart)"

status=0
check() { # check.py args... (result appended to checks.txt)
  local line
  line=$(python3 "$src/check.py" "$@" 2>&1 | tail -n 1)
  echo "$line" | tee -a "$out/checks.txt"
  case $line in PASS*) ;; *) status=1 ;; esac
}
# base NAME APP ARGS...: the app without probes
base() {
  local n=$1; shift
  timeout -k 5 60 "$@" >"$logs/base_$n.log" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || { echo "FAIL base_$n: exit $rc" | tee -a "$out/checks.txt"; status=1; }
}
# traced NAME TOOL [gpuext options] -- APP ARGS...: the app under gpuext trace
traced() {
  local n=$1; shift
  timeout -k 5 90 "$loader" --library-path "$libdir" "$bundle/gpuext" trace "$@" \
      >"$logs/$n.log" 2>&1
  local rc=$?
  if [ $rc -ne 0 ]; then
    echo "FAIL $n: gpuext trace exit $rc; tail:" | tee -a "$out/checks.txt"
    tail -n 12 "$logs/$n.log" | sed 's/^/    /' | tee -a "$out/checks.txt"
    status=1
    return 1
  fi
  return 0
}

said() { # NAME LOG PATTERN WHAT: the log says it (grep -E)
  if grep -qE "$3" "$2" 2>/dev/null; then
    echo "PASS $1: $4" | tee -a "$out/checks.txt"
  else
    echo "FAIL $1: the log does not say $4 (/$3/)" | tee -a "$out/checks.txt"; status=1
  fi
}

# The GPUs as nvidia-smi numbers them (the ground truth for GPU ids in records).
timeout 30 nvidia-smi --query-gpu=index,pci.bus_id,uuid --format=csv,noheader >"$logs/gpus.csv" \
    2>"$logs/gpus.err"
cp "$logs/gpus.csv" "$out/gpus.csv" 2>/dev/null

say "baselines (no probes)"
base vecadd "$apps/vecadd" 1048576
base vecadd_odd "$apps/vecadd" 1000
base vecadd_small "$apps/vecadd" 4096
base vecadd3d "$apps/vecadd" 1000 256 3d
base vecadd_shared "$apps/vecadd_shared" 1048576
base gemm "$apps/gemm" 512
base reduce "$apps/reduce" 1000003
base multistream "$apps/multistream" 4 8
base nvrtc "$apps/nvrtc_saxpy" 3000
base ptxload "$apps/ptxload" "$apps/ptxkern.ptx" 65536
base graph "$apps/graph" 10
base childgraph "$apps/childgraph" 6
base devfunc "$apps/devfunc" 4096
base bigconst "$apps/bigconst" 1048576
base gather "$apps/gather" 4096
base funcexit "$apps/funcexit" 4096

say "threadhist: exits == launched warps (warp mode) / threads (--per-thread)"
traced th_vecadd threadhist --interval 0 --dir "$logs/dir_th_vecadd" --out "$logs/th_vecadd.csv" -- "$apps/vecadd" 1048576 &&
  check threadhist th_vecadd "$logs/th_vecadd.log" "$logs/th_vecadd.csv" warp
# its map atomic carries the GPU's L2 policy (sm_80 and up: every GPU this runs on)
check l2policy th_vecadd_l2policy "$logs/dir_th_vecadd"
# 1000 threads in 4 blocks of 256: warp 31 (threads 992-1023) has 8 lanes in range and 24 that
# branch to the end, each group through an exit of its own (hal/nvidia/ptx_exits.c); lane 0
# runs the probe wherever it leaves, so the warp still counts once.
traced th_vecadd_odd_warp threadhist --interval 0 --out "$logs/th_vecadd_odd_warp.csv" -- "$apps/vecadd" 1000 &&
  check threadhist th_vecadd_odd_warp_split "$logs/th_vecadd_odd_warp.log" "$logs/th_vecadd_odd_warp.csv" warp
# blocks (32, 4, 2) on a grid two deep in z: the kernel itself runs, not its flat twin (whose probe
# takes z as 0 and would count warps twice); per warp and per thread
traced th_vecadd3d threadhist --interval 0 --out "$logs/th_vecadd3d.csv" -- "$apps/vecadd" 1000 256 3d &&
  check threadhist th_vecadd3d "$logs/th_vecadd3d.log" "$logs/th_vecadd3d.csv" warp
traced th_vecadd3d_pt threadhist --per-thread --interval 0 --out "$logs/th_vecadd3d_pt.csv" -- "$apps/vecadd" 1000 256 3d &&
  check threadhist th_vecadd3d_perthread "$logs/th_vecadd3d_pt.log" "$logs/th_vecadd3d_pt.csv" thread
traced th_vecadd_odd threadhist --per-thread --interval 0 --out "$logs/th_vecadd_odd.csv" -- "$apps/vecadd" 1000 &&
  check threadhist th_vecadd_odd_perthread "$logs/th_vecadd_odd.log" "$logs/th_vecadd_odd.csv" thread
traced th_shared threadhist --interval 0 --out "$logs/th_shared.csv" -- "$apps/vecadd_shared" 1048576 &&
  check threadhist th_vecadd_shared_cudart "$logs/th_shared.log" "$logs/th_shared.csv" warp
traced th_gemm threadhist --interval 0 --out "$logs/th_gemm.csv" -- "$apps/gemm" 512 &&
  check threadhist th_gemm "$logs/th_gemm.log" "$logs/th_gemm.csv" warp
traced th_reduce threadhist --per-thread --interval 0 --out "$logs/th_reduce.csv" -- "$apps/reduce" 1000003 &&
  check threadhist th_reduce_divergent_perthread "$logs/th_reduce.log" "$logs/th_reduce.csv" thread
# a third of funcexit's threads end with PTX exit inside a device function the compiler did not inline
traced th_funcexit threadhist --per-thread --interval 0 --out "$logs/th_funcexit.csv" -- "$apps/funcexit" 4096 &&
  check threadhist th_funcexit_perthread "$logs/th_funcexit.log" "$logs/th_funcexit.csv" thread
traced th_multistream threadhist --per-thread --interval 0 --out "$logs/th_ms.csv" -- "$apps/multistream" 4 8 &&
  check threadhist th_multistream_perthread "$logs/th_multistream.log" "$logs/th_ms.csv" thread
traced th_nvrtc threadhist --per-thread --interval 0 --out "$logs/th_nvrtc.csv" -- "$apps/nvrtc_saxpy" 3000 &&
  check threadhist th_nvrtc_perthread "$logs/th_nvrtc.log" "$logs/th_nvrtc.csv" thread
traced th_graph threadhist --per-thread --interval 0 --out "$logs/th_graph.csv" -- "$apps/graph" 10 &&
  check threadhist th_graph_perthread "$logs/th_graph.log" "$logs/th_graph.csv" thread
traced th_childgraph threadhist --per-thread --interval 0 --out "$logs/th_childgraph.csv" -- "$apps/childgraph" 6 &&
  check threadhist th_childgraph_perthread "$logs/th_childgraph.log" "$logs/th_childgraph.csv" thread
traced th_ptxload threadhist --interval 0 --out "$logs/th_ptxload.csv" -- "$apps/ptxload" "$apps/ptxkern.ptx" 65536 &&
  check threadhist th_ptxload "$logs/th_ptxload.log" "$logs/th_ptxload.csv" warp
# bigconst's own __constant__ data fills the 64 KiB bank: the probes' table goes to global memory
traced th_bigconst threadhist --interval 0 --out "$logs/th_bigconst.csv" -- "$apps/bigconst" 1048576 &&
  check threadhist th_bigconst "$logs/th_bigconst.log" "$logs/th_bigconst.csv" warp
[ -f "$logs/th_bigconst.log" ] && said th_bigconst_said "$logs/th_bigconst.log" \
  "leaves no room in the 64 KiB constant bank" "the probes' table left the full constant bank"
# Two processes at once on one GPU: each one's mirror adds its own change into the shared
# array (before the twelfth session the last one to copy won and the total was one app's).
traced th_twoproc threadhist --per-thread --interval 0 --out "$logs/th_twoproc.csv" -- \
    sh -c "\"$apps/vecadd\" 1048576 & \"$apps/vecadd\" 65536; wait" &&
  check threadhist th_twoproc_perthread "$logs/th_twoproc.log" "$logs/th_twoproc.csv" thread
# The same two processes under a hash map (tests/bpf/probe_hashcount.bpf.c): keys and counts add up
# (before the thirteenth session each process rebuilt the shared map, and the last one won).
traced hash_twoproc "$bundle/test/probe_hashcount.bpf.o" --interval 0 -- \
    sh -c "\"$apps/vecadd\" 1048576 & \"$apps/vecadd\" 65536; wait" &&
  check hashcount hash_twoproc "$logs/hash_twoproc.log" blocks

say "memtrace: recorded addresses == the apps' access pattern, exactly"
traced mt_vecadd memtrace --interval 0 --out "$logs/mt_vecadd.txt" -- "$apps/vecadd" 4096 &&
  check memtrace mt_vecadd "$logs/mt_vecadd.log" "$logs/mt_vecadd.txt" vecadd a:r,b:r,c:w
traced mt_nvrtc memtrace --interval 0 --out "$logs/mt_nvrtc.txt" -- "$apps/nvrtc_saxpy" 3000 &&
  check memtrace mt_nvrtc "$logs/mt_nvrtc.log" "$logs/mt_nvrtc.txt" nvrtc_saxpy x:r,y:r,y:w
# gather: consecutive (one record a warp), scattered (one a lane), affine with stride 8 (one a warp)
traced mt_gather memtrace --interval 0 --out "$logs/mt_gather.txt" -- "$apps/gather" 4096 &&
  check memtrace mt_gather "$logs/mt_gather.log" "$logs/mt_gather.txt" gather idx:r,a:r%7919,c:w,s:w*2
# devfunc's y accesses are in a device function the compiler did not inline (a .func)
traced mt_devfunc memtrace --interval 0 --out "$logs/mt_devfunc.txt" -- "$apps/devfunc" 4096 &&
  check memtrace mt_devfunc "$logs/mt_devfunc.log" "$logs/mt_devfunc.txt" devfunc_axpy x:r,y:r,y:w &&
  said mt_devfunc_named "$logs/mt_devfunc.log" "; 1 device functions traced as their own" \
    "the device function is listed"
if [ -f "$logs/mt_devfunc.txt" ]; then
  # the simulator ends a kernel where the kernel number changes: the calls must not cut it
  nk=$(awk '$1 == "access" && NF >= 5 {print $5}' "$logs/mt_devfunc.txt" | sort -u | wc -l)
  if [ "$nk" -le 1 ] && gx sim --trace "$logs/mt_devfunc.txt" >"$logs/mt_devfunc_replay.log" 2>&1; then
    echo "PASS mt_devfunc_replay: one kernel in the simulator trace, and it replays" | tee -a "$out/checks.txt"
  else
    echo "FAIL mt_devfunc_replay: $nk kernel numbers in the trace; $(tail -n 1 "$logs/mt_devfunc_replay.log" 2>/dev/null)" | tee -a "$out/checks.txt"; status=1
  fi
fi
if [ -f "$logs/mt_vecadd.txt" ]; then
  if gx sim --trace "$logs/mt_vecadd.txt" >"$logs/mt_replay.log" 2>&1; then
    echo "PASS mt_replay: gpuext sim --trace replays the GPU trace ($(grep -c '^access' "$logs/mt_vecadd.txt") accesses)" | tee -a "$out/checks.txt"
  else
    echo "FAIL mt_replay: gpuext sim --trace rejected it: $(tail -n 2 "$logs/mt_replay.log")" | tee -a "$out/checks.txt"; status=1
  fi
fi

say "kernelretsnoop: one exit per block, inside the kernel's %globaltimer bounds"
traced rs_gemm kernelretsnoop --interval 200 --out "$logs/rs_gemm.csv" -- "$apps/gemm" 512 &&
  check retsnoop rs_gemm "$logs/rs_gemm.log" "$logs/rs_gemm.csv" gemm_tiled 20000
# GPU ids are the system's (nvidia-smi's numbers), also for an app given one GPU by UUID:
# the last GPU, which is the app's device 0 (with one GPU both are 0: the run still shows the
# preload found the GPU in the driver's own list).
last_uuid=$(awk -F', *' '$1 ~ /^[0-9]+$/ && NF >= 3 { u = $3 } END { print u }' "$logs/gpus.csv")
first_uuid=$(awk -F', *' '$1 ~ /^[0-9]+$/ && NF >= 3 { print $3; exit }' "$logs/gpus.csv")
first_bus=$(awk -F', *' '$1 ~ /^[0-9]+$/ && NF >= 3 { print $2; exit }' "$logs/gpus.csv")
if [ -n "$last_uuid" ]; then
  CUDA_VISIBLE_DEVICES=$last_uuid traced rs_gpuid kernelretsnoop --interval 0 \
      --out "$logs/rs_gpuid.csv" -- "$apps/vecadd" 4096 &&
    check gpuid rs_gpuid "$logs/rs_gpuid.log" "$logs/rs_gpuid.csv" "$logs/gpus.csv" "$last_uuid"
  # The number is the GPU's rank in the list, not its device number: a list of the first GPU
  # and two made-up addresses below it (GPUEXT_NV_GPU_LIST) makes it GPU 2.
  fakes=$(python3 -c '
import sys
d, b, df = sys.argv[1].lower().split(":"); dv, fn = df.split(".")
a = (int(d, 16) << 16) | (int(b, 16) << 8) | (int(dv, 16) << 3) | int(fn, 16)
if a >= 2:
    print(" ".join("%04x:%02x:%02x.%x" % (x >> 16, (x >> 8) & 255, (x >> 3) & 31, x & 7)
                   for x in (a - 2, a - 1)))' "$first_bus" 2>/dev/null)
  if [ -n "$fakes" ]; then
    gl=$(mktemp -d /tmp/gx-gpulist.XXXXXX)
    for f in $fakes $(echo "$first_bus" | sed 's/^0000\(....:\)/\1/'); do : >"$gl/$f"; done
    GPUEXT_NV_GPU_LIST=$gl CUDA_VISIBLE_DEVICES=$first_uuid traced rs_gpuid_list kernelretsnoop \
        --interval 0 --out "$logs/rs_gpuid_list.csv" -- "$apps/vecadd" 4096 &&
      check gpuid rs_gpuid_list "$logs/rs_gpuid_list.log" "$logs/rs_gpuid_list.csv" \
          "$logs/gpus.csv" "$first_uuid" 2
    rm -rf "$gl"
  else
    say "rs_gpuid_list: GPU 0 is at PCI address $first_bus: no two addresses below it to list"
  fi
else
  echo "FAIL rs_gpuid: nvidia-smi listed no GPU (see gpus.csv)" | tee -a "$out/checks.txt"; status=1
fi

say "launchlate: host launch -> first block start in (0, 10 ms)"
traced ll_multistream launchlate --interval 0 --out "$logs/ll_ms.csv" -- "$apps/multistream" 4 8 &&
  check launchlate ll_multistream "$logs/ll_multistream.log" "$logs/ll_ms.csv" 10000000
traced ll_vecadd launchlate --interval 0 --out "$logs/ll_vecadd.csv" -- "$apps/vecadd" 1048576 &&
  check launchlate ll_vecadd "$logs/ll_vecadd.log" "$logs/ll_vecadd.csv" 10000000
# graph: its two launches are captured, not run (no launch record); each of its 10 replays
# (cuGraphLaunch) records both kernel nodes: 20 launches, 20 starts, all paired, none with
# a capture-time record
traced ll_graph launchlate --interval 0 --out "$logs/ll_graph.csv" -- "$apps/graph" 10 &&
  check launchlate ll_graph "$logs/ll_graph.log" "$logs/ll_graph.csv" 10000000 &&
  said ll_graph_paired "$logs/ll_graph.log" "launchlate: 20 launches, 20 first-block starts, 20 paired" \
    "every graph replay's kernel nodes recorded and paired"
# a child graph node given another child graph (cudaGraphExecChildGraphNodeSetParams) halfway
traced ll_childgraph launchlate --interval 0 --out "$logs/ll_childgraph.csv" -- "$apps/childgraph" 6 &&
  check launchlate ll_childgraph "$logs/ll_childgraph.log" "$logs/ll_childgraph.csv" 10000000 &&
  said ll_childgraph_paired "$logs/ll_childgraph.log" "launchlate: 12 launches, 12 first-block starts, 12 paired" \
    "the records followed the child graph's update"

say "smload: blocks per SM sum to the blocks launched"
traced sm_gemm smload --interval 0 --out "$logs/sm_gemm.csv" -- "$apps/gemm" 512 &&
  check smload sm_gemm "$logs/sm_gemm.log" "$logs/sm_gemm.csv"
traced sm_multistream smload --interval 0 --out "$logs/sm_ms.csv" -- "$apps/multistream" 4 8 &&
  check smload sm_multistream "$logs/sm_multistream.log" "$logs/sm_ms.csv"

say "kerneldur: device-measured duration <= the cudaEvent time"
traced kd_gemm kerneldur --interval 0 --out "$logs/kd_gemm.csv" -- "$apps/gemm" 1024 &&
  check kerneldur kd_gemm "$logs/kd_gemm.log" "$logs/kd_gemm.csv" gemm_tiled
traced kd_vecadd kerneldur --interval 0 --out "$logs/kd_vecadd.csv" -- "$apps/vecadd" 1048576 &&
  check kerneldur kd_vecadd "$logs/kd_vecadd.log" "$logs/kd_vecadd.csv" vecadd

say "results unchanged by instrumentation"
for p in "vecadd th_vecadd" "vecadd_odd th_vecadd_odd" "vecadd_shared th_shared" "gemm th_gemm" \
         "reduce th_reduce" "multistream th_multistream" "graph th_graph" "nvrtc th_nvrtc" "ptxload th_ptxload" \
         "vecadd_small mt_vecadd" "nvrtc mt_nvrtc" "gemm rs_gemm" "multistream ll_multistream" \
         "gemm sm_gemm" "vecadd3d th_vecadd3d" "devfunc mt_devfunc" "bigconst th_bigconst" "graph ll_graph" "childgraph ll_childgraph" "childgraph th_childgraph" "gather mt_gather" "funcexit th_funcexit"; do
  set -- $p
  [ -f "$logs/$2.log" ] && check same "same_$2" "$logs/base_$1.log" "$logs/$2.log"
done

say "maps that cannot be placed (a 320 MiB array): the probes see no maps, the app runs as without them"
if traced unplaced_vecadd "$bundle/test/probe_unplaced.bpf.o" --interval 0 -- "$apps/vecadd" 1048576; then
  check same same_unplaced_vecadd "$logs/base_vecadd.log" "$logs/unplaced_vecadd.log"
  if grep -q "is more than" "$logs/unplaced_vecadd.log"; then
    echo "PASS unplaced_said: the preload library names the map it could not place" | tee -a "$out/checks.txt"
  else
    echo "FAIL unplaced_said: no error about the 320 MiB map in the log" | tee -a "$out/checks.txt"
    status=1
  fi
fi

say "ring records larger than 8 KiB (12,000 bytes): the shards hold them, and they arrive"
if traced bigrec_vecadd "$bundle/test/probe_bigrec.bpf.o" --interval 0 -- "$apps/vecadd" 1048576; then
  check same same_bigrec_vecadd "$logs/base_vecadd.log" "$logs/bigrec_vecadd.log"
  nbig=$(sed -n 's/^ring buffer big: \([0-9]*\) records$/\1/p' "$logs/bigrec_vecadd.log" | tail -n 1)
  nsmall=$(sed -n 's/^ring buffer small: \([0-9]*\) records$/\1/p' "$logs/bigrec_vecadd.log" | tail -n 1)
  if [ "${nbig:-0}" -gt 0 ] && [ "${nsmall:-0}" -gt 0 ]; then
    echo "PASS bigrec: $nbig records of 12000 bytes and $nsmall of 17-48 bytes arrived" | tee -a "$out/checks.txt"
  else
    echo "FAIL bigrec: ${nbig:-no} 12000-byte records, ${nsmall:-no} small ones in the final report" | tee -a "$out/checks.txt"
    status=1
  fi
fi

ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "${ngpu:-0}" -ge 2 ]; then
  say "several GPUs in one process ($ngpu): records tagged per GPU, counters summed over GPUs"
  base multigpu "$apps/multigpu" 100000
  traced rs_multigpu kernelretsnoop --interval 0 --out "$logs/rs_multigpu.csv" -- "$apps/multigpu" 100000 &&
    check multigpu rs_multigpu "$logs/rs_multigpu.log" "$logs/rs_multigpu.csv" "$logs/gpus.csv"
  traced th_multigpu threadhist --per-thread --interval 0 --out "$logs/th_multigpu.csv" -- "$apps/multigpu" 100000 &&
    check threadhist th_multigpu_perthread "$logs/th_multigpu.log" "$logs/th_multigpu.csv" thread &&
    check same same_th_multigpu "$logs/base_multigpu.log" "$logs/th_multigpu.log"
else
  say "one GPU here: the several-GPU checks (tools/gpu/apps/multigpu.cu) need two or more"
fi

say "a framework kernel whose module carries PTX"
if python3 "$src/cupy_ptx.py" 50000 >"$logs/base_cupy.log" 2>&1; then
  traced mt_cupy memtrace --kernel cupy_axpy --interval 0 --out "$logs/mt_cupy.txt" -- python3 "$src/cupy_ptx.py" 2000 &&
    check memtrace mt_cupy "$logs/mt_cupy.log" "$logs/mt_cupy.txt" cupy_axpy x:r,y:r,y:w
  traced th_cupy threadhist --kernel cupy_axpy --per-thread --interval 0 --out "$logs/th_cupy.csv" -- python3 "$src/cupy_ptx.py" 50000 &&
    check threadhist th_cupy_perthread "$logs/th_cupy.log" "$logs/th_cupy.csv" thread &&
    check same same_th_cupy "$logs/base_cupy.log" "$logs/th_cupy.log"
else
  say "CuPy is not usable here ($(tail -n 1 "$logs/base_cupy.log")): ptxload (cuModuleLoadData of PTX text) stands in"
fi
# A PyTorch extension compiled for compute_80 only (PTX, no SASS), run on PyTorch tensors.
export TORCH_EXTENSIONS_DIR=${TORCH_EXTENSIONS_DIR:-/tmp/gx-torch-ext}
if python3 "$src/torch_ext_ptx.py" 50000 >"$logs/base_torchext.log" 2>&1; then
  traced mt_torchext memtrace --kernel '*torch_axpy*' --interval 0 --out "$logs/mt_torchext.txt" -- \
      python3 "$src/torch_ext_ptx.py" 2000 &&
    check memtrace mt_torchext "$logs/mt_torchext.log" "$logs/mt_torchext.txt" _Z10torch_axpyfPKfPfi x:r,y:r,y:w
  traced th_torchext threadhist --kernel '*torch_axpy*' --per-thread --interval 0 --out "$logs/th_torchext.csv" -- \
      python3 "$src/torch_ext_ptx.py" 50000 &&
    check threadhist th_torchext_perthread "$logs/th_torchext.log" "$logs/th_torchext.csv" thread &&
    check same same_th_torchext "$logs/base_torchext.log" "$logs/th_torchext.log"
else
  say "the PyTorch PTX extension is not usable here: $(tail -n 1 "$logs/base_torchext.log")"
fi
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  # PyTorch's own kernels ship as SASS (+ PTX of the newest arch only): reported, by name.
  traced torch_kernels kerneldur --interval 0 -- python3 -c \
      'import torch; x = torch.randn(1 << 20, device="cuda"); y = (x * 2 + 1).sum(); torch.cuda.synchronize(); print("torch sum", float(y))'
  say "PyTorch kernels seen: $(grep -cE '^  (sass-only|error)' "$logs/torch_kernels.log" 2>/dev/null) not instrumentable; $(grep -E '^kernels:' "$logs/torch_kernels.log")"
fi

if python3 "$src/triton_add.py" 100000 >"$logs/base_triton.log" 2>&1; then
  traced th_triton threadhist --kernel 'triton_add*' --per-thread --interval 0 --out "$logs/th_triton.csv" -- \
      python3 "$src/triton_add.py" 100000
  st=$(grep -E '^  (sass-only|error)' "$logs/th_triton.log" | head -n 3 | tr -s ' ' | paste -sd';')
  if grep -qE '^kernels: [0-9]+ seen, [1-9]' "$logs/th_triton.log"; then
    check threadhist th_triton_perthread "$logs/th_triton.log" "$logs/th_triton.csv" thread
    check same same_th_triton "$logs/base_triton.log" "$logs/th_triton.log"
  else
    say "Triton: its module was not instrumented (${st:-no kernel seen}): Triton loads a cubin; CuPy/ptxload cover PTX-carrying framework modules"
  fi
else
  say "Triton not usable here: $(tail -n 1 "$logs/base_triton.log")"
fi

say "run-prog on the PTX backend: a hash map uploaded, changed on the GPU and read back, 3 runs"
for be in interp ptx ptx-warp; do
  got=$(gx run-prog "$bundle/test/hash_count.bpf.o" --repeat 3 --backend "$be" 2>&1 | tail -n 1)
  if [ "$got" = "r0 = 0x1f (31)" ]; then
    echo "PASS run_prog_hash_$be: key 7 counted to 3, key 9 deleted and re-added on the device" | tee -a "$out/checks.txt"
  else
    echo "FAIL run_prog_hash_$be: '$got', want 'r0 = 0x1f (31)'" | tee -a "$out/checks.txt"; status=1
  fi
done

npass=$(grep -c '^PASS' "$out/checks.txt"); nfail=$(grep -c '^FAIL' "$out/checks.txt")
say "checks: $npass passed, $nfail failed"

if [ "${GPUEXT_NO_BENCH:-0}" != 1 ] && [ "${GPUEXT_PROBES_NO_BENCH:-0}" != 1 ]; then
  # The whole script must fit one device call (600 s): the bench gets what is left of 520 s.
  btmo=${GPUEXT_BENCH_TIMEOUT:-300}
  left=$((520 - SECONDS))
  [ "$left" -lt "$btmo" ] && btmo=$left
  [ "$btmo" -lt 30 ] && btmo=30
  say "benchmark (bench/gpu/run.sh), at most ${btmo}s (script at ${SECONDS}s)"
  BENCH_RUN_TIMEOUT=${BENCH_RUN_TIMEOUT:-15} BENCH_BUDGET_S=$((btmo - 5)) \
  GX_LOADER=$loader GX_LIBDIR=$libdir GX_BIN=$bundle/gpuext GX_LOGS=$logs \
    timeout -k 5 "$btmo" "$top/bench/gpu/run.sh" 2>&1 | tee "$out/bench.txt"
fi
tar czf "$out/logs.tar.gz" -C "$logs" . 2>/dev/null
grep -E '^(PASS|FAIL)' "$out/checks.txt" | sed 's/^/  /'
say "checks: $npass passed, $nfail failed (logs: $out/logs.tar.gz)"
exit $status

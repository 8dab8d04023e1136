#!/usr/bin/env bash
# Probe overhead on an NVIDIA GPU: each workload of bench_kernels.cu without probes and under
# each tool, side by side in one run (the uninstrumented run is repeated at the end of each
# workload to show the noise), and attach latency of a 128-kernel module without probes,
# with a cold probe cache and with a warm one, then the entry/exit tools on the decode step and the
# stencil in one process (a probed copy of the kernels against a reference copy, step by step).
# Prints a table of ratios (bench/gpu/report.py).
#
# Run by tools/gpu/probes.sh on the GPU machine, which sets GX_LOADER/GX_LIBDIR/GX_BIN (how
# to start the bundled gpuext), GPUEXT_PROBE_DIR and GPUEXT_NVPROBE_LIB. By hand, where
# gpuext runs natively: GX_BIN=build/gpuext bench/gpu/run.sh
# BENCH_REPS scales the repetitions (default 1 = the numbers in bench_kernels.cu's header).
set -uo pipefail
cd "$(dirname "$0")/../.."
top=$PWD
logs=${GX_LOGS:-$(mktemp -d)}
work=$(mktemp -d /tmp/gx-bench.XXXXXX)
gx() {
  if [ -n "${GX_LOADER:-}" ]; then "$GX_LOADER" --library-path "$GX_LIBDIR" "$GX_BIN" "$@"
  else "${GX_BIN:-$top/build/gpuext}" "$@"; fi
}
PATH=$PATH:/usr/local/cuda/bin
nvcc -O3 -arch=sm_90 -o "$work/bench_kernels" "$top/bench/gpu/bench_kernels.cu" >"$logs/bench_nvcc.log" 2>&1 ||
  nvcc -O3 -o "$work/bench_kernels" "$top/bench/gpu/bench_kernels.cu" >>"$logs/bench_nvcc.log" 2>&1 ||
  { echo "bench: nvcc failed"; tail -n 20 "$logs/bench_nvcc.log"; exit 1; }
"$top/bench/gpu/gen_many_kernels.sh" 128 "$work/many_kernels.cu"
nvcc -O2 -I"$top/tools/gpu/apps" -o "$work/many_kernels" "$work/many_kernels.cu" >>"$logs/bench_nvcc.log" 2>&1 ||
  { echo "bench: nvcc failed on many_kernels"; tail -n 20 "$logs/bench_nvcc.log"; exit 1; }

res=$logs/bench_results.txt
: >"$res"
# A tool whose probes write a ring buffer per block or per access can be slower than the
# budget allows: each run gets BENCH_RUN_TIMEOUT seconds (default 25) and shows as "timeout".
tmo=${BENCH_RUN_TIMEOUT:-25}
# one CONFIG WORKLOAD REPS [ARG]: a line "RUN config=... <the BENCH line>" into $res
one() {
  local cfg=$1 w=$2 reps=$3 arg=${4:-} log=$logs/bench_${1}_$2${4:+_$4}.log
  if [ "$cfg" = base ] || [ "$cfg" = base2 ]; then
    timeout -k 5 120 "$work/bench_kernels" "$w" "$reps" $arg >"$log" 2>&1
  else
    # jitonly: the control. Every module is JIT-compiled from its PTX as when instrumented,
    # unchanged (GPUEXT_NV_JIT_ONLY=1), so it shows what the driver's JIT alone costs.
    local tool=$cfg jit=0
    [ "$cfg" = jitonly ] && tool=threadhist jit=1
    GPUEXT_NV_JIT_ONLY=$jit timeout -k 5 "$tmo" "${GX_LOADER:-env}" \
        ${GX_LOADER:+--library-path "$GX_LIBDIR"} \
        "${GX_BIN:-$top/build/gpuext}" trace "$tool" --interval 0 -- "$work/bench_kernels" "$w" "$reps" $arg \
        >"$log" 2>&1
  fi
  local rc=$? b c
  b=$(grep -m1 '^BENCH ' "$log")
  c=$(grep -m1 '^CHECK ' "$log" | cut -d' ' -f2)
  # bench_kernels calls the 2^22 membound run "membound" and the others membound_2^LOG2N
  local wn=$w
  [ -n "$arg" ] && [ "$arg" != 22 ] && wn=${w}_2^$arg
  [ $rc -eq 124 ] || [ $rc -eq 137 ] && b="BENCH workload=$wn timeout=${tmo}s"
  echo "RUN config=$cfg rc=$rc check=${c:-none} ${b:-BENCH workload=$w failed}" >>"$res"
}
m=${BENCH_REPS:-1}
# tiny is bound by the host's launch rate, which moves by 10-20% from one process to the next (CPU
# clocks, scheduling): its configurations run in TINY_ROUNDS interleaved rounds and report.py takes
# the median over the rounds. The realistic workloads run in REAL_ROUNDS (default 3): one round
# of the decode step moved by 1-2 points from one run to the next, half the 3% target.
tiny_rounds=${TINY_ROUNDS:-5}
real_rounds=${REAL_ROUNDS:-3}
for w in tiny gemm stencil reduce decode membound; do
  case $w in tiny) reps=$((5 * m)) ;; membound) reps=$((20 * m)) ;; *) reps=$((10 * m)) ;; esac
  rounds=$real_rounds
  [ "$w" = tiny ] && rounds=$tiny_rounds
  for ((round = 0; round < rounds; round++)); do
    one base "$w" "$reps"
    for t in jitonly kernelretsnoop threadhist launchlate smload kerneldur; do one "$t" "$w" "$reps"; done
    one base2 "$w" "$reps"
  done
done
# memtrace records every access: measured on the memory-bound kernel at 2^10, 2^16 and 2^22
# floats (3,072, 196,608 and 12.6 M accesses a launch; at 2^22 the records outrun the drain,
# the 16 MiB ring fills and most are dropped, counted). Kernels of 6-10 us move by 10-20%
# between processes: interleaved rounds as for tiny.
for ((round = 0; round < tiny_rounds; round++)); do
  for lg in 10 16 22; do
    one base membound 20 $lg
    one memtrace membound 20 $lg
    one base2 membound 20 $lg
  done
done

# Attach latency: the 128-kernel module, first launches timed inside the app. The first run
# only warms the driver (its module load took 50x the others': 307 ms against 4 ms, H200) and is
# listed as 'warm', not counted; then the cold cache; then base and cached alternate, three of
# each, and report.py compares their medians (with one base run, the whole-run times' spread of
# tens of ms between processes once gave a cached attach of -8.9 ms).
export GPUEXT_CACHE_DIR=$work/cache
attach_base() { # NAME CONFIG
  timeout 60 "$work/many_kernels" >"$logs/attach_$1.log" 2>&1
  echo "ATTACHRUN config=$2 $(grep -m1 '^ATTACH' "$logs/attach_$1.log")" >>"$res"
}
attach_traced() { # NAME CONFIG
  timeout -k 5 120 "${GX_LOADER:-env}" ${GX_LOADER:+--library-path "$GX_LIBDIR"} \
      "${GX_BIN:-$top/build/gpuext}" trace threadhist --interval 0 -- "$work/many_kernels" \
      >"$logs/attach_$1.log" 2>&1
  echo "ATTACHRUN config=$2 $(grep -m1 '^ATTACH' "$logs/attach_$1.log") $(grep -m1 '^CHECK' "$logs/attach_$1.log")" >>"$res"
}
attach_base warm warm
rm -rf "$GPUEXT_CACHE_DIR"
attach_traced cold cold
for i in 1 2 3; do
  attach_base "base$i" base
  attach_traced "cached$i" cached
done
# In one process (bench_kernels ab-decode / ab-stencil): the reference copy of the kernels and
# the probed copy (--kernel '*abp_*') alternate step by step, so what moves a run from one process
# to the next cancels. "none" runs without gpuext (both copies native: the method's own noise),
# "jitonly" both copies JIT-compiled, unprobed. Last, so that a slow machine loses these rows
# rather than the table: with BENCH_BUDGET_S (the seconds tools/gpu/probes.sh gives run.sh),
# each run gets at most what is left of it less 15 s for the report, and none starts with less
# than 20 s left. AB_PAIRS pairs a run (default 60: 30 quads, a 90% interval).
abone() {
  local cfg=$1 w=$2 log=$logs/bench_ab_${1}_$2.log tool=$1 jit=0 tmo=120
  if [ -n "${BENCH_BUDGET_S:-}" ]; then
    tmo=$((BENCH_BUDGET_S - SECONDS - 15))
    if [ "$tmo" -lt 20 ]; then
      echo "ABSKIP $w/$cfg at ${SECONDS}s of a ${BENCH_BUDGET_S}s budget" >>"$res"
      return 1
    fi
    [ "$tmo" -gt 120 ] && tmo=120
  fi
  if [ "$cfg" = none ]; then
    timeout -k 5 "$tmo" "$work/bench_kernels" "ab-$w" "${AB_PAIRS:-60}" >"$log" 2>&1
  else
    [ "$cfg" = jitonly ] && tool=threadhist jit=1
    GPUEXT_NV_JIT_ONLY=$jit timeout -k 5 "$tmo" "${GX_LOADER:-env}" ${GX_LOADER:+--library-path "$GX_LIBDIR"} \
        "${GX_BIN:-$top/build/gpuext}" trace "$tool" --kernel '*abp_*' --interval 0 -- \
        "$work/bench_kernels" "ab-$w" "${AB_PAIRS:-60}" >"$log" 2>&1
  fi
  local rc=$? b c
  b=$(grep -m1 '^ABBENCH ' "$log")
  c=$(grep -m1 '^CHECK ' "$log" | cut -d' ' -f2)
  [ $rc -eq 124 ] || [ $rc -eq 137 ] && b="ABBENCH workload=$w timeout=${tmo}s"
  echo "ABRUN config=$cfg rc=$rc check=${c:-none} ${b:-ABBENCH workload=$w failed}" >>"$res"
}
ab_all() {
  for w in decode stencil; do
    for cfg in none jitonly kernelretsnoop threadhist launchlate smload kerneldur; do
      abone "$cfg" "$w" || return
    done
  done
}
ab_all
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)
python3 "$top/bench/gpu/report.py" "$res" "$gpu"

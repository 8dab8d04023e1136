#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls exactly this):
#   1. installs missing dependencies (tools/deps.sh, apt, as root),
#   2. gcc build with -Wall -Wextra -Werror, all CTest tests,
#   3. gcc -O3 (Release) build with -Werror, compiled only,
#   4. clang-22 build under AddressSanitizer + UndefinedBehaviorSanitizer
#      (+ LeakSanitizer), all CTest tests again,
#   5. every libFuzzer target for a bounded time (GPUEXT_FUZZ_SECONDS, default 60),
#   6. the kernel side in QEMU guests (tools/vm/run.sh: stock Debian 6.12 + our HMM kernel).
# Build trees: build/, build-release/ and build-asan/ at the top of the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
top=$PWD
jobs=$(nproc)
fuzz_seconds=${GPUEXT_FUZZ_SECONDS:-60}
start=$(date +%s)
step() { printf '\n==> [%4ss] %s\n' "$(( $(date +%s) - start ))" "$*"; }

step "dependencies"
tools/deps.sh

step "build (gcc, -Werror) in build/"
cmake -S . -B build -DGPUEXT_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"

step "tests (gcc build)"
(cd build && ctest --output-on-failure -j"$jobs")

step "build (gcc -O3, CMAKE_BUILD_TYPE=Release, -Werror) in build-release/: compiles, no tests"
# gcc warns at -O3 about things it cannot see at -O2 (a user's Release build failed so once).
cmake -S . -B build-release -DGPUEXT_WERROR=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-release -j"$jobs"

step "build (clang-22, ASan+UBSan, fuzzers) in build-asan/"
cmake -S . -B build-asan -DCMAKE_C_COMPILER=clang-22 -DGPUEXT_WERROR=ON \
      -DGPUEXT_SANITIZE=ON -DGPUEXT_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-asan -j"$jobs"

step "tests (ASan+UBSan build)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest --output-on-failure -j"$jobs")

step "fuzzing, ${fuzz_seconds}s per target"
for fz in build-asan/fuzz_*; do
  [ -x "$fz" ] || continue
  name=$(basename "$fz")
  corpus=build-asan/fuzz-corpus/$name
  mkdir -p "$corpus"
  # Seeds: the compiled test and policy objects (for ELF inputs).
  cp -f build-asan/tests/bpf/*.bpf.o build-asan/policies/*.bpf.o "$corpus"/ 2>/dev/null || true
  cp -f build-asan/tests/nv/*.fatbin "$corpus"/ 2>/dev/null || true
  # and PTX for the splicer (fuzz_splice: the first byte picks the pack, so each seed goes in
  # behind a 0: all four probes, warp mode, no filter), with the test .cu files compiled where
  # nvcc is, and its dictionary of PTX words
  dict=()
  if [ "$name" = fuzz_splice ]; then
    for p in tests/nv/splice/*.ptx; do
      { printf '\000'; cat "$p"; } >"$corpus/seed-$(basename "$p")"
    done
    nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    if [ -x "$nvcc" ]; then
      for cu in tests/nv/splice/*.cu; do
        "$nvcc" --ptx -arch=compute_80 -o "build-asan/fuzz-seed.ptx" "$cu" >/dev/null 2>&1 &&
          { printf '\000'; cat build-asan/fuzz-seed.ptx; } >"$corpus/seed-$(basename "$cu" .cu).ptx"
      done
    fi
    dict=(-dict=tests/fuzz/ptx.dict)
  fi
  echo "fuzz: $name"
  # fuzz_verifier's oracle: every accepted program runs in the interpreter without a
  # fault. Its time limit is for pathological state growth, not speed (benchmarks
  # measure speed): a smaller budget and a generous limit keep a sanitized build on a
  # loaded 2-core machine from reporting slowness as a bug.
  GPUEXT_FUZZ_STATS=1 GPUEXT_FUZZ_BUDGET=200000 GPUEXT_FUZZ_VERIFY_MS=60000 \
  "$fz" "${dict[@]}" -max_total_time="$fuzz_seconds" -rss_limit_mb=2048 -timeout=120 \
        -print_final_stats=1 -artifact_prefix=build-asan/ "$corpus" > "build-asan/$name.log" 2>&1 \
    || { tail -n 60 "build-asan/$name.log"; echo "fuzz: $name FAILED (log: build-asan/$name.log)"; exit 1; }
  tail -n 8 "build-asan/$name.log"
done

step "kernel side in QEMU guests (tools/vm, stock + hmm tracks)"
tools/vm/run.sh --track all --build-dir build

step "all tests passed in $(( $(date +%s) - start ))s"

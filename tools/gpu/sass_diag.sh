#!/usr/bin/env bash
# On the GPU machine, after tools/gpu/probes.sh: the SASS of one bench kernel as nvcc builds it
# and instrumented (every spliced PTX in the probe cache, /tmp/gx-cache, that holds the kernel,
# assembled by ptxas for sm_90 as the driver's JIT would), with each one's instruction count and resources,
# to see what the spliced probes changed.
#   tools/gpu/sass_diag.sh MANGLED_KERNEL_NAME OUTDIR
# Needs nvcc and cuobjdump (the CUDA toolkit). Cache entries carry a 56-byte header (cache.c).
set -uo pipefail
cd "$(dirname "$0")/../.."
k=$1 out=$2
mkdir -p "$out"
PATH=$PATH:/usr/local/cuda/bin
nvcc -O3 -arch=sm_90 -cubin -o "$out/native.cubin" bench/gpu/bench_kernels.cu || exit 1
dump() { # FILE LABEL
  local s=$out/$2.sass
  cuobjdump -sass -fun "$k" "$1" >"$s" 2>&1 || return
  grep -q "Function : $k" "$s" || { rm -f "$s"; return; }
  echo "$2: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' "$s") SASS instructions, $(grep -c 'CALL' "$s") calls; \
$(cuobjdump -res-usage "$1" 2>/dev/null | grep -A1 "Function $k:" | tail -1 | xargs)"
}
dump "$out/native.cubin" native
# The cache holds spliced PTX (the driver JITs it; nv_load.c): assemble each entry for sm_90 as the
# driver would, then dump. The stored text ends with a NUL.
for f in "${GPUEXT_CACHE_DIR:-/tmp/gx-cache}"/*ptx; do
  [ -f "$f" ] || continue
  tail -c +57 "$f" | tr -d '\000' >"$out/x.ptx"
  ptxas -arch=sm_90 -o "$out/x.cubin" "$out/x.ptx" 2>"$out/ptxas.log" || { echo "$f: ptxas failed"; continue; }
  dump "$out/x.cubin" "$(basename "$f" | cut -c1-12)"
done
rm -f "$out/x.cubin" "$out/x.ptx"

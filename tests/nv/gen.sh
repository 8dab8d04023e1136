#!/bin/sh
# Builds the fatbin test inputs of tests/test_nv_fatbin.c from the CUDA
# sources next to this script, with the nvcc named by $NVCC. Everything is
# made here from our own sources; nothing is downloaded.
#
#   NVCC=/usr/local/cuda/bin/nvcc tests/nv/gen.sh OUTDIR
#
# Incremental: does nothing when OUTDIR/stamp is newer than the sources and
# this script. Exits non-zero on the first failing nvcc.
set -eu
src=$(cd "$(dirname "$0")" && pwd)
out=$1
nvcc=${NVCC:-nvcc}
mkdir -p "$out"
stale=0
for f in "$src"/*.cu "$0"; do
	[ "$out/stamp" -nt "$f" ] || stale=1
done
[ $stale = 0 ] && exit 0
rm -f "$out/stamp"

fb() { # name source nvcc-args...
	name=$1 cu=$2
	shift 2
	"$nvcc" -fatbin "$@" -o "$out/$name.fatbin" "$src/$cu"
}

# Ground truth: the PTX nvcc emits for each virtual arch.
"$nvcc" --ptx -arch=compute_80 -o "$out/vadd_80.ptx" "$src/vadd.cu"
"$nvcc" --ptx -arch=compute_90 -o "$out/vadd_90.ptx" "$src/vadd.cu"
"$nvcc" --ptx -arch=compute_90a -o "$out/vadd_90a.ptx" "$src/vadd.cu"
"$nvcc" --ptx -arch=compute_80 -o "$out/big_80.ptx" "$src/big.cu"
"$nvcc" --ptx -arch=compute_80 -o "$out/app_80.ptx" "$src/app.cu"

# PTX only, every compression mode nvcc 13 offers (none = stored as is).
for m in none default size speed balance; do
	fb "vadd_ptx_$m" vadd.cu -gencode arch=compute_80,code=compute_80 --compress-mode=$m
done
for m in none default size speed; do
	fb "big_ptx_$m" big.cu -gencode arch=compute_80,code=compute_80 --compress-mode=$m
done
# SASS only, plain and with every member compressed.
fb vadd_sass vadd.cu -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90
fb vadd_sass_compressed vadd.cu -gencode arch=compute_80,code=sm_80 \
	-gencode arch=compute_90,code=sm_90 -Xfatbin=-compress-all
# Mixed: sm_80 SASS + compute_80 and compute_90 PTX.
fb vadd_mixed vadd.cu -gencode arch=compute_80,code=sm_80 \
	-gencode arch=compute_80,code=compute_80 -gencode arch=compute_90,code=compute_90
fb vadd_mixed_speed vadd.cu -gencode arch=compute_80,code=sm_80 \
	-gencode arch=compute_80,code=compute_80 -gencode arch=compute_90,code=compute_90 \
	-Xfatbin=-compress-all --compress-mode=speed
# Arch-specific PTX (compute_90a runs on sm_90 only) next to portable compute_80.
fb vadd_arch vadd.cu -gencode arch=compute_90a,code=compute_90a \
	-gencode arch=compute_80,code=compute_80
# The in-process case: a shared object whose host code registers its fatbin.
"$nvcc" -shared -Xcompiler -fPIC -gencode arch=compute_80,code=compute_80 \
	-gencode arch=compute_80,code=sm_80 -o "$out/libapp.so" "$src/app.cu"
touch "$out/stamp"

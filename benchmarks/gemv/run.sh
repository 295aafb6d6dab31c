#!/usr/bin/env bash
# GPU tier: the built-in fp16 GEMV (n=7168, k=16384) at its given configurations against cuBLASLt,
# side by side in one process, both timed cold by the harness. Prints the ratio last.
# Usage: run.sh BUILD_OR_BUNDLE_DIR OUT_DIR   (builds nothing)
set -uo pipefail
exe=$1/bin/ktune_gemv_bench; [ -x "$exe" ] || exe=$1/benchmarks/gemv/ktune_gemv_bench
out=$2; root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
"$exe" "$root/kernels/gemv/gemv.json" "" \
  "TPR=32,RPB=8,VEC=8,UNROLL=4,LOAD_HINT=2" "TPR=64,RPB=4,VEC=8,UNROLL=4,LOAD_HINT=2" \
  "TPR=32,RPB=4,VEC=8,UNROLL=8,LOAD_HINT=2" "TPR=128,RPB=2,VEC=8,UNROLL=2,LOAD_HINT=1" \
  "TPR=16,RPB=16,VEC=8,UNROLL=4,LOAD_HINT=2" 2>&1 | tee "$out/gemv.txt"
exit "${PIPESTATUS[0]}"

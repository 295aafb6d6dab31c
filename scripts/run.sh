#!/usr/bin/env bash
# ktune's main job on a GPU machine, once through the loop: build, identify the GPU, measure its
# ceilings, profile a real workload and rank its kernels, tune the built-in fp16 GEMV and cache the
# winner. Uses the embedded SQLite store (~/.local/share/ktune) unless KTUNE_DB is set.
# Usage: scripts/run.sh [OUT_DIR]       (default ./ktune-run)
# KTUNE_BUILD_DIR picks the build (default build/); KTUNE_NO_BUILD=1 uses it as it is (a machine
# without a package registry, such as the GPU tier's, with a build carried from elsewhere).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KTUNE_BUILD_DIR:-$root/build}
out=$(mkdir -p "${1:-ktune-run}" && cd "${1:-ktune-run}" && pwd)

if [ -z "${KTUNE_NO_BUILD:-}" ]; then
  "$root/scripts/deps.sh"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j"$(nproc)" --target ktune ktune_tracer
fi
k=$build/src/cli/ktune
step() { printf '\n== %s\n' "$*"; }

step "ktune info"
"$k" info
step "ktune calibrate"
"$k" calibrate

# The workload: the PyTorch transformer layer when PyTorch is here (with its cuBLASLt GEMM
# problems recorded), else a CUDA C++ launch loop.
gemm=()
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  workload=(python3 "$root/benchmarks/tracer/torch_layer.py" --iters 50 --tiny 2000)
  gemm=(--gemm-shapes)
else
  nvcc -O2 -arch=native -o "$out/tiny_loop" "$root/benchmarks/tracer/tiny_loop.cu"
  workload=("$out/tiny_loop" 20000)
fi
step "ktune profile ${gemm[*]} -- ${workload[*]}"
"$k" profile "${gemm[@]}" -o "$out/workload.ktrace" -- "${workload[@]}"
step "ktune report"
"$k" report "$out/workload.ktrace" --top 10
if [ ${#gemm[@]} -gt 0 ]; then
  # The GEMM problem with the most GPU time, tuned with the command the report gives for it.
  top=$("$k" report --format json "$out/workload.ktrace" | python3 -c '
import json, sys
shapes = [s for s in json.load(sys.stdin)["gemm_calls"]["shapes"] if s["tune_command"]]
print(max(shapes, key=lambda s: s["gpu_ns"])["tune_command"] if shapes else "")')
  if [ -n "$top" ]; then
    step "$top --budget 40"
    # shellcheck disable=SC2086  # the report's command, split into its words
    "$k" ${top#ktune } --budget 40 -o "$out/tune-gemm"
  fi
fi
"$k" report "$out/workload.ktrace" --format html -o "$out/report.html"
"$k" export "$out/workload.ktrace" --chrome -o "$out/workload.chrome.json"

step "ktune tune kernels/gemv/gemv.json (fp16 GEMV 7168x16384)"
"$k" tune "$root/kernels/gemv/gemv.json" --budget 60 -o "$out/tune-gemv"
step "ktune cache ls"
"$k" cache ls
printf '\nwrote %s: workload.ktrace, report.html (open in a browser), workload.chrome.json (ui.perfetto.dev), tune-gemv/ (t4.json, summary.json, curve.svg), tune-gemm/ with PyTorch\n' "$out"

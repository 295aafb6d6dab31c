#!/usr/bin/env bash
# The Python package on a GPU machine (PyTorch and Triton installed, no package registry):
#   scripts/gpu-python.sh BUNDLE OUT_DIR
# BUNDLE: a build tree (or .gpu-carry) holding src/cli/ktune, its tracer and
# python/ktune/libktune_python.so, which any python3 loads (plain C, through ctypes). Runs a Triton
# fp16 matmul autotuned over 16 configurations by ktune.triton.autotune, in a first process (fresh
# store, fresh Triton cache) and a second one (same store), and by plain triton.autotune in a third,
# for comparison: wall time of each, tuning time, winners; and prints a short table last. PyTorch's
# GEMMs (the router) are scripts/gpu-route.sh's.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=$(cd "${1:?usage: scripts/gpu-python.sh BUNDLE OUT_DIR}" && pwd)
out=${2:-${OUT:-/tmp/ktune-gpu}/python}
mkdir -p "$out"
py=${PYTHON:-python3}
library=$bundle/python/ktune/libktune_python.so
if [ ! -f "$library" ]; then
  echo "gpu-python.sh: $library is missing; build the bundle with the Python package" \
       "(KTUNE_PYTHON=ON, the default: scripts/gpu-bundle.sh)." >&2
  exit 1
fi
# This checkout's package, so .py edits need no rebuild, over the bundle's library and tracer.
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
export KTUNE_NATIVE_LIB=$library
export KTUNE_TRACER_LIB=$bundle/src/cli/libktune_tracer.so
export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export KTUNE_HOME=$(mktemp -d /tmp/ktune-home.XXXXXX)
ktune=$bundle/src/cli/ktune
summary=()

{
  echo "# ktune Python tier, $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
  $py -c 'import sys, torch, triton, ktune; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__, "ktune", ktune.__version__)'
} 2>&1 | tee "$out/identity.txt"

wall() {  # wall time in seconds of a command; its stdout goes to $1
  local dest=$1
  shift
  local t0=$(date +%s%N)
  "$@" >"$dest" 2>>"$out/stderr.log"
  local rc=$?
  local t1=$(date +%s%N)
  printf '%d.%03d %d\n' $(((t1 - t0) / 1000000000)) $((((t1 - t0) / 1000000) % 1000)) "$rc"
}

echo "== Triton matmul, 16 configurations, 4096^3 fp16"
export KTUNE_DB=$out/triton-store.db
rm -f "$KTUNE_DB"
export TRITON_CACHE_DIR=$(mktemp -d /tmp/ktune-triton.XXXXXX)  # the first process compiles cold
read -r w1 rc1 < <(wall "$out/triton-1.json" $py "$root/benchmarks/python/triton_matmul.py")
read -r w2 rc2 < <(wall "$out/triton-2.json" $py "$root/benchmarks/python/triton_matmul.py")
read -r w3 rc3 < <(wall "$out/triton-plain.json" $py "$root/benchmarks/python/triton_matmul.py" --plain)
for i in 1 2 plain; do echo "triton-$i: $(cat "$out/triton-$i.json")"; done
summary+=("$($py - "$out" "$w1" "$w2" "$w3" <<'PYEOF'
import json, sys
out, w = sys.argv[1], [float(x) for x in sys.argv[2:5]]
r = [json.load(open(f"{out}/triton-{i}.json")) for i in ("1", "2", "plain")]
rows = ["| process | config from | tuning s | first call s | process wall s | winner |", "| --- | --- | --- | --- | --- | --- |"]
for name, x, wall in zip(("ktune, first", "ktune, second", "triton.autotune, second"), r, w):
    t = x["tuning_s"]
    rows.append(f"| {name} | {x['source']} | {t:.3f} | {x['first_call_s']:.3f} | {wall:.2f} | {x['winner']} |" if t is not None else
                f"| {name} | benchmark | n/a | {x['first_call_s']:.3f} | {wall:.2f} | {x['winner']} |")
same = r[0]["winner"] == r[1]["winner"]
rows.append(f"second process tuning {r[1]['tuning_s']:.3f} s (target < 0.5 s): {'PASS' if r[1]['tuning_s'] < 0.5 and r[1]['source'] == 'cache' else 'FAIL'}; same winner: {'PASS' if same else 'FAIL'}")
print("\n".join(rows))
PYEOF
)")
unset KTUNE_DB TRITON_CACHE_DIR

echo
echo "== summary"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"

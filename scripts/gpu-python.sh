#!/usr/bin/env bash
# The Python package on a GPU machine (PyTorch and Triton installed, no package registry):
#   scripts/gpu-python.sh BUNDLE OUT_DIR
# BUNDLE: a build tree (or .gpu-carry) holding src/cli/ktune, its tracer and
# python/ktune/libktune_python.so, which any python3 loads (plain C, through ctypes). Runs
#   1. a Triton fp16 matmul autotuned over 16 configurations by ktune.triton.autotune, in a first
#      process (fresh store, fresh Triton cache) and a second one (same store), and by plain
#      triton.autotune in a third, for comparison: wall time of each, tuning time, winners;
#   2. the transformer layer's GEMM shapes (.workloads/torch_layer.py) tuned with
#      `ktune tune --library cublaslt` and applied in PyTorch (ktune.torch): the layer's time with
#      PyTorch's defaults and with ktune's selections, alternating in one process, gain per shape;
# and prints a short table last. KTUNE_PY_ONLY=triton|torch runs one part.
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

if [ -z "${KTUNE_PY_ONLY:-}" ] || [ "$KTUNE_PY_ONLY" = triton ]; then
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
fi

if [ -z "${KTUNE_PY_ONLY:-}" ] || [ "$KTUNE_PY_ONLY" = torch ]; then
  echo "== transformer layer GEMMs through cuBLASLt"
  workload=${KTUNE_WORKLOADS:-$root/.workloads}
  [ -f "$workload/torch_layer.py" ] || workload=$root/../shared/workloads
  export KTUNE_DB=$out/gemm-store.db
  rm -f "$KTUNE_DB"
  $py "$root/benchmarks/python/torch_gemms.py" --ktune "$ktune" --workload "$workload" \
    >"$out/torch-gemms.json" 2>>"$out/stderr.log"
  echo "torch_gemms rc=$?"
  cat "$out/torch-gemms.json"
  "$ktune" export --tunableop "$out/tunableop_results.csv" \
    --torch-version "$($py -c 'import torch; print(torch.__version__)')" && cat "$out/tunableop_results.csv"
  summary+=("$($py - "$out" <<'PYEOF'
import json, sys
j = json.load(open(f"{sys.argv[1]}/torch-gemms.json"))
rows = ["| GEMM m x n x k (TN) | calls/iter | cuBLASLt default us | ktune us | gain | winner |", "| --- | --- | --- | --- | --- | --- |"]
for s in j["shapes"]:
    w = s["winner"]
    rows.append(f"| {s['shape']} {s['dtype']}{' +bias' if s['bias'] else ''} | {s['calls_per_iter']} | {s['default_us']:.1f} | {s['winner_us']:.1f} | {s['speedup']:.3f}x | {w['source']} algo {w['algo_id']} tile {w['tile']} stages {w['stages']} splitK {w['splitk']} |")
d, k = j["layer_default_median_ms"], j["layer_ktune_median_ms"]
rows.append(f"layer ms/iter, median of {len(j['layer_default_ms'])} alternating rounds: PyTorch {d:.4f}, ktune {k:.4f} ({d / k:.3f}x); routed {j['routed_calls_last_round']} linear calls, passed {j['passed_calls_last_round']}")
rows.append("routed vs PyTorch max |diff|: " + ", ".join(f"{c['shape']} {c['max_abs_diff']:.3g} (routed {c['routed']})" for c in j["checks"]))
print("\n".join(rows))
PYEOF
)")
fi

echo
echo "== summary"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"

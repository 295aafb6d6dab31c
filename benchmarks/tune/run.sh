#!/usr/bin/env bash
# GPU tier for tuning:
#  1. ktune tune on the built-in fp16 GEMV (n=7168, k=16384), then the winner and cuBLASLt side by
#     side in one process (benchmarks/gemv's program), and the cache entry the session stored;
#  2. the benchmark hub's hotspot and convolution tuned from their T1 files as shipped (budget 200,
#     default strategy): no crash, the evaluation rate beside the compile-only ceiling;
#  3. a spec planted with out-of-bounds, trapping and hanging candidates finishing its budget.
# Usage: run.sh BUILD_OR_BUNDLE_DIR OUT_DIR   (builds nothing; the hub's files are read from
# $KTUNE_HUB, else .hub/ in the repository, which the GPU run carries: shared/ does not travel)
set -uo pipefail
bin=$1/bin/ktune; [ -x "$bin" ] || bin=$1/src/cli/ktune
gemv=$1/bin/ktune_gemv_bench; [ -x "$gemv" ] || gemv=$1/benchmarks/gemv/ktune_gemv_bench
out=$2; root=$(cd "$(dirname "$0")/../.." && pwd); here=$root/benchmarks/tune
hub=${KTUNE_HUB:-$root/.hub}
budget=${KTUNE_TUNE_BUDGET:-100}
# On a GPU machine NVRTC also keeps the driver's compute cache (~/.nv/ComputeCache): a configuration
# compiled before takes 0.01-0.2 s instead of seconds, so rates would depend on what ran earlier.
# Every session here compiles cold (logs/2026-11-25-gpu-tune-gate.md).
export CUDA_CACHE_DISABLE=1
mkdir -p "$out"; rm -rf "$out"/session-* "$out/ktune.db"
log=$out/tune.txt; : >"$log"

# One session; prints "evaluations evals_per_s stop winner best_us compile_s_mean ok slower failed".
session() {  # NAME SPEC ARGS...
  local name=$1 spec=$2; shift 2
  local t0=$(date +%s.%N)
  "$bin" --db "$out/ktune.db" tune "$spec" -o "$out/session-$name" "$@" \
    >"$out/stdout-$name.txt" 2>"$out/stderr-$name.txt"
  local rc=$?
  local wall=$(python3 -c "import sys,time; print(f'{time.time()-float(sys.argv[1]):.1f}')" "$t0")
  echo "$name: ktune tune exit $rc, ${wall} s wall" >>"$log"
  cat "$out/stdout-$name.txt" >>"$log"
  tail -n 5 "$out/stderr-$name.txt" >>"$log"
  python3 - "$out/session-$name/summary.json" "$rc" <<'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
except Exception:
    print("0 0 missing none 0 0 0 0 0 rc=" + sys.argv[2]); sys.exit()
b, c = s["best"], s["status_counts"]
cfg = ",".join(f"{k}={v}" for k, v in b["config"].items()) if b else "none"
failed = sum(v for k, v in c.items() if k not in ("ok", "slower"))
print(s["evaluations"], f'{s["evaluations_per_s"]:.2f}', s["stop"], cfg,
      f'{b["time_ns"]/1e3:.2f}' if b else 0, f'{s["compile_s_mean"]:.3f}', c["ok"], c["slower"],
      failed, "rc=" + sys.argv[2])
PY
}
threads=$(nproc)
ceiling() { python3 -c "import sys; m=float(sys.argv[1]); print(f'{int(sys.argv[2])/m:.1f}' if m>0 else 'cached')" "$1" "$threads"; }
pass() { python3 -c "import sys; print('PASS' if float(sys.argv[1]) >= float(sys.argv[2]) else 'FAIL')" "$1" "$2"; }

# 1. GEMV.
read -r evals eps stop winner best_us cmean ok slower failed rc < <(session gemv "$root/kernels/gemv/gemv.json" --budget "$budget" --json)
echo "gemv: $evals evaluations, stop $stop, $eps evaluations/s (compile ceiling $(ceiling "$cmean")/s), winner $winner (${best_us} us), $rc" | tee -a "$log"
ratio=0
if [ "$winner" != none ]; then
  "$gemv" "$root/kernels/gemv/gemv.json" "$winner" >"$out/side_by_side.txt" 2>&1
  tee -a "$log" <"$out/side_by_side.txt"
  ratio=$(sed -n 's/^best ratio vs cuBLASLt \([0-9.]*\)x.*/\1/p' "$out/side_by_side.txt"); ratio=${ratio:-0}
fi
gemv_eps=$eps
"$bin" --db "$out/ktune.db" cache ls 2>&1 | tee "$out/cache_ls.txt" >>"$log"

# 2. The hub's kernels, as shipped.
hub_lines=()
for k in hotspot convolution; do
  spec=$hub/${k}_milo.json
  if [ ! -f "$spec" ]; then hub_lines+=("$k: hub file missing at $spec FAIL"); continue; fi
  read -r evals eps stop winner best_us cmean ok slower failed rc < <(session "$k" "$spec" --budget 200 --json)
  verdict=FAIL; [ "$rc" = rc=0 ] && [ "$stop" = budget ] && verdict=PASS
  hub_lines+=("$k: $evals evaluations ($ok ok, $slower slower, $failed failed), stop $stop, $rc, $eps evaluations/s, compile ceiling $(ceiling "$cmean")/s, best ${best_us} us $verdict")
  [ "$k" = convolution ] && conv_eps=$eps
done

# 3. Planted faults: the whole space (16 configurations), a short per-candidate limit for the hang.
read -r evals eps stop winner best_us cmean ok slower failed rc < <(session planted "$here/planted/planted.json" --budget 16 --strategy exhaustive --candidate-timeout 10 --json)
planted_verdict=FAIL; [ "$rc" = rc=0 ] && [ "$evals" = 16 ] && [ "$failed" = 12 ] && planted_verdict=PASS
python3 - "$out/session-planted/results.jsonl" <<'PY' | tee -a "$log"
import json, sys, collections
c = collections.Counter()
for line in open(sys.argv[1]):
    r = json.loads(line); c[(r["config"]["FAULT"], r["status"])] += 1
for (fault, status), n in sorted(c.items()): print(f"planted FAULT={fault}: {n} x {status}")
PY

echo "winner $winner"
echo "gemv ratio vs cuBLASLt ${ratio}x $(pass "$ratio" 1.15) (>= 1.15)"
echo "gemv evaluations per second $gemv_eps $(pass "$gemv_eps" 20) (>= 20)"
printf '%s\n' "${hub_lines[@]}"
echo "convolution evaluations per second ${conv_eps:-0} $(pass "${conv_eps:-0}" 8) (>= 8)"
echo "planted faults: $evals of 16 evaluated, $failed failed as planted (12), $rc $planted_verdict"

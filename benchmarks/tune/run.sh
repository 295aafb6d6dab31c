#!/usr/bin/env bash
# GPU tier: ktune tune on the built-in fp16 GEMV (n=7168, k=16384) from its T1 spec, then the
# winner and cuBLASLt measured side by side in one process (benchmarks/gemv's program), and the
# cache entry the session stored. Prints the two PASS/FAIL figures last.
# Usage: run.sh BUILD_OR_BUNDLE_DIR OUT_DIR   (builds nothing)
set -uo pipefail
bin=$1/bin/ktune; [ -x "$bin" ] || bin=$1/src/cli/ktune
gemv=$1/bin/ktune_gemv_bench; [ -x "$gemv" ] || gemv=$1/benchmarks/gemv/ktune_gemv_bench
out=$2; root=$(cd "$(dirname "$0")/../.." && pwd)
budget=${KTUNE_TUNE_BUDGET:-60}
mkdir -p "$out"; rm -rf "$out/session" "$out/ktune.db"
log=$out/tune.txt

# 1. The session (its own files under OUT/session, the winner into OUT/ktune.db).
"$bin" --db "$out/ktune.db" tune "$root/kernels/gemv/gemv.json" --budget "$budget" \
  --out "$out/session" --json >"$out/summary-stdout.json" 2>"$log"
rc=$?
echo "ktune tune exit $rc" >>"$log"
read -r evals eps winner best_us stop < <(python3 - "$out/session/summary.json" <<'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
except Exception:
    print("0 0 none 0 missing"); sys.exit()
b = s["best"]
cfg = ",".join(f"{k}={v}" for k, v in b["config"].items()) if b else "none"
print(s["evaluations"], f'{s["evaluations_per_s"]:.2f}', cfg, f'{b["time_ns"]/1e3:.2f}' if b else 0, s["stop"])
PY
)
echo "session: $evals evaluations, stop $stop, winner $winner (${best_us} us in the session)" | tee -a "$log"

# 2. The winner and cuBLASLt side by side, one process, both cold through the same harness.
ratio=0
if [ "$winner" != none ]; then
  "$gemv" "$root/kernels/gemv/gemv.json" "$winner" >"$out/side_by_side.txt" 2>&1
  cat "$out/side_by_side.txt" | tee -a "$log"
  ratio=$(sed -n 's/^best ratio vs cuBLASLt \([0-9.]*\)x.*/\1/p' "$out/side_by_side.txt")
  ratio=${ratio:-0}
fi

# 3. What the cache now holds.
"$bin" --db "$out/ktune.db" cache ls 2>&1 | tee "$out/cache_ls.txt" | tee -a "$log"

pass() { python3 -c "import sys; print('PASS' if float(sys.argv[1]) >= float(sys.argv[2]) else 'FAIL')" "$1" "$2"; }
r=$(pass "$ratio" 1.15); e=$(pass "$eps" 4)
echo "winner $winner"
echo "ratio vs cuBLASLt ${ratio}x $r (>= 1.15)"
echo "evaluations per second $eps $e (>= 4)"
[ "$rc" = 0 ] && [ "$r" = PASS ] && [ "$e" = PASS ]

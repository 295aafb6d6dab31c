#!/usr/bin/env bash
# Where a tuning session's time goes, on the GPU machine: NVRTC scaling (threads vs processes), the
# GEMV session at the default tuning rule and at a shorter one, the per-sample overhead of the
# harness (wall time per sample beyond the kernel's own time), and the hub convolution's rate.
# Usage: throughput.sh BUILD_OR_BUNDLE_DIR OUT_DIR
set -uo pipefail
bin=$1/bin/ktune; [ -x "$bin" ] || bin=$1/src/cli/ktune
out=$2; root=$(cd "$(dirname "$0")/../.." && pwd); hub=${KTUNE_HUB:-$root/.hub}
mkdir -p "$out"; log=$out/throughput.txt; : >"$log"
say() { echo "$*" | tee -a "$log"; }
summ() {  # SESSION_DIR -> "evals eps best_us compile_s_mean"
  python3 -c "
import json,sys
s=json.load(open(sys.argv[1]+'/summary.json')); b=s['best']
print(s['evaluations'], f\"{s['evaluations_per_s']:.2f}\", f\"{b['time_ns']/1e3:.2f}\" if b else 0, f\"{s['compile_s_mean']:.3f}\", json.dumps(s['status_counts']))" "$1"
}
say "== NVRTC scaling on $(nproc) cores (hub convolution, 32 configurations)"
python3 "$root/benchmarks/tune/compile_scaling.py" "$hub/convolution_milo.cu" "$(nproc)" 32 2>&1 | tee -a "$log"
gemv=$root/kernels/gemv/gemv.json
for rule in default min_gpu_time_s=0.01 min_gpu_time_s=0.005,max_relative_stddev=0.02; do
  d=$out/gemv-${rule//[=,.]/_}; rm -rf "$d"
  extra=(); [ "$rule" = default ] || extra=(--stop "$rule")
  t0=$(date +%s.%N)
  "$bin" --db "$out/ktune.db" tune "$gemv" --budget 100 --cold -o "$d" "${extra[@]}" >"$d.stdout" 2>"$d.stderr"
  rc=$?; t1=$(date +%s.%N)
  say "gemv rule=$rule rc=$rc wall=$(python3 -c "print(f'{$t1-$t0:.1f}')") s: $(summ "$d")"
  python3 - "$d/results.jsonl" <<'PY' | tee -a "$log"
import json, sys, statistics as st
rows = [json.loads(l) for l in open(sys.argv[1])]
el = [r["elapsed_s"] for r in rows]; gaps = [b - a for a, b in zip([0] + el, el)]
by = {}
for r, g in zip(rows, gaps):
    k = r["status"] + "/" + r.get("measurement", "?"); by.setdefault(k, []).append((g, r.get("samples", 0)))
for k, v in sorted(by.items()):
    print(f"  {k:12s} n={len(v):3d} mean wall {1e3*st.mean(g for g,_ in v):7.1f} ms  mean samples {st.mean(s for _,s in v):7.1f}")
PY
done
best=$(python3 -c "
import json,sys; b=json.load(open(sys.argv[1]+'/summary.json'))['best']; print(','.join(f'{k}={v}' for k,v in b['config'].items()))" "$out/gemv-default")
for mode in cold hot; do
  "$bin" bench "$gemv" --config "$best" --mode $mode --json >"$out/bench-$mode.json" 2>"$out/bench-$mode.err"
  python3 - "$out/bench-$mode.json" "$mode" <<'PY' | tee -a "$log"
import json, sys
m = json.load(open(sys.argv[1])); n = m["samples"]; med = m["median_ns"]; lps = m["launches_per_sample"]
per = m["wall_time_s"] / max(1, n + m["warmup_samples"])
print(f"bench {sys.argv[2]}: {n} samples, median {med/1e3:.2f} us x {lps} launches, wall {m['wall_time_s']:.3f} s, "
      f"wall per sample {per*1e6:.1f} us, overhead per sample {per*1e6 - med*lps/1e3:.1f} us")
PY
done
d=$out/convolution; rm -rf "$d"; t0=$(date +%s.%N)
"$bin" --db "$out/ktune.db" tune "$hub/convolution_milo.json" --budget 200 --cold -o "$d" >"$d.stdout" 2>"$d.stderr"
rc=$?; t1=$(date +%s.%N)
say "convolution rc=$rc wall=$(python3 -c "print(f'{$t1-$t0:.1f}')") s: $(summ "$d")"
tail -n 20 "$log"

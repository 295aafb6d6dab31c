#!/usr/bin/env bash
# GPU tier: the measurement harness's four checks on the built-in kernels, PASS/FAIL with figures.
# Usage: run.sh BUILD_OR_BUNDLE_DIR OUT_DIR   (builds nothing)
set -uo pipefail
bin=$1/bin/ktune; [ -x "$bin" ] || bin=$1/src/cli/ktune
out=$2; root=$(cd "$(dirname "$0")/../.." && pwd); k=$root/kernels
mkdir -p "$out"
med() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["median_ns"])' "$1"; }
bw() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["throughput"]["bytes_per_s"])' "$1"; }
results=()

# 1. Ten separate processes, cold: medians agree within 1 %.
for i in $(seq 1 10); do "$bin" bench "$k/gemv/gemv.json" --mode cold --json >"$out/gemv-proc$i.json" 2>>"$out/errors.txt"; done
results+=("$(python3 - "$out" <<'PY'
import json, sys, glob
m = [json.load(open(f))["median_ns"] for f in sorted(glob.glob(sys.argv[1] + "/gemv-proc*.json"))]
spread = (max(m) - min(m)) / sorted(m)[len(m) // 2]
print(f"{'PASS' if len(m) == 10 and spread <= 0.01 else 'FAIL'} repeatability: 10 processes, gemv cold medians "
      f"{min(m)/1e3:.2f}..{max(m)/1e3:.2f} us, spread {100*spread:.2f} % (bound 1 %)")
PY
)")

# 2. Cold vs hot: differ for the L2-resident axpy (12 MiB), agree for the 2 GiB copy.
for m in cold hot; do
  "$bin" bench "$k/l2_axpy/l2_axpy.json" --mode $m --json >"$out/axpy-$m.json" 2>>"$out/errors.txt"
  "$bin" bench "$k/copy/copy.json" --mode $m --json >"$out/copy-$m.json" 2>>"$out/errors.txt"
done
ac=$(med "$out/axpy-cold.json"); ah=$(med "$out/axpy-hot.json"); cc=$(med "$out/copy-cold.json"); ch=$(med "$out/copy-hot.json")
results+=("$(python3 -c "
ac,ah,cc,ch=$ac,$ah,$cc,$ch
ok=ac/ah>=1.2 and abs(cc/ch-1)<=0.03
print(f\"{'PASS' if ok else 'FAIL'} cold vs hot: l2_axpy cold {ac/1e3:.2f} us / hot {ah/1e3:.2f} us = {ac/ah:.2f}x (want >= 1.2); copy 2 GiB cold {cc/1e3:.1f} / hot {ch/1e3:.1f} us = {cc/ch:.3f} (want within 3 %)\")")")

# 3. The copy kernel's bandwidth matches ktune calibrate's DRAM ceiling (within 5 %).
"$bin" --db "$out/ktune.db" calibrate --json >"$out/calibrate.json" 2>>"$out/errors.txt"
results+=("$(python3 - "$out/calibrate.json" "$(bw "$out/copy-cold.json")" <<'PY'
import json, sys
def find(o):
    if isinstance(o, dict):
        if o.get("name") == "dram_bandwidth" and "value" in o: return o["value"]
        for v in o.values():
            r = find(v)
            if r: return r
    if isinstance(o, list):
        for v in o:
            r = find(v)
            if r: return r
try: cal = find(json.load(open(sys.argv[1])))
except Exception: cal = None
copy = float(sys.argv[2])
if not cal: print(f"FAIL copy bandwidth {copy/1e9:.0f} GB/s: no calibrated DRAM bandwidth found")
else: print(f"{'PASS' if abs(copy/cal-1) <= 0.05 else 'FAIL'} copy bandwidth {copy/1e9:.0f} GB/s vs calibrated {cal/1e9:.0f} GB/s = {copy/cal:.3f} (want within 5 %)")
PY
)")

# 4. The planted wrong variant (skips the last element) is rejected before its time counts.
"$bin" bench "$k/copy/copy.json" --config SKIP_TAIL=1 >"$out/planted.txt" 2>&1; rc=$?
if [ $rc -ne 0 ] && grep -q "wrong_result.*1 never written" "$out/planted.txt"; then
  results+=("PASS planted wrong variant rejected: $(tail -n 1 "$out/planted.txt" | cut -c1-160)")
else
  results+=("FAIL planted wrong variant: rc=$rc $(tail -n 1 "$out/planted.txt" | cut -c1-160)")
fi

[ -s "$out/errors.txt" ] && { echo "stderr of the runs:"; head -n 20 "$out/errors.txt"; }
printf '%s\n' "${results[@]}"

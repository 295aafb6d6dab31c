#!/usr/bin/env bash
# GPU tier: the measurement harness's four checks on the built-in kernels, PASS/FAIL with figures.
# Usage: run.sh BUILD_OR_BUNDLE_DIR OUT_DIR   (builds nothing)
# A bench run that fails (wrong result, launch error, crash) makes its check print FAIL with the
# run's own error; bench_result.py reads each result.
set -uo pipefail
bin=$1/bin/ktune; [ -x "$bin" ] || bin=$1/src/cli/ktune
out=$2; here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd); k=$root/kernels
mkdir -p "$out"
# bench NAME SPEC [ARGS...]: one measurement, JSON to $out/NAME.json, stderr to $out/NAME.err.
bench() { local name=$1; shift; "$bin" bench "$@" --json >"$out/$name.json" 2>"$out/$name.err"; }
check() { PYTHONDONTWRITEBYTECODE=1 python3 - "$here" "$out" "$@"; }  # the program comes on stdin; argv[1:3] = here, out
results=()

# 1. Ten separate processes, cold: medians agree within 1 %.
for i in $(seq 1 10); do bench "gemv-proc$i" "$k/gemv/gemv.json" --mode cold; done
results+=("$(check <<'PY'
import sys; sys.path.insert(0, sys.argv[1]); from bench_result import result
runs = [result(f"{sys.argv[2]}/gemv-proc{i}.json") for i in range(1, 11)]
bad = [why for m, why in runs if m is None]
if bad:
    print(f"FAIL repeatability: {len(bad)} of 10 gemv runs have no figure; first: {bad[0]}")
else:
    m = sorted(r["median_ns"] for r, _ in runs)
    spread = (m[-1] - m[0]) / m[len(m) // 2]
    print(f"{'PASS' if spread <= 0.01 else 'FAIL'} repeatability: 10 processes, gemv cold medians "
          f"{m[0]/1e3:.2f}..{m[-1]/1e3:.2f} us, spread {100*spread:.2f} % (bound 1 %)")
PY
)")

# 2. Cold vs hot: differ for the L2-resident axpy (12 MiB), agree for the 2 GiB copy.
for m in cold hot; do
  bench "axpy-$m" "$k/l2_axpy/l2_axpy.json" --mode $m
  bench "copy-$m" "$k/copy/copy.json" --mode $m
done
results+=("$(check <<'PY'
import sys; sys.path.insert(0, sys.argv[1]); from bench_result import result
runs = {n: result(f"{sys.argv[2]}/{n}.json") for n in ("axpy-cold", "axpy-hot", "copy-cold", "copy-hot")}
bad = [why for m, why in runs.values() if m is None]
if bad:
    print(f"FAIL cold vs hot: {'; '.join(bad)}")
else:
    ac, ah, cc, ch = (runs[n][0]["median_ns"] for n in ("axpy-cold", "axpy-hot", "copy-cold", "copy-hot"))
    ok = ac / ah >= 1.2 and abs(cc / ch - 1) <= 0.03
    print(f"{'PASS' if ok else 'FAIL'} cold vs hot: l2_axpy cold {ac/1e3:.2f} us / hot {ah/1e3:.2f} us = "
          f"{ac/ah:.2f}x (want >= 1.2); copy 2 GiB cold {cc/1e3:.1f} / hot {ch/1e3:.1f} us = {cc/ch:.3f} "
          f"(want within 3 %)")
PY
)")

# 3. The copy kernel's bandwidth matches ktune calibrate's DRAM ceiling (within 5 %).
"$bin" --db "$out/ktune.db" calibrate --json >"$out/calibrate.json" 2>"$out/calibrate.err"
results+=("$(check <<'PY'
import json, sys; sys.path.insert(0, sys.argv[1]); from bench_result import result
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
try: cal = find(json.load(open(f"{sys.argv[2]}/calibrate.json")))
except Exception: cal = None
m, why = result(f"{sys.argv[2]}/copy-cold.json")
if m is None: print(f"FAIL copy bandwidth: {why}")
elif not cal: print(f"FAIL copy bandwidth {m['throughput']['bytes_per_s']/1e9:.0f} GB/s: no calibrated DRAM bandwidth found")
else:
    copy = m["throughput"]["bytes_per_s"]
    print(f"{'PASS' if abs(copy/cal-1) <= 0.05 else 'FAIL'} copy bandwidth {copy/1e9:.0f} GB/s vs calibrated {cal/1e9:.0f} GB/s = {copy/cal:.3f} (want within 5 %)")
PY
)")

# 4. The planted wrong variant (skips the last element) is rejected before its time counts.
"$bin" bench "$k/copy/copy.json" --config SKIP_TAIL=1 >"$out/planted.txt" 2>&1; rc=$?
if [ $rc -ne 0 ] && grep -q "wrong_result.*1 never written" "$out/planted.txt"; then
  results+=("PASS planted wrong variant rejected: $(tail -n 1 "$out/planted.txt" | cut -c1-160)")
else
  results+=("FAIL planted wrong variant: rc=$rc $(tail -n 1 "$out/planted.txt" | cut -c1-160)")
fi

# Anything a run printed on stderr (a warning at exit included) is shown before the verdicts.
errs=$(for f in "$out"/*.err; do [ -s "$f" ] && sed "s|^|$(basename "$f"): |" "$f"; done)
[ -n "$errs" ] && { echo "stderr of the runs:"; echo "$errs" | head -n 20; }
printf '%s\n' "${results[@]}"

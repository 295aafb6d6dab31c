#!/usr/bin/env bash
# Records the run-to-run and within-run noise of the gate's benchmarks on this GPU as the fixture
# the CPU acceptance test simulates suites from (tests/fixtures/gate/h100-noise.json):
#   scripts/gpu-gate-noise.sh BUNDLE OUTDIR      (BUNDLE: a build, or .gpu-carry from gpu-bundle.sh)
# Each run is its own process (`ktune bench --json`, or the cuBLASLt program), benchmarks taken
# round robin, KTUNE_GATE_NOISE_RUNS runs each (10). Writes OUTDIR/h100-noise.json; the lead
# commits it over tests/fixtures/gate/h100-noise.json.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=$(cd "${1:?usage: gpu-gate-noise.sh BUNDLE OUTDIR}" && pwd)
. "$root/scripts/gpu-mount.sh"
mount_bundle "$bundle"
out=${2:?usage: gpu-gate-noise.sh BUNDLE OUTDIR}
mkdir -p "$out/runs"
bin=$bundle/bin/ktune; [ -x "$bin" ] || bin=$bundle/src/cli/ktune
gemm=$bundle/bin/ktune_gate_cublaslt; [ -x "$gemm" ] || gemm=$bundle/benchmarks/gate/ktune_gate_cublaslt
kernels=$root/kernels; hub=${KTUNE_HUB:-$root/.hub}
export KTUNE_HOME=${KTUNE_HOME:-$(mktemp -d /tmp/ktune-home.XXXXXX)}
. "$root/scripts/gpu-gate-benchmarks.sh"
runs=${KTUNE_GATE_NOISE_RUNS:-10}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader >"$out/gpu.txt" 2>&1
start=$(date +%s)
for r in $(seq 1 "$runs"); do
  gate_benchmarks | while read -r name kind mode target rest; do
    f=$out/runs/$name.$r.json
    if [ "$kind" = spec ]; then
      "$bin" bench "$target" --mode "$mode" --json >"$f" 2>"$f.err"
    else
      "$target" $rest >"$f" 2>"$f.err"
    fi
    [ $? -eq 0 ] || echo "run $r of $name failed: $(tail -n 2 "$f.err")"
  done
done
python3 - "$out" "$runs" <<'PY'
import json, os, sys
out, runs = sys.argv[1], int(sys.argv[2])
smi = open(f"{out}/gpu.txt").read().strip().split(", ")
names = sorted({f.split(".")[0] for f in os.listdir(f"{out}/runs") if f.endswith(".json")})
benchmarks = []
for name in names:
    rs = []
    for r in range(1, runs + 1):
        try:
            j = json.load(open(f"{out}/runs/{name}.{r}.json"))
        except Exception:
            continue
        if j.get("samples_ns"):
            rs.append({"samples_ns": [round(x, 1) for x in j["samples_ns"]],
                       "sm_clock_mhz_median": j.get("sm_clock_mhz_median", 0)})
    if len(rs) >= 2:
        benchmarks.append({"name": name, "runs": rs})
doc = {"schema_version": 1, "provisional": False,
       "note": "Recorded by scripts/gpu-gate-noise.sh: each run a separate process, benchmarks round robin.",
       "device": smi[0] if smi else "?",
       "clocks": {"driver": smi[1] if len(smi) > 1 else "", "sm_clock": smi[2] if len(smi) > 2 else "",
                  "sm_clock_max": smi[3] if len(smi) > 3 else "", "mem_clock": smi[4] if len(smi) > 4 else ""},
       "benchmarks": benchmarks}
json.dump(doc, open(f"{out}/h100-noise.json", "w"), separators=(",", ":"))
print(f"{len(benchmarks)} benchmarks, runs each: {[len(b['runs']) for b in benchmarks]}")
for b in benchmarks:
    meds = sorted(sorted(r["samples_ns"])[len(r["samples_ns"]) // 2] for r in b["runs"])
    print(f"  {b['name']:<22} run medians {meds[0]/1e3:10.3f}..{meds[-1]/1e3:10.3f} us "
          f"(spread {100*(meds[-1]-meds[0])/meds[len(meds)//2]:.2f} %), samples/run {len(b['runs'][0]['samples_ns'])}")
PY
echo "wrote $out/h100-noise.json in $(( $(date +%s) - start )) s; copy it over tests/fixtures/gate/h100-noise.json"

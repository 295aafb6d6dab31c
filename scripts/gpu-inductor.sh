#!/usr/bin/env bash
# torch.compile's Triton kernels on a GPU machine (PyTorch and Triton installed), docs/inductor.md:
#   scripts/gpu-inductor.sh BUNDLE OUT_DIR
# For each program of benchmarks/python/compiled_step.py that is tuned (KTUNE_INDUCTOR_TUNE,
# default graphs,train): ktune profile (Inductor's kernels kept and scanned beside the trace),
# report (every Triton kernel with its ops, matched to its GPU time), ingest, queue from-backlog
# --inductor (the KTUNE_INDUCTOR_TOP tunable kernels of most GPU time, 0: all; graphs timed as
# CUDA-graph replays; budget KTUNE_INDUCTOR_BUDGET), then workers drain the queue on every GPU,
# longest kernels first (OUT_DIR/tuned appears when they are done). Then python -m
# ktune.inductor prove on each program of KTUNE_INDUCTOR_PROVE (default infer,graphs,train;
# PROGRAM@GPU runs it on that GPU alongside the others; KTUNE_INDUCTOR_ROUNDS rounds;
# KTUNE_INDUCTOR_PROCESSES processes at once on the first). Prints a short summary last.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=$(cd "${1:?usage: scripts/gpu-inductor.sh BUNDLE OUT_DIR}" && pwd)
out=${2:-${OUT:-/tmp/ktune-gpu}/inductor}
mkdir -p "$out"
. "$root/scripts/gpu-mount.sh"
mount_bundle "$bundle"
export PYTHONPATH="$bundle/python${PYTHONPATH:+:$PYTHONPATH}"
export KTUNE_HOME=${KTUNE_HOME:-$(mktemp -d /tmp/ktune-inductor-home.XXXXXX)}
ktune=$bundle/src/cli/ktune
db=$out/store.db
tune=${KTUNE_INDUCTOR_TUNE:-graphs,train}
prove=${KTUNE_INDUCTOR_PROVE:-infer,graphs,train}
budget=${KTUNE_INDUCTOR_BUDGET:-24}
top=${KTUNE_INDUCTOR_TOP:-0}
rounds=${KTUNE_INDUCTOR_ROUNDS:-3}
processes=${KTUNE_INDUCTOR_PROCESSES:-8}
summary=()
cd "$root/benchmarks/python" || exit 1

for p in ${tune//,/ }; do
  dir=$out/$p
  mkdir -p "$dir"
  "$ktune" --db "$db" profile -o "$dir/step.ktrace" -- python3 compiled_step.py --program "$p" \
    --iters 5 >"$dir/profile.log" 2>&1
  echo "$p: profile rc=$?"
  "$ktune" report "$dir/step.ktrace" >"$dir/report.txt" 2>&1
  "$ktune" report "$dir/step.ktrace" --format json >"$dir/report.json" 2>>"$dir/report.txt"
  mapped=$(python3 - "$dir/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = r.get("triton_kernels") or {}
ks = t.get("kernels", [])
seen = [k for k in ks if k.get("gpu_ns", 0) > 0]
names = {k["name"] for k in ks}
recorded = [k for k in r.get("kernels", []) if str(k.get("name", "")).startswith("triton_")]
unmapped = [k["name"] for k in recorded if k["name"] not in names]
print(f"{len(recorded)} Triton kernels recorded, {len(recorded) - len(unmapped)} mapped to their "
      f"module, {sum(1 for k in seen if k.get('tunable'))} tunable with GPU time; "
      f"{len(r.get('backlog', {}).get('triton_kernels', []))} in the backlog; unmapped: "
      f"{unmapped[:5]}")
PY
)
  echo "$p: $mapped"
  summary+=("$p: $mapped")
  graph=()
  [ "$p" = graphs ] && graph=(--cuda-graph)
  "$ktune" --db "$db" ingest "$dir"/step*.ktrace --tag "job=$p" >/dev/null 2>>"$dir/profile.log"
  # The scan cut to the kernels of most GPU time (the report's), when KTUNE_INDUCTOR_TOP is set.
  python3 - "$dir/step.inductor.json" "$dir/report.json" "$top" "$dir/queue.inductor.json" <<'PY'
import json, sys
scan, report, top, to = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3]), sys.argv[4]
if top > 0:
    timed = {k["name"]: k.get("gpu_ns", 0) for k in report.get("triton_kernels", {}).get("kernels", [])}
    keep = sorted((k for k in scan["kernels"] if k.get("tunable")), key=lambda k: -timed.get(k["name"], 0))
    scan["kernels"] = keep[:top]
json.dump(scan, open(to, "w"))
PY
  "$ktune" --db "$db" queue from-backlog --inductor "$dir/queue.inductor.json" "${graph[@]}" \
    --budget "$budget" --json >"$dir/queued.json" 2>>"$dir/profile.log"
  echo "$p: queued $(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["jobs"]))' "$dir/queued.json" 2>/dev/null)"
done

start=$(date +%s)
"$ktune" --db "$db" worker --drain --all-devices >"$out/worker.log" 2>&1
echo "workers: rc=$? in $(( $(date +%s) - start )) s"
summary+=("tuning: $(( $(date +%s) - start )) s on $(nvidia-smi -L | wc -l) GPUs")
touch "$out/tuned"
"$ktune" --db "$db" queue ls --json >"$out/queue.json" 2>/dev/null
"$ktune" --db "$db" cache ls --json >"$out/cache.json" 2>/dev/null
gains=$(python3 - "$out/cache.json" <<'PY'
import json, sys
entries = [e for e in json.load(open(sys.argv[1]))["entries"]
           if e.get("op", "").startswith("inductor:")]
rows = []
for e in entries:
    b = (e.get("provenance") or {}).get("budget") or {}
    name, base = b.get("kernel", e["op"][9:21]), b.get("default_median_ns")
    if base:
        rows.append((base / e["median_ns"], name, base, e["median_ns"], e["config"]))
rows.sort(reverse=True)
better = [r for r in rows if r[0] > 1.0]
print(f"{len(entries)} winners stored, {len(better)} beat Inductor's choice")
for g, name, base, t, cfg in rows[:12]:
    print(f"  {g:6.3f}x {name[:60]:<60} {base / 1e3:8.2f} -> {t / 1e3:8.2f} us  {cfg}")
PY
)
echo "$gains"
summary+=("$(echo "$gains" | head -n 1)")

# prove_one PROGRAM ROUNDS EXTRA...: the three ways side by side, then its summary line.
prove_one() {
  local p=$1 r=$2
  shift 2
  KTUNE_DB=$db timeout 900 python3 -m ktune.inductor prove compiled_step.py --arg "program=$p" \
    --rounds "$r" --iters 30 "$@" --json >"$out/prove-$p.json" 2>"$out/prove-$p.err"
  echo "$p: prove rc=$?" >&2
  python3 - "$out/prove-$p.json" "$p" >"$out/prove-$p.line" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
w = r["ways"]
k, d, m, warm = w["ktune"], w["default"], w["max-autotune"], w["max-autotune-warm"]
print(f"{sys.argv[2]}: step ms default {d['step_ms']:.3f}, max-autotune {m['step_ms']:.3f}, ktune "
      f"{k['step_ms']:.3f}; ktune/default per round {[round(x, 3) for x in k['speedup_vs_default_per_round']]}, "
      f"ktune/max-autotune {[round(x, 3) for x in k['speedup_vs_max_autotune_per_round']]}; compile s "
      f"default {d['compile_s']:.1f}, max-autotune cold {m['compile_s']:.1f} (autotune "
      f"{m['autotune_s']:.1f}) warm {warm['compile_s']:.1f}, ktune {k['compile_s']:.1f} (autotune "
      f"{k['autotune_s']:.2f}); served {k['served']}; max |diff| ktune {k['max_abs_diff_vs_default']:.3g}; "
      f"{r['ktune_processes']} ktune processes, kernels with >1 config: "
      f"{len(r['kernels_with_more_than_one_config'])} of {r['kernels']}")
PY
}
first=1
for item in ${prove//,/ }; do
  p=${item%@*}
  extra=()
  [ "$first" = 1 ] && extra=(--processes "$processes")
  first=0
  r=$rounds
  [ "$p" = train ] && r=${KTUNE_INDUCTOR_TRAIN_ROUNDS:-$rounds}
  if [[ "$item" == *@* ]]; then
    CUDA_VISIBLE_DEVICES=${item#*@} prove_one "$p" "$r" "${extra[@]}" &
  else
    prove_one "$p" "$r" "${extra[@]}"
  fi
done
wait
for item in ${prove//,/ }; do
  line=$(cat "$out/prove-${item%@*}.line" 2>/dev/null)
  echo "$line"
  summary+=("$line")
done

echo
echo "== inductor summary ($(nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | head -n 1))"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"

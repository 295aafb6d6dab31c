#!/usr/bin/env bash
# The counter tier checked against Nsight Compute on a GPU machine, from the repository root:
#   scripts/gpu-counters.sh [BUNDLE] [OUT_DIR]
# BUNDLE: a build (or .gpu-carry from scripts/gpu-bundle.sh) holding src/cli/ktune and
# libktune_tracer.so. Profiles the built-in copy and GEMV (ktune bench), a hub kernel (.hub/, or
# $KTUNE_HUB) and the PyTorch transformer layer (.workloads/torch_layer.py, or $KTUNE_WORKLOADS, else
# benchmarks/tracer/torch_layer.py, the same layer):
#   1. `ktune profile --metrics roofline` on the first launch of each selected kernel, and
#      `ncu --clock-control none --metrics <the same list>` on the same launches, once with
#      `--cache-control none` (caches as the program left them, as the tracer sees them) and once
#      with ncu's default flush: DRAM bytes, FLOP and achieved occupancy per kernel, within 5 %;
#   2. the cost per profiled kernel against `ncu --section SpeedOfLight` on the same launches
#      (target: at most 1/3 of it, and at most 0.1 s);
#   3. the layer plain vs `--metrics roofline --kernel nvjet --launch-count 5` (target: <= 1.5x).
# KTUNE_COUNTERS_ONLY=copy,layer picks workloads; KTUNE_COUNTERS_LONG=0 skips step 3.
# Prints a short table last (also in OUT_DIR/counters-summary.txt). Never changes clocks.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=$(cd "${1:-$root/.gpu-carry}" && pwd)
out=${2:-${OUT:-/tmp/ktune-gpu}/counters}
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin=$bundle/src/cli/ktune
hub=${KTUNE_HUB:-$root/.hub}
work=${KTUNE_WORKLOADS:-$root/.workloads}
# The repository's copy of the same layer (benchmarks/tracer/) when .workloads/ did not travel.
[ -f "$work/torch_layer.py" ] || work=$root/benchmarks/tracer
ncu=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
export KTUNE_HOME=${KTUNE_HOME:-$(mktemp -d /tmp/ktune-home.XXXXXX)}
cd "$out" || exit 1

now() { date +%s.%N; }
# timed NAME CMD...: runs CMD, its output in NAME.log, its wall seconds in NAME.wall.
timed() {
  local name=$1; shift
  local t0; t0=$(now)
  "$@" >"$name.log" 2>&1
  local rc=$?
  awk -v a="$(now)" -v b="$t0" 'BEGIN { printf "%.3f\n", a - b }' >"$name.wall"
  [ $rc -eq 0 ] || echo "$name: exit code $rc (see $out/$name.log)"
}

# name|kernel regex|command. Regexes are searched in mangled names; each kernel's first launch.
# The benches take a fixed number of samples, so wall times compare across tools.
stop="--stop warmup_samples=5,min_samples=50,max_samples=50,min_gpu_time_s=0,timeout_s=60"
workloads=(
  "copy|copy_f32|$bin bench $root/kernels/copy/copy.json $stop"
  "gemv|gemv_f16|$bin bench $root/kernels/gemv/gemv.json $stop"
  "hotspot|calculate_temp|$bin bench $hub/hotspot_milo.json $stop"
  "layer|nvjet|layer_norm|elementwise|python3 $work/torch_layer.py --iters 20 --tiny 200"
)

{
  echo "# counter tier vs Nsight Compute, $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  "$ncu" --version | tail -n 1
} 2>&1 | tee identity.txt

for w in "${workloads[@]}"; do
  name=${w%%|*}
  rest=${w#*|}
  cmd=${rest##*|}
  regex=${rest%|*}
  if [ -n "${KTUNE_COUNTERS_ONLY:-}" ] && [[ ",$KTUNE_COUNTERS_ONLY," != *",$name,"* ]]; then continue; fi
  echo "== $name (kernels matching '$regex')"
  read -r -a argv <<<"$cmd"
  timed "$name-plain" "${argv[@]}"
  timed "$name-ktune" "$bin" profile -o "$out/$name.ktrace" --metrics roofline --kernel "$regex" \
    --launch-count 1 -- "${argv[@]}"
  # The metric list ncu collects is the one the trace holds, so both sides ask for the same names.
  metrics=$(python3 -c "import sqlite3,sys; print(','.join(r[0] for r in sqlite3.connect(sys.argv[1]).execute('select distinct s.value from counters c join strings s on s.id=c.metric_id order by c.id')))" "$out/$name.ktrace" 2>/dev/null)
  if [ -z "$metrics" ]; then
    echo "$name: the trace holds no counters; tracer output:"; grep 'ktune' "$name-ktune.log" | tail -n 5
    continue
  fi
  kid="::regex:.*($regex).*:1"
  # Twice: as the tracer sees the kernel (caches as the program left them, --cache-control none)
  # and with ncu's default flush of every cache before each pass.
  for cache in none all; do
    timed "$name-ncu-$cache" "$ncu" --clock-control none --cache-control $cache \
      --kernel-name-base mangled --print-kernel-base mangled --kernel-id "$kid" \
      --metrics "$metrics" --csv --page raw --print-units base --log-file "$out/$name-ncu-$cache.csv" \
      "${argv[@]}"
  done
  timed "$name-ncu-sol" "$ncu" --clock-control none --kernel-name-base mangled \
    --kernel-id "$kid" --section SpeedOfLight "${argv[@]}"
  grep 'ktune tracer' "$name-ktune.log" | tail -n 3
done

if [ "${KTUNE_COUNTERS_LONG:-1}" != 0 ]; then
  echo "== layer: plain vs --metrics roofline --kernel nvjet --launch-count 5"
  layer=(python3 "$work/torch_layer.py" --iters 200 --tiny 2000)
  timed layer-long-plain "${layer[@]}"
  timed layer-long-ktune-trace "$bin" profile -o "$out/layer-long-trace.ktrace" -- "${layer[@]}"
  timed layer-long-ktune "$bin" profile -o "$out/layer-long.ktrace" --metrics roofline \
    --kernel nvjet --launch-count 5 -- "${layer[@]}"
  grep 'ktune tracer' layer-long-ktune.log | tail -n 2
fi

python3 - "$out" "${workloads[@]}" <<'PY' | tee counters-summary.txt
import csv, os, re, sqlite3, sys
out, workloads = sys.argv[1], sys.argv[2:]

FLOP = {  # metric -> FLOP per count (an FMA is two)
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 2,
    "sm__sass_thread_inst_executed_op_fadd_pred_on.sum": 1,
    "sm__sass_thread_inst_executed_op_fmul_pred_on.sum": 1,
    "sm__sass_thread_inst_executed_op_dfma_pred_on.sum": 2,
    "sm__sass_thread_inst_executed_op_dadd_pred_on.sum": 1,
    "sm__sass_thread_inst_executed_op_dmul_pred_on.sum": 1,
    "sm__sass_thread_inst_executed_op_hfma_pred_on.sum": 2,
    "sm__sass_thread_inst_executed_op_hadd_pred_on.sum": 1,
    "sm__sass_thread_inst_executed_op_hmul_pred_on.sum": 1,
    "sm__ops_path_tensor_op_hgmma_src_fp16.sum": 1,
    "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32.sum": 1,
    "sm__ops_path_tensor_src_fp16.sum": 1,
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum": 1,
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum": 1,
    "sm__ops_path_tensor_src_fp8.sum": 1,
}
OCC = "sm__warps_active.avg.pct_of_peak_sustained_active"

def derived(m):
    dram = m.get("dram__bytes_read.sum", 0) + m.get("dram__bytes_write.sum", 0)
    flop = sum(m.get(k, 0) * w for k, w in FLOP.items())
    return dram, flop, m.get(OCC)

def wall(name):
    try: return float(open(f"{out}/{name}.wall").read())
    except Exception: return None

def close(a, b, floor):
    if a is None or b is None: return None
    return abs(a - b) <= max(0.05 * max(abs(a), abs(b)), floor)

def short(n):
    n = re.sub(r"^_Z\d+", "", n)
    return n[:44]

def ncu_values(path):
    theirs = {}
    try:
        table = list(csv.reader(l for l in open(path) if l.startswith('"')))
        head = table[0]
        for r in table[2:]:  # row 1: units
            d = dict(zip(head, r))
            k = d.get("Kernel Name", "")
            if k in theirs: continue
            vals = {}
            for h, v in d.items():
                try: vals[h] = float(v.replace(",", ""))
                except ValueError: pass
            theirs[k] = vals
    except Exception as e:
        print(f"no ncu values in {path} ({e})")
    return theirs

def tracer_summary(path):
    try: text = open(path).read()
    except Exception: return 0, 0, 0
    m = re.search(r"(\d+) launches of \d+ kernels profiled, ([\d.]+) s collecting \(([\d.]+) s set-up", text)
    return (int(m.group(1)), float(m.group(2)), float(m.group(3))) if m else (0, 0, 0)

rows, costs, verdicts, flush_verdicts, dram_split = [], [], [], [], []
for w in workloads:
    name = w.split("|")[0]
    trace = f"{out}/{name}.ktrace"
    if not os.path.exists(trace): continue
    db = sqlite3.connect(trace)
    ours = {}
    for kname, metric, value in db.execute(
            "select sk.value, sm.value, c.value from counters c join kernels k on "
            "k.correlation_id = c.correlation_id join strings sk on sk.id = k.name_id join strings "
            "sm on sm.id = c.metric_id order by c.correlation_id"):
        ours.setdefault(kname, {}).setdefault(metric, value)
    theirs = {cache: ncu_values(f"{out}/{name}-ncu-{cache}.csv") for cache in ("none", "all")}
    for k, m in ours.items():
        a = derived(m)
        b = derived(theirs["none"].get(k, {})) if k in theirs["none"] else (None, None, None)
        f = derived(theirs["all"].get(k, {})) if k in theirs["all"] else (None, None, None)
        ok = [close(a[0], b[0], 1 << 20), close(a[1], b[1], 1e6), close(a[2], b[2], 1.0)]
        ok_flush = close(a[0], f[0], 1 << 20)
        verdicts += [v for v in ok if v is not None]
        if ok_flush is not None: flush_verdicts.append(ok_flush)
        dram_split.append((name, short(k), m.get("dram__bytes_read.sum"), m.get("dram__bytes_write.sum"),
                           theirs["none"].get(k, {}).get("dram__bytes_read.sum"),
                           theirs["none"].get(k, {}).get("dram__bytes_write.sum"),
                           theirs["all"].get(k, {}).get("dram__bytes_read.sum"),
                           theirs["all"].get(k, {}).get("dram__bytes_write.sum")))
        rows.append((name, short(k), a, b, f, ok))
    launches, collect_s, setup_s = tracer_summary(f"{out}/{name}-ktune.log")
    plain = wall(f"{name}-plain")
    if launches and plain:
        costs.append((name, launches, (collect_s + setup_s) / launches,
                      ((wall(f"{name}-ktune") or 0) - plain) / launches,
                      ((wall(f"{name}-ncu-sol") or 0) - plain) / launches))

def fmt(v, unit=""):
    if v is None: return "-"
    for s, d in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= d: return f"{v/d:.3f}{s}{unit}"
    return f"{v:.3g}{unit}"

print("\n== DRAM bytes read/write: ktune | ncu --cache-control none | ncu (default: caches flushed)")
for name, k, *v in dram_split:
    print(f"{name:8} {k:44} " + " | ".join(f"{fmt(r)}/{fmt(w)}" for r, w in zip(v[0::2], v[1::2])))
print("\n== counters vs ncu --cache-control none (first launch of each kernel; within 5 %, floors 1 MiB / 1 MFLOP / 1 pt)")
print(f"{'workload':8} {'kernel':44} {'DRAM B ktune/ncu/ncu-flush':>32} {'FLOP ktune/ncu':>22} {'occ % ktune/ncu':>16} ok")
for name, k, a, b, f, ok in rows:
    mark = "".join("-" if v is None else ("y" if v else "N") for v in ok)
    occ = f"{a[2]:.1f}/{b[2]:.1f}" if a[2] is not None and b[2] is not None else "-"
    print(f"{name:8} {k:44} {fmt(a[0])+'/'+fmt(b[0])+'/'+fmt(f[0]):>32} {fmt(a[1])+'/'+fmt(b[1]):>22} {occ:>16} {mark}")
print(f"agreement with ncu --cache-control none: {sum(verdicts)}/{len(verdicts)} figures within 5 %, "
      f"{len(rows)} kernels; DRAM bytes vs ncu with its cache flush: {sum(flush_verdicts)}/{len(flush_verdicts)}")
print("\n== cost per profiled kernel: ktune inside the tracer (collecting + set-up) and by wall time over the plain run; ncu SpeedOfLight by wall time")
for name, n, inside, ours_s, sol_s in costs:
    ratio = inside / sol_s if sol_s > 0 else float("nan")
    print(f"{name:8} {n:3} kernels: ktune {inside:.3f} s (wall {ours_s:.3f} s), ncu SpeedOfLight {sol_s:.3f} s, "
          f"ratio {ratio:.2f} (target <= 0.33, and <= 0.1 s)")
p, t, c = wall("layer-long-plain"), wall("layer-long-ktune-trace"), wall("layer-long-ktune")
if p and c:
    print(f"\n== layer wall: plain {p:.2f} s, traced {t:.2f} s, --metrics roofline --kernel nvjet "
          f"--launch-count 5 {c:.2f} s = {c/p:.2f}x plain (target <= 1.5x)")
PY

#!/usr/bin/env bash
# The counter tier checked against Nsight Compute on a GPU machine, from the repository root:
#   scripts/gpu-counters.sh [BUNDLE] [OUT_DIR]
# BUNDLE: a build (or .gpu-carry from scripts/gpu-bundle.sh) holding src/cli/ktune and
# libktune_tracer.so. Steps, picked by KTUNE_COUNTERS_ONLY (default hand,sdpa,train,passes):
#   hand, sdpa, train: PyTorch programs of ktune's own (benchmarks/python/attention_programs.py:
#      an attention block written by hand, the same through SDPA, a training step with backward)
#      under benchmarks/analysis/ncu_compare.sh: `ktune profile --metrics triage` beside
#      `ncu --clock-control none --section SpeedOfLight` + the stall ratios, with
#      `--cache-control none` and `all`: verdict and top-stall agreement per launch, and each
#      tool's counter time per profiled launch (target: >= 9/10 agreement, <= 0.1 s per launch);
#   passes: the hand-written block profiled with metric lists of 1, 9 (the speed-of-light pair)
#      and 14 (triage) replay passes: the cost per profiled launch as a fixed part plus a part per
#      pass (least squares), to say what fewer passes buy;
#   copy, gemv, hotspot, layer: `ktune profile --metrics roofline` on the first launch of each
#      selected kernel of the built-in copy and GEMV (ktune bench), a hub kernel (.hub/, or
#      $KTUNE_HUB) and the PyTorch layer (.workloads/torch_layer.py, or $KTUNE_WORKLOADS, else
#      benchmarks/tracer/torch_layer.py), and `ncu --metrics <the same list>` on the same launches
#      with both cache modes: DRAM bytes, FLOP and occupancy within 5 %, and the cost against
#      `ncu --section SpeedOfLight`;
#   long: the layer plain vs `--metrics roofline --kernel nvjet --launch-count 5` (<= 1.5x).
# About 4-5 minutes of device time for the default steps on an H100. Prints a short summary last
# (also in OUT_DIR/counters-summary.txt). Never changes clocks.
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

picked() { [[ ",${KTUNE_COUNTERS_ONLY:-hand,sdpa,train,passes}," == *",$1,"* ]]; }
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

# PyTorch programs of our own: verdicts, top stalls and cost beside ncu, both cache modes.
programs=$root/benchmarks/python/attention_programs.py
for p in hand sdpa train; do
  picked $p || continue
  steps=2
  [ $p = train ] && steps=1  # a training step launches three times the kernels of the others
  echo "== $p (ncu_compare.sh, --metrics triage, ncu caches none and all)"
  METRICS=triage NCU_CACHE="none all" bash "$root/benchmarks/analysis/ncu_compare.sh" "$bundle" \
    "$out/$p" -- python3 "$programs" --which $p --steps $steps >"$p.log" 2>&1 ||
    echo "$p: ncu_compare.sh failed (see $out/$p.log)"
  grep -E '^(verdicts agree|top stall|result)' "$p.log"
done

# The cost of a profiled launch against its replay passes, on the hand-written block.
if picked passes; then
  echo "== passes: the hand-written block with 1, 9 and 14 replay passes"
  hand=(python3 "$programs" --which hand --steps 2)
  timed passes-plain "${hand[@]}"
  sol=sm__throughput.avg.pct_of_peak_sustained_elapsed,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed
  for set in "gpu__time_duration.sum" "gpu__time_duration.sum,$sol" triage; do
    name=passes-$(echo "$set" | md5sum | cut -c1-6)
    echo "$set" >"$name.set"
    timed "$name" "$bin" profile -o "$out/$name.ktrace" --metrics "$set" -- "${hand[@]}"
    grep -h 'hardware counters' "$name.log" | tail -n 1
  done
fi

for w in "${workloads[@]}"; do
  name=${w%%|*}
  rest=${w#*|}
  cmd=${rest##*|}
  regex=${rest%|*}
  picked "$name" || continue
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

if picked long; then
  echo "== layer: plain vs --metrics roofline --kernel nvjet --launch-count 5"
  layer=(python3 "$work/torch_layer.py" --iters 200 --tiny 2000)
  timed layer-long-plain "${layer[@]}"
  timed layer-long-ktune-trace "$bin" profile -o "$out/layer-long-trace.ktrace" -- "${layer[@]}"
  timed layer-long-ktune "$bin" profile -o "$out/layer-long.ktrace" --metrics roofline \
    --kernel nvjet --launch-count 5 -- "${layer[@]}"
  grep 'ktune tracer' layer-long-ktune.log | tail -n 2
fi

values=0
for w in "${workloads[@]}"; do picked "${w%%|*}" && values=1; done
[ $values = 1 ] && python3 - "$out" "${workloads[@]}" <<'PY' | tee values-summary.txt
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

# The summary, last: the PyTorch programs beside ncu, and the cost per pass.
python3 - "$out" "$root/benchmarks/analysis" <<'PY' | tee counters-summary.txt
import glob, os, sys
out = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from ncu_compare import tracer_summary  # noqa: E402

rows = []
for program in ("hand", "sdpa", "train"):
    path = f"{out}/{program}/results.txt"
    if not os.path.exists(path):
        continue
    for line in open(path):
        pairs = dict(kv.split("=", 1) for kv in line.split()[1:])
        rows.append((program, pairs))
if rows:
    print("\n== PyTorch programs vs ncu (ktune --metrics triage; ncu SpeedOfLight + stall ratios; "
          "--clock-control none)")
    head = ("program", "ncu cache", "verdicts", "top stall", "passes", "ktune s/launch",
            "after first", "ktune wall s/launch", "ncu wall s/launch")
    print(" | ".join(head))
    tot = {"v": [0, 0], "s": [0, 0]}
    for program, p in rows:
        for key, k in (("verdicts", "v"), ("stalls", "s")):
            a, b = (int(x) for x in p.get(key, "0/0").split("/"))
            tot[k][0] += a
            tot[k][1] += b
        print(" | ".join([program, p.get("cache", "-"), p.get("verdicts", "-"),
                          p.get("stalls", "-"), p.get("passes", "-"),
                          p.get("ktune_s_per_launch", "-"), p.get("ktune_s_per_later_launch", "-"),
                          p.get("ktune_wall_s_per_launch", "-"),
                          p.get("ncu_wall_s_per_launch", "-")]))

fits = []
for set_file in sorted(glob.glob(f"{out}/passes-*.set")):
    base = set_file[:-4]
    try:
        s = tracer_summary(open(base + ".log", errors="replace").read())
    except OSError:
        s = None
    if s and s["launches"] > 1 and s["passes"]:
        later = (s["collect_s"] - s["first_s"]) / (s["launches"] - 1)
        fits.append((s["passes"], later, s["collect_s"] / s["launches"], s["launches"],
                     open(set_file).read().strip()))
if fits:
    print("\n== cost per profiled launch by replay passes (hand-written block)")
    for p, later, allin, n, name in sorted(fits):
        print(f"{p:2} passes: {later:.4f} s per launch after the first, {allin:.4f} s all-in "
              f"({n} launches; {name[:60]})")
    # A single pass needs no replay (nothing to save or restore): the fit is over the others.
    replayed = [f for f in fits if f[0] > 1]
    if len({f[0] for f in replayed}) > 1:
        xs, ys = [f[0] for f in replayed], [f[1] for f in replayed]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        a = my - b * mx
        print(f"fit over the replayed sets: {a:.4f} s per launch + {b:.4f} s per pass; 0.1 s "
              f"allows {(0.1 - a) / b:.1f} passes" if b > 0 else
              f"fit over the replayed sets: {a:.4f} s + {b:.4f} s per pass")

if rows:
    def share(c):
        return f"{c[0]}/{c[1]} ({100 * c[0] / c[1]:.0f} %)" if c[1] else "0/0"
    costs = [float(p["ktune_s_per_launch"]) for _, p in rows if "ktune_s_per_launch" in p]
    ncu = [float(p["ncu_wall_s_per_launch"]) for _, p in rows if "ncu_wall_s_per_launch" in p]
    print(f"\nSUMMARY: verdicts agree {share(tot['v'])}, top stall {share(tot['s'])} "
          f"(target >= 90 % each, both cache modes); ktune {min(costs, default=0):.3f}-"
          f"{max(costs, default=0):.3f} s per profiled launch (target <= 0.1 s), ncu "
          f"{min(ncu, default=0):.3f}-{max(ncu, default=0):.3f} s")
PY

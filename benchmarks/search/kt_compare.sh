#!/usr/bin/env bash
# Time to solution on the GPU (issue 27): ktune's default strategy beside Kernel Tuner 1.5's
# genetic algorithm and its default (brute force) on the hub's convolution and hotspot, from their
# T1 files as shipped (benchmarks/search/hub/), same machine, same session.
#   benchmarks/search/kt_compare.sh KTUNE_BIN OUT_DIR
# Kernel Tuner comes from the wheels in .wheels/ (benchmarks/search/README.md says how to fetch
# them; the GPU machine has no network). Every run is at most BUDGET (200) evaluations and at most
# its share of TOTAL_S (default 400) seconds of wall clock: the runs are spread evenly over the
# time (their cap is printed), seeds outermost, so every tuner gets the same clock on the same
# kernel. Each run's best configuration is then measured again by `ktune bench` (cold L2, the
# same rule for every tuner) so that the best times compare across tuners. The whole script ends
# in under 8 minutes on an H100 with the defaults.
# Env: SEEDS (1..5), KERNELS ("convolution hotspot"), TUNERS ("ktune kt_ga kt_default"),
# BUDGET (200), TOTAL_S (400), REMEASURE (1).
# Prints one line per run, then a summary per kernel and tuner (last); writes OUT_DIR/runs.jsonl
# and OUT_DIR/summary.txt.
set -uo pipefail
bin=${1:?usage: kt_compare.sh KTUNE_BIN OUT_DIR}
out=${2:?usage: kt_compare.sh KTUNE_BIN OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
hub=$here/hub
seeds=${SEEDS:-1 2 3 4 5}
kernels=${KERNELS:-convolution hotspot}
tuners=${TUNERS:-ktune kt_ga kt_default}
budget=${BUDGET:-200}
total=${TOTAL_S:-400}
remeasure=${REMEASURE:-1}
start=$(date +%s)
mkdir -p "$out"
work=$out/work
rm -rf "$work" "$out/runs.jsonl"
mkdir -p "$work"
export CUDA_CACHE_DISABLE=1  # every tuner compiles cold
# cuda-bindings finds NVRTC through these
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
export LD_LIBRARY_PATH=$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# Kernel Tuner, offline, in its own environment (only what its GA and brute force import).
if [[ " $tuners " == *" kt_"* ]]; then
  python3 -m venv "$work/kt-venv" >/dev/null &&
    "$work/kt-venv/bin/pip" install -q --no-index --find-links "$root/.wheels" --no-deps \
      kernel_tuner numpy python-constraint2 jsonschema attrs referencing rpds-py \
      jsonschema-specifications xmltodict packaging typing-extensions cuda-bindings \
      cuda-pathfinder || { echo "Kernel Tuner did not install from $root/.wheels" >&2; exit 1; }
  echo "Kernel Tuner $("$work/kt-venv/bin/python" -c 'import kernel_tuner; print(kernel_tuner.__version__)')" \
    "installed in $(($(date +%s) - start)) s"
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader || true

runs=()
for s in $seeds; do for k in $kernels; do for t in $tuners; do runs+=("$k $t $s"); done; done; done
reserve=$((remeasure == 1 ? 2 * ${#runs[@]} + 10 : 10))  # seconds kept for measuring again

# score KERNEL TUNER SEED WALL_S FILE: one JSON line from a ktune summary or a Kernel Tuner cache.
score() {
  python3 - "$@" <<'PY'
import datetime, json, sys
kernel, tuner, seed, wall, path, t0 = sys.argv[1:7]
row = {"kernel": kernel, "tuner": tuner, "seed": int(seed), "wall_s": float(wall)}
def within(times, elapsed):  # times in evaluation order (None: failed)
    ok = [t for t in times if t is not None]
    res = {}
    for pct in (1, 2):
        if not ok:
            res[f"to_{pct}pct"] = None
            continue
        k = next(i for i, t in enumerate(times) if t is not None and t <= min(ok) * (1 + pct / 100))
        res[f"to_{pct}pct"] = {"evaluations": k + 1, "elapsed_s": elapsed[k]}
    return res
try:
    if tuner == "ktune":
        s = json.load(open(path))
        row["evaluations"] = s["evaluations"]
        row["best_us"] = s["best"]["time_ns"] / 1e3 if s["best"] else None
        row["best_config"] = s["best"]["config"] if s["best"] else None
        for t in s["time_to_solution"]:
            row[f"to_{round(t['within'] * 100)}pct"] = {"evaluations": t["evaluations"],
                                                        "elapsed_s": t["elapsed_s"]}
    else:
        text = open(path).read().rstrip()
        body = text[: text.rfind("\n")] if not text.endswith(",") and text.count("\n") else text
        head, _, entries = body.partition('"cache": {')
        lines = [l.rstrip(",") for l in entries.split("\n") if l.strip()]
        cache = {}
        for l in lines:
            try:
                cache.update(json.loads("{" + l + "}"))
            except ValueError:
                pass  # a line cut by the clock
        keys = json.loads(head.rstrip().rstrip(",") + "}")["tune_params_keys"]
        start = float(t0)
        times, elapsed, configs = [], [], []
        for v in cache.values():
            t = v.get("time")
            times.append(t * 1e3 if isinstance(t, (int, float)) else None)  # ms -> us
            ts = datetime.datetime.fromisoformat(v["timestamp"]).timestamp()
            elapsed.append(ts - start)
            configs.append({k: v[k] for k in keys})
        row["evaluations"] = len(times)
        ok = [t for t in times if t is not None]
        row["best_us"] = min(ok) if ok else None
        row["best_config"] = configs[times.index(min(ok))] if ok else None
        row.update(within(times, elapsed))
except Exception as e:
    row["error"] = f"{type(e).__name__}: {e}"
print(json.dumps(row))
PY
}

n=${#runs[@]}
for i in "${!runs[@]}"; do
  read -r k t s <<<"${runs[$i]}"
  elapsed=$(($(date +%s) - start))
  cap=$(((total - reserve - elapsed) / (n - i)))
  [ "$cap" -lt 5 ] && cap=5
  spec=$hub/${k}_milo.json
  tag=$k-$t-$s
  t0=$(date +%s.%N)
  case $t in
    ktune)
      "$bin" --db "$work/ktune.db" tune "$spec" --budget "$budget" --time "$cap" --seed "$s" \
        --cold --no-cache --out "$work/$tag" --json >"$work/$tag.json" 2>"$work/$tag.err"
      file=$work/$tag.json ;;
    kt_ga | kt_default)
      strategy=genetic_algorithm
      [ "$t" = kt_default ] && strategy=brute_force  # what tune_kernel runs with no strategy
      (cd "$work" && timeout -s INT -k 5 "$cap" "$work/kt-venv/bin/python" "$here/kt_run.py" \
        "$spec" "$strategy" "$s" "$budget" "$work/$tag.cache.json" >"$work/$tag.out" 2>&1)
      file=$work/$tag.cache.json ;;
  esac
  wall=$(python3 -c "import time; print(f'{time.time() - $t0:.1f}')")
  line=$(score "$k" "$t" "$s" "$wall" "$file" "$t0")
  echo "$line" >>"$out/runs.jsonl"
  python3 -c "
import json, sys
r = json.loads(sys.argv[1])
f = lambda x: f\"{x['evaluations']} ev / {x['elapsed_s']:.1f} s\" if x else '-'
best = f\"{r['best_us']:.2f} us\" if r.get('best_us') else 'none'
print(f\"{r['kernel']:11s} {r['tuner']:10s} seed {r['seed']}: cap {sys.argv[2]} s, wall {r['wall_s']:.1f} s, \"
      f\"{r.get('evaluations', 0)} evaluations, best {best}, within 2 %: {f(r.get('to_2pct'))}, \"
      f\"within 1 %: {f(r.get('to_1pct'))}\" + (f\" ERROR {r['error']}\" if 'error' in r else ''))
" "$line" "$cap"
done

# The same yardstick for every tuner: each run's best configuration, measured again by ktune.
if [ "$remeasure" = 1 ]; then
  python3 - "$out/runs.jsonl" "$hub" "$bin" "$work" <<'PY'
import json, subprocess, sys
path, hub, bin_, work = sys.argv[1:5]
rows = [json.loads(l) for l in open(path)]
for r in rows:
    if not r.get("best_config"):
        continue
    config = ",".join(f"{k}={v}" for k, v in r["best_config"].items())
    p = subprocess.run([bin_, "--db", f"{work}/ktune.db", "bench", f"{hub}/{r['kernel']}_milo.json",
                        "--config", config, "--mode", "cold", "--json"],
                       capture_output=True, text=True, timeout=60)
    try:
        r["remeasured_us"] = json.loads(p.stdout)["median_ns"] / 1e3 or None
    except Exception:
        r["remeasured_us"] = None
    if r["remeasured_us"] is None:  # a best that does not run again counts for nothing
        r["not_reproduced"] = (p.stderr.strip().splitlines() or ["no time measured"])[-1][:200]
with open(path, "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
PY
fi

python3 - "$out/runs.jsonl" "$(($(date +%s) - start))" <<'PY' | tee "$out/summary.txt"
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"\n== summary ({len(rows)} runs, {sys.argv[2]} s in all); best known = the fastest "
      "re-measured best of any run on that kernel")
for kernel in dict.fromkeys(r["kernel"] for r in rows):
    rk = [r for r in rows if r["kernel"] == kernel]
    # Re-measured where the runs were measured again (a best that failed to run again is out).
    best = lambda r: r.get("remeasured_us") if "remeasured_us" in r else r.get("best_us")
    yard = [best(r) for r in rk]
    known = min((y for y in yard if y), default=None)
    print(f"{kernel}: best known {known:.2f} us" if known else f"{kernel}: nothing ran")
    for tuner in dict.fromkeys(r["tuner"] for r in rk):
        rt = [r for r in rk if r["tuner"] == tuner]
        ys = [best(r) for r in rt]
        near = sum(1 for y in ys if y and known and y <= known * 1.02)
        def mean(key, sub):
            v = [r[key][sub] for r in rt if r.get(key)]
            return f"{st.mean(v):.1f}" if v else "-"
        ok = [y for y in ys if y]
        print(f"  {tuner:10s} {len(rt)} runs: wall {st.mean(r['wall_s'] for r in rt):.1f} s, "
              f"{st.mean(r.get('evaluations', 0) for r in rt):.0f} evaluations, best "
              f"{min(ok):.2f}/{st.median(ok):.2f}/{max(ok):.2f} us (min/median/max, re-measured), "
              f"within 2 % of best known in {near} of {len(rt)}; to its own 2 %: "
              f"{mean('to_2pct', 'evaluations')} ev, {mean('to_2pct', 'elapsed_s')} s; 1 %: "
              f"{mean('to_1pct', 'evaluations')} ev, {mean('to_1pct', 'elapsed_s')} s"
              if ok else f"  {tuner:10s} {len(rt)} runs: nothing measured")
        for r in rt:
            if r.get("not_reproduced"):
                print(f"    seed {r['seed']}: its best ({r['best_us']:.2f} us) did not run again "
                      f"under ktune bench: {r['not_reproduced']}")
PY

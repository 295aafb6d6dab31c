#!/usr/bin/env bash
# The gate on a GPU, one logged run (issue 12):
#   scripts/gpu-gate.sh BUNDLE OUTDIR      (BUNDLE: a build, or .gpu-carry from gpu-bundle.sh)
# A suite of 8 benchmarks (copy, GEMV, l2_axpy, two hub kernels, a cuBLASLt GEMM) is
# recorded, then checked KTUNE_GATE_ROUNDS times (20) unchanged, then as many times with the copy
# kernel slowed by 1, 5 and 10 % (GATE_EXTRA_PCT, a define in kernels/copy/copy.cu, as a code
# change), then KTUNE_GATE_ENV_ROUNDS times (3) with unchanged code and another NVRTC option set
# (KTUNE_GATE_ENV_OPTION, default -G) standing in for a compiler upgrade. Prints a table last:
# alarms per case, how many checks flagged copy_f32, its measured change, the blame, and the time
# of one check. Every check's JSON stays in OUTDIR/checks/; the unchanged runs also become the
# noise fixture of the CPU acceptance test (OUTDIR/h100-noise.json, to commit over
# tests/fixtures/gate/h100-noise.json).
# KTUNE_GATE_CASES (default record,unchanged,planted-1,planted-5,planted-10,environment) runs some
# of the cases, so that the run can be split over commands of limited length: a later part reuses
# OUTDIR (its store and checks), skips the checks already there, and re-records the baseline first
# when it runs on another card than the record did (a lent machine may come back as another one).
# The table covers every check in OUTDIR. After the record and after each check, OUTDIR.tgz (or
# KTUNE_GATE_PACK) is rewritten with the store, the checks and the log (one file, whole at every
# moment): a command cut by its time limit still hands back every finished check. On a lent
# machine, which hands back a few files from $OUT, keep OUTDIR outside $OUT and point
# KTUNE_GATE_PACK into it.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=$(cd "${1:?usage: gpu-gate.sh BUNDLE OUTDIR}" && pwd)
. "$root/scripts/gpu-mount.sh"
mount_bundle "$bundle"
out=${2:?usage: gpu-gate.sh BUNDLE OUTDIR}
rounds=${KTUNE_GATE_ROUNDS:-20}; env_rounds=${KTUNE_GATE_ENV_ROUNDS:-3}
env_option=${KTUNE_GATE_ENV_OPTION:--G}
bin=$bundle/bin/ktune; [ -x "$bin" ] || bin=$bundle/src/cli/ktune
gemm=$bundle/bin/ktune_gate_cublaslt; [ -x "$gemm" ] || gemm=$bundle/benchmarks/gate/ktune_gate_cublaslt
hub=${KTUNE_HUB:-$root/.hub}
export KTUNE_HOME=${KTUNE_HOME:-$(mktemp -d /tmp/ktune-home.XXXXXX)}
cases=${KTUNE_GATE_CASES:-record,unchanged,planted-1,planted-5,planted-10,environment}
has() { [[ ",$cases," == *",$1,"* ]]; }
has record && rm -rf "$out/checks" "$out/code" "$out/gate.db" "$out/gate.log" "$out/check_time_s"
mkdir -p "$out/checks"; rm -rf "$out/code"
# The code under test: a copy of the built-in kernels whose copy spec gets the planted define.
cp -r "$root/kernels" "$out/code"; kernels=$out/code
. "$root/scripts/gpu-gate-benchmarks.sh"
db=$out/gate.db
# The gate's copy moves KTUNE_GATE_COPY_N floats (64 Mi: 256 MiB each way, five times L2, still
# bound by DRAM) instead of the shipped 256 Mi: filling and verifying 1 GiB buffers took 6 of a
# check's 7 s for the copy, and the check is run 80 times.
copy_n=${KTUNE_GATE_COPY_N:-67108864}
plant() {  # PERCENT: 0 restores the shipped copy spec (at the gate's size)
  python3 - "$root/kernels/copy/copy.json" "$kernels/copy/copy.json" "$1" "$copy_n" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
k = spec["KernelSpecification"]
k["ProblemSize"] = [int(sys.argv[4])]
next(a for a in k["Arguments"] if a["Name"] == "n")["FillValue"] = int(sys.argv[4])
if int(sys.argv[3]) > 0:
    spec["KernelSpecification"].setdefault("CompilerOptions", []).append(f"-DGATE_EXTRA_PCT={sys.argv[3]}")
json.dump(spec, open(sys.argv[2], "w"), indent=1)
PY
}
gate() { "$bin" --db "$db" gate "$@"; }
pack_to=${KTUNE_GATE_PACK:-$out.tgz}
pack() {  # the archive, replaced whole (the store's WAL checkpointed into it first)
  python3 -c "import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute('PRAGMA wal_checkpoint(TRUNCATE)')" "$db" 2>/dev/null
  tar czf "$pack_to.part" -C "$out" --exclude=code . 2>/dev/null && mv "$pack_to.part" "$pack_to"
}
# The CPU acceptance test's noise fixture (tests/fixtures/gate/h100-noise.json), from the runs of
# the unchanged code this run stored: each baseline and candidate run is one process's samples.
noise_fixture() {
  python3 "$root/scripts/gate-noise-fixture.py" "$db" "$out/h100-noise.json" \
    "$(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader | head -n 1)"
}
{
  echo "# ktune gate on a GPU, $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
  write_suite "$out/suite.toml"
  write_suite "$out/suite-env.toml" "$env_option"
  plant 0
  card=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | head -n 1)
  if ! has record && [ -f "$out/card" ] && [ "$(cat "$out/card")" != "$card" ]; then
    echo "this part runs on $card, the baseline was recorded on $(cat "$out/card"): recording it again here"
    cases="$cases,record"
  fi
  if has record; then
    t0=$(date +%s)
    gate record "$out/suite.toml" --commit base --label main || { echo "record failed"; exit 1; }
    echo "record: $(( $(date +%s) - t0 )) s"
    echo "$card" >"$out/card"
    pack
  fi
  check_time=""
  run_case() {  # NAME SUITE COMMIT ROUNDS
    local name=$1 suite=$2 commit=$3 n=$4 i rc t
    for i in $(seq 1 "$n"); do
      [ -s "$out/checks/$name.$i.json" ] && continue  # done by an earlier part
      t=$(date +%s.%N)
      gate check "$suite" --commit "$commit" --against main --json \
        >"$out/checks/$name.$i.json" 2>"$out/checks/$name.$i.err"
      rc=$?
      echo "$name $i rc=$rc $(python3 -c "import sys,time; print(f'{time.time()-float(sys.argv[1]):.1f} s')" "$t")"
      [ -z "$check_time" ] && check_time=$(python3 -c "import sys,time; print(f'{time.time()-float(sys.argv[1]):.0f}')" "$t")
      [ "$rc" -gt 1 ] && tail -n 3 "$out/checks/$name.$i.err"
      pack
    done
  }
  if has unchanged; then
    run_case unchanged "$out/suite.toml" base "$rounds"
    echo "$check_time" >"$out/check_time_s"
    noise_fixture
  fi
  for p in 1 5 10; do
    has "planted-$p" && { plant "$p"; run_case "planted-$p" "$out/suite.toml" "planted-$p" "$rounds"; }
  done
  plant 0
  has environment && run_case environment "$out/suite-env.toml" base "$env_rounds"
} 2>&1 | tee -a "$out/gate.log"

python3 - "$out" "$rounds" "$env_rounds" "$env_option" <<'PY' | tee "$out/summary.txt"
import glob, json, statistics, sys
out, rounds, env_rounds, env_option = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def load(case):
    res = []
    for f in sorted(glob.glob(f"{out}/checks/{case}.*.json")):
        try: res.append(json.load(open(f)))
        except Exception: res.append(None)
    return res
rows = []
for case, want in [("unchanged", "no alarm"), ("planted-1", "gate never fails"),
                   ("planted-5", ">= 19 of 20 caught"), ("planted-10", ">= 19 of 20 caught"),
                   ("environment", "blamed on the environment")]:
    checks = load(case)
    ok = [c for c in checks if c]
    failing = sum(1 for c in ok if not c["passed"])
    copy = [next(b for b in c["benchmarks"] if b["name"] == "copy_f32") for c in ok]
    slower = sum(1 for b in copy if b["verdict"] == "slower")
    change = statistics.median(b.get("change", 0) for b in copy) if copy else float("nan")
    blames = sorted({b.get("blame") or "-" for c in ok for b in c["benchmarks"] if b["verdict"] == "slower"})
    other = sum(1 for c in ok for b in c["benchmarks"] if b["verdict"] == "slower" and b["name"] not in ("copy_f32", "copy_f32_hot"))
    rows.append((case, len(checks), len(checks) - len(ok), failing, slower, other, 100 * change, ",".join(blames), want))
print(f"\n{'case':<12} {'checks':>6} {'errors':>6} {'failing':>7} {'copy slower':>11} {'others slower':>13} {'copy p50':>9}  {'blame':<24} want")
for r in rows:
    print(f"{r[0]:<12} {r[1]:>6} {r[2]:>6} {r[3]:>7} {r[4]:>11} {r[5]:>13} {r[6]:>+8.2f}%  {r[7]:<24} {r[8]}")
try: t = open(f"{out}/check_time_s").read().strip()
except OSError: t = "?"
print(f"one check of 8 benchmarks: {t} s (target <= 120 s for 10); environment case: NVRTC option {env_option}")
# Where a check's time goes: each benchmark's mean measure_s over every check read.
spent = {}
for case in ("unchanged", "planted-1", "planted-5", "planted-10", "environment"):
    for c in load(case):
        for b in (c or {}).get("benchmarks", []):
            spent.setdefault(b["name"], []).append(b.get("measure_s", 0))
if spent:
    print("seconds per check: " + ", ".join(f"{n} {statistics.mean(v):.1f}" for n, v in spent.items()))
PY

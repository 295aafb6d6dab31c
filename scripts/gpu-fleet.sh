#!/usr/bin/env bash
# The fleet's GPU run (issue 14), on a multi-GPU machine from the repository root:
#   scripts/gpu-fleet.sh BUNDLE OUTDIR NGPUS
# BUNDLE: a build tree with src/cli/ktune (.gpu-carry from scripts/gpu-bundle.sh, or build/).
# With the embedded SQLite store (the GPU machines have no PostgreSQL server), three phases over
# the same queue of tuning jobs (the built-in GEMV and copy specs at several shapes, small budgets):
#   1. one worker alone drains it (timed);
#   2. one worker per GPU drains it (timed): the speedup target is >= 0.9 x NGPUS;
#   3. one worker per GPU again, and the one on GPU 0 is killed with SIGKILL mid-job: another
#      worker takes the job when its lease runs out and resumes the session.
# After each phase: every job done, and every winner in the cache exactly once. A table is printed
# last. FLEET_BUDGET (default 10 evaluations per job) and FLEET_LEASE_S (default 15) tune the run.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=$(cd "$1" && pwd)
out=$2
ngpus=${3:-$(nvidia-smi -L | wc -l)}
budget=${FLEET_BUDGET:-10}
lease=${FLEET_LEASE_S:-15}
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin=$bundle/src/cli/ktune
export KTUNE_HOME=$(mktemp -d /tmp/ktune-fleet-home.XXXXXX)  # fresh kernel cache and store
specs=$out/specs
mkdir -p "$specs"

# The built-in specs at other problem sizes: ProblemSize and the size scalars change together.
python3 - "$root/kernels" "$specs" <<'PY'
import json, shutil, sys, os
src, dst = sys.argv[1], sys.argv[2]
def write(kind, sizes, scalars):
    j = json.load(open(os.path.join(src, kind, kind + ".json")))
    ks = j["KernelSpecification"]
    ks["ProblemSize"] = list(sizes)
    for a in ks["Arguments"]:
        if a["Name"] in scalars: a["FillValue"] = scalars[a["Name"]]
    shutil.copy(os.path.join(src, kind, ks["KernelFile"]), dst)
    name = os.path.join(dst, "%s_%s.json" % (kind, "x".join(map(str, sizes))))
    json.dump(j, open(name, "w"), indent=1)
for n in (1024, 2048, 4096, 7168, 8192, 16384):
    for k in (4096, 16384):
        write("gemv", (n, k), {"n": n, "k": k})
for e in (20, 22, 24, 25, 26, 28):
    write("copy", (1 << e,), {"n": 1 << e})
PY
mapfile -t spec_files < <(ls "$specs"/*.json)
echo "fleet GPU run: ${#spec_files[@]} jobs, budget $budget, $ngpus GPU(s), lease ${lease}s, $(date -u +%FT%TZ)" | tee "$out/fleet.txt"
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm --format=csv | tee -a "$out/fleet.txt"

queue() {  # DB: queue every spec
  for s in "${spec_files[@]}"; do "$bin" --db "$1" queue add "$s" --budget "$budget" >/dev/null || return 1; done
}
check() {  # DB PHASE: every job done, every winner once; prints "ok" or what is wrong
  python3 - "$1" "$2" "$bin" <<'PY'
import json, subprocess, sys, collections
db, phase, bin = sys.argv[1:4]
jobs = json.loads(subprocess.check_output([bin, "--db", db, "queue", "ls", "--json"]))["jobs"]
entries = json.loads(subprocess.check_output([bin, "--db", db, "cache", "ls", "--json"]))
entries = entries["entries"] if isinstance(entries, dict) else entries
per_key = collections.Counter((e.get("key", e)["op"], e.get("key", e)["bucket"]) for e in entries)
bad = [j["id"] + " " + j["state"] + " " + j["error"] for j in jobs if j["state"] != "done"]
bad += ["%s/%s in the cache %d times" % (j["op"], j["bucket"], per_key[(j["op"], j["bucket"])])
        for j in jobs if per_key[(j["op"], j["bucket"])] != 1]
if len(entries) != len(jobs): bad.append("%d cache entries for %d jobs" % (len(entries), len(jobs)))
retaken = [j["id"] + " attempt " + str(j["attempt"]) + " by " + j["worker"] for j in jobs if j["attempt"] > 1]
print("%s: %d jobs, %d entries, %s%s" % (phase, len(jobs), len(entries), "ok" if not bad else "PROBLEMS: " + "; ".join(bad),
      (", retaken: " + ", ".join(retaken)) if retaken else ""))
PY
}
workers() {  # DB WORKDIR: one worker per GPU in the background; pids in $pids
  pids=()
  for ((d = 0; d < ngpus; d++)); do
    "$bin" --db "$1" --device "$d" worker --drain --lease "$lease" --poll 0.2 --work-dir "$2" \
      --name "gpu$d" >"$out/$(basename "$1" .db)-gpu$d.log" 2>&1 &
    pids+=($!)
  done
}

# Each phase starts with an empty compiled-kernel cache, so a later phase does not reuse the
# binaries an earlier one compiled (the searches are seeded alike and compile the same candidates).
elapsed() { awk -v now="$(date +%s.%N)" -v start="$start" 'BEGIN { printf "%.2f", now - start }'; }
fresh_cache() { export XDG_CACHE_HOME=$(mktemp -d /tmp/ktune-fleet-cache.XXXXXX); }

# 1. one worker
fresh_cache
queue "$out/one.db" || exit 1
start=$(date +%s.%N)
"$bin" --db "$out/one.db" --device 0 worker --drain --lease "$lease" --work-dir "$out/work-one" \
  --name gpu0 >"$out/one-gpu0.log" 2>&1
t_one=$(elapsed)
c_one=$(check "$out/one.db" "one worker")

# 2. one worker per GPU
fresh_cache
queue "$out/all.db" || exit 1
start=$(date +%s.%N)
workers "$out/all.db" "$out/work-all"
wait "${pids[@]}"
t_all=$(elapsed)
c_all=$(check "$out/all.db" "$ngpus workers")

# 3. one worker per GPU, the one on GPU 0 killed mid-job
fresh_cache
queue "$out/kill.db" || exit 1
start=$(date +%s.%N)
workers "$out/kill.db" "$out/work-kill"
killed=""
for _ in $(seq 1 1200); do
  # The heartbeat reports evaluations; kill once gpu0's job has some done (and give up when the
  # workers are gone before that happened).
  kill -0 "${pids[0]}" 2>/dev/null || break
  if "$bin" --db "$out/kill.db" queue ls --json | python3 -c '
import json, sys
jobs = json.load(sys.stdin)["jobs"]
sys.exit(0 if any(j["worker"] == "gpu0" and j["state"] == "running" and j["evaluations"] >= 1 for j in jobs) else 1)'; then
    kill -9 "${pids[0]}" && killed="gpu0 (pid ${pids[0]}) killed with SIGKILL mid-job at $(elapsed) s"
    break
  fi
  sleep 0.25
done
[ "$ngpus" = 1 ] && [ -n "$killed" ] && { "$bin" --db "$out/kill.db" --device 0 worker --drain \
  --lease "$lease" --poll 0.2 --work-dir "$out/work-kill" --name gpu0-again >"$out/kill-gpu0-again.log" 2>&1 & pids+=($!); }
wait "${pids[@]}" 2>/dev/null
t_kill=$(elapsed)
c_kill=$(check "$out/kill.db" "$ngpus workers, one killed")

read -r speedup target verdict < <(awk -v one="$t_one" -v all="$t_all" -v n="$ngpus" \
  'BEGIN { s = one / all; t = 0.9 * n; printf "%.2f %.2f %s\n", s, t, (s >= t ? "PASS" : "FAIL") }')
{
  echo
  echo "== fleet summary"
  printf '%-34s %10s  %s\n' "phase" "wall_s" "check"
  printf '%-34s %10.1f  %s\n' "1 worker (GPU 0)" "$t_one" "$c_one"
  printf '%-34s %10.1f  %s\n' "$ngpus workers (one per GPU)" "$t_all" "$c_all"
  printf '%-34s %10.1f  %s\n' "$ngpus workers, gpu0 killed" "$t_kill" "$c_kill"
  echo "kill: ${killed:-NOT DONE (gpu0 finished before its heartbeat reported an evaluation)}"
  echo "speedup $speedup x with $ngpus GPUs; target >= $target: $verdict"
} | tee -a "$out/fleet.txt"

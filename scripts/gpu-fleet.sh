#!/usr/bin/env bash
# The fleet's GPU run, on a machine with one or more GPUs, from the repository root:
#   scripts/gpu-fleet.sh BUNDLE OUTDIR [NGPUS]
# BUNDLE: a build tree with src/cli/ktune (.gpu-carry from scripts/gpu-bundle.sh, or build/).
# With the embedded SQLite store (the GPU machines have no PostgreSQL server), two job sets:
#   short:   the built-in GEMV and copy specs at several shapes and cuBLASLt library jobs (GEMM
#            problems in four layouts and two types), FLEET_BUDGET evaluations each (default 10),
#            max(32, FLEET_JOBS_PER_GPU x NGPUS) jobs where it has that many;
#   compile: the hub's convolution spec (FLEET_HUB, default .hub/) at 2 x NGPUS filter sizes,
#            FLEET_CONV_BUDGET evaluations each (default 12): NVRTC keeps every core busy.
# FLEET_SETS (default "short compile") runs only the sets named.
# and six phases, each on a fresh queue and compiled-kernel cache:
#   1. short, one worker alone;  2. short, one worker per GPU (target: >= 0.9 x NGPUS as fast);
#   3. short, one worker per GPU, the one on GPU 0 killed with SIGKILL mid-job: another worker
#      takes the job when its lease runs out and resumes its session (no evaluation lost or
#      repeated);
#   4. compile, one worker alone, compiling on every core (--compile-threads $(nproc));
#   5. compile, one worker per GPU, each on its default share of the cores (cores / GPUs);
#   6. compile, one worker per GPU, each on every core (what sharing saves).
# After each phase: every job done, every winner in the cache exactly once. Then where each
# phase's worker time went (start-up before the first claim, jobs, waiting for the last job),
# read from the workers' timestamped logs. A table is printed last.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=$(cd "$1" && pwd)
out=$2
ngpus=${3:-$(nvidia-smi -L | wc -l)}
budget=${FLEET_BUDGET:-10}
conv_budget=${FLEET_CONV_BUDGET:-12}
lease=${FLEET_LEASE_S:-15}
hub=${FLEET_HUB:-$root/.hub}
sets=${FLEET_SETS:-short compile}  # which job sets to run
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin=$bundle/src/cli/ktune
export KTUNE_HOME=$(mktemp -d /tmp/ktune-fleet-home.XXXXXX)  # fresh kernel cache and store
specs=$out/specs
mkdir -p "$specs/short" "$specs/compile"

# Specs at other problem sizes: ProblemSize and the size scalars change together.
python3 - "$root/kernels" "$hub" "$specs" "$ngpus" <<'PY'
import json, shutil, sys, os
src, hub, dst, ngpus = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def write(folder, spec_path, sizes, scalars, tag):
    j = json.load(open(spec_path))
    ks = j["KernelSpecification"]
    ks["ProblemSize"] = list(sizes)
    for a in ks["Arguments"]:
        if a["Name"] in scalars: a["FillValue"] = scalars[a["Name"]]
    shutil.copy(os.path.join(os.path.dirname(spec_path), ks["KernelFile"]), os.path.join(dst, folder))
    json.dump(j, open(os.path.join(dst, folder, "%s_%s.json" % (tag, "x".join(map(str, sizes)))), "w"), indent=1)
for n in (1024, 2048, 4096, 7168, 8192, 16384):
    for k in (4096, 16384):
        write("short", os.path.join(src, "gemv", "gemv.json"), (n, k), {"n": n, "k": k}, "gemv")
# Copies up to 2^26 elements: a 2^28 copy took 60 s of budget-10 tuning (host fill and check of
# 1 GiB per candidate), longer than a worker's share of the whole set on four GPUs, and a queue
# drains no faster than its longest job.
for e in (20, 22, 23, 24, 25, 26):
    write("short", os.path.join(src, "copy", "copy.json"), (1 << e,), {"n": 1 << e}, "copy")
conv = os.path.join(hub, "convolution_milo.json")
if os.path.exists(conv):
    # The kernel fixes its image at 4096 x 4096 (a smaller ProblemSize would read past its
    # buffers), so the jobs differ in their filter size, a compile-time constant: every job
    # compiles candidates of its own. ProblemSize grows by 128 columns a job, so each job has a
    # bucket (and a cache entry) of its own.
    for i, f in enumerate([15, 13, 11, 9, 7, 5, 17, 3, 15, 13, 11, 9, 7, 5, 17, 3][: max(2, 2 * ngpus)]):
        j = json.load(open(conv))
        for p in j["ConfigurationSpace"]["TuningParameters"]:
            if p["Name"] in ("filter_height", "filter_width"):
                p["Values"], p["Default"] = "[%d]" % f, f
        tmp = os.path.join(hub, ".fleet-conv.json")  # beside its kernel file
        json.dump(j, open(tmp, "w"))
        write("compile", tmp, (4096, 4096 + 128 * i), {}, "convolution_f%d" % f)
        os.remove(tmp)
PY
mapfile -t short_specs < <(ls "$specs"/short/*.json)
mapfile -t compile_specs < <(ls "$specs"/compile/*.json 2>/dev/null)
# cuBLASLt library jobs: GEMM problems as PyTorch programs run them.
gemm_jobs=()
for dt in bf16 f16; do
  for op in gemm_tn gemm_nn gemm_nt gemm_tn_bias; do
    for s in m=4096,n=4096,k=1024 m=2048,n=8192,k=2048 m=8192,n=1024,k=4096 m=1024,n=1024,k=8192; do
      gemm_jobs+=("$op $dt $s")
    done
  done
done
# At least 32 jobs and FLEET_JOBS_PER_GPU (default 8) per GPU, so the last job's length is a small
# part of a worker's time.
per_gpu=${FLEET_JOBS_PER_GPU:-8}
want=$((per_gpu * ngpus > 32 ? per_gpu * ngpus : 32))
while [ $((${#short_specs[@]} + ${#gemm_jobs[@]})) -gt "$want" ] && [ "${#gemm_jobs[@]}" -gt 0 ]; do
  unset 'gemm_jobs[-1]'
done
n_short=$((${#short_specs[@]} + ${#gemm_jobs[@]}))
echo "fleet GPU run: $ngpus GPU(s), $(nproc) CPU threads, lease ${lease}s, $(date -u +%FT%TZ)" | tee "$out/fleet.txt"
echo "short set: $n_short jobs (${#short_specs[@]} spec jobs, ${#gemm_jobs[@]} cuBLASLt jobs), budget $budget; compile set: ${#compile_specs[@]} convolution jobs, budget $conv_budget" | tee -a "$out/fleet.txt"
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee -a "$out/fleet.txt"
"$bin" --version | tee -a "$out/fleet.txt"

queue() {  # DB SET: queue the set's jobs
  if [ "$2" = short ]; then
    for s in "${short_specs[@]}"; do "$bin" --db "$1" queue add "$s" --budget "$budget" >/dev/null || return 1; done
    for g in "${gemm_jobs[@]}"; do
      read -r op dt shape <<<"$g"
      "$bin" --db "$1" queue add --library cublaslt --op "$op" --dtype "$dt" --shape "$shape" --budget "$budget" >/dev/null || return 1
    done
  else
    for s in "${compile_specs[@]}"; do "$bin" --db "$1" queue add "$s" --budget "$conv_budget" >/dev/null || return 1; done
  fi
}
check() {  # DB PHASE WORKDIR: every job done, every winner once, a retaken job's evaluations whole
  python3 - "$1" "$2" "$bin" "$3" <<'PY'
import json, subprocess, sys, collections, os
db, phase, bin, work = sys.argv[1:5]
jobs = json.loads(subprocess.check_output([bin, "--db", db, "queue", "ls", "--json"]))["jobs"]
entries = json.loads(subprocess.check_output([bin, "--db", db, "cache", "ls", "--json"]))
entries = entries["entries"] if isinstance(entries, dict) else entries
per_key = collections.Counter((e.get("key", e)["op"], e.get("key", e)["dtype"], json.dumps(e.get("key", e)["bucket"])) for e in entries)
key = lambda j: (j["op"], j["dtype"], json.dumps(j["bucket"]))
bad = [j["id"] + " " + j["state"] + " " + j["error"] for j in jobs if j["state"] != "done"]
bad += ["%s/%s in the cache %d times" % (j["op"], j["bucket"], per_key[key(j)]) for j in jobs if per_key[key(j)] != 1]
if len(entries) != len(jobs): bad.append("%d cache entries for %d jobs" % (len(entries), len(jobs)))
retaken = []
for j in jobs:
    if j["attempt"] <= 1: continue
    # The resumed session's results: every configuration measured once, as many as the job says.
    path = os.path.join(work, j["id"], "results.jsonl")
    configs = [json.dumps(json.loads(l)["config"], sort_keys=True) for l in open(path) if l.strip()] if os.path.exists(path) else []
    dup = len(configs) - len(set(configs))
    whole = "%d evaluations in its results, %d repeated, queue says %d" % (len(configs), dup, j["evaluations"])
    if dup or len(configs) != j["evaluations"]: bad.append(j["id"] + ": " + whole)
    retaken.append("%s attempt %d by %s (%s)" % (j["id"], j["attempt"], j["worker"], whole))
print("%s: %d jobs, %d entries, %s%s" % (phase, len(jobs), len(entries), "ok" if not bad else "PROBLEMS: " + "; ".join(bad),
      (", retaken: " + "; ".join(retaken)) if retaken else ""))
PY
}
where() {  # PHASE START_EPOCH END_EPOCH LOG...: where the workers' time went
  python3 - "$@" <<'PY'
import sys, re, datetime
phase, start, end, logs = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]
def t(line):
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})Z ", line)
    return datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc).timestamp() if m else None
startup = jobs = tail = gaps = 0.0; n = 0
for path in logs:
    claims, ends = [], []
    for line in open(path, errors="replace"):
        ts = t(line)
        if ts is None: continue
        if "claimed job" in line: claims.append(ts)
        elif re.search(r"job \S+ (done|failed)", line) or "gave back" in line or "lost the lease" in line: ends.append(ts)
    if not claims: continue
    n += 1
    startup += claims[0] - start
    jobs += sum(e - c for c, e in zip(claims, ends))
    gaps += sum(max(0, c2 - e1) for e1, c2 in zip(ends, claims[1:]))
    tail += end - (ends[-1] if ends else end)
total = n * (end - start)
if total > 0:
    print("%s: %d workers x %.1f s: start-up to first claim %.1f s (%.0f %%), in jobs %.1f s (%.0f %%), between jobs %.1f s (%.0f %%), after its last job %.1f s (%.0f %%)" % (
        phase, n, end - start, startup, 100 * startup / total, jobs, 100 * jobs / total, gaps, 100 * gaps / total, tail, 100 * tail / total))
PY
}
workers() {  # DB WORKDIR TAG [worker flags]: one worker per GPU in the background; pids in $pids
  local db=$1 wd=$2 tag=$3; shift 3
  pids=(); logs=()
  for ((d = 0; d < ngpus; d++)); do
    "$bin" --db "$db" --device "$d" worker --drain --lease "$lease" --poll 0.2 --work-dir "$wd" \
      --name "gpu$d" "$@" >"$out/$tag-gpu$d.log" 2>&1 &
    pids+=($!); logs+=("$out/$tag-gpu$d.log")
  done
}

now() { date +%s.%N; }
elapsed() { awk -v now="$(now)" -v start="$start" 'BEGIN { printf "%.2f", now - start }'; }
# A fresh KTUNE_HOME: its cache/ holds the compiled kernels (KTUNE_HOME wins over XDG_CACHE_HOME,
# so a fresh XDG_CACHE_HOME alone let a later phase reuse an earlier phase's binaries).
fresh_cache() { export KTUNE_HOME=$(mktemp -d /tmp/ktune-fleet-home.XXXXXX); }

t_one=0 t_all=0 t_kill=0 c_one="not run" c_all="" c_kill="" w_one="" w_all="" killed=""
if [[ " $sets " == *" short "* ]]; then
# 1. short set, one worker
fresh_cache
queue "$out/one.db" short || exit 1
start=$(now)
"$bin" --db "$out/one.db" --device 0 worker --drain --lease "$lease" --work-dir "$out/work-one" \
  --name gpu0 >"$out/one-gpu0.log" 2>&1
t_one=$(elapsed)
w_one=$(where "1 worker" "$start" "$(now)" "$out/one-gpu0.log")
c_one=$(check "$out/one.db" "one worker" "$out/work-one")

# 2. short set, one worker per GPU
fresh_cache
queue "$out/all.db" short || exit 1
start=$(now)
workers "$out/all.db" "$out/work-all" all
wait "${pids[@]}"
t_all=$(elapsed)
w_all=$(where "$ngpus workers" "$start" "$(now)" "${logs[@]}")
c_all=$(check "$out/all.db" "$ngpus workers" "$out/work-all")

# 3. short set, one worker per GPU, the one on GPU 0 killed mid-job
fresh_cache
queue "$out/kill.db" short || exit 1
start=$(now)
workers "$out/kill.db" "$out/work-kill" kill
killed=""
for _ in $(seq 1 1200); do
  # The heartbeat reports evaluations; kill once gpu0's job has some done (and give up when the
  # workers are gone before that happened).
  kill -0 "${pids[0]}" 2>/dev/null || break
  if "$bin" --db "$out/kill.db" queue ls --json | python3 -c '
import json, sys
jobs = json.load(sys.stdin)["jobs"]
sys.exit(0 if any(j["worker"] == "gpu0" and j["state"] == "running" and j["evaluations"] >= 2 for j in jobs) else 1)'; then
    kill -9 "${pids[0]}" && killed="gpu0 (pid ${pids[0]}) killed with SIGKILL mid-job at $(elapsed) s"
    break
  fi
  sleep 0.25
done
[ "$ngpus" = 1 ] && [ -n "$killed" ] && { "$bin" --db "$out/kill.db" --device 0 worker --drain \
  --lease "$lease" --poll 0.2 --work-dir "$out/work-kill" --name gpu0-again >"$out/kill-gpu0-again.log" 2>&1 & pids+=($!); }
wait "${pids[@]}" 2>/dev/null
t_kill=$(elapsed)
c_kill=$(check "$out/kill.db" "$ngpus workers, one killed" "$out/work-kill")
fi

# 4-5. the compile-bound set: one worker on every core, then one per GPU on its share
t_c1=0 t_cn=0 t_co=0 c_c1="no hub convolution spec (FLEET_HUB)" c_cn="" c_co="" w_c1="" w_cn=""
if [[ " $sets " == *" compile "* ]] && [ "${#compile_specs[@]}" -gt 0 ]; then
  fresh_cache
  queue "$out/conv-one.db" compile || exit 1
  start=$(now)
  "$bin" --db "$out/conv-one.db" --device 0 worker --drain --lease "$lease" \
    --work-dir "$out/work-conv-one" --name gpu0 --compile-threads "$(nproc)" >"$out/conv-one-gpu0.log" 2>&1
  t_c1=$(elapsed)
  w_c1=$(where "compile, 1 worker" "$start" "$(now)" "$out/conv-one-gpu0.log")
  c_c1=$(check "$out/conv-one.db" "compile, one worker" "$out/work-conv-one")
  fresh_cache
  queue "$out/conv-all.db" compile || exit 1
  start=$(now)
  workers "$out/conv-all.db" "$out/work-conv-all" conv-all
  wait "${pids[@]}"
  t_cn=$(elapsed)
  w_cn=$(where "compile, $ngpus workers" "$start" "$(now)" "${logs[@]}")
  c_cn=$(check "$out/conv-all.db" "compile, $ngpus workers" "$out/work-conv-all")
  # The same with every worker compiling on every core: what sharing the cores saves.
  fresh_cache
  queue "$out/conv-over.db" compile || exit 1
  start=$(now)
  workers "$out/conv-over.db" "$out/work-conv-over" conv-over --compile-threads "$(nproc)"
  wait "${pids[@]}"
  t_co=$(elapsed)
  c_co=$(check "$out/conv-over.db" "compile, $ngpus workers, every core each" "$out/work-conv-over")
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "n/a" }'; }
speedup=$(ratio "$t_one" "$t_all")
target=$(awk -v n="$ngpus" 'BEGIN { printf "%.2f", 0.9 * n }')
verdict=$(awk -v s="$speedup" -v t="$target" 'BEGIN { print (s + 0 >= t ? "PASS" : "FAIL") }')
{
  echo
  echo "== where the worker time went"
  for w in "$w_one" "$w_all" "$w_c1" "$w_cn"; do [ -n "$w" ] && echo "$w"; done
  echo
  echo "== fleet summary"
  printf '%-40s %10s  %s\n' "phase" "wall_s" "check"
  if [ -n "$c_all" ]; then
    printf '%-40s %10.1f  %s\n' "short, 1 worker (GPU 0)" "$t_one" "$c_one"
    printf '%-40s %10.1f  %s\n' "short, $ngpus workers (one per GPU)" "$t_all" "$c_all"
    printf '%-40s %10.1f  %s\n' "short, $ngpus workers, gpu0 killed" "$t_kill" "$c_kill"
  fi
  printf '%-40s %10.1f  %s\n' "compile, 1 worker, $(nproc) threads" "$t_c1" "$c_c1"
  [ -n "$c_cn" ] && printf '%-40s %10.1f  %s\n' "compile, $ngpus workers, cores/GPUs each" "$t_cn" "$c_cn"
  [ -n "$c_co" ] && printf '%-40s %10.1f  %s\n' "compile, $ngpus workers, every core each" "$t_co" "$c_co"
  if [ -n "$c_all" ]; then
    echo "kill: ${killed:-NOT DONE (gpu0 finished before its heartbeat reported two evaluations)}"
    echo "short set speedup $speedup x with $ngpus GPUs; target >= $target: $verdict"
  fi
  [ -n "$c_cn" ] && echo "compile-bound set speedup $(ratio "$t_c1" "$t_cn") x with $ngpus GPUs sharing $(nproc) CPU threads ($(ratio "$t_c1" "$t_co") x when each worker takes every core)"
} | tee -a "$out/fleet.txt"

exit 0

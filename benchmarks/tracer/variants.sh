#!/usr/bin/env bash
# Where the tracer's per-launch cost goes: tiny_loop plain and under `ktune profile` with each
# option and KTUNE_TRACE_EXPERIMENT switch on its own (interleaved, REPS times each), then
# torch_layer.py for a few of them. Prints one table row per variant: median µs per launch, added
# µs, median process wall and its ratio to plain, and the tracer's own timings (KTUNE_TRACE_DEBUG).
# Usage: benchmarks/tracer/variants.sh BUILD_DIR OUT_DIR   (builds nothing but tiny_loop, with nvcc)
set -uo pipefail
build=$(cd "${1:?build dir}" && pwd)
out=$(mkdir -p "${2:?output dir}" && cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
ktune="$build/src/cli/ktune"
log="$out/variants.log"
n=${TINY_N:-20000}
reps=${REPS:-5}
torch_reps=${TORCH_REPS:-2}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
python=${PYTHON:-python3}
: >"$log"
say() { echo "$*" | tee -a "$log"; }
calc() { awk "BEGIN { print $* }"; }
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | tail -n1; }
med() { echo "$1" | tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

"$nvcc" -O2 -o "$out/tiny_loop" "$here/tiny_loop.cu" >>"$log" 2>&1 || { say "FAIL: nvcc tiny_loop"; exit 1; }
say "tracer variants $(date -u +%FT%TZ) $("$ktune" --version)"
say "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
# What a CPU timestamp costs here (CUPTI stamps API records with clock_gettime(CLOCK_REALTIME)).
cat >"$out/clockcost.cpp" <<'CPP'
#include <time.h>
#include <cstdio>
int main() {
  const clockid_t ids[] = {CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW};
  const char* names[] = {"REALTIME", "MONOTONIC", "MONOTONIC_RAW"};
  for (int c = 0; c < 3; ++c) {
    timespec a, b, t;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < 1000000; ++i) clock_gettime(ids[c], &t);
    clock_gettime(CLOCK_MONOTONIC, &b);
    std::printf("clock_gettime(%s) %.1f ns\n", names[c], ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e6);
  }
}
CPP
"${CXX:-c++}" -O2 -o "$out/clockcost" "$out/clockcost.cpp" >>"$log" 2>&1 && "$out/clockcost" | tee -a "$log"
t0=$(date +%s.%N); "$ktune" --version >/dev/null; say "ktune --version: $(calc "$(date +%s.%N) - $t0") s"
t0=$(date +%s.%N); "$ktune" profile -o "$out/none.ktrace" -- true 2>/dev/null; say "ktune profile -- true: $(calc "$(date +%s.%N) - $t0") s"

# name|KTUNE_TRACE_MODE|extra environment (space-separated NAME=VALUE). KTUNE_TRACE_EXPERIMENT
# also takes cupti_zero (CUPTI zeroes each buffer on the requesting thread), cupti_flush (CUPTI's
# own flush heuristics), shared_buffers (no per-thread buffers), pinned (timestamps in pinned host
# memory), no_subscribe, all_sync: none helped on the H100 (logs/2026-11-21-h100-tracer.md).
variants=(
  "plain||"
  "inject-only|kernels|INJECT_ONLY=1"
  "kernels|kernels|"
  "kernels+latency|kernels|KTUNE_TRACE_LATENCY=1"
  "default|default|"
  "default-driver|default|KTUNE_TRACE_DRIVER_API=0"
  "default+sync|default|KTUNE_TRACE_SYNC=1"
  "default+latency|default|KTUNE_TRACE_LATENCY=1"
  "default+overhead|default|KTUNE_TRACE_OVERHEAD=1"
  "default+all|default|KTUNE_TRACE_SYNC=1 KTUNE_TRACE_LATENCY=1 KTUNE_TRACE_OVERHEAD=1"
)
torch_variants=${TORCH_VARIANTS:-"plain kernels default default-driver"}

# run_variant SPEC CMD...: runs CMD as the variant says; sets $stdout and $wall.
run_variant() {
  local spec=$1; shift
  local name mode extra
  IFS='|' read -r name mode extra <<<"$spec"
  local -a envs=() pre=()
  for kv in $extra; do envs+=("$kv"); done
  if [ "$name" = inject-only ]; then
    # The tracer injected straight through CUDA_INJECTION64_PATH: no ktune profile process.
    pre=(env KTUNE_TRACE_MODE=kernels KTUNE_TRACE_OUTPUT="$out/inject.ktrace" KTUNE_TRACE_DEBUG=1
      CUDA_INJECTION64_PATH="$build/src/cli/libktune_tracer.so")
  elif [ -n "$mode" ]; then
    pre=(env "${envs[@]}" KTUNE_TRACE_DEBUG=1 "$ktune" profile -o "$out/v-${name//+/_}-$kind.ktrace")
    [ "$mode" = kernels ] && pre+=(--kernels-only)
    pre+=(--)
  fi
  local t0 t1
  t0=$(date +%s.%N)
  stdout=$("${pre[@]}" "$@" 2>"$out/last.err")
  local rc=$?
  t1=$(date +%s.%N)
  wall=$(calc "$t1 - $t0")
  echo "[$name] rc=$rc wall_s=$wall $stdout" >>"$log"
  cat "$out/last.err" >>"$log"
  timings=$(grep -o 'timings: .*' "$out/last.err" | tail -n1)
}

declare -A us wl tm lus lms lwl
for r in $(seq "$reps"); do
  for spec in "${variants[@]}"; do
    name=${spec%%|*}
    kind=tiny run_variant "$spec" "$out/tiny_loop" "$n"
    us[$name]+="$(field "$stdout" tiny_us_per_launch) "
    wl[$name]+="$wall "
    tm[$name]=$timings
  done
done
for r in $(seq "$torch_reps"); do
  for spec in "${variants[@]}"; do
    name=${spec%%|*}
    [[ " $torch_variants " == *" $name "* ]] || continue
    kind=layer run_variant "$spec" "$python" "$here/torch_layer.py"
    lms[$name]+="$(field "$stdout" layer_ms_per_iter) "
    lus[$name]+="$(field "$stdout" tiny_us_per_launch) "
    lwl[$name]+="$wall "
  done
done

p=$(med "${us[plain]}"); pw=$(med "${wl[plain]}")
say "tiny_loop N=$n, median of $reps: variant | us/launch | added us | wall s | wall ratio | tracer timings"
for spec in "${variants[@]}"; do
  name=${spec%%|*}
  x=$(med "${us[$name]}"); w=$(med "${wl[$name]}")
  say "$(printf '%-22s %7.3f %+7.3f %7.3f x%.3f  %s' "$name" "$x" "$(calc "$x - $p")" "$w" "$(calc "$w / $pw")" "${tm[$name]}")"
done
lp=$(med "${lms[plain]}"); tp=$(med "${lus[plain]}"); lw=$(med "${lwl[plain]}")
say "torch_layer, median of $torch_reps: variant | layer ms/iter (%) | tiny added us | wall ratio"
for name in $torch_variants; do
  lx=$(med "${lms[$name]}"); tx=$(med "${lus[$name]}"); w=$(med "${lwl[$name]}")
  say "$(printf '%-22s %.4f (%+.2f %%) %+7.3f x%.3f' "$name" "$lx" "$(calc "($lx - $lp) / $lp * 100")" "$(calc "$tx - $tp")" "$(calc "$w / $lw")")"
done

# What each variant's trace holds (the options must change the records, not only the cost).
say "tiny_loop traces: variant | kernels | with queued>0 | api rows runtime/driver | overhead rows | dropped | median kernel ns, gap ns, api ns"
for spec in "${variants[@]}"; do
  name=${spec%%|*}
  f="$out/v-${name//+/_}-tiny.ktrace"
  [ -f "$f" ] || continue
  say "$(printf '%-22s ' "$name")$("$python" - "$f" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
q = lambda sql: db.execute(sql).fetchone()[0]
api = lambda kind: q("SELECT COUNT(*) FROM api_calls a JOIN strings s ON s.id=a.api_id WHERE s.value='%s'" % kind)
ks = db.execute("SELECT start_ns, end_ns FROM kernels ORDER BY start_ns").fetchall()
med = lambda v: sorted(v)[len(v) // 2] if v else 0
dur = med([e - s for s, e in ks]); gap = med([ks[i + 1][0] - ks[i][1] for i in range(len(ks) - 1)])
apins = med([e - s for s, e in db.execute("SELECT a.start_ns, a.end_ns FROM api_calls a JOIN strings s ON s.id=a.name_id WHERE s.value LIKE 'cudaLaunchKernel%'")])
print(q("SELECT COUNT(*) FROM kernels"), q("SELECT COUNT(*) FROM kernels WHERE queued_ns>0"),
      "%d/%d" % (api("runtime"), api("driver")), q("SELECT COUNT(*) FROM overheads"),
      q("SELECT COALESCE(SUM(count),0) FROM drops"), "%d %d %d" % (dur, gap, apins))
PY
)"
done

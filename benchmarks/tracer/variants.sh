#!/usr/bin/env bash
# Where the tracer's per-launch cost goes: tiny_loop plain and under `ktune profile` with each
# option and KTUNE_TRACE_EXPERIMENT switch on its own (interleaved, REPS times each), across
# processes and inside one (--ab: capture on/off in ABBA blocks), then torch_layer.py --ab for a
# few of them. Prints one table row per variant: median µs per launch, added µs across processes
# and inside one, median process wall and its ratio to plain, and the tracer's own timings
# (KTUNE_TRACE_DEBUG); then what the layer's traces show on the GPU side.
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
python=${PYTHON:-python3}
: >"$log"
say() { echo "$*" | tee -a "$log"; }
source "$here/lib.sh"

build_tiny_loop "$out" "$log" || { say "FAIL: nvcc tiny_loop"; exit 1; }
say "tracer variants $(date -u +%FT%TZ) $("$ktune" --version)"
setup_pinning
say "$cpus_note"
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
# memory), no_subscribe, all_sync: none helped on the H100 (logs/2026-11-21-h100-tracer.md); and
# no_runtime: no runtime-API records, to price them.
# "attached" runs under --range profiler and never opens the window: CUPTI attached, nothing on.
variants=(
  "plain||"
  "inject-only|kernels|INJECT_ONLY=1"
  "attached|default|KTUNE_TRACE_RANGE=profiler"
  "kernels|kernels|"
  "kernels+latency|kernels|KTUNE_TRACE_LATENCY=1"
  "default|default|"
  "default-driver|default|KTUNE_TRACE_DRIVER_API=0"
  "default-runtime|default|KTUNE_TRACE_EXPERIMENT=no_runtime"
  "default+memsets|default|KTUNE_TRACE_MEMSET=1"
  "default+sync|default|KTUNE_TRACE_SYNC=1"
  "default+latency|default|KTUNE_TRACE_LATENCY=1"
  "default+overhead|default|KTUNE_TRACE_OVERHEAD=1"
  "full|default|KTUNE_TRACE_MODE=full"
)
ab_reps=${AB_REPS:-3}
ab_pairs=${AB_PAIRS:-40}
# torch_layer.py --ab for these (layer % and torch tiny µs inside one process).
torch_variants=${TORCH_VARIANTS:-"plain kernels default default-driver default-runtime default+memsets full"}
torch_pairs=${TORCH_AB_PAIRS:-20}
layer_iters=${LAYER_AB_ITERS:-20}

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
  stdout=$("${pin[@]}" "${pre[@]}" "$@" 2>"$out/last.err")
  local rc=$?
  t1=$(date +%s.%N)
  wall=$(calc "$t1 - $t0")
  echo "[$name] rc=$rc wall_s=$wall $stdout" >>"$log"
  cat "$out/last.err" >>"$log"
  timings=$(grep -o 'timings: .*' "$out/last.err" | tail -n1)
}

declare -A us wl tm ab abo lab ltab
for r in $(seq "$reps"); do
  for spec in "${variants[@]}"; do
    name=${spec%%|*}
    kind=tiny run_variant "$spec" "$out/tiny_loop" "$n"
    us[$name]+="$(field "$stdout" tiny_us_per_launch) "
    wl[$name]+="$wall "
    tm[$name]=$timings
  done
done
# Inside one process: capture on and off in ABBA blocks (--ab under --range profiler); plain
# runs the same programs untraced, where the difference must come out near zero.
# ab_variant SPEC CMD...: run_variant with the capture window set to cudaProfilerStart/Stop.
ab_variant() {
  local spec=$1; shift
  [ "${spec%%|*}" != plain ] && spec+=" KTUNE_TRACE_RANGE=profiler"
  run_variant "$spec" "$@"
}
for r in $(seq "$ab_reps"); do
  for spec in "${variants[@]}"; do
    name=${spec%%|*}
    [[ $name = inject-only || $name = attached ]] && continue
    kind=ab ab_variant "$spec" "$out/tiny_loop" 2000 --ab "$ab_pairs"
    ab[$name]+="$(field "$stdout" ab_added_us) "
    abo[$name]+="$(field "$stdout" ab_off_us) "
  done
done
for r in $(seq "$torch_reps"); do
  for spec in "${variants[@]}"; do
    name=${spec%%|*}
    [[ " $torch_variants " == *" $name "* ]] || continue
    kind=layer ab_variant "$spec" "$python" "$here/torch_layer.py" --iters 20 --tiny 2000 --ab "$torch_pairs" --ab-iters "$layer_iters"
    lab[$name]+="$(field "$stdout" ab_layer_added_pct) "
    ltab[$name]+="$(field "$stdout" ab_tiny_added_us) "
  done
done

p=$(med "${us[plain]}"); pw=$(med "${wl[plain]}")
say "tiny_loop N=$n, median of $reps: variant | us/launch | added us | A/B added us (median of $ab_reps runs) | wall s | wall ratio | tracer timings"
for spec in "${variants[@]}"; do
  name=${spec%%|*}
  x=$(med "${us[$name]}"); w=$(med "${wl[$name]}")
  say "$(printf '%-22s %7.3f %+7.3f %+7.3f %7.3f x%.3f  %s' "$name" "$x" "$(calc "$x - $p")" "$(med "${ab[$name]:-0}")" "$w" "$(calc "$w / $pw")" "${tm[$name]}")"
done
say "A/B per run: $(for spec in "${variants[@]}"; do name=${spec%%|*}; [ -n "${ab[$name]:-}" ] && printf '%s [%s] ' "$name" "${ab[$name]% }"; done)"
say "A/B, outside the window (us/launch): $(for spec in "${variants[@]}"; do name=${spec%%|*}; [ -n "${abo[$name]:-}" ] && printf '%s %s ' "$name" "$(med "${abo[$name]}")"; done)"
say "torch_layer.py --ab $torch_pairs --ab-iters $layer_iters, median of $torch_reps runs: variant | layer added % [runs] | torch tiny added us [runs]"
for name in $torch_variants; do
  say "$(printf '%-22s %+.3f %% [%s] %+.3f us [%s]' "$name" "$(med "${lab[$name]}")" "${lab[$name]% }" "$(med "${ltab[$name]}")" "${ltab[$name]% }")"
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

# GPU side of the layer (A/B traces: capture windows only): the three kernels with the most time,
# their mean duration, and the median gap between consecutive kernels on the GPU.
say "torch_layer traces: variant | kernels | median gap ns | top kernels: mean ns (count)"
for name in $torch_variants; do
  f="$out/v-${name//+/_}-layer.ktrace"
  [ -f "$f" ] || continue
  say "$(printf '%-22s ' "$name")$("$python" - "$f" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
ks = db.execute("SELECT start_ns, end_ns FROM kernels ORDER BY start_ns").fetchall()
gaps = sorted(ks[i + 1][0] - ks[i][1] for i in range(len(ks) - 1))
top = db.execute("SELECT substr(s.value, 1, 28), COUNT(*), AVG(k.end_ns - k.start_ns) FROM kernels k "
                 "JOIN strings s ON s.id=k.demangled_id GROUP BY k.demangled_id "
                 "ORDER BY SUM(k.end_ns - k.start_ns) DESC LIMIT 3").fetchall()
print(len(ks), gaps[len(gaps) // 2] if gaps else 0, " | ".join("%s %.0f (%d)" % (n, m, c) for n, c, m in top))
PY
)"
done

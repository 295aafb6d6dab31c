#!/usr/bin/env bash
# The tracer's cost on a launch-bound PyTorch block, measured inside one process, with and without
# --ops (benchmarks/tracer/inprocess.py describes the states and why). One GPU session, processes
# alternated INPROC_REPS times (default 2):
#   traced  ktune profile --range profiler --ops: capture and op ranges switched by the program;
#   plain   the same script with no tracer: its ratios are the method's noise floor (the switches
#           do nothing there but the op ranges), and its pristine blocks, against the traced
#           process's, price CUPTI's attachment (across processes, so with their noise).
# Launches per iteration come from the traced process's trace (kernels recorded / iterations run
# with the capture open), so the cost is also given per launch. The last line is the summary.
# Usage: benchmarks/tracer/inprocess.sh BUILD_DIR OUT_DIR   (needs torch with CUDA; ~1-2 min)
# INPROC_REPS, INPROC_ROUNDS (12), INPROC_ITERS (400), BENCH_CPUS as in run.sh.
set -uo pipefail
build=$(cd "${1:?build dir}" && pwd)
out=$(mkdir -p "${2:?output dir}" && cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
ktune="$build/src/cli/ktune"
log="$out/inprocess.log"
reps=${INPROC_REPS:-2}
args=(--rounds "${INPROC_ROUNDS:-12}" --iters "${INPROC_ITERS:-400}")
python=${PYTHON:-python3}
: >"$log"
rm -f "$out"/inprocess_*.ktrace
say() { echo "$*" | tee -a "$log"; }
source "$here/lib.sh"
say "tracer in-process cost $(date -u +%FT%TZ) $("$ktune" --version)"
"$python" -c "import torch; print('torch', torch.__version__, torch.version.cuda, torch.cuda.get_device_name())" >>"$log" 2>&1
setup_pinning
say "$cpus_note"
say "GPU clocks as found: $(nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader 2>/dev/null)"

traced=() plain=()
for r in $(seq "$reps"); do
  for mode in $(rot "$r" plain traced); do
    if [ "$mode" = traced ]; then
      trace=$out/inprocess_$r.ktrace
      run "traced/$r" "$ktune" profile --range profiler --ops -o "$trace" -- \
        "$python" "$here/inprocess.py" "${args[@]}" || { say "FAIL: traced run $r (see $log.err)"; continue; }
      kernels=$(sql "$trace" "select count(*) from kernels")
      launches=$(calc "$kernels / $(field "$stdout" captured_iters)")
      traced+=("$stdout launches_per_iter=$launches")
    else
      run "plain/$r" "$python" "$here/inprocess.py" "${args[@]}" || { say "FAIL: plain run $r (see $log.err)"; continue; }
      plain+=("$stdout")
    fi
  done
done
[ ${#traced[@]} -gt 0 ] && [ ${#plain[@]} -gt 0 ] || { say "FAIL: no complete pair of runs"; exit 1; }

pct() { calc "100 * ($1 - 1)"; }
say ""
say "per process: us per iteration (median of blocks) and, per round, the ratio to that round's 'off' block (median [q1, q3])"
for line in "${traced[@]}"; do
  say "  traced: pristine $(field "$line" pristine_us) off $(field "$line" off_us) trace $(field "$line" trace_us) trace+ops $(field "$line" trace_ops_us) ops $(field "$line" ops_us) us; trace/off $(field "$line" trace_vs_off) [$(field "$line" trace_vs_off_q1), $(field "$line" trace_vs_off_q3)], trace+ops/off $(field "$line" trace_ops_vs_off) [$(field "$line" trace_ops_vs_off_q1), $(field "$line" trace_ops_vs_off_q3)], off/pristine $(field "$line" off_vs_pristine); $(field "$line" launches_per_iter) launches per iteration"
done
for line in "${plain[@]}"; do
  say "  plain:  pristine $(field "$line" pristine_us) off $(field "$line" off_us) trace $(field "$line" trace_us) trace+ops $(field "$line" trace_ops_us) ops $(field "$line" ops_us) us; trace/off $(field "$line" trace_vs_off) [$(field "$line" trace_vs_off_q1), $(field "$line" trace_vs_off_q3)], trace+ops/off $(field "$line" trace_ops_vs_off) [$(field "$line" trace_ops_vs_off_q1), $(field "$line" trace_ops_vs_off_q3)]"
done

# Medians over processes of each process's in-process figure.
over() { local v=""; for line in "$@"; do v+="$(field "$line" "$key") "; done; med "$v"; }
key=trace_vs_off; t=$(over "${traced[@]}"); t_floor=$(over "${plain[@]}")
key=trace_vs_off_q1; t1=$(over "${traced[@]}"); key=trace_vs_off_q3; t3=$(over "${traced[@]}")
key=trace_ops_vs_off; o=$(over "${traced[@]}"); o_floor=$(over "${plain[@]}")
key=trace_ops_vs_off_q1; o1=$(over "${traced[@]}"); key=trace_ops_vs_off_q3; o3=$(over "${traced[@]}")
key=trace_vs_pristine; tp=$(over "${traced[@]}"); key=trace_ops_vs_pristine; op=$(over "${traced[@]}")
key=off_vs_pristine; linger=$(over "${traced[@]}")
key=off_us; off_us=$(over "${traced[@]}"); key=launches_per_iter; lpi=$(over "${traced[@]}")
key=pristine_us; p_traced=$(over "${traced[@]}"); p_plain=$(over "${plain[@]}")
per_launch=$(awk "BEGIN { printf \"%.2f\", ($t - 1) * $off_us / $lpi }")
per_launch_ops=$(awk "BEGIN { printf \"%.2f\", ($o - 1) * $off_us / $lpi }")
say ""
say "SUMMARY (launch-bound block, $lpi launches and $off_us us per iteration, $reps processes each): ktune profile +$(pct "$t") % per iteration in-process vs capture closed [$(pct "$t1"), $(pct "$t3")] ($per_launch us per launch), +$(pct "$tp") % vs never opened; with --ops +$(pct "$o") % [$(pct "$o1"), $(pct "$o3")] ($per_launch_ops us per launch), +$(pct "$op") % vs never opened; capture closed after use +$(pct "$linger") % over never opened; no-tracer control: trace/off $t_floor, trace+ops/off $o_floor (the ranges alone); CUPTI attached vs no tracer, across processes: +$(pct "$(calc "$p_traced / $p_plain")") %"

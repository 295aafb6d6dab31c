#!/usr/bin/env bash
# Tracer overhead, one GPU session: tiny_loop (exactly N tiny kernels) and torch_layer.py, each run
# plain, under `ktune profile` (default, --kernels-only) and, for the layer, under torch.profiler
# (--kineto). Two measurements of the same cost:
#  - across processes, as the issue defines it: modes rotated REPS times, medians, added µs per
#    launch, layer %, whole-process wall-time ratios (and the tracer injected without ktune);
#  - inside one process (A/B): traced with --range profiler, the program alternates blocks inside
#    and outside cudaProfilerStart/Stop in ABBA order; the median difference over pairs is what
#    the records cost on top of CUPTI being attached, free of process-to-process noise. Blocks
#    outside the window still pay for the attachment: "attached" (never opened) prices that.
# Every process runs on the same CPUs: the GPU's NUMA-local ones (BENCH_CPUS overrides, 'all' for
# none). Checks that traced kernel counts equal what tiny_loop launched, nothing dropped.
# Usage: benchmarks/tracer/run.sh BUILD_DIR OUT_DIR   (builds nothing but tiny_loop, with nvcc)
set -uo pipefail
build=$(cd "${1:?build dir}" && pwd)
out=$(mkdir -p "${2:?output dir}" && cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
ktune="$build/src/cli/ktune"
log="$out/tracer.log"
n=${TINY_N:-20000}
reps=${REPS:-7}
layer_reps=${LAYER_REPS:-5}
ab_reps=${AB_REPS:-3}
ab_pairs=${AB_PAIRS:-40}
python=${PYTHON:-python3}
: >"$log"
rm -f "$out"/*.ktrace  # a stale trace must not pass for this run's
say() { echo "$*" | tee -a "$log"; }
source "$here/lib.sh"

build_tiny_loop "$out" "$log" || { say "FAIL: nvcc tiny_loop"; exit 1; }
say "tracer benchmark $(date -u +%FT%TZ) $("$ktune" --version)"
"$ktune" info >>"$log" 2>&1

setup_pinning
say "$cpus_note"
say "GPU clocks as found: $(nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader 2>/dev/null)"

# prefix MODE NAME: the command prefix that runs a program in MODE, its trace named NAME.
prefix() {
  case $1 in
    plain|kineto) pre=() ;;
    inject) pre=(env KTUNE_TRACE_OUTPUT="$out/$2.ktrace" CUDA_INJECTION64_PATH="$build/src/cli/libktune_tracer.so") ;;
    default) pre=("$ktune" profile -o "$out/$2.ktrace" --) ;;
    kernels) pre=("$ktune" profile --kernels-only -o "$out/$2.ktrace" --) ;;
    # CUPTI attached and the tracer running, no record kind on (the window never opens): the floor.
    attached) pre=("$ktune" profile --range profiler -o "$out/$2.ktrace" --) ;;
  esac
}

declare -A tiny wall_t layer tinyp wall_l abt abl abtl abo ab_expected
for r in $(seq "$reps"); do
  for mode in $(rot "$r" plain default kernels inject attached); do
    prefix "$mode" "tiny_$mode"
    run "tiny/$mode/$r" "${pre[@]}" "$out/tiny_loop" "$n"
    tiny[$mode]+="$(field "$stdout" tiny_us_per_launch) "
    wall_t[$mode]+="$wall "
  done
done
for r in $(seq "$layer_reps"); do
  for mode in $(rot "$r" plain default kernels kineto); do
    prefix "$mode" "layer_$mode"
    extra=(); [ "$mode" = kineto ] && extra=(--kineto)
    run "layer/$mode/$r" "${pre[@]}" "$python" "$here/torch_layer.py" "${extra[@]}"
    layer[$mode]+="$(field "$stdout" layer_ms_per_iter) "
    tinyp[$mode]+="$(field "$stdout" tiny_us_per_launch) "
    wall_l[$mode]+="$wall "
  done
done
# In-process A/B: capture on and off inside one traced process. Plain runs the same program
# untraced: its "added" cost must come out near zero, or the method is not measuring the tracer.
# Full mode (every record kind) is priced here too.
for r in $(seq "$ab_reps"); do
  for mode in $(rot "$r" plain default kernels full); do
    pre=("$ktune" profile --range profiler -o "$out/ab_$mode.ktrace")
    case $mode in plain) pre=() ;; kernels) pre+=(--kernels-only --) ;; full) pre+=(--full --) ;; *) pre+=(--) ;; esac
    run "ab-tiny/$mode/$r" "${pre[@]}" "$out/tiny_loop" 2000 --ab "$ab_pairs"
    abt[$mode]+="$(field "$stdout" ab_added_us) "
    abo[$mode]+="$(field "$stdout" ab_off_us) "
    ab_expected[$mode]=$(field "$stdout" ab_traced_launches)
    pre=("${pre[@]/ab_$mode.ktrace/ab_layer_$mode.ktrace}")
    run "ab-layer/$mode/$r" "${pre[@]}" "$python" "$here/torch_layer.py" --iters 20 --tiny 2000 --ab 20
    abl[$mode]+="$(field "$stdout" ab_layer_added_pct) "
    abtl[$mode]+="$(field "$stdout" ab_tiny_added_us) "
  done
done
cat "$log.err" >>"$log"; rm -f "$log.err"

# Exactness: the trace holds every launched tiny kernel, nothing dropped.
count() {
  [ -f "$1" ] || { echo "no-trace"; return; }
  sql "$1" "SELECT COUNT(*) FROM kernels k JOIN strings s ON s.id=k.demangled_id WHERE s.value LIKE 'tiny_add%'"
}
drops() {
  [ -f "$1" ] || { echo "n/a"; return; }
  sql "$1" "SELECT COALESCE(SUM(count),0) FROM drops"
}
exact() {  # NAME TRACE EXPECTED
  local got d
  got=$(count "$2"); d=$(drops "$2")
  say "$1: kernels traced $got of $3 launched, dropped $d: $([ "$got" = "$3" ] && [ "$d" = 0 ] && echo PASS || echo FAIL)"
}
for m in default kernels inject; do exact "tiny_loop $m" "$out/tiny_$m.ktrace" $((n + 100)); done
for m in default kernels full; do exact "tiny_loop A/B $m (inside the capture windows only)" "$out/ab_$m.ktrace" "${ab_expected[$m]:-?}"; done
for m in default kernels; do
  [ -f "$out/layer_$m.ktrace" ] || { say "torch_layer $m: FAIL: no trace written"; continue; }
  say "torch_layer $m: kernels traced $(sql "$out/layer_$m.ktrace" 'SELECT COUNT(*) FROM kernels'), dropped $(drops "$out/layer_$m.ktrace")"
done

say "across processes ($reps tiny, $layer_reps layer runs per mode, rotated; medians):"
p=$(med "${tiny[plain]}")
for m in default kernels inject attached; do
  x=$(med "${tiny[$m]}")
  label=$m
  [ "$m" = inject ] && label="default, injected without ktune profile"
  [ "$m" = attached ] && label="CUPTI attached, nothing recorded"
  say "$(printf '  tiny_loop.cu  %-8s %.3f us/launch vs plain %.3f: %+.3f us per launch; process wall x%.3f' \
    "$label" "$x" "$p" "$(calc "$x - $p")" "$(calc "$(med "${wall_t[$m]}") / $(med "${wall_t[plain]}")")")"
done
lp=$(med "${layer[plain]}"); tp=$(med "${tinyp[plain]}")
for m in default kernels kineto; do
  lx=$(med "${layer[$m]}"); tx=$(med "${tinyp[$m]}")
  say "$(printf '  torch_layer   %-8s layer %.4f ms/iter (%+.2f %%), tiny %+.3f us/launch; process wall x%.3f' \
    "$m" "$lx" "$(calc "($lx - $lp) / $lp * 100")" "$(calc "$tx - $tp")" \
    "$(calc "$(med "${wall_l[$m]}") / $(med "${wall_l[plain]}")")")"
done
say "inside one process (A/B, $ab_reps runs per mode, $ab_pairs tiny / 20 layer pairs each; median of run medians):"
for m in plain default kernels full; do
  say "$(printf '  tiny_loop.cu  %-8s %+.3f us per launch   [runs: %s] (outside the window: %.3f us/launch)' \
    "$m" "$(med "${abt[$m]}")" "${abt[$m]% }" "$(med "${abo[$m]}")")"
  say "$(printf '  torch tiny    %-8s %+.3f us per launch   [runs: %s]' "$m" "$(med "${abtl[$m]}")" "${abtl[$m]% }")"
  say "$(printf '  torch_layer   %-8s %+.3f %%               [runs: %s]' "$m" "$(med "${abl[$m]}")" "${abl[$m]% }")"
done
# Every run's figure, so a median is never taken on trust (runs on a shared VM can be bimodal).
say "tiny_loop us/launch per run: plain [${tiny[plain]% }] default [${tiny[default]% }] kernels [${tiny[kernels]% }] injected [${tiny[inject]% }] attached [${tiny[attached]% }]"
say "torch_layer ms/iter per run: plain [${layer[plain]% }] default [${layer[default]% }] kernels [${layer[kernels]% }] kineto [${layer[kineto]% }]"
say "targets (H100): default <= 1.0 us/launch, kernels-only <= 0.7 us, layer <= 0.5 %, wall within x1.10"

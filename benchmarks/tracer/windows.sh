#!/usr/bin/env bash
# Periodic capture windows' cost, one GPU session. tiny_loop (exactly N tiny kernels) runs, one
# process per run, in four modes rotated WIN_REPS times (each mode takes every position in turn):
#   plain       untraced;
#   attached    ktune profile --range profiler: CUPTI attached and the tracer running, no window
#               ever opens (the floor a traced process pays between windows);
#   continuous  ktune profile: traced all the time;
#   windows     ktune profile --period 2s --window 0.1s: a 5 % duty cycle.
# The issue bounds the windows' cost amortized over every launch, inside windows and outside:
# <= 0.15 µs per launch at 5 % duty on this loop. Two measurements of it:
#  - across processes: each mode's median µs per launch minus plain's (and the median over
#    rotations of windows minus plain of the same rotation). Process-to-process noise on the lent
#    VM is about ±0.3 µs per launch (docs/tracing.md), so this alone cannot settle 0.15 µs;
#  - inside one process: tiny_loop times its launches in blocks of 2000 (--blocks), and the mean
#    block minus the median block is what the windows add over the cost between windows (95 % of
#    blocks), free of process noise; an untraced run gives the control (near zero), and CUPTI's
#    attachment, which every block pays, is added from the cross-process "attached" figure.
# Checks: every window left a complete trace with nothing dropped,
# no window's kernels span more than the window (nothing recorded between windows), the windows
# hold about the duty cycle's share of the launches, and `ktune profile --ingest` pushes one run
# per window, each as it closes (some while the program still runs). The last line is the summary with the target.
# Usage: benchmarks/tracer/windows.sh BUILD_DIR OUT_DIR   (builds nothing but tiny_loop, with nvcc)
# WIN_N launches per run (3000000: ~9 s, 4-5 periods, at ~3 µs per launch), WIN_REPS (5),
# WIN_PERIOD (2s), WIN_WINDOW (0.1s), WIN_MODE_FLAGS (flags of both traced modes; default none:
# the tracer's default mode), BENCH_CPUS as in run.sh. About 4-5 minutes on an H100.
set -uo pipefail
build=$(cd "${1:?build dir}" && pwd)
out=$(mkdir -p "${2:?output dir}" && cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
ktune="$build/src/cli/ktune"
log="$out/windows.log"
n=${WIN_N:-3000000}
reps=${WIN_REPS:-5}
period=${WIN_PERIOD:-2s}
window=${WIN_WINDOW:-0.1s}
read -r -a flags <<<"${WIN_MODE_FLAGS:-}"
python=${PYTHON:-python3}
: >"$log"
rm -f "$out"/*.ktrace "$out/windows.db"  # a stale trace must not pass for this run's
say() { echo "$*" | tee -a "$log"; }
source "$here/lib.sh"
secs() { "$python" -c "import sys; v=sys.argv[1]; print(float(v[:-2])/1e3 if v.endswith('ms') else float(v.rstrip('s')))" "$1"; }
duty=$(calc "$(secs "$window") / $(secs "$period")")

build_tiny_loop "$out" "$log" || { say "FAIL: nvcc tiny_loop"; exit 1; }
say "tracer windows benchmark $(date -u +%FT%TZ) $("$ktune" --version)"
"$ktune" info >>"$log" 2>&1
setup_pinning
say "$cpus_note"
say "GPU clocks as found: $(nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader 2>/dev/null)"
say "tiny_loop $n launches per run, $reps rotations; windows: --period $period --window $window (duty $duty); traced mode flags: ${flags[*]:-(default mode)}"

prefix() {
  case $1 in
    plain) pre=() ;;
    attached) pre=("$ktune" profile "${flags[@]}" --range profiler -o "$out/tiny_attached.ktrace" --) ;;
    continuous) pre=("$ktune" profile "${flags[@]}" -o "$out/tiny_continuous.ktrace" --) ;;
    windows) pre=("$ktune" profile "${flags[@]}" --period "$period" --window "$window" -o "$out/tiny_windows.ktrace" --) ;;
  esac
}

declare -A us wall_of blk bmed
modes=(plain attached continuous windows)
for r in $(seq "$reps"); do
  for mode in $(rot "$r" "${modes[@]}"); do
    # The windows' traces of one run only: each run's checks read them.
    [ "$mode" = windows ] && rm -f "$out"/tiny_windows.w*.ktrace
    prefix "$mode"
    run "tiny/$mode/$r" "${pre[@]}" "$out/tiny_loop" "$n" --blocks 2000 || say "run tiny/$mode/$r failed (rc != 0; see $log)"
    us[$mode]+="$(field "$stdout" tiny_us_per_launch) "
    blk[$mode]+="$(field "$stdout" block_added_us) "
    bmed[$mode]+="$(field "$stdout" block_median_us) "
    wall_of[$mode]+="$wall "
  done
done
cat "$log.err" >>"$log" 2>/dev/null; rm -f "$log.err"

# The last windows run's traces: one per window, complete, nothing dropped, each within its window.
launched=$((n + 100))
files=("$out"/tiny_windows.w*.ktrace)
checks=PASS
if [ ! -f "${files[0]}" ]; then
  say "windows: FAIL: no window trace written"; checks=FAIL; files=()
fi
captured=0
for f in "${files[@]}"; do
  k=$(sql "$f" "SELECT COUNT(*) FROM kernels k JOIN strings s ON s.id=k.demangled_id WHERE s.value LIKE 'tiny_add%'")
  d=$(sql "$f" "SELECT COALESCE(SUM(count),0) FROM drops")
  c=$(sql "$f" "SELECT json_extract(value, '\$') FROM metadata WHERE key='complete'")
  span=$(sql "$f" "SELECT COALESCE((MAX(end_ns)-MIN(start_ns))/1e9, 0) FROM kernels")
  ok=PASS
  { [ "$d" = 0 ] && [ "$c" = 1 ] && [ "$(calc "($span <= $(secs "$window") + 0.02)")" = 1 ]; } || ok=FAIL
  [ $ok = PASS ] || checks=FAIL
  say "  $(basename "$f"): $k tiny kernels, span $span s, complete $c, dropped $d: $ok"
  captured=$((captured + k))
done
share=$(calc "$captured / $launched")
share_ok=$(calc "(($share > $duty * 0.5) && ($share < $duty * 1.5))")
[ "$share_ok" = 1 ] || checks=FAIL
say "windows: ${#files[@]} traces hold $captured of $launched launches ($(calc "$share * 100") %, duty $(calc "$duty * 100") %): $([ "$share_ok" = 1 ] && echo PASS || echo FAIL)"

# --ingest: one more windows run (not timed) pushes one run per window into a fresh SQLite store,
# each window as it closes: the store must hold some of them while the program still runs.
rm -f "$out"/tiny_windows.w*.ktrace
"$ktune" --db "$out/windows.db" profile "${flags[@]}" --period "$period" --window "$window" --ingest \
  --tag build=windows-bench -o "$out/tiny_windows.ktrace" -- "$out/tiny_loop" "$n" >>"$log" 2>&1 &
profile_pid=$!
during=0
while kill -0 "$profile_pid" 2>/dev/null; do
  c=$(sql "$out/windows.db" "SELECT COUNT(*) FROM fleet_runs" 2>/dev/null || echo 0)
  kill -0 "$profile_pid" 2>/dev/null && [ "${c:-0}" -gt "$during" ] && during=$c
  sleep 0.25
done
wait "$profile_pid"
nwin=$(ls "$out"/tiny_windows.w*.ktrace 2>/dev/null | wc -l)
nrun=$(sql "$out/windows.db" "SELECT COUNT(*) FROM fleet_runs" 2>/dev/null || echo 0)
ingest_ok=$([ "$nwin" -gt 1 ] && [ "$nrun" = "$nwin" ] && [ "$during" -ge 1 ] && echo PASS || echo FAIL)
[ "$ingest_ok" = PASS ] || checks=FAIL
say "profile --ingest: $nwin window traces, $nrun runs in the store, $during of them ingested while the program ran: $ingest_ok"

p=$(med "${us[plain]}")
say "per run, us/launch: plain [${us[plain]% }] attached [${us[attached]% }] continuous [${us[continuous]% }] windows [${us[windows]% }]"
for m in attached continuous windows; do
  x=$(med "${us[$m]}")
  say "$(printf '  %-10s %.3f us/launch vs plain %.3f: %+.3f us per launch; process wall x%.3f' \
    "$m" "$x" "$p" "$(calc "$x - $p")" "$(calc "$(med "${wall_of[$m]}") / $(med "${wall_of[plain]}")")")"
done
# Paired: windows minus plain within each rotation.
read -r -a P <<<"${us[plain]}"; read -r -a W <<<"${us[windows]}"
paired=""
for i in "${!P[@]}"; do [ -n "${W[$i]:-}" ] && paired+="$(calc "${W[$i]} - ${P[$i]}") "; done  # a failed run has no value
added=$(calc "$(med "${us[windows]}") - $p")
attached=$(calc "$(med "${us[attached]}") - $p")
# The loop need not hold a whole number of periods (and window 0 opens during start-up), so the
# windows held a share of the launches near, not at, the duty cycle: the records' part of the cost
# (windows minus attached) is also scaled to the duty cycle, and the larger figure is judged.
scaled=$(calc "$attached + ($added - $attached) * $duty / ($share > 0 ? $share : $duty)")
# Inside one process: the windows' blocks over the between-windows floor, less the untraced
# control, scaled to the duty cycle in the same way, plus what a launch costs between windows over
# an attached one, plus the attachment.
inproc_rec=$(calc "$(med "${blk[windows]}") - $(med "${blk[plain]}")")
# Between windows a launch should cost what an attached one does; the median block of a windows run
# (95 % of its blocks lie between windows) against the attached runs' says whether it does.
between=$(calc "$(med "${bmed[windows]}") - $(med "${bmed[attached]}")")
inproc=$(calc "$attached + $between + $inproc_rec * $duty / ($share > 0 ? $share : $duty)")
say "block mean minus median, us/launch per run: plain [${blk[plain]% }] attached [${blk[attached]% }] windows [${blk[windows]% }]"
say "median block, us/launch per run: plain [${bmed[plain]% }] attached [${bmed[attached]% }] windows [${bmed[windows]% }]: between windows $(printf '%+.3f' "$between") us per launch over attached"
verdict() { [ "$(calc "($1 <= 0.15)")" = 1 ] && echo MET || echo MISSED; }
across=$(calc "($added > $scaled ? $added : $scaled)")
say "$(printf 'SUMMARY windows (--period %s --window %s, duty %.1f %%, launches captured %.2f %%): amortized %+.3f us per launch inside one process (records %+.3f + between windows %+.3f + attached %+.3f), %+.3f across processes (paired median %+.3f; scaled to the duty %+.3f); continuous %+.3f, attached %+.3f, plain %.3f us/launch; target <= 0.150 us per launch: %s in-process, %s across processes; checks %s' \
  "$period" "$window" "$(calc "$duty * 100")" "$(calc "$share * 100")" "$inproc" "$(calc "$inproc - $attached - $between")" "$between" "$attached" \
  "$added" "$(med "$paired")" "$scaled" "$(calc "$(med "${us[continuous]}") - $p")" "$attached" "$p" \
  "$(verdict "$inproc")" "$(verdict "$across")" "$checks")"

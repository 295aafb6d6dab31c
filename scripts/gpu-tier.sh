#!/usr/bin/env bash
# The GPU tier, run on a GPU machine from the repository root:
#   scripts/gpu-tier.sh [BUILD_DIR] [OUT_DIR]
# BUILD_DIR: a build made on this machine, or .gpu-carry staged elsewhere by scripts/gpu-bundle.sh
# (the default), which scripts/gpu-mount.sh links back where it was built.
# Runs every GoogleTest binary (GPU cases run for real here), then each benchmarks/*/run.sh side by
# side with its baseline, the capture-window benchmark, scripts/gpu-counters.sh (the counter tier
# vs ncu), the verdicts and stall reasons vs ncu, the cost of --ops, and prints a short summary
# last. KTUNE_GPU_ONLY=calibrate,tracer,windows,counters,verdicts,ops,inprocess,gate,bat,rate,
# inductor picks steps (gate, scripts/gpu-gate.sh, which also writes the gate's noise fixture, and
# bat, rate and inductor run only when named); KTUNE_GPU_SKIP_TESTS=1 skips the test binaries,
# KTUNE_GPU_TESTS=REGEX runs only the GPU tests matching it.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=$(cd "${1:-$root/.gpu-carry}" && pwd)
out=${2:-${OUT:-/tmp/ktune-gpu}}
mkdir -p "$out"
export KTUNE_HOME=${KTUNE_HOME:-$(mktemp -d /tmp/ktune-home.XXXXXX)}   # fresh store and kernel cache unless given
. "$root/scripts/gpu-mount.sh"
mount_bundle "$bundle"
bin=$bundle/src/cli/ktune
summary=()

{
  echo "# ktune GPU tier, $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,clocks_event_reasons.active --format=csv
  missing=$(ldd "$bin" | grep 'not found' || true)
  [ -n "$missing" ] && echo "MISSING LIBRARIES: $missing"
  "$bin" info
} 2>&1 | tee "$out/identity.txt"
# Every later step would fail for the same reason; say it once.
if grep -q 'MISSING LIBRARIES' "$out/identity.txt"; then
  echo "gpu-tier.sh: the bundle needs libraries this machine lacks (above); add them to scripts/gpu-bundle.sh's lib/." >&2
  exit 1
fi

if [ -z "${KTUNE_GPU_SKIP_TESTS:-}" ]; then
  # OccupancyGpu records the driver's occupancy answers here (commit as tests/fixtures/occupancy/).
  export KTUNE_RECORD_OCCUPANCY=$out/occupancy
  # Host tests in parallel; tests that time the GPU one at a time, so they do not disturb each other.
  gpu_tests=${KTUNE_GPU_TESTS:-'Gpu|JitLauncher|example_runtime'}
  [ -z "${KTUNE_GPU_TESTS:-}" ] &&
    ctest --test-dir "$bundle" -j8 --timeout 300 --output-on-failure -E "$gpu_tests" >"$out/ctest.log" 2>&1
  ctest --test-dir "$bundle" -j1 --timeout 300 --output-on-failure -R "$gpu_tests" >>"$out/ctest.log" 2>&1
  grep -E 'tests passed|FAILED|Not Run|\(Failed\)|\(Timeout\)' "$out/ctest.log" | tail -n 30
  skipped=$(grep -c 'Skipped' "$out/ctest.log" || true)
  summary+=("ctest: $(grep -E 'tests passed' "$out/ctest.log" | tr '\n' ';') $skipped skipped")
fi

# step NAME LOG SCRIPT: runs one script of the tier with (bundle, its own output folder), shows the
# end of its log and adds its exit status, time and the log's lines matching $keep to the summary.
step() {
  local name=$1 log=$2 script=$3 start rc
  echo "== $name"
  start=$(date +%s)
  bash "$script" "$bundle" "$out/$name" >"$log" 2>&1
  rc=$?
  tail -n 25 "$log"
  summary+=("$name: rc=$rc, $(( $(date +%s) - start )) s")
  summary+=("$(grep -hE "$keep" "$log" | tail -n 8)")
}
picked() { [ -z "${KTUNE_GPU_ONLY:-}" ] || [[ ",$KTUNE_GPU_ONLY," == *",$1,"* ]]; }

for run in "$root"/benchmarks/*/run.sh; do
  name=$(basename "$(dirname "$run")")
  picked "$name" || continue
  keep='PASS|FAIL|ratio|overhead|per second|us/launch' step "$name" "$out/bench-$name.log" "$run"
done
# The tracer's periodic capture windows against continuous tracing (docs/fleet.md).
picked windows &&
  keep='SUMMARY|MET|MISSED' step windows "$out/windows.log" "$root/benchmarks/tracer/windows.sh"
# The counter tier against Nsight Compute (docs/profiling.md).
picked counters &&
  keep='^SUMMARY|^fit|^(hand|sdpa|train) \||^agreement|ratio|plain \(target' step counters "$out/counters.log" "$root/scripts/gpu-counters.sh"
# The report's verdicts and stall reasons against Nsight Compute's on the same launches
# (docs/analysis.md), the unit of mma.sync tensor FLOP against 2*M*N*K, and the cost and op
# attribution of `ktune profile --ops` (docs/profiling.md).
picked verdicts &&
  keep='agree|target|PASS|FAIL' step verdicts "$out/verdicts.log" "$root/benchmarks/analysis/ncu_compare.sh"
picked mma_flop &&
  keep='^(fp16|bf16|mma.sync)|FAIL' step mma_flop "$out/mma_flop.log" "$root/benchmarks/analysis/mma_flop.sh"
picked ops &&
  keep='PASS|FAIL|added|per op|per iteration' step ops "$out/ops.log" "$root/benchmarks/tracer/ops.sh"
# The tracer's cost inside one process on a launch-bound PyTorch block, with and without --ops.
picked inprocess &&
  keep='SUMMARY|FAIL' step inprocess "$out/inprocess.log" "$root/benchmarks/tracer/inprocess.sh"
# Issue 45, only when named: BAT's CAFF specs dry-run and tuned briefly; the hub convolution's
# rate over 5 seeds beside its compile-only ceiling (KTUNE_RATE_SHARED=1 adds a shared-cache pass).
[[ ",${KTUNE_GPU_ONLY:-}," == *",bat,"* ]] &&
  keep='^\| |specs tuned' step bat "$out/bat.log" "$root/benchmarks/tune/bat.sh"
[[ ",${KTUNE_GPU_ONLY:-}," == *",rate,"* ]] &&
  keep='^\| |^cold|^shared' step rate "$out/rate.log" "$root/benchmarks/tune/convolution_rate.sh"
# Issue 42, only when named: torch.compile programs' Triton kernels profiled, queued, tuned on every
# GPU and served to Inductor, against its default and max-autotune (scripts/gpu-inductor.sh).
[[ ",${KTUNE_GPU_ONLY:-}," == *",inductor,"* ]] &&
  keep='^(infer|graphs|train):|^tuning|winners stored' step inductor "$out/inductor.log" "$root/scripts/gpu-inductor.sh"
# The gate's logged run (docs/gate.md), which also writes its noise fixture; only when named.
[[ ",${KTUNE_GPU_ONLY:-}," == *",gate,"* ]] &&
  keep='^(case|unchanged|planted|environment|one check)' step gate "$out/gate.log" "$root/scripts/gpu-gate.sh"

echo
echo "== summary ($(nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader))"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"

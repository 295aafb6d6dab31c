#!/usr/bin/env bash
# The GPU tier, run on a GPU machine from the repository root:
#   scripts/gpu-tier.sh [BUNDLE_OR_BUILD_DIR] [OUT_DIR]
# BUNDLE_OR_BUILD_DIR: .gpu-carry from scripts/gpu-bundle.sh (default), or a build dir made there.
# Runs every GoogleTest binary (GPU cases run for real here), then each benchmarks/*/run.sh side by
# side with its baseline, and prints a short summary last. KTUNE_GPU_ONLY=calibrate,tracer picks
# benchmarks; KTUNE_GPU_SKIP_TESTS=1 skips the test binaries.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=$(cd "${1:-$root/.gpu-carry}" && pwd)
out=${2:-${OUT:-/tmp/ktune-gpu}}
mkdir -p "$out"
export KTUNE_HOME=$(mktemp -d /tmp/ktune-home.XXXXXX)   # fresh store and kernel cache
# Test binaries name fixtures by the source path they were built from (/work/main).
if [ ! -e /work/main ] && [ "$root" != /work/main ]; then mkdir -p /work && ln -s "$root" /work/main; fi
bin=$bundle/bin/ktune; [ -x "$bin" ] || bin=$bundle/src/cli/ktune
summary=()

{
  echo "# ktune GPU tier, $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,clocks_event_reasons.active --format=csv
  missing=$(ldd "$bin" | grep 'not found' || true)
  [ -n "$missing" ] && echo "MISSING LIBRARIES: $missing"
  "$bin" info
} 2>&1 | tee "$out/identity.txt"

if [ -z "${KTUNE_GPU_SKIP_TESTS:-}" ]; then
  : >"$out/tests.txt"
  for t in "$bundle"/tests/*_tests; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    if "$t" --gtest_brief=1 >"$out/test-$name.log" 2>&1; then status=ok; else status=FAILED; fi
    echo "$name $status $(grep -cE '^\[       OK' "$out/test-$name.log") $(grep -cE '^\[  SKIPPED' "$out/test-$name.log")" >>"$out/tests.txt"
    grep -E '^\[  FAILED  \]' "$out/test-$name.log" | sed "s/^/$name: /"
  done
  summary+=("tests (binary status passed skipped): $(tr '\n' ';' <"$out/tests.txt")")
fi

for run in "$root"/benchmarks/*/run.sh; do
  name=$(basename "$(dirname "$run")")
  if [ -n "${KTUNE_GPU_ONLY:-}" ] && [[ ",$KTUNE_GPU_ONLY," != *",$name,"* ]]; then continue; fi
  echo "== benchmark $name"
  start=$(date +%s)
  bash "$run" "$bundle" "$out/$name" >"$out/bench-$name.log" 2>&1
  rc=$?
  tail -n 25 "$out/bench-$name.log"
  summary+=("benchmark $name: rc=$rc, $(( $(date +%s) - start )) s")
  summary+=("$(grep -hE 'PASS|FAIL|ratio|overhead|per second|us/launch' "$out/bench-$name.log" | tail -n 8)")
done

echo
echo "== summary ($(nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader))"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"

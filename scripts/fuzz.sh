#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang with ASan + UBSan, -DKTUNE_FUZZ=ON) into build-fuzz/
# and runs each for SECONDS on its committed seeds (fuzz/corpus/<target>/; what a run finds is kept
# in build-fuzz/corpus/<target>/, never committed). A crash, an input slower than 10 s or a leak
# fails the run; the input is saved as fuzz/crashes/<target>/crash-* (ignored by git).
# Usage: scripts/fuzz.sh [SECONDS (default 20)] [TARGET...]   (targets: fuzz/CMakeLists.txt)
# KTUNE_FUZZ_JOBS targets at a time (default 1), each under nice -n KTUNE_FUZZ_NICE (default 0).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KTUNE_FUZZ_BUILD_DIR:-$root/build-fuzz}
seconds=${1:-20}
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(expression spec t4 cache_entry pack ktrace analysis cublaslt_log kineto store_locator
  gate_suite)
jobs=${KTUNE_FUZZ_JOBS:-1}
niceness=${KTUNE_FUZZ_NICE:-0}

cc=$(command -v clang-14 || command -v clang || true)
cxx=$(command -v clang++-14 || command -v clang++ || true)
if [ -z "$cc" ] || [ -z "$cxx" ]; then
  echo "ktune fuzz: clang is not installed; install clang-14 (Debian package clang-14)." >&2
  exit 1
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKTUNE_FUZZ=ON \
  -DKTUNE_BUILD_TESTS=OFF -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" "${launcher[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)" --target fuzzers

run_one() {
  local t=$1 found="$build/corpus/$1" crashes="$root/fuzz/crashes/$1" log="$build/fuzz-$1.log"
  mkdir -p "$found" "$crashes"
  # New inputs go to the first directory; the seeds are only read.
  if nice -n "$niceness" "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$crashes/" \
      "$found" "$root/fuzz/corpus/$t" >"$log" 2>&1; then
    echo "fuzz $t: ${seconds} s, $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" |
      grep -o '[0-9]*$') inputs, no crash, hang or leak"
  else
    echo "fuzz $t: FAILED; the input is in $crashes/, the log in $log:" >&2
    grep -E 'ERROR|runtime error|Test unit written|SUMMARY|terminate|what\(\)' "$log" | head -n 20 >&2
    return 1
  fi
}

status=0
pids=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$jobs" ]; then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done
exit $status

#!/usr/bin/env bash
# The CPU test tier again, built with AddressSanitizer + UndefinedBehaviorSanitizer
# (-DKTUNE_SANITIZE=ON, a second build directory, build-asan/): a memory error, a leak or undefined
# behaviour fails the test that hit it. scripts/test.sh runs it after the plain suite, with the same
# PostgreSQL server; alone: scripts/sanitize.sh [ctest args...].
# KTUNE_SANITIZE_TARGETS: the test binaries to build and run (space-separated). The default is
# every CPU test binary but cuda_tests: built with ASan it needs libcuda.so.1 at load time, which a
# machine without a driver lacks (the plain build loads the driver at run time only).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KTUNE_SANITIZE_BUILD_DIR:-$root/build-asan}
targets=${KTUNE_SANITIZE_TARGETS:-"core_tests store_tests cache_cli_tests calibrate_tests
  trace_tests trace_profile_tests bench_tests tune_tests tune_cli_tests analyze_tests report_tests
  runtime_tests cli_tests"}

launcher=()
command -v ccache >/dev/null &&
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKTUNE_SANITIZE=ON \
  "${launcher[@]}" >/dev/null
# shellcheck disable=SC2086  # one word per target
cmake --build "$build" -j"$(nproc)" --target $targets

# Leaks inside vendor libraries that ktune loads (NVRTC, libpq) are not ours to fix.
export LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp:print_suppressions=0"
export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# Test binaries not in $targets appear as *_NOT_BUILT placeholders: left out.
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" -E '_NOT_BUILT$' "$@"

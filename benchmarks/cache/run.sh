#!/usr/bin/env bash
# Usage: benchmarks/cache/run.sh BUILD_DIR OUT_DIR. Builds nothing. Runs cache_bench: the runtime's
# in-process lookup beside its baseline (the same lookups through the SQLite store), PostgreSQL
# over loopback when KTUNE_TEST_PG_URL is set, and the JIT first launch on the GPU.
set -euo pipefail
build=$1 out=$2
mkdir -p "$out"
"$build/benchmarks/cache/cache_bench" --json "$out/cache_bench.json" | tee "$out/cache_bench.log"

#!/usr/bin/env bash
# Usage: benchmarks/fleet/run.sh BUILD_DIR OUT_DIR. Builds nothing. Runs fleet_bench against a
# fresh SQLite store, and against PostgreSQL when KTUNE_TEST_PG_URL names a server (a fresh schema
# is made and dropped there): ingest of a 2 M-record .ktrace (the issue's target: >= 1 M kernel
# records per second per node) and `fleet top` over 10 M launches from 1,000 runs (target < 1 s).
# FLEET_BENCH_ARGS adds options (e.g. "--trace-records 200000 --runs 100 --launches 1000000").
# Where nvidia-smi sees GPUs, scripts/gpu-fleet.sh runs after it (KTUNE_FLEET_SKIP_GPU=1: not).
set -euo pipefail
build=$1 out=$2
mkdir -p "$out"
bench="$build/benchmarks/fleet/fleet_bench"
work=$(mktemp -d /tmp/ktune-fleet-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "== SQLite ($work/fleet.db)"
"$bench" --db "$work/fleet.db" --workdir "$work" --json "$out/fleet_sqlite.json" \
  ${FLEET_BENCH_ARGS:-} | tee "$out/fleet_sqlite.log"
if [ -n "${KTUNE_TEST_PG_URL:-}" ]; then
  schema="fleet_bench_$$"
  psql "$KTUNE_TEST_PG_URL" -qc "CREATE SCHEMA $schema" >/dev/null
  sep='?'; case "$KTUNE_TEST_PG_URL" in *\?*) sep='&';; esac
  echo "== PostgreSQL ($KTUNE_TEST_PG_URL, schema $schema)"
  "$bench" --db "$KTUNE_TEST_PG_URL${sep}options=-csearch_path%3D$schema" --workdir "$work" \
    --json "$out/fleet_postgres.json" ${FLEET_BENCH_ARGS:-} | tee "$out/fleet_postgres.log" || true
  psql "$KTUNE_TEST_PG_URL" -qc "DROP SCHEMA $schema CASCADE" >/dev/null
fi
# On a GPU machine (scripts/gpu-tier.sh runs this file there): the multi-GPU queue run as well.
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && [ -z "${KTUNE_FLEET_SKIP_GPU:-}" ]; then
  root=$(cd "$(dirname "$0")/../.." && pwd)
  "$root/scripts/gpu-fleet.sh" "$build" "$out/gpu" "$(nvidia-smi -L | wc -l)"
fi

#!/usr/bin/env bash
# The CPU test tier (no GPU or driver needed; the CUDA toolkit is, to build: scripts/deps.sh checks
# for it and says how to install it): installs dependencies, lints the Python (ruff, configured in
# pyproject.toml), builds, starts a throwaway PostgreSQL server for the store tests, runs every test
# with ctest, then again under ASan + UBSan and without PostgreSQL (scripts/sanitize.sh), then each
# fuzz target for 8 s (scripts/fuzz.sh).
# Usage: scripts/test.sh [ctest args...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KTUNE_BUILD_DIR:-$root/build}
"$root/scripts/deps.sh"
python3 -m ruff check "$root"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)"
cmake --build "$build" --target format-check

# A real PostgreSQL server on loopback, owned by this run and stopped when it ends.
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "${KTUNE_TEST_PG_URL:-}" ] && [ -x "$pg_bin/initdb" ]; then
  pg_dir=$(mktemp -d /tmp/ktune-pg.XXXXXX)
  pg_port=${KTUNE_TEST_PG_PORT:-54329}
  run_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
  [ "$(id -u)" = 0 ] && chown postgres "$pg_dir"
  run_pg "$pg_bin/initdb" -D "$pg_dir/data" -U ktune --auth=trust >/dev/null
  run_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/log" -w \
    -o "-p $pg_port -k $pg_dir -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
  trap 'run_pg "$pg_bin/pg_ctl" -D "$pg_dir/data" -m fast stop >/dev/null 2>&1; rm -rf "$pg_dir"' EXIT
  run_pg "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U ktune ktune_test
  export KTUNE_TEST_PG_URL="postgresql://ktune@127.0.0.1:$pg_port/ktune_test"
  echo "PostgreSQL test server: $KTUNE_TEST_PG_URL"
fi

(cd "$build" && ctest --output-on-failure -j"$(nproc)" "$@")

# The same suite under ASan + UBSan, then every fuzz target briefly (both on every CI commit).
# Locally: KTUNE_TEST_SANITIZE=0 and KTUNE_TEST_FUZZ_SECONDS=0 leave them out.
if [ "${KTUNE_TEST_SANITIZE:-1}" != 0 ]; then
  "$root/scripts/sanitize.sh"
fi
fuzz_seconds=${KTUNE_TEST_FUZZ_SECONDS:-8}
if [ "$fuzz_seconds" != 0 ]; then
  KTUNE_FUZZ_JOBS=$(nproc) "$root/scripts/fuzz.sh" "$fuzz_seconds"
fi

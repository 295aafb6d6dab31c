#!/usr/bin/env bash
# Builds benchmarks/replay/study.cpp (the build tree's replay-study target) and runs it on every
# recorded family.  benchmarks/replay/study.sh BUILD_DIR DATASETS_DIR STRATEGIES BUDGETS SEEDS
# EXTRA_SPACES=DIR adds DIR/<family>/*.T4.json (benchmarks/search/record_spaces.sh's layout), each
# file a space of its own family; a DATASETS_DIR without tuning/ runs those alone.
set -euo pipefail
build=$1 data=$2/tuning strategies=$3 budgets=$4 seeds=$5
here=$(cd "$(dirname "$0")" && pwd)
exe=${STUDY_EXE:-$build/replay-study}
[ -x "$exe" ] || cmake --build "$build" --target replay-study >&2
args=()
if [ -d "$data" ]; then  # DATASETS_DIR without tuning/: the EXTRA_SPACES alone
  for gpu in A100 A4000 A6000 MI250X W6600 W7800; do
    args+=("dedispersion=$data/dedispersion_milo/${gpu}_T4.json.gz@$data/dedispersion_milo/T1.json")
  done
  for family in gemm pnpoly; do
    for f in "$data/kt_$family"/*.json.gz; do args+=("$family=$f"); done
  done
fi
if [ -n "${EXTRA_SPACES:-}" ]; then
  for f in "$EXTRA_SPACES"/*/*.T4.json; do
    [ -e "$f" ] && args+=("$(basename "$(dirname "$f")")=$f")
  done
fi
"$exe" "$strategies" "$budgets" "$seeds" "${THREADS:-$(nproc)}" "${args[@]}"

#!/usr/bin/env bash
# Scores every search strategy beside random search on every recorded family under
# shared/datasets/tuning: dedispersion (six T4 files over its T1 space), kt_gemm and kt_pnpoly
# (four Kernel Tuner caches each). CPU only; builds nothing.
#   benchmarks/replay/run.sh BUILD_DIR OUT_DIR [DATASETS_DIR]
# SEEDS (default 50), BUDGETS (default 100,200), STRATEGY (default all), THREADS (default 0: all
# cores). Writes OUT_DIR/replay-<family>-<space>.json (schema_version 1) and OUT_DIR/replay.md.
set -euo pipefail
build=${1:?usage: run.sh BUILD_DIR OUT_DIR [DATASETS_DIR]}
out=${2:?usage: run.sh BUILD_DIR OUT_DIR [DATASETS_DIR]}
here=$(cd "$(dirname "$0")" && pwd)
data=${3:-${KTUNE_DATASETS:-$here/../../../shared/datasets}}/tuning
seeds=${SEEDS:-50}
budgets=${BUDGETS:-100,200}
strategy=${STRATEGY:-all}
threads=${THREADS:-0}
mkdir -p "$out"
run() {  # family space file [--space T1]
  local family=$1 name=$2 file=$3
  shift 3
  "$build/src/cli/ktune" replay "$file" "$@" --strategy "$strategy" --budget "$budgets" \
    --seeds "$seeds" --threads "$threads" --json > "$out/replay-$family-$name.json"
  echo "replayed $family $name" >&2
}
for gpu in A100 A4000 A6000 MI250X W6600 W7800; do
  run dedispersion "$gpu" "$data/dedispersion_milo/${gpu}_T4.json.gz" \
    --space "$data/dedispersion_milo/T1.json"
done
for family in gemm pnpoly; do
  for f in "$data/kt_$family"/*.json.gz; do
    run "$family" "$(basename "$f" .json.gz)" "$f"
  done
done
python3 "$here/table.py" "$out" | tee "$out/replay.md"

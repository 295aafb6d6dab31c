#!/usr/bin/env bash
# Scores every search strategy beside random search on the six recorded dedispersion spaces
# (50 seeds, budgets 100/200/400). CPU only; builds nothing.
#   benchmarks/replay/run.sh BUILD_DIR OUT_DIR [DATASETS_DIR]
# Writes OUT_DIR/replay-<gpu>.json (schema_version 1, one per space) and OUT_DIR/replay.md (the
# table for logs/), and prints the averages last.
set -euo pipefail
build=${1:?usage: run.sh BUILD_DIR OUT_DIR [DATASETS_DIR]}
out=${2:?usage: run.sh BUILD_DIR OUT_DIR [DATASETS_DIR]}
here=$(cd "$(dirname "$0")" && pwd)
data=${3:-${KTUNE_DATASETS:-$here/../../../shared/datasets}}/tuning/dedispersion_milo
seeds=${SEEDS:-50}
mkdir -p "$out"
for gpu in A100 A4000 A6000 MI250X W6600 W7800; do
  "$build/src/cli/ktune" replay "$data/${gpu}_T4.json.gz" --space "$data/T1.json" \
    --strategy all --budget 100,200,400 --seeds "$seeds" --json > "$out/replay-$gpu.json"
  echo "replayed $gpu" >&2
done
python3 "$here/table.py" "$out" | tee "$out/replay.md" | tail -n 8

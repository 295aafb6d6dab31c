#!/usr/bin/env bash
# The replay tables of logs/2026-11-26-search-replay.md: every registered strategy on every
# recorded family (benchmarks/replay/study.sh: dedispersion's six T4 files, kt_gemm's and
# kt_pnpoly's four caches each, and any T4 files under EXTRA_SPACES/<family>/, e.g. the spaces
# benchmarks/search/record_spaces.sh records on a GPU) at windows 1 and 16, then the family means
# and the leave-one-family-out choice (benchmarks/search/family_table.py). CPU only.
#   benchmarks/search/replay_tables.sh BUILD_DIR OUT_DIR [DATASETS_DIR]
# SEEDS (default 50), BUDGETS (100,200), WINDOWS ("1 16"), STRATEGIES (default: every registered
# one but exhaustive), THREADS (default: all cores). Writes OUT_DIR/study-w<W>.jsonl and
# OUT_DIR/tables.md.
set -euo pipefail
build=${1:?usage: replay_tables.sh BUILD_DIR OUT_DIR [DATASETS_DIR]}
out=${2:?usage: replay_tables.sh BUILD_DIR OUT_DIR [DATASETS_DIR]}
here=$(cd "$(dirname "$0")" && pwd)
data=${3:-${KTUNE_DATASETS:-$here/../../../shared/datasets}}
seeds=${SEEDS:-50}
budgets=${BUDGETS:-100,200}
strategies=${STRATEGIES:-random,genetic,annealing,model,hybrid,thompson,portfolio}
mkdir -p "$out"
files=()
for w in ${WINDOWS:-1 16}; do
  STUDY_WINDOW=$w "$here/../replay/study.sh" "$build" "$data" "$strategies" "$budgets" "$seeds" \
    >"$out/study-w$w.jsonl"
  files+=("$out/study-w$w.jsonl")
  echo "window $w done" >&2
done
python3 "$here/family_table.py" "${files[@]}" | tee "$out/tables.md"

#!/usr/bin/env bash
# The tables of logs/2026-11-28-search-replay-8.md (issue 45), one command, CPU only:
#   benchmarks/search/issue45_tables.sh BUILD_DIR OUT_DIR [DATASETS_DIR]
# Every strategy on every recorded family (replay_tables.sh: dedispersion, kt_gemm, kt_pnpoly and
# the H100's copy, cuBLASLt, GEMV and hub spaces) and on three harder variants made from five of
# those spaces (hard_spaces.py: needle, invalid, plateau; each a family of its own), at windows 1
# and 16, 50 seeds, budgets 100 and 200; then family means, each strategy's worst family and worst
# space, and the default against issue 45's targets. SEEDS, STRATEGIES, THREADS, WINDOWS as in
# replay_tables.sh. BUILD_DIR: a build tree (its replay-study is built if missing).
set -euo pipefail
build=${1:?usage: issue45_tables.sh BUILD_DIR OUT_DIR [DATASETS_DIR]}
out=${2:?usage: issue45_tables.sh BUILD_DIR OUT_DIR [DATASETS_DIR]}
here=$(cd "$(dirname "$0")" && pwd)
data=${3:-${KTUNE_DATASETS:-$here/../../../shared/datasets}}
tuning=$data/tuning
h100=$here/spaces/h100-2026-11-26
mkdir -p "$out/spaces"
for family in copy cublaslt gemv hub; do ln -sfn "$h100/$family" "$out/spaces/$family"; done
python3 "$here/hard_spaces.py" "$out/spaces" \
  "$tuning/dedispersion_milo/A4000_T4.json.gz" "$tuning/dedispersion_milo/W7800_T4.json.gz" \
  "$tuning/kt_gemm/RTX_2080_Ti.json.gz" "$tuning/kt_pnpoly/RTX_3090.json.gz" \
  "$h100/hub/convolution.T4.json" >&2
# The study is the build tree's replay-study target (benchmarks/replay/study.sh builds it when
# missing), linked against this build's library.
EXTRA_SPACES=$out/spaces "$here/replay_tables.sh" "$build" "$out" "$data"

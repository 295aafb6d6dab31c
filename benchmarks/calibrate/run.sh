#!/usr/bin/env bash
# GPU tier: ktune calibrate side by side with PyTorch's copy and matmul in one session.
# Usage: run.sh BUILD_OR_BUNDLE_DIR OUT_DIR
set -uo pipefail
bin=$1/bin/ktune; [ -x "$bin" ] || bin=$1/src/cli/ktune
out=$2; here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
"$bin" --db "$out/ktune.db" calibrate --json >"$out/calibrate.json" 2>"$out/calibrate.err" || { cat "$out/calibrate.err"; exit 1; }
python3 "$here/torch_ceilings.py" >"$out/torch_ceilings.json" || exit 1
"$bin" --db "$out/ktune.db" calibrate --no-store >"$out/calibrate.txt" 2>&1   # the table, a second measurement
cat "$out/calibrate.txt"
python3 "$here/compare.py" "$out/calibrate.json" "$out/torch_ceilings.json" | tee "$out/calibrate-vs-torch.txt"

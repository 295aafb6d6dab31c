#!/usr/bin/env bash
# The cost of `ktune profile --ops` (PyTorch's NVTX op ranges) beside the tracer's own, and its op
# attribution beside torch.profiler's, on one GPU (docs/profiling.md quotes the result):
#  - across processes, REPS rounds with the modes rotated: plain, `ktune profile`, `ktune profile
#    --ops`; medians of the layer's ms per iteration and the small-op block's us per iteration;
#  - inside one process (A/B), under `ktune profile --ops` and under plain python: blocks with the
#    op ranges on and off in ABBA order, so the added % and us per op are free of process noise;
#    the plain run prices the ranges without a tracer recording them;
#  - attribution: the block recorded by `ktune profile --ops` and by torch.profiler (separate
#    processes: the two profilers cannot be on at once), both read by `ktune report --format
#    json`; every kernel name of the torch.profiler trace must name the same op in both.
# Usage: benchmarks/tracer/ops.sh BUILD_DIR OUT_DIR     (needs torch with CUDA)
set -uo pipefail
build=$(cd "${1:?build dir}" && pwd)
out=$(mkdir -p "${2:?output dir}" && cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
ktune="$build/src/cli/ktune"
log="$out/ops.log"
reps=${REPS:-5}
ab_pairs=${AB_PAIRS:-30}
python=${PYTHON:-python3}
: >"$log"
rm -f "$out"/ops_*.ktrace "$out"/ops_kineto.json
say() { echo "$*" | tee -a "$log"; }
source "$here/lib.sh"
say "ktune profile --ops benchmark $(date -u +%FT%TZ) $("$ktune" --version)"
"$python" -c "import torch; print('torch', torch.__version__, torch.version.cuda, torch.cuda.get_device_name())" >>"$log" 2>&1
setup_pinning
say "$cpus_note"

declare -A layer block
for r in $(seq "$reps"); do
  for mode in $(rot "$r" plain default ops); do
    case $mode in
      plain) pre=() ;;
      default) pre=("$ktune" profile -o "$out/ops_default.ktrace" --) ;;
      ops) pre=("$ktune" profile --ops -o "$out/ops_ops.ktrace" --) ;;
    esac
    run "across/$mode/$r" "${pre[@]}" "$python" "$here/torch_ops.py" || say "FAIL: $mode run $r (see $log.err)"
    layer[$mode]+="$(field "$stdout" layer_ms_per_iter) "
    block[$mode]+="$(field "$stdout" block_us_per_iter) "
    [ "$mode" = ops ] && [ "$(field "$stdout" ops_hook)" != 1 ] && say "FAIL: --ops did not turn the op ranges on"
  done
done
say ""
say "across processes (median of $reps): layer ms/iter, block us/iter, added vs plain"
for mode in plain default ops; do
  l=$(med "${layer[$mode]}"); b=$(med "${block[$mode]}")
  say "  $mode: layer=$l ($(calc "100 * ($l - $(med "${layer[plain]}")) / $(med "${layer[plain]}")") %) block=$b ($(calc "100 * ($b - $(med "${block[plain]}")) / $(med "${block[plain]}")") %)"
done

say ""
say "in-process A/B, op ranges on vs off ($ab_pairs pairs; median [q1, q3])"
run "ab/ops" "$ktune" profile --ops -o "$out/ops_ab.ktrace" -- "$python" "$here/torch_ops.py" --ab "$ab_pairs"
say "  under ktune profile --ops: layer +$(field "$stdout" ab_layer_added_pct) % [$(field "$stdout" ab_layer_q1), $(field "$stdout" ab_layer_q3)], block +$(field "$stdout" ab_block_added_pct) % [$(field "$stdout" ab_block_q1), $(field "$stdout" ab_block_q3)], $(field "$stdout" ab_us_per_op) us per op [$(field "$stdout" ab_us_per_op_q1), $(field "$stdout" ab_us_per_op_q3)] ($(field "$stdout" block_ops) ops per block step)"
run "ab/plain" "$python" "$here/torch_ops.py" --ab "$ab_pairs"
say "  no tracer:                 layer +$(field "$stdout" ab_layer_added_pct) %, block +$(field "$stdout" ab_block_added_pct) %, $(field "$stdout" ab_us_per_op) us per op [$(field "$stdout" ab_us_per_op_q1), $(field "$stdout" ab_us_per_op_q3)]"

say ""
say "attribution: ktune profile --ops vs torch.profiler, kernel -> op"
run "attr/kineto" "$python" "$here/torch_ops.py" --iters 5 --kineto-out "$out/ops_kineto.json"
"$ktune" report --format json -o "$out/ops_kineto.report.json" "$out/ops_kineto.json" 2>>"$log"
"$ktune" report --format json -o "$out/ops_ops.report.json" "$out/ops_ops.ktrace" 2>>"$log"
"$python" - "$out/ops_kineto.report.json" "$out/ops_ops.report.json" <<'PY' | tee -a "$log"
import json, sys
kineto, ours = (json.load(open(p)) for p in sys.argv[1:3])
theirs = {k["name"]: k["op"] for k in kineto["kernels"]}
mine = {k["name"]: k["op"] for k in ours["kernels"]}
same = [n for n in theirs if mine.get(n) == theirs[n]]
for n in theirs:
    if mine.get(n) != theirs[n]:
        print(f"  DIFFERS: {n[:90]}: torch.profiler {theirs[n]!r}, ktune --ops {mine.get(n)!r}")
print(f"  {len(same)} of {len(theirs)} kernel names name the same op"
      + (" (PASS)" if len(same) == len(theirs) else " (FAIL)"))
PY
say "done; log $log"

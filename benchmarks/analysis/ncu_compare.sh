#!/usr/bin/env bash
# ktune's verdicts and stall reasons beside Nsight Compute's, on the same launches of a PyTorch
# workload, and what each tool's counters cost per profiled launch. On a GPU machine, from the
# repository root:
#   benchmarks/analysis/ncu_compare.sh [BUILD] [OUT_DIR] [-- WORKLOAD ARGS...]
# BUILD holds src/cli/ktune and libktune_tracer.so (default: build). The workload defaults to
# benchmarks/analysis/attention_block.py (--iters 3); anything after -- replaces it.
#   0. the workload alone, for its wall time;
#   1. ktune profile --metrics METRICS (default triage: the speed-of-light pair and the stall
#      reasons): the first launch of every kernel, and the later ones whose shape differs
#      (--launch-shapes);
#   2. ncu --clock-control none --cache-control CACHE (NCU_CACHE, default "none all": caches as
#      the program left them, as ktune's kernel replay sees them, then ncu's default flush) with
#      the SpeedOfLight section and the 19 stall ratios, the same information as triage, on every
#      launch of the kernels ktune profiled; the launches ktune profiled are found by name and
#      invocation number;
#   3. per profiled launch: ktune's verdict and top-3 stalls beside ncu's, and the agreement
#      (issue 43's targets: verdicts agree on >= 9 in 10 launches, top stall reason the same on
#      >= 9 in 10); the cost per profiled launch: ktune's collecting time from its exit line (and
#      its wall time over the plain run), ncu's wall time over the plain run, each divided by the
#      launches it profiled.
# Prints the tables, then one `result ...` line per cache mode (scripts/gpu-counters.sh reads
# them; also in OUT_DIR/results.txt). Never changes clocks.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-${OUT:-/tmp/ktune-gpu}/ncu-compare}
shift $(( $# < 2 ? $# : 2 ))
[ "${1:-}" = "--" ] && shift
workload=("$@")
[ ${#workload[@]} -gt 0 ] || workload=(python3 "$root/benchmarks/analysis/attention_block.py" --iters 3)
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin=$build/src/cli/ktune
ncu=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
metrics=${METRICS:-triage}
compare=$root/benchmarks/analysis/ncu_compare.py
export KTUNE_HOME=${KTUNE_HOME:-$(mktemp -d /tmp/ktune-home.XXXXXX)}
cd "$out" || exit 1
: >results.txt

{
  echo "# ktune verdicts vs Nsight Compute, $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  "$ncu" --version | tail -n 1
  echo "workload: ${workload[*]}; ktune --metrics $metrics"
} 2>&1 | tee identity.txt

# timed NAME CMD...: runs CMD with its output in NAME.log and its wall seconds in NAME.wall.
timed() {
  local name=$1 t0 rc
  shift
  t0=$(date +%s.%N)
  "$@" >"$name.log" 2>&1
  rc=$?
  awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.3f\n", a - b }' >"$name.wall"
  return $rc
}

timed plain "${workload[@]}" || { echo "the workload failed on its own (see $out/plain.log)"; exit 1; }
timed ktune-profile "$bin" profile -o "$out/ktune.ktrace" --metrics "$metrics" -- "${workload[@]}" ||
  { echo "ktune profile failed (see $out/ktune-profile.log)"; exit 1; }
"$bin" report "$out/ktune.ktrace" --format json --by name+launch -o "$out/ktune-report.json" ||
  exit 1
"$bin" report "$out/ktune.ktrace" --format contract -o "$out/ktune-contract.md" || exit 1

# The kernels ktune profiled, by mangled name: ncu profiles every launch of exactly those.
regex=$(python3 "$compare" names "$out/ktune.ktrace") || exit 1
stalls=$(python3 "$compare" stall-metrics) || exit 1
# ncu_pass CACHE: ncu on every launch of those kernels, then ktune's reading beside it.
ncu_pass() {
  local cache=$1 rep=$out/ncu-$1
  timed "ncu-$cache" "$ncu" --clock-control none --cache-control "$cache" --section SpeedOfLight \
    --metrics "$stalls" --kernel-name-base mangled --kernel-name "regex:$regex" -f -o "$rep" \
    "${workload[@]}" || { echo "ncu failed (see $out/ncu-$cache.log)"; return 1; }
  "$ncu" -i "$rep.ncu-rep" --csv --page raw --print-units base --print-kernel-base mangled \
    >"$rep-raw.csv" || return 1
  echo "## ncu --cache-control $cache"
  python3 "$compare" compare "$out/ktune.ktrace" "$out/ktune-report.json" "$rep-raw.csv" "$out" \
    "$cache"
}
for cache in ${NCU_CACHE:-none all}; do
  ncu_pass "$cache" | tee "ncu-compare-$cache.txt" || exit 1
  grep '^result ' "ncu-compare-$cache.txt" >>results.txt
done
grep -h 'hardware counters' ktune-profile.log | tail -n 1

#!/usr/bin/env bash
# ktune's verdicts and stall reasons beside Nsight Compute's, on the same launches of a PyTorch
# workload. On a GPU machine, from the repository root:
#   benchmarks/analysis/ncu_compare.sh [BUILD] [OUT_DIR] [-- WORKLOAD ARGS...]
# BUILD holds src/cli/ktune and libktune_tracer.so (default: build). The workload defaults to
# benchmarks/analysis/attention_block.py (--iters 3); anything after -- replaces it.
#   1. ktune profile --metrics roofline,stalls: the first launch of every kernel, and a later one
#      wherever a kernel's launch grows (--launch-shapes);
#   2. ncu --clock-control none (caches flushed, ncu's default, or as found: NCU_CACHE) with
#      SpeedOfLight, WarpStateStats, Occupancy and
#      MemoryWorkloadAnalysis (plus the 19 stall ratios by name) on every launch of the kernels
#      ktune profiled; the launches ktune profiled are found by name and invocation number;
#   3. per profiled launch: ktune's verdict and top-3 stalls beside ncu's, and the agreement
#      (issue 26's targets: verdicts agree on >= 9 in 10 launches, top stall reason the same on
#      >= 9 in 10).
# Prints the table last (also in OUT_DIR/ncu-compare-CACHE.txt). Never changes clocks.
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
export KTUNE_HOME=${KTUNE_HOME:-$(mktemp -d /tmp/ktune-home.XXXXXX)}
cd "$out" || exit 1

{
  echo "# ktune verdicts vs Nsight Compute, $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  "$ncu" --version | tail -n 1
  echo "workload: ${workload[*]}"
} 2>&1 | tee identity.txt

"$bin" profile -o "$out/ktune.ktrace" --metrics roofline,stalls -- "${workload[@]}" \
  >ktune-profile.log 2>&1 || { echo "ktune profile failed (see $out/ktune-profile.log)"; exit 1; }
"$bin" report "$out/ktune.ktrace" --format json --by name+launch -o "$out/ktune-report.json" ||
  exit 1
"$bin" report "$out/ktune.ktrace" --format contract -o "$out/ktune-contract.md" || exit 1

# The kernels ktune profiled, by mangled name: ncu profiles every launch of exactly those.
regex=$(python3 "$root/benchmarks/analysis/ncu_compare.py" names "$out/ktune.ktrace") || exit 1
stalls=$(python3 "$root/benchmarks/analysis/ncu_compare.py" stall-metrics) || exit 1
# ncu_pass CACHE: ncu's sections on every launch of those kernels, with its caches flushed before
# every replay pass (ncu's default, "all") or left as the program left them ("none", as ktune's
# CUPTI kernel replay does), then ktune's reading beside it.
ncu_pass() {
  local cache=$1 rep=$out/ncu-$1
  "$ncu" --clock-control none --cache-control "$cache" --section SpeedOfLight \
    --section WarpStateStats --section Occupancy --section MemoryWorkloadAnalysis \
    --metrics "$stalls" --kernel-name-base mangled --kernel-name "regex:$regex" -f -o "$rep" \
    "${workload[@]}" >"ncu-$cache.log" 2>&1 || { echo "ncu failed (see $out/ncu-$cache.log)"; return 1; }
  "$ncu" -i "$rep.ncu-rep" --csv --page raw --print-units base --print-kernel-base mangled \
    >"$rep-raw.csv" || return 1
  echo "## ncu --cache-control $cache"
  python3 "$root/benchmarks/analysis/ncu_compare.py" compare "$out/ktune.ktrace" \
    "$out/ktune-report.json" "$rep-raw.csv"
}
# NCU_CACHE: "all" (ncu's default), "none", or "all none" for both.
for cache in ${NCU_CACHE:-all}; do ncu_pass "$cache" | tee "ncu-compare-$cache.txt" || exit 1; done
grep -h 'hardware counters' ktune-profile.log | tail -n 1

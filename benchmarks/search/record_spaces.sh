#!/usr/bin/env bash
# Records tuning spaces on the GPU machine as T4 files, for the replay families (issue 27): the
# built-in kernels at several problem sizes, the cuBLASLt algorithm spaces of several GEMM problems
# and a random sample of the hub's convolution and hotspot spaces. Each space is one `ktune tune`
# session, cold (no warm start) and never offered to the cache, searched exhaustively where it is
# small and by `random` (an unbiased sample, which `ktune replay` then treats as the whole space)
# where the time allows only part of it. Bounded: each session has a --time limit and the whole
# script stops starting sessions once TOTAL_S (default 330) seconds have passed, so it ends in
# under 6 minutes on an H100. FAMILIES (default "cublaslt copy gemv hub") picks the families to
# record; HUB_S (default 60) is each hub kernel's sampling time.
#   benchmarks/search/record_spaces.sh KTUNE_BIN OUT_DIR
# Writes OUT_DIR/spaces/<family>/<name>.T4.json, OUT_DIR/spaces/device.txt (nvidia-smi: the
# device, driver and clocks) and OUT_DIR/spaces.tar.gz holding both; prints one line per space.
# Replay one: ktune replay OUT_DIR/spaces/gemv/gemv-7168x16384.T4.json --strategy all --window 16
set -uo pipefail
bin=${1:?usage: record_spaces.sh KTUNE_BIN OUT_DIR}
out=${2:?usage: record_spaces.sh KTUNE_BIN OUT_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
hub=$root/benchmarks/search/hub
total=${TOTAL_S:-330}
families=" ${FAMILIES:-cublaslt copy gemv hub} "
hub_s=${HUB_S:-60}
for f in $families; do
  case $f in cublaslt | copy | gemv | hub) ;; *)
    echo "record_spaces.sh: FAMILIES names '$f', which is not a family here; use some of: cublaslt copy gemv hub." >&2
    exit 2 ;;
  esac
done
spaces=$out/spaces work=$out/record-work
rm -rf "$spaces" "$work"
mkdir -p "$spaces" "$work"
start=$(date +%s)
export CUDA_CACHE_DISABLE=1  # every compile cold, as in a first session
nvidia-smi -q -d CLOCK,PERFORMANCE >"$spaces/device.txt" 2>&1 || true
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv \
  >>"$spaces/device.txt" 2>&1 || true

left() { echo $((total - ($(date +%s) - start))); }

# record FAMILY NAME STRATEGY BUDGET TIME_S ARGS...: one session; its t4.json becomes the space.
record() {
  local family=$1 name=$2 strategy=$3 budget=$4 limit=$5
  shift 5
  [[ $families == *" $family "* ]] || return 0
  local remaining
  remaining=$(left)
  if [ "$remaining" -lt 8 ]; then
    echo "skipped $family/$name: out of time"
    return
  fi
  [ "$limit" -gt "$remaining" ] && limit=$remaining
  local dir=$work/$family-$name
  mkdir -p "$spaces/$family"
  "$bin" --db "$work/ktune.db" tune "$@" --strategy "$strategy" --budget "$budget" \
    --time "$limit" --cold --no-cache --seed 1 --out "$dir" --json >"$dir.json" 2>"$dir.err"
  local rc=$?
  if [ -f "$dir/t4.json" ]; then
    cp "$dir/t4.json" "$spaces/$family/$name.T4.json"
    python3 - "$dir.json" "$family/$name" "$rc" <<'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
    best = s["best"]["time_ns"] / 1e3 if s.get("best") else float("nan")
    print(f"recorded {sys.argv[2]}: {s['evaluations']} of {s['space_size']} configurations "
          f"in {s['elapsed_s']:.0f} s, stop {s['stop']}, best {best:.2f} us (rc {sys.argv[3]})")
except Exception as e:  # the session's own error is in the .err file
    print(f"recorded {sys.argv[2]}: t4.json written, summary unreadable ({e}; rc {sys.argv[3]})")
PY
  else
    echo "FAILED $family/$name (rc $rc): $(tail -c 400 "$dir.err")"
  fi
}

# A copy of a built-in spec with another ProblemSize, beside its kernel source.
resized() {  # KERNEL SIZE_JSON NAME -> path of the new spec
  local kernel=$1 size=$2 name=$3 d=$work/specs/$3
  mkdir -p "$d"
  cp "$root/kernels/$kernel/$kernel.cu" "$d/"
  python3 - "$root/kernels/$kernel/$kernel.json" "$size" "$d/$name.json" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
ks = spec["KernelSpecification"]
old, new = ks["ProblemSize"], json.loads(sys.argv[2])
ks["ProblemSize"] = new
# Scalar arguments that carry a dimension (gemv's n and k) follow it: left at the old size, the
# kernel read past the resized buffers (every configuration CUDA_ERROR_ILLEGAL_ADDRESS).
for a in ks["Arguments"]:
    if a.get("MemoryType") == "Scalar" and a.get("FillValue") in old:
        a["FillValue"] = new[old.index(a["FillValue"])]
json.dump(spec, open(sys.argv[3], "w"), indent=1)
PY
  echo "$d/$name.json"
}

# cuBLASLt: every algorithm candidate of each problem (about 100-300, no compiling).
for p in "gemm_nn f16 m=4096,n=4096,k=4096" "gemm_tn_bias f16 m=12288,n=2048,k=4096" \
  "gemm_nn bf16 m=1024,n=1024,k=8192" "gemm_nt bf16 m=8192,n=256,k=2048" \
  "gemm_nn f16 m=64,n=512,k=512,batch=128"; do
  read -r op dtype shape <<<"$p"
  record cublaslt "$op-$dtype-${shape//[=,]/_}" exhaustive 100000 20 \
    --library cublaslt --op "$op" --dtype "$dtype" --shape "$shape"
done
# Built-in kernels: copy (96 configurations) exhaustively, GEMV (~1,500) by random sample.
for n in 16777216 1048576; do
  record copy "copy-$n" exhaustive 100000 15 "$(resized copy "[$n]" "copy-$n")"
done
for mn in "7168 16384" "4096 4096" "16384 1024"; do
  read -r m n <<<"$mn"
  record gemv "gemv-${m}x$n" random 100000 35 "$(resized gemv "[$m, $n]" "gemv-${m}x$n")"
done
# The hub kernels as shipped: a random sample of each space.
record hub convolution random 100000 "$hub_s" "$hub/convolution_milo.json"
record hub hotspot random 100000 "$hub_s" "$hub/hotspot_milo.json"

tar -C "$out" -czf "$out/spaces.tar.gz" spaces
echo "packed $(find "$spaces" -name '*.T4.json' | wc -l) spaces into $out/spaces.tar.gz" \
  "in $(($(date +%s) - start)) s"

#!/usr/bin/env bash
# The GEMM router on a GPU machine (PyTorch installed):
#   scripts/gpu-route.sh BUNDLE OUT_DIR
# BUNDLE: a build tree (or .gpu-carry from scripts/gpu-bundle.sh) with src/cli/ktune, the router
# (src/cli/libktune_route.so), benchmarks/route/route_host_cost and python/ktune/libktune_python.so.
# Steps (KTUNE_ROUTE_ONLY=host,loop,ab,flip picks some, KTUNE_ROUTE_PROGRAMS the loop's programs;
# the store under $KTUNE_HOME carries over between runs):
#   host  the router's host cost per call: a C++ program calling cuBLASLt (query + matmul, as
#         PyTorch does) and cuBLAS's cublasSgemm_v2 in a host-bound loop, without ktune, with the
#         router and nothing to route, and with a winner for its problem, alternating, 5 times;
#         and cuBLASLt's heuristic query alone (PyTorch's own per-call cost a routed call skips);
#   loop  each program (training steps in bf16, fp16 autocast and TF32; a decode step, eager):
#         ktune profile --gemm-shapes, report, ingest, queue from-backlog, worker --drain, then
#         python -m ktune.prove (with and without the winners, alternating, one process);
#   ab    whole programs under `ktune run` against plain, alternating processes (the decode step
#         in a CUDA graph included), with the store's field verdicts written back in between;
#   flip  one GEMM problem tuned in 10 fresh processes: how often the winner differs beyond noise.
# Prints a short summary last.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=$(cd "${1:?usage: scripts/gpu-route.sh BUNDLE OUT_DIR}" && pwd)
out=${2:-${OUT:-/tmp/ktune-gpu}/route}
mkdir -p "$out"
py=${PYTHON:-python3}
. "$root/scripts/gpu-mount.sh"
mount_bundle "$bundle"
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
export KTUNE_NATIVE_LIB=$bundle/python/ktune/libktune_python.so
export KTUNE_ROUTER=$bundle/src/cli/libktune_route.so
export KTUNE_HOME=${KTUNE_HOME:-/tmp/ktune-route-home}
mkdir -p "$KTUNE_HOME"
# KTUNE_ROUTE_STORE=FILE: the store an earlier run left (it is copied back to OUT_DIR/store.db at
# the end), so a later machine need not tune again.
if [ -n "${KTUNE_ROUTE_STORE:-}" ] && [ -f "$KTUNE_ROUTE_STORE" ] && [ ! -f "$KTUNE_HOME/ktune.db" ]; then
  cp "$KTUNE_ROUTE_STORE" "$KTUNE_HOME/ktune.db"
fi
ktune=$bundle/src/cli/ktune
host_cost=$bundle/benchmarks/route/route_host_cost
only=${KTUNE_ROUTE_ONLY:-host,loop,ab,flip}
wants() { [[ ",$only," == *",$1,"* ]]; }
summary=()

{
  echo "# ktune GEMM router, $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
  $py -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
  ldd "$($py -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so"))')" | grep -i cublas
} 2>&1 | tee -a "$out/identity.txt"

if wants host; then
  echo "== host cost per GEMM call"
  for dtype in bf16 tf32; do  # the lt loop's problem, and the sgemm loop's (TF32 math mode)
    "$ktune" tune --library cublaslt --op gemm_tn --shape m=64,n=64,k=64 --dtype $dtype --budget 12 \
      -o "$out/tune-tiny-$dtype" >>"$out/tune-tiny.log" 2>&1
  done
  "$ktune" run --write-table "$out/tiny-table.json" >/dev/null 2>>"$out/tune-tiny.log"
  : >"$out/host.jsonl"
  for rep in 1 2 3 4 5; do
    for mode in plain pass routed; do
      for api in lt sgemm lt-query; do
        [ "$mode" != plain ] && [ "$api" = lt-query ] && continue
        case $mode in
          plain) env=() ;;
          pass) env=(LD_PRELOAD="$KTUNE_ROUTER") ;;
          routed) env=(LD_PRELOAD="$KTUNE_ROUTER" KTUNE_ROUTE_TABLE="$out/tiny-table.json") ;;
        esac
        r=$(env "${env[@]}" "$host_cost" --api "$api" --calls 20000)
        echo "{\"rep\": $rep, \"mode\": \"$mode\", \"result\": $r}" >>"$out/host.jsonl"
      done
    done
  done
  summary+=("$($py - "$out/host.jsonl" <<'PYEOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(mode, api):
    v = [r["result"]["host_ns_per_call"] for r in rows if r["mode"] == mode and r["result"]["api"] == api]
    return statistics.median(v), min(v), max(v)
def sums(mode, api):
    return {r["result"]["checksum"] for r in rows if r["mode"] == mode and r["result"]["api"] == api}
out = ["### host cost per GEMM call (64^3, median of 5 alternating runs, ns)",
       "| call | without ktune | router, nothing to route | router, winner routed | pass-through cost | routed - plain |",
       "| --- | --- | --- | --- | --- | --- |"]
for api in ("lt", "sgemm"):
    p, s, r = med("plain", api), med("pass", api), med("routed", api)
    out.append(f"| {api} | {p[0]:.0f} ({p[1]:.0f}-{p[2]:.0f}) | {s[0]:.0f} ({s[1]:.0f}-{s[2]:.0f}) | "
               f"{r[0]:.0f} ({r[1]:.0f}-{r[2]:.0f}) | {s[0] - p[0]:+.0f} | {r[0] - p[0]:+.0f} |")
q = med("plain", "lt-query")
out.append(f"cuBLASLt's heuristic query alone (what PyTorch pays per call): {q[0]:.0f} ns")
out.append(f"checksums equal across modes: lt {len(sums('plain','lt') | sums('routed','lt')) == 1}, "
           f"sgemm {len(sums('plain','sgemm') | sums('routed','sgemm')) == 1}")
print("\n".join(out))
PYEOF
)")
fi

# One program through the loop: profile, report, ingest, backlog, worker, prove.
loop() {
  local name=$1 script=$2 which=$3 entry=$4 dir=$out/$1
  mkdir -p "$dir"
  echo "== $name"
  "$ktune" profile --gemm-shapes -o "$dir/run.ktrace" -- $py "$script" --which "$which" --iters 5 \
    >"$dir/profile.log" 2>&1
  echo "profile rc=$?"
  "$ktune" report --format json "$dir/run.ktrace" >"$dir/report.json" 2>>"$dir/profile.log"
  "$ktune" report "$dir/run.ktrace" 2>/dev/null | sed -n '/^GEMM calls/,/^$/p' >"$dir/report-gemm.txt"
  "$ktune" ingest "$dir"/run*.ktrace --tag "job=$name" >/dev/null 2>&1
  "$ktune" queue from-backlog --budget "${KTUNE_ROUTE_BUDGET:-40}" --json >"$dir/queued.json" 2>>"$dir/profile.log"
  local t0; t0=$(date +%s)
  "$ktune" worker --drain >"$dir/worker.log" 2>&1
  echo "worker rc=$? in $(( $(date +%s) - t0 )) s"
  "$ktune" queue ls --json >"$dir/jobs.json" 2>/dev/null
  $py -m ktune.prove "$script:$entry" --rounds "${KTUNE_PROVE_ROUNDS:-8}" --iters 20 \
    --warmup 40 --json >"$dir/prove.json" 2>"$dir/prove.err"
  echo "prove rc=$?"
  summary+=("$($py "$root/benchmarks/route/loop_summary.py" "$name" "$dir")")
}

# KTUNE_ROUTE_PROGRAMS picks the loop's programs (default all four).
programs=${KTUNE_ROUTE_PROGRAMS:-train-bf16,train-f16,train-tf32,decode}
if wants loop; then
  for p in ${programs//,/ }; do
    case $p in
      train-bf16) loop "$p" "$root/benchmarks/python/train_step.py" bf16 make_step_bf16 ;;
      train-f16) loop "$p" "$root/benchmarks/python/train_step.py" f16 make_step_f16 ;;
      train-tf32) loop "$p" "$root/benchmarks/python/train_step.py" tf32 make_step_tf32 ;;
      decode) loop "$p" "$root/benchmarks/python/decode_step.py" eager make_step ;;
      *) echo "gpu-route.sh: KTUNE_ROUTE_PROGRAMS names '$p'; use train-bf16, train-f16, train-tf32, decode." >&2 ;;
    esac
  done
fi

if wants ab; then
  echo "== whole programs: ktune run against plain, alternating processes"
  : >"$out/ab.jsonl"
  for rep in $(seq 1 "${KTUNE_ROUTE_AB_REPS:-3}"); do
    for case in "train_step.py bf16" "train_step.py tf32" "decode_step.py graph" "decode_step.py eager"; do
      set -- $case
      for mode in plain ktune; do
        if [ "$mode" = plain ]; then
          r=$($py "$root/benchmarks/python/$1" --which "$2" 2>>"$out/ab.err" | tail -n 1)
        else
          r=$("$ktune" run -- $py "$root/benchmarks/python/$1" --which "$2" 2>>"$out/ab.err" | tail -n 1)
        fi
        echo "{\"rep\": $rep, \"program\": \"$1 $2\", \"mode\": \"$mode\", \"result\": ${r:-null}}" >>"$out/ab.jsonl"
      done
    done
  done
  summary+=("$($py - "$out/ab.jsonl" <<'PYEOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
out = ["### whole programs, ktune run vs plain (alternating pairs; step median ms, CUDA events)",
       "| program | plain | ktune run | ratio (plain / ktune) per pair |", "| --- | --- | --- | --- |"]
for prog in dict.fromkeys(r["program"] for r in rows):
    p = [r["result"]["median_ms"] for r in rows if r["program"] == prog and r["mode"] == "plain" and r["result"]]
    k = [r["result"]["median_ms"] for r in rows if r["program"] == prog and r["mode"] == "ktune" and r["result"]]
    ratios = ", ".join(f"{a / b:.3f}" for a, b in zip(p, k))
    out.append(f"| {prog} | {statistics.median(p):.3f} | {statistics.median(k):.3f} | {ratios} |" if p and k else f"| {prog} | missing | missing | |")
print("\n".join(out))
PYEOF
)")
fi

if wants flip; then
  echo "== winner stability: one problem tuned in 10 fresh processes"
  : >"$out/flip.jsonl"
  for i in $(seq 1 10); do
    KTUNE_DB=$out/flip-$i.db "$ktune" tune --library cublaslt --op gemm_tn --shape m=2816,n=4096,k=1024 \
      --dtype bf16 --budget 40 -o "$out/flip-$i" >/dev/null 2>>"$out/flip.err"
    KTUNE_DB=$out/flip-$i.db "$ktune" cache ls --json >>"$out/flip.jsonl" 2>>"$out/flip.err"
  done
  summary+=("$($py "$root/benchmarks/route/flip_summary.py" "$out/flip.jsonl")")
fi

cp "$KTUNE_HOME/ktune.db" "$out/store.db" 2>/dev/null
echo
echo "== summary"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"

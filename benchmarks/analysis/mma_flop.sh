#!/usr/bin/env bash
# The unit of ktune's FLOP for warp-level tensor-core kernels (mma.sync / HMMA, as WMMA, CUTLASS 2
# and many hand-written kernels use): benchmarks/analysis/mma_flop.cu runs two GEMMs of known size
# (fp16 and bf16 inputs, fp32 accumulate), each exactly 2*M*N*K tensor FLOP; ktune profile
# --metrics roofline,compute reports their tensor FLOP (from the all-paths tensor counters), and
# ncu reads the same counters and the HMMA instruction count. On a GPU machine, from the
# repository root:   benchmarks/analysis/mma_flop.sh [BUILD] [OUT_DIR]
# Prints one line per kernel: expected, ktune's, ncu's, and ktune / expected. Never changes clocks.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=$(mkdir -p "${2:-/tmp/ktune-mma-flop}" && cd "${2:-/tmp/ktune-mma-flop}" && pwd)
bin=$build/src/cli/ktune
ncu=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
export KTUNE_HOME=${KTUNE_HOME:-$(mktemp -d /tmp/ktune-home.XXXXXX)}
"$nvcc" -O2 -arch=native -o "$out/mma_flop" "$root/benchmarks/analysis/mma_flop.cu" ||
  { echo "FAIL: nvcc mma_flop.cu"; exit 1; }
"$out/mma_flop" >"$out/expected.txt" || { echo "FAIL: mma_flop did not run"; exit 1; }
rm -f "$out/mma.ktrace"
"$bin" profile --metrics roofline,compute -o "$out/mma.ktrace" -- "$out/mma_flop" \
  >"$out/profile.log" 2>&1 || { echo "FAIL: ktune profile"; tail -5 "$out/profile.log"; exit 1; }
"$bin" report "$out/mma.ktrace" --json >"$out/report.json" 2>"$out/report.err" ||
  { echo "FAIL: ktune report"; cat "$out/report.err"; exit 1; }
metrics=sm__ops_path_tensor_src_fp16.sum,sm__ops_path_tensor_src_bf16_dst_fp32.sum,sm__inst_executed_pipe_tensor_op_hmma.sum
"$ncu" --clock-control none --metrics "$metrics" --csv "$out/mma_flop" >"$out/ncu.csv" 2>"$out/ncu.err" ||
  { echo "FAIL: ncu"; tail -5 "$out/ncu.err"; exit 1; }
python3 - "$out" <<'PY'
import csv, io, json, sys
out = sys.argv[1]
expected = {}
for line in open(f"{out}/expected.txt"):
    words = line.split()
    expected[words[0]] = float(words[4].split("=")[1])
report = json.load(open(f"{out}/report.json"))
ktune = {}
for k in report["counters"]["kernels"]:
    kind = "bf16" if "bfloat16" in k["name"] else "fp16"
    ktune[kind] = k.get("tensor_flop")
text = open(f"{out}/ncu.csv").read()
rows = list(csv.DictReader(io.StringIO(text[text.index('"ID"'):])))
ncu = {}
for r in rows:
    kind = "bf16" if "bfloat16" in r["Kernel Name"] else "fp16"
    ncu.setdefault(kind, {})[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
ok = True
for kind, flop in expected.items():
    got = ktune.get(kind)
    n = ncu.get(kind, {})
    ratio = got / flop if got else float("nan")
    ok = ok and got is not None and abs(ratio - 1) < 0.01
    print(f"{kind}: expected {flop:.4g} FLOP; ktune tensor_flop {got if got is None else f'{got:.4g}'}"
          f" (x{ratio:.4f}); ncu " + ", ".join(f"{m} {v:.4g}" for m, v in sorted(n.items())))
print("mma.sync tensor FLOP: " + ("ktune within 1 % of 2*M*N*K on every kernel" if ok else
                                  "MISMATCH: ktune's tensor FLOP are not 2*M*N*K"))
sys.exit(0 if ok else 1)
PY

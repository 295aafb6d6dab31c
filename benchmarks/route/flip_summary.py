"""Winner stability (scripts/gpu-route.sh flip): one GEMM problem tuned in fresh processes, each
into its own store; a flip is a winner whose algorithm differs from the most common one by more
than the two measurements' noise.
    python3 flip_summary.py FLIP.jsonl   (one `ktune cache ls --json` per process)
"""
import json
import sys
from collections import Counter

runs = []
decoder = json.JSONDecoder()
text = open(sys.argv[1]).read()
i = 0
while i < len(text):
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text):
        break
    doc, i = decoder.raw_decode(text, i)
    entries = doc["entries"] if isinstance(doc, dict) else doc
    if entries:
        e = entries[0]
        c = e["config"]
        runs.append(((c["algo_id"], c["tile"], c["stages"], c["splitk"], c["reduction"],
                      c["swizzle"], c.get("custom", 0)), e["median_ns"], e["noise_ns"]))
if not runs:
    print("### winner stability: no run stored a winner")
    sys.exit(0)
common, _ = Counter(r[0] for r in runs).most_common(1)[0]
ref = [r for r in runs if r[0] == common]
ref_ns = sorted(r[1] for r in ref)[len(ref) // 2]
ref_noise = max(r[2] for r in ref)
flips = [r for r in runs if r[0] != common and abs(r[1] - ref_ns) > max(r[2], ref_noise)]
distinct = len(set(r[0] for r in runs))
print(f"### winner stability: {len(runs)} processes, {distinct} distinct winners; "
      f"{len(flips)} flips beyond noise ({100 * len(flips) / len(runs):.0f} %, target <= 5 %); "
      f"medians {min(r[1] for r in runs) / 1e3:.2f}-{max(r[1] for r in runs) / 1e3:.2f} us")

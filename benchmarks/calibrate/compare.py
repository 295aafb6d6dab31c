"""Compares `ktune calibrate --json` with torch_ceilings.py's JSON: ratio per ceiling, PASS within
the issue's 5 % bound. Usage: compare.py KTUNE_JSON TORCH_JSON"""
import json
import sys

ktune = json.load(open(sys.argv[1]))
torch = json.load(open(sys.argv[2]))
ceil = {c["name"]: c for c in ktune["ceilings"]}
dev = ktune["identity"]["devices"][0]
print(f"device {dev['name']}  SM clock max {dev['sm_clock_max_mhz']} MHz  driver "
      f"{ktune['identity']['software']['driver_version']}  torch {torch['torch']}")
ok = True
# The bounds are on DRAM bandwidth and bf16; fp16 is shown beside them, not gated.
for name, unit, scale, gated in (("dram_bandwidth", "TB/s", 1e12, True),
                                 ("bf16_tensor", "TFLOP/s", 1e12, True),
                                 ("fp16_tensor", "TFLOP/s", 1e12, False)):
    k, t = ceil[name]["value"], torch[name]
    ratio = k / t
    passed = abs(ratio - 1) <= 0.05
    if gated:
        ok &= passed
    verdict = ("PASS" if passed else "FAIL") if gated else "info"
    throttled = ceil[name]["throttled_samples"]
    print(f"{name:<15} ktune {k/scale:8.3f} {unit:<8} torch {t/scale:8.3f} {unit:<8} "
          f"ratio {ratio:.3f}  {verdict} (within 5 %)  "
          f"[{ceil[name]['method']}; SM {ceil[name]['sm_clock_mhz']} MHz"
          f"{f'; {throttled} samples throttled' if throttled else ''}]")
f = ceil["fp32_fma"]
print(f"fp32_fma        ktune {f['value']/1e12:8.3f} TFLOP/s (no torch baseline)  [{f['method']}]")
print("calibrate vs torch:", "PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)

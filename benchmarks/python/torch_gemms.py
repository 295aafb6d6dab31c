"""The transformer layer's GEMMs tuned through cuBLASLt and applied in PyTorch, in one process:
records the layer's linear-layer GEMM shapes, tunes each with `ktune tune --library cublaslt`
(into the store at KTUNE_DB), checks the routed results against PyTorch's, then times the layer
with PyTorch's defaults and with ktune's selections, alternating, and prints one JSON object."""
import argparse
import json
import statistics
import subprocess
import sys
import time

import torch

import ktune.torch as kt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ktune", required=True, help="the ktune binary")
    ap.add_argument("--workload", required=True, help="folder holding torch_layer.py")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--budget", type=int, default=120)
    args = ap.parse_args()
    sys.path.insert(0, args.workload)
    import torch_layer  # noqa: E402 (the workload the lead copies beside the repository)

    # 1. The shapes, as the layer runs them.
    with kt.record_linear_shapes() as seen:
        torch_layer.layer_loop(1)
    shapes = sorted(seen)
    tuned = []
    for dtype, bias, m, n, k in shapes:
        cmd = [args.ktune, "tune", "--library", "cublaslt", "--op", "gemm_bias" if bias else "gemm",
               "--shape", f"m={m},n={n},k={k}", "--dtype", dtype, "--budget", str(args.budget),
               "--json"]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stderr, file=sys.stderr)
            raise SystemExit(f"ktune tune failed for {m}x{n}x{k}")
        j = json.loads(r.stdout)
        tuned.append({
            "shape": f"{m}x{n}x{k}", "dtype": dtype, "bias": bias, "calls_per_iter": seen[(dtype, bias, m, n, k)] // 11,  # layer_loop(1) runs 10 warm-up steps + 1
            "default_us": j["default_time"]["time_ns"]["median"] / 1e3,
            "winner_us": j["winner_time"]["time_ns"]["median"] / 1e3,
            "speedup": j["speedup_vs_default"],
            "winner": {x: j["winner"][x] for x in ("source", "heuristic_rank", "algo_id", "tile", "stages", "splitk", "swizzle", "reduction")},
            "candidates": len(j["candidates"]),
            "verified": sum(c["status"] == "ok" for c in j["candidates"]),
            "statuses": {st: sum(c["status"] == st for c in j["candidates"]) for st in ("ok", "rejected", "wrong", "failed")},
            "first_wrong": next((c["detail"] for c in j["candidates"] if c["status"] == "wrong"), ""),
            "power_capped_samples": j.get("power_capped_samples", 0),
            "tune_s": time.perf_counter() - t0,
        })

    # 2. The routed GEMMs compute what PyTorch computes.
    checks = []
    for dtype, bias, m, n, k in shapes:
        dt = torch.float16 if dtype == "f16" else torch.bfloat16
        lin = torch.nn.Linear(k, m, bias=bias, device="cuda", dtype=dt)
        x = torch.randn(1, n, k, device="cuda", dtype=dt)
        with torch.no_grad():
            ref = lin(x)
            with kt.tuned_gemms():
                got = lin(x)
                routed = kt.stats["routed"]
        checks.append({"shape": f"{m}x{n}x{k}", "routed": routed,
                       "max_abs_diff": (got.float() - ref.float()).abs().max().item(),
                       "ref_max_abs": ref.float().abs().max().item()})

    # 3. The layer, PyTorch's defaults and ktune's selections alternating in one process.
    default_ms, ktune_ms = [], []
    for _ in range(args.rounds):
        default_ms.append(torch_layer.layer_loop(args.iters))
        with kt.tuned_gemms():
            ktune_ms.append(torch_layer.layer_loop(args.iters))
            routed, passed = kt.stats["routed"], kt.stats["passed"]
    print(json.dumps({
        "torch": torch.__version__, "device": torch.cuda.get_device_name(),
        "shapes": tuned, "checks": checks,
        "layer_default_ms": default_ms, "layer_ktune_ms": ktune_ms,
        "layer_default_median_ms": statistics.median(default_ms),
        "layer_ktune_median_ms": statistics.median(ktune_ms),
        "routed_calls_last_round": routed, "passed_calls_last_round": passed,
    }, indent=1))


if __name__ == "__main__":
    main()

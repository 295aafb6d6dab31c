"""The router's cost and CUDA-graph capture, on the GPU: a 64^3 bf16 GEMM (x @ W, NN) tuned with
`ktune tune --library cublaslt` into KTUNE_DB, then the host time per call of a GEMM small enough
that the host is what costs: PyTorch's own, routed to the winner, and passed to PyTorch by the
router (a shape with no winner); and the routed GEMM captured in a CUDA graph, replayed, against
eager. One JSON object:
    {"us_per_call": {"pytorch", "routed", "passed_pytorch", "passed"}, "graph_equal", ...}"""
import argparse
import json
import subprocess
import time

import torch

import ktune.torch as kt


def per_call_us(f, n=5000):
    for _ in range(200):
        f()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def summary(path):
    j = json.load(open(path))
    calls = ", ".join(f"{k} {v:.2f} us" for k, v in j["us_per_call"].items())
    print(f"routing, host time per 64^3 GEMM call: {calls}; graph replay equals eager: "
          f"{j['graph_equal']}; routed against PyTorch max |diff| {j['routed_vs_pytorch_max_abs_diff']}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ktune")
    ap.add_argument("--summary", help="print one line of an earlier run's JSON")
    a = ap.parse_args()
    if a.summary:
        return summary(a.summary)
    subprocess.run([a.ktune, "tune", "--library", "cublaslt", "--op", "gemm_nn", "--shape",
                    "m=64,n=64,k=64", "--dtype", "bf16", "--budget", "8", "--json"], check=True,
                   capture_output=True)
    x = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
    x2 = torch.randn(64, 96, device="cuda", dtype=torch.bfloat16)
    w2 = torch.randn(96, 64, device="cuda", dtype=torch.bfloat16)
    us = {"pytorch": per_call_us(lambda: x @ w), "passed_pytorch": per_call_us(lambda: x2 @ w2)}
    # The floor any Python override pays: the dispatcher calling into Python and back into
    # PyTorch's out= kernel, with no routing at all.
    import warnings
    floor = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        floor.impl("mm", lambda a, b: torch.mm(a, b, out=a.new_empty((a.shape[0], b.shape[1]))),
                   "CUDA")
    us["python_override_floor"] = per_call_us(lambda: x @ w)
    floor._destroy()
    ref = x @ w
    with kt.tuned_gemms():
        kt.reset_stats()
        us["routed"] = per_call_us(lambda: x @ w)
        us["passed"] = per_call_us(lambda: x2 @ w2)
        eager = x @ w
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                x @ w
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        before = kt.stats()["routed"]
        with torch.cuda.graph(g):
            y = x @ w
        captured = kt.stats()["routed"] - before
        g.replay()
        torch.cuda.synchronize()
        stats = kt.stats()
    print(json.dumps({
        "schema_version": 1,
        "us_per_call": us,
        "overhead_routed_us": us["routed"] - us["pytorch"],
        "overhead_passed_us": us["passed"] - us["passed_pytorch"],
        "routed_calls": stats["routed"], "passed_calls": stats["passed"],
        "routed_in_graph_capture": captured,
        "graph_equal": bool(torch.equal(y, eager)),
        "routed_vs_pytorch_max_abs_diff": (eager.float() - ref.float()).abs().max().item(),
    }, indent=2))


if __name__ == "__main__":
    main()

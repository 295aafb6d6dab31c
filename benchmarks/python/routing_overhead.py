"""The router's cost and CUDA-graph capture, on the GPU: a 64^3 bf16 GEMM (x @ W, NN) tuned with
`ktune tune --library cublaslt` into KTUNE_DB, then the host time per call of a GEMM small enough
that the host is what costs: PyTorch's own, routed to the winner, and passed to PyTorch by the
router (a shape with no winner); and the routed GEMM captured in a CUDA graph, replayed, against
eager (the routed call runs another algorithm than PyTorch's: the search's winner, or the
heuristic's second choice where the search kept PyTorch's). One JSON object:
    {"us_per_call": {"pytorch", "routed", "passed_pytorch", "passed"}, "graph_equal", ...}"""
import argparse
import json
import statistics
import subprocess
import tempfile
import time
import warnings

import torch

import ktune.torch as kt


def per_call_us(f, n=2000):
    for _ in range(200):
        f()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


ROUNDS = 7


def alternating_us(variants):
    """Host us per call of each variant: the median over ROUNDS rounds, each round measuring every
    variant once in turn (a variant is (enter, call, leave)), so drift of the host's clocks
    between rounds reaches all of them alike. Also each variant's min and max round."""
    rounds = {name: [] for name in variants}
    for _ in range(ROUNDS):
        for name, (enter, call, leave) in variants.items():
            enter()
            rounds[name].append(per_call_us(call))
            leave()
    return ({name: statistics.median(r) for name, r in rounds.items()},
            {name: [min(r), max(r)] for name, r in rounds.items()})


def summary(path):
    j = json.load(open(path))
    calls = ", ".join(f"{k} {v:.2f} us" for k, v in j["us_per_call"].items())
    print(f"routing, host time per 64^3 GEMM call (median of {j['rounds']} alternating rounds): "
          f"{calls}; graph replay equals eager: {j['graph_equal']}; "
          f"routed against PyTorch max |diff| {j['routed_vs_pytorch_max_abs_diff']}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ktune")
    ap.add_argument("--summary", help="print one line of an earlier run's JSON")
    a = ap.parse_args()
    if a.summary:
        return summary(a.summary)
    out = tempfile.mkdtemp(prefix="ktune-routing.")
    subprocess.run([a.ktune, "tune", "--library", "cublaslt", "--op", "gemm_nn", "--shape",
                    "m=64,n=64,k=64", "--dtype", "bf16", "--budget", "8", "--json", "--output",
                    f"{out}/session"], check=True, capture_output=True)
    # The cost is that of a routed call: when the search kept PyTorch's own algorithm (what a
    # 64^3 GEMM's usually is), the heuristic's second choice is cached in its place, forced.
    got = subprocess.run([a.ktune, "cache", "get", "--op", "gemm_nn", "--dtype", "bf16",
                          "--shape", "m=64,n=64,k=64,batch=1", "--json"], check=True,
                         capture_output=True, text=True)
    entry = json.loads(got.stdout)["entry"]
    kept = kt.is_default(entry["config"])
    if kept:
        second = json.load(open(f"{out}/session/candidates.json"))["configs"][1]
        entry["config"] = dict(second, layout=entry["config"]["layout"],
                               cublaslt_version=entry["config"]["cublaslt_version"])
        with open(f"{out}/entry.json", "w") as f:
            json.dump(entry, f)
        subprocess.run([a.ktune, "cache", "put", "--force", f"{out}/entry.json"], check=True,
                       capture_output=True)
    x = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
    x2 = torch.randn(64, 96, device="cuda", dtype=torch.bfloat16)
    w2 = torch.randn(96, 64, device="cuda", dtype=torch.bfloat16)
    # The cost any Python override pays: the dispatcher calling into Python and back into
    # PyTorch's out= kernel, with no routing at all.
    trivial = []

    def override_trivially():
        lib = torch.library.Library("aten", "IMPL")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib.impl("mm", lambda a, b: torch.mm(a, b, out=a.new_empty((a.shape[0], b.shape[1]))),
                     "CUDA")
        trivial.append(lib)

    def nothing():
        pass

    us, spread = alternating_us({
        "pytorch": (nothing, lambda: x @ w, nothing),
        "passed_pytorch": (nothing, lambda: x2 @ w2, nothing),
        "python_override_trivial": (override_trivially, lambda: x @ w,
                                    lambda: trivial.pop()._destroy()),
        "routed": (kt.enable, lambda: x @ w, kt.disable),
        "passed": (kt.enable, lambda: x2 @ w2, kt.disable),
    })
    ref = x @ w
    with kt.tuned_gemms():
        kt.reset_stats()
        for _ in range(10):
            x @ w
            x2 @ w2
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
        "search_kept_pytorchs_algorithm": kept,
        "rounds": ROUNDS,
        "us_per_call": us,
        "us_per_call_round_range": spread,
        "overhead_routed_us": us["routed"] - us["pytorch"],
        "overhead_passed_us": us["passed"] - us["passed_pytorch"],
        "routed_calls": stats["routed"], "passed_calls": stats["passed"],
        "routed_in_graph_capture": captured,
        "graph_equal": bool(torch.equal(y, eager)),
        "routed_vs_pytorch_max_abs_diff": (eager.float() - ref.float()).abs().max().item(),
    }, indent=2))


if __name__ == "__main__":
    main()

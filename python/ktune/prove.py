"""Proof on your own program: a workload run with and without ktune's GEMM selections, alternating,
side by side.

    python -m ktune.prove workload.py[:make_step] [--rounds 10] [--iters 50] [--warmup 10]
                          [--db URL] [--json]

`make_step()` is the workload's own code: it builds the model and inputs and returns a callable
that runs one iteration (an inference or a training step); when that callable returns a tensor (or
a tuple or list whose first item is one), the routed result is compared with PyTorch's.

Each round runs `--iters` iterations with PyTorch's own GEMMs and `--iters` with ktune's winners
(ktune.torch.tuned_gemms), in alternating order round to round, each iteration timed on the GPU with
CUDA events. Printed: per-iteration time of each (median, with the 10th and 90th percentiles and
the spread of the round medians), their ratio overall and per round (both modes of a round run back
to back, so drift between rounds cancels), the GEMM calls of one iteration (counted in an untimed
iteration with every GEMM op overridden): routed to a winner, kept (the winner is PyTorch's own
algorithm, so they are left to it at no cost) and passed to PyTorch (no winner; by op), each routed
problem with its tuned and default times from the cache, the kept problems, and the largest
difference of the routed output from PyTorch's. `--json` prints the same as one object
(schema_version 1).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional

SCHEMA_VERSION = 1


def _load_step(target: str) -> Callable[[], object]:
    path, _, name = target.partition(":")
    name = name or "make_step"
    file = Path(path)
    if not file.is_file():
        raise SystemExit(f"ktune.prove: {path} is not a file; give the workload as FILE.py[:FUNCTION].")
    spec = importlib.util.spec_from_file_location(file.stem, file)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(file.resolve().parent))
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    make = getattr(module, name, None)
    if not callable(make):
        raise SystemExit(f"ktune.prove: {path} defines no function {name}(); it should build the "
                         "model and return a callable that runs one iteration.")
    step = make()
    if not callable(step):
        raise SystemExit(f"ktune.prove: {name}() returned {type(step).__name__}, not a callable "
                         "that runs one iteration.")
    return step


def _first_tensor(out: object):
    import torch

    if isinstance(out, (tuple, list)) and out:
        out = out[0]
    return out if isinstance(out, torch.Tensor) else None


def _percentile(values: List[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(q * (len(s) - 1)))))]


def _time_iterations(step, iters: int) -> List[float]:
    import torch

    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(iters)]
    for start, end in events:
        start.record()
        step()
        end.record()
    torch.cuda.synchronize()
    return [start.elapsed_time(end) for start, end in events]  # ms


def prove(step, rounds: int, iters: int, warmup: int, db: Optional[str]) -> Dict[str, object]:
    import torch

    from . import torch as kt

    # Warm-up: PyTorch's heuristics and ktune's plans are built outside the timed rounds.
    for on in (False, True):
        if on:
            kt.enable(db)
        for _ in range(warmup):
            step()
        kt.disable()
    torch.cuda.synchronize()
    # The routed result against PyTorch's, from the same inputs.
    reference = _first_tensor(step())
    kt.enable(db)
    routed_out = _first_tensor(step())
    kt.disable()
    # Every GEMM call of one iteration, by what the router does with it (census: all ops
    # overridden, so calls the timed rounds leave to PyTorch at no cost are counted too).
    kt.enable(db, census=True)
    kt.reset_stats()
    step()
    torch.cuda.synchronize()
    census = kt.stats()
    kt.disable()
    max_rel = None
    if reference is not None and routed_out is not None and reference.shape == routed_out.shape:
        ref = reference.float()
        scale = ref.abs().max().item() or 1.0
        max_rel = (routed_out.float() - ref).abs().max().item() / scale

    times: Dict[str, List[float]] = {"pytorch": [], "ktune": []}
    round_medians: Dict[str, List[float]] = {"pytorch": [], "ktune": []}
    routed = passed = 0
    by_key: Dict[str, int] = {}
    for r in range(rounds):
        for mode in (("pytorch", "ktune") if r % 2 == 0 else ("ktune", "pytorch")):
            if mode == "ktune":
                kt.enable(db)
                kt.reset_stats()
            t = _time_iterations(step, iters)
            if mode == "ktune":
                s = kt.stats()
                routed += s["routed"]
                passed += s["passed"]
                for k, v in s["routed_by_key"].items():
                    by_key[k] = by_key.get(k, 0) + v
                kt.disable()
            times[mode] += t
            round_medians[mode].append(statistics.median(t))

    def summary(mode: str) -> Dict[str, float]:
        t = times[mode]
        return {"median_ms": statistics.median(t), "p10_ms": _percentile(t, 0.1),
                "p90_ms": _percentile(t, 0.9), "round_min_ms": min(round_medians[mode]),
                "round_max_ms": max(round_medians[mode]), "iterations": len(t)}

    base, tuned = summary("pytorch"), summary("ktune")
    # Each round runs both back to back, so a round's ratio is free of drift between rounds (clocks,
    # other work on the machine): their median and range say how sure the ratio is.
    round_ratios = [b / k for b, k in zip(round_medians["pytorch"], round_medians["ktune"]) if k]
    n = rounds * iters
    shapes = []
    winners = {}
    for entry in json.loads(kt._ktune.list_entries_json(kt._db(db), "", *_gpu())):
        budget = entry.get("provenance", {}).get("budget", {})
        s = entry["shape"]
        if len(s) == 4:
            name = kt.key_name((entry["op"], entry["dtype"], *s))
            winners[name] = (entry["median_ns"], budget.get("default_median_ns"))
    for name, calls in sorted(by_key.items(), key=lambda kv: -kv[1]):
        tuned_ns, default_ns = winners.get(name, (None, None))
        shapes.append({"problem": name, "calls_per_iteration": calls / n,
                       "tuned_us": tuned_ns / 1e3 if tuned_ns else None,
                       "default_us": default_ns / 1e3 if default_ns else None,
                       "gain": default_ns / tuned_ns if tuned_ns and default_ns else None})
    return {"schema_version": SCHEMA_VERSION, "rounds": rounds, "iterations_per_round": iters,
            "pytorch": base, "ktune": tuned,
            "speedup": base["median_ms"] / tuned["median_ms"] if tuned["median_ms"] else None,
            "round_speedups": {"median": statistics.median(round_ratios), "min": min(round_ratios),
                               "max": max(round_ratios)},
            "routed_per_iteration": routed / n, "passed_per_iteration": passed / n,
            "gemm_calls_per_iteration": {
                "routed": census["routed"], "kept": census["kept"], "passed": census["passed"],
                "passed_by_op": census["passed_by_op"]},
            "kept_problems": [{"problem": k, "calls_per_iteration": v}
                              for k, v in sorted(census["kept_by_key"].items(),
                                                 key=lambda kv: -kv[1])],
            "max_relative_difference": max_rel, "routed_problems": shapes}


def _gpu():
    from . import environment

    e = environment()
    return e["arch"], e["device_name"]


def _print(r: Dict[str, object]) -> None:
    def line(name: str, s: Dict[str, float]) -> str:
        return (f"  {name:<8} {s['median_ms']:9.4f} ms/iter  (p10 {s['p10_ms']:.4f}, p90 "
                f"{s['p90_ms']:.4f}; round medians {s['round_min_ms']:.4f}-{s['round_max_ms']:.4f})")

    print(f"{r['rounds']} rounds of {r['iterations_per_round']} iterations each way, alternating:")
    print(line("PyTorch", r["pytorch"]))  # type: ignore[arg-type]
    print(line("ktune", r["ktune"]))  # type: ignore[arg-type]
    rr = r["round_speedups"]
    if not r["gemm_calls_per_iteration"]["routed"]:  # type: ignore[index]
        print("  no GEMM call was routed: both ways ran PyTorch's own kernels, so the ratio below "
              "is this workload's run-to-run spread, not a gain")
    print(f"  ratio    {r['speedup']:.3f}x (PyTorch's time / ktune's); per round, both back to back: "
          f"median {rr['median']:.3f}x, {rr['min']:.3f}-{rr['max']:.3f}x")
    c = r["gemm_calls_per_iteration"]
    passed_by_op = ", ".join(f"{op} {n}" for op, n in sorted(c["passed_by_op"].items()))
    print(f"  GEMM calls per iteration: {c['routed']} routed to ktune's winners, {c['kept']} kept "
          f"(the winner is PyTorch's own algorithm), {c['passed']} passed to PyTorch (no winner"
          + (f": {passed_by_op})" if passed_by_op else ")"))
    if r["max_relative_difference"] is not None:
        print(f"  output: largest difference from PyTorch's {r['max_relative_difference']:.3g} of "
              "its largest value")
    for s in r["routed_problems"]:  # type: ignore[union-attr]
        gain = f"{s['gain']:.3f}x" if s["gain"] else "-"
        tuned = f"{s['tuned_us']:.2f} us" if s["tuned_us"] else "-"
        default = f"{s['default_us']:.2f} us" if s["default_us"] else "-"
        print(f"  {s['problem']:<48} {s['calls_per_iteration']:5g}/iter  tuned {tuned} vs "
              f"cuBLASLt's default {default}: {gain}")
    for s in r["kept_problems"]:  # type: ignore[union-attr]
        print(f"  {s['problem']:<48} {s['calls_per_iteration']:5g}/iter  kept: no other "
              "algorithm beat PyTorch's beyond the noise")


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ktune.prove", description=__doc__.split("\n\n")[0])
    ap.add_argument("workload", help="FILE.py[:FUNCTION] (default function make_step)")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--iters", type=int, default=50, help="iterations per round and mode")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--db", default=None, help="the store (default: KTUNE_DB, else the local one)")
    ap.add_argument("--json", action="store_true", help="one JSON object (schema_version 1)")
    a = ap.parse_args(argv)
    if a.rounds < 1 or a.iters < 1 or a.warmup < 0:
        raise SystemExit("ktune.prove: --rounds and --iters must be at least 1, --warmup at least 0.")
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("ktune.prove: PyTorch sees no GPU; run it on the machine the workload runs on.")
    from . import Error
    from . import torch as kt

    try:
        winners = kt.load(a.db)
    except Error as e:
        raise SystemExit(f"ktune.prove: {e}")
    if not winners:
        raise SystemExit("ktune.prove: the store holds no tuned cuBLASLt GEMM for this GPU, so there "
                         "is nothing to prove; tune the program's GEMMs first (ktune profile "
                         "--gemm-shapes, then the report's tune commands or ktune queue from-backlog "
                         "and ktune worker).")
    r = prove(_load_step(a.workload), a.rounds, a.iters, a.warmup, a.db)
    if a.json:
        print(json.dumps(r, indent=2))
    else:
        _print(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())

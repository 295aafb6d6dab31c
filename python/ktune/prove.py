"""Proof on your own program: a workload run with and without ktune's GEMM winners, alternating,
side by side, in one process.

    python -m ktune.prove workload.py[:make_step] [--rounds 10] [--iters 50] [--warmup 30]
                          [--db URL] [--json]

`make_step()` is the workload's own code: it builds the model and inputs and returns a callable
that runs one iteration (an inference or a training step); when that callable returns a tensor (or
a tuple or list whose first item is one), the routed result is compared with PyTorch's.

The program runs with ktune's router loaded (this command restarts itself with it, as `ktune run`
starts a program), so the winners are routed where PyTorch calls cuBLAS and cuBLASLt. Each round
runs `--iters` iterations with routing off (every call passes to PyTorch's own) and `--iters` with
it on, in alternating order round to round, each iteration timed on the GPU with CUDA events. The
warm-up runs both ways first; in it each winner's field trial (its first calls, alternating with
PyTorch's own algorithm, timed inside the program) keeps or demotes it. Printed: per-iteration time
of each way (median, 10th and 90th percentiles, the spread of the round medians), their ratio
overall and per round, the GEMM calls of one iteration (routed, kept, passed, by cuBLAS entry
point), each winner with its verdict and its times inside the program, and the largest difference
of the routed output from PyTorch's. `--json` prints the same as one object (schema_version 2).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional

SCHEMA_VERSION = 2


def _load_step(target: str, **kwargs: object) -> Callable[[], object]:
    path, _, name = target.partition(":")
    name = name or "make_step"
    file = Path(path)
    if not file.is_file():
        raise SystemExit(f"ktune.prove: {path} is not a file; give the workload as "
                         "FILE.py[:FUNCTION].")
    spec = importlib.util.spec_from_file_location(file.stem, file)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(file.resolve().parent))
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    make = getattr(module, name, None)
    if not callable(make):
        raise SystemExit(f"ktune.prove: {path} defines no function {name}(); it should build the "
                         "model and return a callable that runs one iteration.")
    step = make(**kwargs)
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


def _totals(s: dict) -> Dict[str, int]:
    out = {"calls": 0, "passed": 0, "routed": 0, "kept": 0, "trial": 0}
    for e in s["entries"].values():
        out["calls"] += e["calls"]
        out["passed"] += e["passed"]
    for w in s["winners"]:
        out["routed"] += w["routed_calls"]
        out["kept"] += w["kept_calls"]
        out["trial"] += w["trial_calls"]
    return out


def prove(step, rounds: int, iters: int, warmup: int) -> Dict[str, object]:
    import torch

    from . import torch as kt

    # Warm-up: PyTorch's heuristics, ktune's plans and the winners' field trials, outside the timed
    # rounds.
    for on in (False, True):
        (kt.enable if on else kt.disable)()
        for _ in range(warmup):
            step()
    torch.cuda.synchronize()
    # The routed result against PyTorch's, from the same inputs.
    kt.disable()
    reference = _first_tensor(step())
    kt.enable()
    routed_out = _first_tensor(step())
    torch.cuda.synchronize()
    # Every GEMM call of one routed iteration, by what the router did with it.
    before = _totals(kt.stats())
    step()
    torch.cuda.synchronize()
    after = _totals(kt.stats())
    census = {k: after[k] - before[k] for k in after}
    max_rel = None
    if reference is not None and routed_out is not None and reference.shape == routed_out.shape:
        ref = reference.float()
        scale = ref.abs().max().item() or 1.0
        max_rel = (routed_out.float() - ref).abs().max().item() / scale

    times: Dict[str, List[float]] = {"pytorch": [], "ktune": []}
    round_medians: Dict[str, List[float]] = {"pytorch": [], "ktune": []}
    for r in range(rounds):
        for mode in (("pytorch", "ktune") if r % 2 == 0 else ("ktune", "pytorch")):
            (kt.enable if mode == "ktune" else kt.disable)()
            t = _time_iterations(step, iters)
            times[mode] += t
            round_medians[mode].append(statistics.median(t))
    kt.enable()

    def summary(mode: str) -> Dict[str, float]:
        t = times[mode]
        return {"median_ms": statistics.median(t), "p10_ms": _percentile(t, 0.1),
                "p90_ms": _percentile(t, 0.9), "round_min_ms": min(round_medians[mode]),
                "round_max_ms": max(round_medians[mode]), "iterations": len(t)}

    base, tuned = summary("pytorch"), summary("ktune")
    # Each round runs both back to back, so a round's ratio is free of drift between rounds (clocks,
    # other work on the machine): their median and range say how sure the ratio is.
    round_ratios = [b / k for b, k in zip(round_medians["pytorch"], round_medians["ktune"]) if k]
    s = kt.stats()
    winners = []
    for w in s["winners"]:
        dims = zip(("m", "n", "k", "batch"), w["shape"])
        name = f"{w['op']} {w['dtype']} " + " ".join(
            f"{d}={v}" for d, v in dims if d != "batch" or v > 1)
        f = w.get("field", {})
        winners.append({"problem": name, "verdict": w["verdict"], "tuned_kept": w["tuned_kept"],
                        "routed_calls": w["routed_calls"], "kept_calls": w["kept_calls"],
                        "trial_calls": w["trial_calls"],
                        "in_program_winner_us": f["winner_ns"] / 1e3 if f else None,
                        "in_program_default_us": f["default_ns"] / 1e3 if f else None,
                        "tuned_us": w["tuned_ns"] / 1e3 if w["tuned_ns"] else None,
                        "tuned_default_us": (w["tuned_default_ns"] / 1e3
                                             if w["tuned_default_ns"] else None)})
    return {"schema_version": SCHEMA_VERSION, "rounds": rounds, "iterations_per_round": iters,
            "pytorch": base, "ktune": tuned,
            "speedup": base["median_ms"] / tuned["median_ms"] if tuned["median_ms"] else None,
            "round_speedups": {"median": statistics.median(round_ratios), "min": min(round_ratios),
                               "max": max(round_ratios)},
            "gemm_calls_per_iteration": census,
            "calls_by_entry": {k: v["calls"] for k, v in s["entries"].items()},
            "near_misses": s["near_misses"],
            "max_relative_difference": max_rel, "winners": winners}


def _print(r: Dict[str, object]) -> None:
    def line(name: str, s: Dict[str, float]) -> str:
        return (f"  {name:<8} {s['median_ms']:9.4f} ms/iter  (p10 {s['p10_ms']:.4f}, p90 "
                f"{s['p90_ms']:.4f}; round medians {s['round_min_ms']:.4f}-"
                f"{s['round_max_ms']:.4f})")

    print(f"{r['rounds']} rounds of {r['iterations_per_round']} iterations each way, alternating:")
    print(line("PyTorch", r["pytorch"]))  # type: ignore[arg-type]
    print(line("ktune", r["ktune"]))  # type: ignore[arg-type]
    rr = r["round_speedups"]
    c = r["gemm_calls_per_iteration"]
    if not c["routed"] and not c["trial"]:  # type: ignore[index]
        print("  no GEMM call was routed to a winner other than PyTorch's own algorithm, so the "
              "ratio below is this workload's run-to-run spread (and the router's host cost)")
    print(f"  ratio    {r['speedup']:.3f}x (PyTorch's time / ktune's); per round, both back to "
          "back: "
          f"median {rr['median']:.3f}x, {rr['min']:.3f}-{rr['max']:.3f}x")
    print(f"  GEMM calls per iteration: {c['calls']} seen, {c['routed']} routed to a winner, "
          f"{c['kept']} kept (PyTorch's own algorithm, from the table), {c['trial']} in a field "
          f"trial, {c['passed']} passed to PyTorch (no winner of their exact descriptor)")
    entries = ", ".join(f"{k} {v}" for k, v in sorted(r["calls_by_entry"].items()))  # type: ignore
    print(f"  calls since start by cuBLAS entry point: {entries}")
    for m in r["near_misses"]:  # type: ignore[union-attr]
        print(f"  {m['calls']} calls had a winner of their size but were passed: {m['why']}")
    if r["max_relative_difference"] is not None:
        print(f"  output: largest difference from PyTorch's {r['max_relative_difference']:.3g} of "
              "its largest value")
    for w in r["winners"]:  # type: ignore[union-attr]
        field = "-"
        if w["in_program_winner_us"]:
            win, default = w["in_program_winner_us"], w["in_program_default_us"]
            field = (f"{win:.2f} us vs PyTorch's {default:.2f} us in the program "
                     f"({default / win:.3f}x)")
        print(f"  {w['problem']:<44} {w['verdict']:<8} routed {w['routed_calls']}, kept "
              f"{w['kept_calls']}, trial {w['trial_calls']}: {field}")


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ktune.prove", description=__doc__.split("\n\n")[0])
    ap.add_argument("workload", help="FILE.py[:FUNCTION] (default function make_step)")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--iters", type=int, default=50, help="iterations per round and mode")
    ap.add_argument("--warmup", type=int, default=30,
                    help="iterations each way before timing (the field trials run here)")
    ap.add_argument("--db", default=None, help="the store (default: KTUNE_DB, else the local one)")
    ap.add_argument("--json", action="store_true", help="one JSON object (schema_version 2)")
    a = ap.parse_args(argv)
    if a.rounds < 1 or a.iters < 1 or a.warmup < 0:
        raise SystemExit("ktune.prove: --rounds and --iters must be at least 1, --warmup at "
                         "least 0.")
    from . import Error
    from . import torch as kt

    if not kt.loaded():
        # Restart with the router preloaded: it must be in place before PyTorch loads cuBLAS.
        try:
            env = kt.routing_env(a.db)
        except Error as e:
            raise SystemExit(f"ktune.prove: {e}")
        os.execve(sys.executable, [sys.executable, "-m", "ktune.prove", *sys.argv[1:]],
                  {**os.environ, **env, "KTUNE_PROVE_TABLE": env["KTUNE_ROUTE_TABLE"]})
    table = os.environ.pop("KTUNE_PROVE_TABLE", None)
    if table:
        with contextlib.suppress(OSError):
            os.unlink(table)  # the router read it when it loaded
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("ktune.prove: PyTorch sees no GPU; run it on the machine the workload "
                         "runs on.")
    r = prove(_load_step(a.workload), a.rounds, a.iters, a.warmup)
    if a.json:
        print(json.dumps(r, indent=2))
    else:
        _print(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())

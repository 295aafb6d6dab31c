"""Proof on your own torch.compile program: compiled three ways, side by side.

    python -m ktune.inductor prove WORKLOAD.py[:make_step] [--arg NAME=VALUE ...] [--rounds 3]
                                   [--iters 30] [--warmup 5] [--processes 8] [--db URL] [--json]

`make_step(mode=..., **args)` is the workload's own code: it builds the model, calls torch.compile
with `mode` ("default" or "max-autotune") and returns a callable that runs one iteration (returning
a tensor, or a tuple or list whose first item is one). Three ways, each in its own process with an
empty Inductor cache (a cold compile), rotated round to round:

    default       torch.compile's default
    max-autotune  Inductor's max-autotune (its own wider search, on every compile)
    ktune         the default compile with ktune's winners served to Inductor (ktune.inductor.use())

plus, once, max-autotune warm (a second process on the first one's Inductor cache). Each process
reports its compile time (the first call), the part of it Inductor spent benchmarking candidates
(its autotune), the GPU time of each later iteration (CUDA events; median, and the ratio to the
default per round), the largest difference of its first output from the default's, and which
configuration each of its Triton kernels ran. `--processes N` then starts N ktune processes at once
and counts the distinct configurations per kernel (one winner per key: 1). `--json` prints one
object (schema_version 1).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

SCHEMA_VERSION = 1
WAYS = ("default", "max-autotune", "ktune")
CHILD_TIMEOUT_S = 900


def _autotune_seconds() -> float:
    from torch._dynamo.utils import compilation_time_metrics  # noqa: PLC0415

    return sum(sum(v) for k, v in compilation_time_metrics.items()
               if "benchmark_all_configs" in k or k.endswith("_template_autotuning"))


def _kernel_configs() -> Dict[str, dict]:
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner  # noqa: PLC0415

    out = {}
    for obj in gc.get_objects():
        try:  # the heap holds weak proxies whose targets are gone
            if not isinstance(obj, CachingAutotuner) or not obj.launchers:
                continue
        except ReferenceError:
            continue
        cfg = obj.launchers[0].config
        name = obj.inductor_meta.get("kernel_name") or obj.fn.__name__
        out[name] = {**cfg.kwargs, "num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
    return out


def _first_tensor(out):
    import torch  # noqa: PLC0415

    if isinstance(out, (tuple, list)) and out:
        out = out[0]
    return out if isinstance(out, torch.Tensor) else None


def child(workload: str, way: str, args: Dict[str, str], iters: int, warmup: int,
          output: str, db) -> dict:
    """One way in this process; returns its figures."""
    import torch  # noqa: PLC0415

    from ..prove import _load_step  # noqa: PLC0415 (one loader of workloads)

    served = None
    if way == "ktune":
        from . import use  # noqa: PLC0415

        served = use(db)
    mode = "max-autotune" if way.startswith("max-autotune") else "default"
    start = time.perf_counter()
    step = _load_step(workload, mode=mode, **args)
    out = step()
    torch.cuda.synchronize()
    compile_s = time.perf_counter() - start
    first = _first_tensor(out)
    if first is not None and output:
        torch.save(first.detach().float().cpu(), output)
    for _ in range(warmup):
        step()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        step()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return {"way": way, "compile_s": compile_s, "autotune_s": _autotune_seconds(),
            "step_ms": statistics.median(times), "served": served,
            "configs": _kernel_configs()}


def _run_child(opts, way: str, cache_dir: str, output: str) -> dict:
    cmd = [sys.executable, "-m", "ktune.inductor", "prove", opts.workload, "--child", way,
           "--iters", str(opts.iters), "--warmup", str(opts.warmup), "--output", output]
    for a in opts.arg:
        cmd += ["--arg", a]
    if opts.db:
        cmd += ["--db", opts.db]
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache_dir)
    env.pop("TORCHINDUCTOR_BENCHMARK_KERNEL", None)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        raise SystemExit(f"ktune.inductor prove: the {way} process exited with status "
                         f"{proc.returncode}:\n{tail}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _max_diff(a: str, b: str) -> float:
    import torch  # noqa: PLC0415

    if not (os.path.exists(a) and os.path.exists(b)):
        return float("nan")
    x, y = torch.load(a), torch.load(b)
    return float((x - y).abs().max()) if x.shape == y.shape else float("inf")


def prove(opts) -> dict:
    work = Path(tempfile.mkdtemp(prefix="ktune-inductor-prove."))
    rounds: List[Dict[str, dict]] = []
    out_of = {}
    for r in range(opts.rounds):
        order = list(WAYS[r % len(WAYS):] + WAYS[:r % len(WAYS)])
        results = {}
        for way in order:
            cache = work / f"cache-{way}-{r}"
            output = str(work / f"out-{way}-{r}.pt")
            results[way] = _run_child(opts, way, str(cache), output)
            out_of[(way, r)] = output
            if progress:
                print(f"round {r + 1}/{opts.rounds} {way}: step {results[way]['step_ms']:.3f} ms, "
                      f"compile {results[way]['compile_s']:.1f} s", file=sys.stderr)
        rounds.append(results)
    warm = _run_child(opts, "max-autotune-warm", str(work / "cache-max-autotune-0"),
                      str(work / "out-warm.pt"))
    summary: Dict[str, dict] = {}
    for way in WAYS:
        steps = [rd[way]["step_ms"] for rd in rounds]
        ratios = [rd["default"]["step_ms"] / rd[way]["step_ms"] for rd in rounds]
        summary[way] = {
            "step_ms": statistics.median(steps),
            "speedup_vs_default_per_round": ratios,
            "speedup_vs_default": statistics.median(ratios),
            "compile_s": statistics.median(rd[way]["compile_s"] for rd in rounds),
            "autotune_s": statistics.median(rd[way]["autotune_s"] for rd in rounds),
            "max_abs_diff_vs_default": max(
                _max_diff(out_of[(way, r)], out_of[("default", r)]) for r in range(opts.rounds)),
        }
    summary["ktune"]["speedup_vs_max_autotune_per_round"] = [
        rd["max-autotune"]["step_ms"] / rd["ktune"]["step_ms"] for rd in rounds]
    summary["ktune"]["served"] = rounds[0]["ktune"]["served"]
    summary["max-autotune-warm"] = {k: warm[k] for k in ("compile_s", "autotune_s", "step_ms")}
    # The winners each ktune process ran: one configuration per kernel across every process.
    ktune_configs = [rd["ktune"]["configs"] for rd in rounds]
    if opts.processes:
        procs = []
        for i in range(opts.processes):
            cmd = [sys.executable, "-m", "ktune.inductor", "prove", opts.workload, "--child",
                   "ktune", "--iters", "2", "--warmup", "0", "--output", ""]
            for a in opts.arg:
                cmd += ["--arg", a]
            if opts.db:
                cmd += ["--db", opts.db]
            env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(work / f"cache-at-once-{i}"))
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL, text=True))
        for p in procs:
            text, _ = p.communicate(timeout=CHILD_TIMEOUT_S)
            if p.returncode == 0:
                ktune_configs.append(json.loads(text.strip().splitlines()[-1])["configs"])
    distinct: Dict[str, int] = {}
    for name in set().union(*ktune_configs):
        seen = {json.dumps(c.get(name), sort_keys=True) for c in ktune_configs if name in c}
        distinct[name] = len(seen)
    return {"schema_version": SCHEMA_VERSION, "workload": opts.workload, "args": opts.arg,
            "rounds": opts.rounds, "iters": opts.iters, "ways": summary,
            "ktune_processes": len(ktune_configs),
            "kernels_with_more_than_one_config": sorted(n for n, d in distinct.items() if d > 1),
            "kernels": len(distinct)}


progress = sys.stderr.isatty()


def _print_table(r: dict) -> None:
    print(f"{r['workload']} {' '.join(r['args'])}: {r['rounds']} rounds x {r['iters']} iterations")
    print(f"{'way':<18} {'step ms':>9} {'vs default':>11} {'compile s':>10} {'autotune s':>11} "
          f"{'max |diff|':>11}")
    for way, s in r["ways"].items():
        print(f"{way:<18} {s['step_ms']:>9.3f} {s.get('speedup_vs_default', float('nan')):>10.3f}x "
              f"{s['compile_s']:>10.1f} {s['autotune_s']:>11.2f} "
              f"{s.get('max_abs_diff_vs_default', float('nan')):>11.3g}")
    k = r["ways"]["ktune"]
    print(f"ktune vs max-autotune per round: "
          f"{', '.join(f'{x:.3f}' for x in k['speedup_vs_max_autotune_per_round'])}")
    print(f"winners served: {k['served']}; {r['kernels']} kernels over {r['ktune_processes']} "
          f"ktune processes, {len(r['kernels_with_more_than_one_config'])} ran more than one "
          "configuration")


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m ktune.inductor prove")
    ap.add_argument("workload")
    ap.add_argument("--arg", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--processes", type=int, default=0)
    ap.add_argument("--db")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", choices=WAYS + ("max-autotune-warm",), help=argparse.SUPPRESS)
    ap.add_argument("--output", default="", help=argparse.SUPPRESS)
    opts = ap.parse_args(argv)
    args = {}
    for a in opts.arg:
        name, eq, value = a.partition("=")
        if not eq or not name:
            print(f"ktune.inductor prove: --arg {a!r} is not NAME=VALUE.", file=sys.stderr)
            return 2
        args[name] = value
    if opts.child:
        print(json.dumps(child(opts.workload, opts.child, args, opts.iters, opts.warmup,
                               opts.output, opts.db)))
        return 0
    if opts.rounds < 1 or opts.iters < 1:
        print("ktune.inductor prove: --rounds and --iters must be at least 1.", file=sys.stderr)
        return 2
    result = prove(opts)
    if opts.json:
        print(json.dumps(result, indent=1))
    else:
        _print_table(result)
    return 0

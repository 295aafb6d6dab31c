"""The measuring program of a tuning session over one Inductor Triton kernel:

    python3 -m ktune.inductor serve KERNEL.py [--cuda-graph]

KERNEL.py is the kernel's module as Inductor wrote it with TORCHINDUCTOR_BENCHMARK_KERNEL=1 (its
get_args() rebuilds the launch's arguments). The program answers the requests of ktune's isolated
evaluator (src/tune/isolated_evaluator.cpp) as JSON lines on stdin and stdout: describe (the
configuration space: Inductor's own candidates and a wider grid of block sizes, warps and stages),
prepare (compile ahead on every core), next_ready, evaluate (compile, verify against Inductor's
choice, measure). Everything else it or PyTorch prints goes to stderr.

Measurement: each repetition times a run of back-to-back launches between two CUDA events, queued
behind a GPU sleep so the host's launch cost is not what is timed; with --cuda-graph the launches
are captured once in a CUDA graph and the graph is replayed, as a program under
mode="reduce-overhead" runs them. The median per launch over the repetitions is the time; half the
p5..p95 width of the repetitions is its noise.
"""

from __future__ import annotations

import concurrent.futures
import copy
import datetime
import importlib.util
import json
import math
import multiprocessing
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from . import scan as _scan

SCHEMA_VERSION = 1
LAUNCHES_PER_REP = 20
REPS = 15
# Block sizes beyond this many elements per program spill registers on every GPU ktune has met.
MAX_BLOCK_ELEMENTS = 16384
WARPS = (1, 2, 4, 8, 16, 32)
_BLOCK_DIM = {"XBLOCK": "xnumel", "YBLOCK": "ynumel", "ZBLOCK": "znumel",
              "R0_BLOCK": "r0_numel", "R1_BLOCK": "r1_numel"}


class KernelError(Exception):
    """Why the kernel cannot be served, in one sentence."""


def _pow2_up(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


def load_module(path: Path):
    if not path.is_file():
        raise KernelError(f"{path} is not a file; give the kernel module Inductor wrote.")
    spec = importlib.util.spec_from_file_location(f"ktune_kernel_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner  # noqa: PLC0415

    kernels = [v for v in vars(module).values() if isinstance(v, CachingAutotuner)]
    if len(kernels) != 1 or not hasattr(module, "get_args"):
        raise KernelError(f"{path} is not one Inductor kernel module with get_args() (found "
                          f"{len(kernels)} kernels); profile with "
                          "TORCHINDUCTOR_BENCHMARK_KERNEL=1.")
    return module, kernels[0]


def _config_key(cfg) -> Tuple:
    return (tuple(sorted(cfg.kwargs.items())), cfg.num_warps, cfg.num_stages)


def _as_dict(cfg) -> Dict[str, int]:
    return {**cfg.kwargs, "num_warps": cfg.num_warps, "num_stages": cfg.num_stages}


def space(kernel, numels: Dict[str, int], kind: str) -> Tuple[List[str], List[dict], List[int]]:
    """(parameter names, every configuration as a dict, positions of Inductor's own)."""
    own = list(kernel.configs)
    blocks = sorted({k for c in own for k in c.kwargs})
    fixed = {k: sorted({c.kwargs[k] for c in own}) for k in blocks if k not in _BLOCK_DIM}
    tuned = [k for k in blocks if k in _BLOCK_DIM]
    values: Dict[str, List[int]] = {}
    for k in tuned:
        limit = min(_pow2_up(int(numels.get(_BLOCK_DIM[k], 1) or 1)), 4096)
        values[k] = [1 << i for i in range(0, limit.bit_length()) if (1 << i) <= limit]
    stages = (1,) if kind == "pointwise" else (1, 2, 3)
    fixed_r = 1
    if kind == "persistent_reduction":  # the whole row is one block: it counts in the size
        fixed_r = _pow2_up(int(numels.get("r0_numel", 1) or 1))
    grid: List[dict] = [{}]
    for k in tuned:
        grid = [dict(g, **{k: v}) for g in grid for v in values[k]]
    for k, vs in fixed.items():
        grid = [dict(g, **{k: v}) for g in grid for v in vs]
    configs: List[dict] = []
    for g in grid:
        elements = fixed_r * math.prod(g[k] for k in tuned) if tuned else fixed_r
        for w in WARPS:
            if elements > MAX_BLOCK_ELEMENTS or elements < 32 * w:
                continue
            for s in stages:
                configs.append(dict(g, num_warps=w, num_stages=s))
    index = {json.dumps(c, sort_keys=True): i for i, c in enumerate(configs)}
    first = []
    for c in own:
        d = _as_dict(c)
        key = json.dumps(d, sort_keys=True)
        if key not in index:
            index[key] = len(configs)
            configs.append(d)
        if index[key] not in first:
            first.append(index[key])
    names = tuned + list(fixed) + ["num_warps", "num_stages"]
    return names, configs, first


def _spawn_compile(path: str, cfg: dict) -> float:
    """In a pool worker (no CUDA context): compile one configuration into Triton's disk cache."""
    start = time.perf_counter()
    _, kernel = load_module(Path(path))
    from torch._inductor.runtime.triton_compat import Config  # noqa: PLC0415

    k = _fresh(kernel, Config({n: v for n, v in cfg.items()
                               if n not in ("num_warps", "num_stages")},
                              num_warps=cfg["num_warps"], num_stages=cfg["num_stages"]))
    k.precompile(warm_cache_only=True)
    return time.perf_counter() - start


def _warm() -> None:
    """In a pool worker: pay PyTorch's and Inductor's import while the parent starts."""
    import torch._inductor.runtime.triton_heuristics  # noqa: F401, PLC0415


def compile_pool() -> concurrent.futures.ProcessPoolExecutor:
    """Workers that compile ahead, on every core but the two the parent and the GPU's feeding use.
    Spawned, not forked: a fork of a process with a CUDA context cannot use CUDA."""
    workers = max(1, min(16, (os.cpu_count() or 2) - 2))
    pool = concurrent.futures.ProcessPoolExecutor(
        workers, mp_context=multiprocessing.get_context("spawn"))
    for _ in range(workers):
        pool.submit(_warm)
    return pool


def _fresh(kernel, cfg):
    """A copy of Inductor's autotuner with one configuration, no compiled state, and no rescaling of
    the reduction block after compiling (that would make it two configurations)."""
    k = copy.copy(kernel)
    k.configs = [cfg]
    k.compile_results = []
    k.launchers = []
    k.lock = threading.Lock()
    k.inductor_meta = dict(kernel.inductor_meta, dynamic_scale_rblock=False)
    return k


def read_record(path: Path) -> dict:
    """The kernel's scan record; KernelError when it cannot be served."""
    if not path.is_file():
        raise KernelError(f"{path} is not a file; give the kernel module Inductor wrote.")
    record = _scan.read_kernel_module(path)
    if record is None:
        raise KernelError(f"{path} is not an Inductor Triton kernel module (no "
                          "@triton_heuristics kernel in it).")
    if not record["tunable"]:
        raise KernelError(f"{record['name']} cannot be tuned: {record['why_not']}.")
    return record


class Server:
    def __init__(self, path: Path, cuda_graph: bool,
                 pool: Optional[concurrent.futures.ProcessPoolExecutor] = None):
        self.record = read_record(path)
        import torch  # noqa: PLC0415

        self.torch = torch
        self.path = path
        self.cuda_graph = cuda_graph
        if not torch.cuda.is_available():
            raise KernelError("no CUDA GPU is visible to PyTorch here; run on a GPU machine.")
        self.module, self.kernel = load_module(path)
        from torch._inductor.runtime.triton_heuristics import (  # noqa: PLC0415
            generate_lookup_hash_from_source_code,
        )

        self.lookup_hash = generate_lookup_hash_from_source_code(
            str(self.kernel.size_hints), self.kernel.fn.src)
        self.names, self.configs, self.first = space(
            self.kernel, self.record["numels"], self.record["kind"])
        self.stream = torch.cuda.current_stream()
        torch.manual_seed(0)
        self.pristine = list(self.module.get_args())
        self.outputs = self._output_positions()
        self.pool = pool
        self.futures: Dict[str, concurrent.futures.Future] = {}
        if pool is not None:  # Inductor's own candidates first: the choice below compiles them
            self.prepare([self.configs[p] for p in self.first])
        self.default = self._inductor_choice()
        self.reference = self._outputs_of(self._compiled(self.configs[self.default])[0])

    # -- the space ------------------------------------------------------------------------------
    def _output_positions(self) -> List[int]:
        sig = [n for n, t in self.kernel.triton_meta["signature"].items() if t != "constexpr"]
        mutated = set(self.kernel.mutated_arg_names or [])
        return [i for i, n in enumerate(sig)
                if n.startswith("out_ptr") or n.startswith("in_out_ptr") or n in mutated]

    def _inductor_choice(self) -> int:
        """Inductor's own pick on this GPU: its candidates benchmarked as it does."""
        if len(self.first) == 1:
            return self.first[0]
        times = {}
        for p in self.first:
            try:
                self._wait_compiled(self.configs[p])
                launcher, _ = self._compiled(self.configs[p])
                times[p] = self._time(launcher, reps=5)[0]
            except Exception:  # noqa: BLE001 (a candidate of Inductor's own that fails is skipped)
                continue
        if not times:
            raise KernelError("none of Inductor's own configurations of this kernel runs here.")
        return min(times, key=times.get)

    # -- compile, run, measure --------------------------------------------------------------------
    def _config(self, cfg: dict):
        from torch._inductor.runtime.triton_compat import Config  # noqa: PLC0415

        return Config({n: v for n, v in cfg.items() if n not in ("num_warps", "num_stages")},
                      num_warps=int(cfg["num_warps"]), num_stages=int(cfg["num_stages"]))

    def _compiled(self, cfg: dict):
        start = time.perf_counter()
        k = _fresh(self.kernel, self._config(cfg))
        k.precompile()
        return k, time.perf_counter() - start

    def _args(self):
        return [a.clone() if self.torch.is_tensor(a) else a for a in self.pristine]

    def _outputs_of(self, k) -> List:
        args = self._args()
        k.run(*args, stream=self.stream.cuda_stream)
        self.torch.cuda.synchronize()
        return [args[i] for i in self.outputs]

    def _time(self, k, reps: int = REPS) -> Tuple[float, float, int]:
        torch = self.torch
        args = self._args()
        raw = self.stream.cuda_stream

        def launches():
            for _ in range(LAUNCHES_PER_REP):
                k.run(*args, stream=raw)

        launches()  # warm
        graph = None
        if self.cuda_graph:
            graph = torch.cuda.CUDAGraph()
            side = torch.cuda.Stream()
            side.wait_stream(self.stream)
            with torch.cuda.stream(side):
                raw = side.cuda_stream
                with torch.cuda.graph(graph, stream=side):
                    launches()
            raw = self.stream.cuda_stream
            torch.cuda.synchronize()
        per_launch = []
        for _ in range(reps):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(2_000_000)  # about 1 ms: the launches below queue up behind it
            start.record()
            if graph is not None:
                graph.replay()
            else:
                launches()
            end.record()
            end.synchronize()
            per_launch.append(start.elapsed_time(end) * 1e6 / LAUNCHES_PER_REP)
        per_launch.sort()
        lo = per_launch[int(0.05 * (len(per_launch) - 1))]
        hi = per_launch[int(math.ceil(0.95 * (len(per_launch) - 1)))]
        return statistics.median(per_launch), (hi - lo) / 2, len(per_launch)

    def _verify(self, outputs) -> Optional[str]:
        torch = self.torch
        for got, want in zip(outputs, self.reference):
            if got.dtype in (torch.bfloat16, torch.float16):
                tol = 2e-2
            elif got.is_floating_point():
                tol = 1e-4
            else:
                tol = 0
            g, w = got.float(), want.float()
            finite = torch.isfinite(w)
            if not torch.equal(torch.isfinite(g), finite):
                return "non-finite values where Inductor's choice has finite ones"
            scale = w[finite].abs().max().item() if finite.any() else 0.0
            err = (g[finite] - w[finite]).abs().max().item() if finite.any() else 0.0
            if err > tol * max(scale, 1.0):
                return (f"largest difference from Inductor's choice {err:.3g} over a largest value "
                        f"of {scale:.3g} (tolerance {tol:g} of it)")
        return None

    # -- the protocol ---------------------------------------------------------------------------
    def describe(self) -> dict:
        rec = self.record
        return {"schema_version": SCHEMA_VERSION, "name": rec["name"], "kind": rec["kind"],
                "lookup_hash": self.lookup_hash, "source_hash": rec["source_hash"],
                "numels": rec["numels"], "dtype": rec["dtype"], **_scan.versions(),
                "parameters": self.names,
                "configs": [[c.get(n) for n in self.names] for c in self.configs],
                "inductor": self.first, "default": self.default,
                "timing": "cuda_graph" if self.cuda_graph else "events"}

    def _wait_compiled(self, cfg: dict) -> None:
        f = self.futures.pop(json.dumps(cfg, sort_keys=True), None)
        if f is not None:
            try:
                f.result(timeout=120)
            except Exception:  # noqa: BLE001 (compiled again in this process, where it is named)
                pass

    def prepare(self, configs: List[dict]) -> None:
        if self.pool is None:
            self.pool = compile_pool()
        for c in configs:
            key = json.dumps(c, sort_keys=True)
            if key not in self.futures:
                self.futures[key] = self.pool.submit(_spawn_compile, str(self.path), c)

    def next_ready(self, configs: List[dict]) -> int:
        for i, c in enumerate(configs):
            f = self.futures.get(json.dumps(c, sort_keys=True))
            if f is None or f.done():
                return i
        return 0

    def evaluate(self, cfg: dict, best_ns: Optional[float]) -> dict:
        out = {"schema_version": 1, "sequence": 0, "config": cfg, "status": "ok", "time_ns": 0.0,
               "noise_ns": 0.0, "samples": 0, "measurement": "none", "detail": "",
               "compile_s": 0.0, "fatal": False, "elapsed_s": 0.0, "timestamp": ""}
        self._wait_compiled(cfg)
        try:
            k, compile_s = self._compiled(cfg)
            out["compile_s"] = compile_s
        except Exception as e:  # noqa: BLE001
            name = type(e).__name__
            out["status"] = "resources_exceeded" if "OutOfResources" in name or (
                "out of resource" in str(e).lower()) else "compile_failed"
            out["detail"] = f"{name}: {str(e).splitlines()[0] if str(e) else ''}"[:300]
            return out
        try:
            problem = self._verify(self._outputs_of(k))
            if problem:
                out["status"], out["detail"] = "wrong_result", problem
                return out
            t, noise, n = self._time(k)
        except Exception as e:  # noqa: BLE001
            text = str(e)
            out["status"] = "launch_failed"
            out["detail"] = f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"[:300]
            out["fatal"] = "illegal" in text or "unspecified launch failure" in text
            return out
        out.update(time_ns=t, noise_ns=noise, samples=n, measurement="full",
                   detail="verified: agrees with Inductor's choice")
        return out


def main(argv: List[str]) -> int:
    import argparse  # noqa: PLC0415

    ap = argparse.ArgumentParser(prog="python -m ktune.inductor serve")
    ap.add_argument("kernel")
    ap.add_argument("--cuda-graph", action="store_true")
    args = ap.parse_args(argv)
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # stray prints (Triton, PyTorch) go to stderr, not into the protocol

    def send(obj) -> None:
        out.write(json.dumps(obj) + "\n")
        out.flush()

    try:
        read_record(Path(args.kernel))  # refused before any worker starts
        server = Server(Path(args.kernel), args.cuda_graph, compile_pool())
    except Exception as e:  # noqa: BLE001 (the parent shows the sentence)
        send({"error": f"ktune.inductor serve: {e}"})
        return 1
    send({"ready": True})
    for line in sys.stdin:
        req = json.loads(line)
        if "describe" in req:
            send({"describe": server.describe()})
        elif "prepare" in req:
            server.prepare(req["prepare"])
        elif "next_ready" in req:
            send({"next_ready": server.next_ready(req["next_ready"])})
        elif "evaluate" in req:
            r = server.evaluate(req["evaluate"], req.get("best_ns"))
            r["timestamp"] = datetime.datetime.now(datetime.timezone.utc).isoformat()
            send(r)
            if r["fatal"]:
                os._exit(0)
    if server.pool is not None:
        server.pool.shutdown(cancel_futures=True)
    return 0

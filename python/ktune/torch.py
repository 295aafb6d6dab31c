"""Tuned cuBLASLt GEMMs in PyTorch: `ktune tune --library cublaslt` winners, applied with no tuning.

    with ktune.torch.tuned_gemms():       # or ktune.torch.enable() / disable()
        y = model(x)

PyTorch's TunableOp cannot carry them: its CUDA build registers only the "Default" GEMM solution
(the selectable rocBLAS/hipBLASLt solutions are ROCm-only), so a cuBLASLt algorithm named in its
results file has nothing to select. Instead this module routes torch.nn.functional.linear (what
nn.Linear calls) for the shapes in the cache to the cached cuBLASLt algorithm; every other call,
and every call that needs autograd, goes to PyTorch unchanged.

A Linear y = x W^T + b on x [..., K], W [N, K] is ktune's TN GEMM m = N, n = rows of x, k = K
(op "gemm_bias" with a bias, "gemm" without), in f16 or bf16.
"""

from __future__ import annotations

import contextlib
import json
from typing import Dict, Iterator, Optional, Tuple

import torch
import torch.nn.functional as F

from . import _db, _ktune, environment

_DTYPES = {torch.float16: "f16", torch.bfloat16: "bf16"}

Key = Tuple[str, bool, int, int, int]  # dtype, bias, m, n, k

_original_linear = F.linear
_table: Dict[Key, dict] = {}
_plans: Dict[Tuple[Key, int], object] = {}
_workspaces: Dict[int, torch.Tensor] = {}
# Calls routed to a cached algorithm and calls passed to PyTorch, since enable().
stats = {"routed": 0, "passed": 0}


def load(db: Optional[str] = None, **env: object) -> Dict[Key, dict]:
    """The cached cuBLASLt winners of this GPU (or of the environment given), by
    (dtype, bias, m, n, k)."""
    e = environment(**env)  # type: ignore[arg-type]
    table: Dict[Key, dict] = {}
    for op, bias in (("gemm", False), ("gemm_bias", True)):
        entries = json.loads(_ktune.list_entries_json(_db(db), op, e["arch"], e["device_name"]))
        for entry in entries:
            cfg = entry["config"]
            if cfg.get("library") != "cublaslt" or entry.get("invalidated_at"):
                continue
            if cfg.get("layout", "TN") != "TN" or len(entry["shape"]) != 3:
                continue
            m, n, k = entry["shape"]
            table[(entry["dtype"], bias, m, n, k)] = cfg
    return table


def _workspace(device: torch.device, nbytes: int) -> torch.Tensor:
    ws = _workspaces.get(device.index or 0)
    if ws is None or ws.numel() < nbytes:
        ws = torch.empty(max(nbytes, 1), dtype=torch.uint8, device=device)
        _workspaces[device.index or 0] = ws
    return ws


def _plan(key: Key, ldb: int, cfg: dict) -> object:
    plan = _plans.get((key, ldb))
    if plan is None:
        dtype, bias, m, n, k = key
        plan = _ktune.LtPlan(m, n, k, k, ldb, m, dtype, bias, json.dumps(cfg))
        _plans[(key, ldb)] = plan
    return plan


def _linear(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
    dtype = _DTYPES.get(input.dtype)
    if (
        dtype is not None
        and input.is_cuda
        and weight.dtype == input.dtype
        and weight.dim() == 2
        and weight.is_contiguous()
        and input.shape[-1] == weight.shape[1]
        and (bias is None or (bias.dtype == input.dtype and bias.is_contiguous()))
        and not (torch.is_grad_enabled() and (input.requires_grad or weight.requires_grad
                                              or (bias is not None and bias.requires_grad)))
    ):
        n_out, k = weight.shape
        rows = input.numel() // k if k else 0
        key = (dtype, bias is not None, n_out, rows, k)
        cfg = _table.get(key)
        if cfg is not None:
            x2 = input.reshape(rows, k)
            if x2.stride(1) == 1 and x2.stride(0) >= k:
                plan = _plan(key, x2.stride(0), cfg)
                out = torch.empty((rows, n_out), dtype=input.dtype, device=input.device)
                ws = _workspace(input.device, plan.workspace_bytes)
                plan.run(weight.data_ptr(), x2.data_ptr(), out.data_ptr(),
                         bias.data_ptr() if bias is not None else 0, ws.data_ptr(), ws.numel(),
                         torch.cuda.current_stream(input.device).cuda_stream)
                stats["routed"] += 1
                return out.view(*input.shape[:-1], n_out)
    stats["passed"] += 1
    return _original_linear(input, weight, bias)


def enable(db: Optional[str] = None, **env: object) -> int:
    """Routes the cached shapes' linear layers to their cuBLASLt winners; returns how many
    shapes the cache holds for this GPU."""
    global _table
    _table = load(db, **env)
    _plans.clear()
    stats.update(routed=0, passed=0)
    F.linear = _linear  # nn.Linear.forward looks F.linear up at each call
    return len(_table)


def disable() -> None:
    F.linear = _original_linear


@contextlib.contextmanager
def tuned_gemms(db: Optional[str] = None, **env: object) -> Iterator[Dict[Key, dict]]:
    enable(db, **env)
    try:
        yield _table
    finally:
        disable()


@contextlib.contextmanager
def record_linear_shapes() -> Iterator[Dict[Key, int]]:
    """Counts the (dtype, bias, m, n, k) GEMMs of the linear layers run inside the block: the
    shapes to hand to `ktune tune --library cublaslt`."""
    seen: Dict[Key, int] = {}

    def recording(input: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
        dtype = _DTYPES.get(input.dtype)
        if dtype is not None and weight.dim() == 2 and input.shape[-1] == weight.shape[1]:
            key = (dtype, bias is not None, weight.shape[0], input.numel() // weight.shape[1], weight.shape[1])
            seen[key] = seen.get(key, 0) + 1
        return _original_linear(input, weight, bias)

    F.linear = recording
    try:
        yield seen
    finally:
        F.linear = _original_linear


def linear_gemm_shape(in_features: int, out_features: int, rows: int) -> Dict[str, int]:
    """The `ktune tune --library cublaslt --shape` of a Linear layer applied to `rows` rows."""
    return {"m": out_features, "n": rows, "k": in_features}


__all__ = ["disable", "enable", "linear_gemm_shape", "load", "record_linear_shapes", "stats", "tuned_gemms"]

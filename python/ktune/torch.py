"""Tuned cuBLASLt GEMMs wherever PyTorch multiplies: `ktune tune --library cublaslt` winners (and
the workers' `queue from-backlog` jobs) applied with no tuning, to `x @ W`, `torch.matmul`,
`torch.mm`, `torch.bmm`, `torch.addmm`, `torch.baddbmm`, `F.linear` and `nn.Linear`, in the
program's own code and inside library modules, eager or under CUDA-graph capture.

    with ktune.torch.tuned_gemms():       # or ktune.torch.enable() / disable()
        y = model(x)
    ktune.torch.stats()                   # calls routed and passed, per op and per problem

The router sits at the dispatcher: it replaces the CUDA kernels of aten::mm, bmm, addmm, baddbmm
and _addmm_activation (what matmul and linear decompose into, below autograd), so every caller
reaches it and autograd, which sits above, is unchanged. A call becomes the GEMM problem cuBLASLt
would run for it (ktune.bench's column-major form: a row-major C[M, N] = A[M, K] @ B[K, N] is
D = op(A') op(B') with m = N, n = M, k = K, A' the storage of B and B' that of A), keyed as the
library search keys its winners (op gemm_<layout>[_<epilogue>], dtype, [m, n, k, batch]). When the
cache holds a winner of that key for this GPU and the call's storage is one cuBLASLt takes as is
(unit stride in one dimension, 16-byte aligned), it runs the winner through a prepared plan on
PyTorch's current stream; every other call goes to PyTorch's own kernel unchanged (its out= form,
which is the same kernel). A winner that is cuBLASLt's first heuristic choice, the algorithm
PyTorch's own call runs, is "kept": the search caches it when no other algorithm beat it by more
than the measurement's spread, and the router leaves those calls to PyTorch, since sending them
through ktune would cost host time for the same kernel.
"""

from __future__ import annotations

import contextlib
import json
import warnings
from dataclasses import dataclass
from typing import Dict, Iterator, Optional, Tuple

import torch

from . import _db, _ktune, environment

# torch dtype -> (element name, compute) as the cache keys them; f32 depends on TF32 at call time.
_DTYPES = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32"}
_WORKSPACE_BYTES = 32 << 20  # what PyTorch gives cuBLASLt on Hopper, and what the search allows
_ALIGN = 16


@dataclass(frozen=True)
class Operand:
    """One torch matrix operand as cuBLASLt stores it: transposed or not, leading dimension and
    batch stride in elements."""

    trans: bool
    ld: int
    stride: int


def operand(t: torch.Tensor, rows_dim: int, cols_dim: int) -> Optional[Operand]:
    """How cuBLASLt reads `t` (dims rows_dim x cols_dim, row-major in torch's terms) as the
    column-major transpose cuBLASLt multiplies: storage with unit stride along cols is t^T stored
    column-major (N, ld = row stride); unit stride along rows is t itself column-major (T, ld =
    column stride). None for storage with neither (PyTorch copies those first)."""
    rows, cols = t.shape[rows_dim], t.shape[cols_dim]
    sr, sc = t.stride(rows_dim), t.stride(cols_dim)
    batch_stride = t.stride(0) if t.dim() == 3 else 0
    if sc == 1 and (rows == 1 or sr >= max(1, cols)):
        return Operand(False, max(sr, cols, 1), batch_stride)
    if sr == 1 and (cols == 1 or sc >= max(1, rows)):
        return Operand(True, max(sc, rows, 1), batch_stride)
    return None


# A problem as a tuple (cheap to make and hash on every call): the fields of ktune.bench's
# GemmProblem JSON, in this order.
_FIELDS = ("layout", "m", "n", "k", "batch", "lda", "ldb", "ldc", "ldd", "stride_a", "stride_b",
           "stride_c", "stride_d", "dtype", "compute", "epilogue")


def problem_of(a: torch.Tensor, b: torch.Tensor, epilogue: str = "none") -> Optional[tuple]:
    """The cuBLASLt problem of the row-major product a @ b (2-D a [M, K], b [K, N], or 3-D with a
    batch first), its output a fresh contiguous [B,] M x N, as a tuple of _FIELDS (problem_json
    makes it ktune.bench's GemmProblem JSON). None when cuBLASLt cannot take the storage as is, or
    the types are not one the search runs."""
    if a.dtype != b.dtype or a.dtype not in _DTYPES or a.dim() != b.dim() or a.dim() not in (2, 3):
        return None
    batched = a.dim() == 3
    if batched and a.shape[0] != b.shape[0]:
        return None
    r, c = (1, 2) if batched else (0, 1)
    m_rows, k = a.shape[r], a.shape[c]
    n = b.shape[c]
    if b.shape[r] != k or m_rows == 0 or n == 0 or k == 0:
        return None
    # cuBLASLt's A is torch's b (N x K as stored), its B torch's a.
    op_a, op_b = operand(b, r, c), operand(a, r, c)
    if op_a is None or op_b is None:
        return None
    dtype = _DTYPES[a.dtype]
    compute = "tf32" if dtype == "f32" and torch.backends.cuda.matmul.allow_tf32 else "f32"
    layout = ("T" if op_a.trans else "N") + ("T" if op_b.trans else "N")
    if batched:
        return (layout, n, m_rows, k, a.shape[0], op_a.ld, op_b.ld, n, n, op_a.stride, op_b.stride,
                m_rows * n, m_rows * n, dtype, compute, epilogue)
    return (layout, n, m_rows, k, 1, op_a.ld, op_b.ld, n, n, -1, -1, -1, -1, dtype, compute,
            epilogue)


def problem_json(p: tuple) -> dict:
    """A problem_of tuple as ktune.bench's GemmProblem JSON."""
    return dict(zip(_FIELDS, p))


def cache_key(p: tuple) -> Tuple[str, str, int, int, int, int]:
    """(op, dtype, m, n, k, batch): the key the library search files a winner of problem `p` under
    (ktune.bench's gemm_cache_op, gemm_cache_dtype and gemm_cache_shape)."""
    layout, m, n, k, batch, epilogue = p[0], p[1], p[2], p[3], p[4], p[15]
    op = "gemm_" + layout.lower() + ("" if epilogue == "none" else "_" + epilogue)
    return op, "tf32" if p[14] == "tf32" else p[13], m, n, k, batch


def is_default(config: dict) -> bool:
    """Whether a cached winner is cuBLASLt's first heuristic choice: PyTorch's own algorithm."""
    return config.get("heuristic_rank") == 1


def _aligned(*ts: Optional[torch.Tensor]) -> bool:
    return all(t is None or t.data_ptr() % _ALIGN == 0 for t in ts)


_KEPT = object()  # a plan's place for a problem whose winner is PyTorch's own algorithm


class _Router:
    """The cached winners of one GPU and the plans built for them, with call counts: routed and
    kept by problem, passed to PyTorch (no winner, or storage cuBLASLt cannot take) by op."""

    def __init__(self, winners: Dict[tuple, dict]):
        self.winners = winners
        self.table = {k: c for k, c in winners.items() if not is_default(c)}  # the routed ones
        self.kept = {k for k, c in winners.items() if is_default(c)}
        self.plans: Dict[tuple, object] = {}  # by problem; False: PyTorch runs it
        # A call's storage signature (shapes, strides, dtype, epilogue) -> its problem, or None:
        # working the problem out is most of a passed call's cost, and a program's calls repeat.
        self.problems: Dict[tuple, Optional[tuple]] = {}
        self.workspaces: Dict[int, torch.Tensor] = {}
        self.routed: Dict[tuple, int] = {}  # by problem
        self.kept_calls: Dict[tuple, int] = {}  # by problem
        self.passed: Dict[str, int] = {}

    def workspace(self, device: torch.device) -> torch.Tensor:
        index = device.index if device.index is not None else torch.cuda.current_device()
        ws = self.workspaces.get(index)
        if ws is None:
            ws = torch.empty(_WORKSPACE_BYTES, dtype=torch.uint8, device=device)
            self.workspaces[index] = ws
        return ws

    def run(self, op: str, a: torch.Tensor, b: torch.Tensor, epilogue: str = "none",
            bias: Optional[torch.Tensor] = None, c: Optional[torch.Tensor] = None,
            alpha: float = 1.0, beta: float = 0.0) -> Optional[torch.Tensor]:
        """a @ b (+ bias, activation; + beta c) through a cached winner, or None (counted as kept
        or as passed by `op`): PyTorch runs it."""
        sig = (a.shape, a.stride(), b.shape, b.stride(), a.dtype, b.dtype, epilogue,
               a.dtype is torch.float32 and torch.backends.cuda.matmul.allow_tf32)
        p = self.problems.get(sig, False)
        if p is False:
            p = self.problems[sig] = problem_of(a, b, epilogue)
        if p is None:
            self.passed_to_torch(op)
            return None
        plan = self.plans.get(p)
        if plan is None:
            key = cache_key(p)
            cfg = self.table.get(key)
            plan = _KEPT if key in self.kept else False
            if cfg is not None:
                try:
                    plan = _ktune.GemmPlan(json.dumps(problem_json(p)), json.dumps(cfg))
                except _ktune.Error:
                    pass  # cuBLASLt refuses the winner for this storage: PyTorch runs it
            self.plans[p] = plan
        if plan is _KEPT:
            self.kept_calls[p] = self.kept_calls.get(p, 0) + 1
            return None
        if plan is False or not _aligned(a, b, bias, c):
            self.passed_to_torch(op)
            return None
        shape = (a.shape[0], p[2], p[1]) if a.dim() == 3 else (p[2], p[1])
        if c is not None:
            out = c.expand(shape).contiguous()  # C read in place, as PyTorch's addmm does
            if out.data_ptr() == c.data_ptr():
                out = out.clone()
        else:
            out = a.new_empty(shape)
        ws = self.workspace(a.device)
        plan.run(b.data_ptr(), a.data_ptr(), out.data_ptr() if c is not None else 0, out.data_ptr(),
                 bias.data_ptr() if bias is not None else 0, ws.data_ptr(), ws.numel(),
                 _raw_stream(a.get_device()), alpha, beta)
        self.routed[p] = self.routed.get(p, 0) + 1
        return out

    def passed_to_torch(self, op: str) -> None:
        self.passed[op] = self.passed.get(op, 0) + 1


def _raw_stream(device_index: int) -> int:
    """PyTorch's current stream on the device, as the integer cudaStream_t (what Inductor's
    generated code asks for: cheaper than torch.cuda.current_stream(device).cuda_stream)."""
    return torch._C._cuda_getCurrentRawStream(device_index)


_router: Optional[_Router] = None
_library = None  # the torch.library.Library holding the overrides while enabled


def load(db: Optional[str] = None, **env: object) -> Dict[tuple, dict]:
    """The cached cuBLASLt winners of this GPU (or of the environment given), by their key (op,
    dtype, m, n, k, batch)."""
    e = environment(**env)  # type: ignore[arg-type]
    table: Dict[tuple, dict] = {}
    entries = json.loads(_ktune.list_entries_json(_db(db), "", e["arch"], e["device_name"]))
    for entry in entries:
        cfg = entry["config"]
        op = entry["op"]
        if cfg.get("library") != "cublaslt" or entry.get("invalidated_at") or not op.startswith("gemm_"):
            continue
        shape = entry["shape"]
        if len(shape) != 4:
            continue  # written by a ktune before every GEMM form was searched
        table[(op, entry["dtype"]) + tuple(shape)] = cfg
    return table


# The overrides: each CUDA kernel tries the router, else calls PyTorch's out= kernel (the same
# code the functional form runs) on a fresh output.
def _out_like(a: torch.Tensor, shape) -> torch.Tensor:
    return a.new_empty(shape)


def _bias_vector(bias: torch.Tensor, n: int, dtype: torch.dtype) -> Optional[torch.Tensor]:
    """The bias of an addmm as cuBLASLt's bias epilogue takes it: one value per output column of
    torch's result (m of them in cuBLASLt's terms), contiguous, of the product's type."""
    if bias.dtype != dtype:
        return None
    if bias.dim() == 1 and bias.shape[0] == n and bias.stride(0) == 1:
        return bias
    if bias.dim() == 2 and bias.shape[0] == 1 and bias.shape[1] == n and bias.stride(1) == 1:
        return bias[0]
    return None


def _mm(a, b):
    out = _router.run("mm", a, b) if _router else None
    if out is not None:
        return out
    return torch.mm(a, b, out=_out_like(a, (a.shape[0], b.shape[1])))


def _bmm(a, b):
    out = _router.run("bmm", a, b) if _router else None
    if out is not None:
        return out
    return torch.bmm(a, b, out=_out_like(a, (a.shape[0], a.shape[1], b.shape[2])))


def _addmm(bias, a, b, *, beta=1, alpha=1):
    out = None
    if _router:
        vec = _bias_vector(bias, b.shape[1], a.dtype) if beta == 1 and alpha == 1 else None
        if vec is not None:
            out = _router.run("addmm", a, b, "bias", bias=vec)
        elif bias.dtype == a.dtype:
            out = _router.run("addmm", a, b, c=bias, alpha=float(alpha), beta=float(beta))
        else:
            _router.passed_to_torch("addmm")
    if out is not None:
        return out
    return torch.addmm(bias, a, b, beta=beta, alpha=alpha,
                       out=_out_like(a, (a.shape[0], b.shape[1])))


def _baddbmm(c, a, b, *, beta=1, alpha=1):
    out = None
    if _router and c.dtype == a.dtype:
        out = _router.run("baddbmm", a, b, c=c if beta != 0 else None, alpha=float(alpha),
                          beta=float(beta))
    elif _router:
        _router.passed_to_torch("baddbmm")
    if out is not None:
        return out
    return torch.baddbmm(c, a, b, beta=beta, alpha=alpha,
                         out=_out_like(a, (a.shape[0], a.shape[1], b.shape[2])))


def _addmm_activation(bias, a, b, *, beta=1, alpha=1, use_gelu=False):
    out = None
    vec = _bias_vector(bias, b.shape[1], a.dtype) if beta == 1 and alpha == 1 else None
    if _router and vec is not None:
        out = _router.run("_addmm_activation", a, b, "gelu_bias" if use_gelu else "relu_bias",
                          bias=vec)
    elif _router:
        _router.passed_to_torch("_addmm_activation")
    if out is not None:
        return out
    return torch.ops.aten._addmm_activation.out(bias, a, b, beta=beta, alpha=alpha,
                                                use_gelu=use_gelu,
                                                out=_out_like(a, (a.shape[0], b.shape[1])))


_OVERRIDES = {"mm": _mm, "bmm": _bmm, "addmm": _addmm, "baddbmm": _baddbmm,
              "_addmm_activation": _addmm_activation}


def overridden_ops(table: Dict[tuple, dict]) -> list:
    """The kernels worth overriding for these winners: every overridden op costs each of its calls
    the router's few microseconds, winner or not, so an op no winner can serve keeps PyTorch's
    kernel (batched problems come from bmm and baddbmm, unbatched ones from mm and addmm, the
    activation epilogues from _addmm_activation)."""
    ops = set()
    for op, _dtype, _m, _n, _k, batch in table:
        epilogue = op[8:]
        if batch > 1:
            ops.update(("bmm", "baddbmm"))
        elif epilogue in ("relu_bias", "gelu_bias"):
            ops.add("_addmm_activation")
        elif epilogue == "bias":
            ops.add("addmm")
        else:
            ops.update(("mm", "addmm"))
    return sorted(ops)


def enable(db: Optional[str] = None, census: bool = False, **env: object) -> int:
    """Routes PyTorch's GEMMs whose problem the cache holds a winner of to that winner; returns how
    many problems the cache holds for this GPU (kept ones included). Only the ops some routed
    winner can serve are overridden; with none, nothing is. `census`: every GEMM op is
    overridden, so stats() counts every call (routed, kept, passed) at the router's cost on each:
    for a counting run, not a timed one."""
    global _router, _library
    disable()
    winners = load(db, **env)
    _router = _Router(winners)
    ops = sorted(_OVERRIDES) if census else overridden_ops(_router.table)
    if not ops:
        return len(winners)
    if torch.cuda.is_available():
        _router.workspace(torch.device("cuda", torch.cuda.current_device()))  # not inside a capture
    lib = torch.library.Library("aten", "IMPL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Overriding a previously registered kernel": meant
        for name in ops:
            lib.impl(name, _OVERRIDES[name], "CUDA")
    _library = lib
    return len(winners)


def disable() -> None:
    """PyTorch's own kernels again (the counts stay readable in stats())."""
    global _library
    if _library is not None:
        _library._destroy()
        _library = None


def enabled() -> bool:
    return _library is not None


def key_name(key: tuple) -> str:
    """A cache key (op, dtype, m, n, k, batch) as people read it."""
    op, dtype, m, n, k, batch = key
    return f"{op} {dtype} m={m} n={n} k={k}" + (f" batch={batch}" if batch > 1 else "")


def stats() -> dict:
    """Calls since enable(): routed and kept (the winner is PyTorch's own algorithm) per problem,
    and passed to PyTorch (no winner, or storage cuBLASLt cannot take) per op. Calls of ops that
    are not overridden are not seen (enable(census=True) overrides all)."""
    r = _router

    def by_key(counts: Dict[tuple, int]) -> Dict[str, int]:
        named: Dict[str, int] = {}
        for p, count in counts.items():
            name = key_name(cache_key(p))
            named[name] = named.get(name, 0) + count
        return named

    if r is None:
        return {"routed": 0, "kept": 0, "passed": 0, "routed_by_key": {}, "kept_by_key": {},
                "passed_by_op": {}}
    return {"routed": sum(r.routed.values()), "kept": sum(r.kept_calls.values()),
            "passed": sum(r.passed.values()), "routed_by_key": by_key(r.routed),
            "kept_by_key": by_key(r.kept_calls), "passed_by_op": dict(r.passed)}


def reset_stats() -> None:
    if _router is not None:
        _router.routed.clear()
        _router.kept_calls.clear()
        _router.passed.clear()


@contextlib.contextmanager
def tuned_gemms(db: Optional[str] = None, **env: object) -> Iterator[Dict[tuple, dict]]:
    """enable() for the block; yields the winners it routes, by key."""
    enable(db, **env)
    try:
        yield _router.table if _router else {}
    finally:
        disable()


__all__ = ["cache_key", "disable", "enable", "enabled", "is_default", "key_name", "load", "operand",
           "overridden_ops", "problem_json", "problem_of", "reset_stats", "stats", "tuned_gemms"]

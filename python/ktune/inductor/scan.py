"""What Inductor generated for a torch.compile program, read from its cache directory without
running it: one record per Triton kernel module (its kind, launch shape, arguments, the ATen ops it
fuses, Inductor's own pick). The record's fields are listed in docs/inductor.md.

Reads the files only (Python's `ast`), so it runs anywhere; where PyTorch is importable it also
names Inductor's pick exactly (the `.best_config` file's name hashes PyTorch's own source).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Dict, List, Optional

SCHEMA_VERSION = 1

# Inductor's heuristic decorators whose configuration ktune searches (their block sizes, warps and
# stages reach Inductor through its lookup table); templates bake their tiles into the source.
TUNABLE_KINDS = ("pointwise", "reduction", "persistent_reduction")

_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "float64": "f64",
                 "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8",
                 "bool": "bool"}
_KERNEL_PATH = re.compile(r"^# kernel path: (.+)$")
_SOURCE_NODES = re.compile(
    r"^# Topologically Sorted Source Nodes: \[(.*)\], Original ATen: \[(.*)\]$")
_NAME = re.compile(r"^def [^(]+\(")


class ScanError(Exception):
    """What was wrong with the directory, in one sentence."""


def lookup_hash(size_hints: object, function_source: str) -> str:
    """Inductor's autotune_lookup_table key: the size hints and the kernel's source without its name
    (torch._inductor.runtime.triton_heuristics.generate_lookup_hash_from_source_code)."""
    text = str(size_hints) + _NAME.sub("(", function_source.strip(), count=1)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _literal(node: ast.AST) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return None


def _dict_entries(node: Optional[ast.AST]) -> Dict[str, object]:
    """The literal values of a dict display, skipping values that are not literals."""
    out: Dict[str, object] = {}
    if isinstance(node, ast.Dict):
        for k, v in zip(node.keys, node.values):
            key = _literal(k) if k is not None else None
            if isinstance(key, str):
                out[key] = _literal(v)
    return out


def _heuristic(fn: ast.FunctionDef) -> Optional[ast.Call]:
    for d in fn.decorator_list:
        if (isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute)
                and isinstance(d.func.value, ast.Name) and d.func.value.id == "triton_heuristics"):
            return d
    return None


def _dtype(node: Optional[ast.AST]) -> Optional[str]:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        if node.value.id == "torch":
            return _TORCH_DTYPES.get(node.attr, node.attr)
    return None


def _get_args(fn: ast.FunctionDef) -> Optional[List[object]]:
    """get_args()'s arguments: tensors as {shape, stride, dtype}, scalars as numbers; None when it
    holds something else (ktune then cannot rebuild the launch)."""
    tensors: Dict[str, dict] = {}
    result: Optional[List[object]] = None
    for stmt in fn.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(
                stmt.targets[0], ast.Name) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            name = call.func.id if isinstance(call.func, ast.Name) else ""
            if name != "rand_strided" or len(call.args) < 2:
                return None
            kw = {k.arg: k.value for k in call.keywords}
            shape, stride = _literal(call.args[0]), _literal(call.args[1])
            if not isinstance(shape, tuple) or not isinstance(stride, tuple):
                return None
            tensors[stmt.targets[0].id] = {"shape": list(shape), "stride": list(stride),
                                           "dtype": _dtype(kw.get("dtype"))}
        elif isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Tuple):
            result = []
            for e in stmt.value.elts:
                if isinstance(e, ast.Name) and e.id in tensors:
                    result.append(tensors[e.id])
                elif isinstance(_literal(e), (int, float)):
                    result.append(_literal(e))
                else:
                    return None
    return result


def read_kernel_module(path: Path) -> Optional[dict]:
    """The record of one Inductor kernel module; None when the file is not one."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if "@triton_heuristics." not in text or "@triton.jit" not in text:
        return None
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    lines = text.splitlines()
    kernel = get_args = None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            if _heuristic(node) is not None:
                kernel = node
            elif node.name == "get_args":
                get_args = node
    if kernel is None:
        return None
    deco = _heuristic(kernel)
    kw = {k.arg: k.value for k in deco.keywords}
    kind = deco.func.attr
    size_hints = _literal(kw["size_hints"]) if "size_hints" in kw else None
    inductor_meta = _dict_entries(kw.get("inductor_meta"))
    triton_meta = _dict_entries(kw.get("triton_meta"))
    signature = triton_meta.get("signature") or {}
    function_source = "\n".join(lines[kernel.lineno - 1:kernel.end_lineno])
    args = _get_args(get_args) if get_args is not None else None
    record = {
        "name": inductor_meta.get("kernel_name") or kernel.name,
        "kind": kind,
        "lookup_hash": lookup_hash(size_hints, function_source),
        "source_hash": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "path": str(path.resolve()),
        "size_hints": size_hints if isinstance(size_hints, dict) else {},
        "numels": {},
        "dtype": None,
        "args": args or [],
        "ops": [],
        "source_nodes": [],
        "stack_traces": [],
        "inductor_choice": None,
        "tunable": True,
        "why_not": "",
    }
    # Scalars follow the signature: the non-constexpr parameters, in order, are get_args' values.
    params = [n for n, t in signature.items() if t != "constexpr"] if isinstance(
        signature, dict) else []
    if args is not None and len(params) == len(args):
        record["numels"] = {n: v for n, v in zip(params, args) if n.endswith("numel")}
    record["dtype"] = next((a["dtype"] for a in args or [] if isinstance(a, dict)), None)
    if kind not in TUNABLE_KINDS:
        record["tunable"] = False
        record["why_not"] = (f"a {kind} kernel: Inductor bakes its tiles into the source, so only "
                             "its own choice among generated variants applies")
    elif args is None:
        record["tunable"] = False
        record["why_not"] = ("its module has no get_args() ktune can read; profile with "
                             "TORCHINDUCTOR_BENCHMARK_KERNEL=1 (ktune profile sets it)")
    return record


def _wrapper_origins(path: Path) -> Dict[str, tuple]:
    """kernel module file name -> (source nodes, ATen ops), from a wrapper module's comments."""
    out: Dict[str, tuple] = {}
    current = None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        m = _KERNEL_PATH.match(line)
        if m:
            current = os.path.basename(m.group(1).strip())
            continue
        m = _SOURCE_NODES.match(line)
        if m and current:
            split = [s.strip() for s in m.group(1).split(",") if s.strip()]
            ops = [s.strip() for s in m.group(2).split(",") if s.strip()]
            out[current] = (split, ops)
            current = None
    return out


def _best_config_name(module: Path) -> Optional[str]:
    """The name Inductor gives the kernel's `.best_config` file; None without PyTorch."""
    try:
        from torch._inductor.codecache import torch_key  # noqa: PLC0415 (optional)
        from torch.compiler import config as cconfig  # noqa: PLC0415
    except Exception:  # noqa: BLE001 (any failure to import means: not knowable here)
        return None
    key = hashlib.sha256(f"{module.name}:{cconfig.cache_key_tag}".encode("utf-8")).hexdigest()
    hasher = hashlib.sha256()
    hasher.update(key.encode("utf-8"))
    hasher.update(torch_key())
    return hasher.hexdigest() + ".best_config"


def _inductor_choice(module: Path, modules_in_dir: int) -> Optional[dict]:
    name = _best_config_name(module)
    candidates = [module.parent / name] if name else []
    if not name and modules_in_dir == 1:  # no PyTorch here: the directory's only one is its own
        candidates = sorted(module.parent.glob("*.best_config"))[:2]
        if len(candidates) != 1:
            candidates = []
    for c in candidates:
        try:
            data = json.loads(c.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            keep = {k: v for k, v in data.items()
                    if k.isupper() or k in ("num_warps", "num_stages")}
            return keep or None
    return None


def versions() -> Dict[str, Optional[str]]:
    out: Dict[str, Optional[str]] = {"torch": None, "triton": None}
    for name in out:
        try:
            out[name] = __import__(name).__version__
        except Exception:  # noqa: BLE001
            pass
    return out


def scan(directory: os.PathLike | str, stacks: Optional[Dict[str, List[str]]] = None) -> dict:
    """Every Triton kernel module under `directory` (an Inductor cache directory)."""
    root = Path(directory)
    if not root.is_dir():
        raise ScanError(f"{root} is not a directory; give the TORCHINDUCTOR_CACHE_DIR of the "
                        "compiled program.")
    origins: Dict[str, tuple] = {}
    records: Dict[str, dict] = {}
    per_dir: Dict[Path, int] = {}
    files = sorted(p for p in root.rglob("*.py") if p.is_file())
    for path in files:
        try:
            head = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if "# kernel path:" in head and "async_compile" in head:
            origins.update(_wrapper_origins(path))
            continue
        rec = read_kernel_module(path)
        if rec is None:
            continue
        per_dir[path.parent] = per_dir.get(path.parent, 0) + 1
        records.setdefault(rec["name"], rec)
    for rec in records.values():
        path = Path(rec["path"])
        nodes, ops = origins.get(path.name, ([], []))
        rec["source_nodes"], rec["ops"] = nodes, ops
        rec["inductor_choice"] = _inductor_choice(path, per_dir.get(path.parent, 0))
        if stacks:
            rec["stack_traces"] = stacks.get(rec["name"], [])
    return {"schema_version": SCHEMA_VERSION, **versions(),
            "kernels": sorted(records.values(), key=lambda r: r["name"])}

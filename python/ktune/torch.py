"""Cached GEMM winners where PyTorch calls cuBLAS and cuBLASLt.

ktune routes GEMMs inside the library call, not in Python: run the program under ktune's router,

    ktune run -- python3 train.py             # any program that calls cuBLAS / cuBLASLt
    python -m ktune.prove train.py            # the same, measured with and without, alternating

and every `x @ W`, `nn.Linear`, `bmm` and `addmm` (forward and backward, eager or captured in a CUDA
graph) whose exact GEMM descriptor has a winner in the store runs that winner; every other call
goes to PyTorch's own cuBLAS call untouched, at no Python cost. Each winner is first timed against
PyTorch's own algorithm inside the program, and demoted if it is not faster there.

This module controls the router from inside such a program:

    with ktune.torch.tuned_gemms():       # routing on for the block (it is on from the start)
        y = model(x)
    ktune.torch.stats()                   # calls seen, routed, kept, passed; each winner's verdict

`routing_env()` gives the environment that loads the router into a program started from Python.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import tempfile
from pathlib import Path
from typing import Dict, Iterator, Optional

from . import _db, _ktune, environment

_ROUTER_NAME = "libktune_route.so"


def router_path() -> Path:
    """libktune_route.so: in lib/ under the package's library once installed (where its ktune
    binary finds it too), else the build tree's."""
    installed = _ktune.LIBRARY_PATH.parent / "lib" / _ROUTER_NAME
    return installed if installed.exists() else Path(_ktune.ROUTER_BUILD_PATH)


def _router() -> Optional[ctypes.CDLL]:
    # The router is loaded only when the program started with it preloaded: look in the process.
    try:
        proc = ctypes.CDLL(None)
    except OSError:
        return None
    if not hasattr(proc, "ktune_route_set_enabled"):
        return None
    proc.ktune_route_set_enabled.restype = ctypes.c_int
    proc.ktune_route_set_enabled.argtypes = [ctypes.c_int]
    proc.ktune_route_stats_json.restype = ctypes.c_void_p
    proc.ktune_route_stats_json.argtypes = []
    return proc


def loaded() -> bool:
    """Whether this process runs with ktune's router (ktune run, python -m ktune.prove)."""
    return _router() is not None


def _need() -> ctypes.CDLL:
    r = _router()
    if r is None:
        raise _ktune.Error(
            "ktune's GEMM router is not loaded in this process; start the program with "
            "`ktune run -- python3 FILE.py` or `python -m ktune.prove FILE.py` (or the environment "
            "ktune.torch.routing_env() gives).")
    return r


def enable() -> None:
    """Routes winners again (the router starts enabled)."""
    _need().ktune_route_set_enabled(1)


def disable() -> None:
    """Every GEMM call passes to PyTorch's own cuBLAS call; the counts go on."""
    _need().ktune_route_set_enabled(0)


def enabled() -> bool:
    r = _router()
    if r is None:
        return False
    was = r.ktune_route_set_enabled(1)
    r.ktune_route_set_enabled(was)
    return bool(was)


def stats() -> dict:
    """The router's counts since the process started (schema_version 1): calls seen and passed
    per cuBLAS entry point, and per winner its verdict (trying, routed, demoted), its routed,
    kept and trial calls and the times its field trial measured inside this program."""
    r = _need()
    ptr = r.ktune_route_stats_json()
    if not ptr:
        raise _ktune.Error("ktune's GEMM router could not report its counts.")
    try:
        return json.loads(ctypes.string_at(ptr).decode("utf-8"))
    finally:
        ctypes.CDLL(None).free(ctypes.c_void_p(ptr))


@contextlib.contextmanager
def tuned_gemms() -> Iterator[dict]:
    """Routing on inside the block, off after it; yields stats() as it was on entry."""
    r = _need()
    was = r.ktune_route_set_enabled(1)
    try:
        yield stats()
    finally:
        r.ktune_route_set_enabled(was)


def routing_env(db: Optional[str] = None, **env: object) -> Dict[str, str]:
    """The variables that load the router, with this GPU's winners from the store (or those of the
    environment given), into a program started with them: LD_PRELOAD and KTUNE_ROUTE_TABLE (a
    file only this user can read). ktune.Error when the store holds no winner for this GPU."""
    e = environment(**env)  # type: ignore[arg-type]
    table = _ktune.route_table_json(_db(db), e["arch"], e["device_name"])
    if not json.loads(table)["winners"]:
        raise _ktune.Error(
            f"the store holds no tuned cuBLASLt GEMM for {e['device_name']}; tune the program's "
            "GEMMs first (ktune profile --gemm-shapes, then ktune queue from-backlog and ktune "
            "worker, or the report's tune commands).")
    fd, path = tempfile.mkstemp(prefix="ktune-route-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        f.write(table)
    old = os.environ.get("LD_PRELOAD", "")
    preload = str(router_path()) + (":" + old if old else "")
    return {"LD_PRELOAD": preload, "KTUNE_ROUTE_TABLE": path}


__all__ = ["disable", "enable", "enabled", "loaded", "router_path", "routing_env", "stats",
           "tuned_gemms"]

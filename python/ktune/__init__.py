"""ktune for Python: in-process profiling, trace reports as plain data, and the tuning cache.

    with ktune.profile("run.ktrace"):
        model(x)
    data = ktune.report("run.ktrace")          # the content of `ktune report --json`
    cfg = ktune.lookup("gemm", [4096, 4096, 1024], "bf16")

The C++ library does the work (libktune_python.so, loaded by ktune._native, which the package's
modules import as _ktune); this file turns its JSON answers into dicts and lists. ktune.triton (a
cache-backed autotune decorator) and ktune.torch (tuned GEMMs for PyTorch) import Triton and
PyTorch only when used.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import sys
from pathlib import Path
from typing import Iterator, Optional, Sequence

from . import _native as _ktune

Error = _ktune.Error
NoGpuError = _ktune.NoGpuError

__version__ = _ktune.version()

# The NVTX range `with ktune.profile(...)` marks when the program already runs under
# `ktune profile`; `ktune profile --range nvtx:ktune.profile` captures only inside it.
PROFILE_RANGE = "ktune.profile"

_TRACER_NAME = "libktune_tracer.so"


def _db(db: Optional[str]) -> str:
    # As the CLI's --db: KTUNE_DB, else "" (the embedded SQLite store, KTUNE_HOME respected). A
    # db (or KTUNE_DB) given but blank names no store: refused, as the CLI refuses --db ''
    # (it used to mean the default store, which was never what was asked).
    if db is None:
        named, source = os.environ.get("KTUNE_DB"), "KTUNE_DB"
        if named is None:
            return ""
    else:
        named, source = os.fspath(db), "db"
    if not named.strip():
        raise Error(f"{source}={named!r} names no store; give a store path or postgresql:// URL, "
                    f"or leave {source} out for the default store.")
    return named


def environment(
    arch: Optional[str] = None,
    device_name: Optional[str] = None,
    toolkit: Optional[str] = None,
    driver_major: Optional[int] = None,
) -> dict:
    """This GPU's cache environment (arch, device name, toolkit, driver major); arguments that are
    given replace what the GPU says, and with all of arch, device_name and toolkit given no GPU is
    needed."""
    given = {"arch": arch, "device_name": device_name, "toolkit": toolkit,
             "driver_major": driver_major}
    if arch and device_name and toolkit:
        env = {"arch": "", "device_name": "", "toolkit": "", "driver_major": 0}
    else:
        try:
            env = json.loads(_ktune.detect_environment())
        except NoGpuError as e:
            raise NoGpuError(
                f"{e} Without a GPU, pass arch=, device_name= and toolkit= to say which "
                "environment's entries to read."
            ) from None
    env.update({k: v for k, v in given.items() if v is not None})
    return env


def report(path: os.PathLike | str, by: str = "name") -> dict:
    """The analysis of a .ktrace as plain data: the same content as `ktune report --json`
    (kernels by GPU time, busy/idle, gaps, NVTX ranges, the tuning backlog)."""
    return json.loads(_ktune.report_json(os.fspath(path), by))


def lookup(
    op: str,
    shape: Sequence[int],
    dtype: str,
    db: Optional[str] = None,
    **env: object,
) -> Optional[dict]:
    """The cached configuration of (op, shape, dtype) for this GPU: exact bucket on this device,
    else the nearest bucket on this arch, else the op's default; None when there is none. The
    full answer (match kind, bucket, entry, staleness) is ktune.lookup_result(...)."""
    result = lookup_result(op, shape, dtype, db, **env)
    return None if result["match"] == "none" else result["config"]


def lookup_result(
    op: str,
    shape: Sequence[int],
    dtype: str,
    db: Optional[str] = None,
    **env: object,
) -> dict:
    """The store's whole lookup answer, as `ktune cache get --json` prints it."""
    e = environment(**env)  # type: ignore[arg-type]
    return json.loads(_ktune.lookup_json(_db(db), op, dtype, shape, json.dumps(e)))


def _tracer_path() -> Path:
    # An installed package keeps the tracer in lib/ under the library's folder, where its ktune
    # binary (bin/) finds it too; the build tree keeps it beside the ktune binary; KTUNE_TRACER_LIB
    # names another one.
    if os.environ.get("KTUNE_TRACER_LIB"):
        return Path(os.environ["KTUNE_TRACER_LIB"])
    installed = _ktune.LIBRARY_PATH.parent / "lib" / _TRACER_NAME
    return installed if installed.exists() else Path(_ktune.TRACER_BUILD_PATH)


def under_ktune_profile() -> bool:
    """True when this process already runs with ktune's tracer injected (`ktune profile`)."""
    injected = os.environ.get("CUDA_INJECTION64_PATH", "")
    return os.path.basename(injected).startswith("libktune_tracer")


_started_in_process = False


@contextlib.contextmanager
def profile(path: os.PathLike | str, metrics: Optional[str] = None) -> Iterator[None]:
    """Traces the block with ktune's tracer, started in this process, and writes `path` when the
    block ends. Under `ktune profile` the process is traced already: the block becomes the NVTX
    range "ktune.profile" in that trace instead. One in-process trace per process (CUPTI's
    activity API has one subscriber)."""
    global _started_in_process
    if metrics is not None:
        raise Error(
            f"ktune.profile(metrics={metrics!r}): hardware counters need kernel replay, which "
            "runs from outside the program; use `ktune profile --metrics SET -- python ...`."
        )
    if under_ktune_profile():
        _ktune.nvtx_push(PROFILE_RANGE)
        try:
            yield
        finally:
            _ktune.nvtx_pop()
        return
    if _started_in_process:
        raise Error(
            "ktune.profile was already used in this process; CUPTI allows one trace per "
            "process, so profile one block, or run the program under `ktune profile`."
        )
    tracer_file = _tracer_path()
    if not tracer_file.exists():
        raise Error(
            f"the tracer library {tracer_file} is missing; reinstall ktune or set "
            "KTUNE_TRACER_LIB to libktune_tracer.so."
        )
    out = Path(path).resolve()
    if out.exists():
        raise Error(f"{out} exists; ktune.profile does not overwrite a trace, choose a new path.")
    tracer = ctypes.CDLL(os.fspath(tracer_file))
    # The tracer reads its options from the environment (its only channel when injected); they
    # are set for the start and put back, so that child processes do not inherit them.
    settings = {"KTUNE_TRACE_OUTPUT": os.fspath(out)}
    saved = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    try:
        tracer.InitializeInjection()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    _started_in_process = True
    try:
        yield
    finally:
        _synchronize()
        tracer.ktune_tracer_stop()


def _synchronize() -> None:
    # Work still queued when the block ends belongs to it: wait for the GPU through PyTorch when
    # the program uses it (no other runtime is ours to assume).
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


__all__ = [
    "Error",
    "NoGpuError",
    "PROFILE_RANGE",
    "environment",
    "lookup",
    "lookup_result",
    "profile",
    "report",
    "under_ktune_profile",
]

"""ktune's C++ library, libktune_python.so, loaded with ctypes: its C functions (src/python/capi.h)
as Python functions. Data crosses as JSON text, the same versioned forms the CLI prints; the
package's modules turn it into dicts and lists. Use the ktune package, not this module.

The library has no Python dependency, so one build serves every CPython 3. ctypes releases the GIL
for the length of each call: a store call waiting on PostgreSQL or a busy SQLite file does not
stall the caller's other threads.
"""

from __future__ import annotations

import ctypes
import operator
import os
from pathlib import Path
from typing import Callable, Sequence, Tuple

LIBRARY_NAME = "libktune_python.so"


class Error(RuntimeError):
    """A ktune failure, with the library's one sentence: what was wrong, where, and the fix."""


class NoGpuError(Error):
    """No NVIDIA driver or GPU on this machine."""


# capi.h's statuses.
_OK, _ERROR, _NO_GPU = 0, 1, 2


def _library_path() -> Path:
    # KTUNE_NATIVE_LIB names one (a source checkout's python/ run against a build elsewhere); else
    # the one beside this file, where both the build tree and `pip install .` put it.
    named = os.environ.get("KTUNE_NATIVE_LIB")
    if named:
        if not os.path.exists(named):
            raise ImportError(
                f"KTUNE_NATIVE_LIB={named} does not exist; point it to a built {LIBRARY_NAME} "
                "or unset it."
            )
        return Path(named).resolve()
    beside = Path(__file__).resolve().with_name(LIBRARY_NAME)
    if not beside.exists():
        raise ImportError(
            f"ktune's library {beside} is missing; build the project and put build/python on "
            f"PYTHONPATH, `pip install .`, or set KTUNE_NATIVE_LIB to a built {LIBRARY_NAME}."
        )
    return beside


def _load(path: Path) -> ctypes.CDLL:
    try:
        return ctypes.CDLL(os.fspath(path))
    except OSError as e:
        raise ImportError(
            f"ktune's library {path} could not be loaded ({e}); install what it names "
            "(scripts/deps.sh) or add the folder that holds it to LD_LIBRARY_PATH."
        ) from None


LIBRARY_PATH = _library_path()
_lib = _load(LIBRARY_PATH)

# char**: a string the library allocates, freed with ktune_free
_Out = ctypes.POINTER(ctypes.c_void_p)
_Shape = ctypes.POINTER(ctypes.c_int64)

# Every function of capi.h: name -> (restype, argtypes), declared once at import. A test checks this
# table against the library's exported symbols.
SIGNATURES = {
    "ktune_last_error": (ctypes.c_char_p, []),
    "ktune_free": (None, [ctypes.c_void_p]),
    "ktune_version": (ctypes.c_int, [_Out]),
    "ktune_tracer_build_path": (ctypes.c_int, [_Out]),
    "ktune_report_json": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, _Out]),
    "ktune_lookup_json": (
        ctypes.c_int,
        [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, _Shape, ctypes.c_size_t,
         ctypes.c_char_p, _Out],
    ),
    "ktune_get_entry_json": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, _Out]),
    "ktune_put_entry_json": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, _Out]),
    "ktune_put_op": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]),
    "ktune_bucket_name": (ctypes.c_int, [ctypes.c_char_p, _Shape, ctypes.c_size_t, _Out]),
    "ktune_list_entries_json": (
        ctypes.c_int,
        [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, _Out],
    ),
    "ktune_detect_environment": (ctypes.c_int, [_Out]),
    "ktune_nvtx_push": (ctypes.c_int, [ctypes.c_char_p]),
    "ktune_nvtx_pop": (ctypes.c_int, []),
    "ktune_router_build_path": (ctypes.c_int, [_Out]),
    "ktune_route_table_json": (
        ctypes.c_int,
        [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, _Out],
    ),
}
for _name, (_restype, _argtypes) in SIGNATURES.items():
    getattr(_lib, _name).restype = _restype
    getattr(_lib, _name).argtypes = _argtypes
del _name, _restype, _argtypes


def _check(status: int) -> None:
    if status != _OK:
        message = _lib.ktune_last_error().decode("utf-8", "replace")
        raise (NoGpuError if status == _NO_GPU else Error)(message)


def _text(s: str, what: str = "a text argument") -> bytes:
    # A C string ends at its first NUL: "gemm\0x" would be looked up as "gemm".
    if "\0" in s:
        raise Error(f"{what} {s[:60]!r} holds a NUL character, which no op name, dtype or path "
                    "may hold; remove it.")
    return s.encode("utf-8", "surrogateescape")  # paths that are not UTF-8 pass through as bytes


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _shape(shape: Sequence[int]) -> Tuple[ctypes.Array, int]:
    # ctypes wraps an int past 64 bits silently ([2**64 + 1048576] became [1048576]); a float
    # would be truncated. Each dimension must be a whole number that fits.
    dims = []
    for i, d in enumerate(shape):
        try:
            v = operator.index(d)
        except TypeError:
            raise Error(f"shape dimension {i} is {d!r}, not a whole number; give the shape as "
                        "integers, e.g. [4096, 4096].") from None
        if not _INT64_MIN <= v <= _INT64_MAX:
            raise Error(f"shape dimension {i} is {v}, beyond the 64-bit sizes ktune stores; "
                        "give the tensor's real size.")
        dims.append(v)
    return (ctypes.c_int64 * len(dims))(*dims), len(dims)


def _string(fn: Callable[..., int], *args: object) -> str:
    # Calls a function whose last argument is `char** out` and takes the string it hands out.
    out = ctypes.c_void_p()
    _check(fn(*args, ctypes.byref(out)))
    try:
        return ctypes.string_at(out.value).decode("utf-8")
    finally:
        _lib.ktune_free(out)


def version() -> str:
    """"0.1.0 (abc1234)": the library's version and commit."""
    return _string(_lib.ktune_version)


TRACER_BUILD_PATH = _string(_lib.ktune_tracer_build_path)
ROUTER_BUILD_PATH = _string(_lib.ktune_router_build_path)


def report_json(path: str, by: str = "name") -> str:
    return _string(_lib.ktune_report_json, _text(path, "path"), _text(by, "by"))


def lookup_json(db: str, op: str, dtype: str, shape: Sequence[int], env_json: str) -> str:
    dims, n = _shape(shape)
    return _string(_lib.ktune_lookup_json, _text(db, "db"), _text(op, "op"),
                   _text(dtype, "dtype"), dims, n, _text(env_json))


def get_entry_json(db: str, key_json: str) -> str:
    return _string(_lib.ktune_get_entry_json, _text(db, "db"), _text(key_json))


def put_entry_json(db: str, entry_json: str, force: bool = False) -> str:
    return _string(_lib.ktune_put_entry_json, _text(db, "db"), _text(entry_json), int(bool(force)))


def put_op(db: str, op: str, policy_json: str) -> None:
    _check(_lib.ktune_put_op(_text(db, "db"), _text(op, "op"), _text(policy_json)))


def bucket_name(policy_json: str, shape: Sequence[int]) -> str:
    dims, n = _shape(shape)
    return _string(_lib.ktune_bucket_name, _text(policy_json), dims, n)


def list_entries_json(db: str, op: str, arch: str = "", device_name: str = "") -> str:
    return _string(_lib.ktune_list_entries_json, _text(db, "db"), _text(op, "op"),
                   _text(arch, "arch"), _text(device_name, "device_name"))


def detect_environment() -> str:
    return _string(_lib.ktune_detect_environment)


def nvtx_push(name: str) -> None:
    _check(_lib.ktune_nvtx_push(_text(name)))


def nvtx_pop() -> None:
    _check(_lib.ktune_nvtx_pop())


def route_table_json(db: str, arch: str, device_name: str) -> str:
    return _string(_lib.ktune_route_table_json, _text(db, "db"), _text(arch, "arch"),
                   _text(device_name, "device_name"))


__all__ = [
    "Error",
    "LIBRARY_PATH",
    "NoGpuError",
    "ROUTER_BUILD_PATH",
    "TRACER_BUILD_PATH",
    "bucket_name",
    "detect_environment",
    "get_entry_json",
    "list_entries_json",
    "lookup_json",
    "nvtx_pop",
    "nvtx_push",
    "put_entry_json",
    "put_op",
    "report_json",
    "route_table_json",
    "version",
]

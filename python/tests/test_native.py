"""The C boundary (libktune_python.so through ctypes): its error convention, and that the library is
tied to no Python version."""

import ctypes
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import ktune
from ktune import _native

POW2 = json.dumps({"dims": [{"kind": "pow2"}]})


def has_gpu() -> bool:
    try:
        _native.detect_environment()
    except ktune.NoGpuError:
        return False
    return True


def test_a_ktune_error_arrives_as_ktune_error_with_its_sentence():
    with pytest.raises(ktune.Error) as caught:
        _native.bucket_name(POW2, [8, 0])
    assert type(caught.value) is ktune.Error
    assert str(caught.value) == ("key arguments: dimension 1 of shape 8x0 is 0; sizes must be "
                                 "positive.")


def test_malformed_json_is_a_ktune_error_naming_the_call():
    with pytest.raises(ktune.Error,
                       match=r"^malformed JSON handed to ktune_bucket_name: .*parse error"):
        _native.bucket_name("{not json", [8])
    # Well-formed JSON of the wrong shape: the same error, not a crash.
    with pytest.raises(ktune.Error, match="ktune_get_entry_json"):
        _native.get_entry_json("", json.dumps({"op": "gemm"}))


def test_detect_environment_without_a_gpu_is_no_gpu_error():
    try:
        env = json.loads(_native.detect_environment())
    except ktune.NoGpuError as e:
        assert re.match(r"^no (NVIDIA driver|usable NVIDIA GPU) found .*\.$", str(e)), str(e)
        assert "\n" not in str(e)
    else:  # a GPU machine
        assert env["arch"].startswith("sm_")


def test_null_arguments_are_errors_not_crashes():
    out = ctypes.c_void_p()
    assert _native._lib.ktune_bucket_name(None, None, 0, ctypes.byref(out)) == 1
    assert "NULL for policy_json" in _native._lib.ktune_last_error().decode()
    assert _native._lib.ktune_route_table_json(None, b"", b"", ctypes.byref(out)) == 1
    assert "NULL for db" in _native._lib.ktune_last_error().decode()


def test_the_last_error_belongs_to_its_thread():
    with pytest.raises(ktune.Error, match="dimension 0"):
        _native.bucket_name(POW2, [0])
    other = []

    def fail_elsewhere():
        try:
            _native.bucket_name("[", [1])
        except ktune.Error as e:
            other.append(str(e))

    t = threading.Thread(target=fail_elsewhere)
    t.start()
    t.join()
    assert "malformed JSON" in other[0]
    assert "dimension 0" in _native._lib.ktune_last_error().decode()


def _dynamic_symbols(library: Path) -> list:
    """(name, defined) of each dynamic symbol, from readelf."""
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf (binutils) is not installed")
    out = subprocess.run([readelf, "--dyn-syms", "--wide", str(library)], check=True,
                         capture_output=True, text=True).stdout
    symbols = []
    for line in out.splitlines():
        f = line.split()
        # "  12: 0000000000012340   345 FUNC    GLOBAL DEFAULT   14 ktune_version"
        if len(f) >= 8 and f[0].endswith(":") and f[0][:-1].isdigit():
            symbols.append((f[7].split("@")[0], f[6] != "UND"))
    return symbols


def test_the_library_depends_on_no_python():
    library = _native.LIBRARY_PATH
    assert library.name == "libktune_python.so"  # no cpython-3XY ABI tag
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf (binutils) is not installed")
    dynamic = subprocess.run([readelf, "--dynamic", "--wide", str(library)], check=True,
                             capture_output=True, text=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
    assert needed and not [n for n in needed if "python" in n.lower()], needed
    undefined = [name for name, defined in _dynamic_symbols(library) if not defined]
    assert not [n for n in undefined if n.startswith(("Py", "_Py"))], undefined


def test_the_library_exports_exactly_what_the_loader_declares():
    exported = {name for name, defined in _dynamic_symbols(_native.LIBRARY_PATH) if defined}
    assert exported == set(_native.SIGNATURES)


def _other_interpreters() -> dict:
    """Other CPython 3.9+ interpreters on this machine, by (major, minor): python3.N on PATH and
    pyenv's versions."""
    pyenv = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates = [shutil.which(f"python3.{minor}") for minor in range(9, 20)]
    candidates += sorted(glob.glob("/usr/bin/python3.*"))
    candidates += sorted(glob.glob(f"{pyenv}/versions/3.*/bin/python3"))
    found = {}
    for exe in candidates:
        if not exe or not os.access(exe, os.X_OK) or exe.endswith("-config"):
            continue
        try:
            r = subprocess.run([exe, "-c", "import sys; print(*sys.version_info[:2])"],
                               capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if r.returncode != 0:  # e.g. a pyenv shim of a version that is not selected
            continue
        version = tuple(int(x) for x in r.stdout.split())
        if version >= (3, 9) and version != sys.version_info[:2]:
            found.setdefault(version, exe)
    return found


def test_the_package_imports_under_every_other_python():
    others = _other_interpreters()
    if not others:
        pytest.skip("no second CPython 3.9+ here; test_the_library_depends_on_no_python covers it")
    env = {**os.environ, "PYTHONPATH": str(Path(ktune.__file__).parents[1])}
    probe = ("import json, ktune; from ktune import _native; "
             "print(json.dumps([ktune.__version__, "
             "_native.bucket_name('{\"dims\": [{\"kind\": \"pow2\"}]}', [3000])]))")
    for version, exe in sorted(others.items()):
        r = subprocess.run([exe, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, f"python {version} ({exe}): {r.stderr}"
        expected = [ktune.__version__, _native.bucket_name(POW2, [3000])]
        assert json.loads(r.stdout) == expected, version

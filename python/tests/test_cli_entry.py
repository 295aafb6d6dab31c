"""The `ktune` command an installed package puts on PATH: which binary it runs, and the installed
layout (cmake --install of the wheel's component) in which that binary finds its tracer."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ktune import _cli

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

REPO = Path(__file__).resolve().parents[2]


def executable(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_binary_path_prefers_the_packaged_binary(tmp_path, monkeypatch):
    monkeypatch.delenv("KTUNE_CLI", raising=False)
    packaged = executable(tmp_path / "pkg" / "bin" / "ktune")
    built = executable(tmp_path / "build" / "src" / "cli" / "ktune")
    tracer = str(built.with_name("libktune_tracer.so"))
    assert _cli.binary_path(tmp_path / "pkg", tracer) == packaged
    packaged.unlink()
    assert _cli.binary_path(tmp_path / "pkg", tracer) == built


def test_binary_path_honours_ktune_cli(tmp_path, monkeypatch):
    named = executable(tmp_path / "elsewhere" / "ktune")
    executable(tmp_path / "pkg" / "bin" / "ktune")
    monkeypatch.setenv("KTUNE_CLI", str(named))
    assert _cli.binary_path(tmp_path / "pkg") == named
    monkeypatch.setenv("KTUNE_CLI", str(tmp_path / "absent"))
    with pytest.raises(FileNotFoundError, match="KTUNE_CLI=.*absent is not a file"):
        _cli.binary_path(tmp_path / "pkg")


def test_no_binary_is_one_sentence_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("KTUNE_CLI", raising=False)
    (tmp_path / "pkg" / "bin").mkdir(parents=True)
    (tmp_path / "pkg" / "bin" / "ktune").write_text("not executable")
    with pytest.raises(FileNotFoundError, match="the ktune binary was not found .*pip install"):
        _cli.binary_path(tmp_path / "pkg", "")
    original = _cli.binary_path
    monkeypatch.setattr(_cli, "binary_path", lambda **_: original(tmp_path / "pkg"))
    assert _cli.main(["info"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ktune: the ktune binary was not found") and err.count("\n") == 1


@pytest.mark.skipif(tomllib is None, reason="tomllib needs Python 3.11")
def test_pyproject_builds_and_exposes_the_command():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert project["project"]["scripts"] == {"ktune": "ktune._cli:main"}
    assert {"ktune", "ktune_python"} <= set(project["tool"]["scikit-build"]["build"]["targets"])


def test_python_m_ktune_runs_the_binary(ktune_cli):
    # ctest sets KTUNE_CLI to the built binary; `python -m ktune` runs it, its exit code included.
    out = subprocess.run([sys.executable, "-m", "ktune", "--version"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("ktune "), out.stderr
    bad = subprocess.run([sys.executable, "-m", "ktune", "no-such-command"], capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2


def test_installed_layout_finds_binary_and_tracer(tmp_path):
    # What `pip install .` puts in site-packages: the "python" install component, here installed
    # from the build ctest runs into a folder that stands for site-packages.
    build = os.environ.get("KTUNE_TEST_BUILD_DIR")
    cmake = shutil.which("cmake")
    if not build or not cmake:
        pytest.skip("KTUNE_TEST_BUILD_DIR is not set (ctest sets it to the build)")
    subprocess.run([cmake, "--install", build, "--component", "python", "--prefix",
                    str(tmp_path)], check=True, capture_output=True, timeout=300)
    pkg = tmp_path / "ktune"
    for part in ("bin/ktune", "lib/libktune_tracer.so", "libktune_python.so", "_cli.py",
                 "share/ktune/torch_ops/sitecustomize.py", "share/ktune/kernels/gemv/gemv.json"):
        assert (pkg / part).is_file(), part
    env = {k: v for k, v in os.environ.items() if k not in ("KTUNE_CLI", "KTUNE_TRACER",
                                                            "KTUNE_TRACER_LIB")}
    env["PYTHONPATH"] = str(tmp_path)
    env["KTUNE_HOME"] = str(tmp_path / "home")
    info = subprocess.run([sys.executable, "-m", "ktune", "info", "--json"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert info.returncode == 0, info.stderr
    facts = json.loads(info.stdout)
    tracer = facts["libraries"]["tracer"]
    assert Path(tracer["path"]) == (pkg / "lib" / "libktune_tracer.so").resolve(), tracer
    where = subprocess.run(
        [sys.executable, "-c", "import ktune; print(ktune.__file__); print(ktune._tracer_path())"],
        env=env, capture_output=True, text=True, timeout=60)
    assert where.stdout.split() == [str(pkg / "__init__.py"),
                                    str(pkg / "lib" / "libktune_tracer.so")]

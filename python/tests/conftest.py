"""Shared fixtures of the package's CPU tests: a temporary store and the paths of the tree."""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TRACE_FIXTURE = REPO / "tests" / "fixtures" / "traces" / "torch_layer_h200.ktrace"
# The environment a CPU test names instead of asking a GPU.
H100 = {"arch": "sm_90", "device_name": "NVIDIA H100 80GB HBM3", "toolkit": "13.0",
        "driver_major": 580}


@pytest.fixture
def db(tmp_path, monkeypatch):
    """A fresh SQLite store, also the default of code that reads KTUNE_DB."""
    path = str(tmp_path / "store.db")
    monkeypatch.setenv("KTUNE_DB", path)
    monkeypatch.setenv("KTUNE_HOME", str(tmp_path / "home"))
    return path


@pytest.fixture
def ktune_cli():
    """The ktune binary of the same build (ctest sets KTUNE_CLI)."""
    cli = os.environ.get("KTUNE_CLI")
    if not cli:
        pytest.skip("KTUNE_CLI is not set (ctest sets it to the built binary)")
    return cli

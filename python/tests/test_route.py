"""ktune.torch over the GEMM router (libktune_route.so): what it says outside a routed program,
routing_env's table from the store, and control of a router preloaded into a Python process (no GPU
needed: the router loads, counts and reports without one)."""

import json
import os
import subprocess
import sys

import pytest

import ktune
import ktune.torch as kt
from conftest import H100
from test_package import put

# A bf16 nn.Linear GEMM as the library search files it (bench::GemmProblem, bench::LtAlgoConfig).
PROBLEM = {"layout": "TN", "m": 2816, "n": 4096, "k": 1024, "batch": 1, "dtype": "bf16",
           "compute": "f32", "epilogue": "none"}
CONFIG = {"library": "cublaslt", "algo_id": 66, "tile": 18, "stages": 0, "splitk": 1,
          "reduction": 0, "swizzle": 0, "custom": 0, "source": "enumerated", "heuristic_rank": 0,
          "workspace_bytes": 0, "data": "", "problem": PROBLEM}


def test_outside_a_routed_program_it_says_how_to_start_one():
    assert not kt.loaded()
    assert not kt.enabled()
    for call in (kt.enable, kt.disable, kt.stats):
        with pytest.raises(ktune.Error, match=r"^ktune's GEMM router is not loaded.*ktune run -- "):
            call()
    with pytest.raises(ktune.Error, match="not loaded"):
        with kt.tuned_gemms():
            pass


def test_routing_env_hands_this_gpus_winners_to_the_router(db):
    with pytest.raises(ktune.Error, match="no ktune store at"):
        kt.routing_env(**H100)
    put(db, [64, 64, 64, 1], {**CONFIG, "problem": {**PROBLEM, "m": 64, "n": 64, "k": 64}},
        op="gemm_tn", env={**H100, "arch": "sm_80", "device_name": "NVIDIA A100"})
    with pytest.raises(ktune.Error, match="holds no tuned cuBLASLt GEMM for NVIDIA H100"):
        kt.routing_env(**H100)
    put(db, [2816, 4096, 1024, 1], CONFIG, op="gemm_tn")
    env = kt.routing_env(**H100)
    try:
        assert env["LD_PRELOAD"].split(":")[0] == str(kt.router_path())
        assert kt.router_path().is_file()
        assert oct(os.stat(env["KTUNE_ROUTE_TABLE"]).st_mode & 0o777) == "0o600"
        table = json.load(open(env["KTUNE_ROUTE_TABLE"]))
        assert table["schema_version"] == 1
        assert [w["problem"]["m"] for w in table["winners"]] == [2816]  # this GPU's only
        assert table["winners"][0]["config"]["algo_id"] == 66
    finally:
        os.unlink(env["KTUNE_ROUTE_TABLE"])


def test_a_preloaded_router_is_controlled_and_counted_from_python():
    code = ("import json, ktune.torch as kt\n"
            "print(json.dumps([kt.loaded(), kt.enabled()]))\n"
            "kt.disable(); print(json.dumps(kt.enabled()))\n"
            "with kt.tuned_gemms() as s: print(json.dumps([kt.enabled(), s['schema_version']]))\n"
            "print(json.dumps(kt.enabled()))\n"
            "s = kt.stats(); print(json.dumps(sorted(s)))\n")
    env = {**os.environ, "LD_PRELOAD": str(kt.router_path())}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(x) for x in out.stdout.splitlines()]
    assert lines[0] == [True, True]
    assert lines[1] is False
    assert lines[2] == [True, 1]
    assert lines[3] is False  # the block restores what it found
    assert lines[4] == ["entries", "field_trial", "near_misses", "pid", "schema_version", "winners"]

"""The package over the C++ library: import, cache lookups, report data, profile's errors."""

import json
import subprocess

import pytest

import ktune
from conftest import H100, TRACE_FIXTURE
from ktune import _ktune


def put(db, shape, config, median_ns=1000.0, op="gemm", dtype="bf16", env=H100):
    entry = {
        "op": op, "dtype": dtype, "bucket": "", **env,
        "shape": shape,
        "config": config,
        "median_ns": median_ns,
        "noise_ns": 1.0,
        "samples": 10,
        "throughput": 0.0,
        "throughput_unit": "flop/s",
        "verification": "passed",
        "provenance": {"strategy": "test", "created_at": "2026-11-23T00:00:00Z", "host": "h",
                       "ktune_version": "0", "ktune_commit": ""},
    }
    return json.loads(_ktune.put_entry_json(db, json.dumps(entry)))


def test_import_names_the_build():
    assert ktune.__version__
    assert issubclass(ktune.NoGpuError, ktune.Error)
    assert issubclass(ktune.Error, RuntimeError)


def test_lookup_exact_nearest_and_none(db):
    _ktune.put_op(db, "gemm", json.dumps({"dims": [{"kind": "pow2"}]}))
    assert put(db, [4096, 4096, 1024], {"algo": 7})["winner"]
    assert ktune.lookup("gemm", [4096, 4096, 1024], "bf16", **H100) == {"algo": 7}
    # Same pow2 bucket: an exact match without a second entry.
    r = ktune.lookup_result("gemm", [3000, 4096, 1000], "bf16", db=db, **H100)
    assert (r["match"], r["config"], r["schema_version"]) == ("exact", {"algo": 7}, 1)
    # Another bucket on the same arch: the nearest entry.
    assert ktune.lookup_result("gemm", [512, 512, 512], "bf16", **H100)["match"] == "nearest"
    # Another arch, or another dtype: nothing.
    assert ktune.lookup("gemm", [4096, 4096, 1024], "bf16", **{**H100, "arch": "sm_80"}) is None
    assert ktune.lookup("gemm", [4096, 4096, 1024], "f32", **H100) is None


def test_lookup_errors_are_one_sentence(db, tmp_path):
    with pytest.raises(ktune.Error, match="no ktune store at .*absent.db"):
        ktune.lookup("gemm", [1, 2], "bf16", db=str(tmp_path / "absent.db"), **H100)
    put(db, [8, 8], {"a": 1})
    with pytest.raises(ktune.Error, match="shape"):
        ktune.lookup("gemm", [8, 0], "bf16", **H100)


def test_shapes_beyond_64_bits_are_refused_not_wrapped(db):
    # Issue 44: [2**64 + 1048576] got the winner of [1048576]; a float was truncated.
    put(db, [1048576], {"a": 1})
    assert ktune.lookup("gemm", [1048576], "bf16", **H100) == {"a": 1}
    for shape in ([2**64 + 1048576], [2**63], [-(2**63) - 1]):
        with pytest.raises(ktune.Error, match="beyond the 64-bit sizes"):
            ktune.lookup("gemm", shape, "bf16", **H100)
    with pytest.raises(ktune.Error, match="not a whole number"):
        ktune.lookup("gemm", [1048576.0], "bf16", **H100)
    # Near the top of int64, a pow2 bucket once spun for ever.
    _ktune.put_op(db, "gemm", json.dumps({"dims": [{"kind": "pow2"}]}))
    assert ktune.lookup("gemm", [2**63 - 1], "bf16", **H100) == {"a": 1}  # the nearest


def test_names_with_a_nul_are_refused_not_cut(db):
    # Issue 44: "gemm\0anything" was looked up as "gemm".
    put(db, [8, 8], {"a": 1})
    for op, dtype in (("gemm\0x", "bf16"), ("gemm", "bf16\0")):
        with pytest.raises(ktune.Error, match="NUL character"):
            ktune.lookup(op, [8, 8], dtype, **H100)


def test_a_blank_db_is_refused_not_the_default_store(db, monkeypatch):
    # Issue 44: db='' used the default store.
    for blank in ("", " "):
        with pytest.raises(ktune.Error, match="names no store"):
            ktune.lookup("gemm", [8, 8], "bf16", db=blank, **H100)
    monkeypatch.setenv("KTUNE_DB", "")
    with pytest.raises(ktune.Error, match="KTUNE_DB=''"):
        ktune.lookup("gemm", [8, 8], "bf16", **H100)


def test_environment_without_gpu_says_what_to_pass():
    try:
        env = ktune.environment()
    except ktune.NoGpuError as e:
        assert "arch=" in str(e)
    else:  # a GPU machine
        assert env["arch"].startswith("sm_")
    assert ktune.environment(**H100) == H100


def test_report_is_the_cli_json(ktune_cli):
    data = ktune.report(TRACE_FIXTURE)
    assert data["schema_version"] >= 1
    assert isinstance(data["kernels"], list) and data["kernels"]
    cli = subprocess.run([ktune_cli, "report", str(TRACE_FIXTURE), "--format", "json"],
                         check=True, capture_output=True, text=True).stdout
    assert data == json.loads(cli)


def test_report_of_a_missing_trace(tmp_path):
    with pytest.raises(ktune.Error, match="absent.ktrace"):
        ktune.report(tmp_path / "absent.ktrace")


def test_profile_refuses_metrics_and_existing_output(tmp_path):
    with pytest.raises(ktune.Error, match="ktune profile --metrics"):
        with ktune.profile(tmp_path / "a.ktrace", metrics="roofline"):
            pass
    existing = tmp_path / "b.ktrace"
    existing.write_text("keep me")
    with pytest.raises(ktune.Error, match="does not overwrite"):
        with ktune.profile(existing):
            pass
    assert existing.read_text() == "keep me"


def test_profile_under_ktune_profile_marks_a_range(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_INJECTION64_PATH", "/opt/ktune/libktune_tracer.so")
    assert ktune.under_ktune_profile()
    with ktune.profile(tmp_path / "unused.ktrace"):
        pass
    assert not (tmp_path / "unused.ktrace").exists()  # the outer trace holds the range

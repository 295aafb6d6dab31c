"""ktune.inductor without a GPU: the scan of real Inductor cache files (tests/fixtures/inductor/
cache, written by PyTorch 2.11 on an H200), the search space made from Inductor's own
candidates, the winners use() hands to Inductor, and the measuring program's refusal of bad
input."""

import json
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pytest

from conftest import H100, REPO
from ktune import _native as _ktune
from ktune.inductor import OP_PREFIX, toolkit, winners
from ktune.inductor.scan import ScanError, lookup_hash, scan
from ktune.inductor.serve import MAX_BLOCK_ELEMENTS, space
from test_package import put

CACHE = REPO / "tests" / "fixtures" / "inductor" / "cache"
VERSIONS = {"torch": "2.11.0+cu130", "triton": "3.6.0"}


def by_name(result):
    return {k["name"]: k for k in result["kernels"]}


def test_scan_reads_every_kernel_module_with_its_launch_and_ops():
    result = scan(CACHE)
    assert result["schema_version"] == 1
    kernels = by_name(result)
    # Five kernel modules and one template; the wrapper module is not a kernel.
    assert sorted(k["kind"] for k in kernels.values()) == [
        "persistent_reduction", "persistent_reduction", "pointwise", "pointwise", "reduction",
        "template"]
    softmax = kernels["triton_per_fused__softmax__to_copy_amax_mul_sub_view_3"]
    assert softmax["numels"] == {"xnumel": 4096, "r0_numel": 128}
    assert softmax["size_hints"] == {"x": 4096, "r0_": 128}
    assert softmax["dtype"] == "bf16"
    assert softmax["args"][0] == {"shape": [2, 16, 128, 128], "stride": [262144, 16384, 128, 1],
                                  "dtype": "bf16"}
    assert "aten._softmax" in softmax["ops"]
    assert softmax["inductor_choice"]["num_warps"] >= 1  # its .best_config, the directory's only
    reduction = next(k for k in kernels.values() if k["kind"] == "reduction")
    assert reduction["numels"] == {"xnumel": 32768, "r0_numel": 128}
    assert softmax["tunable"] and len(softmax["lookup_hash"]) == 64
    for k in kernels.values():
        assert set(k) >= {"name", "kind", "lookup_hash", "source_hash", "path", "numels", "args",
                          "ops", "source_nodes", "stack_traces", "inductor_choice", "tunable",
                          "why_not"}
        if "/c6/" not in k["path"] and k["kind"] != "template":  # from the inference wrapper
            assert k["ops"], f"{k['name']} has no ops from the wrapper's comments"
    template = next(k for k in kernels.values() if k["kind"] == "template")
    assert not template["tunable"] and "template" in template["why_not"]


def test_lookup_hash_is_inductors_key():
    # Inductor's generate_lookup_hash_from_source_code: the size hints' repr, then the function's
    # source with its name cut out; so two kernels that differ only in name share a key.
    a = lookup_hash({"x": 64}, "def triton_poi_fused_add_0(in_ptr0, xnumel, XBLOCK):\n  pass\n")
    b = lookup_hash({"x": 64}, "def triton_poi_fused_add_7(in_ptr0, xnumel, XBLOCK):\n  pass")
    c = lookup_hash({"x": 128}, "def triton_poi_fused_add_0(in_ptr0, xnumel, XBLOCK):\n  pass")
    assert a == b != c


def test_scan_refuses_a_missing_directory_in_one_sentence(tmp_path):
    with pytest.raises(ScanError, match=r"is not a directory; give the TORCHINDUCTOR_CACHE_DIR"):
        scan(tmp_path / "nope")
    proc = subprocess.run([sys.executable, "-m", "ktune.inductor", "scan", str(tmp_path / "x")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


def test_scan_without_get_args_says_how_to_make_it_tunable(tmp_path):
    src = next((CACHE / "5h").glob("*.py")).read_text()
    cut = src[:src.index("def get_args")]
    (tmp_path / "k.py").write_text(cut)
    (rec,) = scan(tmp_path)["kernels"]
    assert not rec["tunable"] and "TORCHINDUCTOR_BENCHMARK_KERNEL=1" in rec["why_not"]


def config(kwargs, warps, stages=1):
    return SimpleNamespace(kwargs=kwargs, num_warps=warps, num_stages=stages)


def test_space_holds_inductors_candidates_first_and_a_wider_grid():
    own = [config({"XBLOCK": 2}, 1), config({"XBLOCK": 8}, 4)]
    names, configs, first = space(SimpleNamespace(configs=own),
                                  {"xnumel": 4096, "r0_numel": 128}, "persistent_reduction")
    assert names == ["XBLOCK", "num_warps", "num_stages"]
    assert [configs[i] for i in first] == [
        {"XBLOCK": 2, "num_warps": 1, "num_stages": 1},
        {"XBLOCK": 8, "num_warps": 4, "num_stages": 1}]
    assert len(configs) > 50
    for c in configs:  # a persistent reduction's block holds the whole row
        elements = c["XBLOCK"] * 128
        assert 32 * c["num_warps"] <= elements <= MAX_BLOCK_ELEMENTS
    assert len({json.dumps(c, sort_keys=True) for c in configs}) == len(configs)


def test_space_of_a_pointwise_kernel_keeps_stages_at_one_and_blocks_within_the_size():
    own = [config({"XBLOCK": 1024}, 4)]
    _, configs, first = space(SimpleNamespace(configs=own), {"xnumel": 300}, "pointwise")
    assert configs[first[0]] == {"XBLOCK": 1024, "num_warps": 4, "num_stages": 1}
    grid = [c for i, c in enumerate(configs) if i not in first]
    assert grid and all(c["num_stages"] == 1 and c["XBLOCK"] <= 512 for c in grid)


def test_winners_serve_this_gpus_entries_under_the_same_versions_only(db):
    env = dict(H100)
    here = toolkit(env["toolkit"], VERSIONS)
    old = toolkit(env["toolkit"], {"torch": "2.10.0", "triton": "3.5.0"})
    cfg = {"XBLOCK": 8, "num_warps": 2, "num_stages": 3}
    for op, tk in ((OP_PREFIX + "a" * 64, here), (OP_PREFIX + "b" * 64, old)):
        _ktune.put_op(db, op, json.dumps({"dims": [{"kind": "exact"}]}))
        put(db, [4096, 128], {**cfg, "problem": {"name": "triton_per_x"}}, op=op,
            env={**env, "toolkit": tk})
    put(db, [64, 64, 64], {"algo": 1}, op="gemm", env=env)  # not Inductor's
    found = winners(db, env=env, versions=VERSIONS)
    assert found["table"] == {"a" * 64: cfg}
    assert [s["op"] for s in found["stale"]] == [OP_PREFIX + "b" * 64]


def test_serve_refuses_a_file_that_is_not_a_kernel_module(tmp_path):
    if shutil.which("nvidia-smi"):
        pytest.skip("this test checks the refusal where no GPU is present")
    bad = tmp_path / "nope.py"
    bad.write_text("x = 1\n")
    proc = subprocess.run([sys.executable, "-m", "ktune.inductor", "serve", str(bad)],
                          capture_output=True, text=True, timeout=60, input="")
    first = json.loads(proc.stdout.splitlines()[0])
    assert proc.returncode == 1
    assert first["error"].startswith("ktune.inductor serve: ") and "kernel module" in first["error"]

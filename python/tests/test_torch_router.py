"""The PyTorch router's choice logic on the CPU, with fake tensors (fake_torch.py): which cuBLASLt
problem and cache key each way PyTorch multiplies becomes (the same keys the C++ side gives the
H100's logged forms, tests/analyze/gemm_calls_test.cpp), when a call is routed and when it goes to
PyTorch unchanged, and which kernels the router overrides."""

import importlib.util
import json

import pytest

if importlib.util.find_spec("torch") is not None:
    pytest.skip("PyTorch is installed: the router runs for real in the GPU tier "
                "(benchmarks/python/gemm_workload.py, routing_overhead.py)", allow_module_level=True)

import fake_torch  # noqa: E402

torch = fake_torch.install()
import ktune.torch as kt  # noqa: E402
from conftest import H100  # noqa: E402

T = fake_torch.Tensor
M, K, N = 256, 512, 384


def key(p):
    return kt.cache_key(p)


def test_each_way_pytorch_multiplies_is_the_problem_cublaslt_runs():
    x, w, wt = T((M, K)), T((K, N)), T((N, K))
    # x @ W: NN, m = N, n = M (column-major), leading dimensions of the stored rows.
    p = kt.problem_of(x, w)
    assert key(p) == ("gemm_nn", "bf16", N, M, K, 1)
    assert kt.problem_json(p)["lda"] == N and kt.problem_json(p)["ldb"] == K
    # F.linear(x, W) is x @ W.t(): W.t() is a transposed view, so TN, as nn.Linear logs.
    assert key(kt.problem_of(x, wt.t())) == ("gemm_tn", "bf16", N, M, K, 1)
    # x.t() @ W and transposed views of both: NT and TT.
    assert key(kt.problem_of(T((K, M)).t(), w))[0] == "gemm_nt"
    assert key(kt.problem_of(T((K, M)).t(), T((N, K)).t()))[0] == "gemm_tt"
    # torch.bmm(q, k^T): batched TN, batch strides as stored.
    q, k = T((8, 128, 64)), T((8, 128, 64))
    p = kt.problem_of(q, k.transpose(1, 2))
    assert key(p) == ("gemm_tn", "bf16", 128, 128, 64, 8)
    assert kt.problem_json(p)["stride_a"] == 128 * 64 and kt.problem_json(p)["stride_d"] == 128 * 128
    # A broadcast operand (torch's expand) has batch stride 0.
    shared = T((8, 64, 96), strides=(0, 96, 1))
    assert kt.problem_json(kt.problem_of(q, shared))["stride_a"] == 0
    # Epilogues name themselves; f32 is tf32 where PyTorch allows it.
    assert key(kt.problem_of(x, w, "gelu_bias"))[0] == "gemm_nn_gelu_bias"
    f32 = T((M, K), torch.float32), T((K, N), torch.float32)
    assert key(kt.problem_of(*f32))[1] == "f32"
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        assert key(kt.problem_of(*f32))[1] == "tf32"
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False


def test_storage_cublaslt_cannot_take_as_is_goes_to_pytorch():
    x = T((M, K))
    strided = T((K, N), strides=(2 * N, 2))  # no unit stride: PyTorch copies it first
    assert kt.problem_of(x, strided) is None
    assert kt.problem_of(x, T((K, N), torch.float16)) is None  # mixed types
    assert kt.problem_of(T((M, K), torch.float64), T((K, N), torch.float64)) is None
    assert kt.problem_of(T((4, M, K)), T((3, K, N))) is None  # batches differ


def test_the_winners_of_this_gpu_by_their_key(db, ktune_cli):
    import subprocess

    entry = {"op": "gemm_tn", "dtype": "bf16", "bucket": "", "arch": "sm_90",
             "device_name": H100["device_name"], "toolkit": "13.0", "driver_major": 580,
             "shape": [N, M, K, 1], "config": {"library": "cublaslt", "algo_id": 66},
             "median_ns": 1000, "noise_ns": 1, "samples": 10, "throughput": 0,
             "throughput_unit": "flop/s", "verification": "passed",
             "provenance": {"ktune_version": "0", "ktune_commit": "x", "host": "h",
                            "created_at": "2026-11-26T00:00:00Z", "strategy": "cublaslt/hybrid"}}
    old = dict(entry, op="gemm", shape=[N, M, K])  # before every form was searched: no batch
    spec = dict(entry, op="copy", config={"BLOCK": 128})  # a kernel's winner, not a library's
    for i, e in enumerate((entry, old, spec)):
        path = f"{db}.{i}.json"
        with open(path, "w") as f:
            json.dump(e, f)
        subprocess.run([ktune_cli, "--db", db, "cache", "put", path], check=True,
                       capture_output=True)
    table = kt.load(db, **H100)
    assert table == {("gemm_tn", "bf16", N, M, K, 1): {"library": "cublaslt", "algo_id": 66}}


class FakePlan:
    made = []
    runs = []

    def __init__(self, problem_json, config_json):
        FakePlan.made.append((json.loads(problem_json), json.loads(config_json)))

    def run(self, *args):
        FakePlan.runs.append(args)


def test_a_call_with_a_winner_is_routed_and_every_other_call_goes_to_pytorch(monkeypatch):
    monkeypatch.setattr(kt._ktune, "GemmPlan", FakePlan)
    table = {("gemm_tn", "bf16", N, M, K, 1): {"library": "cublaslt", "algo_id": 66},
             ("gemm_tn_bias", "bf16", N, M, K, 1): {"library": "cublaslt", "algo_id": 31}}
    monkeypatch.setattr(kt, "load", lambda db=None, **env: table)
    fake_torch.calls.clear()
    assert kt.enable() == 2
    try:
        # Unbatched winners without an activation: mm and addmm only; bmm, baddbmm and
        # _addmm_activation keep PyTorch's kernels (and cost nothing).
        assert sorted(fake_torch.Library.registered) == [("addmm", "CUDA"), ("mm", "CUDA")]
        x, w = T((M, K)), T((N, K))
        kt._mm(x, w.t())  # F.linear without a bias: routed
        kt._mm(x, w.t())  # again: the same plan
        kt._addmm(T((N,)), x, w.t())  # with a bias vector: the bias epilogue's winner
        kt._mm(x, T((K, N)))  # NN: no winner, PyTorch's own kernel
        kt._mm(T((M, K), ptr=(1 << 20) + 2), w.t())  # misaligned: PyTorch's own
        # beta != 1: a plain GEMM reading C (as PyTorch's addmm does): gemm_tn's winner, C
        # copied to the output and read in place.
        kt._addmm(T((N,)), x, w.t(), beta=2)
        kt._addmm(T((N,), torch.float16), x, w.t())  # a bias of another type: PyTorch's own
        s = kt.stats()
        assert s["routed"] == 4 and s["passed"] == 3
        assert s["routed_by_key"] == {f"gemm_tn bf16 m={N} n={M} k={K}": 3,
                                      f"gemm_tn_bias bf16 m={N} n={M} k={K}": 1}
        assert s["passed_by_op"] == {"mm": 2, "addmm": 1}
        assert [c[0] for c in fake_torch.calls] == ["mm", "mm", "addmm"]
        *_, alpha, beta = FakePlan.runs[-1]
        c, d = FakePlan.runs[-1][2:4]
        assert (alpha, beta) == (1.0, 2.0) and c == d != 0
        assert len(FakePlan.made) == 2  # one plan per problem, kept
        problem, config = FakePlan.made[0]
        assert (problem["layout"], problem["m"], problem["n"], problem["k"]) == ("TN", N, M, K)
        assert config["algo_id"] == 66
        # cuBLASLt's A is torch's second operand; the output is fresh, C not read.
        a, b, c, d = FakePlan.runs[0][:4]
        assert (a, b, c) == (w.data_ptr(), x.data_ptr(), 0) and d != 0
    finally:
        kt.disable()
    assert fake_torch.Library.registered == []
    assert not kt.enabled()


def test_a_winner_that_is_pytorchs_own_algorithm_is_kept_and_costs_nothing(monkeypatch):
    monkeypatch.setattr(kt._ktune, "GemmPlan", FakePlan)
    kept = {"library": "cublaslt", "algo_id": 66, "heuristic_rank": 1}
    table = {("gemm_tn", "bf16", N, M, K, 1): kept,
             ("gemm_tn", "bf16", N, M, K, 4): {"library": "cublaslt", "algo_id": 31,
                                               "heuristic_rank": 0}}
    monkeypatch.setattr(kt, "load", lambda db=None, **env: table)
    FakePlan.made.clear()
    assert kt.enable() == 2
    try:
        # Only the batched winner is routed: mm and addmm keep PyTorch's kernels untouched.
        assert sorted(fake_torch.Library.registered) == [("baddbmm", "CUDA"), ("bmm", "CUDA")]
    finally:
        kt.disable()
    # A census overrides every GEMM op and counts the kept problem's calls without routing them.
    assert kt.enable(census=True) == 2
    try:
        assert len(fake_torch.Library.registered) == 5
        x, w = T((M, K)), T((N, K))
        kt._mm(x, w.t())
        kt._mm(x, w.t())
        kt._mm(x, T((K, N)))  # NN: no winner
        s = kt.stats()
        assert (s["routed"], s["kept"], s["passed"]) == (0, 2, 1)
        assert s["kept_by_key"] == {f"gemm_tn bf16 m={N} n={M} k={K}": 2}
        assert s["passed_by_op"] == {"mm": 1}
        assert FakePlan.made == []  # no plan for a kept problem
    finally:
        kt.disable()


def test_only_the_kernels_some_winner_can_serve_are_overridden():
    def key(op, batch=1):
        return (op, "bf16", 8, 8, 8, batch)

    assert kt.overridden_ops({key("gemm_tn", 4): {}}) == ["baddbmm", "bmm"]
    assert kt.overridden_ops({key("gemm_nn_gelu_bias"): {}}) == ["_addmm_activation"]
    assert kt.overridden_ops({key("gemm_tn_bias"): {}}) == ["addmm"]
    assert kt.overridden_ops({key("gemm_nt"): {}, key("gemm_nn", 2): {}}) == [
        "addmm", "baddbmm", "bmm", "mm"]


def test_nothing_is_overridden_when_the_cache_has_no_winner(monkeypatch):
    monkeypatch.setattr(kt, "load", lambda db=None, **env: {})
    assert kt.enable() == 0
    assert fake_torch.Library.registered == [] and not kt.enabled()
    kt.disable()


def test_prove_without_a_store_or_winners_is_one_sentence(monkeypatch, tmp_path):
    import pytest

    from ktune import prove

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    workload = tmp_path / "w.py"
    workload.write_text("def make_step():\n    return lambda: None\n")

    def no_store(db=None, **env):
        raise kt._ktune.Error(f"there is no ktune store at {db} yet; check --db.")

    monkeypatch.setattr(kt, "load", no_store)
    with pytest.raises(SystemExit) as e:
        prove.main([str(workload), "--db", str(tmp_path / "none.db")])
    assert str(e.value).startswith("ktune.prove: there is no ktune store at ")
    monkeypatch.setattr(kt, "load", lambda db=None, **env: {})
    with pytest.raises(SystemExit) as e:
        prove.main([str(workload)])
    assert "holds no tuned cuBLASLt GEMM" in str(e.value)

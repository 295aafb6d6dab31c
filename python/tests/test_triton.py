"""ktune.triton.autotune without Triton or a GPU: keying, and the cache round trip between two
processes through one SQLite store."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import ktune.triton as kt
from fake_triton import CONFIGS, ENV, Tensor, make

HERE = Path(__file__).resolve().parent


def key_of(tuned, M, N=4096, K=4096, dtype="torch.float16"):
    named = dict(zip(tuned.arg_names, [Tensor(dtype), Tensor(dtype), Tensor(dtype), M, N, K]))
    return tuned.cache_key(named)


def test_key_holds_source_hash_dtypes_bucket_and_environment(db):
    tuned, _, _ = make()
    k = key_of(tuned, 3000)
    assert k["op"].startswith("triton/matmul@") and len(k["op"].split("@")[1]) == 16
    assert k["dtype"] == "float16,float16,float16"
    assert k["shape"] == [3000, 4096, 4096]
    assert k["bucket"] == "2049-4096x2049-4096x2049-4096"  # one pow2 rule for every key
    assert (k["arch"], k["toolkit"], k["driver_major"]) == ("sm_90", ENV["toolkit"], 580)
    # Same pow2 bucket, same key; another bucket or dtype, another key.
    assert key_of(tuned, 4000)["bucket"] == k["bucket"]
    assert key_of(tuned, 5000)["bucket"] != k["bucket"]
    assert key_of(tuned, 3000, dtype="torch.bfloat16")["dtype"] != k["dtype"]
    # Exact buckets separate every size; an edited kernel is another op.
    exact, _, _ = make(bucket="exact")
    assert key_of(exact, 3000)["bucket"] != key_of(exact, 4000)["bucket"]
    edited, _, _ = make(src="def matmul(a, b, c, M, N, K, BLOCK): return 1")
    assert key_of(edited, 3000)["op"] != k["op"]


def test_bad_arguments_are_named(db):
    kernel = make()[1]
    with pytest.raises(ValueError, match="'Q'"):
        kt.autotune(configs=CONFIGS, key=["Q"])(kernel)
    with pytest.raises(ValueError, match="bucket="):
        kt.autotune(configs=CONFIGS, key=["M"], bucket="cubic")(kernel)
    with pytest.raises(TypeError, match="nonsense"):
        kt.autotune(configs=CONFIGS, key=["M"], nonsense=1)


def test_first_launch_benchmarks_then_memo(db):
    tuned, kernel, bench = make()
    tuned[(1,)](Tensor(), Tensor(), Tensor(), 3000, 4096, 4096)
    assert tuned.last_source == "benchmark" and bench.calls == len(CONFIGS)
    assert kernel.launches[-1] == {"BLOCK": 128, "num_warps": 8, "num_stages": 3}
    tuned.run(Tensor(), Tensor(), Tensor(), 3000, 4096, 4096, grid=(1,))
    assert tuned.last_source == "memo" and bench.calls == len(CONFIGS)


def test_failing_configs_are_skipped(db):
    tuned, kernel, bench = make()

    def flaky(fn, quantiles):
        fn()
        if kernel.launches[-1]["BLOCK"] == 128:
            raise RuntimeError("out of resources")
        return bench(lambda: None, quantiles)

    tuned._do_bench = flaky
    tuned[(1,)](Tensor(), Tensor(), Tensor(), 64, 64, 64)
    assert tuned.best_config.kwargs["BLOCK"] in (64, 256)


def run_process(db, M):
    out = subprocess.run([sys.executable, str(HERE / "fake_triton.py"), db, str(M)],
                         check=True, capture_output=True, text=True, cwd=HERE).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_second_process_reuses_the_winner(db, ktune_cli):
    first = run_process(db, 3000)
    assert first["source"] == "benchmark" and first["bench_calls"] == len(CONFIGS)
    second = run_process(db, 3500)  # another M in the same bucket
    assert second["source"] == "cache" and second["bench_calls"] == 0
    assert second["winner"] == first["winner"] == second["launched"]
    third = run_process(db, 9000)  # another bucket: tuned anew
    assert third["source"] == "benchmark"
    # The entries are ordinary cache entries: the CLI lists them.
    listed = json.loads(subprocess.run([ktune_cli, "--db", db, "cache", "ls", "--json"],
                                       check=True, capture_output=True, text=True).stdout)
    assert {e["bucket"] for e in listed["entries"]} == {"2049-4096x2049-4096x2049-4096",
                                                               "8193-16384x2049-4096x2049-4096"}


def test_cached_config_outside_the_list_is_tuned_again(db):
    tuned, _, bench = make()
    tuned[(1,)](Tensor(), Tensor(), Tensor(), 100, 100, 100)
    other, _, other_bench = make()
    other.configs = [c for c in CONFIGS if c.kwargs["BLOCK"] != 128]
    other[(1,)](Tensor(), Tensor(), Tensor(), 100, 100, 100)
    assert other.last_source == "benchmark" and other_bench.calls == len(other.configs)

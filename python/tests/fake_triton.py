"""Stand-ins for Triton's kernel and config objects and for do_bench, so the decorator's keying and
its cache round trip run on a machine with no GPU and no Triton."""

import json

import ktune.triton as kt

ENV = {"arch": "sm_90", "device_name": "NVIDIA H100 80GB HBM3",
       "toolkit": "13.0+triton-3.6.0", "driver_major": 580}


class Config:
    def __init__(self, kwargs, num_warps=4, num_stages=3):
        self.kwargs, self.num_warps, self.num_stages = kwargs, num_warps, num_stages

    def all_kwargs(self):
        return {**self.kwargs, "num_warps": self.num_warps, "num_stages": self.num_stages}


class Tensor:
    def __init__(self, dtype="torch.float16"):
        self.dtype = dtype


class Kernel:
    """A JITFunction as the decorator sees it: source text, argument names, run()."""

    def __init__(self, src="def matmul(a, b, c, M, N, K, BLOCK): pass"):
        self.src = src
        self.__name__ = "matmul"
        self.arg_names = ["a", "b", "c", "M", "N", "K", "BLOCK"]
        self.launches = []

    def run(self, *args, grid=None, warmup=False, **meta):
        self.launches.append(meta)


CONFIGS = [Config({"BLOCK": b}, num_warps=w) for b in (32, 64, 128, 256) for w in (4, 8)]


class Bench:
    """Returns [median, p20, p80] in ms; BLOCK=128 with 8 warps is the fastest."""

    def __init__(self, kernel):
        self.kernel, self.calls = kernel, 0

    def __call__(self, fn, quantiles):
        self.calls += 1
        fn()
        meta = self.kernel.launches[-1]
        ms = 1.0 + abs(meta["BLOCK"] - 128) / 64 + (0 if meta["num_warps"] == 8 else 0.25)
        return [ms, ms * 0.99, ms * 1.01]


def make(db=None, bucket="pow2", src=None):
    kt._env_cache = dict(ENV)  # what a GPU would say
    kernel = Kernel() if src is None else Kernel(src)
    bench = Bench(kernel)
    tuned = kt.autotune(configs=CONFIGS, key=["M", "N", "K"], do_bench=bench, db=db,
                        bucket=bucket)(kernel)
    return tuned, kernel, bench


if __name__ == "__main__":  # one "process" of the round-trip test: tune (or not) and report
    import sys

    tuned, kernel, bench = make(db=sys.argv[1])
    M = int(sys.argv[2])
    tuned[(1,)](Tensor(), Tensor(), Tensor(), M, 4096, 4096)
    print(json.dumps({"source": tuned.last_source, "bench_calls": bench.calls,
                      "winner": kt._config_kwargs(tuned.best_config),
                      "launched": kernel.launches[-1]}))

#!/usr/bin/env python3
"""One Kernel Tuner 1.5 run on a T1 spec, for benchmarks/search/kt_compare.sh.

  kt_run.py SPEC STRATEGY SEED BUDGET CACHE_FILE

Kernel Tuner reads the T1 file itself (tune_kernel_T1), on the CUDA driver API backend (NVCUDA:
NVRTC and cuda-bindings, no pycuda build). STRATEGY is a Kernel Tuner strategy name, given
max_fevals BUDGET; brute_force (what tune_kernel runs when given no strategy: its default) takes
no budget, so kt_compare.sh bounds it by wall clock. Each measured configuration goes to
CACHE_FILE as Kernel Tuner writes it, with its timestamp; kt_compare.sh scores the run from that
file, so a run stopped by the clock still counts what it measured."""
import random
import sys
from pathlib import Path

import kernel_tuner.interface as kti
import numpy


def main():
    spec, strategy, seed, budget, cache = sys.argv[1:6]
    random.seed(int(seed))  # Kernel Tuner's strategies draw from these two
    numpy.random.seed(int(seed))
    real_tune_kernel = kti.tune_kernel

    def on_driver_api(*args, **kwargs):
        if str(kwargs.get("lang", "")).upper() == "CUDA":
            kwargs["lang"] = "NVCUDA"
        return real_tune_kernel(*args, **kwargs)

    kti.tune_kernel = on_driver_api
    options = {} if strategy == "brute_force" else {"max_fevals": int(budget)}
    kti.tune_kernel_T1(
        Path(spec),
        cache_filepath=Path(cache),
        device=0,
        output_T4=False,
        strategy=strategy,
        strategy_options=options,
    )


if __name__ == "__main__":
    main()

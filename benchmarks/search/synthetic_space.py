#!/usr/bin/env python3
"""A synthetic recorded space (T4) of 345,600 configurations, larger than the model strategies scan
whole, so that `ktune replay` shows how they do through a sample (logs/2026-11-27-forest-fit.md).

    benchmarks/search/synthetic_space.py SEED OUT.T4.json [--narrow]

Time follows products of parameter pairs (threads per block, a tile's area) with a second basin
(--narrow: one that only a few parameters' values open) and 1 % noise. Derived from no dataset.
"""
import itertools
import json
import math
import random
import sys


def main():
    seed, out = int(sys.argv[1]), sys.argv[2]
    narrow = "--narrow" in sys.argv[3:]
    rng = random.Random(seed)
    values = {"bx": [8, 16, 32, 64, 128, 256], "by": [1, 2, 4, 8, 16, 32], "tx": [1, 2, 3, 4, 6, 8],
              "ty": [1, 2, 3, 4, 5], "u": [1, 2, 4, 8, 16], "vec": [1, 2, 4, 8], "s": [0, 1, 2, 3],
              "p": [0, 1, 2, 3]}
    names = list(values)
    threads_best, tile_best = rng.uniform(6, 8), rng.uniform(2, 4)
    s_best, p_best = rng.randrange(4), rng.randrange(4)
    results = []
    for combo in itertools.product(*values.values()):
        c = dict(zip(names, combo))
        threads, tile = math.log2(c["bx"] * c["by"]), math.log2(c["tx"] * c["ty"])
        t = (0.08 * (threads - threads_best) ** 2 + 0.1 * (tile - tile_best) ** 2
             + 0.05 * abs(math.log2(c["u"]) - 2))
        t += (0.03 * abs(math.log2(c["vec"]) - tile / 2) + 0.04 * (c["s"] != s_best)
              + 0.02 * (c["p"] != p_best))
        if narrow:
            t -= 0.25 * (c["s"] == 3 and c["p"] == 2 and c["u"] == 16 and threads > 10)
        else:
            t -= 0.12 * (c["s"] == 3 and threads > 9)
        t += rng.gauss(0, 0.01)
        results.append({"configuration": c, "status": "ok",
                        "measurements": [{"name": "time", "unit": "ms", "value": math.exp(t)}]})
    with open(out, "w") as f:
        json.dump({"schema_version": "1.0.0",
                   "metadata": {"name": "synthetic", "timeunit": "milliseconds"},
                   "results": results}, f)


if __name__ == "__main__":
    main()

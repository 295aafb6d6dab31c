#!/usr/bin/env python3
"""Harder variants of recorded spaces, for judging search strategies on landscapes nobody fitted
them to (issue 45). Each variant is made from a recorded space by a fixed rule; the times it
writes are not measurements, and tables that use them say so.

  hard_spaces.py OUT_DIR SPACE...   (SPACE: a T4 file or a Kernel Tuner cache, .json or .json.gz)

writes OUT_DIR/<variant>/<space>.T4.json for each variant, the layout of
benchmarks/replay/study.sh's EXTRA_SPACES (each variant a family of its own):

- needle: every time t becomes best * (t / best)^3. The ranking stays; every gap to the best
  triples in log, so a configuration 5 % off becomes 16 % off and few are near the optimum.
- invalid: most configurations fail, as under a resource limit: two parameters drawn per space
  (seeded by the space's name), and the half of the valid configurations highest in their sum of
  value positions fail ("constraints"), and a further fifth of the rest at random ("runtime").
- plateau: times rounded down to steps of 4 % from the best: wide flat regions, no gradient
  inside them, the top step shared by every configuration within 4 % of the best.
"""
import gzip
import hashlib
import json
import math
import pathlib
import random
import sys


def read_json(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def t4_time_ms(r, scale):
    for m in r.get("measurements") or []:
        v = m.get("value") if isinstance(m, dict) and m.get("name") == "time" else None
        if isinstance(v, (int, float)):
            return v * scale
    runtimes = (r.get("times") or {}).get("runtimes") or []
    if runtimes and all(isinstance(x, (int, float)) for x in runtimes):
        return sum(runtimes) / len(runtimes) * scale
    return None


def records(path):
    """(configuration dict, time in ms or None for a failure) for each record of the space."""
    j = read_json(path)
    if "cache" in j:  # a Kernel Tuner cache
        keys = j["tune_params_keys"]
        for r in j["cache"].values():
            t = r.get("time")
            ok = isinstance(t, (int, float)) and math.isfinite(t) and t > 0
            yield {k: r[k] for k in keys}, (t if ok else None)
        return
    unit = (j.get("metadata") or {}).get("timeunit", "milliseconds")
    scale = {"seconds": 1e3, "milliseconds": 1.0, "miliseconds": 1.0, "microseconds": 1e-3}[unit]
    for r in j["results"]:
        ok = r.get("invalidity", "correct") == "correct" and r.get("correctness", 1) != 0
        ok = ok and r.get("status", "ok") in ("ok", "slower")
        t = t4_time_ms(r, scale) if ok else None
        yield r["configuration"], (t if t and t > 0 else None)


def needle(space, best, rng):
    return [(c, None if t is None else best * (t / best) ** 3, "correct") for c, t, _ in space]


def plateau(space, best, rng):
    step = math.log(1.04)
    out = []
    for c, t, inv in space:
        if t is not None:
            t = best * math.exp(math.floor(math.log(t / best) / step + 1e-9) * step)
        out.append((c, t, inv))
    return out


def invalid(space, best, rng):
    names = sorted(space[0][0])
    values = {n: sorted({c[n] for c, _, _ in space}, key=repr) for n in names}
    varied = [n for n in names if len(values[n]) > 1]
    a, b = rng.sample(varied, 2)
    pos = {n: {v: k / (len(values[n]) - 1) for k, v in enumerate(values[n])} for n in (a, b)}
    load = sorted(pos[a][c[a]] + pos[b][c[b]] for c, t, _ in space if t is not None)
    limit = load[len(load) // 2]
    out = []
    for c, t, inv in space:
        if t is not None and pos[a][c[a]] + pos[b][c[b]] > limit:
            t, inv = None, "constraints"
        elif t is not None and rng.random() < 0.2:
            t, inv = None, "runtime"
        out.append((c, t, inv))
    return out


VARIANTS = {"needle": needle, "invalid": invalid, "plateau": plateau}


def main():
    out = pathlib.Path(sys.argv[1])
    for path in sys.argv[2:]:
        name = pathlib.Path(path).name.split(".")[0]
        if name.endswith("_T4"):
            name = name[: -len("_T4")]
        name = f"{pathlib.Path(path).parent.name}-{name}"
        space = [(c, t, "correct" if t is not None else "runtime") for c, t in records(path)]
        best = min(t for _, t, _ in space if t is not None)
        for variant, make in VARIANTS.items():
            seed = int.from_bytes(hashlib.sha256(f"{variant}:{name}".encode()).digest()[:8], "big")
            results = []
            for c, t, inv in make(space, best, random.Random(seed)):
                r = {"configuration": c, "invalidity": "correct" if t is not None else inv}
                if t is not None:
                    r["measurements"] = [{"name": "time", "unit": "ms", "value": t}]
                results.append(r)
            doc = {
                "schema_version": "1.0.0",
                "metadata": {"timeunit": "milliseconds", "variant": variant, "from": name},
                "results": results,
            }
            (out / variant).mkdir(parents=True, exist_ok=True)
            (out / variant / f"{name}.T4.json").write_text(json.dumps(doc))
            failed = sum(1 for r in results if r["invalidity"] != "correct")
            print(f"{variant}/{name}: {len(results)} configurations, {failed} failed")


if __name__ == "__main__":
    main()

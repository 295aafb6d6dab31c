#!/usr/bin/env python3
"""The gate's CPU acceptance test fixture (tests/fixtures/gate/h100-noise.json) from a gate store.

    scripts/gate-noise-fixture.py GATE_DB OUT.json "NAME, DRIVER, SM_CLOCK, SM_CLOCK_MAX, MEM_CLOCK"

Takes the runs of the unchanged code (code_commit 'base': the latest baseline and every unchanged
check after it, in the baseline's environment: not the environment case's runs, nor those of an
earlier card that a split run recorded before), one run per process, and keeps at most 1,000
samples of each, drawn at random with a fixed seed
(the test resamples a run's residuals 100 at a time; the whole of a cold run can be 90,000).
The last argument is nvidia-smi's line for the GPU (gpu-gate.sh passes it).
"""
import json
import random
import sqlite3
import sys

MAX_SAMPLES = 1000

db, path, smi = sys.argv[1], sys.argv[2], sys.argv[3].split(", ")
con = sqlite3.connect(db)
since, toolkit, build = con.execute(
    "SELECT MIN(recorded_at), toolkit, ktune_build FROM gate_runs WHERE kind = 'baseline' AND "
    "session_id = (SELECT session_id FROM gate_runs WHERE kind = 'baseline' "
    "ORDER BY recorded_at DESC LIMIT 1)").fetchone()
rows = con.execute(
    "SELECT benchmark, samples, sm_clock_mhz FROM gate_runs WHERE code_commit = 'base' "
    "AND recorded_at >= ? AND toolkit = ? AND ktune_build = ? "
    "ORDER BY benchmark, recorded_at, run_id", (since, toolkit, build)).fetchall()
rng = random.Random(1)
runs = {}
for name, samples, clock in rows:
    s = json.loads(samples)
    if len(s) > MAX_SAMPLES:
        s = rng.sample(s, MAX_SAMPLES)
    runs.setdefault(name, []).append({"samples_ns": [round(x, 1) for x in s],
                                      "sm_clock_mhz_median": clock})
doc = {"schema_version": 1,
       "note": "Recorded by scripts/gpu-gate.sh: the baseline and unchanged-check runs of its "
               f"suite, each run one process's samples taken round robin over the suite, at most "
               f"{MAX_SAMPLES} of each run kept (scripts/gate-noise-fixture.py).",
       "device": smi[0],
       "clocks": dict(zip(["driver", "sm_clock", "sm_clock_max", "mem_clock"], smi[1:])),
       "benchmarks": [{"name": n, "runs": r} for n, r in sorted(runs.items()) if len(r) >= 2]}
with open(path, "w") as f:
    json.dump(doc, f, separators=(",", ":"))
print(f"noise fixture: {len(doc['benchmarks'])} benchmarks, "
      f"{sum(len(b['runs']) for b in doc['benchmarks'])} runs -> {path}")

#!/usr/bin/env python3
"""benchmarks/analysis/ncu_compare.py's reading of the tracer's exit line and its cost line: the
numbers scripts/gpu-counters.sh puts beside ncu's. The exit line is built here the way
CounterProfiler::summary words it, so a change of its wording fails this test."""
import pathlib
import re
import sys
import tempfile

root = pathlib.Path(sys.argv[1]).resolve()
sys.path.insert(0, str(root / "benchmarks" / "analysis"))
import ncu_compare  # noqa: E402

source = (root / "src" / "trace" / "counter_profiler.cpp").read_text()
wording = re.search(r'"hardware counters: .*?replay (?:"\s*")?passes"', source, re.S)
assert wording, "CounterProfiler::summary's wording not found in counter_profiler.cpp"
template = "".join(re.findall(r'"([^"]*)"', wording.group(0)))
values = iter(["21", "14", "5.300", "0.412", "0.150", "0.140", "5.100", "0.010", "0.400", "34",
               "15"])
line = "ktune tracer: " + re.sub(r"\{[^}]*\}", lambda _: next(values), template)

s = ncu_compare.tracer_summary("noise\n" + line + "\nmore")
assert s == {"launches": 21, "collect_s": 5.3, "setup_s": 0.412, "first_s": 0.4, "metrics": 34,
             "passes": 15}, s
assert ncu_compare.tracer_summary("no counters here") is None
assert ncu_compare.tracer_summary(line.replace("15 replay", "? replay"))["passes"] is None

with tempfile.TemporaryDirectory() as d:
    out = pathlib.Path(d)
    (out / "plain.wall").write_text("10.0\n")
    (out / "ktune-profile.wall").write_text("16.3\n")
    (out / "ncu-none.wall").write_text("40.0\n")
    (out / "ktune-profile.log").write_text(line + "\n")
    pairs = ncu_compare.cost(str(out), "none", 60)
    assert pairs["ktune_launches"] == 21 and pairs["passes"] == 15, pairs
    assert pairs["ktune_s_per_launch"] == f"{5.3 / 21:.4f}", pairs
    assert pairs["ktune_s_per_later_launch"] == f"{(5.3 - 0.4) / 20:.4f}", pairs
    assert pairs["ktune_wall_s_per_launch"] == f"{6.3 / 21:.4f}", pairs
    assert pairs["ncu_wall_s_per_launch"] == f"{30.0 / 60:.4f}", pairs
    # Without ncu's run, no ncu figure rather than a made-up one.
    assert "ncu_wall_s_per_launch" not in ncu_compare.cost(str(out), "all", 60)
print("ok")

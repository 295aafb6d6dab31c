#!/usr/bin/env python3
"""benchmarks/search/family_table.py on synthetic replay rows: the default is called ahead of,
tied with or behind the best other strategy only as the seeds' differences show, and the window
comes from the rows."""
import json
import pathlib
import random
import subprocess
import sys
import tempfile

SCRIPT = pathlib.Path(sys.argv[1]).resolve() / "benchmarks" / "search" / "family_table.py"
SEEDS = 30
rng = random.Random(7)


def row(family, space, strategy, fractions):
    return {"schema_version": 1, "family": family, "space": space, "strategy": strategy,
            "default": strategy == "mine", "window": 16, "budget": 100, "seeds": SEEDS,
            "mean_fraction_of_optimum": sum(fractions) / SEEDS, "worst_seed": min(fractions),
            "fractions": fractions}


# Per family, how much the rival trails the default on every seed (the noise is shared by the
# pair of a seed, as a shared start makes it, plus a little of each's own).
offsets = {"ahead": 0.05, "behind": -0.05, "tied": 0.0}
rows = []
for family, offset in offsets.items():
    for space in ("s1", "s2"):
        base = [0.9 + rng.uniform(-0.05, 0.05) for _ in range(SEEDS)]
        mine = [b + rng.uniform(-0.005, 0.005) for b in base]
        rival = [b - offset + rng.uniform(-0.005, 0.005) for b in base]
        worse = [b - 0.2 for b in base]  # never the best other
        rows += [row(family, space, "mine", mine), row(family, space, "rival", rival),
                 row(family, space, "worse", worse)]

failures = []
with tempfile.TemporaryDirectory() as tmp:
    path = pathlib.Path(tmp) / "study.jsonl"  # no "w<N>" in the name: the rows say 16
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = subprocess.run([sys.executable, str(SCRIPT), str(path)], capture_output=True,
                         text=True, check=True).stdout
if "### Window 16 (30 seeds)" not in out:
    failures.append("the window was not read from the rows")
verdicts = {}
for line in out.splitlines():
    cells = [c.strip() for c in line.strip("|").split("|")]
    if len(cells) == 6 and cells[0] in offsets:
        verdicts[cells[0]] = (cells[3].split()[0], cells[5])
want = {"ahead": "ahead", "behind": "behind", "tied": "tied within noise"}
for family, verdict in want.items():
    got = verdicts.get(family)
    if got != ("rival", verdict):
        failures.append(f"{family}: expected rival, {verdict}; got {got}")
if failures:
    print("\n".join(failures) + "\n\n" + out)
    sys.exit(1)
print("family_table: verdicts ahead / tied / behind as the seeds show")

#!/usr/bin/env python3
"""Turns the replay-<family>-<space>.json files of run.sh into markdown tables: per space, then
per family the mean over its spaces and the worst space, every strategy beside random search."""
import json
import pathlib
import sys
from collections import defaultdict

out = pathlib.Path(sys.argv[1])
# (family, space) -> {strategy: {budget: fraction}}
cells = {}
seeds = None
for f in sorted(out.glob("replay-*.json")):
    j = json.loads(f.read_text())
    assert j["schema_version"] == 1
    family, space = f.stem.removeprefix("replay-").split("-", 1)
    comps = j.get("comparisons", [j])
    row = defaultdict(dict)
    for c in comps:
        seeds = c["seeds"]
        for r in c["results"]:
            row[c["strategy"]][r["budget"]] = r["mean_fraction_of_optimum"]
            row["random"][r["budget"]] = r["random_mean_fraction_of_optimum"]
    cells[(family, space)] = row

strategies = sorted({s for row in cells.values() for s in row if s != "random"}) + ["random"]
budgets = sorted({b for row in cells.values() for s in row.values() for b in s})
families = sorted({f for f, _ in cells})
print(f"seeds per cell: {seeds}; mean fraction of the optimum (best time in space / best found)\n")
print("| family | space | budget | " + " | ".join(strategies) + " |")
print("|---" * (3 + len(strategies)) + "|")
for (family, space), row in sorted(cells.items()):
    for b in budgets:
        vals = [row.get(s, {}).get(b) for s in strategies]
        print(f"| {family} | {space} | {b} | " +
              " | ".join("-" if v is None else f"{v:.4f}" for v in vals) + " |")
print("\nPer family: mean over its spaces / worst space\n")
print("| family | budget | " + " | ".join(strategies) + " |")
print("|---" * (2 + len(strategies)) + "|")
for family in families:
    rows = [row for (f, _), row in cells.items() if f == family]
    for b in budgets:
        out_cells = []
        for s in strategies:
            vals = [r[s][b] for r in rows if s in r and b in r[s]]
            out_cells.append(f"{sum(vals) / len(vals):.4f} / {min(vals):.4f}" if vals else "-")
        print(f"| **{family}** | {b} | " + " | ".join(out_cells) + " |")

#!/usr/bin/env python3
"""Turns the replay-<gpu>.json files of run.sh into one markdown table (strategy vs random)."""
import json
import pathlib
import sys

out = pathlib.Path(sys.argv[1])
runs = {}
for f in sorted(out.glob("replay-*.json")):
    j = json.loads(f.read_text())
    assert j["schema_version"] == 1
    runs[f.stem.removeprefix("replay-")] = j["comparisons"]

gpus = list(runs)
strategies = [c["strategy"] for c in runs[gpus[0]]]
budgets = [r["budget"] for r in runs[gpus[0]][0]["results"]]
print(f"seeds per cell: {runs[gpus[0]][0]['seeds']}; mean fraction of the optimum "
      "(best time in space / best found)\n")
print("| space | budget | " + " | ".join(strategies) + " | random |")
print("|---" * (3 + len(strategies)) + "|")
avg = {}
for gpu in gpus + ["average"]:
    for bi, b in enumerate(budgets):
        if gpu == "average":
            cells = [sum(avg[(g, s, b)] for g in gpus) / len(gpus) for s in strategies + ["random"]]
        else:
            comp = runs[gpu]
            cells = [c["results"][bi]["mean_fraction_of_optimum"] for c in comp]
            cells.append(comp[0]["results"][bi]["random_mean_fraction_of_optimum"])
            for s, v in zip(strategies + ["random"], cells):
                avg[(gpu, s, b)] = v
        name = f"**{gpu}**" if gpu == "average" else gpu
        print(f"| {name} | {b} | " + " | ".join(f"{v:.4f}" for v in cells) + " |")

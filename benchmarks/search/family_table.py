#!/usr/bin/env python3
"""Family means from the replay study's JSON lines (benchmarks/replay/study.cpp), and the
leave-one-family-out choice among the strategies present.
  family_table.py STUDY.jsonl [STUDY.jsonl ...]  (one file per window; the window is read from
  the file name's "w<N>" part, else 1)"""
import json
import re
import sys
from collections import defaultdict


def load(path):
    rows = [json.loads(l) for l in open(path) if l.startswith("{")]
    # family -> strategy -> budget -> [space means]
    t = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    seeds = set()
    for r in rows:
        t[r["family"]][r["strategy"]][r["budget"]].append(r["mean_fraction_of_optimum"])
        seeds.add(r["seeds"])
    return t, seeds


def mean(xs):
    return sum(xs) / len(xs)


def main():
    for path in sys.argv[1:]:
        m = re.search(r"w(\d+)", path.split("/")[-1])
        window = int(m.group(1)) if m else 1
        t, seeds = load(path)
        families = sorted(t)
        strategies = sorted({s for f in t.values() for s in f})
        budgets = sorted({b for f in t.values() for s in f.values() for b in s})
        print(f"\n### Window {window} ({', '.join(map(str, sorted(seeds)))} seeds), "
              "mean fraction of optimum per family\n")
        head = [f"{f} @{b}" for b in budgets for f in families]
        print("| strategy | " + " | ".join(head) + " |")
        print("|---" * (len(head) + 1) + "|")
        fam = {s: {(f, b): mean(t[f][s][b]) for f in families for b in budgets if t[f][s][b]}
               for s in strategies}
        for s in strategies:
            cells = []
            for b in budgets:
                for f in families:
                    v = fam[s].get((f, b))
                    best = max(fam[o].get((f, b), 0) for o in strategies)
                    cells.append("" if v is None else
                                 (f"**{v:.4f}**" if v >= best - 1e-9 else f"{v:.4f}"))
            print(f"| {s} | " + " | ".join(cells) + " |")
        print("\nLeave one family out (choose on the others' mean over budgets, judge on the "
              "held-out one):\n")
        for held in families:
            rest = [f for f in families if f != held]
            score = {s: mean([fam[s][(f, b)] for f in rest for b in budgets
                              if (f, b) in fam[s]]) for s in strategies
                     if all((f, b) in fam[s] for f in rest for b in budgets)}
            pick = max(score, key=score.get)
            held_scores = {s: mean([fam[s][(held, b)] for b in budgets]) for s in score}
            rank = sorted(held_scores, key=held_scores.get, reverse=True).index(pick) + 1
            print(f"- held out {held}: choose **{pick}** ({score[pick]:.4f} on "
                  f"{' + '.join(rest)}); on {held} it scores {held_scores[pick]:.4f}, "
                  f"rank {rank} of {len(held_scores)} (best there: "
                  f"{max(held_scores, key=held_scores.get)} {max(held_scores.values()):.4f})")


if __name__ == "__main__":
    main()

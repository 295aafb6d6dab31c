#!/usr/bin/env python3
"""Family means from the replay study's JSON lines (benchmarks/replay/study.cpp), the
leave-one-family-out choice among the strategies present, and ktune's default beside the best
other strategy on each family, paired by seed with a 95 % confidence interval.
  family_table.py STUDY.jsonl [STUDY.jsonl ...]  (one file per window; the window is read from
  the rows, or from the file name's "w<N>" part, else 1)"""
import json
import re
import sys
from collections import defaultdict

# Two-sided 95 % quantiles of Student's t by degrees of freedom; a df between two rows takes the
# lower row's (the wider interval).
T95 = [(1, 12.706), (2, 4.303), (3, 3.182), (4, 2.776), (5, 2.571), (6, 2.447), (7, 2.365),
       (8, 2.306), (9, 2.262), (10, 2.228), (15, 2.131), (20, 2.086), (30, 2.042), (40, 2.021),
       (60, 2.000), (120, 1.980)]


def t95(df):
    return [q for d, q in T95 if d <= df][-1]


def load(path):
    rows = [json.loads(line) for line in open(path) if line.startswith("{")]
    # family -> strategy -> budget -> [space means]; the same, per seed: [[space fractions]]
    t = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    per_seed = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    seeds, windows, default = set(), set(), None
    spaces = defaultdict(dict)  # (strategy, budget) -> {(family, space): mean}
    for r in rows:
        t[r["family"]][r["strategy"]][r["budget"]].append(r["mean_fraction_of_optimum"])
        spaces[(r["strategy"], r["budget"])][(r["family"], r["space"])] = \
            r["mean_fraction_of_optimum"]
        if "fractions" in r:
            per_seed[r["family"]][r["strategy"]][r["budget"]].append(r["fractions"])
        seeds.add(r["seeds"])
        if "window" in r:
            windows.add(r["window"])
        if r.get("default"):
            default = r["strategy"]
    return t, per_seed, seeds, windows, default, spaces


def mean(xs):
    return sum(xs) / len(xs)


def family_by_seed(spaces):
    """A family's value per seed: the mean over its spaces of that seed's fraction."""
    return [mean(col) for col in zip(*spaces)]


def interval(xs):
    """Mean and the half-width of its 95 % confidence interval."""
    n = len(xs)
    m = mean(xs)
    if n < 2:
        return m, float("inf")
    sd = (sum((x - m) ** 2 for x in xs) / (n - 1)) ** 0.5
    return m, t95(n - 1) * sd / n ** 0.5


def compare_default(default, families, strategies, budgets, fam, per_seed):
    """The default beside the best other strategy on each family and budget, seed by seed:
    model, hybrid and thompson start from the same space-filling design for the same seed, so
    their difference per seed is less noisy than the difference of two means (for the other
    strategies the pairing costs nothing)."""
    others = [s for s in strategies if s != default]
    print(f"\nThe default (`{default}`) beside the best other strategy, paired by seed "
          "(difference default - other, 95 % confidence interval):\n")
    print("| family | budget | default | best other | difference | verdict |")
    print("|---|---|---|---|---|---|")
    for f in families:
        for b in budgets:
            mine = per_seed[f][default][b]
            rivals = [o for o in others if (f, b) in fam[o] and per_seed[f][o][b]]
            if not mine or not rivals:
                continue
            rival = max(rivals, key=lambda o: fam[o][(f, b)])
            d = [x - y for x, y in zip(family_by_seed(mine), family_by_seed(per_seed[f][rival][b]))]
            m, half = interval(family_by_seed(mine))
            dm, dh = interval(d)
            verdict = ("ahead" if dm - dh > 0 else "behind" if dm + dh < 0 else
                       "tied within noise")
            print(f"| {f} | {b} | {m:.4f} ± {half:.4f} | {rival} {fam[rival][(f, b)]:.4f} | "
                  f"{dm:+.4f} ± {dh:.4f} | {verdict} |")


def worst_case(strategies, budgets, fam, spaces, default):
    """Each strategy's worst family (its mean over the family's spaces) and worst single space, at
    each budget, and whether the default meets issue 45's targets on its worst family."""
    print("\nWorst case: each strategy's worst family (mean over its spaces) and worst single "
          "space (GPU), at each budget:\n")
    head = [f"worst family @{b}" for b in budgets] + [f"worst space @{b}" for b in budgets]
    print("| strategy | " + " | ".join(head) + " |")
    print("|---" * (len(head) + 1) + "|")
    worst = {}
    for s in strategies:
        cells = []
        for b in budgets:
            f, v = min(((f, v) for (f, bb), v in fam[s].items() if bb == b), key=lambda x: x[1])
            worst[(s, b)] = (f, v)
            cells.append(f"{f} {v:.4f}")
        for b in budgets:
            (f, sp), v = min(spaces[(s, b)].items(), key=lambda x: x[1])
            cells.append(f"{f}/{sp} {v:.4f}")
        print(f"| {'**' + s + '**' if s == default else s} | " + " | ".join(cells) + " |")
    targets = {100: 0.95, 200: 0.98}
    if default in strategies:
        for b in budgets:
            if b in targets:
                f, v = worst[(default, b)]
                verdict = "met" if v >= targets[b] else "NOT met"
                print(f"\n- default `{default}`, worst family at {b}: {f} {v:.4f} "
                      f"(target >= {targets[b]}): {verdict}")


def main():
    for path in sys.argv[1:]:
        t, per_seed, seeds, windows, default, spaces = load(path)
        m = re.search(r"w(\d+)", path.split("/")[-1])
        window = (", ".join(map(str, sorted(windows))) if windows else
                  int(m.group(1)) if m else 1)
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
        worst_case(strategies, budgets, fam, spaces, default)
        if default in strategies:
            compare_default(default, families, strategies, budgets, fam, per_seed)


if __name__ == "__main__":
    main()

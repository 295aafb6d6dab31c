"""Helpers of ncu_compare.sh: the kernels a .ktrace profiled, the stall metric names, and the
comparison of ktune's verdicts and stall reasons with Nsight Compute's on the same launches, with
what each tool's counters cost per profiled launch.

  ncu_compare.py names TRACE            -> a regex of the mangled names ktune profiled
  ncu_compare.py stall-metrics          -> the 19 stall ratios, comma-separated
  ncu_compare.py compare TRACE REPORT_JSON NCU_RAW_CSV [OUT_DIR CACHE]
      the table and the agreement; with OUT_DIR (ncu_compare.sh's: plain.wall, ktune-profile.wall
      and .log, ncu-CACHE.wall) a last line `result key=value ...` with the agreement and the cost
      per profiled launch of both tools (scripts/gpu-counters.sh reads it)

A launch is matched by its mangled name and its invocation number among that name's launches
(launch order: ktune by correlation id, ncu by its ID), so both tools must run the same
deterministic program."""
import csv
import json
import re
import sqlite3
import sys

# Nsight Compute's warp-state reasons, as ktune collects them (src/trace/metrics.hpp).
REASONS = ["long_scoreboard", "short_scoreboard", "barrier", "mio_throttle", "math_pipe_throttle",
           "wait", "not_selected", "selected", "lg_throttle", "membar", "no_instruction",
           "dispatch_stall", "gmma", "branch_resolving", "drain", "sleeping", "tex_throttle",
           "imc_miss", "misc"]
STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
SM = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
MEMORY = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
DRAM = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
BOUND = 60.0  # Nsight Compute's speed-of-light reading, as ktune's kBoundPct


def profiled_launches(trace):
    """[(correlation id, mangled, display name, grid, block, invocation)] of the launches with
    counters, invocation counted from 1 among the launches of the same mangled name."""
    db = sqlite3.connect(trace)
    rows = db.execute(
        "SELECT k.correlation_id, n.value, d.value, grid_x, grid_y, grid_z, block_x, block_y, "
        "block_z FROM kernels k JOIN strings n ON n.id = k.name_id LEFT JOIN strings d ON "
        "d.id = k.demangled_id ORDER BY k.correlation_id").fetchall()
    profiled = {r[0] for r in db.execute("SELECT DISTINCT correlation_id FROM counters")}
    seen, out = {}, []
    for corr, name, shown, gx, gy, gz, bx, by, bz in rows:
        seen[name] = seen.get(name, 0) + 1
        if corr in profiled:
            out.append((corr, name, shown or name, (gx, gy, gz), (bx, by, bz), seen[name]))
    return out


def verdict_class(ktune_bottleneck):
    return {"memory-bound": "memory", "locality": "memory", "compute-bound": "compute",
            "issue-bound": "compute", "latency-bound": "latency",
            "launch-bound": "latency"}.get(ktune_bottleneck, "unknown")


def ncu_verdict(m):
    sm, mem = m.get(SM), max(m.get(MEMORY, 0), m.get(DRAM, 0))
    if sm is None:
        return "unknown"
    if max(sm, mem) < BOUND:
        return "latency"
    return "compute" if sm >= mem else "memory"


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def dims(text):
    return tuple(int(v) for v in re.findall(r"\d+", text))[:3]


def ncu_launches(path):
    """{mangled name: [metrics of each launch, in ncu's ID order]}."""
    lines = [line for line in open(path, errors="replace") if line.startswith('"')]
    table = list(csv.reader(lines))
    head, out = table[0], {}
    for row in table[2:]:  # row 1 holds the units
        d = dict(zip(head, row))
        metrics = {k: number(v) for k, v in d.items() if "__" in k}
        metrics = {k: v for k, v in metrics.items() if v is not None}
        metrics["grid"] = dims(d.get("Grid Size", ""))
        metrics["block"] = dims(d.get("Block Size", ""))
        metrics["id"] = int(number(d.get("ID", "0")) or 0)
        out.setdefault(d.get("Kernel Name", ""), []).append(metrics)
    for launches in out.values():
        launches.sort(key=lambda m: m["id"])
    return out


def ncu_stalls(m):
    values = [(r, m.get(STALL.format(r))) for r in REASONS]
    values = [(r, v) for r, v in values if v is not None and v >= 0]
    total = sum(v for _, v in values)
    if total <= 0:
        return []
    return sorted(((r, v / total) for r, v in values), key=lambda x: -x[1])


def top_reason(stalls):
    return next((r for r, _ in stalls if r != "selected"), None)


def short(name, n=48):
    name = re.sub(r"^void ", "", name)
    name = re.sub(r"\(.*$", "", name) if "(" in name and "<" not in name.split("(")[0] else name
    return name if len(name) <= n else name[: n - 3] + "..."


# The tracer's exit line (src/trace/counter_profiler.cpp, CounterProfiler::summary).
SUMMARY = re.compile(
    r"hardware counters: (?P<launches>\d+) launches of \d+ kernels profiled, (?P<collect>[\d.]+) s "
    r"collecting \((?P<setup>[\d.]+) s set-up;.*?the first launch (?P<first>[\d.]+) s\), "
    r"(?P<metrics>\d+) metrics each in (?P<passes>\d+|\?) replay passes")


def tracer_summary(text):
    """The last counter summary in a tracer's output: launches, collect_s, setup_s, first_s,
    metrics, passes (None when unknown); None when there is none."""
    found = list(SUMMARY.finditer(text))
    if not found:
        return None
    m = found[-1]
    return {"launches": int(m["launches"]), "collect_s": float(m["collect"]),
            "setup_s": float(m["setup"]), "first_s": float(m["first"]),
            "metrics": int(m["metrics"]),
            "passes": None if m["passes"] == "?" else int(m["passes"])}


def read_float(path):
    try:
        return float(open(path).read())
    except (OSError, ValueError):
        return None


def cost(out, cache, ncu_launches_profiled):
    """What the counters cost per profiled launch, as `key=value` pairs: ktune's collecting time
    from its exit line (all launches, and after the first, which also pays CUPTI's one-time start),
    both tools' wall time over the plain run."""
    plain = read_float(f"{out}/plain.wall")
    ours = read_float(f"{out}/ktune-profile.wall")
    theirs = read_float(f"{out}/ncu-{cache}.wall")
    try:
        summary = tracer_summary(open(f"{out}/ktune-profile.log", errors="replace").read())
    except OSError:
        summary = None
    pairs = {}
    if summary and summary["launches"]:
        n = summary["launches"]
        pairs["ktune_launches"] = n
        pairs["passes"] = summary["passes"] if summary["passes"] is not None else "?"
        pairs["ktune_s_per_launch"] = f"{summary['collect_s'] / n:.4f}"
        if n > 1:
            later = (summary["collect_s"] - summary["first_s"]) / (n - 1)
            pairs["ktune_s_per_later_launch"] = f"{later:.4f}"
        pairs["ktune_setup_s"] = f"{summary['setup_s']:.3f}"
        if plain is not None and ours is not None:
            pairs["ktune_wall_s_per_launch"] = f"{(ours - plain) / n:.4f}"
    if ncu_launches_profiled and plain is not None and theirs is not None:
        pairs["ncu_launches"] = ncu_launches_profiled
        pairs["ncu_wall_s_per_launch"] = f"{(theirs - plain) / ncu_launches_profiled:.4f}"
    return pairs


def compare(trace, report, raw, out=None, cache=None):
    derivations = json.load(open(report))["counters"]["kernels"]
    ours = {}
    for k in derivations:
        key = (k["name"], tuple(k["launch"]["grid"]), tuple(k["launch"]["block"]))
        ours.setdefault(key, k)
    theirs = ncu_launches(raw)
    rows, verdicts, stalls_same = [], [0, 0], [0, 0]
    for corr, name, shown, grid, block, nth in profiled_launches(trace):
        k = ours.get((shown, grid, block))
        launches = theirs.get(name, [])
        m = launches[nth - 1] if nth <= len(launches) else None
        if not k or not m:
            rows.append((short(k["display_name"] if k else shown, 60), f"{grid[0]}x{block[0]}",
                         "-", "-", "-", "-",
                         "no ktune derivation" if not k else "ncu has no such launch"))
            continue
        if (m["grid"], m["block"]) != (grid, block):
            note = f"ncu launch {nth} has grid {m['grid']}, ktune's {grid}: runs differ"
        else:
            note = ""
        ours_class, ncu_class = verdict_class(k["bottleneck"]), ncu_verdict(m)
        ours_stalls = [(s["reason"], s["share"]) for s in k.get("stalls", [])]
        ncu_top = ncu_stalls(m)
        verdicts[0] += ours_class == ncu_class
        verdicts[1] += 1
        if ours_stalls and ncu_top:
            stalls_same[0] += top_reason(ours_stalls) == top_reason(ncu_top)
            stalls_same[1] += 1
        memory = max(m.get(MEMORY, 0), m.get(DRAM, 0))
        rows.append((short(k["display_name"], 60), f"{grid[0]}x{block[0]}",
                     f"{k['bottleneck']} ({ours_class})",
                     f"{ncu_class} (SM {m.get(SM, 0):.0f}%, mem {memory:.0f}%)",
                     top_three(ours_stalls), top_three(ncu_top), note))
    head = ("kernel", "grid x block", "ktune verdict", "ncu verdict", "ktune top stalls",
            "ncu top stalls", "note")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print(" | ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    print(f"verdicts agree: {share(verdicts)} (target >= 90%)")
    print(f"top stall reason (besides 'selected') the same: {share(stalls_same)} (target >= 90%)")
    if out is not None:
        pairs = {"cache": cache, "verdicts": f"{verdicts[0]}/{verdicts[1]}",
                 "stalls": f"{stalls_same[0]}/{stalls_same[1]}"}
        pairs.update(cost(out, cache, sum(len(v) for v in theirs.values())))
        print("result " + " ".join(f"{k}={v}" for k, v in pairs.items()))


def top_three(stalls):
    return ", ".join(f"{r} {100 * v:.0f}%" for r, v in stalls[:3]) or "-"


def share(counts):
    """"agreeing/all (percent)" of an [agreeing, all] pair."""
    return f"{counts[0]}/{counts[1]} ({100 * counts[0] / counts[1]:.0f}%)" if counts[1] else "0/0"


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    if what == "names":
        names = sorted({launch[1] for launch in profiled_launches(sys.argv[2])})
        if not names:
            sys.exit(f"{sys.argv[2]} holds no counters: did ktune profile --metrics run?")
        print("^(" + "|".join(re.escape(n) for n in names) + ")$")
    elif what == "stall-metrics":
        print(",".join(STALL.format(r) for r in REASONS))
    elif what == "compare" and len(sys.argv) in (5, 7):
        compare(*sys.argv[2:])
    else:
        sys.exit(__doc__)

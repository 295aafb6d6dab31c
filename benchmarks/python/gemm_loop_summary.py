"""One table of a program's GEMM loop (scripts/gpu-python.sh's gemm_loop): the report's GEMM
problems, the jobs the backlog became and what the worker found, and ktune.prove's comparison.
    python3 gemm_loop_summary.py NAME DIR ENTRY...
"""
import json
import sys

name, d, entries = sys.argv[1], sys.argv[2], sys.argv[3:]
rep = json.load(open(f"{d}/report.json"))["gemm_calls"]
shapes = rep["shapes"]
tunable = sum(s["tune_command"] is not None for s in shapes)
rows = [f"### {name}",
        f"report: {rep['calls']} GEMM calls of {len(shapes)} problems, "
        f"{rep['gpu_ns'] / 1e6:.3f} ms of GPU time ({rep['timed_calls']} calls timed); "
        f"{tunable} of {len(shapes)} with a tune command"]
jobs = json.load(open(f"{d}/jobs.json"))["jobs"]
rows.append(f"queue: {len(jobs)} jobs, {sum(j['state'] == 'done' for j in jobs)} done, "
            f"{sum(j['state'] == 'failed' for j in jobs)} failed")
rows.append("| job | op dtype bucket | evaluations | tuning s | default us | winner us | gain |")
rows.append("| --- | --- | --- | --- | --- | --- | --- |")
for j in jobs:
    r = j.get("result") or {}
    default, winner = r.get("default_median_ns"), r.get("median_ns")
    gain = f"{default / winner:.3f}x" if default and winner else "-"
    rows.append(f"| {j['id'][:8]} {j['state']} | {j['op']} {j['dtype']} {j['bucket']} "
                f"| {j['evaluations']} | {j.get('run_s', 0):.1f} "
                f"| {default / 1e3 if default else 0:.2f} "
                f"| {winner / 1e3 if winner else 0:.2f} | {gain} |"
                + (f" {j['error'][:120]}" if j["error"] else ""))
for e in entries:
    try:
        p = json.load(open(f"{d}/prove-{e}.json"))
    except (OSError, ValueError) as err:
        rows.append(f"prove {e}: no result ({err})")
        continue
    b, k, c = p["pytorch"], p["ktune"], p["gemm_calls_per_iteration"]
    same = " (nothing routed: both ways ran the same kernels)" if not c["routed"] else ""
    rounds = p["round_speedups"]
    rows.append(f"prove {e}: PyTorch {b['median_ms']:.4f} ms/iter "
                f"(rounds {b['round_min_ms']:.4f}-{b['round_max_ms']:.4f}), "
                f"ktune {k['median_ms']:.4f} "
                f"(rounds {k['round_min_ms']:.4f}-{k['round_max_ms']:.4f}): "
                f"{p['speedup']:.3f}x{same} (per round {rounds['median']:.3f}x, "
                f"{rounds['min']:.3f}-{rounds['max']:.3f}); "
                f"GEMM calls/iter: {c['routed']} routed, {c['kept']} kept "
                "(PyTorch's algorithm won), "
                f"{c['passed']} passed {c['passed_by_op']}; routed in the timed rounds "
                f"{p['routed_per_iteration']:g}/iter; max rel diff {p['max_relative_difference']}")
    for s in p["routed_problems"]:
        rows.append(f"  {s['problem']}: {s['calls_per_iteration']:g}/iter, "
                    f"tuned {s['tuned_us']} us vs default {s['default_us']} us, gain {s['gain']}")
print("\n".join(rows))

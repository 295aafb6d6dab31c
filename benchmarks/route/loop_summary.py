"""One table of a program's loop (scripts/gpu-route.sh): the GEMM calls its profile recorded, by
cuBLAS entry point, how many are tunable and were queued and tuned, and ktune.prove's comparison
with each winner's verdict inside the program.
    python3 loop_summary.py NAME DIR
"""
import json
import sys

name, d = sys.argv[1], sys.argv[2]
rep = json.load(open(f"{d}/report.json"))["gemm_calls"]
shapes = rep["shapes"]
tunable = sum(s["tune_command"] is not None for s in shapes)
by_entry = {}
for s in shapes:
    for e in s.get("entries") or ["(cuBLASLt log)"]:
        by_entry[e] = by_entry.get(e, 0) + s["calls"]
rows = [f"### {name}",
        f"profile: {rep['calls']} GEMM calls of {len(shapes)} problems recorded "
        f"({rep['timed_calls']} "
        f"timed), by entry point {by_entry}; {tunable} of {len(shapes)} tunable"]
for s in shapes:
    if s["tune_command"] is None:
        rows.append(f"  not tunable: {s['m']}x{s['n']}x{s['k']} {s['dtype']}: {s['not_tunable']}")
try:
    jobs = json.load(open(f"{d}/jobs.json"))["jobs"]
    rows.append(f"queue: {len(jobs)} jobs in the store, {sum(j['state'] == 'done' for j in jobs)} "
                f"done, {sum(j['state'] == 'failed' for j in jobs)} failed")
except (OSError, ValueError, KeyError):
    rows.append("queue: no job list")
try:
    p = json.load(open(f"{d}/prove.json"))
except (OSError, ValueError):
    rows.append(f"prove: no result (see {d}/prove.err)")
    print("\n".join(rows))
    sys.exit(0)
c = p["gemm_calls_per_iteration"]
rr = p["round_speedups"]
rows.append(f"prove: PyTorch {p['pytorch']['median_ms']:.3f} ms/iter, "
            f"ktune {p['ktune']['median_ms']:.3f} "
            f"ms/iter: {p['speedup']:.3f}x (per round median {rr['median']:.3f}, {rr['min']:.3f}-"
            f"{rr['max']:.3f}); per iteration {c['calls']} GEMM calls: {c['routed']} routed, "
            f"{c['kept']} kept, {c['trial']} trial, {c['passed']} passed; max rel diff "
            f"{p['max_relative_difference']}")
rows.append("| winner | verdict | in program: winner us | default us | gain | tuned gain |")
rows.append("| --- | --- | --- | --- | --- | --- |")
for w in p["winners"]:
    wi, de = w["in_program_winner_us"], w["in_program_default_us"]
    tuned, tuned_default = w["tuned_us"], w["tuned_default_us"]
    tg = tuned_default / tuned if tuned and tuned_default else None
    rows.append(f"| {w['problem']} | {w['verdict']}{' (tuned kept)' if w['tuned_kept'] else ''} | "
                f"{wi if wi is None else round(wi, 2)} | {de if de is None else round(de, 2)} | "
                f"{'-' if not wi else f'{de / wi:.3f}x'} | {'-' if tg is None else f'{tg:.3f}x'} |")
print("\n".join(rows))

"""The tracer's cost on a launch-bound PyTorch block, measured inside one process, free of the
process-to-process noise that hid it (+9 % and +18 % with --ops across processes, +-22 %).

Run under `ktune profile --range profiler --ops`: the program opens and closes the capture itself
(cudaProfilerStart/Stop, which torch.cuda.profiler.start/stop call; the tracer records only while
it is open) and turns PyTorch's op ranges on and off with the profiler switch --ops throws. The
block (torch_ops.py's LayerNorm-Linear-GELU-Linear at batch 4 with its casts, small kernels
only) is timed on the host in blocks of iterations, each ended by a synchronize, in
these states:

  pristine   before the capture ever opens: CUPTI attached, nothing ever recorded
  off        capture closed again, op ranges off
  trace      capture open, op ranges off: what `ktune profile` records
  trace+ops  capture open, op ranges on: what `ktune profile --ops` records
  ops        capture closed, op ranges on: the ranges alone

The pristine blocks come first; then ROUNDS rounds of the other four, the order rotated each
round so every state takes every position. Each round's ratio to its own `off` block is the
paired, in-process figure. Once kernel records were enabled CUPTI keeps part of its per-launch
path (docs/measured.md: +0.4-0.6 us per launch between capture windows), so `off` costs more
than `pristine`: the script prints that lingering part, and the cost against `pristine` as well.
Against no tracer at all only a separate process can compare (CUPTI's attachment); the same
script run plain gives that, and its own ratios are the method's noise floor (there the start and
stop calls do nothing).

Prints one line of key=value pairs (benchmarks/tracer/inprocess.sh reads it): per state the median
us per iteration with quartiles, per traced state the median ratio to `off` with quartiles and
the ratio of medians to `pristine`, and captured_iters (iterations run with the capture open, so
launches per iteration can be read from the trace)."""
import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from torch_layer import quartiles, timed  # noqa: E402
from torch_ops import make_block, op_ranges  # noqa: E402

STATES = ("off", "trace", "trace+ops", "ops")


class Switches:
    """The process's capture and op-range switches, thrown only when they change."""

    def __init__(self, settle_s):
        self.capture, self.ranges, self.settle_s = False, False, settle_s
        self.ranges_hooked = bool(torch.autograd._profiler_enabled())
        if self.ranges_hooked:  # --ops turned them on at import; start from off
            op_ranges(False)

    def set(self, capture, ranges):
        changed = False
        if ranges != self.ranges:
            op_ranges(ranges)
            self.ranges, changed = ranges, True
        if capture != self.capture:
            torch.cuda.synchronize()
            (torch.cuda.profiler.start if capture else torch.cuda.profiler.stop)()
            self.capture, changed = capture, True
        if changed:
            # CUPTI hands its buffers to the tracer's writer thread after a switch; let that
            # happen outside the timed block.
            torch.cuda.synchronize()
            time.sleep(self.settle_s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--pristine", type=int, default=6, help="blocks before any capture")
    ap.add_argument("--iters", type=int, default=400, help="iterations per timed block")
    ap.add_argument("--warm", type=int, default=20, help="untimed iterations after a switch")
    ap.add_argument("--settle", type=float, default=0.3, help="seconds after a switch")
    a = ap.parse_args()
    switches = Switches(a.settle)
    times = {s: [] for s in ("pristine",) + STATES}
    ratios = {s: [] for s in STATES[1:]}
    captured = 0
    with torch.no_grad():
        block = make_block()
        for _ in range(50):
            block()
        torch.cuda.synchronize()
        for _ in range(a.pristine):
            times["pristine"].append(timed(block, a.iters))
        for r in range(a.rounds):
            k = r % len(STATES)
            this = {}
            for state in STATES[k:] + STATES[:k]:
                switches.set(capture=state.startswith("trace"), ranges=state.endswith("ops"))
                for _ in range(a.warm):
                    block()
                this[state] = timed(block, a.iters)
                if switches.capture:
                    captured += a.warm + a.iters
                times[state].append(this[state])
            for state in STATES[1:]:
                ratios[state].append(this[state] / this["off"])
        switches.set(capture=False, ranges=switches.ranges_hooked)
    out = [f"captured_iters={captured}", f"rounds={a.rounds}", f"iters={a.iters}"]
    for state, values in times.items():
        q = quartiles([1e6 * v for v in values])
        key = state.replace("+", "_")
        out += [f"{key}_us={q[1]:.3f}", f"{key}_us_q1={q[0]:.3f}", f"{key}_us_q3={q[2]:.3f}"]
    pristine = statistics.median(times["pristine"])
    for state, values in ratios.items():
        q = quartiles(values)
        key = state.replace("+", "_")
        out += [f"{key}_vs_off={q[1]:.4f}", f"{key}_vs_off_q1={q[0]:.4f}",
                f"{key}_vs_off_q3={q[2]:.4f}",
                f"{key}_vs_pristine={statistics.median(times[state]) / pristine:.4f}"]
    out.append(f"off_vs_pristine={statistics.median(times['off']) / pristine:.4f}")
    print(" ".join(out))


if __name__ == "__main__":
    main()

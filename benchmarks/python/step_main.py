"""The command line the router's workloads share (train_step.py, decode_step.py): run the named
steps after a warm-up and print {"which", "median_ms"} for each, every iteration timed on the GPU
with CUDA events (the whole-program A/B of scripts/gpu-route.sh reads the last line)."""

import argparse
import json
import statistics

import torch


def time_steps(step, iters, warmup):
    for _ in range(warmup):
        step()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(iters)]
    for a, b in events:
        a.record()
        step()
        b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in events)


def main(steps, iters, warmup):
    ap = argparse.ArgumentParser()
    ap.add_argument("--which", choices=sorted(steps), action="append")
    ap.add_argument("--iters", type=int, default=iters)
    a = ap.parse_args()
    for which in a.which or sorted(steps):
        ms = time_steps(steps[which](), a.iters, warmup)
        print(json.dumps({"which": which, "median_ms": ms}), flush=True)

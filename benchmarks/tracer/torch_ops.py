"""What `ktune profile --ops` costs, and whether its op names agree with torch.profiler's.

Workloads: the transformer layer of torch_layer.py (few, large ops) and an op-bound loop of small
ops (a LayerNorm-Linear-GELU-Linear block at batch 4, many ops per ms), each timed on the host per
iteration with the final synchronize (torch_layer.timed).

--ab PAIRS: the cost of the op ranges inside one process. Run under `ktune profile --ops`, the
program alternates blocks with PyTorch's NVTX op ranges on and off (the same profiler switch the
--ops hook throws), ABBA order; prints the median added % per iteration (layer, block) and the
added us per op (block), with quartiles. Run without the hook (plain, or profile without --ops),
the same switch prices the ranges with no tracer recording them.

--kineto-out FILE: records the block's last --kineto-steps iterations with torch.profiler (CPU and
CUDA activities) and exports the Chrome trace, for ops.sh to compare the kernel -> op attribution
of both readers."""
import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from torch_layer import make_layer, quartiles, timed  # noqa: E402


def make_block():
    dev = "cuda"
    norm = torch.nn.LayerNorm(256, device=dev)
    w1 = torch.nn.Linear(256, 1024, device=dev)
    w2 = torch.nn.Linear(1024, 256, device=dev)
    x = torch.randn(4, 128, 256, device=dev)

    def step():
        h = w2(torch.nn.functional.gelu(w1(norm(x))))
        return (x + h).to(torch.bfloat16).float().mul(0.5).sum()

    return step


def count_ops(step):
    """Ops one call of step runs, as torch.profiler counts them (cpu_op events)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as p:
        step()
    return sum(1 for e in p.events() if e.device_type == torch.autograd.DeviceType.CPU)


def op_ranges(on):
    p = torch.autograd.profiler
    if on:
        p._enable_profiler(p.ProfilerConfig(p.ProfilerState.NVTX, False, False, False, False, False,
                                            p._ExperimentalConfig()), set())
    else:
        p._disable_profiler()


def ab(pairs, fn, iters, start_on):
    """Per pair: (with ranges - without) and without, one block each, ABBA order."""
    on = start_on
    out = []
    for k in range(pairs):
        t = [0.0, 0.0]
        for j in range(2):
            want = (j == 0) == (k % 2 == 1)
            if want != on:
                op_ranges(want)
                on = want
            t[want] = timed(fn, iters)
        out.append((t[1] - t[0], t[0]))
    if on != start_on:
        op_ranges(start_on)
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--ab", type=int, default=0, metavar="PAIRS")
    ap.add_argument("--ab-iters", type=int, default=20)
    ap.add_argument("--kineto-out", default="")
    ap.add_argument("--kineto-steps", type=int, default=3)
    a = ap.parse_args()
    # The hook turned the ranges on at import when this runs under ktune profile --ops.
    hooked = bool(torch.autograd._profiler_enabled())
    with torch.no_grad():
        layer, block = make_layer(), make_block()
        for _ in range(10):
            layer()
            block()
        torch.cuda.synchronize()
        out = (f"ops_hook={int(hooked)} layer_ms_per_iter={timed(layer, a.iters) * 1e3:.4f} "
               f"block_us_per_iter={timed(block, a.iters * 10) * 1e6:.3f}")
        if a.ab:
            if hooked:
                # The profiler-enabled state is per thread: count ops with the ranges off.
                op_ranges(False)
            ops = count_ops(block)
            if hooked:
                op_ranges(True)
            lq = quartiles([100 * d / base for d, base in ab(a.ab, layer, a.ab_iters, hooked)])
            bq = quartiles([100 * d / base for d, base in ab(a.ab, block, 10 * a.ab_iters, hooked)])
            uq = quartiles([1e6 * d / ops for d, _ in ab(a.ab, block, 10 * a.ab_iters, hooked)])
            out += (f" block_ops={ops} ab_layer_added_pct={lq[1]:.3f} ab_layer_q1={lq[0]:.3f}"
                    f" ab_layer_q3={lq[2]:.3f} ab_block_added_pct={bq[1]:.3f}"
                    f" ab_block_q1={bq[0]:.3f} ab_block_q3={bq[2]:.3f}"
                    f" ab_us_per_op={uq[1]:.3f} ab_us_per_op_q1={uq[0]:.3f}"
                    f" ab_us_per_op_q3={uq[2]:.3f}")
        if a.kineto_out:
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
                for _ in range(a.kineto_steps):
                    block()
                torch.cuda.synchronize()
            p.export_chrome_trace(a.kineto_out)
        else:
            # The same steps for the --ops trace, so both readers see one workload.
            for _ in range(a.kineto_steps):
                block()
            torch.cuda.synchronize()
    print(out)

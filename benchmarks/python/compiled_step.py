"""torch.compile programs for the Inductor tier (scripts/gpu-inductor.sh): a pre-norm transformer
block with RMSNorm, attention written out (q @ k^T, softmax, @ v), a SwiGLU MLP and a GELU
projection, each behind a residual, in bf16.

    train   forward, backward and AdamW of two blocks, B=8 S=512 E=1024 (compiled forward and
            backward; the optimizer runs eagerly)
    infer   a small-batch forward without grad, B=2 S=128
    graphs  the same forward compiled with mode="reduce-overhead" (CUDA graphs)

make_step(program, mode) returns a callable that runs one iteration and returns its output. `mode`:
"default" (torch.compile's default), "max-autotune" (its max-autotune without CUDA graphs for train
and infer; "max-autotune" with them for graphs). ktune's winners are not a mode: they reach
Inductor through its lookup table (ktune.inductor.use()), which the caller sets before the first
call.

    python3 compiled_step.py --program train [--mode default] [--iters 20]

prints {"program", "mode", "median_ms"} of its iterations after a warm-up, each timed on the GPU
with CUDA events.
"""

import argparse
import json
import math
import statistics

import torch
import torch.nn as nn
import torch.nn.functional as F

SHAPES = {"train": (8, 512), "infer": (2, 128), "graphs": (2, 128)}
E, HIDDEN, HEADS = 1024, 2816, 16


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        norm = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return norm.to(x.dtype) * self.weight


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2, self.norm3 = RMSNorm(E), RMSNorm(E), RMSNorm(E)
        self.qkv = nn.Linear(E, 3 * E, bias=False)
        self.proj = nn.Linear(E, E, bias=False)
        self.gate = nn.Linear(E, HIDDEN, bias=False)
        self.up = nn.Linear(E, HIDDEN, bias=False)
        self.down = nn.Linear(HIDDEN, E, bias=False)
        self.mix = nn.Linear(E, E)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, HEADS, E // HEADS).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(E // HEADS))
        att = torch.softmax(att.float(), dim=-1).to(v.dtype)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, s, E))
        h = self.norm2(x)
        x = x + self.down(F.silu(self.gate(h)) * self.up(h))
        return x + F.gelu(self.mix(self.norm3(x)), approximate="tanh")


def make_step(program="train", mode="default"):
    if program not in SHAPES:
        raise SystemExit(f"compiled_step: unknown program {program!r}; one of {sorted(SHAPES)}")
    b, s = SHAPES[program]
    torch.manual_seed(0)
    blocks = 2 if program == "train" else 1
    model = nn.Sequential(*[Block() for _ in range(blocks)]).to("cuda", torch.bfloat16)
    x = torch.randn(b, s, E, device="cuda", dtype=torch.bfloat16)
    if program == "graphs":
        compile_mode = "reduce-overhead" if mode == "default" else "max-autotune"
    else:
        compile_mode = None if mode == "default" else "max-autotune-no-cudagraphs"
    compiled = torch.compile(model, mode=compile_mode)
    if program != "train":
        model.eval()

        def infer():
            with torch.no_grad():
                return compiled(x)

        return infer
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    target = torch.randn(b, s, E, device="cuda", dtype=torch.bfloat16)

    def train():
        out = compiled(x)
        loss = (out.float() - target.float()).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return out.detach()

    return train


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--program", default="train", choices=sorted(SHAPES))
    ap.add_argument("--mode", default="default", choices=["default", "max-autotune"])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()
    step = make_step(args.program, args.mode)
    for _ in range(args.warmup):
        step()
    times = []
    for _ in range(args.iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    print(json.dumps({"program": args.program, "mode": args.mode,
                      "median_ms": statistics.median(times)}))


if __name__ == "__main__":
    main()

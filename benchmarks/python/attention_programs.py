"""PyTorch programs of ktune's own for the counter tier's agreement with Nsight Compute
(scripts/gpu-counters.sh) and the tracer's in-process cost (benchmarks/tracer/inprocess.py):

  hand   an attention block written by hand: layer norm, QKV, q @ k^T, softmax, @ v, projection
  sdpa   the same block through scaled_dot_product_attention (cuDNN's or flash's fused kernel)
  train  a training step of the hand-written block with a GELU MLP: forward, backward, AdamW

bf16, deterministic: the same kernels in the same order on every run, which the comparison needs
to find the same launches under ktune and under ncu. The first step runs at a quarter of the
batch, so a kernel's first launch is not the shape that owns its time, as in real programs.

    python3 attention_programs.py --which hand [--steps 2]
"""
import argparse
import math

import torch
import torch.nn as nn

E, HEADS = 1024, 16


class Attention(nn.Module):
    def __init__(self, fused):
        super().__init__()
        self.fused = fused
        self.norm = nn.LayerNorm(E)
        self.qkv = nn.Linear(E, 3 * E)
        self.proj = nn.Linear(E, E)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(self.norm(x)).view(b, s, 3, HEADS, E // HEADS).permute(2, 0, 3, 1, 4)
        if self.fused:
            ctx = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = (q @ k.transpose(-1, -2)) * (1 / math.sqrt(E // HEADS))
            ctx = torch.softmax(scores, dim=-1) @ v
        return x + self.proj(ctx.transpose(1, 2).reshape(b, s, E))


class Block(nn.Module):
    def __init__(self, fused):
        super().__init__()
        self.attention = Attention(fused)
        self.norm = nn.LayerNorm(E)
        self.up, self.down = nn.Linear(E, 4 * E), nn.Linear(4 * E, E)

    def forward(self, x):
        x = self.attention(x)
        return x + self.down(nn.functional.gelu(self.up(self.norm(x))))


def make(which, batch=8, seq=1024):
    """(step(x), full input, small input) of the named program, on the GPU, seeded."""
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False
    dt = torch.bfloat16
    full = torch.randn(batch, seq, E, device="cuda", dtype=dt)
    small = torch.randn(max(1, batch // 4), seq, E, device="cuda", dtype=dt)
    if which in ("hand", "sdpa"):
        model = Attention(fused=which == "sdpa").to("cuda", dt)

        def step(x):
            with torch.no_grad():
                return model(x)

        return step, full, small
    model = Block(fused=False).to("cuda", dt)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def train(x):
        loss = model(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.detach()

    return train, full, small


PROGRAMS = ("hand", "sdpa", "train")

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--which", choices=PROGRAMS, required=True)
    ap.add_argument("--steps", type=int, default=2, help="steps at the full batch")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    a = ap.parse_args()
    step, full, small = make(a.which, a.batch, a.seq)
    step(small)
    for _ in range(a.steps):
        step(full)
    torch.cuda.synchronize()
    print(f"ok: {a.which}, 1 step at batch {small.shape[0]}, {a.steps} at batch {a.batch}, "
          f"seq {a.seq}")

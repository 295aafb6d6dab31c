"""Training steps for the GEMM router's GPU run (scripts/gpu-route.sh): two pre-norm transformer
blocks (nn.Linear with and without bias, batched q @ k^T and att @ v, a ReLU MLP), forward,
backward and AdamW, in three precisions: bf16 weights (make_step_bf16), fp32 weights under fp16
autocast (make_step_f16), fp32 with TF32 matmuls (make_step_tf32). B=8, S=512, E=1024, F=2816.

    python3 train_step.py --which bf16 [--iters 20]     # for ktune profile / ktune run
    python -m ktune.prove train_step.py:make_step_bf16  # with and without ktune's winners

Run as a program, it prints {"which", "median_ms"} of its iterations after a warm-up, each timed on
the GPU with CUDA events (the whole-program A/B of `ktune run` reads it).
"""

import contextlib
import math

import torch
import torch.nn as nn

B, S, E, F, HEADS = 8, 512, 1024, 2816, 16


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(E), nn.LayerNorm(E)
        self.qkv = nn.Linear(E, 3 * E, bias=False)
        self.proj = nn.Linear(E, E)
        self.up = nn.Linear(E, F)
        self.down = nn.Linear(F, E, bias=False)

    def forward(self, x):
        h = self.norm1(x)
        q, k, v = self.qkv(h).view(B, S, 3, HEADS, E // HEADS).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(E // HEADS)  # batched, q and k strided views
        att = torch.softmax(att.float(), dim=-1).to(v.dtype)
        ctx = (att @ v).transpose(1, 2).reshape(B, S, E)
        x = x + self.proj(ctx)
        return x + self.down(torch.relu(self.up(self.norm2(x))))


def _make(param_dtype, autocast_dtype=None, tf32=False):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.manual_seed(0)
    model = nn.Sequential(Block(), Block()).to("cuda", param_dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(B, S, E, device="cuda", dtype=param_dtype)
    target = torch.randn(B, S, E, device="cuda", dtype=param_dtype)

    def step():
        ctx = (torch.autocast("cuda", dtype=autocast_dtype) if autocast_dtype
               else contextlib.nullcontext())
        with ctx:
            loss = (model(x).float() - target.float()).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.detach()

    return step


def make_step_bf16():
    return _make(torch.bfloat16)


def make_step_f16():
    return _make(torch.float32, autocast_dtype=torch.float16)


def make_step_tf32():
    return _make(torch.float32, tf32=True)


STEPS = {"bf16": make_step_bf16, "f16": make_step_f16, "tf32": make_step_tf32}


if __name__ == "__main__":
    from step_main import main

    main(STEPS, iters=20, warmup=10)

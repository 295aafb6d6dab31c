"""A GPT-style block that multiplies every way PyTorch programs do, for the GEMM loop's GPU run
(scripts/gpu-python.sh): `x @ W` projections, torch.mm, torch.matmul on 4-D q and k^T,
torch.baddbmm with a mask, torch.bmm for the values, torch.addmm with a bias, F.linear with a bias
(an nn.Linear), GELU, RMSNorm and a softmax, in bf16 (make_step) or fp16 (make_step_f16).

    python3 gemm_workload.py [--iters 20]      # both dtypes, for `ktune profile --gemm-shapes`
    python -m ktune.prove gemm_workload.py:make_step   # with and without ktune's selections
"""

import argparse
import math

import torch
import torch.nn.functional as F

TOKENS, D, HEADS, HIDDEN, SEQ = 4096, 1024, 16, 4096, 512  # 8 sequences of 512 tokens


def make_step(dtype=torch.bfloat16):
    g = torch.Generator(device="cuda").manual_seed(1)

    def w(*shape, scale=0.02):
        return (torch.randn(*shape, device="cuda", generator=g) * scale).to(dtype)

    wq, wk, wv = w(D, D), w(D, D), w(D, D)  # x @ W: stored [in, out]
    wo, bo = w(D, D), w(D)
    up = torch.nn.Linear(D, HIDDEN, device="cuda", dtype=dtype)  # F.linear with a bias: TN
    w_down, b_down = w(HIDDEN, D), w(D)
    norm_w = torch.ones(D, device="cuda", dtype=dtype)
    x = torch.randn(TOKENS, D, device="cuda", dtype=dtype, generator=g)
    mask = torch.triu(torch.full((SEQ, SEQ), -1e4, device="cuda", dtype=dtype), 1)
    batch = TOKENS // SEQ
    head = D // HEADS

    def rmsnorm(t):
        return t * torch.rsqrt(t.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(t.dtype) * norm_w

    @torch.no_grad()
    def step():
        h = rmsnorm(x)
        q = h @ wq  # NN
        k = torch.mm(h, wk)
        v = h @ wv
        q4 = q.view(batch, SEQ, HEADS, head).transpose(1, 2).contiguous()
        k4 = k.view(batch, SEQ, HEADS, head).transpose(1, 2).contiguous()
        v3 = v.view(batch, SEQ, HEADS, head).transpose(1, 2).reshape(batch * HEADS, SEQ, head)
        scores = torch.matmul(q4, k4.transpose(-1, -2)) / math.sqrt(head)  # 4-D: bmm, TN
        scores = torch.baddbmm(mask.expand(batch * HEADS, SEQ, SEQ),
                               q4.view(batch * HEADS, SEQ, head),
                               k4.view(batch * HEADS, SEQ, head).transpose(1, 2),
                               beta=1.0, alpha=0.5) + scores.view(batch * HEADS, SEQ, SEQ) * 0.5
        att = torch.softmax(scores.float(), dim=-1).to(dtype)
        ctx = torch.bmm(att, v3)  # NN batched
        ctx = ctx.view(batch, HEADS, SEQ, head).transpose(1, 2).reshape(TOKENS, D)
        y = x + torch.addmm(bo, ctx, wo)  # bias epilogue
        m = F.gelu(up(rmsnorm(y)))  # F.linear with a bias
        return y + F.linear(m, w_down.t(), b_down)  # W given transposed: NN with a bias

    return step


def make_step_f16():
    return make_step(torch.float16)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()
    for make in (make_step, make_step_f16):
        s = make()
        for _ in range(a.iters):
            s()
    torch.cuda.synchronize()
    print("gemm_workload: done")

"""The GPU check's PyTorch workload (benchmarks/analysis/ncu_compare.sh): one bf16 transformer
block (layer norm, QKV, attention by both the fused SDPA path and an explicit softmax, GELU MLP,
residuals) fed by a float32 -> bf16 copy. The first step runs at a small batch, the rest at the
full one, so a kernel's first launch is not the shape that owns its time, as in real programs.
Deterministic: the same kernels in the same order on every run, which the comparison relies on to
find the same launches under ktune and under ncu."""
import argparse

import torch


def block(hidden=2048, heads=16, device="cuda"):
    dt = torch.bfloat16
    def lin(i, o):
        return torch.nn.Linear(i, o, device=device, dtype=dt)

    norm1, norm2 = (torch.nn.LayerNorm(hidden, device=device, dtype=dt) for _ in range(2))
    qkv, proj = lin(hidden, 3 * hidden), lin(hidden, hidden)
    up, down = lin(hidden, 4 * hidden), lin(4 * hidden, hidden)
    head = hidden // heads

    def step(x32):
        x = x32.to(dt)  # the float -> bf16 copy
        b, s, _ = x.shape
        q, k, v = qkv(norm1(x)).view(b, s, 3, heads, head).permute(2, 0, 3, 1, 4)
        fused = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        # The same attention spelled out: a softmax kernel of its own.
        logits = (q[:, :, :256] @ k[:, :, :256].transpose(-1, -2)) * head**-0.5
        scores = torch.softmax(logits, dim=-1)
        explicit = scores @ v[:, :, :256]
        a = fused.clone()
        a[:, :, :256] += explicit
        h = x + proj(a.transpose(1, 2).reshape(b, s, hidden))
        return h + down(torch.nn.functional.gelu(up(norm2(h))))

    return step


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=3, help="steps at the full batch")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=2048)
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False
    with torch.no_grad():
        step = block()
        small = torch.randn(1, a.seq // 4, 2048, device="cuda")
        full = torch.randn(a.batch, a.seq, 2048, device="cuda")
        step(small)
        for _ in range(a.iters):
            step(full)
        torch.cuda.synchronize()
    print(f"ok: 1 small step, {a.iters} steps at batch {a.batch} x seq {a.seq}")

"""One process of the shared-autotune-cache benchmark: a Triton fp16 matmul autotuned over 16
configurations by ktune.triton.autotune (or by triton.autotune with --plain), launched once at
4096^3. Prints one JSON line: where the config came from, the tuning time, the first call's time,
the winner and the result's error against torch.matmul."""
import argparse
import json
import time

import torch
import triton
import triton.language as tl

import ktune.triton

CONFIGS = [
    triton.Config({"BM": bm, "BN": bn, "BK": bk}, num_warps=w, num_stages=s)
    for (bm, bn, bk, w, s) in [
        (128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 4, 4), (128, 128, 32, 4, 4),
        (128, 64, 64, 4, 4), (64, 128, 64, 4, 4), (64, 64, 64, 4, 5), (128, 128, 64, 8, 3),
        (256, 64, 64, 8, 4), (64, 256, 64, 8, 4), (128, 256, 32, 8, 4), (64, 64, 32, 2, 5),
        (128, 64, 32, 4, 5), (64, 128, 32, 4, 5), (256, 128, 32, 8, 3), (128, 128, 128, 8, 3),
    ]
]


@triton.jit
def matmul_kernel(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a_tile = tl.load(a + rm[:, None] * sam + (k0 + rk)[None, :] * sak,
                         mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
        b_tile = tl.load(b + (k0 + rk)[:, None] * sbk + rn[None, :] * sbn,
                         mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a_tile, b_tile)
    tl.store(c + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.float16),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--plain", action="store_true", help="triton.autotune, for comparison")
    args = ap.parse_args()
    t_start = time.perf_counter()
    if args.plain:
        tuned = triton.autotune(configs=CONFIGS, key=["M", "N", "K"])(matmul_kernel)
    else:
        tuned = ktune.triton.autotune(configs=CONFIGS, key=["M", "N", "K"])(matmul_kernel)
    n = args.size
    torch.manual_seed(0)
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    c = torch.empty(n, n, device="cuda", dtype=torch.float16)
    torch.cuda.synchronize()
    def grid(meta):
        return (triton.cdiv(n, meta["BM"]), triton.cdiv(n, meta["BN"]))

    t0 = time.perf_counter()
    tuned[grid](a, b, c, n, n, n, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                c.stride(0), c.stride(1))
    torch.cuda.synchronize()
    first_call_s = time.perf_counter() - t0
    err = (c.float() - (a @ b).float()).abs().max().item()
    best = tuned.best_config
    out = {
        "mode": "triton.autotune" if args.plain else "ktune.triton.autotune",
        "source": getattr(tuned, "last_source", "benchmark"),
        "tuning_s": getattr(tuned, "last_tuning_s", None),
        "first_call_s": first_call_s,
        "winner": {**best.kwargs, "num_warps": best.num_warps, "num_stages": best.num_stages},
        "max_abs_error": err,
        "process_s_after_imports": time.perf_counter() - t_start,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()

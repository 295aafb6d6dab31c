"""A host-bound inference step for the GEMM router's GPU run (scripts/gpu-route.sh): decoding a
few tokens through four bf16 layers of a 4096-wide model (nn.Linear projections with small M),
eagerly (make_step) and replayed from a CUDA graph (make_step_graph), where routing is decided at
capture and the replay costs the host nothing per GEMM.

    python3 decode_step.py [--which eager|graph] [--iters 200]
    python -m ktune.prove decode_step.py:make_step

Run as a program, it prints {"which", "median_ms"} per variant after a warm-up (CUDA events).
"""


import torch
import torch.nn as nn

TOKENS, D, FF, LAYERS = 8, 4096, 11008, 4


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(D, 3 * D, bias=False)
        self.o = nn.Linear(D, D, bias=False)
        self.gate = nn.Linear(D, FF, bias=False)
        self.up = nn.Linear(D, FF, bias=False)
        self.down = nn.Linear(FF, D, bias=False)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        x = x + self.o(v * torch.sigmoid(q * k))
        return x + self.down(torch.nn.functional.silu(self.gate(x)) * self.up(x))


def _model():
    torch.manual_seed(0)
    model = nn.Sequential(*[Layer() for _ in range(LAYERS)]).to("cuda", torch.bfloat16).eval()
    x = torch.randn(TOKENS, D, device="cuda", dtype=torch.bfloat16)
    return model, x


def make_step():
    model, x = _model()

    @torch.no_grad()
    def step():
        return model(x)

    return step


def make_step_graph():
    model, x = _model()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(stream):
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.no_grad(), torch.cuda.graph(graph):
        out = model(x)

    def step():
        graph.replay()
        return out

    return step


STEPS = {"eager": make_step, "graph": make_step_graph}


if __name__ == "__main__":
    from step_main import main

    main(STEPS, iters=200, warmup=20)

"""The shared transformer layer (torch_layer.py, beside the repository in .workloads/) as a step
for `python -m ktune.prove torch_layer_step.py`: the body of its layer_loop, with the same modules,
input and shapes (its loop times itself and builds its modules inside, so it cannot be handed over
as it is)."""

import os
import sys

import torch

sys.path.insert(0, os.environ.get("KTUNE_WORKLOADS", os.path.join(os.path.dirname(__file__), "..", "..", ".workloads")))
import torch_layer  # noqa: E402,F401  (the file this step mirrors; imported so a missing one says so)


def make_step():
    dev, dt = "cuda", torch.float16
    hidden, inter = 4096, 11008
    lin = lambda i, o: torch.nn.Linear(i, o, device=dev, dtype=dt)  # noqa: E731
    qkv, o_proj, gate, up, down = (lin(hidden, 3 * hidden), lin(hidden, hidden), lin(hidden, inter),
                                   lin(hidden, inter), lin(inter, hidden))
    norm = torch.nn.LayerNorm(hidden, device=dev, dtype=dt)
    x0 = torch.randn(1, 2048, hidden, device=dev, dtype=dt)

    @torch.no_grad()
    def step():
        h = norm(x0)
        a = o_proj(qkv(h)[:, :, :hidden])
        h = x0 + a
        hn = norm(h)
        m = down(torch.nn.functional.silu(gate(hn)) * up(hn))
        return h + m

    return step


if __name__ == "__main__":  # what `ktune profile --gemm-shapes` runs
    s = make_step()
    for _ in range(20):
        s()
    torch.cuda.synchronize()
    print("torch_layer_step: done")

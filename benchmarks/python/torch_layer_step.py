"""The shared transformer layer (../shared/workloads/torch_layer.py's layer: batch 1, sequence 2048,
hidden 4096, fp16 nn.Linear and LayerNorm) as a step for `python -m ktune.prove
torch_layer_step.py`. The shared file's loop times itself and builds its modules inside, so the step
is the repository's copy of the same layer, benchmarks/tracer/torch_layer.py's make_layer."""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tracer"))
from torch_layer import make_layer  # noqa: E402


def make_step():
    return torch.no_grad()(make_layer())


if __name__ == "__main__":  # what `ktune profile --gemm-shapes` runs
    s = make_step()
    for _ in range(20):
        s()
    torch.cuda.synchronize()
    print("torch_layer_step: done")

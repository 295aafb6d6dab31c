"""The baseline for `ktune calibrate`: PyTorch's own 2 GiB device-to-device copy and 8192^3 bf16 and
fp16 matmuls on random data, each timed with CUDA events, median of many. Prints JSON."""
import json
import statistics
import sys

import torch


def median_ms(fn, warmup=5, samples=30):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(samples):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return statistics.median(times)

def main():
    gib = 2 << 30
    src = torch.randn(gib // 4, device="cuda")
    dst = torch.empty_like(src)
    copy_ms = median_ms(lambda: dst.copy_(src))
    out = {"schema_version": 1, "device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "dram_bandwidth": 2 * gib / (copy_ms * 1e-3), "copy_ms": copy_ms}
    src = dst = None  # frees the 4 GiB before the matmuls
    n = 8192
    for dtype, name in ((torch.bfloat16, "bf16_tensor"), (torch.float16, "fp16_tensor")):
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        b = torch.randn(n, n, device="cuda", dtype=dtype)
        ms = median_ms(lambda: torch.matmul(a, b))
        out[name] = 2 * n ** 3 / (ms * 1e-3)
        out[name + "_ms"] = ms
    json.dump(out, sys.stdout)
    print()

if __name__ == "__main__":
    main()

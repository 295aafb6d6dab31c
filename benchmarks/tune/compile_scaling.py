#!/usr/bin/env python3
"""How NVRTC scales on this machine's cores: the same hub convolution configurations compiled on
N threads of one process, and in N processes. Tells whether ktune's in-process compile pool leaves
rate on the table. Usage: compile_scaling.py KERNEL.cu [N] [COUNT]"""
import ctypes
import itertools
import multiprocessing as mp
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

src_path = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else os.cpu_count()
count = int(sys.argv[3]) if len(sys.argv) > 3 else 32
src = open(src_path, "rb").read()
configs = list(itertools.product([16, 32, 48, 64], [2, 4], [1, 2, 3, 4], [1, 2]))[:count]


def lib():
    for name in ("libnvrtc.so", "libnvrtc.so.13"):
        for d in ("/usr/local/cuda/lib64", ""):
            try:
                return ctypes.CDLL(os.path.join(d, name) if d else name)
            except OSError:
                pass
    raise SystemExit("libnvrtc not found")


def compile_one(cfg):
    nv = lib()
    bx, by, tx, ty = cfg
    opts = [b"-arch=sm_90"] + [f"-D{k}={v}".encode() for k, v in (
        ("block_size_x", bx), ("block_size_y", by), ("tile_size_x", tx), ("tile_size_y", ty),
        ("read_only", 1), ("use_padding", 0), ("use_shmem", 1), ("use_cmem", 1),
        ("filter_height", 15), ("filter_width", 15), ("image_height", 4096), ("image_width", 4096))]
    prog = ctypes.c_void_p()
    t0 = time.perf_counter()
    nv.nvrtcCreateProgram(ctypes.byref(prog), src, b"k.cu", 0, None, None)
    arr = (ctypes.c_char_p * len(opts))(*opts)
    rc = nv.nvrtcCompileProgram(prog, len(opts), arr)
    dt = time.perf_counter() - t0
    nv.nvrtcDestroyProgram(ctypes.byref(prog))
    return rc, dt


def run(kind, workers):
    t0 = time.perf_counter()
    if kind == "threads":
        with ThreadPoolExecutor(workers) as ex:
            res = list(ex.map(compile_one, configs))
    else:
        with mp.get_context("fork").Pool(workers) as pool:
            res = pool.map(compile_one, configs, chunksize=1)
    wall = time.perf_counter() - t0
    per = sum(d for _, d in res) / len(res)
    bad = sum(1 for rc, _ in res if rc != 0)
    print(f"{kind:9s} x{workers:<3d} {len(res)} binaries in {wall:6.2f} s: {len(res)/wall:5.2f}/s, "
          f"{per:5.2f} s per binary, {bad} failed", flush=True)


run("threads", 1) if count <= 8 else None
run("threads", n)
run("processes", n)

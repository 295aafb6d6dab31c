"""A stand-in for the parts of PyTorch ktune.torch touches, so the router's choice logic (which
problem a call is, which key, routed or passed) runs on a machine with no GPU and no PyTorch.
Installed as sys.modules["torch"] by install() before ktune.torch is imported."""

import sys
import types


class DType:
    def __init__(self, name, size):
        self.name, self.itemsize = name, size

    def __repr__(self):
        return f"torch.{self.name}"


float16, bfloat16, float32, float64, uint8 = (DType("float16", 2), DType("bfloat16", 2),
                                              DType("float32", 4), DType("float64", 8),
                                              DType("uint8", 1))


class Tensor:
    """Shape, strides (elements), dtype and a data pointer: what the router reads."""

    def __init__(self, shape, dtype=bfloat16, strides=None, ptr=1 << 20):
        self.shape = tuple(shape)
        if strides is None:
            strides, s = [], 1
            for d in reversed(self.shape):
                strides.insert(0, s)
                s *= max(d, 1)
        self._strides = tuple(strides)
        self.dtype = dtype
        self._ptr = ptr
        self.device = types.SimpleNamespace(index=0, type="cuda")

    def dim(self):
        return len(self.shape)

    def stride(self, i=None):
        return self._strides if i is None else self._strides[i]

    def data_ptr(self):
        return self._ptr

    def t(self):
        return Tensor(self.shape[::-1], self.dtype, self._strides[::-1], self._ptr)

    def transpose(self, i, j):
        shape, strides = list(self.shape), list(self._strides)
        shape[i], shape[j] = shape[j], shape[i]
        strides[i], strides[j] = strides[j], strides[i]
        return Tensor(shape, self.dtype, strides, self._ptr)

    def expand(self, shape):
        return Tensor(shape, self.dtype, None, self._ptr)

    def contiguous(self):
        return self

    def clone(self):
        return Tensor(self.shape, self.dtype, None, self._ptr + 4096)

    def numel(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    def new_empty(self, shape):
        return empty(shape, self.dtype)

    def get_device(self):
        return 0

    def __getitem__(self, i):
        return Tensor(self.shape[1:], self.dtype, self._strides[1:], self._ptr)


calls = []  # what reached "PyTorch's own kernel": (op, shapes)


def empty(shape, dtype=None, device=None):
    return Tensor(shape if isinstance(shape, tuple) else (shape,), dtype or float32, ptr=2 << 20)


def _out_kernel(name):
    def run(*args, out=None, **kwargs):
        calls.append((name, tuple(a.shape for a in args if isinstance(a, Tensor))))
        return out
    return run


class Library:
    registered = []  # (op, key) of every live override

    def __init__(self, ns, kind):
        self.mine = []

    def impl(self, name, fn, key):
        self.mine.append((name, key))
        Library.registered.append((name, key))

    def _destroy(self):
        for x in self.mine:
            Library.registered.remove(x)
        self.mine = []


def install():
    torch = types.ModuleType("torch")
    torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.uint8 = (
        float16, bfloat16, float32, float64, uint8)
    torch.Tensor = Tensor
    torch.empty = empty
    torch.device = lambda kind, index=0: types.SimpleNamespace(type=kind, index=index)
    torch.backends = types.SimpleNamespace(
        cuda=types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=False)))
    torch.library = types.SimpleNamespace(Library=Library)
    torch.cuda = types.SimpleNamespace(
        is_available=lambda: False, current_device=lambda: 0,
        current_stream=lambda device=None: types.SimpleNamespace(cuda_stream=7))
    for n in ("mm", "bmm", "addmm", "baddbmm"):
        setattr(torch, n, _out_kernel(n))
    torch.ops = types.SimpleNamespace(aten=types.SimpleNamespace(
        _addmm_activation=types.SimpleNamespace(out=_out_kernel("_addmm_activation"))))
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda index: 7)
    sys.modules["torch"] = torch
    return torch

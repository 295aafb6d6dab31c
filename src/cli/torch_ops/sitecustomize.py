# ktune profile --ops puts this folder first on PYTHONPATH, so Python runs this file at start-up,
# before the program. It leaves the program untouched: once the program imports torch, it turns
# on PyTorch's NVTX op ranges (what torch.autograd.profiler.emit_nvtx does, without shapes), so
# each op's kernels are launched inside a range named after the op and ktune's tracer, which
# records NVTX ranges, can name each kernel's op. Then it runs the user's own sitecustomize, if
# there is one further along the path. It never raises: a torch it cannot drive gets one line on
# stderr and the program runs as it would have.
import importlib.abc
import importlib.util
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _warn(why):
    sys.stderr.write(
        f"ktune: --ops could not turn on PyTorch's NVTX op ranges ({why}); kernels will name "
        "no op.\n")


def _enable_op_ranges(torch):
    # emit_nvtx().__enter__ would first synchronize the GPU, creating a CUDA context as torch is
    # imported; the profiler's own entry points below are what it calls next, without that.
    try:
        p = torch.autograd.profiler
        config = p.ProfilerConfig(p.ProfilerState.NVTX, False, False, False, False, False,
                                  p._ExperimentalConfig())
        start = getattr(p, "_run_on_profiler_start", None)
        if start is not None:
            start()
        p._enable_profiler(config, set())
    except Exception as e:  # noqa: BLE001 - any failure leaves the program as it was
        _warn(f"{type(e).__name__}: {e}")


class _TorchImportWatch(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when `torch` is first imported, wraps its loader so that the op
    ranges are turned on right after torch's own module has run."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)  # once; the lookup below must not find this finder again
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def run_then_enable(module):
            run(module)
            _enable_op_ranges(module)

        spec.loader.exec_module = run_then_enable
        return spec


def _run_user_sitecustomize():
    for entry in sys.path:
        folder = os.path.abspath(entry or os.curdir)
        candidate = os.path.join(folder, "sitecustomize.py")
        if folder == _HERE or not os.path.isfile(candidate):
            continue
        spec = importlib.util.spec_from_file_location("_ktune_user_sitecustomize", candidate)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # the user's errors are the user's, as without ktune
        return


if os.environ.get("KTUNE_TRACE_OPS") == "1":
    if "torch" in sys.modules:
        _enable_op_ranges(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _TorchImportWatch())
_run_user_sitecustomize()

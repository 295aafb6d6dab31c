"""A drop-in for `triton.autotune` whose winners live in ktune's store, shared by every process and,
on a PostgreSQL store, every machine:

    @ktune.triton.autotune(configs=[triton.Config(...), ...], key=["M", "N", "K"])
    @triton.jit
    def matmul_kernel(...): ...

Before benchmarking, the decorator looks up the store under a key made of the kernel's source hash
and name (op), the tensor arguments' dtypes (dtype), the integer key arguments bucketed by a store
bucket policy (bucket, pow2 by default), and the GPU's arch, name, toolkit + Triton version and
driver. A hit launches the cached config with no benchmarking; a miss benchmarks every config as
Triton does (triton.testing.do_bench) and writes the winner back. Triton is imported only when a
kernel is first launched.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import socket
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import _db
from . import _native as _ktune

SCHEMA_NOTE = "triton-autotune"  # the provenance strategy of the entries this module writes

# Filled on first use; tests (which have no GPU and no Triton) replace it.
_env_cache: Optional[dict] = None


def _environment() -> dict:
    """arch, device_name, toolkit (CUDA toolkit + Triton version) and driver_major of GPU 0."""
    global _env_cache
    if _env_cache is None:
        import triton  # noqa: PLC0415 (lazy: importing ktune must not need Triton)

        env = json.loads(_ktune.detect_environment())
        env["toolkit"] = f"{env['toolkit']}+triton-{triton.__version__}"
        _env_cache = env
    return _env_cache


def _config_kwargs(config: Any) -> Dict[str, Any]:
    """Everything a Triton config sets (meta-parameters, warps, stages, ...), as JSON values."""
    if hasattr(config, "all_kwargs"):
        kw = dict(config.all_kwargs())
    else:  # older Triton
        kw = dict(config.kwargs)
        for name in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
            if getattr(config, name, None) is not None:
                kw[name] = getattr(config, name)
    return {k: v for k, v in kw.items() if v is None or isinstance(v, (bool, int, float, str))}


def source_hash(fn: Any) -> str:
    """Hash of the kernel's source text: an edited kernel never reuses an old winner."""
    src = getattr(fn, "src", None)
    if src is None:
        import inspect  # noqa: PLC0415

        src = inspect.getsource(getattr(fn, "fn", fn))
    return hashlib.sha256(src.encode()).hexdigest()[:16]


def _policy_json(bucket: Any) -> str:
    if isinstance(bucket, str):
        if bucket not in ("pow2", "exact"):
            raise ValueError(
                f"ktune.triton.autotune(bucket={bucket!r}): use 'pow2', 'exact' or a bucket "
                'policy dict such as {"dims": [{"kind": "multiple", "multiple": 128}]}.'
            )
        return json.dumps({"dims": [{"kind": bucket}]})
    return json.dumps(bucket)


class Autotuner:
    """What `ktune.triton.autotune(...)(fn)` returns: launched as `kernel[grid](...)` or
    `kernel.run(..., grid=grid)` like Triton's autotuner."""

    def __init__(
        self,
        fn: Any,
        configs: Sequence[Any],
        key: Sequence[str],
        reset_to_zero: Optional[Sequence[str]] = None,
        restore_value: Optional[Sequence[str]] = None,
        pre_hook: Optional[Callable] = None,
        post_hook: Optional[Callable] = None,
        prune_configs_by: Optional[dict] = None,
        warmup: Optional[int] = None,
        rep: Optional[int] = None,
        do_bench: Optional[Callable] = None,
        db: Optional[str] = None,
        bucket: Any = "pow2",
    ) -> None:
        if not configs:
            raise ValueError("ktune.triton.autotune needs at least one config.")
        self.fn = fn
        self.arg_names: List[str] = list(getattr(fn, "arg_names"))
        missing = [k for k in key if k not in self.arg_names]
        if missing:
            raise ValueError(
                f"ktune.triton.autotune(key=...): {missing} are not arguments of "
                f"{self.name}; its arguments are {self.arg_names}."
            )
        self.configs = list(configs)
        self.keys = list(key)
        self.reset_to_zero = list(reset_to_zero or [])
        self.restore_value = list(restore_value or [])
        self.pre_hook, self.post_hook = pre_hook, post_hook
        self.early_prune = (prune_configs_by or {}).get("early_config_prune")
        self.warmup, self.rep = warmup, rep
        self._do_bench = do_bench
        self.db = db
        self.policy_json = _policy_json(bucket)
        self.op = f"triton/{self.name}@{source_hash(fn)}"
        self.best_config: Any = None
        self._memo: Dict[tuple, Any] = {}  # exact key -> config, this process
        # What the last launch did, for callers and tests: "memo", "cache" or "benchmark".
        self.last_source = ""
        self.last_tuning_s = 0.0
        self.bench_times_ms: Dict[int, float] = {}

    @property
    def name(self) -> str:
        inner = getattr(self.fn, "fn", None)
        return getattr(self.fn, "__name__", None) or getattr(inner, "__name__", "kernel")

    # --- keying ---
    def cache_key(self, named: Dict[str, Any]) -> dict:
        """The store key of one launch: the shape is the positive integer key arguments; other
        key values and the tensor arguments' dtypes are part of the dtype field (exact)."""
        shape: List[int] = []
        exact: List[str] = []
        for k in self.keys:
            v = named[k]
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                shape.append(v)
            else:
                exact.append(f"{k}={getattr(v, 'dtype', v)}")
        dtypes = [str(v.dtype).replace("torch.", "") for v in named.values() if hasattr(v, "dtype")]
        env = _environment()
        return {
            "op": self.op,
            "dtype": ",".join(dtypes + exact) or "none",
            "shape": shape or [1],
            "bucket": _ktune.bucket_name(self.policy_json, shape or [1]),
            "arch": env["arch"],
            "device_name": env["device_name"],
            "toolkit": env["toolkit"],
            "driver_major": int(env.get("driver_major", 0)),
        }

    def _config_of(self, cached: Dict[str, Any]) -> Any:
        for c in self.configs:
            if _config_kwargs(c) == cached:
                return c
        return None  # tuned over another config list: benchmark again

    # --- the store ---
    def _lookup(self, key: dict) -> Any:
        store_key = {k: v for k, v in key.items() if k != "shape"}
        try:
            text = _ktune.get_entry_json(_db(self.db), json.dumps(store_key))
        except _ktune.Error as e:
            warnings.warn(f"ktune: the tuning cache could not be read ({e}); benchmarking instead.")
            return None
        entry = json.loads(text)
        if entry is None or entry.get("invalidated_at"):
            return None
        return self._config_of(entry["config"])

    def _store(self, key: dict, config: Any, median_ms: float, noise_ms: float) -> None:
        from . import __version__  # noqa: PLC0415

        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        entry = {
            **key,  # op, dtype, bucket, arch, device_name, toolkit, driver_major and shape
            "config": _config_kwargs(config),
            "median_ns": median_ms * 1e6,
            "noise_ns": noise_ms * 1e6,
            "samples": 1,
            "throughput": 0.0,
            "throughput_unit": "flop/s",
            "verification": "skipped",  # Triton's autotuner does not verify configs either
            "provenance": {
                "ktune_version": __version__.split(" ")[0],
                "ktune_commit": "",
                "host": socket.gethostname(),
                "created_at": now,
                "strategy": SCHEMA_NOTE,
                "budget": {"evaluations": len(self.bench_times_ms)},
            },
        }
        try:
            _ktune.put_op(_db(self.db), self.op, self.policy_json)
            _ktune.put_entry_json(_db(self.db), json.dumps(entry))
        except _ktune.Error as e:
            warnings.warn(f"ktune: the tuning result could not be stored ({e}); it holds for this "
                          "process only.")

    # --- benchmarking, as Triton's autotuner does it ---
    def _bench_one(self, args: tuple, kwargs: dict, named: dict, config: Any) -> List[float]:
        chosen = config.all_kwargs() if hasattr(config, "all_kwargs") else config.kwargs
        full = {**named, **chosen}

        def call() -> None:
            for name in self.reset_to_zero:
                full[name].zero_()
            if self.pre_hook:
                self.pre_hook(full)
            self.fn.run(*args, **kwargs, **_launch_kwargs(config))
            if self.post_hook:
                self.post_hook(full, exception=None)

        saved = {n: named[n].clone() for n in self.restore_value}
        try:
            bench = self._do_bench or _triton_do_bench(self.warmup, self.rep)
            result = bench(call, quantiles=(0.5, 0.2, 0.8))
        finally:
            for n, v in saved.items():
                named[n].copy_(v)
        return list(result) if isinstance(result, (list, tuple)) else [float(result)] * 3

    def _tune(self, args: tuple, kwargs: dict, named: dict) -> tuple:
        configs = self.configs
        if self.early_prune:
            configs = self.early_prune(configs, named)
        self.bench_times_ms = {}
        best, best_q = None, [math.inf] * 3
        for i, c in enumerate(configs):
            try:
                q = self._bench_one(args, kwargs, named, c)
            except Exception:  # noqa: BLE001 (a config that cannot run is a failed candidate)
                q = [math.inf] * 3
            self.bench_times_ms[i] = q[0]
            if q[0] < best_q[0]:
                best, best_q = c, q
        if best is None:
            raise RuntimeError(f"ktune.triton.autotune: no config of {self.name} ran.")
        return best, best_q[0], max(0.0, (best_q[2] - best_q[1]) / 2)

    # --- launching ---
    def run(self, *args: Any, **kwargs: Any) -> Any:
        named = dict(zip(self.arg_names, args))
        named.update({k: v for k, v in kwargs.items() if k in self.arg_names})
        t0 = time.perf_counter()
        exact = tuple(named[k] for k in self.keys) + tuple(
            str(v.dtype) for v in named.values() if hasattr(v, "dtype")
        )
        config = self._memo.get(exact)
        self.last_source = "memo"
        if config is None:
            key = self.cache_key(named)
            config = self._lookup(key)
            self.last_source = "cache"
            if config is None:
                config, median_ms, noise_ms = self._tune(args, kwargs, named)
                self.last_source = "benchmark"
                self._store(key, config, median_ms, noise_ms)
            self._memo[exact] = config
        self.last_tuning_s = time.perf_counter() - t0
        self.best_config = config
        return self.fn.run(*args, **kwargs, **_launch_kwargs(config))

    def __getitem__(self, grid: Any) -> Callable:
        return lambda *args, **kwargs: self.run(*args, grid=grid, warmup=False, **kwargs)


def _launch_kwargs(config: Any) -> Dict[str, Any]:
    if hasattr(config, "all_kwargs"):
        return dict(config.all_kwargs())
    kw = dict(config.kwargs)
    kw.update(num_warps=config.num_warps, num_stages=config.num_stages)
    return kw


def _triton_do_bench(warmup: Optional[int], rep: Optional[int]) -> Callable:
    from triton.testing import do_bench  # noqa: PLC0415

    def bench(fn: Callable, quantiles: Sequence[float]) -> Any:
        kw = {}
        if warmup is not None:
            kw["warmup"] = warmup
        if rep is not None:
            kw["rep"] = rep
        return do_bench(fn, quantiles=list(quantiles), **kw)

    return bench


def autotune(
    configs: Sequence[Any],
    key: Sequence[str],
    prune_configs_by: Optional[dict] = None,
    reset_to_zero: Optional[Sequence[str]] = None,
    restore_value: Optional[Sequence[str]] = None,
    pre_hook: Optional[Callable] = None,
    post_hook: Optional[Callable] = None,
    warmup: Optional[int] = None,
    rep: Optional[int] = None,
    do_bench: Optional[Callable] = None,
    db: Optional[str] = None,
    bucket: Any = "pow2",
    **ignored: Any,
) -> Callable[[Any], Autotuner]:
    """`triton.autotune`'s arguments, plus db (a store path or postgresql:// URL; default: KTUNE_DB,
    else the embedded store) and bucket ('pow2', 'exact' or a store bucket policy)."""
    unknown = set(ignored) - {"use_cuda_graph", "cache_results"}
    if unknown:
        raise TypeError(f"ktune.triton.autotune got unexpected arguments {sorted(unknown)}.")

    def decorator(fn: Any) -> Autotuner:
        return Autotuner(fn, configs, key, reset_to_zero, restore_value, pre_hook, post_hook,
                         prune_configs_by, warmup, rep, do_bench, db, bucket)

    return decorator


__all__ = ["Autotuner", "autotune", "source_hash"]

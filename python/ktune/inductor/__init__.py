"""torch.compile's Triton kernels, tuned once for the fleet and used everywhere.

    import ktune.inductor
    ktune.inductor.use()          # before the first call of a torch.compile'd function
    model = torch.compile(model)

use() reads this GPU's winners of Inductor kernels from ktune's store and hands them to Inductor
through its own extension point, `torch._inductor.config.autotune_lookup_table` (keyed by the
kernel's source and size hints): a kernel with a winner is compiled with that one configuration
and never benchmarked, in every process and on every rank that shares the store. A winner is
served only under the PyTorch and Triton versions it was measured with (they are part of its key);
after an upgrade it is reported as stale and Inductor tunes as it would without ktune, until the
kernel is tuned again (`ktune queue from-backlog` of a new profile).

The commands (`python -m ktune.inductor ...`):
    scan DIR                   the Triton kernels Inductor wrote under DIR, as JSON (ktune profile)
    serve KERNEL.py            the measuring program of a tuning session (ktune tune, ktune worker)
    prove WORKLOAD.py          the program compiled three ways, side by side (prove.py)
"""

from __future__ import annotations

import json
from typing import Dict, Optional

from .. import _db, environment
from .. import _native as _ktune

OP_PREFIX = "inductor:"
_CONFIG_KEYS = ("num_warps", "num_stages")


def toolkit(base: str, versions: Dict[str, Optional[str]]) -> str:
    """An Inductor winner's toolkit in its key: CUDA toolkit, Triton and PyTorch versions."""
    return f"{base}+triton-{versions.get('triton')}+torch-{versions.get('torch')}"


def winners(db: Optional[str] = None, env: Optional[dict] = None,
            versions: Optional[Dict[str, Optional[str]]] = None) -> dict:
    """{"table": {lookup_hash: config}, "stale": [entries of this GPU under other versions]}."""
    from .scan import versions as current  # noqa: PLC0415

    env = env or environment()
    want = toolkit(env["toolkit"], versions or current())
    entries = json.loads(_ktune.list_entries_json(_db(db), "", env["arch"], env["device_name"]))
    table: Dict[str, dict] = {}
    stale = []
    for e in entries:
        op = e.get("op", "")
        if not op.startswith(OP_PREFIX) or e.get("invalidated_at"):
            continue
        config = {k: v for k, v in (e.get("config") or {}).items()
                  if "BLOCK" in k or k in _CONFIG_KEYS}
        if e.get("toolkit") == want and "num_warps" in config and "num_stages" in config:
            table[op[len(OP_PREFIX):]] = config
        else:
            stale.append({"op": op, "toolkit": e.get("toolkit")})
    return {"table": table, "stale": stale}


def use(db: Optional[str] = None) -> dict:
    """Serve this GPU's winners to Inductor in this process; returns {"served", "stale"}."""
    import torch._inductor.config as inductor_config  # noqa: PLC0415

    found = winners(db)
    inductor_config.autotune_lookup_table.update(found["table"])
    return {"served": len(found["table"]), "stale": len(found["stale"])}

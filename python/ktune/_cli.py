"""The `ktune` command of an installed package: runs the ktune binary that the wheel carries.

`pip install .` puts the binary at ktune/bin/ktune, with its tracer in ktune/lib and its data in
ktune/share/ktune (the layout of any installed ktune, where the binary looks for them), and this
module's main() on PATH as `ktune` (pyproject.toml, [project.scripts]); `python -m ktune` is the
same. In a build tree (PYTHONPATH=build/python) it runs the binary of the same build.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional, Sequence

BINARY_NAME = "ktune"


def binary_path(package_dir: Optional[Path] = None, tracer_build_path: str = "") -> Path:
    """The ktune binary to run: KTUNE_CLI when set, else the one the package carries
    (package_dir/bin/ktune), else the build tree's, beside its tracer (tracer_build_path).
    FileNotFoundError with one sentence when there is none."""
    named = os.environ.get("KTUNE_CLI")
    if named:
        if not os.path.isfile(named):
            raise FileNotFoundError(
                f"KTUNE_CLI={named} is not a file; point it at a ktune binary or unset it."
            )
        return Path(named)
    package_dir = package_dir or Path(__file__).resolve().parent
    candidates = [package_dir / "bin" / BINARY_NAME]
    if tracer_build_path:
        candidates.append(Path(tracer_build_path).with_name(BINARY_NAME))
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError(
        "the ktune binary was not found (looked at "
        + ", ".join(str(p) for p in candidates)
        + "); reinstall the package with `pip install .`, build the ktune target, or set "
        "KTUNE_CLI to a ktune binary."
    )


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Replaces this process with the ktune binary and the given arguments (sys.argv's by
    default); returns 2 with one sentence when there is no binary to run."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        from . import _native

        build_tracer = _native.TRACER_BUILD_PATH
    except ImportError:  # the binary does not need the package's library
        build_tracer = ""
    try:
        path = binary_path(tracer_build_path=build_tracer)
    except FileNotFoundError as e:
        print(f"ktune: {e}", file=sys.stderr)
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, [BINARY_NAME, *args])
    return 0  # not reached: execv replaces the process or raises OSError


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""scripts/check_layering.py on copies of the tree: it passes the tree as it is, and fails on a
planted wrong-way include, a same-row include and a module folder the table does not list."""
import pathlib
import shutil
import subprocess
import sys
import tempfile

SOURCE = pathlib.Path(sys.argv[1]).resolve()
CHECK = SOURCE / "scripts" / "check_layering.py"


def copy_tree(dest):
    for part in ("src", "include"):
        shutil.copytree(SOURCE / part, dest / part)
    (dest / "docs").mkdir()
    shutil.copy(SOURCE / "docs" / "CONTRIBUTING.md", dest / "docs")


def run(root):
    r = subprocess.run([sys.executable, str(CHECK), "--root", str(root)], capture_output=True,
                       text=True)
    return r.returncode, r.stdout + r.stderr


def plant(root, relative, line):
    path = root / relative
    path.write_text(path.read_text() + "\n" + line + "\n")
    return len(path.read_text().splitlines())


failures = []


def expect(cond, what, output):
    if not cond:
        failures.append(f"{what}\n{output}")


with tempfile.TemporaryDirectory() as tmp:
    root = pathlib.Path(tmp) / "tree"
    copy_tree(root)
    code, out = run(root)
    expect(code == 0, "the tree as it is passes", out)

    # core, the bottom row, reaching up into cli.
    n = plant(root, "include/ktune/core/error.hpp", '#include "ktune/cli/command.hpp"')
    code, out = run(root)
    expect(code == 1, "a wrong-way include fails", out)
    expect(f"include/ktune/core/error.hpp:{n}: core (row 6) includes cli (row 1)" in out,
           "the message names the file, line and both rows", out)

with tempfile.TemporaryDirectory() as tmp:
    root = pathlib.Path(tmp) / "tree"
    copy_tree(root)
    plant(root, "src/tune/strategy.cpp", "#include <ktune/analyze/analysis.hpp>")
    code, out = run(root)
    expect(code == 1 and "tune (row 3) includes analyze (row 3)" in out,
           "an include within one row fails", out)

with tempfile.TemporaryDirectory() as tmp:
    root = pathlib.Path(tmp) / "tree"
    copy_tree(root)
    plant(root, "src/gate/gate.cpp", '#include "ktune/core/error.hpp"')
    (root / "src" / "extras").mkdir()
    code, out = run(root)
    expect(code == 1 and "module 'extras' has no row" in out,
           "a module folder without a row fails", out)
    expect("src/gate/gate.cpp" not in out, "a downward include passes", out)

for f in failures:
    print("FAILED:", f)
sys.exit(1 if failures else 0)

#!/usr/bin/env python3
"""Checks ktune's includes against the layering table of docs/CONTRIBUTING.md.

Every `#include "ktune/<module>/..."` (or <ktune/<module>/...>) in src/<m>/ and include/ktune/<m>/
must name m itself or a module of a row below m's. Exit 0 when the tree keeps the table; 1 with one
line a wrong-way include (file:line, what, the fix); 2 when the table cannot be read.

usage: check_layering.py [--root DIR]   (default: the checkout holding this script)
"""
import argparse
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]ktune/([A-Za-z0-9_]+)/')
SOURCES = {".cpp", ".hpp", ".h", ".cu", ".cuh", ".inl"}


def read_table(doc):
    """Row of each module, 1 = top, from the rows between the layering markers."""
    text = doc.read_text()
    try:
        body = text.split("<!-- layering: begin -->", 1)[1].split("<!-- layering: end -->", 1)[0]
    except IndexError:
        print(f"{doc}: no layering table (<!-- layering: begin --> ... end -->); restore it.",
              file=sys.stderr)
        sys.exit(2)
    rows = {}
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].isdigit():
            continue
        for module in cells[1].split(","):
            rows[module.strip()] = int(cells[0])
    if not rows:
        print(f"{doc}: the layering table has no rows.", file=sys.stderr)
        sys.exit(2)
    return rows


def module_dirs(root):
    """(module, folder) for every module folder of the tree."""
    for parent in (root / "src", root / "include" / "ktune"):
        if parent.is_dir():
            for d in sorted(parent.iterdir()):
                if d.is_dir():
                    yield d.name, d


def check(root):
    doc = root / "docs" / "CONTRIBUTING.md"
    rows = read_table(doc)
    problems = []
    for module, folder in module_dirs(root):
        if module not in rows:
            problems.append(f"{folder.relative_to(root)}: module '{module}' has no row in the "
                            f"layering table of {doc.relative_to(root)}; add it there.")
            continue
        for path in sorted(folder.rglob("*")):
            if path.suffix not in SOURCES or not path.is_file():
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                m = INCLUDE.match(line)
                if not m or m.group(1) == module:
                    continue
                used = m.group(1)
                if used not in rows:
                    problems.append(f"{path.relative_to(root)}:{number}: includes module '{used}', "
                                    "which the layering table does not list; add its row or fix "
                                    "the include.")
                elif rows[used] <= rows[module]:
                    problems.append(
                        f"{path.relative_to(root)}:{number}: {module} (row {rows[module]}) "
                        f"includes {used} (row {rows[used]}), which is not below it; move the "
                        f"code down, or have {used} declare an interface that {module} "
                        "implements.")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parent.parent)
    root = parser.parse_args().root.resolve()
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"layering: {len(problems)} include(s) against docs/CONTRIBUTING.md's table")
        return 1
    print("layering: every include follows docs/CONTRIBUTING.md's table")
    return 0


if __name__ == "__main__":
    sys.exit(main())

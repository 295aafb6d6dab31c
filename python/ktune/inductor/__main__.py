"""python -m ktune.inductor scan DIR | serve KERNEL.py [--cuda-graph] | prove WORKLOAD.py [...]"""

import json
import sys

USAGE = ("usage: python -m ktune.inductor scan DIR | serve KERNEL.py [--cuda-graph] | "
         "prove WORKLOAD.py[:make_step] [options]")


def main(argv) -> int:
    if not argv or argv[0] not in ("scan", "serve", "prove"):
        print(USAGE, file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    if command == "scan":
        from .scan import ScanError, scan  # noqa: PLC0415

        if len(rest) != 1:
            print("ktune.inductor scan: give one directory (a TORCHINDUCTOR_CACHE_DIR).",
                  file=sys.stderr)
            return 2
        try:
            print(json.dumps(scan(rest[0]), indent=1))
        except ScanError as e:
            print(f"ktune.inductor scan: {e}", file=sys.stderr)
            return 2
        return 0
    if command == "serve":
        from .serve import main as serve  # noqa: PLC0415

        return serve(rest)
    from .prove import main as prove  # noqa: PLC0415

    return prove(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

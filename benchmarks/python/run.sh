#!/usr/bin/env bash
# GPU tier entry (scripts/gpu-tier.sh runs benchmarks/*/run.sh BUNDLE OUT): the Python package's
# Triton autotune cache and cuBLASLt GEMMs in PyTorch, scripts/gpu-python.sh.
exec "$(cd "$(dirname "$0")/../.." && pwd)/scripts/gpu-python.sh" "$@"

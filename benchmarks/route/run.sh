#!/usr/bin/env bash
# GPU tier entry (scripts/gpu-tier.sh runs benchmarks/*/run.sh BUNDLE OUT): the GEMM router's host
# cost, the loop on training and inference programs, whole-program A/B, winner stability.
exec "$(cd "$(dirname "$0")/../.." && pwd)/scripts/gpu-route.sh" "$@"

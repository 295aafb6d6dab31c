#!/usr/bin/env bash
# Installs ktune's build and test dependencies from Debian's packages (needs root; no-op otherwise
# when everything is already there). The README lists each package and why it is used.
set -euo pipefail
PACKAGES=(cmake ninja-build g++ git pkg-config
          nlohmann-json3-dev libcli11-dev libfmt-dev libsqlite3-dev libpq-dev
          libgtest-dev libgmock-dev zlib1g-dev postgresql clang-format python3
          libtomlplusplus-dev          # gate suite files (TOML)
          clang-14 libclang-rt-14-dev  # clang + libFuzzer: scripts/fuzz.sh
          chromium-headless-shell)     # renders the HTML report's roofline in report_tests
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The Python package's CPU tests run under pytest (ctest: python_tests), installed with pip when
# the interpreter that CMake finds first (python3 on PATH) lacks it.
if ! python3 -c 'import pytest' 2>/dev/null; then
  python3 -m pip install -q pytest || echo "ktune: pip could not install pytest; python_tests will fail" >&2
fi
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "ktune: missing packages: ${missing[*]}; install them with: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

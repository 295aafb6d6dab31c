#!/usr/bin/env bash
# Installs ktune's build and test dependencies from Debian's packages (needs root; no-op otherwise
# when everything is already there), and checks for the CUDA toolkit, which the build needs even
# on a machine with no GPU (headers, NVRTC, CUPTI, cuBLASLt; the driver is not needed).
# docs/CONTRIBUTING.md ("Dependencies") lists each package and why it is used.
set -euo pipefail

# The CUDA toolkit (12.0 or newer) is NVIDIA's, not Debian's: checked here, named if missing.
cuda_found() {
  local root
  for root in "${CUDAToolkit_ROOT:-}" "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
    [ -n "$root" ] && [ -f "$root/include/nvrtc.h" ] && [ -f "$root/include/cupti.h" ] && return 0
  done
  command -v nvcc >/dev/null 2>&1 && [ -f "$(dirname "$(command -v nvcc)")/../include/nvrtc.h" ]
}
if ! cuda_found; then
  . /etc/os-release 2>/dev/null || true
  distro="${ID:-ubuntu}$(echo "${VERSION_ID:-24.04}" | tr -d .)"
  echo "ktune: the CUDA toolkit (12.0 or newer: nvrtc.h, cupti.h, cuBLASLt) was not found in" \
       "/usr/local/cuda, \$CUDAToolkit_ROOT or beside nvcc; it is needed to build, even without a" \
       "GPU. Install it from NVIDIA's repository:" \
       "wget https://developer.download.nvidia.com/compute/cuda/repos/$distro/x86_64/cuda-keyring_1.1-1_all.deb" \
       "&& sudo dpkg -i cuda-keyring_1.1-1_all.deb && sudo apt-get update &&" \
       "sudo apt-get install cuda-toolkit-13-0 (or set CUDAToolkit_ROOT to an installed one)." >&2
  exit 1
fi
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
# The Python package's CPU tests run under pytest (ctest: python_tests) and scripts/test.sh lints
# the Python with ruff; both installed with pip when the interpreter that CMake finds first (python3
# on PATH) lacks them.
if ! python3 -c 'import pytest' 2>/dev/null; then
  python3 -m pip install -q pytest || echo "ktune: pip could not install pytest; python_tests will fail" >&2
fi
if ! python3 -m ruff --version >/dev/null 2>&1; then
  python3 -m pip install -q ruff || echo "ktune: pip could not install ruff; scripts/test.sh's lint will fail" >&2
fi
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "ktune: missing packages: ${missing[*]}; install them with: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

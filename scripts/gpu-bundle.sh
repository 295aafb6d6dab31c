#!/usr/bin/env bash
# Builds ktune here (Release, tests and benchmarks included) and stages the build tree, less its
# object files, in .gpu-carry/ with lib/ holding libpq (absent from the GPU image). On the GPU machine,
# scripts/gpu-mount.sh links it back at the path it was built in (its ctest files name that path).
# KTUNE_BUNDLE_FROM=DIR stages an existing build instead (e.g. the test build, which saves a second
# full build on a small machine; its host code is -O2 rather than -O3).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KTUNE_BUNDLE_FROM:-$root/build-gpu}
"$root/scripts/deps.sh"
if [ -z "${KTUNE_BUNDLE_FROM:-}" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
# KTUNE_BUNDLE_TARGETS: build only these (e.g. "ktune ktune_tracer trace_profile_tests") when a
# small machine must get a run's binaries out quickly; what else is staged is from the last build.
# shellcheck disable=SC2086  # one word per target
cmake --build "$build" -j"$(nproc)" ${KTUNE_BUNDLE_TARGETS:+--target $KTUNE_BUNDLE_TARGETS}
mkdir -p "$build/lib"
# libpq, the OpenLDAP 2.5 libraries it needs and toml++ are absent from the GPU image (Ubuntu 24.04 ships
# OpenLDAP 2.6); gpu-mount.sh puts them on LD_LIBRARY_PATH there.
for lib in libpq.so.5 libldap-2.5.so.0 liblber-2.5.so.0 libsasl2.so.2 libtomlplusplus.so.3; do
  cp -L "/usr/lib/x86_64-linux-gnu/$lib" "$build/lib/"
done
# The hub kernels the tuning benchmark reads (shared/ does not travel to the GPU machine).
rm -rf "$root/.hub"
[ -d "$root/../shared/kernels" ] && cp -r "$root/../shared/kernels" "$root/.hub"
rm -rf "$root/.gpu-carry"
cp -a "$build" "$root/.gpu-carry"
echo "$build" >"$root/.gpu-carry/build-path"
# The CTest files name this machine's Python (a pyenv shim, say), which the GPU machine lacks: its
# Python-driven tests were "Not Run" there (logs/2026-11-27-forest-fit.md). `python3` is found on
# PATH where they run.
py=$(sed -nE 's/^_?Python3_EXECUTABLE:[A-Z]+=//p' "$build/CMakeCache.txt" | head -n 1)
[ -n "$py" ] && find "$root/.gpu-carry" -name CTestTestfile.cmake \
  -exec sed -i "s|\"$py\"|\"python3\"|g" {} +
find "$root/.gpu-carry" \( -name CMakeFiles -o -name Testing \) -type d -prune -exec rm -rf {} +
find "$root/.gpu-carry" \( -name '*.a' -o -name '*.o' -o -name '.ninja*' \) -type f -delete
find "$root/.gpu-carry" -type f -perm -u+x ! -name '*.sh' -exec strip --strip-debug {} + 2>/dev/null || true
du -sh "$root/.gpu-carry"

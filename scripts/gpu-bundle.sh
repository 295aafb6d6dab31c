#!/usr/bin/env bash
# Builds ktune here (Release, tests and benchmarks included) and stages what the GPU tier needs in
# .gpu-carry/: bin/ (ktune, the tracer, benchmark programs), tests/ (GoogleTest binaries) and lib/
# (libpq, absent from the GPU image). Carry .gpu-carry to the GPU machine and run scripts/gpu-tier.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-gpu
bundle=$root/.gpu-carry
"$root/scripts/deps.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_BUILD_RPATH='$ORIGIN/../lib;$ORIGIN' \
  -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags -DCMAKE_SHARED_LINKER_FLAGS=-Wl,--disable-new-dtags >/dev/null
cmake --build "$build" -j"$(nproc)"
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/tests"
cp "$build/src/cli/ktune" "$bundle/bin/"
find "$build/src" -name 'libktune_tracer.so' -exec cp {} "$bundle/bin/" \;
find "$build/tests" -maxdepth 2 -type f -perm -u+x -name '*_tests' -exec cp {} "$bundle/tests/" \;
[ -d "$build/benchmarks" ] && find "$build/benchmarks" -maxdepth 3 -type f -perm -u+x ! -name '*.sh' \
  ! -path '*/CMakeFiles/*' -exec cp {} "$bundle/bin/" \;
# libpq and the libraries only it needs; everything else ktune links is on the GPU image.
for lib in libpq.so.5; do
  cp -L "/usr/lib/x86_64-linux-gnu/$lib" "$bundle/lib/"
done
strip --strip-debug "$bundle"/bin/* "$bundle"/tests/* 2>/dev/null || true
du -sh "$bundle"

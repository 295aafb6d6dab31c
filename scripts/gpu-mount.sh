# Sourced by the GPU scripts: `mount_bundle DIR` sets $bundle to a build tree usable on this
# machine. A bundle staged by scripts/gpu-bundle.sh (.gpu-carry) is linked back at the path it was
# built in (recorded in its build-path file), where its ctest files and RUNPATHs point, and its lib/
# (libpq and the OpenLDAP libraries it needs, absent from the GPU image) joins LD_LIBRARY_PATH.
mount_bundle() {
  local dir root here
  dir=$(cd "$1" && pwd)
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  bundle=$dir
  [ -f "$dir/build-path" ] || return 0
  local at; at=$(cat "$dir/build-path")
  root=$(dirname "$at")
  if [ "$here" != "$root" ]; then mkdir -p "$(dirname "$root")" && ln -sfn "$here" "$root"; fi
  [ "$(cd "$at" 2>/dev/null && pwd -P)" = "$(cd "$dir" && pwd -P)" ] || ln -sfn "$dir" "$at"
  bundle=$at
  export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

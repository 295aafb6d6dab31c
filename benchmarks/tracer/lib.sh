# Helpers shared by benchmarks/tracer/run.sh and variants.sh (sourced, not run).
calc() { awk "BEGIN { print $* }"; }
# field TEXT NAME: the value of NAME=value in TEXT (the last one).
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | tail -n1; }
# sql TRACE QUERY: the first column of the query's first row (python: $python, else python3).
sql() { "${python:-python3}" -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])" "$@"; }
med() { echo "$1" | tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# The GPU's NUMA-local CPUs, from sysfs through its PCI address (nvidia-smi's has 8 domain digits).
gpu_cpus() {
  local bus
  bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader -i 0 2>/dev/null | head -n1 | tr 'A-F' 'a-f')
  [ -n "$bus" ] && cat "/sys/bus/pci/devices/${bus#0000}/local_cpulist" 2>/dev/null
}
# Sets pin=(taskset -c CPUS) so that every run, plain or traced, lands on the same CPUs: the GPU's
# local ones, or BENCH_CPUS ('all': no pinning). Sets cpus_note for the log.
setup_pinning() {
  local cpus=${BENCH_CPUS:-$(gpu_cpus)}
  pin=()
  if [ "$cpus" != all ] && [ -n "$cpus" ] && command -v taskset >/dev/null; then pin=(taskset -c "$cpus"); fi
  cpus_note="CPUs ${cpus:-unknown} of $(nproc) (${pin[*]:-not pinned}); NUMA nodes $(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l)"
}
# build_tiny_loop OUT LOG: compiles tiny_loop.cu into OUT/tiny_loop for this GPU (any GPU, from
# PTX, when -arch=native is refused), compiler output to LOG; non-zero when nvcc fails.
build_tiny_loop() {
  local nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  local src
  src="$(dirname "${BASH_SOURCE[0]}")/tiny_loop.cu"
  "$nvcc" -O2 -arch=native -o "$1/tiny_loop" "$src" >>"$2" 2>&1 ||
    "$nvcc" -O2 -o "$1/tiny_loop" "$src" >>"$2" 2>&1
}
# run NAME CMD...: runs once (pinned), appends stdout+stderr to the log, records wall seconds in
# $wall and the program's stdout in $stdout.
run() {
  local name=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  stdout=$("${pin[@]}" "$@" 2>>"$log.err")
  local rc=$?
  t1=$(date +%s.%N)
  wall=$(calc "$t1 - $t0")
  echo "[$name] rc=$rc wall_s=$wall $stdout" >>"$log"
  return $rc
}
# rot N WORDS...: WORDS rotated left by N, so each mode takes every position in turn (the run just
# after a plain one was measured slower on the H100, whatever its mode).
rot() { local n=$1; shift; local a=("$@"); local k=$((n % ${#a[@]})); echo "${a[@]:k}" "${a[@]:0:k}"; }

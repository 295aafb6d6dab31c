# The gate's GPU benchmark set, for scripts/gpu-gate.sh (sourced, not run).
# One line per benchmark: NAME KIND MODE TARGET
#   KIND spec: TARGET is a T1 spec; KIND program: TARGET is a command printing samples_ns JSON.
# $kernels is the folder holding copy/, gemv/, l2_axpy/ (the code under test; gpu-gate.sh points
# it at a copy with a planted slowdown), $hub the benchmark hub's kernels (.hub/ on the GPU
# machine), $gemm the cuBLASLt program.
gate_benchmarks() {
  cat <<LIST
copy_f32 spec cold $kernels/copy/copy.json
copy_f32_hot spec hot $kernels/copy/copy.json
gemv_f16 spec cold $kernels/gemv/gemv.json
gemv_f16_hot spec hot $kernels/gemv/gemv.json
l2_axpy spec cold $kernels/l2_axpy/l2_axpy.json
hub_hotspot spec cold $hub/hotspot_milo.json
hub_convolution spec cold $hub/convolution_milo.json
cublaslt_gemm_4096 program cold $gemm 4096
LIST
}

# write_suite FILE [NVRTC_OPTION ...]: the benchmarks above as a gate suite (TOML).
write_suite() {
  local file=$1; shift
  {
    echo "schema_version = 1"
    echo "[gate]"
    echo "stop = \"${KTUNE_GATE_STOP:-min_gpu_time_s=0.2,timeout_s=5}\""
    if [ $# -gt 0 ]; then
      printf 'nvrtc_options = ['; local sep=""
      for o in "$@"; do printf '%s"%s"' "$sep" "$o"; sep=", "; done; echo "]"
    fi
    gate_benchmarks | while read -r name kind mode target rest; do
      echo; echo "[[benchmark]]"; echo "name = \"$name\""
      if [ "$kind" = spec ]; then
        echo "spec = \"$target\""; echo "mode = \"$mode\""
      else
        echo "command = [\"$target\"$( [ -n "$rest" ] && printf ', "%s"' $rest)]"
      fi
    done
  } >"$file"
}

// An fp16 GEMM (C = A B, fp32 accumulate, M = N = K = SIZE) through cuBLASLt, timed cold by the
// harness's stop rule as the gate's own runs are (StopSettings::distribution), printed as
// `ktune bench --json` prints a measurement (samples_ns): the gate suite's external-program
// benchmark and the library baseline in scripts/gpu-gate*.sh.
// Usage: ktune_gate_cublaslt [SIZE]   (default 4096)
#include <cublasLt.h>

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/bench/stop_rule.hpp"
#include "ktune/core/error.hpp"
#include "ktune/cuda/check.hpp"
#include "ktune/cuda/cublaslt.hpp"
#include "ktune/cuda/device_utils.hpp"
#include "ktune/cuda/driver.hpp"
#include "ktune/cuda/resources.hpp"

using namespace ktune;

namespace {

class CublasLtGemm : public bench::Sampler {
 public:
  CublasLtGemm(int size, CUstream s, cuda::L2Flusher& flusher)
      : n_(size),
        s_(s),
        flusher_(flusher),
        a_(std::size_t(size) * size * 2),
        b_(std::size_t(size) * size * 2),
        c_(std::size_t(size) * size * 2),
        ws_(32u << 20) {
    const std::size_t count = std::size_t(size) * size;
    cuda::fill_random(a_.get(), count, cuda::DType::f16, 11, s);
    cuda::fill_random(b_.get(), count, cuda::DType::f16, 12, s);
    KTUNE_CUBLAS(cublasLtCreate(&h_));
    KTUNE_CUBLAS(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    KTUNE_CUBLAS(cublasLtMatrixLayoutCreate(&l_, CUDA_R_16F, size, size, size));
    cublasLtMatmulPreference_t pref;
    KTUNE_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    const std::size_t ws_bytes = ws_.bytes();
    KTUNE_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
    int found = 0;
    KTUNE_CUBLAS(cublasLtMatmulAlgoGetHeuristic(h_, op_, l_, l_, l_, l_, pref, 1, &algo_, &found));
    cublasLtMatmulPreferenceDestroy(pref);
    if (found < 1) throw Error("cuBLASLt found no algorithm for the fp16 GEMM.");
  }
  ~CublasLtGemm() override {
    cublasLtMatrixLayoutDestroy(l_);
    cublasLtMatmulDescDestroy(op_);
    cublasLtDestroy(h_);
  }
  void run() {
    const float alpha = 1, beta = 0;
    KTUNE_CUBLAS(cublasLtMatmul(h_, op_, &alpha, a_.as<void>(), l_, b_.as<void>(), l_, &beta,
                                c_.as<void>(), l_, c_.as<void>(), l_, &algo_.algo, ws_.as<void>(),
                                ws_.bytes(), s_));
  }
  void warmup() override {
    run();
    KTUNE_CU(cuda::driver().cuStreamSynchronize(s_));
  }
  bench::Sample sample() override {
    flusher_.flush(s_);
    start_.record(s_);
    run();
    stop_.record(s_);
    return {1e6 * cuda::elapsed_ms(start_, stop_), 0, 0};
  }

 private:
  int n_;
  CUstream s_;
  cuda::L2Flusher& flusher_;
  cuda::DeviceBuffer a_, b_, c_, ws_;
  cublasLtHandle_t h_ = nullptr;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t l_ = nullptr;
  cublasLtMatmulHeuristicResult_t algo_{};
  cuda::Event start_, stop_;
};

}  // namespace

int main(int argc, char** argv) try {
  const int size = argc > 1 ? std::atoi(argv[1]) : 4096;
  if (size <= 0 || size > 32768) {
    std::fprintf(stderr, "usage: ktune_gate_cublaslt [SIZE in 1..32768]\n");
    return 2;
  }
  cuda::PrimaryContext ctx(0);
  cuda::Stream stream;
  cuda::L2Flusher flusher(
      static_cast<std::size_t>(ctx.attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)));
  CublasLtGemm gemm(size, stream.get(), flusher);
  bench::StopRule rule(bench::StopSettings::distribution());
  bench::run_until_stopped(gemm, rule);
  const nlohmann::json j = {{"schema_version", 1},
                            {"status", "ok"},
                            {"kernel", fmt::format("cublasLt fp16 gemm {0}x{0}x{0}", size)},
                            {"mode", "cold"},
                            {"samples_ns", rule.times_ns()},
                            {"flop", 2.0 * size * size * size}};
  fmt::print("{}\n", j.dump());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "ktune_gate_cublaslt: %s\n", e.what());
  return 1;
}

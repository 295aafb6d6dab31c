// fp16 GEMV y = A x (A row-major n x k, fp32 accumulate): ktune's built-in kernel at the given
// configurations against cuBLASLt's matmul with the shape PyTorch uses for F.linear on one row
// (transa = T, m = n, n = 1), both timed cold by the same harness in one process.
// Usage: ktune_gemv_bench SPEC [CONFIG ...]   (CONFIG as NAME=VALUE,...; none: the default)
#include <cublasLt.h>

#include <cstdio>

#include <fmt/format.h>

#include "ktune/bench/pipeline.hpp"
#include "ktune/bench/runner.hpp"
#include "ktune/cuda/cublaslt.hpp"
#include "ktune/tune/spec_problem.hpp"

using namespace ktune;

namespace {

class CublasLtGemv : public bench::Sampler {
 public:
  CublasLtGemv(int n, int k, CUstream s, cuda::L2Flusher& flusher)
      : n_(n),
        k_(k),
        s_(s),
        flusher_(flusher),
        a_(std::size_t(n) * k * 2),
        x_(std::size_t(k) * 2),
        y_(std::size_t(n) * 2),
        ws_(32u << 20) {
    cuda::fill_random(a_.get(), std::size_t(n) * k, cuda::DType::f16, 7, s);
    cuda::fill_random(x_.get(), k, cuda::DType::f16, 8, s);
    KTUNE_CUBLAS(cublasLtCreate(&h_));
    KTUNE_CUBLAS(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t t = CUBLAS_OP_T, nt = CUBLAS_OP_N;
    KTUNE_CUBLAS(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
    KTUNE_CUBLAS(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &nt, sizeof nt));
    KTUNE_CUBLAS(cublasLtMatrixLayoutCreate(&la_, CUDA_R_16F, k, n, k));  // A^T: column-major k x n
    KTUNE_CUBLAS(cublasLtMatrixLayoutCreate(&lb_, CUDA_R_16F, k, 1, k));
    KTUNE_CUBLAS(cublasLtMatrixLayoutCreate(&lc_, CUDA_R_16F, n, 1, n));
    cublasLtMatmulPreference_t pref;
    KTUNE_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    const std::size_t ws_bytes = ws_.bytes();
    KTUNE_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
    int found = 0;
    KTUNE_CUBLAS(
        cublasLtMatmulAlgoGetHeuristic(h_, op_, la_, lb_, lc_, lc_, pref, 1, &algo_, &found));
    cublasLtMatmulPreferenceDestroy(pref);
    if (found < 1) throw Error("cuBLASLt found no algorithm for the fp16 GEMV.");
  }
  ~CublasLtGemv() override {
    cublasLtMatrixLayoutDestroy(la_);
    cublasLtMatrixLayoutDestroy(lb_);
    cublasLtMatrixLayoutDestroy(lc_);
    cublasLtMatmulDescDestroy(op_);
    cublasLtDestroy(h_);
  }
  void run() {
    const float alpha = 1, beta = 0;
    KTUNE_CUBLAS(cublasLtMatmul(h_, op_, &alpha, a_.as<void>(), la_, x_.as<void>(), lb_, &beta,
                                y_.as<void>(), lc_, y_.as<void>(), lc_, &algo_.algo, ws_.as<void>(),
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
  int n_, k_;
  CUstream s_;
  cuda::L2Flusher& flusher_;
  cuda::DeviceBuffer a_, x_, y_, ws_;
  cublasLtHandle_t h_ = nullptr;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, lc_ = nullptr;
  cublasLtMatmulHeuristicResult_t algo_{};
  cuda::Event start_, stop_;
};

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ktune_gemv_bench SPEC [CONFIG ...]\n");
    return 2;
  }
  const tune::ProblemSpec spec = tune::ProblemSpec::load(argv[1]);
  std::vector<std::string> configs(argv + 2, argv + argc);
  if (configs.empty()) configs.push_back("");
  const bench::StopSettings stop;  // the full default rule
  const bench::Problem first = tune::make_problem(spec, tune::parse_config(spec, configs[0]));
  bench::PipelineSettings settings;
  settings.full = stop;
  bench::CandidatePipeline b(first, settings);
  cuda::Stream stream;
  const int n = static_cast<int>(first.args.at(3).value),
            k = static_cast<int>(first.args.at(4).value);
  const double bytes = first.bytes;

  cuda::L2Flusher flusher(static_cast<std::size_t>(b.device().l2_bytes));
  CublasLtGemv blas(n, k, stream.get(), flusher);
  bench::StopRule rule(stop);
  bench::run_until_stopped(blas, rule);
  const Summary cb = summarize(rule.times_ns());
  fmt::print("cublaslt  median {:8.2f} us  {:7.1f} GB/s  noise {:.2f} %  ({} samples)\n",
             cb.median / 1e3, bytes / cb.median, 100 * rule.noise(), cb.count);
  double best = 0;
  for (const auto& c : configs) {
    const bench::CandidateOutcome o = b.run(tune::make_problem(spec, tune::parse_config(spec, c)));
    if (o.status != bench::Status::ok) {
      fmt::print("ktune [{}]  {}: {}\n", c, bench::to_string(o.status), o.detail);
      continue;
    }
    const auto& m = o.measurement;
    const double ratio = cb.median / m.time_ns.median;
    best = std::max(best, ratio);
    fmt::print(
        "ktune [{}]  median {:8.2f} us  {:7.1f} GB/s  noise {:.2f} %  verified: {}  ratio vs "
        "cuBLASLt {:.3f}x\n",
        c.empty() ? "default" : c, m.time_ns.median / 1e3, m.bytes_per_s() / 1e9, 100 * m.noise,
        m.verification.passed ? "yes" : "no", ratio);
  }
  fmt::print("best ratio vs cuBLASLt {:.3f}x ({} the 1.15x target)\n", best,
             best >= 1.15 ? "PASS" : "FAIL");
  return best >= 1.15 ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "ktune_gemv_bench: %s\n", e.what());
  return 1;
}

// fp16 GEMV y = A x (A row-major n x k, fp32 accumulate): ktune's built-in kernel at the given
// configurations against cuBLASLt's matmul with the shape PyTorch uses for F.linear on one row
// (transa = T, m = n, n = 1), both timed cold by the same harness in one process.
// Usage: ktune_gemv_bench SPEC [CONFIG ...]   (CONFIG as NAME=VALUE,...; none: the default)
#include <cstdio>

#include <fmt/format.h>

#include "ktune/bench/cublaslt_gemm.hpp"
#include "ktune/bench/pipeline.hpp"
#include "ktune/bench/runner.hpp"
#include "ktune/core/error.hpp"
#include "ktune/cuda/device_utils.hpp"
#include "ktune/cuda/resources.hpp"
#include "ktune/tune/spec_problem.hpp"

using namespace ktune;

int main(int argc, char** argv) try {
  if (argc < 2) {
    std::fprintf(stderr, "usage: ktune_gemv_bench SPEC [CONFIG ...]\n");
    return 2;
  }
  // A line per measurement as it ends, also into a pipe: under the full stop rule each may take
  // up to 15 s, and a run stopped from outside showed nothing of its first minute and a half.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
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

  // y = A x as cuBLASLt's D = A^T B: A stored k x n (row-major n x k), B = x (k x 1), D = y.
  const bench::LtGemm gemv({.trans_a = true, .m = n, .n = 1, .k = k});
  const std::size_t ws_bytes = std::size_t{32} << 20;
  const auto algos = gemv.heuristics(1, ws_bytes);
  if (algos.empty()) throw Error("cuBLASLt found no algorithm for the fp16 GEMV.");
  const cublasLtMatmulAlgo_t algo = gemv.prepare(algos.front());
  cuda::DeviceBuffer a(std::size_t(n) * k * 2), x(std::size_t(k) * 2), y(std::size_t(n) * 2),
      ws(ws_bytes);
  cuda::fill_random(a.get(), std::size_t(n) * k, cuda::DType::f16, 7, stream.get());
  cuda::fill_random(x.get(), k, cuda::DType::f16, 8, stream.get());
  cuda::L2Flusher flusher(static_cast<std::size_t>(b.device().l2_bytes));
  bench::CallSampler blas(
      [&] {
        gemv.run(algo, {.a = a.as<void>(), .b = x.as<void>(), .d = y.as<void>()}, ws.as<void>(),
                 ws.bytes(), stream.get());
      },
      stream.get(), flusher, b.device().pci_bus_id);
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

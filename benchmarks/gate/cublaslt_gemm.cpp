// An fp16 GEMM (D = A^T B, fp32 accumulate, M = N = K = SIZE, the layout of torch.nn.Linear)
// through cuBLASLt's first heuristic choice, timed cold by the harness's stop rule as the gate's
// own runs are (StopSettings::distribution), printed as `ktune bench --json` prints a measurement
// (samples_ns): the gate suite's external-program benchmark in scripts/gpu-gate*.sh.
// Usage: ktune_gate_cublaslt [SIZE]   (default 4096)
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/bench/cublaslt_gemm.hpp"
#include "ktune/bench/measurement.hpp"
#include "ktune/bench/runner.hpp"
#include "ktune/bench/stop_rule.hpp"
#include "ktune/core/error.hpp"
#include "ktune/cuda/device_utils.hpp"
#include "ktune/cuda/driver.hpp"
#include "ktune/cuda/identity.hpp"
#include "ktune/cuda/resources.hpp"

using namespace ktune;

int main(int argc, char** argv) try {
  const int size = argc > 1 ? std::atoi(argv[1]) : 4096;
  if (size <= 0 || size > 32768) {
    std::fprintf(stderr, "usage: ktune_gate_cublaslt [SIZE in 1..32768]\n");
    return 2;
  }
  cuda::PrimaryContext ctx(0);
  cuda::Stream stream;
  const bench::LtGemm gemm({.trans_a = true, .m = size, .n = size, .k = size});
  const std::size_t elems = std::size_t(size) * size, ws_bytes = std::size_t{32} << 20;
  const auto configs = gemm.heuristics(1, ws_bytes);
  if (configs.empty()) throw Error("cuBLASLt found no algorithm for the fp16 GEMM.");
  cuda::DeviceBuffer a(elems * 2), b(elems * 2), d(elems * 2), ws(ws_bytes);
  cuda::fill_random(a.get(), elems, cuda::DType::f16, 11, stream.get());
  cuda::fill_random(b.get(), elems, cuda::DType::f16, 12, stream.get());
  const cublasLtMatmulAlgo_t algo = gemm.prepare(configs.front());
  cuda::L2Flusher flusher(
      static_cast<std::size_t>(ctx.attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)));
  bench::CallSampler sampler(
      [&] {
        gemm.run(algo, {.a = a.as<void>(), .b = b.as<void>(), .d = d.as<void>()}, ws.as<void>(),
                 ws.bytes(), stream.get());
      },
      stream.get(), flusher, cuda::capture_device(0).pci_bus_id);
  bench::StopRule rule(bench::StopSettings::distribution());
  bench::Measurement m;
  m.kernel = fmt::format("cublasLt fp16 gemm {0}x{0}x{0}", size);
  m.flop = 2.0 * size * size * size;
  m.wall_time_s = bench::run_until_stopped(sampler, rule);
  bench::record_samples(m, rule);  // the clock and throttle state come with the samples
  nlohmann::json j = m;
  j["status"] = "ok";
  fmt::print("{}\n", j.dump());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "ktune_gate_cublaslt: %s\n", e.what());
  return 1;
}

#pragma once
// Measures this GPU's real ceilings: DRAM bandwidth, FP32 FMA rate and dense tensor-core rate for
// bf16 and fp16. The roofline and every "% of peak" use these numbers, never datasheet values.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ktune/core/identity.hpp"
#include "ktune/core/stats.hpp"
#include "ktune/cuda/nvrtc.hpp"

namespace ktune::calibrate {

inline constexpr int kSchemaVersion = 1;

struct Options {
  int device = 0;
  std::size_t copy_bytes = std::size_t{2} << 30;  // per buffer; 2 GiB as in the torch comparison
  int gemm_size = 8192;                           // m = n = k
  int warmup = 5;
  int samples = 30;
};

// One ceiling: the rate derived from the median time of `samples` timed runs.
struct Ceiling {
  std::string name;                   // "dram_bandwidth", "fp32_fma", "bf16_tensor", "fp16_tensor"
  std::string unit;                   // "bytes/s" or "FLOP/s"
  double value = 0;                   // work / median time
  double work = 0;                    // bytes moved (read + written) or FLOP per timed run
  std::string method;                 // what was timed, e.g. "cuBLASLt 8192^3 TN, algo 2 of 4"
  Summary time_ms;                    // per-run GPU time, CUDA events
  int sm_clock_mhz = 0;               // median SM clock read with the samples (0 without NVML)
  std::size_t throttled_samples = 0;  // samples during which NVML reported a slowdown reason
};

struct Result {
  Identity identity;
  std::vector<Ceiling> ceilings;
  const Ceiling* find(const std::string& name) const;
};

// Runs every measurement on `options.device`; `progress` (may be empty) hears each step's name.
Result run(const Options& options, const std::function<void(const std::string&)>& progress = {});

// The copy and FMA kernels, compiled (disk-cached) for `arch`; needs no GPU.
cuda::CompiledProgram compile_kernels(const std::string& arch);

void to_json(nlohmann::json& j, const Ceiling& c);
void to_json(nlohmann::json& j, const Result& r);  // includes schema_version

}  // namespace ktune::calibrate

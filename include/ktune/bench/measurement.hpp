#pragma once
// The result of measuring one configuration: statistics of GPU time per launch, how it was timed,
// the clocks it ran at, throughput, verification and the identity block. JSON with schema_version.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/bench/stop_rule.hpp"
#include "ktune/core/identity.hpp"
#include "ktune/core/stats.hpp"

namespace ktune::bench {

inline constexpr int kMeasurementSchemaVersion = 1;

// cold: L2 flushed before each sample, one launch between events. hot: back-to-back launches
// between events, divided. graph: launches captured in a CUDA graph and replayed, divided.
enum class TimingMode { cold, hot, graph };
const char* to_string(TimingMode m);
// ktune::Error naming the accepted modes for anything else.
TimingMode parse_mode(std::string_view name);

// Outcome of comparing a candidate's outputs with the reference's (verify.hpp fills it).
struct Verification {
  bool checked = false;  // false: no reference was run
  bool passed = false;
  std::string detail;  // one sentence: the first failure, or a summary of the agreement
};

struct Measurement {
  std::string kernel;     // kernel name
  nlohmann::json config;  // parameter -> value of the measured configuration
  TimingMode mode = TimingMode::cold;
  std::size_t launches_per_sample = 1;  // hot and graph modes divide a batch by this
  Summary time_ns;                      // per launch; median is the figure quoted
  std::vector<double> samples_ns;       // every counted sample, per launch, in measuring order
  double noise = 0;                     // relative stddev of the counted samples
  std::size_t warmup_samples = 0;
  std::size_t dropped_throttled = 0;  // samples taken while the SM clock was held down
  std::size_t power_capped = 0;       // counted samples flagged sw_power_cap (kept)
  std::uint64_t throttle_seen = 0;    // union of all reasons seen (dropped or not)
  StopReason stop_reason = StopReason::timeout;
  double wall_time_s = 0;
  // SM clock over the counted samples; 0 when NVML is unavailable.
  int sm_clock_mhz_median = 0, sm_clock_mhz_min = 0, sm_clock_mhz_max = 0;
  double flop = 0, bytes = 0;  // per launch, from the spec; 0 when it declares none
  Verification verification;
  std::optional<Identity> identity;

  double flop_per_s() const { return time_ns.median > 0 ? flop / (time_ns.median * 1e-9) : 0; }
  double bytes_per_s() const { return time_ns.median > 0 ? bytes / (time_ns.median * 1e-9) : 0; }
};

// Fills the statistics of `m` from a finished stop rule.
void record_samples(Measurement& m, const StopRule& rule);

void to_json(nlohmann::json& j, const Measurement& m);

}  // namespace ktune::bench

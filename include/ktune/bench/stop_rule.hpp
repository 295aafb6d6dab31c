#pragma once
// When to stop measuring one configuration. Plain C++ (no CUDA): a Sampler yields one GPU-timed
// sample at a time, and the StopRule decides after each one. Tests feed synthetic streams.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ktune::bench {

// The stop rule's knobs; defaults are declared once here and nowhere else.
struct StopSettings {
  std::size_t warmup_samples = 3;      // untimed runs before the first counted sample
  std::size_t min_samples = 10;        // counted (unthrottled) samples before any stop
  double min_gpu_time_s = 0.5;         // summed GPU time of counted samples (whole batches)
  double max_relative_stddev = 0.005;  // 0.5 % relative stddev: the noise bound
  // Also converged when the mean is known this well (relative standard error, stddev / mean /
  // sqrt(n)), however wide the samples are: a search needs the estimate, not tight samples, and a
  // kernel whose samples stay above the noise bound would otherwise run to the timeout. 0: off.
  double max_relative_error = 0;
  double timeout_s = 15;  // wall clock, warm-up included; stops whatever the noise
  std::size_t max_samples = 1'000'000;
  // Screen only: after min_screen_samples, stop as soon as the fastest sample seen is slower than
  // the best median so far by this fraction (the candidate is clearly slower). 0 disables it.
  double screen_margin = 0;
  std::size_t min_screen_samples = 3;

  static StopSettings full() { return {}; }
  // The tuner's short screen: few samples, little time, early exit when clearly slower.
  static StopSettings screen();
  // A run that samples a distribution (the gate's runs, compared by their medians across runs):
  // it ends once it holds min_gpu_time_s (0.2 s) of GPU time and min_samples, whatever its
  // spread, or at 2,000 samples. Under full() a small cold kernel, whose samples never come
  // within 0.5 %, ran every run to the 15 s timeout.
  static StopSettings distribution();

  // Applies "key=value,..." overrides (keys as in to_json: min_samples, min_gpu_time_s, ...);
  // ktune::Error naming the key and the accepted ones when one is unknown or not a number.
  void apply_overrides(std::string_view overrides);
};

void to_json(nlohmann::json& j, const StopSettings& s);

// Why measurement stopped; every result carries it.
enum class StopReason { converged, timeout, slower_than_best, max_samples };
const char* to_string(StopReason r);

// One timed sample as the GPU side reports it. time_ns is GPU time per kernel launch.
struct Sample {
  double time_ns = 0;
  int sm_clock_mhz = 0;                // 0 when unknown (no NVML)
  std::uint64_t throttle_reasons = 0;  // NVML clocks-event mask read with the sample
  std::size_t launches = 1;  // launches timed together (a hot or graph batch), time_ns each
};

// A source of samples: the GPU timer in each mode, or a synthetic stream in tests.
class Sampler {
 public:
  virtual ~Sampler() = default;
  // One untimed run (warm-up): caches, clocks, lazy module loading.
  virtual void warmup() = 0;
  // One timed run (or batch, divided); blocks until its time is known.
  virtual Sample sample() = 0;
};

// Feeds on samples and says when to stop. Throttled samples (throttle::kSlowdownMask) are dropped
// and counted, never used for statistics or time accounting.
class StopRule {
 public:
  explicit StopRule(StopSettings settings, std::optional<double> best_median_ns = std::nullopt);

  // Adds a sample taken `wall_elapsed_s` after measurement began; true when measurement should
  // stop.
  bool add(const Sample& s, double wall_elapsed_s);
  // Whether the wall clock alone says stop (checked before a sample, so a hung stream stops too).
  bool timed_out(double wall_elapsed_s);

  StopReason reason() const { return reason_; }
  const std::vector<double>& times_ns() const { return times_ns_; }
  const std::vector<int>& sm_clocks_mhz() const { return clocks_; }
  std::size_t dropped_throttled() const { return dropped_; }
  std::size_t power_capped() const { return power_capped_; }  // kept, flagged sw_power_cap
  std::uint64_t throttle_seen() const { return throttle_seen_; }
  double gpu_time_s() const { return gpu_time_ns_ * 1e-9; }
  // Relative stddev of the counted samples (stddev / mean).
  double noise() const;
  // Relative standard error of their mean (noise() / sqrt(n)).
  double relative_error() const;
  const StopSettings& settings() const { return settings_; }

 private:
  StopSettings settings_;
  std::optional<double> best_ns_;
  std::vector<double> times_ns_;
  std::vector<int> clocks_;
  double mean_ = 0, m2_ = 0, gpu_time_ns_ = 0, fastest_ns_ = 0;  // Welford running moments
  std::size_t dropped_ = 0, power_capped_ = 0;
  std::uint64_t throttle_seen_ = 0;
  StopReason reason_ = StopReason::timeout;
};

}  // namespace ktune::bench

namespace ktune::bench {
// Warms `sampler` up, then samples until `rule` stops. Wall time from a steady clock.
// Returns the wall time spent, warm-up included, in seconds.
double run_until_stopped(Sampler& sampler, StopRule& rule);
}  // namespace ktune::bench

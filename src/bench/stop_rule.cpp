#include "ktune/bench/stop_rule.hpp"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/assignments.hpp"
#include "ktune/core/enum_names.hpp"
#include "ktune/core/error.hpp"
#include "ktune/cuda/nvml.hpp"

namespace ktune::bench {

StopSettings StopSettings::distribution() {
  StopSettings s;
  s.min_gpu_time_s = 0.2;
  s.max_relative_stddev = std::numeric_limits<double>::max();  // the spread is the data
  // A run's median is known well long before this; a small cold kernel (a flush and a clock
  // reading per sample) would otherwise take tens of thousands of samples to reach 0.2 s.
  s.max_samples = 2000;
  return s;
}

StopSettings StopSettings::screen() {
  StopSettings s;
  s.warmup_samples = 1;
  s.min_samples = 5;
  // 5 ms of GPU time: on the H100 a 20 ms screen made the screened-out candidates of a GEMV
  // session (87 us kernels, 200 samples each) a third of its wall time, to rank them no better.
  s.min_gpu_time_s = 0.005;
  s.max_relative_stddev = 0.02;  // 2 %: enough to rank, not to quote
  s.max_relative_error = 0.01;   // or the mean within 1 % (one standard error)
  s.timeout_s = 0.5;
  s.screen_margin = 0.10;  // fastest sample 10 % slower than the best median: clearly slower
  s.min_screen_samples = 3;
  return s;
}

void to_json(nlohmann::json& j, const StopSettings& s) {
  j = {{"warmup_samples", s.warmup_samples},
       {"min_samples", s.min_samples},
       {"min_gpu_time_s", s.min_gpu_time_s},
       {"max_relative_stddev", s.max_relative_stddev},
       {"timeout_s", s.timeout_s},
       {"max_samples", s.max_samples},
       {"max_relative_error", s.max_relative_error},
       {"screen_margin", s.screen_margin},
       {"min_screen_samples", s.min_screen_samples}};
}

void StopSettings::apply_overrides(std::string_view overrides) {
  for (const Assignment& a : parse_assignments(overrides, "--stop", "min_samples=20,timeout_s=5")) {
    const std::string& key = a.name;
    const std::string& text = a.value;
    char* rest = nullptr;
    const double v = std::strtod(text.c_str(), &rest);
    if (rest != text.c_str() + text.size() || !(v >= 0))
      throw Error(
          fmt::format("stop-rule setting {}={} needs a non-negative number (write it as {}=VALUE).",
                      key, text, key));
    const auto count = [&] { return static_cast<std::size_t>(std::llround(v)); };
    if (key == "warmup_samples")
      warmup_samples = count();
    else if (key == "min_samples")
      min_samples = count();
    else if (key == "min_gpu_time_s")
      min_gpu_time_s = v;
    else if (key == "max_relative_stddev")
      max_relative_stddev = v;
    else if (key == "max_relative_error")
      max_relative_error = v;
    else if (key == "timeout_s")
      timeout_s = v;
    else if (key == "max_samples")
      max_samples = std::max<std::size_t>(1, count());
    else if (key == "screen_margin")
      screen_margin = v;
    else if (key == "min_screen_samples")
      min_screen_samples = count();
    else
      throw Error(fmt::format(
          "unknown stop-rule setting '{}'; use warmup_samples, min_samples, min_gpu_time_s, "
          "max_relative_stddev, max_relative_error, timeout_s, max_samples, screen_margin or "
          "min_screen_samples.",
          key));
  }
}

namespace {
constexpr EnumName<StopReason> kStopReasonNames[] = {
    {StopReason::converged, "converged"},
    {StopReason::timeout, "timeout"},
    {StopReason::slower_than_best, "slower_than_best"},
    {StopReason::max_samples, "max_samples"},
};
}  // namespace

const char* to_string(StopReason r) {
  return name_of(kStopReasonNames, r);
}

StopRule::StopRule(StopSettings settings, std::optional<double> best_median_ns)
    : settings_(settings), best_ns_(best_median_ns) {}

double StopRule::noise() const {
  const std::size_t n = times_ns_.size();
  if (n < 2 || mean_ == 0) return 0;
  return std::sqrt(m2_ / static_cast<double>(n - 1)) / mean_;
}

double StopRule::relative_error() const {
  const std::size_t n = times_ns_.size();
  return n < 2 ? 0 : noise() / std::sqrt(static_cast<double>(n));
}

bool StopRule::timed_out(double wall_elapsed_s) {
  if (wall_elapsed_s < settings_.timeout_s) return false;
  reason_ = StopReason::timeout;
  return true;
}

bool StopRule::add(const Sample& s, double wall_elapsed_s) {
  throttle_seen_ |= s.throttle_reasons;
  if (s.throttle_reasons & cuda::throttle::kSlowdownMask) {
    ++dropped_;
  } else {
    if (s.throttle_reasons & cuda::throttle::kSwPowerCap) ++power_capped_;
    times_ns_.push_back(s.time_ns);
    clocks_.push_back(s.sm_clock_mhz);
    gpu_time_ns_ += s.time_ns * static_cast<double>(s.launches);
    fastest_ns_ = times_ns_.size() == 1 ? s.time_ns : std::min(fastest_ns_, s.time_ns);
    const double delta = s.time_ns - mean_;
    mean_ += delta / static_cast<double>(times_ns_.size());
    m2_ += delta * (s.time_ns - mean_);
  }
  const std::size_t n = times_ns_.size();
  if (best_ns_ && settings_.screen_margin > 0 && n >= settings_.min_screen_samples &&
      fastest_ns_ > *best_ns_ * (1 + settings_.screen_margin)) {
    reason_ = StopReason::slower_than_best;
    return true;
  }
  if (n + dropped_ >= settings_.max_samples) {
    reason_ = StopReason::max_samples;
    return true;
  }
  if (n >= settings_.min_samples && gpu_time_s() >= settings_.min_gpu_time_s &&
      (noise() <= settings_.max_relative_stddev ||
       (settings_.max_relative_error > 0 && relative_error() <= settings_.max_relative_error))) {
    reason_ = StopReason::converged;
    return true;
  }
  return timed_out(wall_elapsed_s);
}

double run_until_stopped(Sampler& sampler, StopRule& rule) {
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  for (std::size_t i = 0; i < rule.settings().warmup_samples; ++i) {
    if (elapsed() >= rule.settings().timeout_s) break;
    sampler.warmup();
  }
  // At least one sample, even past the timeout: add() checks the wall clock after each one.
  while (!rule.add(sampler.sample(), elapsed())) {
  }
  return elapsed();
}

}  // namespace ktune::bench

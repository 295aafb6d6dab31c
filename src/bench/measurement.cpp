#include "ktune/bench/measurement.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "ktune/core/enum_names.hpp"
#include "ktune/core/error.hpp"
#include "ktune/cuda/nvml.hpp"

namespace ktune::bench {

namespace {
constexpr EnumName<TimingMode> kModeNames[] = {
    {TimingMode::cold, "cold"},
    {TimingMode::hot, "hot"},
    {TimingMode::graph, "graph"},
};
}  // namespace

const char* to_string(TimingMode m) {
  return name_of(kModeNames, m);
}

TimingMode parse_mode(std::string_view name) {
  if (const auto m = value_of(kModeNames, name)) return *m;
  throw Error(fmt::format("unknown timing mode '{}'; use cold, hot or graph.", name));
}

void record_samples(Measurement& m, const StopRule& rule) {
  m.samples_ns.assign(rule.times_ns().begin(), rule.times_ns().end());
  m.time_ns = summarize(m.samples_ns);
  m.noise = rule.noise();
  m.warmup_samples = rule.settings().warmup_samples;
  m.dropped_throttled = rule.dropped_throttled();
  m.power_capped = rule.power_capped();
  m.throttle_seen = rule.throttle_seen();
  m.stop_reason = rule.reason();
  std::vector<int> clocks;
  for (int c : rule.sm_clocks_mhz())
    if (c > 0) clocks.push_back(c);
  if (!clocks.empty()) {
    std::sort(clocks.begin(), clocks.end());
    m.sm_clock_mhz_min = clocks.front();
    m.sm_clock_mhz_max = clocks.back();
    m.sm_clock_mhz_median = clocks[clocks.size() / 2];
  }
}

void to_json(nlohmann::json& j, const Measurement& m) {
  j = nlohmann::json::object();
  j["schema_version"] = kMeasurementSchemaVersion;
  j["kernel"] = m.kernel;
  j["config"] = m.config;
  j["mode"] = to_string(m.mode);
  j["launches_per_sample"] = m.launches_per_sample;
  j["time_ns"] = m.time_ns;  // median, mean, stddev, min, max, p5, p95, count, relative_stddev
  j["median_ns"] = m.time_ns.median;
  j["samples"] = m.time_ns.count;
  j["samples_ns"] = m.samples_ns;  // the distribution a regression gate compares
  j["noise"] = m.noise;
  j["warmup_samples"] = m.warmup_samples;
  j["dropped_throttled"] = m.dropped_throttled;
  j["power_capped"] = m.power_capped;
  j["throttle_seen"] = cuda::throttle_reason_names(m.throttle_seen);
  j["stop_reason"] = to_string(m.stop_reason);
  j["wall_time_s"] = m.wall_time_s;
  j["sm_clock_mhz"] = {
      {"median", m.sm_clock_mhz_median}, {"min", m.sm_clock_mhz_min}, {"max", m.sm_clock_mhz_max}};
  j["throughput"] = {{"flop", m.flop},
                     {"bytes", m.bytes},
                     {"flop_per_s", m.flop_per_s()},
                     {"bytes_per_s", m.bytes_per_s()}};
  j["verification"] = {{"checked", m.verification.checked},
                       {"passed", m.verification.passed},
                       {"detail", m.verification.detail}};
  j["identity"] = m.identity ? nlohmann::json(*m.identity) : nlohmann::json(nullptr);
}

}  // namespace ktune::bench

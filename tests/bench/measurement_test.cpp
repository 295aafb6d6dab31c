// The result JSON's shape is pinned field by field; statistics come from core's summarize().
#include "ktune/bench/measurement.hpp"

#include <gtest/gtest.h>

#include "ktune/core/error.hpp"
#include "ktune/cuda/nvml.hpp"

namespace ktune::bench {
namespace {

TEST(Measurement, ModesParseAndUnknownModeIsOneSentence) {
  EXPECT_EQ(parse_mode("cold"), TimingMode::cold);
  EXPECT_EQ(parse_mode("hot"), TimingMode::hot);
  EXPECT_EQ(parse_mode("graph"), TimingMode::graph);
  EXPECT_STREQ(to_string(TimingMode::graph), "graph");
  try {
    parse_mode("warm");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "unknown timing mode 'warm'; use cold, hot or graph.");
  }
}

TEST(Measurement, JsonShapeIsPinned) {
  StopSettings s;
  s.min_gpu_time_s = 0;
  s.max_relative_stddev = 1;  // the 1..10 us ramp is 55 % noise
  StopRule rule(s);
  // 1..10 us, plus one sample under a thermal slowdown that must not count.
  rule.add(Sample{50e3, 1300, cuda::throttle::kHwThermal}, 0.0);
  for (int i = 1; i <= 10; ++i) rule.add(Sample{i * 1e3, 1980, 0}, 0.0);
  Measurement m;
  m.kernel = "copy";
  m.config = {{"vec", 4}};
  m.mode = TimingMode::hot;
  m.launches_per_sample = 16;
  m.flop = 0;
  m.bytes = 2 * 5.5e3;  // 11 kB per launch: 2 GB/s at the 5.5 us median
  m.verification = {true, true, "'y': 10 elements agree"};
  record_samples(m, rule);
  const nlohmann::json j = m;
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["kernel"], "copy");
  EXPECT_EQ(j["config"]["vec"], 4);
  EXPECT_EQ(j["mode"], "hot");
  EXPECT_EQ(j["launches_per_sample"], 16);
  EXPECT_DOUBLE_EQ(j["median_ns"].get<double>(), 5.5e3);
  EXPECT_DOUBLE_EQ(j["time_ns"]["median"].get<double>(), 5.5e3);
  EXPECT_DOUBLE_EQ(j["time_ns"]["min"].get<double>(), 1e3);
  EXPECT_DOUBLE_EQ(j["time_ns"]["max"].get<double>(), 10e3);
  EXPECT_DOUBLE_EQ(j["time_ns"]["mean"].get<double>(), 5.5e3);
  EXPECT_NEAR(j["time_ns"]["p5"].get<double>(), 1.45e3, 1e-6);
  EXPECT_NEAR(j["time_ns"]["p95"].get<double>(), 9.55e3, 1e-6);
  EXPECT_NEAR(j["time_ns"]["stddev"].get<double>(), 3027.65, 0.01);
  EXPECT_EQ(j["samples"], 10);
  ASSERT_EQ(j["samples_ns"].size(), 10u);  // the throttled sample is not among them
  EXPECT_DOUBLE_EQ(j["samples_ns"][0].get<double>(), 1e3);
  EXPECT_DOUBLE_EQ(j["samples_ns"][9].get<double>(), 10e3);
  EXPECT_NEAR(j["noise"].get<double>(), 3027.65 / 5.5e3, 1e-5);
  EXPECT_EQ(j["dropped_throttled"], 1);
  EXPECT_EQ(j["power_capped"], 0);
  EXPECT_EQ(j["throttle_seen"], nlohmann::json::array({"hw_thermal"}));
  EXPECT_EQ(j["stop_reason"], "converged");
  EXPECT_EQ(j["sm_clock_mhz"]["median"], 1980);
  EXPECT_DOUBLE_EQ(j["throughput"]["bytes_per_s"].get<double>(), 2e9);
  EXPECT_EQ(j["throughput"]["flop_per_s"], 0.0);
  EXPECT_EQ(j["verification"]["checked"], true);
  EXPECT_EQ(j["verification"]["passed"], true);
  EXPECT_TRUE(j["identity"].is_null());
  for (const char* key :
       {"schema_version",      "kernel",        "config",         "mode",
        "launches_per_sample", "time_ns",       "median_ns",      "samples",
        "samples_ns",          "noise",         "warmup_samples", "dropped_throttled",
        "power_capped",        "throttle_seen", "stop_reason",    "wall_time_s",
        "sm_clock_mhz",        "throughput",    "verification",   "identity"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j.size(), 20u);
}

}  // namespace
}  // namespace ktune::bench

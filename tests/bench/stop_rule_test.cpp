// The stop rule and statistics on synthetic sample streams: no GPU needed.
#include "ktune/bench/stop_rule.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <nlohmann/json.hpp>

#include "ktune/bench/measurement.hpp"
#include "ktune/core/error.hpp"
#include "ktune/cuda/nvml.hpp"

namespace ktune::bench {
namespace {

// Feeds `rule` samples from `next` with a synthetic wall clock advancing `wall_step_s` per sample;
// returns how many samples it took to stop.
template <class F>
std::size_t feed(StopRule& rule, F next, double wall_step_s, std::size_t limit = 100000) {
  for (std::size_t i = 1; i <= limit; ++i)
    if (rule.add(next(), static_cast<double>(i) * wall_step_s)) return i;
  return limit + 1;
}

TEST(StopRule, DefaultsAreDeclaredOnce) {
  const StopSettings s;
  EXPECT_EQ(s.min_samples, 10u);
  EXPECT_DOUBLE_EQ(s.min_gpu_time_s, 0.5);
  EXPECT_DOUBLE_EQ(s.max_relative_stddev, 0.005);
  EXPECT_DOUBLE_EQ(s.timeout_s, 15);
}

TEST(StopRule, QuietStreamStopsAtMinimumGpuTime) {
  // 10 ms samples with 0.1 % jitter: noise is fine from the start, so GPU time (0.5 s) decides.
  StopRule rule(StopSettings{});
  std::mt19937 rng(1);
  std::normal_distribution<double> d(10e6, 10e3);
  const std::size_t n = feed(
      rule,
      [&] {
        return Sample{d(rng), 1980, 0};
      },
      0.011);
  EXPECT_NEAR(static_cast<double>(n), 50, 1);  // ~50 x 10 ms = 0.5 s
  EXPECT_EQ(rule.reason(), StopReason::converged);
  EXPECT_LT(rule.noise(), 0.005);
}

TEST(StopRule, WideSamplesStopOnceTheMeanIsKnownWellEnough) {
  // 88 us samples with 4 % jitter (a cold-mode GEMV on a busy host): the samples never get under
  // the 1 % noise bound, so without an error bound the rule runs to its timeout; with a 0.3 %
  // bound on the mean's relative standard error it stops once (0.04 / 0.003)^2 ~ 178 samples
  // are in (after the 10 ms of GPU time, ~114 samples).
  for (const double error : {0.0, 0.003}) {
    SCOPED_TRACE(error);
    StopSettings s;
    s.min_gpu_time_s = 0.01;
    s.max_relative_stddev = 0.01;
    s.max_relative_error = error;
    s.timeout_s = 2;
    StopRule rule(s);
    std::mt19937 rng(3);
    std::normal_distribution<double> d(88e3, 88e3 * 0.04);
    const std::size_t n = feed(
        rule,
        [&] {
          return Sample{d(rng), 1980, 0};
        },
        100e-6);
    if (error == 0) {
      EXPECT_EQ(rule.reason(), StopReason::timeout);
      EXPECT_EQ(n, 20000u);  // 2 s of 100 us wall steps
    } else {
      EXPECT_EQ(rule.reason(), StopReason::converged);
      EXPECT_GT(n, 140u);
      EXPECT_LT(n, 230u);
      EXPECT_LE(rule.relative_error(), 0.003);
    }
  }
}

TEST(StopRule, ShortKernelStopsAtMinimumSampleCountOnlyWithEnoughGpuTime) {
  // 1 s samples: min_gpu_time is reached at once, min_samples (10) decides.
  StopRule rule(StopSettings{});
  const std::size_t n = feed(
      rule,
      [] {
        return Sample{1e9, 0, 0};
      },
      1.0);
  EXPECT_EQ(n, 10u);
  EXPECT_EQ(rule.reason(), StopReason::converged);
}

// Alternating 1 ms and 2 ms samples (~33 % noise), fed 10 ms of wall clock apart.
std::size_t feed_alternating(StopRule& rule) {
  int i = 0;
  return feed(
      rule,
      [&] {
        return Sample{(i++ % 2) ? 2e6 : 1e6, 0, 0};
      },
      0.01);
}

TEST(StopRule, NoisyStreamRunsToTheTimeout) {
  // ~33 % noise never meets 0.5 %; the wall clock stops it at 15 s.
  StopRule rule(StopSettings{});
  const std::size_t n = feed_alternating(rule);
  EXPECT_EQ(n, 1500u);
  EXPECT_EQ(rule.reason(), StopReason::timeout);
  EXPECT_GT(rule.noise(), 0.3);
}

TEST(StopRule, ADistributionRunEndsAtItsGpuTimeWhateverItsSpread) {
  // The same 33 % noise: a gate run keeps 0.2 s of GPU time (134 samples of 1.5 ms on average)
  // and ends converged, not at the timeout.
  StopRule rule(StopSettings::distribution());
  const std::size_t n = feed_alternating(rule);
  EXPECT_EQ(rule.reason(), StopReason::converged);
  EXPECT_EQ(n, 134u);
}

TEST(StopRule, ADistributionRunOfASmallKernelEndsAtItsSampleCap) {
  // 5 us samples, 60 us of wall each (a flush and a clock reading): 0.2 s of GPU time would take
  // 40,000 samples and 2.4 s; the run ends at 2,000.
  StopRule rule(StopSettings::distribution());
  const std::size_t n = feed(
      rule,
      [] {
        return Sample{5e3, 1980, 0};
      },
      60e-6);
  EXPECT_EQ(rule.reason(), StopReason::max_samples);
  EXPECT_EQ(n, 2000u);
}

TEST(StopRule, ABatchCountsAllItsLaunchesAsGpuTime) {
  // Hot samples of 100 launches of 20 us (2 ms a sample, 20 us each as time_ns): 0.2 s of GPU
  // time is 100 samples, not 10,000 (which ran every hot gate run to its timeout).
  StopRule rule(StopSettings::distribution());
  const std::size_t n = feed(
      rule,
      [] {
        return Sample{20e3, 1980, 0, 100};
      },
      2e-3);
  EXPECT_EQ(rule.reason(), StopReason::converged);
  EXPECT_EQ(n, 100u);
}

TEST(StopRule, NoiseDropsBelowBoundAfterASettlingPhase) {
  // Two 20 % outliers then a steady stream: stops once the relative stddev falls below 0.5 %.
  StopRule rule(StopSettings{});
  int i = 0;
  const std::size_t n = feed(
      rule,
      [&] {
        return Sample{i++ < 2 ? 1.2e6 : 1e6, 0, 0};
      },
      0.001, 5000);
  EXPECT_EQ(rule.reason(), StopReason::converged);
  EXPECT_LE(rule.noise(), 0.005);
  // stddev/mean ~ 0.2 * sqrt(2 / (n - 1)) <= 0.005 first holds near n = 3200.
  EXPECT_GT(n, 3100u);
  EXPECT_LT(n, 3300u);
}

TEST(StopRule, ThrottledSamplesAreDroppedAndCounted) {
  StopSettings s;
  s.min_gpu_time_s = 0;
  StopRule rule(s);
  int i = 0;
  // Every third sample is taken under a thermal slowdown and is 3x slower: none of them may count.
  const std::size_t n = feed(
      rule,
      [&] {
        const bool hot = (i++ % 3) == 2;
        return Sample{hot ? 3e6 : 1e6, hot ? 1200 : 1980, hot ? cuda::throttle::kSwThermal : 0};
      },
      0.001);
  EXPECT_EQ(rule.reason(), StopReason::converged);
  EXPECT_EQ(rule.times_ns().size(), 10u);
  EXPECT_EQ(rule.dropped_throttled(), n - 10);
  EXPECT_EQ(rule.dropped_throttled(), 4u);
  EXPECT_EQ(rule.throttle_seen(), cuda::throttle::kSwThermal);
  for (double t : rule.times_ns()) EXPECT_EQ(t, 1e6);
  // An idle or sync-boost flag is not a slowdown: such samples count.
  StopRule idle(s);
  feed(
      idle,
      [] {
        return Sample{1e6, 1980, cuda::throttle::kGpuIdle};
      },
      0.001);
  EXPECT_EQ(idle.dropped_throttled(), 0u);
}

// A kernel that draws the card to its power limit runs capped as its steady state (the gate's
// 256 MiB copy on the H100: whole runs flagged sw_power_cap). Dropping those samples left the run
// without one to time; they are its true time, kept and counted.
TEST(StopRule, PowerCappedSamplesCountAndAreCounted) {
  StopSettings s;
  s.min_gpu_time_s = 0;
  StopRule rule(s);
  feed(
      rule,
      [] {
        return Sample{1e6, 1755, cuda::throttle::kSwPowerCap};
      },
      0.001);
  EXPECT_EQ(rule.reason(), StopReason::converged);
  EXPECT_EQ(rule.times_ns().size(), 10u);
  EXPECT_EQ(rule.dropped_throttled(), 0u);
  EXPECT_EQ(rule.power_capped(), 10u);
  EXPECT_EQ(rule.throttle_seen(), cuda::throttle::kSwPowerCap);
}

TEST(StopRule, ScreenStopsAsSoonAsClearlySlowerThanBest) {
  const StopSettings s = StopSettings::screen();
  StopRule slow(s, /*best_median_ns=*/1e6);
  const std::size_t n = feed(
      slow,
      [] {
        return Sample{1.5e6, 0, 0};
      },
      0.001);
  EXPECT_EQ(n, s.min_screen_samples);
  EXPECT_EQ(slow.reason(), StopReason::slower_than_best);

  // Within the margin: not abandoned, screened to its own (short) convergence.
  StopRule close(s, 1e6);
  feed(
      close,
      [] {
        return Sample{1.05e6, 0, 0};
      },
      0.001);
  EXPECT_EQ(close.reason(), StopReason::converged);
  EXPECT_GE(close.gpu_time_s(), s.min_gpu_time_s);

  // The full rule never abandons.
  StopRule full(StopSettings{}, 1e6);
  feed(
      full,
      [] {
        return Sample{1.5e7, 0, 0};
      },
      0.001);
  EXPECT_EQ(full.reason(), StopReason::converged);
}

TEST(StopRule, MaxSamplesCapsACountedStream) {
  StopSettings s;
  s.max_samples = 7;
  StopRule rule(s);
  EXPECT_EQ(feed(
                rule,
                [] {
                  return Sample{1e3, 0, 0};
                },
                1e-6),
            7u);
  EXPECT_EQ(rule.reason(), StopReason::max_samples);
}

TEST(StopRule, OverridesParseAndRejectUnknownKeys) {
  StopSettings s;
  s.apply_overrides(
      "min_samples=20,timeout_s=2.5,max_relative_stddev=0.01,max_relative_error=0.002");
  EXPECT_EQ(s.min_samples, 20u);
  EXPECT_DOUBLE_EQ(s.timeout_s, 2.5);
  EXPECT_DOUBLE_EQ(s.max_relative_stddev, 0.01);
  EXPECT_DOUBLE_EQ(s.max_relative_error, 0.002);
  try {
    s.apply_overrides("min_sample=3");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'min_sample'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("min_samples"), std::string::npos);
  }
  EXPECT_THROW(s.apply_overrides("timeout_s=abc"), Error);
  EXPECT_THROW(s.apply_overrides("timeout_s=-1"), Error);
}

// A synthetic sampler: counts warm-ups, returns a fixed stream.
class FakeSampler : public Sampler {
 public:
  void warmup() override { ++warmups; }
  Sample sample() override { return Sample{next_ns, 1755, 0}; }
  int warmups = 0;
  double next_ns = 2e6;
};

TEST(RunUntilStopped, WarmsUpThenMeasuresAndRecordsStatistics) {
  FakeSampler f;
  StopSettings s;
  s.min_gpu_time_s = 0.01;
  s.warmup_samples = 4;
  StopRule rule(s);
  const double wall = run_until_stopped(f, rule);
  EXPECT_EQ(f.warmups, 4);
  EXPECT_GE(wall, 0);
  Measurement m;
  record_samples(m, rule);
  EXPECT_EQ(m.time_ns.count, 10u);  // 10 x 2 ms >= 10 ms
  EXPECT_DOUBLE_EQ(m.time_ns.median, 2e6);
  EXPECT_EQ(m.sm_clock_mhz_median, 1755);
  EXPECT_EQ(m.stop_reason, StopReason::converged);
  EXPECT_EQ(m.warmup_samples, 4u);
}

TEST(RunUntilStopped, TakesOneSampleEvenWithAZeroTimeout) {
  FakeSampler f;
  StopSettings s;
  s.timeout_s = 0;
  StopRule rule(s);
  run_until_stopped(f, rule);
  EXPECT_EQ(rule.times_ns().size(), 1u);
  EXPECT_EQ(rule.reason(), StopReason::timeout);
}

}  // namespace
}  // namespace ktune::bench

// Interleaved A/B comparison on synthetic samplers that drift together.
#include "ktune/bench/interleave.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ktune/cuda/nvml.hpp"

namespace ktune::bench {
namespace {

// Base time times a drift shared through `clock` (e.g. the GPU heating up), advanced per sample.
class DriftingSampler : public Sampler {
 public:
  DriftingSampler(double base_ns, double* drift) : base_(base_ns), drift_(drift) {}
  void warmup() override {}
  Sample sample() override {
    *drift_ *= 1.001;  // 0.1 % slower per sample: 2x over ~700 samples
    Sample s{base_ * *drift_, 1980, 0};
    if (throttle_every_ && ++n_ % throttle_every_ == 0)
      s.throttle_reasons = cuda::throttle::kSwThermal;
    return s;
  }
  int throttle_every_ = 0;

 private:
  double base_;
  double* drift_;
  int n_ = 0;
};

TEST(Interleave, RatioSurvivesDriftThatSeparateRunsWouldNot) {
  double drift = 1.0;
  DriftingSampler a(2e6, &drift), b(1e6, &drift);
  StopSettings s;
  s.min_gpu_time_s = 0.1;
  const InterleavedResult r = interleave(a, b, s);
  // Each side alone drifts (a's own noise is large), yet B/A per pair is ~0.5 throughout.
  EXPECT_NEAR(r.ratio.median, 0.5, 0.001);
  EXPECT_NEAR(r.speedup_of_b(), 2.0, 0.005);
  EXPECT_EQ(r.stop_reason, StopReason::converged);
  EXPECT_GE(r.pairs, 10u);
  EXPECT_GE((r.a_ns.mean + r.b_ns.mean) * static_cast<double>(r.pairs), 0.1e9);
  const nlohmann::json j = r;
  EXPECT_EQ(j["pairs"], r.pairs);
  EXPECT_TRUE(j.contains("ratio_b_over_a"));
}

TEST(Interleave, ThrottledPairsAreDroppedWhole) {
  double drift = 1.0;
  DriftingSampler a(1e6, &drift), b(1e6, &drift);
  b.throttle_every_ = 4;
  StopSettings s;
  s.min_gpu_time_s = 0;
  const InterleavedResult r = interleave(a, b, s);
  EXPECT_GT(r.dropped_throttled, 0u);
  EXPECT_EQ(r.a_ns.count, r.b_ns.count);
  EXPECT_EQ(r.a_ns.count, r.pairs);
}

}  // namespace
}  // namespace ktune::bench

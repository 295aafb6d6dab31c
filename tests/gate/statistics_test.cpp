#include "ktune/gate/statistics.hpp"

#include <cmath>

#include <gtest/gtest.h>

namespace ktune::gate {
namespace {

TEST(MannWhitney, SmallSamplesWithoutTiesAreExact) {
  // Complete separation of 3 and 3: one ordering of C(6,3) = 20 on each tail.
  const std::vector<double> a{1, 2, 3}, b{4, 5, 6};
  const MannWhitney r = mann_whitney(a, b);
  EXPECT_TRUE(r.exact);
  EXPECT_DOUBLE_EQ(r.u, 9);
  EXPECT_NEAR(r.p_value, 0.1, 1e-12);
  const std::vector<double> c{1, 2, 3, 4, 5}, d{6, 7, 8, 9, 10};
  EXPECT_NEAR(mann_whitney(c, d).p_value, 2.0 / 252, 1e-12);
  // Interleaved samples: U at its mean gives p = 1.
  const std::vector<double> e{1, 4}, f{2, 3};
  EXPECT_NEAR(mann_whitney(e, f).p_value, 1.0, 1e-12);
}

TEST(MannWhitney, TiesUseTheCorrectedNormalApproximation) {
  // Three tie groups of two: variance 25/12 * (11 - 18/90) = 22.5; U_b = 20.5, mean 12.5.
  const std::vector<double> a{1, 2, 3, 4, 5}, b{3, 4, 5, 6, 7};
  const MannWhitney r = mann_whitney(a, b);
  EXPECT_FALSE(r.exact);
  EXPECT_DOUBLE_EQ(r.u, 20.5);
  EXPECT_NEAR(r.z, 7.5 / std::sqrt(22.5), 1e-12);
  EXPECT_NEAR(r.p_value, std::erfc(7.5 / std::sqrt(22.5) / std::sqrt(2.0)), 1e-12);
  // All equal: no evidence either way, and no division by a zero variance.
  const std::vector<double> g(30, 1.0);
  EXPECT_EQ(mann_whitney(g, g).p_value, 1.0);
}

TEST(MannWhitney, LargeSamplesAgreeWithTheExactTailInTheMiddle) {
  // 20 and 20 without ties: exact; the normal approximation at 21 a side must be close.
  std::vector<double> a, b;
  for (int i = 0; i < 21; ++i) a.push_back(i), b.push_back(i + 6.5);
  const MannWhitney approx = mann_whitney(a, b);
  EXPECT_FALSE(approx.exact);
  a.pop_back(), b.pop_back();
  const MannWhitney exact = mann_whitney(a, b);
  EXPECT_TRUE(exact.exact);
  EXPECT_NEAR(approx.p_value, exact.p_value, 0.02);
}

TEST(HodgesLehmann, IsTheMedianOfPairwiseDifferences) {
  const std::vector<double> a{1, 2, 3}, b{11, 12, 13, 100};
  // Differences b - a: 8..12 (9 of them, median 10) and 97..99: median of 12 values is 10.5.
  EXPECT_DOUBLE_EQ(hodges_lehmann(a, b), 10.5);
  EXPECT_DOUBLE_EQ(hodges_lehmann(b, a), -10.5);
}

TEST(Holm, AdjustsInRankOrderAndStaysMonotone) {
  const std::vector<double> p{0.04, 0.01, 0.03, 0.5};
  const std::vector<double> adj = holm(p);
  EXPECT_DOUBLE_EQ(adj[1], 0.04);  // 4 * 0.01
  EXPECT_DOUBLE_EQ(adj[2], 0.09);  // 3 * 0.03
  EXPECT_DOUBLE_EQ(adj[0], 0.09);  // 2 * 0.04 = 0.08, raised to the previous 0.09
  EXPECT_DOUBLE_EQ(adj[3], 0.5);
}

Runs make_runs(Rng& rng, int runs, int samples, double p50_ns, double offset_sd, double jitter_sd) {
  Runs out;
  for (int r = 0; r < runs; ++r) {
    const double offset = std::exp(offset_sd * rng.normal());
    std::vector<double> run;
    for (int s = 0; s < samples; ++s)
      run.push_back(p50_ns * offset * std::exp(jitter_sd * rng.normal()));
    out.push_back(std::move(run));
  }
  return out;
}

TEST(EstimateShift, FindsAPlantedShiftInsideItsInterval) {
  Rng rng(1);
  const Runs base = make_runs(rng, 5, 100, 10'000, 0.003, 0.02);
  Runs cand = make_runs(rng, 3, 100, 10'800, 0.003, 0.02);
  const Rule rule;
  Rng boot(2);
  const Shift s = estimate_shift(base, cand, rule, boot);
  EXPECT_TRUE(s.interval_known);
  EXPECT_NEAR(s.change, 0.08, 0.01);
  EXPECT_LT(s.ci_low, s.change);
  EXPECT_GT(s.ci_high, s.change);
  EXPECT_LT(s.ci_low, 0.08 + 1e-9 + 0.01);
  EXPECT_LT(s.p_value, 1e-6);
  EXPECT_EQ(decide(s, s.p_value, rule), Verdict::slower);
  // The same seed gives the same interval.
  Rng again(2);
  const Shift t = estimate_shift(base, cand, rule, again);
  EXPECT_EQ(s.ci_low, t.ci_low);
  EXPECT_EQ(s.ci_high, t.ci_high);
}

TEST(Decide, FollowsTheRule) {
  Rule rule;
  Shift s;
  s.interval_known = true;
  s.change = 0.06, s.ci_low = 0.04, s.ci_high = 0.08;
  EXPECT_EQ(decide(s, 0.001, rule), Verdict::slower);
  EXPECT_EQ(decide(s, 0.2, rule), Verdict::unchanged);  // not significant after correction
  s.change = 0.02, s.ci_low = 0.01, s.ci_high = 0.03;   // real but below the threshold
  EXPECT_EQ(decide(s, 0.001, rule), Verdict::unchanged);
  s.change = -0.06, s.ci_low = -0.08, s.ci_high = -0.04;
  EXPECT_EQ(decide(s, 0.001, rule), Verdict::faster);
  s.change = 0.0, s.ci_low = -0.04, s.ci_high = 0.04;  // wider than the threshold
  EXPECT_EQ(decide(s, 0.001, rule), Verdict::noisy);
  EXPECT_TRUE(unclear(s, rule));
  s.interval_known = false;
  EXPECT_EQ(decide(s, 0.001, rule), Verdict::noisy);
}

// A kernel built with -G on the H100 ran 15x slower in runs within 1 % of each other: an interval
// of +1526 .. +1541 %, 0.15 wide in change. Called noisy before the width became a ratio.
TEST(Decide, AManyfoldSlowdownIsSlowerHoweverWideItsIntervalInChange) {
  Rule rule;
  Shift s;
  s.interval_known = true;
  s.change = 15.31, s.ci_low = 15.26, s.ci_high = 15.41;
  EXPECT_EQ(decide(s, 1e-300, rule), Verdict::slower);
  EXPECT_FALSE(unclear(s, rule));                           // nothing to re-measure
  s.change = -0.94, s.ci_low = -0.941, s.ci_high = -0.939;  // the same, the other way
  EXPECT_EQ(decide(s, 1e-300, rule), Verdict::faster);
  // Wide as a ratio too, but all of it past the threshold: a slowdown of at least 6 %.
  s.change = 0.2, s.ci_low = 0.06, s.ci_high = 0.5;
  EXPECT_EQ(decide(s, 0.001, rule), Verdict::slower);
  EXPECT_EQ(decide(s, 0.2, rule), Verdict::noisy);  // not significant: still unknown
  // Wide and holding the threshold: which side is not known.
  s.change = 0.05, s.ci_low = 0.02, s.ci_high = 0.09;
  EXPECT_EQ(decide(s, 0.001, rule), Verdict::noisy);
}

TEST(CompareSuite, RemeasuresAnUnclearBenchmarkAndStopsAtTheBound) {
  Rng rng(5);
  std::vector<Runs> base{make_runs(rng, 5, 50, 1000, 0.002, 0.01),
                         make_runs(rng, 5, 50, 1000, 0.05, 0.01)};  // very noisy runs
  std::vector<Runs> cand{make_runs(rng, 1, 50, 1000, 0.002, 0.01),
                         make_runs(rng, 1, 50, 1000, 0.05, 0.01)};
  Rule rule;
  int calls = 0;
  const auto results = compare_suite(base, cand, rule, [&](std::size_t i) {
    ++calls;
    return make_runs(rng, 1, 50, 1000, i == 0 ? 0.002 : 0.05, 0.01).front();
  });
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].verdict, Verdict::unchanged);
  EXPECT_EQ(results[1].verdict, Verdict::noisy);
  EXPECT_EQ(results[1].remeasured, rule.max_remeasure);
  EXPECT_EQ(cand[1].size(), 1u + rule.max_remeasure);
  EXPECT_FALSE(suite_fails(results));
}

}  // namespace
}  // namespace ktune::gate

#include "ktune/core/stats.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace ktune {
namespace {

TEST(Stats, EmptyInputGivesZeroSummary) {
  const Summary s = summarize({});
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.median, 0.0);
}

TEST(Stats, OddAndEvenMedians) {
  const std::vector<double> odd = {5, 1, 3};
  EXPECT_DOUBLE_EQ(summarize(odd).median, 3.0);
  const std::vector<double> even = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(summarize(even).median, 2.5);
}

TEST(Stats, MomentsAndExtremes) {
  const std::vector<double> x = {2, 4, 4, 4, 5, 5, 7, 9};
  const Summary s = summarize(x);
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_NEAR(s.stddev, 2.13809, 1e-5);  // sample stddev (n-1)
  EXPECT_EQ(s.min, 2);
  EXPECT_EQ(s.max, 9);
  EXPECT_NEAR(s.relative_stddev(), 2.13809 / 5.0, 1e-5);
}

TEST(Stats, QuantilesInterpolateLikeNumpy) {
  std::vector<double> x;
  for (int i = 0; i <= 100; ++i) x.push_back(i);
  EXPECT_DOUBLE_EQ(quantile_sorted(x, 0.05), 5.0);
  EXPECT_DOUBLE_EQ(quantile_sorted(x, 0.95), 95.0);
  const std::vector<double> y = {1, 2};
  EXPECT_DOUBLE_EQ(quantile_sorted(y, 0.25), 1.25);
}

TEST(Stats, JsonRoundTrip) {
  const std::vector<double> x = {1, 2, 3, 10};
  const Summary s = summarize(x);
  const nlohmann::json j = s;
  EXPECT_TRUE(j.contains("relative_stddev"));
  const Summary back = j.get<Summary>();
  EXPECT_EQ(back.count, s.count);
  EXPECT_DOUBLE_EQ(back.p95, s.p95);
}

}  // namespace
}  // namespace ktune

#include "ktune/gate/history.hpp"

#include <cmath>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace ktune::gate {
namespace {

std::vector<double> noisy(Rng& rng, std::size_t n, double level, double sd) {
  std::vector<double> v;
  for (std::size_t i = 0; i < n; ++i) v.push_back(level + sd * rng.normal());
  return v;
}

TEST(ChangePoints, FindsAStepAndNothingInNoise) {
  Rng rng(3);
  std::vector<double> v = noisy(rng, 15, 0.0, 0.005);
  const auto flat = change_points(v);
  EXPECT_TRUE(flat.empty());
  const auto after = noisy(rng, 10, 0.05, 0.005);
  v.insert(v.end(), after.begin(), after.end());
  const auto step = change_points(v);
  ASSERT_EQ(step.size(), 1u);
  EXPECT_EQ(step[0].first, 15u);
  EXPECT_LT(step[0].second, 0.01);
}

TEST(ChangePoints, FindsTwoSteps) {
  Rng rng(4);
  std::vector<double> v = noisy(rng, 10, 0.0, 0.004);
  for (double x : noisy(rng, 10, 0.06, 0.004)) v.push_back(x);
  for (double x : noisy(rng, 10, 0.02, 0.004)) v.push_back(x);
  const auto cps = change_points(v);
  ASSERT_EQ(cps.size(), 2u);
  EXPECT_EQ(cps[0].first, 10u);
  EXPECT_EQ(cps[1].first, 20u);
}

TEST(History, NamesTheFirstCommitAfterAChangeAndTheEnvironment) {
  std::vector<store::GateRun> runs;
  Rng rng(5);
  for (int s = 0; s < 12; ++s)
    for (int r = 0; r < 3; ++r) {
      store::GateRun g;
      g.session_id = fmt::format("s{:02}", s);
      g.code_commit = fmt::format("c{:02}", s);
      g.env.toolkit = s < 7 ? "12.8" : "13.0";
      g.p50_ns = 1000 * (s < 7 ? 1.0 : 1.08) * std::exp(0.003 * rng.normal());
      runs.push_back(g);
    }
  const auto points = series(runs);
  ASSERT_EQ(points.size(), 12u);
  EXPECT_EQ(points[0].runs, 3u);
  const auto cps = history_change_points(points);
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_EQ(cps[0].first_commit, "c07");
  EXPECT_EQ(cps[0].environment_changes, std::vector<std::string>{"toolkit 12.8 -> 13.0"});
  EXPECT_NEAR(cps[0].after_p50_ns / cps[0].before_p50_ns, 1.08, 0.01);
  EXPECT_THAT(render_history("gemv", points, cps),
              ::testing::HasSubstr("first commit after it c07"));
  const auto j = history_json("gemv", points, cps);
  EXPECT_EQ(j["schema_version"], kHistorySchemaVersion);
  EXPECT_EQ(j["change_points"][0]["index"], 7);
}

}  // namespace
}  // namespace ktune::gate

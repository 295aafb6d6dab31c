#include "ktune/tune/strategy.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "datasets.hpp"
#include "ktune/tune/replay.hpp"
#include "ktune/tune/t4.hpp"

namespace ktune::tune {
namespace {

// A synthetic recorded space, not derived from any dataset: 4 parameters with a smooth bowl,
// an interaction term, ~8 % failures of every kind and some noise. Its optimum is known.
T4File synthetic_space(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  T4File f;
  f.source = "synthetic";
  const double ca = 1 + 5 * u(rng), cb = 1 + 15 * u(rng), cc = 1 + 3 * u(rng);
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 20; ++b)
      for (int c = 0; c < 5; ++c)
        for (int d = 0; d < 4; ++d) {
          T4Record r;
          r.configuration = {
              {"a", Value(1 << a)}, {"b", Value(8 * (b + 1))}, {"c", Value(c)}, {"d", Value(d)}};
          const double bowl = std::pow(a - ca, 2) + 0.05 * std::pow(b - cb, 2) +
                              0.6 * std::pow(c - cc, 2) + 0.3 * d * (a > 4 ? 1 : -0.5);
          r.time_ns = 1e6 * (1 + 0.05 * bowl) * (1 + 0.02 * u(rng));
          const double fail = u(rng);
          if (fail < 0.08) r.status = kAllStatuses[1 + static_cast<int>(fail / 0.08 * 5) % 5];
          f.results.push_back(r);
        }
  return f;
}

std::vector<std::size_t> proposals(const std::string& name, const RecordedSpace& space,
                                   std::uint64_t seed, std::size_t n) {
  auto s = make_strategy(name);
  s->begin(space.index(), seed, n);
  std::vector<std::size_t> out;
  for (std::size_t k = 0; k < n; ++k) {
    const auto i = s->propose();
    if (!i) break;
    out.push_back(*i);
    s->observe(space.evaluate(*i));
  }
  return out;
}

TEST(Strategy, RegistryListsEveryStrategyAndRejectsUnknownNames) {
  std::set<std::string> names;
  for (const auto& s : registered_strategies()) names.insert(s.name);
  EXPECT_EQ(names,
            (std::set<std::string>{"annealing", "exhaustive", "genetic", "model", "random"}));
  EXPECT_TRUE(names.count(default_strategy_name()));
  try {
    make_strategy("bayes");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown strategy 'bayes'; choose one of:"),
              std::string::npos);
  }
}

TEST(Strategy, EachIsReproducibleUnderASeedAndNeverRepeats) {
  const auto space = RecordedSpace::from_records(synthetic_space(1));
  for (const auto& info : registered_strategies()) {
    SCOPED_TRACE(info.name);
    const auto a = proposals(info.name, *space, 42, 120);
    const auto b = proposals(info.name, *space, 42, 120);
    EXPECT_EQ(a, b);
    ASSERT_EQ(a.size(), 120u);
    EXPECT_EQ(std::set<std::size_t>(a.begin(), a.end()).size(), a.size());
    if (info.name != "exhaustive") EXPECT_NE(a, proposals(info.name, *space, 43, 120));
  }
}

TEST(Strategy, EachExhaustsASmallSpaceThenStops) {
  T4File f = synthetic_space(2);
  f.results.resize(30);
  const auto space = RecordedSpace::from_records(f);
  for (const auto& info : registered_strategies()) {
    SCOPED_TRACE(info.name);
    const auto all = proposals(info.name, *space, 7, 100);
    EXPECT_EQ(all.size(), space->index().size());
  }
}

TEST(Strategy, RecordsEveryOutcomeStatusAndCountsFailuresAsSpent) {
  const T4File f = read_t4(test::fixtures_dir() / "statuses_T4.json");
  ASSERT_EQ(f.results.size(), 8u);
  const Status expected[] = {Status::ok,
                             Status::compile_failed,
                             Status::launch_failed,
                             Status::resources_exceeded,
                             Status::wrong_result,
                             Status::timeout,
                             Status::launch_failed,
                             Status::ok};
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(f.results[i].status, expected[i]) << i;
  EXPECT_DOUBLE_EQ(f.results[0].time_ns, 2.5e6);
  EXPECT_DOUBLE_EQ(f.results[7].time_ns, 2.0e6);  // mean of times.runtimes
  EXPECT_EQ(f.results[6].detail, "no numeric time recorded");
  for (Status s : kAllStatuses) {
    EXPECT_EQ(status_from_string(to_string(s)), s);
    // T4 has one word for a correct run: a screened-out ("slower") one reads back as ok.
    EXPECT_EQ(status_from_t4_invalidity(to_t4_invalidity(s)), s == Status::slower ? Status::ok : s);
  }

  const auto space = RecordedSpace::from_records(f);
  EXPECT_DOUBLE_EQ(space->best_time_ns(), 2.0e6);
  auto ex = make_strategy("exhaustive");
  // Enumeration order is (x, y) ascending: 6 of the first 7 fail, the 8th is the optimum.
  EXPECT_DOUBLE_EQ(replay_once(*space, *ex, 0, 1), 2.0 / 2.5);
  EXPECT_DOUBLE_EQ(replay_once(*space, *ex, 0, 2), 2.0 / 2.5);  // a failure spends one
  EXPECT_DOUBLE_EQ(replay_once(*space, *ex, 0, 8), 1.0);
  std::set<Status> seen;
  ex->begin(space->index(), 0, 8);
  while (auto i = ex->propose()) {
    const Evaluation e = space->evaluate(*i);
    seen.insert(e.status);
    ex->observe(e);
  }
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_EQ(ex->history().size(), 8u);
}

TEST(Strategy, ModelBeatsRandomOnSyntheticSpaces) {
  // Held out from any tuning: spaces generated here, not the recorded datasets.
  double model = 0, random = 0;
  for (std::uint64_t s = 0; s < 3; ++s) {
    const auto space = RecordedSpace::from_records(synthetic_space(100 + s));
    const auto r = replay(*space, "model", {60}, 8, 2);
    model += r[0].mean_fraction_of_optimum / 3;
    random += r[0].random_mean_fraction_of_optimum / 3;
  }
  EXPECT_GT(model, random + 0.02) << "model " << model << " random " << random;
  EXPECT_GT(model, 0.95);
}

TEST(Replay, JsonShape) {
  const auto space = RecordedSpace::from_records(synthetic_space(3));
  const auto r = replay(*space, "genetic", {10, 20}, 3, 1);
  const nlohmann::json j = replay_json("genetic", "synthetic", 3, r);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["strategy"], "genetic");
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][1]["budget"], 20);
  for (const auto& e : j["results"]) {
    EXPECT_EQ(e.size(), 3u);
    EXPECT_GT(e["mean_fraction_of_optimum"].get<double>(), 0.0);
    EXPECT_LE(e["mean_fraction_of_optimum"].get<double>(), 1.0);
    EXPECT_LE(e["random_mean_fraction_of_optimum"].get<double>(), 1.0);
  }
  // The thread count does not change results.
  const auto r4 = replay(*space, "genetic", {10, 20}, 3, 4);
  EXPECT_EQ(r4[1].mean_fraction_of_optimum, r[1].mean_fraction_of_optimum);
}

// The CI-sized version of benchmarks/replay: 10 seeds on two recorded spaces, thresholds a bit
// below the full evaluation's targets (0.98 / 0.99 averaged over six, 0.93 on MI250X).
TEST(Replay, DefaultStrategyOnRecordedDedispersionSpaces) {
  KTUNE_REQUIRE_DATASETS();
  double sum100 = 0, sum200 = 0;
  for (const char* gpu : {"MI250X", "A4000"}) {
    const auto space =
        RecordedSpace::load(test::dedispersion_dir() / (std::string(gpu) + "_T4.json.gz"),
                            test::dedispersion_dir() / "T1.json");
    EXPECT_EQ(space->unrecorded(), 0u);
    const auto r = replay(*space, default_strategy_name(), {100, 200}, 10, 2);
    EXPECT_GT(r[0].mean_fraction_of_optimum, r[0].random_mean_fraction_of_optimum) << gpu;
    if (std::string(gpu) == "MI250X") EXPECT_GE(r[0].mean_fraction_of_optimum, 0.90);
    sum100 += r[0].mean_fraction_of_optimum / 2;
    sum200 += r[1].mean_fraction_of_optimum / 2;
  }
  EXPECT_GE(sum100, 0.96);
  EXPECT_GE(sum200, 0.975);
}

}  // namespace
}  // namespace ktune::tune

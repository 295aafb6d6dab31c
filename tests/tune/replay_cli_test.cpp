// ktune replay as a user runs it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../cli/run_ktune.hpp"
#include "datasets.hpp"

namespace ktune {
namespace {

const std::string kFixture = (test::fixtures_dir() / "statuses_T4.json").string();

TEST(ReplayCli, JsonCarriesSchemaVersionAndOneRowPerBudget) {
  const auto r =
      test::run_ktune("replay " + kFixture + " --strategy genetic --budget 2,8 --seeds 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");  // no progress line when piped
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema_version"], 3);
  EXPECT_EQ(j["strategy"], "genetic");
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["budget"], 2);
  EXPECT_DOUBLE_EQ(j["results"][1]["mean_fraction_of_optimum"].get<double>(), 1.0);  // all 8
  EXPECT_DOUBLE_EQ(j["results"][1]["random_mean_fraction_of_optimum"].get<double>(), 1.0);
  EXPECT_EQ(j["prefetch"], 1);
}

TEST(ReplayCli, PrefetchIsReportedAndRangeChecked) {
  auto r = test::run_ktune("replay " + kFixture + " --budget 8 --seeds 2 --prefetch 4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["prefetch"], 4);
  r = test::run_ktune("replay " + kFixture + " --budget 8 --seeds 2 --prefetch 4");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("proposals made 4 ahead of their results"), std::string::npos) << r.out;
  for (const char* bad : {"0", "-2", "x"}) {
    r = test::run_ktune(std::string("replay ") + kFixture + " --prefetch " + bad);
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("--prefetch " + std::string(bad) + ": give a whole number"),
              std::string::npos)
        << r.err;
  }
}

TEST(ReplayCli, AllComparesEveryStrategy) {
  const auto r = test::run_ktune("replay " + kFixture + " --strategy all --budget 4 --seeds 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"genetic", "annealing", "model", "random"})
    EXPECT_NE(r.out.find(s), std::string::npos) << r.out;
}

TEST(ReplayCli, BadInputGetsOneSentence) {
  auto r = test::run_ktune("replay " + kFixture + " --budget 10,x");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("'x' is not a positive integer"), std::string::npos) << r.err;
  r = test::run_ktune("replay " + kFixture + " --strategy nope");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("unknown strategy 'nope'"), std::string::npos) << r.err;
  r = test::run_ktune("replay /nonexistent/x_T4.json");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("/nonexistent/x_T4.json"), std::string::npos) << r.err;
  // Issue 44: a missing file was "not a regular file".
  EXPECT_NE(r.err.find("no such file"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("not a regular file"), std::string::npos) << r.err;
  r = test::run_ktune("replay /dev/null");
  EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
}

TEST(ReplayCli, WarmFromKeepsTheShapeAndNamesItsSources) {
  const auto r = test::run_ktune("replay " + kFixture + " --warm-from " + kFixture +
                                 " --budget 2 --seeds 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema_version"], 3);
  EXPECT_EQ(j["strategy"], "portfolio");
  EXPECT_EQ(j["warm_from"], nlohmann::json::array({kFixture}));
  // Its own recording as the source: the first proposal is the optimum.
  EXPECT_DOUBLE_EQ(j["results"][0]["mean_fraction_of_optimum"].get<double>(), 1.0);
}

// Regression: --seeds -1 became 2^64-1 and allocated until the machine ran out of memory;
// --threads 100000 aborted. Numbers are now parsed strictly and range-checked.
TEST(ReplayCli, CountsAreParsedStrictlyAndRangeChecked) {
  for (const char* bad : {"-1", "0", "1e3", "12x", "100001", "18446744073709551615"}) {
    const auto r = test::run_ktune("replay " + kFixture + " --seeds " + bad);
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_NE(r.err.find("--seeds"), std::string::npos) << bad << ": " << r.err;
  }
  auto r = test::run_ktune("replay " + kFixture + " --threads 100000 --seeds 2 --budget 4");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--threads 100000: give a whole number"), std::string::npos) << r.err;
  r = test::run_ktune("replay " + kFixture + " --budget -5");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--budget"), std::string::npos) << r.err;
  r = test::run_ktune("replay " + kFixture + " --threads 1024 --seeds 2 --budget 4 --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // 10^8 was accepted, and the search never ended; past the space's size it ends there anyway.
  r = test::run_ktune("replay " + kFixture + " --budget 4,100000000");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("100000000 is more than the 8 configurations of the recorded space"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace ktune

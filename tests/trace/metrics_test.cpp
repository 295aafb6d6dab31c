// Metric sets and --metrics parsing: every set resolves to well-formed, distinct names; a list
// mixes sets and names; anything else is one sentence naming the known sets.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "ktune/core/error.hpp"
#include "ktune/trace/metrics.hpp"

namespace ktune::trace::metric {
namespace {

std::string error_of(std::string_view arg) {
  try {
    resolve_metrics(arg);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Metrics, SetsAreNamedAndHoldDistinctMetrics) {
  std::vector<std::string> names;
  for (const MetricSet& set : metric_sets()) {
    names.emplace_back(set.name);
    EXPECT_FALSE(set.description.empty());
    const auto resolved = resolve_metrics(set.name);
    EXPECT_EQ(resolved.size(), set.metrics.size()) << set.name;
    EXPECT_EQ(std::set<std::string>(resolved.begin(), resolved.end()).size(), resolved.size());
    for (const auto& m : resolved) EXPECT_NE(m.find("__"), std::string::npos) << m;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"triage", "roofline", "memory", "stalls", "compute",
                                             "full"}));
}

TEST(Metrics, RooflineHoldsWhatTheVerdictNeeds) {
  const auto r = resolve_metrics("roofline");
  for (std::string_view m :
       {kDuration, kDramBytesRead, kDramBytesWrite, kDramThroughputPct, kFp32Fma, kFp16Fma,
        kFp64Fma, kTensorGmmaFp16Ops, kTensorGmmaBf16Ops, kAchievedOccupancyPct, kSmClockHz})
    EXPECT_NE(std::find(r.begin(), r.end(), m), r.end()) << m;
}

// A verdict is judged on the speed-of-light pair and its stalls on the 19 ratios: triage holds
// both, and nothing it holds is missing from the larger sets a user may ask for instead.
TEST(Metrics, TriageHoldsTheVerdictPairAndEveryStall) {
  const auto t = resolve_metrics("triage");
  for (std::string_view m : {kDuration, kSmThroughputPct, kMemoryThroughputPct})
    EXPECT_NE(std::find(t.begin(), t.end(), m), t.end()) << m;
  for (std::string_view reason : kStallReasons) {
    const std::string name =
        std::string(kStallPrefix) + std::string(reason) + std::string(kStallSuffix);
    EXPECT_NE(std::find(t.begin(), t.end(), name), t.end()) << name;
  }
  const auto rest = resolve_metrics("roofline,memory,stalls");
  for (const auto& m : t) EXPECT_NE(std::find(rest.begin(), rest.end(), m), rest.end()) << m;
}

TEST(Metrics, FullIsTheUnionOfTheOthers) {
  const auto full = resolve_metrics("full");
  for (std::string_view set : {"roofline", "memory", "stalls", "compute"})
    for (const auto& m : resolve_metrics(set))
      EXPECT_NE(std::find(full.begin(), full.end(), m), full.end()) << set << ": " << m;
  EXPECT_EQ(resolve_metrics("roofline,memory,stalls,compute").size(), full.size());
}

TEST(Metrics, StallNamesFollowTheWarpStateSection) {
  const auto s = resolve_metrics("stalls");
  EXPECT_NE(std::find(s.begin(), s.end(),
                      "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"),
            s.end());
}

TEST(Metrics, ListsMixSetsAndNamesWithoutDuplicates) {
  EXPECT_EQ(resolve_metrics(" dram__bytes_read.sum , gpu__time_duration.sum,dram__bytes_read.sum"),
            (std::vector<std::string>{"dram__bytes_read.sum", "gpu__time_duration.sum"}));
  const auto mixed = resolve_metrics("gpu__time_duration.sum,roofline");
  EXPECT_EQ(mixed.size(), resolve_metrics("roofline").size());
  EXPECT_EQ(mixed.front(), "gpu__time_duration.sum");
}

TEST(Metrics, UnknownSetIsOneSentenceNamingTheKnownOnes) {
  const std::string e = error_of("rooflin");
  EXPECT_NE(e.find("'rooflin' is neither a metric set nor a metric name"), std::string::npos) << e;
  EXPECT_NE(e.find("roofline, memory, stalls, compute, full"), std::string::npos) << e;
  EXPECT_NE(error_of("DRAM__bytes").find("neither"), std::string::npos);
  EXPECT_NE(error_of(" , ").find("--metrics is empty"), std::string::npos);
}

}  // namespace
}  // namespace ktune::trace::metric

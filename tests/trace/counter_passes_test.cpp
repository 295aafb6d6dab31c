// Replay passes per metric set on GH100 (H100 and H200), counted by CUPTI's host library with the
// tracer's own configuration code: the cost of a profiled launch grows with its passes, so what
// each set costs is checked here rather than assumed. libnvperf_host needs no GPU.
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "counter_config.hpp"
#include "ktune/trace/metrics.hpp"

namespace ktune::trace {
namespace {

// The passes `metrics` take on `chip`; -1 when the host library cannot load (test skipped).
long passes_of(const std::vector<std::string>& metrics, const std::string& chip = "GH100") {
  std::vector<const char*> names;
  for (const auto& m : metrics) names.push_back(m.c_str());
  CounterConfig config;
  const std::string why = build_counter_config(chip, {}, names, config);
  if (why.find("cuptiProfilerHostInitialize") != std::string::npos) return -1;
  EXPECT_EQ(why, "");
  return static_cast<long>(config.passes);
}

#define PASSES_OR_SKIP(var, ...)           \
  const long var = passes_of(__VA_ARGS__); \
  if (var < 0) GTEST_SKIP() << "CUPTI's host library (libnvperf_host) not loadable here"

TEST(CounterPasses, EachSetTakesTheDocumentedPassesOnGh100) {
  // docs/profiling.md's table. A metric added to a set that costs a pass shows up here.
  const std::map<std::string, long> expected = {{"triage", 14}, {"roofline", 10}, {"memory", 3},
                                                {"stalls", 7},  {"compute", 12},  {"full", 19}};
  for (const auto& [set, want] : expected) {
    PASSES_OR_SKIP(got, metric::resolve_metrics(set));
    EXPECT_EQ(got, want) << set;
  }
}

TEST(CounterPasses, TriageMeasuresTheVerdictAndStallsInTheirOwnPasses) {
  // The speed-of-light pair and the 19 stall ratios, the least a verdict with its top stalls
  // needs; everything else in triage must ride in the same passes.
  PASSES_OR_SKIP(pair, std::vector<std::string>{std::string(metric::kSmThroughputPct),
                                                std::string(metric::kMemoryThroughputPct)});
  EXPECT_EQ(pair, 9);  // as many as ncu's SpeedOfLight section
  const auto triage = metric::resolve_metrics("triage");
  std::vector<std::string> core;  // in triage's order, which the scheduler's packing depends on
  for (const auto& m : triage)
    if (m == metric::kDuration || m == metric::kSmThroughputPct ||
        m == metric::kMemoryThroughputPct || m.rfind(metric::kStallPrefix, 0) == 0)
      core.push_back(m);
  EXPECT_EQ(core.size(), 3 + std::size(metric::kStallReasons));
  PASSES_OR_SKIP(core_passes, core);
  PASSES_OR_SKIP(all, triage);
  EXPECT_EQ(all, core_passes);
  // Two passes fewer than the sets it replaces (roofline,stalls), the verdict's inputs kept.
  PASSES_OR_SKIP(both, metric::resolve_metrics("roofline,stalls"));
  EXPECT_EQ(both, all + 2);
}

TEST(CounterPasses, AnUnknownMetricIsNamed) {
  std::vector<const char*> names = {"gpu__time_duration.sum", "dram__no_such_counter.sum"};
  CounterConfig config;
  const std::string why = build_counter_config("GH100", {}, names, config);
  if (why.find("cuptiProfilerHostInitialize") != std::string::npos)
    GTEST_SKIP() << "CUPTI's host library (libnvperf_host) not loadable here";
  EXPECT_NE(why.find("metric 'dram__no_such_counter.sum' is not known on GH100"), std::string::npos)
      << why;
}

}  // namespace
}  // namespace ktune::trace

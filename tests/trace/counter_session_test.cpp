// What each profiled launch pays, on a fake range profiler: the profiler is initialized once per
// process, the configuration built once per chip and the profiler enabled once per context; a
// launch pays only its arming and collecting. Failures turn the tier off with one sentence.
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "counter_session.hpp"
#include "ktune/trace/metrics.hpp"

namespace ktune::trace {
namespace {

struct FakeProfiler : RangeProfilerApi {
  std::map<std::string, int> calls;
  std::map<Context, std::uint32_t> devices;  // context -> device; device 1 is another chip
  std::string fail;                          // the call that fails, with why "broken"
  bool ran = true;
  std::vector<double> values;

  std::string result(const char* call) {
    ++calls[call];
    return fail == call ? "broken" : "";
  }
  std::string initialize() override { return result("initialize"); }
  std::string device_of(Context ctx, std::uint32_t& device, std::string& chip) override {
    device = devices[ctx];
    chip = device == 1 ? "GA100" : "GH100";
    return result("device_of");
  }
  std::string configure(const std::string& chip, Context, std::size_t& passes) override {
    passes = chip == "GH100" ? 15 : 12;
    return result("configure");
  }
  std::string enable(Context, const std::string&) override { return result("enable"); }
  std::string arm(Context) override { return result("arm"); }
  std::string collect(Context, std::vector<double>& out, bool& r) override {
    r = ran;
    if (ran) out = values;
    return result("collect");
  }
};

const std::vector<std::string> kMetrics = {std::string(metric::kDuration),
                                           std::string(metric::kSmThroughputPct)};
int kA = 0, kB = 0;  // two contexts: their addresses
const RangeProfilerApi::Context ctx_a = &kA, ctx_b = &kB;

// Runs one profiled launch; its records.
std::vector<CounterRecord> launch(CounterSession& s, RangeProfilerApi::Context ctx,
                                  std::uint32_t correlation_id, std::uint64_t* duration = nullptr) {
  std::uint64_t ns = 0;
  if (!s.begin(ctx)) return {};
  auto out = s.end(ctx, correlation_id, ns);
  if (duration) *duration = ns;
  return out;
}

TEST(CounterSession, SetUpOncePerProcessChipAndContextArmingPerLaunch) {
  FakeProfiler api;
  api.values = {1234.0, 61.5};
  api.devices[ctx_b] = 0;  // a second context on the same chip
  CounterSession s(api, kMetrics, [](const std::string& line) { FAIL() << line; });
  for (std::uint32_t id = 1; id <= 3; ++id) EXPECT_EQ(launch(s, ctx_a, id).size(), 2u);
  EXPECT_EQ(launch(s, ctx_b, 4).size(), 2u);
  EXPECT_EQ(api.calls["initialize"], 1);
  EXPECT_EQ(api.calls["configure"], 1);  // one chip, however many contexts
  EXPECT_EQ(api.calls["enable"], 2);     // one per context
  EXPECT_EQ(api.calls["device_of"], 2);
  EXPECT_EQ(api.calls["arm"], 4);
  EXPECT_EQ(api.calls["collect"], 4);
  EXPECT_EQ(s.collected(), 4u);
  EXPECT_EQ(s.passes(), 15u);
}

TEST(CounterSession, EachChipIsConfiguredOnceAndThePassesAreTheMost) {
  FakeProfiler api;
  api.values = {1.0, 2.0};
  api.devices[ctx_b] = 1;
  CounterSession s(api, kMetrics, [](const std::string& line) { FAIL() << line; });
  EXPECT_EQ(s.passes(), 0u);  // unknown before the first launch
  launch(s, ctx_b, 1);
  EXPECT_EQ(s.passes(), 12u);
  launch(s, ctx_a, 2);
  launch(s, ctx_b, 3);
  EXPECT_EQ(api.calls["configure"], 2);
  EXPECT_EQ(s.passes(), 15u);
}

TEST(CounterSession, RecordsCarryTheLaunchAndTheMeasuredDuration) {
  FakeProfiler api;
  api.values = {2500.0, 61.5};
  api.devices[ctx_a] = 3;
  CounterSession s(api, kMetrics, [](const std::string&) {});
  std::uint64_t ns = 0;
  const auto records = launch(s, ctx_a, 42, &ns);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].metric, kMetrics[1]);
  EXPECT_EQ(records[1].value, 61.5);
  EXPECT_EQ(records[1].correlation_id, 42u);
  EXPECT_EQ(records[1].device_id, 3u);
  EXPECT_EQ(ns, 2500u);
  api.ran = false;  // a launch the profiler saw no kernel of: nothing, and no duration
  EXPECT_TRUE(launch(s, ctx_a, 43, &ns).empty());
  EXPECT_EQ(ns, 0u);
  EXPECT_EQ(s.collected(), 1u);
}

TEST(CounterSession, AFailureTurnsTheTierOffWithOneSentenceAndCostsNothingAfter) {
  for (const char* call : {"initialize", "configure", "enable", "arm", "collect"}) {
    FakeProfiler api;
    api.values = {1.0, 2.0};
    api.fail = call;
    std::vector<std::string> said;
    CounterSession s(api, kMetrics, [&](const std::string& line) { said.push_back(line); });
    launch(s, ctx_a, 1);
    launch(s, ctx_a, 2);
    EXPECT_TRUE(s.off()) << call;
    ASSERT_EQ(said.size(), 1u) << call;
    EXPECT_EQ(said[0],
              "hardware counters are off for the rest of this run: broken; the activity trace "
              "is recorded as usual.");
    EXPECT_EQ(api.calls[call], 1) << call;  // never tried again
    EXPECT_EQ(s.collected(), 0u) << call;
  }
}

}  // namespace
}  // namespace ktune::trace

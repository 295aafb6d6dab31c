// ktune report OLD NEW compares per launch: runs of different lengths read the same when their
// launches do, and a change is judged against the noise of both runs' launch durations.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/report/report.hpp"
#include "sections.hpp"
#include "trace_builder.hpp"

namespace ktune::report {
namespace {

using nlohmann::json;

const char* const kGelu =
    "void at::native::vectorized_elementwise_kernel<4, "
    "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::"
    "operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, "
    "at::detail::Array<char*, 2> >(int, at::detail::Array<char*, 2>)";
const char* const kMul =
    "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, "
    "float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3> >(int, "
    "at::detail::Array<char*, 3>)";
const char* const kGemm = "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT";

// `iterations` steps of a training loop: a GEMM (100 us), GELU (20 us), multiply (10 us), each
// with 2 % jitter; `gemm_scale` stretches the GEMM; `extra` adds a kernel of its own.
trace::Trace loop(int iterations, unsigned seed, double gemm_scale = 1.0, const char* extra = "") {
  analyze::test::TraceBuilder b;
  std::mt19937 rng(seed);
  std::normal_distribution<double> jitter(1.0, 0.02);
  double t = 0;
  for (int i = 0; i < iterations; ++i)
    for (const auto& [name, us] :
         {std::pair<const char*, double>{kGemm, 100 * gemm_scale}, {kGelu, 20}, {kMul, 10}}) {
      const double d = us * jitter(rng);
      b.kernel(name, t, t + d);
      t += d + 5;
    }
  if (*extra) b.kernel(extra, t, t + 3);
  return b.t;
}

analyze::Analysis analysis_of(trace::Trace t) {
  analyze::MemorySource source(std::move(t));
  return analyze::analyze(source, {});
}

TEST(ReportCompare, RunsOfDifferentLengthsCompareLaunchByLaunch) {
  // 300 iterations against 20: the totals differ 15-fold, the launches do not.
  const analyze::Analysis before = analysis_of(loop(20, 1)), now = analysis_of(loop(300, 2));
  const auto rows = detail::compare_kernels(now, before);
  ASSERT_EQ(rows.size(), 3u);
  for (const auto& c : rows) {
    ASSERT_TRUE(c.baseline && c.now);
    EXPECT_EQ(c.baseline->duration_ns.count, 20u);
    EXPECT_EQ(c.now->duration_ns.count, 300u);
    ASSERT_TRUE(c.median_change && c.noise);
    EXPECT_LT(std::abs(*c.median_change), 0.02) << c.now->name;
    EXPECT_GT(*c.noise, 0.0);
    EXPECT_EQ(c.change, detail::Change::within_noise) << c.now->name;
  }
  RenderOptions o;
  o.baseline = &before;
  const std::string t = render_text(now, o);
  // The comparison leads, before every other table; no total against total (+1400 %).
  EXPECT_LT(t.find("Compared with the baseline, per launch"), t.find("GPU busy and idle")) << t;
  EXPECT_NE(t.find("20 -> 300"), std::string::npos) << t;
  EXPECT_NE(t.find("within_noise"), std::string::npos) << t;
  EXPECT_EQ(t.find("1400"), std::string::npos) << t;
  EXPECT_NE(t.find("vectorized_elementwise_kernel<GeluCUDAKernelImpl>"), std::string::npos) << t;
  const std::string h = render_html(now, o);
  EXPECT_LT(h.find("Compared with the baseline, per launch"), h.find("<h2>Timeline</h2>"));
  const std::string md = render_markdown(now, o);
  EXPECT_LT(md.find("### Compared with the baseline, per launch"),
            md.find("### GPU busy and idle"));
}

TEST(ReportCompare, AChangeBeyondTheNoiseIsNamedAndNewAndGoneKernelsListed) {
  const analyze::Analysis before = analysis_of(loop(50, 3, 1.0, "void old_only<1>(int)"));
  const analyze::Analysis now = analysis_of(loop(80, 4, 1.2, "void new_only<1>(int)"));
  RenderOptions o;
  o.baseline = &before;
  const json j = json::parse(render_json(now, o));
  const json& b = j["baseline"];
  std::map<std::string, json> by_name;
  for (const json& k : b["kernels"]) by_name[k["display_name"]] = k;
  ASSERT_EQ(by_name.size(), 5u) << b.dump(1);
  const json& gemm = by_name[kGemm];
  EXPECT_EQ(gemm["verdict"], "slower");
  EXPECT_NEAR(gemm["median_change"].get<double>(), 0.2, 0.02);
  EXPECT_LT(gemm["noise"].get<double>(), 0.05);
  EXPECT_EQ(by_name["vectorized_elementwise_kernel<MulFunctor>"]["verdict"], "within_noise");
  EXPECT_EQ(by_name["new_only"]["verdict"], "new");
  EXPECT_TRUE(by_name["new_only"]["baseline"].is_null());
  EXPECT_EQ(by_name["old_only"]["verdict"], "gone");
  EXPECT_TRUE(by_name["old_only"]["now"].is_null());
  // The shape of the comparison (schema_version 8).
  EXPECT_EQ(j["schema_version"], 11);
  std::vector<std::string> keys;
  for (auto it = gemm.begin(); it != gemm.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"baseline", "display_name", "median_change", "name",
                                            "noise", "now", "verdict"}));
  keys.clear();
  for (auto it = gemm["now"].begin(); it != gemm["now"].end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"count", "max_ns", "mean_ns", "median_ns", "min_ns",
                                            "q1_ns", "q3_ns", "total_ns"}));
  EXPECT_EQ(gemm["now"]["count"], 80);
  EXPECT_EQ(gemm["baseline"]["count"], 50);
  const std::string t = render_text(now, o);
  EXPECT_NE(t.find("slower"), std::string::npos) << t;
  EXPECT_NE(t.find(fmt::format("{:+.1f} %", 100 * gemm["median_change"].get<double>())),
            std::string::npos)
      << t;
}

TEST(ReportCompare, TooFewLaunchesGetNoVerdict) {
  const analyze::Analysis before = analysis_of(loop(2, 5)), now = analysis_of(loop(2, 6, 1.5));
  for (const auto& c : detail::compare_kernels(now, before))
    EXPECT_EQ(c.change, detail::Change::few_launches);
}

}  // namespace
}  // namespace ktune::report

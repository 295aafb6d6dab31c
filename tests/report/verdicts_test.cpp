// The counter tier in the reports: the verdict table, the JSON derivation (shape pinned), the
// profile contract (golden), names, and the comparison with a baseline.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "counter_samples.hpp"
#include "ktune/report/report.hpp"

namespace ktune::report {
namespace {

using analyze::test::CounterTraceBuilder;
using nlohmann::json;
using Keys = std::vector<std::string>;

trace::Trace counter_trace() {
  return analyze::test::sample_counter_trace();
}

analyze::Analysis analysis_of(trace::Trace t) {
  analyze::MemorySource source(std::move(t));
  analyze::AnalysisOptions options;
  options.ceilings = analyze::test::h100_ceilings();
  return analyze::analyze(source, options);
}

std::vector<std::string> keys(const json& j) {
  std::vector<std::string> out;
  for (auto it = j.begin(); it != j.end(); ++it) out.push_back(it.key());
  return out;
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ReportCounters, TextShowsTheVerdictTableWithBaseNames) {
  const std::string t = render_text(analysis_of(counter_trace()), {});
  for (const char* s :
       {"Why it is slow (counter tier)", "Bottleneck", "Key issue", "TC %", "DRAM %",
        "memory-bound", "compute-bound", "latency-bound", "launch-bound", "locality", "tensor pipe",
        "occupancy (registers)", "12.2 of 12.5 % (registers)", "What to change",
        "waves_per_sm=", "vectorized_elementwise_kernel", "attention_fwd"})
    EXPECT_NE(t.find(s), std::string::npos) << s << "\n" << t;
  // Tables show base names: no template arguments, no parameters.
  EXPECT_EQ(t.find("at::native::FillFunctor"), std::string::npos) << t;
  EXPECT_EQ(t.find("attention_fwd<128"), std::string::npos) << t;
}

TEST(ReportCounters, FullNamesOnRequest) {
  RenderOptions o;
  o.names = analyze::NameStyle::full;
  const std::string t = render_text(analysis_of(counter_trace()), o);
  EXPECT_NE(t.find("attention_fwd<128, 64>(Params)"), std::string::npos) << t;
}

TEST(ReportCounters, WithoutCountersThereIsNoVerdictTable) {
  CounterTraceBuilder b;
  b.kernel("k(int)", 0, 10);
  const std::string t = render_text(analysis_of(b.t), {});
  EXPECT_EQ(t.find("Why it is slow"), std::string::npos) << t;
}

// Pins the derivation's JSON shape: a change here needs a new report schema_version.
TEST(ReportCounters, JsonShapeIsPinnedAndKeepsFullNames) {
  const json j = json::parse(render_json(analysis_of(counter_trace()), {}));
  EXPECT_EQ(j["schema_version"], 11);
  const json& c = j["counters"];
  EXPECT_EQ(keys(c["ceilings"]), (Keys{"bf16_flop_per_s", "dram_bytes_per_s", "fp16_flop_per_s",
                                       "fp32_flop_per_s", "kind", "origin", "source"}));
  EXPECT_EQ(c["profiled_launches"], 7);
  ASSERT_EQ(c["kernels"].size(), 7u);
  const json& k = c["kernels"][0];  // the longest: the locality GEMM (2 ms)
  EXPECT_EQ(keys(k), (Keys{"achieved_occupancy_pct",
                           "arithmetic_intensity",
                           "bottleneck",
                           "device",
                           "display_name",
                           "dram_bytes",
                           "dram_bytes_per_s",
                           "dram_pct",
                           "duration_ns",
                           "flop",
                           "flop_per_s",
                           "fp16_flop",
                           "fp32_flop",
                           "fp64_flop",
                           "key_issue",
                           "l2_hit_pct",
                           "launch",
                           "launches",
                           "library",
                           "local_memory_bytes",
                           "local_memory_per_thread_bytes",
                           "measure_with",
                           "memory_pct",
                           "metrics",
                           "name",
                           "near_line",
                           "opportunities",
                           "roofline",
                           "root_cause",
                           "shape_launches",
                           "shape_total_ns",
                           "sm_pct",
                           "sm_pct_metric",
                           "stall_cause",
                           "stalls",
                           "tensor_flop",
                           "tensor_pct",
                           "theoretical_occupancy",
                           "tune_command",
                           "unknown",
                           "warp_cycles_per_issue",
                           "waves_per_sm"}));
  EXPECT_EQ(k["shape_launches"], 1);
  EXPECT_EQ(k["shape_total_ns"], 2'000'000);
  EXPECT_EQ(k["library"], "");
  EXPECT_TRUE(k["stalls"].empty());  // no stalls set: an empty list
  EXPECT_EQ(k["stall_cause"], "none");
  EXPECT_EQ(k["name"], "sgemm_naive(float const*, float const*, float*, int)");
  EXPECT_EQ(k["display_name"], "sgemm_naive");
  EXPECT_EQ(k["sm_pct_metric"], "sm__throughput.avg.pct_of_peak_sustained_elapsed");
  EXPECT_EQ(k["bottleneck"], "locality");
  EXPECT_EQ(keys(k["theoretical_occupancy"]),
            (Keys{"active_warps_per_sm", "blocks_per_sm", "limiter", "occupancy_pct"}));
  EXPECT_EQ(keys(k["roofline"]),
            (Keys{"attainable_flop_per_s", "flop_from_tensor_pipe", "fraction_of_roof",
                  "peak_flop_per_s", "precision", "ridge_flop_per_byte"}));
  EXPECT_EQ(keys(k["opportunities"][0]), (Keys{"action", "bound", "estimated_gain", "trigger"}));
  EXPECT_EQ(k["measure_with"], "");
  EXPECT_TRUE(k["near_line"].is_null());
  EXPECT_TRUE(k["fp16_flop"].is_null());  // not collected: null, not 0
  bool full_name = false;
  for (const auto& x : c["kernels"]) full_name |= x["name"] == "attention_fwd<128, 64>(Params)";
  EXPECT_TRUE(full_name);
}

// A stall profile: every reason with its share in JSON, the top three in the tables, the cause
// beside the verdict, and the launch the counters were taken on.
TEST(ReportCounters, StallReasonsAreShownWithTheirShares) {
  CounterTraceBuilder b;
  trace::KernelRecord& k =
      b.launch("stencil(float const*, float*, int)", 200, 2112, 256, 32, 0,
               {{analyze::test::m::kDuration, 200'000}, {analyze::test::m::kIssueActivePct, 30}});
  const std::pair<const char*, double> reasons[] = {
      {"long_scoreboard", 6.0}, {"wait", 1.5}, {"selected", 1.0}, {"barrier", 0.5}, {"misc", 1.0}};
  for (const auto& [reason, value] : reasons)
    b.t.counters.push_back({0, k.correlation_id,
                            std::string(analyze::test::m::kStallPrefix) + reason +
                                std::string(analyze::test::m::kStallSuffix),
                            value});
  analyze::test::add_h100_identity(b.t);
  const analyze::Analysis a = analysis_of(b.t);
  const json j = json::parse(render_json(a, {}));
  const json& d = j["counters"]["kernels"][0];
  ASSERT_EQ(d["stalls"].size(), 5u);
  EXPECT_EQ(keys(d["stalls"][0]), (Keys{"reason", "share", "warps_per_issue"}));
  EXPECT_EQ(d["stalls"][0]["reason"], "long_scoreboard");
  EXPECT_DOUBLE_EQ(d["stalls"][0]["share"].get<double>(), 0.6);
  EXPECT_EQ(d["stall_cause"], "memory latency");
  // A stall profile alone measures no verdict: it says so, with the flag that would.
  EXPECT_EQ(d["bottleneck"], "not measured");
  EXPECT_EQ(d["measure_with"], "--metrics triage");
  EXPECT_TRUE(d["opportunities"].empty());
  const std::string t = render_text(a, {});
  for (const char* s : {"Top stalls", "long_scoreboard 60%, wait 15%, selected 10%",
                        "not measured (--metrics triage)", "2112x1x1 256x1x1"})
    EXPECT_NE(t.find(s), std::string::npos) << s << "\n" << t;
  const std::string md = render_contract(a, {});
  for (const char* s :
       {"| Top stalls |", "long_scoreboard 60%, wait 15%, selected 10%",
        "profiled launch: grid 2112x1x1 block 256x1x1, 1 profiled at 200.00 us each; "
        "launches of that shape: 1, 200.00 us in all"})
    EXPECT_NE(md.find(s), std::string::npos) << s << "\n" << md;
}

// The profile contract is pinned line by line. KTUNE_UPDATE_GOLDEN=1 rewrites the golden file
// (review its diff like code).
// The run's opportunities are weighted by the time of the launches they were measured on: the
// profiled shape owns a third of the kernel's time, so its 50 % estimate is worth a sixth of the
// kernel's time, not half of it (the issue's "top opportunity 50 %" read over all launches).
TEST(ReportCounters, RunGainIsWeightedByTheMeasuredLaunchesTime) {
  namespace m = analyze::test::m;
  CounterTraceBuilder b;
  const std::string copy = "copy_rows(float const*, float*, long)";
  // Measured: 100 us, memory at 90 %, SM at 20 %: halving bytes saves 50 %.
  b.launch(copy, 100, 8448, 256, 24, 0,
           {{m::kDuration, 100'000},
            {m::kSmThroughputPct, 20},
            {m::kMemoryThroughputPct, 90},
            {m::kDramThroughputPct, 90},
            {m::kFp32Fma, 0}});
  // Unprofiled launches of another shape: 200 us of the kernel's 300.
  b.kernel(copy, 1000, 1200, 77).grid_x = 16896;
  b.t.kernels.back().block_x = 256;
  analyze::test::add_h100_identity(b.t);
  const analyze::Analysis a = analysis_of(b.t);
  ASSERT_EQ(a.counters.kernels.size(), 1u);
  EXPECT_NEAR(a.counters.kernels[0].opportunities.at(0).estimated_gain, 0.5, 1e-9);
  const std::string md = render_contract(a, {});
  EXPECT_NE(md.find("| 50.0 % | 33.3 % | 16.7 % |"), std::string::npos) << md;
}

TEST(ReportCounters, ContractMatchesTheGoldenFile) {
  const std::string path = std::string(KTUNE_SOURCE_DIR) + "/tests/report/golden/contract.md";
  const std::string md = render_contract(analysis_of(counter_trace()), {});
  if (std::getenv("KTUNE_UPDATE_GOLDEN")) std::ofstream(path) << md;
  EXPECT_EQ(md, read(path));
  for (const char* s : {"# Profile contract", "## Configuration", "## Stages",
                        "## Bottleneck and root cause", "## Top 3 opportunities"})
    EXPECT_NE(md.find(s), std::string::npos) << s;
}

TEST(ReportCounters, BaselineTableShowsTheChangePerMetric) {
  trace::Trace old_trace = counter_trace();
  trace::Trace new_trace = counter_trace();
  // The new run's copy is 10 % faster and reaches more of DRAM.
  for (auto& c : new_trace.counters) {
    if (c.correlation_id != 1000) continue;
    if (c.metric == trace::metric::kDuration) c.value = 166'500;
    if (c.metric == trace::metric::kDramThroughputPct) c.value = 96.8;
  }
  const analyze::Analysis before = analysis_of(old_trace), after = analysis_of(new_trace);
  RenderOptions o;
  o.baseline = &before;
  const std::string t = render_text(after, o);
  EXPECT_NE(t.find("vs baseline"), std::string::npos) << t;
  EXPECT_NE(t.find("-10.0 %"), std::string::npos) << t;  // copy duration
  EXPECT_NE(t.find("+10.0 %"), std::string::npos) << t;  // its DRAM %
  const std::string md = render_contract(after, o);
  EXPECT_NE(md.find("## Counters vs baseline"), std::string::npos) << md;
  EXPECT_NE(md.find("## Compared with the baseline, per launch"), std::string::npos) << md;
  const json j = json::parse(render_json(after, o));
  EXPECT_EQ(keys(j["baseline"]), (Keys{"command_line", "kernel_time_ns", "kernels", "metrics",
                                       "min_launches", "noise_method", "started_at"}));
  EXPECT_FALSE(j["baseline"]["metrics"].empty());
}

TEST(ReportTimeline, OverlapAndSerializedKernelsAreShown) {
  CounterTraceBuilder b;
  analyze::test::add_h100_identity(b.t);
  b.kernel("gemm", 0, 100);
  b.memcpy("HtoD", 50, 150, 1 << 20);
  b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 150, 200, 0,
           9);
  for (int i = 0; i < 3; ++i)
    b.kernel("void tiny<1>(int)", 300.0 + 11 * i, 310.0 + 11 * i).grid_x = 8;
  const std::string t = render_text(analysis_of(b.t), {});
  for (const char* s : {"Overlap", "Hidden", "Exposed", "Serialized kernels", "tiny", "20.00 us"})
    EXPECT_NE(t.find(s), std::string::npos) << s << "\n" << t;
  const json j = json::parse(render_json(analysis_of(b.t), {}));
  EXPECT_EQ(j["timeline"]["devices"][0]["copy_under_kernel_ns"], 50'000);
  EXPECT_EQ(j["timeline"]["devices"][0]["collective_exposed_ns"], 50'000);
  EXPECT_EQ(j["timeline"]["serialized_runs"].size(), 1u);
}

TEST(ReportCounters, HtmlDrawsTheRooflineBesideTheTimeline) {
  const std::string h = render_html(analysis_of(counter_trace()), {});
  EXPECT_NE(h.find("aria-label=\"roofline\""), std::string::npos);
  EXPECT_NE(h.find("Arithmetic intensity (FLOP/byte)"), std::string::npos);
  // BF16 and FP16 at one height: one roof, one label.
  for (const char* roof : {"BF16 = FP16 660 TFLOP/s", "FP32 51 TFLOP/s", "DRAM 3 TB/s"})
    EXPECT_NE(h.find(roof), std::string::npos) << roof;
  std::size_t points = 0;
  for (std::size_t at = h.find("class=\"kernel\""); at != std::string::npos;
       at = h.find("class=\"kernel\"", at + 1))
    ++points;
  // Not the copy (no FLOPs) nor the tiny kernel (FLOPs not collected): listed under the chart.
  EXPECT_EQ(points, 5u);
  EXPECT_NE(h.find("doing no FLOPs (a FLOP/s axis has no place for them; their DRAM throughput "
                   "is in the tables): copy_kernel."),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("FLOPs not collected (ktune profile --metrics roofline collects them): "
                   "vectorized_elementwise_kernel&lt;FillFunctor&gt;."),
            std::string::npos);
  // Each point's number names it in the legend.
  EXPECT_NE(h.find("<td>2</td><td title=\"nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT\">nvjet_tst_"),
            std::string::npos)
      << h;
  EXPECT_NE(h.find("attention_fwd&lt;128, 64&gt;(Params)"), std::string::npos);  // in titles
  EXPECT_LT(h.find("<h2>Timeline</h2>"), h.find("<h2>Roofline</h2>"));
  EXPECT_EQ(h.find("<script src"), std::string::npos);
  // Points coloured by verdict: the copy is not plotted (no FLOPs), the locality GEMM is.
  EXPECT_NE(h.find(std::string("fill=\"") + verdict_color(analyze::Bottleneck::locality)),
            std::string::npos);
}

// A kernel profiled at two launch shapes is two points; the legend tells them apart by launch.
TEST(ReportCounters, RooflineLegendTellsTwoShapesOfOneKernelApart) {
  CounterTraceBuilder b;
  for (int grid : {64, 132})
    b.launch("flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64> >(Params)", 400, grid, 384, 168, 0,
             {{analyze::test::m::kDuration, 400'000},
              {analyze::test::m::kSmThroughputPct, 50},
              {analyze::test::m::kMemoryThroughputPct, 40},
              {analyze::test::m::kDramBytesRead, 1e8},
              {analyze::test::m::kFp32Fma, 1e10}});
  analyze::test::add_h100_identity(b.t);
  const std::string h = render_html(analysis_of(b.t), {});
  for (const char* label : {"(grid 64, block 384)", "(grid 132, block 384)"})
    EXPECT_NE(h.find(label), std::string::npos) << label << "\n" << h;
}

}  // namespace
}  // namespace ktune::report

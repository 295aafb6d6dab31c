#include "ktune/report/report.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"
#include "trace_builder.hpp"

namespace ktune::report {
namespace {

using analyze::test::TraceBuilder;
using nlohmann::json;

analyze::Analysis sample() {
  TraceBuilder b;
  b.nvtx("step", 0, 300);
  b.launched("gemm_kernel", 0, 5, 10, 110, 1);
  b.launched("gemm_kernel", 6, 9, 110, 210, 2);
  b.launched("relu<float>", 10, 12, 250, 260, 3);  // launch-bound? no: ended long before
  b.memcpy("DtoH", 270, 280, 4096, 4);
  b.api("cudaMemcpy", 262, 281, 4);
  b.launched("a|b", 282, 290, 295, 300, 5);
  analyze::MemorySource source(b.t);
  return analyze::analyze(source);
}

std::vector<std::string> keys(const json& j) {
  std::vector<std::string> out;
  for (auto it = j.begin(); it != j.end(); ++it) out.push_back(it.key());
  return out;
}

using Keys = std::vector<std::string>;

// Pins the JSON shape: a change here is a schema change and needs a new schema_version.
TEST(ReportJson, ShapeIsPinned) {
  const json j = json::parse(render_json(sample(), {}));
  EXPECT_EQ(j["schema_version"], 3);
  EXPECT_EQ(j["kind"], "ktune.report");
  EXPECT_EQ(keys(j), (Keys{"backlog", "baseline", "copies", "counters", "devices", "gaps",
                           "group_by", "kernels", "kind", "nvtx", "schema_version", "storms",
                           "timeline", "totals", "trace"}));
  EXPECT_EQ(keys(j["timeline"]), (Keys{"devices", "serialized_runs", "sm_count_known"}));
  EXPECT_EQ(
      keys(j["timeline"]["devices"][0]),
      (Keys{"collective_exposed_ns", "collective_ns", "copy_ns", "copy_under_kernel_ns", "device",
            "idle_next_to_collective_ns", "serialized_runs", "serialized_saving_ns"}));
  EXPECT_TRUE(j["baseline"].is_null());
  EXPECT_EQ(keys(j["counters"]),
            (Keys{"ceilings", "kernels", "profiled_launches", "unmatched_launches"}));
  EXPECT_TRUE(j["counters"]["kernels"].empty());
  EXPECT_EQ(keys(j["totals"]), (Keys{"api_calls", "busy_ns", "busy_pct", "idle_ns", "idle_pct",
                                     "kernel_count", "kernel_time_ns", "window_ns"}));
  EXPECT_EQ(keys(j["kernels"][0]),
            (Keys{"count", "distinct_shapes", "launch", "max_ns", "mean_ns", "median_ns", "min_ns",
                  "name", "share", "stddev_ns", "total_ns"}));
  EXPECT_EQ(keys(j["kernels"][0]["launch"]),
            (Keys{"block", "grid", "registers_per_thread", "shared_mem_bytes"}));
  EXPECT_EQ(keys(j["devices"][0]),
            (Keys{"busy_ns", "busy_pct", "device", "idle_by_cause", "idle_ns", "idle_pct",
                  "kernels", "timeline", "window_end_ns", "window_start_ns"}));
  EXPECT_EQ(keys(j["gaps"]), (Keys{"by_cause", "count", "idle_ns", "largest"}));
  EXPECT_EQ(keys(j["gaps"]["by_cause"]),
            (Keys{"copies", "launch_bound", "synchronization", "unattributed"}));
  EXPECT_EQ(keys(j["gaps"]["largest"][0]),
            (Keys{"cause", "device", "duration_ns", "end_ns", "next_kernel", "start_ns"}));
  EXPECT_EQ(keys(j["storms"]), (Keys{"count", "longest"}));
  EXPECT_EQ(keys(j["nvtx"][0]), (Keys{"count", "kernel_gpu_ns", "kernels", "max_ns", "mean_ns",
                                      "median_ns", "min_ns", "name", "stddev_ns", "total_ns"}));
  EXPECT_EQ(keys(j["copies"][0]), (Keys{"bytes", "count", "kind", "total_ns"}));
  EXPECT_EQ(keys(j["backlog"]), (Keys{"kernels", "share", "target_share"}));
  EXPECT_EQ(keys(j["trace"]),
            (Keys{"capped_records", "command_line", "complete", "dropped_records", "finished_at",
                  "first_skipped_record", "mode", "origin_ns", "pid", "records", "schema_version",
                  "skipped_records", "started_at", "tracer_version"}));
}

TEST(ReportJson, ValuesAddUp) {
  const json j = json::parse(render_json(sample(), {}));
  EXPECT_EQ(j["totals"]["kernel_count"], 4);
  EXPECT_EQ(j["totals"]["kernel_time_ns"], 215'000);
  EXPECT_EQ(j["kernels"][0]["name"], "gemm_kernel");
  EXPECT_EQ(j["kernels"][0]["total_ns"], 200'000);
  EXPECT_EQ(j["kernels"][0]["launch"]["grid"], json({128, 1, 1}));
  EXPECT_DOUBLE_EQ(j["totals"]["busy_pct"].get<double>() + j["totals"]["idle_pct"].get<double>(),
                   100.0);
  // Window 10..300 us; busy 200 + 10 + 5 us; gaps 210..250 and 260..295. The second gap is split:
  // the DtoH copy covers 270..280, and a|b's launch call (282..290) was running for the rest.
  EXPECT_EQ(j["totals"]["window_ns"], 290'000);
  EXPECT_EQ(j["totals"]["idle_ns"], 75'000);
  EXPECT_EQ(j["gaps"]["by_cause"]["copies"]["total_ns"], 10'000);
  EXPECT_EQ(j["gaps"]["by_cause"]["launch_bound"]["total_ns"], 25'000);
  EXPECT_EQ(j["gaps"]["by_cause"]["unattributed"]["total_ns"], 40'000);
  EXPECT_EQ(j["gaps"]["by_cause"]["copies"]["count"], 1);
  EXPECT_EQ(j["gaps"]["by_cause"]["launch_bound"]["count"], 1);
  EXPECT_EQ(j["gaps"]["largest"][0]["cause"], "unattributed");  // 40 us, the longer gap
  EXPECT_EQ(j["gaps"]["largest"][1]["cause"], "launch_bound");  // its largest share, 25 of 35 us
  EXPECT_EQ(j["backlog"]["kernels"], json({"gemm_kernel"}));
  EXPECT_EQ(j["nvtx"][0]["kernels"], 4);
}

TEST(ReportJson, NamesThatAreNotUtf8AreReplacedNotFatal) {
  // Found by fuzz_ktrace: an NVTX message or argv in Latin-1 made render_json throw
  // json type_error 316 (an "internal error" for the user).
  TraceBuilder b;
  b.nvtx("caf\xe9", 0, 100);
  b.launched("k\xff", 0, 5, 10, 110, 1);
  b.t.metadata.command_line = {"prog", "\xc3("};
  analyze::MemorySource source(b.t);
  const analyze::Analysis a = analyze::analyze(source);
  std::string text;
  ASSERT_NO_THROW(text = render_json(a, {}));
  const json j = json::parse(text);
  EXPECT_EQ(j["nvtx"][0]["name"], "caf\xef\xbf\xbd");  // U+FFFD
  EXPECT_EQ(j["kernels"][0]["name"], "k\xef\xbf\xbd");
}

TEST(ReportText, ShowsTheTablesPeopleRead) {
  const std::string t = render_text(sample(), {});
  for (const char* s :
       {"Kernels by total GPU time (--by name)", "gemm_kernel", "93.0 %", "200.00 us",
        "GPU busy and idle", "Idle gaps by cause", "memory copies", "Tuning backlog",
        "1 kernels own 93.0 %", "NVTX ranges", "python3 train.py", "128x1x1 256x1x1"})
    EXPECT_NE(t.find(s), std::string::npos) << s << "\n" << t;
}

TEST(ReportText, TopLimitsTheKernelRows) {
  const std::string t = render_text(sample(), {1});
  EXPECT_NE(t.find("Top 1 of 3"), std::string::npos) << t;
  // The launch-shape column appears in the kernel table only: one row left.
  const std::string shape = "128x1x1 256x1x1";
  EXPECT_NE(t.find(shape), std::string::npos) << t;
  EXPECT_EQ(t.find(shape, t.find(shape) + 1), std::string::npos) << t;
}

TEST(ReportMarkdown, IsPipeTablesWithEscapedCells) {
  const std::string m = render_markdown(sample(), {});
  EXPECT_EQ(m.rfind("## ktune report", 0), 0u);
  EXPECT_NE(m.find("| Time | Total | Count |"), std::string::npos) << m;
  EXPECT_NE(m.find("| --- |"), std::string::npos);
  EXPECT_NE(m.find("a\\|b"), std::string::npos) << m;  // a '|' in a name cannot split a row
}

TEST(ReportHtml, IsOneSelfContainedFile) {
  const std::string h = render_html(sample(), {});
  EXPECT_EQ(h.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(h.find("<svg"), std::string::npos);
  EXPECT_NE(h.find("relu&lt;float&gt;"), std::string::npos);  // names are escaped
  EXPECT_EQ(h.find("relu<float>"), std::string::npos);
  for (const char* external : {"<script", "<link", "src=", "href=", "@import", "url("})
    EXPECT_EQ(h.find(external), std::string::npos) << external;
  EXPECT_NE(h.find("</html>"), std::string::npos);
}

TEST(ReportFormats, AreRegisteredByName) {
  for (const char* name : {"text", "md", "json", "html", "contract"})
    EXPECT_EQ(find_format(name).name, name);
  try {
    find_format("pdf");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("text, md, json, html, contract"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ktune::report

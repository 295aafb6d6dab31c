#include "ktune/report/chrome_trace.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "trace_builder.hpp"

namespace ktune::report {
namespace {

using analyze::test::TraceBuilder;
using nlohmann::json;

json export_json(const trace::Trace& t, ChromeTraceCounts* counts = nullptr) {
  analyze::MemorySource source(t);
  std::ostringstream out;
  const ChromeTraceCounts c = write_chrome_trace(source, out);
  if (counts) *counts = c;
  return json::parse(out.str());
}

std::map<std::string, int> count_by(const json& events, const char* phase, const char* cat) {
  std::map<std::string, int> n;
  for (const auto& e : events)
    if (e["ph"] == phase && (!cat || e.value("cat", "") == cat)) ++n[e.value("name", "")];
  return n;
}

int count(const json& events, const char* phase, const char* cat = nullptr) {
  int n = 0;
  for (const auto& [name, c] : count_by(events, phase, cat)) n += c;
  return n;
}

TraceBuilder sample() {
  TraceBuilder b;
  b.launched("gemm", 0, 5, 10, 110, 1);
  b.launched("gemm", 6, 9, 110, 210, 2);
  b.kernel("graph_node", 220, 230, 3);  // two kernels of one graph launch share an id
  b.kernel("graph_node", 230, 240, 3);
  b.api("cudaGraphLaunch", 12, 20, 3);
  b.memcpy("HtoD", 250, 260, 1024, 4);
  b.api("cudaMemcpyAsync", 240, 241, 4);
  b.api("cudaStreamSynchronize", 242, 261);
  b.kernel("orphan", 270, 280, 0, 9);  // no launch call recorded
  b.nvtx("step", 0, 300);
  b.nvtx("other thread", 0, 100, 12);
  return b;
}

TEST(ChromeTrace, EventCountsMatchTheRecords) {
  const TraceBuilder b = sample();
  ChromeTraceCounts c;
  const json j = export_json(b.t, &c);
  const json& ev = j["traceEvents"];
  EXPECT_EQ(c.kernels, 5u);
  EXPECT_EQ(c.memcpys, 1u);
  EXPECT_EQ(c.api_calls, 5u);
  EXPECT_EQ(c.nvtx_ranges, 2u);
  EXPECT_EQ(count(ev, "X", "kernel"), 5);
  EXPECT_EQ(count(ev, "X", "memcpy"), 1);
  EXPECT_EQ(count(ev, "X", "cuda_api"), 5);
  EXPECT_EQ(count(ev, "X", "nvtx"), 2);
  // gemm x2, the graph launch (its first kernel only) and the memcpy.
  EXPECT_EQ(c.flows, 4u);
  EXPECT_EQ(count(ev, "s"), 4);
  EXPECT_EQ(count(ev, "f"), 4);
  EXPECT_EQ(j["otherData"]["schema_version"], 1);
  EXPECT_EQ(j["displayTimeUnit"], "ns");
}

TEST(ChromeTrace, EachFlowJoinsTheLaunchCallToItsGpuWork) {
  const json ev = export_json(sample().t)["traceEvents"];
  std::map<int, json> starts, finishes;
  for (const auto& e : ev) {
    if (e["ph"] == "s") starts[e["id"]] = e;
    if (e["ph"] == "f") finishes[e["id"]] = e;
  }
  ASSERT_EQ(starts.size(), finishes.size());
  for (const auto& [id, f] : finishes) {
    ASSERT_TRUE(starts.count(id)) << id;
    const json& s = starts[id];
    EXPECT_EQ(s["pid"], 4242);                              // host process track
    EXPECT_EQ(s["tid"], 11);                                // the launching thread
    EXPECT_GE(f["pid"].get<long long>(), 1'000'000'000LL);  // a GPU track
    EXPECT_EQ(f["bp"], "e");
    EXPECT_LT(s["ts"].get<double>(), f["ts"].get<double>());
  }
  EXPECT_EQ(finishes[3]["ts"].get<double>(), 220.0);  // the graph's first kernel
}

TEST(ChromeTrace, TracksAreNamedAndTimesCountFromTheFirstRecord) {
  const json ev = export_json(sample().t)["traceEvents"];
  std::set<std::string> names;
  for (const auto& e : ev)
    if (e["ph"] == "M") names.insert(e["args"]["name"].get<std::string>());
  for (const char* n : {"GPU 0", "stream 7", "stream 9", "process 4242", "thread 11", "thread 12"})
    EXPECT_TRUE(names.count(n)) << n;
  for (const auto& e : ev) {
    if (e["ph"] != "X" || e["name"] != "gemm") continue;
    EXPECT_EQ(e["tid"], 7);  // its stream
    EXPECT_EQ(e["dur"].get<double>(), 100.0);
    EXPECT_EQ(e["args"]["grid"], json({128, 1, 1}));
    EXPECT_TRUE(e["ts"].get<double>() == 10.0 || e["ts"].get<double>() == 110.0) << e;
  }
}

TEST(ChromeTrace, NanosecondsSurviveAsThreeDecimals) {
  TraceBuilder b;
  b.kernel("k", 0, 0.001);  // 1 ns long
  b.kernel("k", 1.234, 2.5);
  const std::string text = [&] {
    analyze::MemorySource source(b.t);
    std::ostringstream out;
    write_chrome_trace(source, out);
    return out.str();
  }();
  EXPECT_NE(text.find("\"ts\":1.234,\"dur\":1.266"), std::string::npos) << text;
  EXPECT_NE(text.find("\"dur\":0.001"), std::string::npos) << text;
}

TEST(ChromeTrace, EmptyTraceIsStillValidJson) {
  const json j = export_json(trace::Trace{});
  EXPECT_TRUE(j["traceEvents"].empty());
  EXPECT_EQ(j["otherData"]["schema_version"], 1);
}

}  // namespace
}  // namespace ktune::report

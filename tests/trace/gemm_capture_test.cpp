// The tracer's cuBLASLt hook on the CPU: messages as cuBLASLt hands them to the logger callback
// (the H100 fixtures' lines, less their bracketed head) become one event per call and one record
// per problem, counted per capture window; other levels, functions and closed windows are not.
#include "gemm_capture.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ktune::trace {
namespace {

std::uint64_t g_now = 0;
std::uint64_t fake_now() {
  return g_now;
}
std::uint32_t fake_thread() {
  return 77;
}

// (function, fields) of each fixture line.
std::vector<std::pair<std::string, std::string>> messages(const char* file) {
  std::ifstream in(std::filesystem::path(KTUNE_SOURCE_DIR) / "tests/fixtures/cublaslt" / file);
  std::vector<std::pair<std::string, std::string>> out;
  for (std::string line; std::getline(in, line);) {
    std::size_t at = 0;
    std::string fn;
    for (int g = 0; g < 5; ++g) {
      const std::size_t close = line.find(']', at);
      if (g == 4) fn = line.substr(at + 1, close - at - 1);
      at = close + 1;
    }
    out.emplace_back(fn, line.substr(at));
  }
  return out;
}

TEST(GemmCapture, EachCallIsAnEventAndEachProblemARecordCountedPerWindow) {
  std::atomic<bool> capturing{true};
  GemmCapture c(&capturing, fake_now, fake_thread);
  const auto lines = messages("h100-bf16.log");
  ASSERT_EQ(lines.size(), 21u);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    g_now = 1000 + i;
    c.on_message(2, lines[i].first.c_str(), lines[i].second.c_str());
  }
  c.on_message(1, lines[0].first.c_str(), lines[0].second.c_str());  // an error message
  c.on_message(2, "cublasLtMatmulAlgoGetHeuristic", "Adesc=[type=R_16BF rows=1 cols=1]");
  capturing = false;  // between capture windows: not counted
  c.on_message(2, lines[0].first.c_str(), lines[0].second.c_str());
  capturing = true;

  std::vector<GemmEventRecord> events;
  c.take_events(events);
  ASSERT_EQ(events.size(), 21u);
  EXPECT_EQ(events[0].thread_id, 77u);
  EXPECT_EQ(events[0].time_ns, 1000u);
  EXPECT_EQ(events[20].time_ns, 1020u);
  const std::vector<GemmCallRecord> calls = c.take_calls();
  std::uint64_t total = 0;
  for (const auto& r : calls) total += r.calls;
  EXPECT_EQ(total, 21u);
  for (const auto& e : events) ASSERT_LT(e.call, calls.size());
  EXPECT_EQ(calls[events[7].call].batch, 8);  // torch.bmm
  EXPECT_EQ(calls[events[14].call].epilogue, "EPILOGUE_GELU_BIAS");

  // The next window's trace: every record again, in the same order, with its own counts.
  c.on_message(2, lines[7].first.c_str(), lines[7].second.c_str());
  const auto next = c.take_calls();
  ASSERT_EQ(next.size(), calls.size());
  EXPECT_EQ(next[events[7].call].calls, 1u);
  EXPECT_EQ(next[events[0].call].calls, 0u);
  EXPECT_EQ(c.summary(), "");
}

TEST(GemmCapture, AnUnreadableMessageIsCountedNotFatal) {
  GemmCapture c(nullptr, fake_now, fake_thread);
  c.on_message(2, "cublasLtMatmul", "Adesc=[type=R_16F rows=4 cols=4");  // bracket never closed
  c.on_message(2, "cublasLtMatmul", nullptr);
  std::vector<GemmEventRecord> events;
  c.take_events(events);
  EXPECT_TRUE(events.empty());
  EXPECT_NE(c.summary().find("1 cuBLASLt matmul messages could not be read"), std::string::npos)
      << c.summary();
}

TEST(GemmCapture, WithoutALoadedCuBlasLtThereIsNothingToHook) {
  GemmCapture c(nullptr, fake_now, fake_thread);
  EXPECT_FALSE(c.attach());  // the test binary does not load cuBLASLt
  EXPECT_FALSE(c.attached());
}

}  // namespace
}  // namespace ktune::trace

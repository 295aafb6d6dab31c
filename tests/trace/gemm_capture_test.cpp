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

// The router's calls: one record per descriptor, entry point and route, spelled as cuBLASLt's log
// spells it, so the analysis reads both alike; a legacy TF32 cublasSgemm_v2 call included.
TEST(GemmCapture, RouterCallsAreRecordsSpelledAsTheLog) {
  std::atomic<bool> capturing{true};
  GemmCapture c(&capturing, fake_now, fake_thread);
  ktune_gemm_call linear{};
  linear.entry = KTUNE_GEMM_LT_MATMUL;
  linear.route = KTUNE_ROUTE_PASSED;
  linear.m = 2816;
  linear.n = 4096;
  linear.k = 1024;
  linear.batch = 1;
  linear.lda = linear.ldb = 1024;
  linear.ldc = linear.ldd = 2816;
  linear.a_type = linear.b_type = linear.c_type = linear.d_type = 14;  // CUDA_R_16BF
  linear.compute_type = 68;                                            // CUBLAS_COMPUTE_32F
  linear.scale_type = 0;                                               // CUDA_R_32F
  linear.transa = 1;                                                   // CUBLAS_OP_T
  linear.epilogue = 4;                                                 // CUBLASLT_EPILOGUE_BIAS
  linear.algo_id = 66;
  linear.tile = 18;
  linear.stages = -1;
  linear.splits = 1;
  linear.reduction = 0;
  ktune_gemm_call sgemm = linear;
  sgemm.entry = KTUNE_GEMM_SGEMM;
  sgemm.a_type = sgemm.b_type = sgemm.c_type = sgemm.d_type = 0;  // CUDA_R_32F
  sgemm.compute_type = 77;                                        // TF32 from the math mode
  sgemm.epilogue = 1;
  sgemm.algo_id = sgemm.tile = -1;
  ktune_gemm_call routed = linear;
  routed.route = KTUNE_ROUTE_ROUTED;
  g_now = 5;
  for (const auto* call : {&linear, &linear, &sgemm, &routed}) c.on_call(*call);
  std::vector<GemmEventRecord> events;
  c.take_events(events);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].call, events[1].call);
  const auto calls = c.take_calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].calls, 2u);
  EXPECT_EQ(calls[0].a_type, "R_16BF");
  EXPECT_EQ(calls[0].compute_type, "COMPUTE_32F");
  EXPECT_EQ(calls[0].transa, "OP_T");
  EXPECT_EQ(calls[0].transb, "OP_N");
  EXPECT_EQ(calls[0].epilogue, "EPILOGUE_BIAS");
  EXPECT_EQ(calls[0].algo_id, 66);
  EXPECT_EQ(calls[0].tile, "18");
  EXPECT_EQ(calls[0].stages, "");
  EXPECT_EQ(calls[0].entry, "cublasLtMatmul");
  EXPECT_EQ(calls[0].route, "passed");
  EXPECT_EQ(calls[1].entry, "cublasSgemm_v2");
  EXPECT_EQ(calls[1].a_type, "R_32F");
  EXPECT_EQ(calls[1].compute_type, "COMPUTE_32F_FAST_TF32");
  EXPECT_EQ(calls[1].algo_id, -1);
  EXPECT_EQ(calls[2].route, "routed");
  // A value no table names keeps its number rather than being dropped.
  ktune_gemm_call odd = linear;
  odd.a_type = 99;
  EXPECT_EQ(gemm_call_record(odd).a_type, "R_99");
}

TEST(GemmCapture, WithoutALoadedCuBlasLtThereIsNothingToHook) {
  GemmCapture c(nullptr, fake_now, fake_thread);
  EXPECT_FALSE(c.attach());  // the test binary does not load cuBLASLt
  EXPECT_FALSE(c.attached());
}

}  // namespace
}  // namespace ktune::trace

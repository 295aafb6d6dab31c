// Reading PyTorch profiler (Kineto) traces: real ones recorded on an H100 (tests/fixtures/torch,
// README there), exact times from hand-written ones, and one sentence for every kind of damage.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "ktune/analyze/analysis.hpp"
#include "ktune/analyze/source.hpp"
#include "ktune/core/error.hpp"
#include "trace_builder.hpp"

namespace ktune::analyze {
namespace {

const std::filesystem::path kFixtures =
    std::filesystem::path(KTUNE_SOURCE_DIR) / "tests/fixtures/torch";

// Per process: ctest runs the tests of this file in parallel processes, which once overwrote each
// other's bad.json.
std::filesystem::path write(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("ktune-kineto-test-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// The sentence open_trace throws for `text`, or "" when it reads.
std::string error_of(const std::string& text) {
  try {
    const auto source = open_trace(write("bad.json", text));
    analyze(*source);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string event(const std::string& fields) {
  return R"({"traceEvents": [)" + fields + "]}";
}

// The whole trace, warm-up included.
Analysis whole(TraceSource& source) {
  AnalysisOptions o;
  o.from_ns = 0;
  return analyze(source, o);
}

// The block's 3 "step" record_function ranges: the first step is warm-up, the report reads the
// other two.
TEST(KinetoSource, TheFirstOfTheBlocksStepsIsWarmUp) {
  const auto source = open_trace(kFixtures / "torch_block.json");
  const Analysis a = analyze(*source);
  EXPECT_EQ(a.steady.cut, Cut::detected);
  EXPECT_NE(a.steady.reason.find("the first of 3"), std::string::npos) << a.steady.reason;
  EXPECT_EQ(a.kernel_count, 30u);
  EXPECT_EQ(a.steady.warmup_kernels, 15u);
}

TEST(KinetoSource, ReadsTheRealBlockTraceWithEveryKernelAndItsOp) {
  const auto source = open_trace(kFixtures / "torch_block.json");
  ASSERT_NE(dynamic_cast<KinetoSource*>(source.get()), nullptr);
  const Analysis a = whole(*source);
  EXPECT_EQ(a.kernel_count, 45u);
  EXPECT_EQ(a.kernels.size(), 14u);
  // What the trace's own cpu_op nesting says (innermost op around the launch call on its thread),
  // counted by a separate script over the JSON: every kernel group's op and count.
  std::map<std::string, int> kernels_by_op;
  for (const KernelGroup& g : a.kernels) {
    ASSERT_FALSE(g.op.empty()) << g.name;
    kernels_by_op[g.op] += static_cast<int>(g.op_kernels);
  }
  EXPECT_EQ(kernels_by_op, (std::map<std::string, int>{{"aten::_softmax", 3},
                                                       {"aten::add", 3},
                                                       {"aten::addmm", 3},
                                                       {"aten::bmm", 3},
                                                       {"aten::copy_", 6},
                                                       {"aten::div", 3},
                                                       {"aten::gelu", 3},
                                                       {"aten::mm", 9},
                                                       {"aten::mul", 3},
                                                       {"aten::native_layer_norm", 3},
                                                       {"aten::sum", 3}}));
  // One cuBLAS kernel is launched by aten::addmm (3) and by aten::bmm (3): the tie goes to the
  // first name, with the count saying it is not the only op.
  const auto shared = std::find_if(a.kernels.begin(), a.kernels.end(),
                                   [](const KernelGroup& g) { return g.ops == 2; });
  ASSERT_NE(shared, a.kernels.end());
  EXPECT_EQ(shared->op, "aten::addmm");
  EXPECT_EQ(shared->op_kernels, 3u);
  EXPECT_EQ(shared->duration_ns.count, 6u);

  // The CUDA API table: every runtime call, by name.
  std::map<std::string, std::size_t> calls;
  for (const ApiGroup& g : a.api) calls[g.name] = g.duration_ns.count;
  EXPECT_EQ(calls["cudaLaunchKernel"], 27u);
  EXPECT_EQ(calls["cudaLaunchKernelExC"], 18u);
  EXPECT_EQ(calls["cudaMemsetAsync"], 3u);
  double shares = 0;
  for (const ApiGroup& g : a.api) shares += g.share;
  EXPECT_NEAR(shares, 1.0, 1e-9);

  // One stream ran all of it: 45 kernels and the 3 memsets.
  ASSERT_EQ(a.streams.size(), 1u);
  EXPECT_EQ(a.streams[0].stream, 7u);
  EXPECT_EQ(a.streams[0].kernels, 45u);
  EXPECT_EQ(a.streams[0].copies, 3u);
  EXPECT_EQ(a.streams[0].kernel_ns, a.kernel_total_ns);

  // ops and annotations become ranges: the user's record_function("step"), three times.
  const auto step = std::find_if(a.nvtx.begin(), a.nvtx.end(),
                                 [](const NvtxGroup& n) { return n.name == "step"; });
  ASSERT_NE(step, a.nvtx.end());
  EXPECT_EQ(step->duration_ns.count, 3u);
  ASSERT_EQ(a.notes.size(), 1u);
  EXPECT_NE(a.notes[0].find("no hardware counters"), std::string::npos);
  EXPECT_EQ(a.metadata.mode, "torch.profiler");
}

TEST(KinetoSource, GzippedAndPlainReadTheSame) {
  const auto plain = open_trace(kFixtures / "torch_streams.json");
  const auto gzipped = open_trace(kFixtures / "torch_streams.json.gz");
  const Analysis a = analyze(*plain), b = analyze(*gzipped);
  EXPECT_EQ(a.kernel_count, 2u);
  EXPECT_EQ(b.kernel_count, 2u);
  EXPECT_EQ(a.kernel_total_ns, b.kernel_total_ns);
  std::size_t copies = 0;
  for (const CopyGroup& c : a.copies) copies += c.count;
  EXPECT_EQ(copies, 2u);  // the pinned non_blocking D2H and the .cpu()
  ASSERT_EQ(a.copies.size(), b.copies.size());
  // The multiply ran on a side stream: two streams, each with its kernel.
  ASSERT_EQ(a.streams.size(), 2u);
  EXPECT_EQ(a.streams[0].kernels + a.streams[1].kernels, 2u);
  EXPECT_EQ(a.streams.size(), b.streams.size());
  for (const KernelGroup& g : a.kernels) EXPECT_FALSE(g.op.empty()) << g.name;
}

// Kineto writes microseconds with three decimals; a double of an epoch-based time would lose the
// nanoseconds, so they are read from the digits.
TEST(KinetoSource, KeepsNanosecondsFromTheDigits) {
  const auto path = write("times.json", event(R"(
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1790857026000001.001,
     "dur": 2.0005, "args": {"stream": 7, "correlation": 1, "grid": [4, 2, 1], "block": [128, 1, 1],
     "registers per thread": 40, "shared memory": 1024, "device": 0}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9,
     "ts": 1790857026000000.5, "dur": 0.25, "args": {"correlation": 1, "cbid": 211}})"));
  KinetoSource source(path);
  std::vector<trace::KernelRecord> kernels;
  source.kernels([&](const trace::KernelRecord& k) { kernels.push_back(k); });
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].start_ns, kKinetoEpochNs + 1790857026000001001ull);
  EXPECT_EQ(kernels[0].duration_ns(), 2001u);  // 2.0005 us rounds to 2001 ns
  EXPECT_EQ(kernels[0].grid_x, 4);
  EXPECT_EQ(kernels[0].grid_y, 2);
  EXPECT_EQ(kernels[0].block_x, 128);
  EXPECT_EQ(kernels[0].registers_per_thread, 40u);
  EXPECT_EQ(kernels[0].static_shared_bytes, 1024);
  EXPECT_EQ(kernels[0].stream_id, 7u);
  std::vector<trace::ApiRecord> calls;
  source.api_calls([&](const trace::ApiRecord& a) { calls.push_back(a); });
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].start_ns, kKinetoEpochNs + 1790857026000000500ull);
  EXPECT_EQ(calls[0].end_ns - calls[0].start_ns, 250u);
  EXPECT_EQ(calls[0].callback_id, 211u);
  // No ops in the trace: a second sentence says how to get them.
  ASSERT_EQ(source.notes().size(), 2u);
  EXPECT_NE(source.notes()[1].find("ProfilerActivity.CPU"), std::string::npos);
}

// torch.profiler's attribution: the innermost op around the launch call on the same thread. Ops
// that start in the same microsecond nest by length, whatever order the file lists them in.
TEST(KinetoSource, AttributesTheInnermostOpOnTheLaunchingThread) {
  const auto path = write("nest.json", event(R"(
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 10, "dur": 5},
    {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 1, "tid": 2, "ts": 10, "dur": 20},
    {"ph": "X", "cat": "cpu_op", "name": "aten::other_thread", "pid": 1, "tid": 3, "ts": 0,
     "dur": 100},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 11,
     "dur": 1, "args": {"correlation": 5}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 20,
     "dur": 1, "args": {"correlation": 6}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 40, "dur": 3,
     "args": {"correlation": 5, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "bias", "pid": 0, "tid": 7, "ts": 44, "dur": 3,
     "args": {"correlation": 6, "stream": 7}},
    {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 5, "pid": 1, "tid": 2, "ts": 11},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main"}})"));
  const auto source = open_trace(path);
  const Analysis a = analyze(*source);
  ASSERT_EQ(a.kernels.size(), 2u);
  std::map<std::string, std::string> op;
  for (const KernelGroup& g : a.kernels) op[g.name] = g.op;
  EXPECT_EQ(op["gemm"], "aten::mm");
  EXPECT_EQ(op["bias"], "aten::linear");
}

// ktune's own tracer on a program under emit_nvtx: the decorated range names group by op.
TEST(OpRanges, PyTorchDecorationsAreCutAndMarkAnOp) {
  trace::NvtxRangeRecord r;
  r.name = "aten::mm, seq = 12, op_id = 40, sizes = [[4, 8], [8, 2]], input_op_ids = [(39, 0)]";
  EXPECT_EQ(range_name(r), "aten::mm");
  EXPECT_TRUE(is_op_range(r));
  r.name = "aten::empty, op_id = 3";
  EXPECT_EQ(range_name(r), "aten::empty");
  EXPECT_TRUE(is_op_range(r));
  r.name = "forward";  // a user's own range
  EXPECT_EQ(range_name(r), "forward");
  EXPECT_FALSE(is_op_range(r));
  r.domain = "app";
  EXPECT_EQ(range_name(r), "app:forward");
  EXPECT_FALSE(is_op_range(r));
  r.domain = kTorchOpDomain;
  r.name = "aten::add";
  EXPECT_EQ(range_name(r), "aten::add");
  EXPECT_TRUE(is_op_range(r));
}

TEST(OpRanges, EmitNvtxRangesNameEachKernelsOp) {
  test::TraceBuilder b;
  b.nvtx("step", 0, 100);  // a user range around it all: not an op
  b.nvtx("aten::linear, seq = 1, op_id = 1", 1, 50);
  b.nvtx("aten::mm, seq = 2, op_id = 2, sizes = [[2, 3]]", 2, 20);
  b.nvtx("aten::mm, seq = 5, op_id = 9, sizes = [[2, 3]]", 60, 70);
  b.launched("gemm", 3, 4, 10, 15, 1);
  b.launched("epilogue", 30, 31, 35, 36, 2);
  b.launched("gemm", 61, 62, 80, 85, 3);
  b.launched("gemm", 90, 91, 95, 99, 4);  // only inside "step"
  MemorySource source(b.t);
  const Analysis a = analyze(source);
  std::map<std::string, const KernelGroup*> by_name;
  for (const KernelGroup& g : a.kernels) by_name[g.name] = &g;
  EXPECT_EQ(by_name["gemm"]->op, "aten::mm");
  EXPECT_EQ(by_name["gemm"]->op_kernels, 2u);  // of 3: the last one ran outside any op
  EXPECT_EQ(by_name["gemm"]->ops, 1u);
  EXPECT_EQ(by_name["epilogue"]->op, "aten::linear");
  // The NVTX table groups the two aten::mm ranges as one.
  const auto mm = std::find_if(a.nvtx.begin(), a.nvtx.end(),
                               [](const NvtxGroup& n) { return n.name == "aten::mm"; });
  ASSERT_NE(mm, a.nvtx.end());
  EXPECT_EQ(mm->duration_ns.count, 2u);
}

// --by op: the kernel table is GPU time by the op that launched each kernel, ranked by GPU time;
// kernels outside any op share one row that says how to get their ops.
TEST(OpRanges, ByOpIsGpuTimeByOp) {
  test::TraceBuilder b;
  b.nvtx("aten::linear, seq = 1, op_id = 1", 1, 50);
  b.nvtx("aten::mm, seq = 2, op_id = 2, sizes = [[2, 3]]", 2, 20);
  b.nvtx("aten::mm, seq = 5, op_id = 9, sizes = [[2, 3]]", 60, 70);
  b.launched("gemm", 3, 4, 10, 15, 1);          // aten::mm, 5
  b.launched("epilogue", 30, 31, 35, 45, 2);    // aten::linear, 10
  b.launched("gemm", 61, 62, 80, 85, 3);        // aten::mm, 5
  b.launched("other_gemm", 63, 64, 86, 89, 4);  // aten::mm, 3
  b.launched("gemm", 90, 91, 95, 99, 5);        // no op, 4
  MemorySource source(b.t);
  AnalysisOptions o;
  o.group_by = GroupBy::op;
  const Analysis a = analyze(source, o);
  ASSERT_EQ(a.kernels.size(), 3u);
  EXPECT_EQ(a.kernels[0].name, "aten::mm");
  EXPECT_EQ(a.kernels[0].total_ns, 13000);  // the builder counts in us
  EXPECT_EQ(a.kernels[0].duration_ns.count, 3u);
  EXPECT_EQ(a.kernels[1].name, "aten::linear");
  EXPECT_EQ(a.kernels[2].name, "(no PyTorch op; profile with --ops)");
  EXPECT_EQ(a.kernels[2].total_ns, 4000);
  EXPECT_TRUE(a.kernels[0].op.empty());  // the row is the op: no op column of its own
  EXPECT_EQ(parse_group_by("op"), GroupBy::op);
  EXPECT_STREQ(to_string(GroupBy::op), "op");
}

TEST(ApiAndStreams, AddUpFromTheRecords) {
  test::TraceBuilder b;
  b.launched("a", 0, 10, 20, 30, 1);
  b.launched("b", 12, 16, 40, 50, 2);
  b.api("cudaStreamSynchronize", 17, 57);
  b.kernel("c", 25, 45, 0, /*stream=*/9);
  b.memcpy("HtoD", 60, 64, 4096);
  MemorySource source(b.t);
  const Analysis a = analyze(source);
  ASSERT_EQ(a.api.size(), 2u);
  EXPECT_EQ(a.api[0].name, "cudaStreamSynchronize");
  EXPECT_EQ(a.api[0].total_ns, 40'000);
  EXPECT_NEAR(a.api[0].share, 40.0 / 54.0, 1e-12);
  EXPECT_EQ(a.api[1].name, "cudaLaunchKernel");
  EXPECT_EQ(a.api[1].duration_ns.count, 2u);
  EXPECT_EQ(a.api[1].duration_ns.median, 7'000);
  EXPECT_EQ(a.api[1].duration_ns.max, 10'000);
  ASSERT_EQ(a.streams.size(), 2u);
  EXPECT_EQ(a.streams[0].stream, 7u);
  EXPECT_EQ(a.streams[0].kernels, 2u);
  EXPECT_EQ(a.streams[0].kernel_ns, 20'000);
  EXPECT_EQ(a.streams[0].busy_ns, 20'000);
  EXPECT_EQ(a.streams[0].copies, 1u);
  EXPECT_EQ(a.streams[0].copy_bytes, 4096u);
  EXPECT_EQ(a.streams[0].copy_ns, 4'000);
  EXPECT_EQ(a.streams[1].stream, 9u);
  EXPECT_EQ(a.streams[1].kernel_ns, 20'000);
  EXPECT_NEAR(a.streams[1].share, 0.5, 1e-12);
}

TEST(KinetoSource, DamageIsOneSentenceNamingTheEventAndField) {
  const std::string kernel = R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, )";
  struct Case {
    std::string text, expected;
  };
  const Case cases[] = {
      {event(kernel + R"("ts": "soon", "dur": 1})"),
       "traceEvents[0] (a kernel event 'k'): field \"ts\" must be a number of microseconds"},
      {event(kernel + R"("ts": 1e300, "dur": 1})"), "field \"ts\" is out of range"},
      {event(kernel + R"("ts": 18446744073709551615, "dur": 1})"), "field \"ts\" is out of range"},
      {event(kernel + R"("dur": 1})"), "field \"ts\" is missing"},
      {event(kernel + R"("ts": 1, "dur": -1})"), "field \"dur\" is negative"},
      {event(kernel + R"("ts": 1, "dur": 1, "args": {"grid": [-1, 1, 1]}})"),
       "field \"args.grid[0]\" must be a whole number from 0 to 2147483647"},
      {event(kernel + R"("ts": 1, "dur": 1, "args": {"stream": "seven"}})"),
       "field \"args.stream\" must be a whole number"},
      {event(R"({"ph": "X", "cat": "kernel", "name": 5, "ts": 1, "dur": 1})"),
       "field \"name\" must be a string"},
      {event(R"([1, 2])"), "traceEvents[0] is a list, not an event object"},
      {event(R"(7)"), "traceEvents[0] is not an event object"},
      {R"({"traceEvents": {"a": 1}})", "is not a PyTorch profiler trace"},
      {R"({"schemaVersion": 1})", "has no traceEvents list"},
      {R"([{"traceEvents": []}])", "is neither a .ktrace nor a PyTorch profiler trace"},
      {std::string(R"({"traceEvents": [{"args": )") + std::string(100, '['),
       "nests deeper than 64"},
      {R"({"traceEvents": [{"ph": "X", "cat": "kernel", "na)", "the JSON ends early"},
      {R"({"traceEvents": [}x)", "not valid JSON at byte"},
      {"this is no trace at all", "is neither a .ktrace nor a PyTorch profiler trace"},
  };
  for (const Case& c : cases) {
    const std::string e = error_of(c.text);
    EXPECT_NE(e.find(c.expected), std::string::npos) << c.text << "\n  gave: " << e;
  }
  // A real trace cut in half.
  std::ifstream in(kFixtures / "torch_block.json", std::ios::binary);
  const std::string whole((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(error_of(whole.substr(0, whole.size() / 2)).find("cut short"), std::string::npos);
  // Unknown categories, phases and args are read past, not refused.
  EXPECT_EQ(error_of(event(R"({"ph": "X", "cat": "python_function", "name": "f", "ts": "x"},
                              {"ph": "i", "cat": "kernel", "ts": "x"},
                              {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1,
                               "args": {"blocks per SM": "inf", "grid": [1, 1, 1, 9]}})")),
            "");
}

TEST(KinetoSource, TheTemporaryTraceGoesWithTheSource) {
  std::filesystem::path ktrace;
  {
    KinetoSource source(kFixtures / "torch_streams.json");
    ktrace = source.ktrace_path();
    EXPECT_TRUE(std::filesystem::exists(ktrace));
  }
  EXPECT_FALSE(std::filesystem::exists(ktrace));
  // A trace that fails to convert leaves nothing behind either: the file is removed on the throw.
  EXPECT_NE(error_of(event(R"({"ph": "X", "cat": "kernel", "ts": "x", "dur": 1})")), "");
}

// Issue 44: a signal mid-conversion left the copy in $TMPDIR readable by every local user. The
// copy lives in a folder only its owner can enter, and leaves with it.
TEST(KinetoSource, TheTemporaryTraceIsPrivate) {
  std::filesystem::path folder;
  {
    KinetoSource source(kFixtures / "torch_streams.json");
    folder = source.ktrace_path().parent_path();
    const auto perms = std::filesystem::status(folder).permissions();
    EXPECT_EQ(perms & (std::filesystem::perms::group_all | std::filesystem::perms::others_all),
              std::filesystem::perms::none);
  }
  EXPECT_FALSE(std::filesystem::exists(folder));
}

// Issue 44: valid JSON opening with a byte-order mark or more than 16 blanks was "not a trace"; a
// huge dur failed in the scratch file's SQLite and advised re-recording; a TMPDIR that does not
// exist was "internal error".
TEST(KinetoSource, ValidJsonOfAnyOpeningIsReadAndHugeTimesAreOneSentence) {
  const std::string one = event(R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1})");
  EXPECT_EQ(error_of("\xEF\xBB\xBF" + one), "");
  EXPECT_EQ(error_of(std::string(40, ' ') + "\n" + one), "");
  EXPECT_EQ(error_of(std::string(10000, ' ') + one), "");
  const std::string huge = error_of(
      event(R"({"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 9223372036854774})"));
  EXPECT_NE(huge.find("\"dur\" is out of range"), std::string::npos) << huge;
  EXPECT_EQ(huge.find("ktune profile"), std::string::npos) << huge;
  const char* was = std::getenv("TMPDIR");
  const std::string saved = was ? was : "";
  const auto input = write("ok.json", one);
  ::setenv("TMPDIR", "/nonexistent/ktune-tmp", 1);
  std::string why;
  try {
    open_trace(input);
  } catch (const Error& e) {
    why = e.what();
  }
  if (was)
    ::setenv("TMPDIR", saved.c_str(), 1);
  else
    ::unsetenv("TMPDIR");
  EXPECT_NE(why.find("set TMPDIR to a writable directory"), std::string::npos) << why;
}

TEST(OpenTrace, ReadsAKtraceAsBefore) {
  const auto path =
      std::filesystem::path(KTUNE_SOURCE_DIR) / "tests/fixtures/traces/torch_layer_h200.ktrace";
  const auto source = open_trace(path);
  EXPECT_EQ(dynamic_cast<KinetoSource*>(source.get()), nullptr);
  EXPECT_GT(analyze(*source).kernel_count, 0u);
}

}  // namespace
}  // namespace ktune::analyze

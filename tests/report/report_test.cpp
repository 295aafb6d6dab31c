#include "ktune/report/report.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"
#include "ktune/trace/cublaslt_log.hpp"
#include "run_ktune.hpp"
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
  EXPECT_EQ(j["schema_version"], 11);
  EXPECT_EQ(j["kind"], "ktune.report");
  EXPECT_EQ(keys(j),
            (Keys{"api",     "backlog",    "baseline", "copies",         "counters",      "devices",
                  "gaps",    "gemm_calls", "group_by", "kernels",        "kind",          "notes",
                  "nvtx",    "op_advice",  "ops",      "schema_version", "steady_state",  "storms",
                  "streams", "timeline",   "totals",   "trace",          "triton_kernels"}));
  EXPECT_EQ(keys(j["steady_state"]), (Keys{"cut", "reason", "start_ns", "warmup"}));
  EXPECT_EQ(keys(j["steady_state"]["warmup"]),
            (Keys{"busy_ns", "by_cause", "idle_ns", "kernel_count", "kernel_time_ns", "largest",
                  "window_ns"}));
  EXPECT_EQ(j["steady_state"]["cut"], "none");  // a few kernels: read whole
  EXPECT_EQ(keys(j["api"][0]), (Keys{"api", "count", "max_ns", "mean_ns", "median_ns", "min_ns",
                                     "name", "share", "stddev_ns", "total_ns"}));
  EXPECT_EQ(keys(j["streams"][0]), (Keys{"busy_ns", "copies", "copy_bytes", "copy_ns", "device",
                                         "kernel_ns", "kernels", "share", "stream"}));
  EXPECT_TRUE(j["notes"].is_array());
  EXPECT_EQ(keys(j["gemm_calls"]),
            (Keys{"calls", "gpu_ns", "recorded", "shapes", "timed", "timed_calls"}));
  EXPECT_EQ(j["gemm_calls"]["recorded"], false);
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
  EXPECT_EQ(keys(j["kernels"][0]), (Keys{"count", "display_name", "distinct_shapes", "launch",
                                         "max_ns", "mean_ns", "median_ns", "min_ns", "name", "op",
                                         "op_kernels", "ops", "share", "stddev_ns", "total_ns"}));
  EXPECT_EQ(keys(j["kernels"][0]["launch"]),
            (Keys{"block", "grid", "registers_per_thread", "shared_mem_bytes"}));
  EXPECT_EQ(keys(j["devices"][0]),
            (Keys{"busy_ns", "busy_pct", "device", "idle_by_cause", "idle_ns", "idle_pct",
                  "kernels", "timeline", "window_end_ns", "window_start_ns"}));
  EXPECT_EQ(keys(j["gaps"]), (Keys{"by_cause", "count", "idle_ns", "largest"}));
  EXPECT_EQ(keys(j["gaps"]["by_cause"]),
            (Keys{"allocation", "copies", "counter_replay", "host", "launch_bound", "setup",
                  "synchronization", "unattributed"}));
  EXPECT_EQ(keys(j["gaps"]["largest"][0]),
            (Keys{"cause", "device", "duration_ns", "end_ns", "next_kernel", "start_ns"}));
  EXPECT_EQ(keys(j["storms"]), (Keys{"count", "longest"}));
  EXPECT_EQ(keys(j["nvtx"][0]), (Keys{"count", "kernel_gpu_ns", "kernels", "max_ns", "mean_ns",
                                      "median_ns", "min_ns", "name", "stddev_ns", "total_ns"}));
  EXPECT_EQ(keys(j["copies"][0]), (Keys{"bytes", "count", "kind", "total_ns"}));
  EXPECT_EQ(keys(j["backlog"]),
            (Keys{"cublaslt_kernels", "kernels", "share", "target_share", "triton_kernels"}));
  EXPECT_EQ(j["triton_kernels"]["recorded"], false);
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

// Issue 44: a kernel, range or argv with control characters rewrote the reader's terminal.
TEST(ReportText, ControlCharactersOfNamesAreEscaped) {
  TraceBuilder b;
  b.nvtx("step\x1b]0;owned\x07", 0, 100);
  b.launched("k\x1b[2J\nforged row", 0, 5, 10, 110, 1);
  b.t.metadata.command_line = {"prog",
                               "\xc2\x9b"
                               "31m"};
  analyze::MemorySource source(b.t);
  const std::string t = render_text(analyze::analyze(source), {});
  EXPECT_EQ(t.find('\x1b'), std::string::npos) << t;
  EXPECT_EQ(t.find('\x07'), std::string::npos) << t;
  EXPECT_EQ(t.find("\xc2\x9b"), std::string::npos) << t;
  EXPECT_EQ(t.find("\nforged row"), std::string::npos) << t;
  EXPECT_NE(t.find("\\x1b"), std::string::npos) << t;  // shown, as text
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
  // One inline script (the timeline's zoom), nothing fetched.
  for (const char* external :
       {"<script src", "<link", "src=", "href=", "@import", "url(", "fetch(", "https:"})
    EXPECT_EQ(h.find(external), std::string::npos) << external;
  EXPECT_NE(h.find("<script>"), std::string::npos);
  EXPECT_NE(h.find("class=\"timeline\""), std::string::npos);
  EXPECT_NE(h.find("class=\"tick\""), std::string::npos);  // the time axis
  EXPECT_NE(h.find("</html>"), std::string::npos);
}

// A layer whose backlog is two cuBLASLt kernels, traced with --gemm-shapes: the calls of the H100
// log (fuzz/corpus/cublaslt_log/h100_torch.log, each line twice).
// The H100's logged calls (the fuzz corpus's five lines, twice) and three kernels: the calls of
// the first problem (bias linear) and the fourth (f32) made just before the launches of the two
// nvjet kernels on the same thread, so those kernels are their GPU time; the elementwise kernel
// launched after a GEMM call is no cuBLASLt kernel and stays the program's own.
analyze::Analysis gemm_sample(bool with_calls = true, bool with_events = true) {
  TraceBuilder b;
  b.launched("nvjet_hsh_192x192_64x4_2x1_v_bz_coopA_TNN", 0, 5, 10, 410, 1);
  b.launched("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NNN", 6, 9, 410, 600, 2);
  b.launched("void at::native::vectorized_elementwise_kernel<4>(int)", 10, 12, 600, 610, 3);
  if (with_calls) {
    b.t.metadata.records = {"kernel", "gemm_call", "gemm_event"};
    std::ifstream in(std::filesystem::path(KTUNE_SOURCE_DIR) / "fuzz" / "corpus" / "cublaslt_log" /
                     "h100_torch.log");
    const std::string lines((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    b.t.gemm_calls = trace::parse_cublaslt_log(lines + lines).calls;
    if (with_events) {
      b.t.gemm_events.push_back({4242, 11, TraceBuilder::at(-1), 0});
      b.t.gemm_events.push_back({4242, 11, TraceBuilder::at(5.5), 3});
      b.t.gemm_events.push_back({4242, 99, TraceBuilder::at(5.8), 1});  // another thread
    } else {
      b.t.metadata.schema_version = 3;
    }
  }
  analyze::MemorySource source(b.t);
  return analyze::analyze(source);
}

TEST(ReportGemm, SectionIsPinned) {
  const std::string t = render_text(gemm_sample(), {});
  const std::string section = t.substr(t.find("\nGEMM calls (cuBLASLt)\n") + 1);
  EXPECT_EQ(section,
            R"(GEMM calls (cuBLASLt)
  10 calls of 5 problems, 590.00 us of GPU time (98.3 % of all kernel time) in the cuBLASLt kernels 2 of those calls launched (the others launched no kernel the trace ties to them, as calls captured into a CUDA graph do). BLAS column-major: D is m x n, k the reduction; Op is op(A), op(B) (x @ W is NN, a Linear TN).
  GPU time   %       Calls  m      n     k     Batch  Dtype  Op  Epilogue  Algorithm                                    Tune
  400.00 us  66.7 %  2      11008  2048  4096  1      f16    TN  bias      algo 66 tile 192x192 stages 64xAUTO          ktune tune --library cublaslt --op gemm_tn_bias --shape m=11008,n=2048,k=4096 --dtype f16
  190.00 us  31.7 %  2      11008  2048  4096  1      f32    TN  none      algo 55 tile 128x128 stages 8x3              ktune tune --library cublaslt --op gemm_tn --shape m=11008,n=2048,k=4096 --dtype f32
  0 ns       0.0 %   2      11008  2048  4096  1      f16    TN  none      algo 66 tile 192x192 stages 64xAUTO          ktune tune --library cublaslt --op gemm_tn --shape m=11008,n=2048,k=4096 --dtype f16
  0 ns       0.0 %   2      4096   1024  4096  2      f16    NN  none      algo 66 tile 256x128 stages 64xAUTO          ktune tune --library cublaslt --op gemm_nn --shape m=4096,n=1024,k=4096,batch=2,stride_a=0 --dtype f16
  0 ns       0.0 %   2      256    16    4096  1      f16    TN  none      algo 66 tile 64x16 stages 64xAUTO split-K 3  ktune tune --library cublaslt --op gemm_tn --shape m=256,n=16,k=4096 --dtype f16
)") << section;
}

TEST(ReportGemm, BacklogNamesTheShapesBesideItsCuBlasLtKernels) {
  const std::string t = render_text(gemm_sample(), {});
  EXPECT_NE(t.find("2 kernels own 98.3 % of GPU time (target 80.0 %). cuBLASLt kernels #1, #2 ran "
                   "the program's cuBLASLt GEMMs: TN m=11008 n=2048 k=4096 f16 bias (400.00 us, 2 "
                   "calls); TN m=11008 n=2048 k=4096 f32 (190.00 us, 2 calls); "),
            std::string::npos)
      << t;
  // A trace of schema 3 has no time per call: counts only, and it says so.
  const std::string counts = render_text(gemm_sample(true, false), {});
  EXPECT_NE(counts.find("TN m=11008 n=2048 k=4096 f16 bias (2 calls); "), std::string::npos)
      << counts;
  EXPECT_NE(counts.find("Counts only: this trace (schema 3) has no time per call"),
            std::string::npos)
      << counts;
  // Without --gemm-shapes the section is absent and the backlog says how to get the shapes.
  const std::string without = render_text(gemm_sample(false), {});
  EXPECT_EQ(without.find("GEMM calls (cuBLASLt)\n"), std::string::npos) << without;
  EXPECT_NE(without.find("cuBLASLt kernels #1, #2: ktune profile --gemm-shapes records the GEMM "
                         "shapes to tune."),
            std::string::npos)
      << without;
}

TEST(ReportGemm, JsonMarkdownAndHtmlCarryTheShapes) {
  const analyze::Analysis a = gemm_sample();
  const json j = json::parse(render_json(a, {}));
  const json& g = j["gemm_calls"];
  EXPECT_EQ(g["recorded"], true);
  EXPECT_EQ(g["calls"], 10);
  ASSERT_EQ(g["shapes"].size(), 5u);
  EXPECT_EQ(keys(g["shapes"][0]),
            (Keys{"a_type",      "algorithms",  "b_type",       "batch",       "c_type",
                  "cache_key",   "calls",       "compute_type", "d_type",      "dtype",
                  "entries",     "epilogue",    "gpu_ns",       "k",           "lda",
                  "ldb",         "ldc",         "ldd",          "m",           "n",
                  "not_tunable", "problem",     "routes",       "scale_type",  "stride_a",
                  "stride_b",    "stride_c",    "stride_d",     "timed_calls", "transa",
                  "transb",      "tune_command"}));
  EXPECT_EQ(g["shapes"][0]["gpu_ns"], 400000);
  EXPECT_EQ(g["shapes"][0]["cache_key"],
            json({{"op", "gemm_tn_bias"}, {"dtype", "f16"}, {"shape", {11008, 2048, 4096, 1}}}));
  EXPECT_EQ(g["timed"], true);
  EXPECT_EQ(g["timed_calls"], 2);
  EXPECT_EQ(g["shapes"][0]["tune_command"],
            "ktune tune --library cublaslt --op gemm_tn_bias --shape m=11008,n=2048,k=4096 "
            "--dtype f16");
  EXPECT_EQ(g["shapes"][0]["algorithms"], json({"algo 66 tile 192x192 stages 64xAUTO"}));
  EXPECT_EQ(j["backlog"]["cublaslt_kernels"], json({"nvjet_hsh_192x192_64x4_2x1_v_bz_coopA_TNN",
                                                    "nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NNN"}));
  const std::string m = render_markdown(a, {});
  EXPECT_NE(m.find("### GEMM calls (cuBLASLt)"), std::string::npos) << m;
  EXPECT_NE(m.find("| 2 | 11008 | 2048 | 4096 | 1 | f16 | TN | bias |"), std::string::npos) << m;
  const std::string h = render_html(a, {});
  EXPECT_NE(h.find("GEMM calls (cuBLASLt)"), std::string::npos);
  EXPECT_NE(h.find("--op gemm_tn_bias --shape m=11008,n=2048,k=4096"), std::string::npos);
}

// The commands the report prints are ones `ktune tune --library cublaslt` accepts: on a machine
// with no GPU driver they get as far as the GPU (a usage error would come first).
TEST(ReportGemm, TuneCommandsAreAcceptedByKtuneTune) {
  if (std::filesystem::exists("/dev/nvidiactl")) GTEST_SKIP() << "a GPU would run the search";
  const json j = json::parse(render_json(gemm_sample(), {}));
  std::size_t tried = 0;
  for (const json& shape : j["gemm_calls"]["shapes"]) {
    if (shape["tune_command"].is_null()) continue;
    const std::string cmd = shape["tune_command"].get<std::string>();
    ASSERT_EQ(cmd.rfind("ktune ", 0), 0u) << cmd;
    const auto r = test::run_ktune(cmd.substr(6) + " --no-cache");
    EXPECT_EQ(r.exit_code, 1) << cmd;
    EXPECT_NE(r.err.find("no NVIDIA driver found"), std::string::npos) << cmd << "\n" << r.err;
    ++tried;
  }
  EXPECT_EQ(tried, 5u);  // every shape: the search takes every form
}

// The report reads the store only for calibrated ceilings: a --db file nothing was stored in yet
// is no error (a profile run's fresh KTUNE_DB made `ktune report` exit 1 on the H100 before ingest
// had created the store).
TEST(ReportCli, AStoreFileNotCreatedYetIsNoError) {
  const auto trace =
      std::filesystem::path(KTUNE_SOURCE_DIR) / "tests/fixtures/traces/torch_layer_h200.ktrace";
  const auto missing = std::filesystem::temp_directory_path() / "ktune-no-store-yet" / "s.db";
  const auto r =
      test::run_ktune("--db " + missing.string() + " report --format json " + trace.string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(missing)) << "a reader creates nothing";
  EXPECT_EQ(json::parse(r.out)["schema_version"], 11);
}

// The recorded H200 layer: the report reads its steady state by default, the warm-up (cuBLAS's
// first-call set-up before the first GEMM, 86 ms) apart; --from and --skip cut where the user says.
TEST(ReportCli, SteadyStateByDefaultWarmUpApartAndTheUsersCut) {
  const std::string fixture =
      (std::filesystem::path(KTUNE_SOURCE_DIR) / "tests/fixtures/traces/torch_layer_h200.ktrace")
          .string();
  const auto text = test::run_ktune("report " + fixture);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  for (const char* want : {"Steady state from", "Warm-up, left out", "first-call set-up",
                           "Warm-up's largest gaps", "--from 0 reads the whole trace"})
    EXPECT_NE(text.out.find(want), std::string::npos) << want << "\n" << text.out;
  const json steady = json::parse(test::run_ktune("report --format json " + fixture).out);
  EXPECT_EQ(steady["steady_state"]["cut"], "detected");
  const json whole = json::parse(test::run_ktune("report --format json --from 0 " + fixture).out);
  EXPECT_EQ(whole["steady_state"]["cut"], "none");
  EXPECT_EQ(steady["totals"]["kernel_count"].get<int>() +
                steady["steady_state"]["warmup"]["kernel_count"].get<int>(),
            whole["totals"]["kernel_count"].get<int>());
  EXPECT_GT(steady["totals"]["busy_pct"].get<double>(), whole["totals"]["busy_pct"].get<double>());
  const json skip = json::parse(test::run_ktune("report --format json --skip 100 " + fixture).out);
  EXPECT_EQ(skip["steady_state"]["cut"], "skip");
  EXPECT_EQ(skip["totals"]["kernel_count"].get<int>() + 100,
            whole["totals"]["kernel_count"].get<int>());
  const json from =
      json::parse(test::run_ktune("report --format json --from 160ms " + fixture).out);
  EXPECT_EQ(from["steady_state"]["cut"], "from");
  for (const char* bad : {"--from soon", "--from 1h", "--from 1s --skip 3"}) {
    const auto r = test::run_ktune(std::string("report ") + bad + " " + fixture);
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_FALSE(r.err.empty()) << bad;
  }
}

// A PyTorch profiler trace is reported like a .ktrace, its op column and the note on what it lacks
// included; a damaged one is one sentence and exit 1, in every format.
TEST(ReportCli, ReadsAPyTorchProfilerTraceAndRefusesADamagedOne) {
  const auto fixtures = std::filesystem::path(KTUNE_SOURCE_DIR) / "tests/fixtures/torch";
  const auto text = test::run_ktune("report --from 0 " + (fixtures / "torch_block.json").string());
  EXPECT_EQ(text.exit_code, 0) << text.err;
  for (const char* want :
       {"a PyTorch profiler trace", "45 kernels (14 names)", "Op", "aten::native_layer_norm",
        "aten::addmm (3 of 6)", "CUDA API calls", "cudaLaunchKernelExC", "no hardware counters"})
    EXPECT_NE(text.out.find(want), std::string::npos) << want << "\n" << text.out;
  const auto gz =
      test::run_ktune("report --format json " + (fixtures / "torch_streams.json.gz").string());
  EXPECT_EQ(gz.exit_code, 0) << gz.err;
  const json j = json::parse(gz.out);
  EXPECT_EQ(j["streams"].size(), 2u);
  EXPECT_EQ(j["trace"]["mode"], "torch.profiler");
  for (const char* format : {"md", "html"})
    EXPECT_EQ(test::run_ktune(std::string("report --format ") + format + " " +
                              (fixtures / "torch_streams.json").string())
                  .exit_code,
              0);

  const auto bad = std::filesystem::temp_directory_path() / "ktune-report-bad-kineto.json";
  std::ofstream(bad) << R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1,)"
                     << R"( "dur": 1, "args": {"grid": [1, -2, 1]}}]})";
  const auto r = test::run_ktune("report " + bad.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("field \"args.grid[1]\" must be a whole number"), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  std::filesystem::remove(bad);
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

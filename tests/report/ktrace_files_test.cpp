// Reports and exports over real .ktrace files: hand-built ones written with the trace module's
// writer, every fixture in tests/fixtures/traces/ (recorded on a GPU), and the ktune binary.
#include <sqlite3.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "counter_samples.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/report/chrome_trace.hpp"
#include "ktune/report/report.hpp"
#include "ktune/trace/metrics.hpp"
#include "run_ktune.hpp"
#include "trace_builder.hpp"

namespace ktune::report {
namespace {

namespace fs = std::filesystem;
using analyze::test::TraceBuilder;
using nlohmann::json;

struct TempDir {
  fs::path path;
  TempDir() {
    static int n = 0;
    path = fs::temp_directory_path() /
           ("ktune-report-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

trace::Trace busy_trace() {
  TraceBuilder b;
  std::uint32_t corr = 1;
  double t = 0;
  b.nvtx("warmup", 0, 40);
  for (int i = 0; i < 30; ++i, t += 6) b.launched("tiny_add", t, t + 5, t + 5.5, t + 6.5, corr++);
  b.api("cudaDeviceSynchronize", t, t + 10);
  b.launched("void gemm<float, 128>(float const*, float*)", t + 20, t + 22, t + 30, t + 530,
             corr++);
  b.memcpy("DtoH", t + 540, t + 600, 1 << 24, corr);
  b.api("cudaMemcpy", t + 535, t + 601, corr++);
  trace::MemsetRecord ms;
  ms.bytes = 4096;
  ms.start_ns = TraceBuilder::at(t + 605);
  ms.end_ns = TraceBuilder::at(t + 606);
  ms.stream_id = 7;
  b.t.memsets.push_back(ms);
  b.launched("softmax", t + 602, t + 604, t + 610, t + 700, corr++);
  trace::SyncRecord s;
  s.type = "context_synchronize";
  s.start_ns = TraceBuilder::at(t + 700);
  s.end_ns = TraceBuilder::at(t + 701);
  b.t.syncs.push_back(s);
  return b.t;
}

std::string report_json(analyze::TraceSource& source) {
  return render_json(analyze::analyze(source), {});
}

TEST(KtraceSource, ReadsWhatTheWriterWrote) {
  TempDir dir;
  const trace::Trace t = busy_trace();
  trace::write_ktrace(dir.path / "t.ktrace", t);
  analyze::KtraceSource from_file(dir.path / "t.ktrace");
  analyze::MemorySource from_memory(t);
  EXPECT_EQ(from_file.counts().kernels, t.kernels.size());
  EXPECT_EQ(from_file.origin_ns(), from_memory.origin_ns());
  EXPECT_EQ(report_json(from_file), report_json(from_memory));
  std::ostringstream a, b;
  write_chrome_trace(from_file, a);
  write_chrome_trace(from_memory, b);
  EXPECT_EQ(a.str(), b.str());
}

void expect_error(const fs::path& p, const std::string& fragment) {
  try {
    analyze::KtraceSource source(p);
    FAIL() << "no error for " << p;
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(fragment), std::string::npos) << m;
    EXPECT_NE(m.find(p.filename().string()), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

TEST(KtraceSource, BadFilesGetOneSentence) {
  TempDir dir;
  expect_error(dir.path / "missing.ktrace", "does not exist");
  write_file_atomic(dir.path / "notes.txt", "not a database\n");
  expect_error(dir.path / "notes.txt", "not a .ktrace");
  const fs::path newer = dir.path / "newer.ktrace";
  trace::write_ktrace(newer, busy_trace());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(newer.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE metadata SET value = '99' WHERE key = 'schema_version'",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  expect_error(newer, "newer");
}

// Invariants that hold for any trace: they check the analysis and the export against each other
// and against the file's own row counts.
void check_invariants(const fs::path& path) {
  SCOPED_TRACE(path.string());
  analyze::KtraceSource source(path);
  const trace::TraceCounts& n = source.counts();
  analyze::AnalysisOptions whole;
  whole.from_ns = 0;  // the file's row counts are of the whole trace
  const analyze::Analysis a = analyze::analyze(source, whole);
  EXPECT_EQ(a.kernel_count + source.skipped().count, n.kernels);
  // The steady state and its warm-up add up to the whole.
  const analyze::Analysis steady = analyze::analyze(source);
  EXPECT_EQ(steady.kernel_count + steady.steady.warmup_kernels, a.kernel_count);
  EXPECT_EQ(steady.kernel_total_ns + steady.steady.warmup_kernel_ns, a.kernel_total_ns);
  std::int64_t total = 0;
  std::size_t count = 0;
  double share = 0;
  for (const auto& g : a.kernels) {
    total += g.total_ns;
    count += g.duration_ns.count;
    share += g.share;
  }
  EXPECT_EQ(total, a.kernel_total_ns);
  EXPECT_EQ(count, a.kernel_count);
  if (a.kernel_count > 0) {
    EXPECT_NEAR(share, 1.0, 1e-9);
  }
  for (const auto& d : a.devices) {
    EXPECT_EQ(d.busy_ns + d.idle_ns, d.window_ns());
    EXPECT_GE(d.idle_ns, 0);
    std::int64_t by_cause = 0;
    for (const auto& c : d.idle_by_cause) by_cause += c.total_ns;
    EXPECT_EQ(by_cause, d.idle_ns);
    EXPECT_LE(d.busy_ns, a.kernel_total_ns);
  }
  const json r = json::parse(render_json(a, {}));
  if (a.window_ns() > 0) {
    EXPECT_NEAR(r["totals"]["busy_pct"].get<double>() + r["totals"]["idle_pct"].get<double>(),
                100.0, 1e-9);
  }

  TempDir dir;
  const ChromeTraceCounts c = export_chrome_trace(source, dir.path / "out.json");
  const json j = json::parse(read_file(dir.path / "out.json"));
  std::map<std::string, std::size_t> by_cat, by_phase;
  for (const auto& e : j["traceEvents"]) {
    ++by_phase[e["ph"].get<std::string>()];
    if (e["ph"] == "X") ++by_cat[e["cat"].get<std::string>()];
  }
  EXPECT_EQ(by_cat["kernel"], n.kernels);
  EXPECT_EQ(by_cat["memcpy"], n.memcpys);
  EXPECT_EQ(by_cat["memset"], n.memsets);
  EXPECT_EQ(by_cat["cuda_api"], n.api_calls);
  EXPECT_EQ(by_cat["nvtx"], n.nvtx_ranges);
  EXPECT_EQ(by_phase["s"], by_phase["f"]);
  EXPECT_EQ(by_phase["s"], c.flows);
  EXPECT_EQ(c.kernels, n.kernels);
}

TEST(Fixtures, HandBuiltTraceKeepsTheInvariants) {
  TempDir dir;
  trace::write_ktrace(dir.path / "busy.ktrace", busy_trace());
  check_invariants(dir.path / "busy.ktrace");
}

// The lead records small traces on the GPU machine and drops them here.
TEST(Fixtures, RecordedTracesKeepTheInvariants) {
  const fs::path dir = fs::path(KTUNE_SOURCE_DIR) / "tests" / "fixtures" / "traces";
  std::size_t n = 0;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".ktrace") {
        check_invariants(e.path());
        ++n;
      }
  if (n == 0) GTEST_SKIP() << "no recorded traces in " << dir;
  std::printf("checked %zu recorded traces\n", n);
}

TEST(Cli, ReportAndExportATrace) {
  TempDir dir;
  const fs::path t = dir.path / "busy.ktrace";
  trace::write_ktrace(t, busy_trace());
  auto r = test::run_ktune("report " + t.string() + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["schema_version"], report::kReportSchemaVersion);
  EXPECT_EQ(j["totals"]["kernel_count"], 32);
  EXPECT_EQ(j["storms"]["count"], 1);

  r = test::run_ktune("report " + t.string() + " --by name+launch --format md");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(--by name+launch)"), std::string::npos) << r.out;

  r = test::run_ktune("report " + t.string() + " --format html -o " +
                      (dir.path / "r.html").string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(read_file(dir.path / "r.html").find("<svg"), std::string::npos);

  r = test::run_ktune("export " + t.string() + " --chrome -o " + (dir.path / "c.json").string());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("32 kernels"), std::string::npos) << r.out;
  EXPECT_NO_THROW(json::parse(read_file(dir.path / "c.json")));
}

TEST(Cli, ReportComparesOldWithNewAndPrintsTheContract) {
  TempDir dir;
  const fs::path old_trace = dir.path / "old.ktrace", new_trace = dir.path / "new.ktrace";
  trace::write_ktrace(old_trace, busy_trace());
  trace::write_ktrace(new_trace, busy_trace());
  // An empty home: no store, so no calibration and no error for its absence.
  const std::string env = "KTUNE_HOME=" + (dir.path / "home").string();
  auto r = test::run_ktune(
      "report " + old_trace.string() + " " + new_trace.string() + " --format contract", env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"# Profile contract", "## Stages", "No counters in this trace",
                        "none: the trace carries none and this machine has no calibration",
                        "## Compared with the baseline, per launch", "| +0.0 % |", "within_noise"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  r = test::run_ktune(
      "report " + old_trace.string() + " " + new_trace.string() + " --format json --names full",
      env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["baseline"]["kernel_time_ns"],
            json::parse(r.out)["totals"]["kernel_time_ns"]);
}

TEST(Cli, ReportMergesTheRanksOfOneJob) {
  TempDir dir;
  const fs::path r0 = dir.path / "run.0.ktrace", r1 = dir.path / "run.1.ktrace";
  trace::write_ktrace(r0, busy_trace());
  trace::write_ktrace(r1, busy_trace());
  const auto r = test::run_ktune(
      "report --merge " + r0.string() + " " + r1.string() + " " + r0.string() + " --format json",
      "KTUNE_HOME=" + (dir.path / "home").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["totals"]["kernel_count"], 3 * 32);
  EXPECT_EQ(j["devices"].size(), 3u);
}

// Issue 44: a context synchronization names no stream (CUPTI's 4294967295), and that "id"
// overflowed the merge's shift: every trace with one was refused, this fixture merged alone too.
TEST(Cli, ReportMergesTracesWithContextSynchronizations) {
  TempDir dir;
  const fs::path fixture =
      fs::path(KTUNE_SOURCE_DIR) / "tests/fixtures/traces/torch_layer_h200.ktrace";
  const std::string env = "KTUNE_HOME=" + (dir.path / "home").string();
  const auto alone = test::run_ktune("report --merge " + fixture.string() + " --format json", env);
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  const auto both = test::run_ktune(
      "report --merge " + fixture.string() + " " + fixture.string() + " --format json", env);
  ASSERT_EQ(both.exit_code, 0) << both.err;
  EXPECT_EQ(json::parse(both.out)["totals"]["kernel_count"].get<std::int64_t>(),
            2 * json::parse(alone.out)["totals"]["kernel_count"].get<std::int64_t>());
}

// Old traces never get a guessed verdict. The recorded H200 layer (no counters) reads "not
// measured" with the flag in every stage; the same trace with the counters an older
// `--metrics roofline` or `--metrics stalls` left (issue activity, DRAM %, stall reasons: once
// read as compute- or latency-bound) reads the same, through the ktune binary.
TEST(Cli, OldTracesReadAsNotMeasuredNeverAGuessedVerdict) {
  TempDir dir;
  const fs::path fixture =
      fs::path(KTUNE_SOURCE_DIR) / "tests/fixtures/traces/torch_layer_h200.ktrace";
  const std::string env = "KTUNE_HOME=" + (dir.path / "home").string();
  const auto plain = test::run_ktune("report --format contract " + fixture.string(), env);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("not measured (--metrics triage)"), std::string::npos) << plain.out;
  for (const char* verdict : {"memory-bound", "compute-bound", "latency-bound", "issue-bound"})
    EXPECT_EQ(plain.out.find(verdict), std::string::npos) << verdict;

  trace::Trace t = trace::read_ktrace(fixture);
  std::size_t profiled = 0;
  for (const trace::KernelRecord& k : t.kernels) {
    if (k.correlation_id == 0 || profiled++ % 40 != 0) continue;
    namespace m = trace::metric;
    for (const auto& [metric, value] :
         {std::pair{std::string(m::kIssueActivePct), 81.0},
          std::pair{std::string(m::kDramThroughputPct), 24.0},
          std::pair{std::string(m::kDuration), double(k.duration_ns())},
          std::pair{std::string(m::kStallPrefix) + "long_scoreboard" + std::string(m::kStallSuffix),
                    6.0},
          std::pair{std::string(m::kStallPrefix) + "selected" + std::string(m::kStallSuffix), 1.0}})
      t.counters.push_back({k.device_id, k.correlation_id, metric, value});
  }
  std::sort(t.counters.begin(), t.counters.end(),
            [](auto& a, auto& b) { return a.correlation_id < b.correlation_id; });
  const fs::path old = dir.path / "old-counters.ktrace";
  trace::write_ktrace(old, t);
  const auto r = test::run_ktune("report --format json " + old.string(), env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_FALSE(j["counters"]["kernels"].empty());
  for (const json& k : j["counters"]["kernels"]) {
    // Short kernels are launch-bound by their measured duration and waves; no other verdict.
    const std::string v = k["bottleneck"];
    EXPECT_TRUE(v == "not measured" || v == "launch-bound") << k["name"] << ": " << v;
    if (v == "not measured") {
      EXPECT_EQ(k["measure_with"], "--metrics triage");
      EXPECT_TRUE(k["opportunities"].empty()) << k["name"];
    }
  }
}

TEST(Cli, BadInputFailsWithOneLine) {
  TempDir dir;
  const fs::path t = dir.path / "busy.ktrace";
  trace::write_ktrace(t, busy_trace());
  for (const std::string& args :
       {"report " + (dir.path / "nope.ktrace").string(), "report " + t.string() + " --format pdf",
        "report " + t.string() + " --by launch", "report " + t.string() + " --names short",
        "report " + t.string() + " " + t.string() + " " + t.string(), "export " + t.string(),
        "export " + (dir.path / "nope.ktrace").string() + " --chrome -o x.json",
        "export " + t.string() + " --chrome -o " + (dir.path / "no/such/dir/x.json").string()}) {
    const auto r = test::run_ktune(args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_TRUE(r.out.empty()) << args << ": " << r.out;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
  }
}

TEST(Cli, ReportWarnsAboutRecordsWithUnusableTimes) {
  // A kernel CUPTI could not time (start 0) and one that ends before it starts used to stretch
  // the window to 1970 and subtract busy time, silently.
  TempDir dir;
  trace::Trace t = busy_trace();
  t.kernels[0].start_ns = 0;
  t.kernels[0].end_ns = 0;
  std::swap(t.kernels[1].start_ns, t.kernels[1].end_ns);
  const fs::path path = dir.path / "odd.ktrace";
  trace::write_ktrace(path, t);
  auto r = test::run_ktune("report " + path.string() + " --format json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["totals"]["kernel_count"], 30);
  EXPECT_EQ(j["trace"]["skipped_records"], 2);
  EXPECT_EQ(j["trace"]["first_skipped_record"],
            "kernels record 1 (start_ns 0: CUPTI collected no timestamp)");
  EXPECT_LT(j["totals"]["window_ns"].get<std::int64_t>(), 1'000'000'000);  // not since 1970
  r = test::run_ktune("report " + path.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(
      r.out.find("warning: 2 records left out, their times unusable (first: kernels record 1"),
      std::string::npos)
      << r.out;
}

TEST(Cli, DamagedTraceFailsWithOneSentenceNamingTheField) {
  // A string schema_version was "internal error: [json.exception.type_error.302] ...".
  TempDir dir;
  const fs::path path = dir.path / "damaged.ktrace";
  trace::write_ktrace(path, busy_trace());
  for (const char* sql : {"UPDATE metadata SET value = '\"1\"' WHERE key = 'schema_version'",
                          "UPDATE kernels SET start_ns = 'x' WHERE id = 3"}) {
    SCOPED_TRACE(sql);
    trace::write_ktrace(path, busy_trace());
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    for (const std::string& args :
         {"report " + path.string(),
          "export " + path.string() + " --chrome -o " + (dir.path / "c.json").string()}) {
      const auto r = test::run_ktune(args);
      EXPECT_NE(r.exit_code, 0) << args;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_NE(r.err.find(path.string()), std::string::npos) << r.err;
      EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
    }
  }
}

// A trace older than carried ceilings (schema 1 here, recorded on an H200) is read against the
// reading machine's: no calibration in this store, so the H200's datasheet, labelled as both.
TEST(ReportCli, AnOldTraceFallsBackToTheReadingMachinesCeilings) {
  const auto trace =
      std::filesystem::path(KTUNE_SOURCE_DIR) / "tests/fixtures/traces/torch_layer_h200.ktrace";
  const auto missing = std::filesystem::temp_directory_path() / "ktune-no-store-yet" / "s.db";
  const auto r =
      test::run_ktune("--db " + missing.string() + " report --format json " + trace.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json c = json::parse(r.out)["counters"]["ceilings"];
  EXPECT_EQ(c["origin"], "reading machine's store");
  EXPECT_EQ(c["kind"], "datasheet");
  EXPECT_DOUBLE_EQ(c["dram_bytes_per_s"].get<double>(), 4.8e12);
  EXPECT_NE(c["source"].get<std::string>().find("predates carried ceilings"), std::string::npos);
}

// A trace that carries its ceilings reads the same on any machine: the store is not consulted.
TEST(ReportCli, ATraceCarryingCeilingsIsReadAgainstThem) {
  TempDir dir;
  trace::Trace t = analyze::test::sample_counter_trace();
  t.metadata.identity->devices[0].uuid = "GPU-carried";
  trace::TraceCeilings carried;
  carried.device_uuid = "GPU-carried";
  carried.dram_bytes_per_s = 3.1e12;
  carried.fp32_flop_per_s = 52e12;
  carried.bf16_flop_per_s = carried.fp16_flop_per_s = 700e12;
  carried.kind = "calibration";
  carried.source = "ktune calibrate on NVIDIA H100 80GB HBM3 at 2026-11-20T10:00:00Z";
  t.metadata.ceilings = {carried};
  const auto path = dir.path / "carried.ktrace";
  trace::write_ktrace(path, t);
  const auto r = test::run_ktune("--db " + (dir.path / "none.db").string() +
                                 " report --format json " + path.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json c = json::parse(r.out)["counters"]["ceilings"];
  EXPECT_EQ(c["origin"], "trace");
  EXPECT_EQ(c["kind"], "calibration");
  EXPECT_DOUBLE_EQ(c["dram_bytes_per_s"].get<double>(), 3.1e12);
  EXPECT_EQ(c["source"], carried.source);
}

}  // namespace
}  // namespace ktune::report

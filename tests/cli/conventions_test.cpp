// The command-line conventions of docs/configuration.md ("Command-line conventions"), checked on
// every command by running the real binary: global options anywhere on the line, empty stores
// listed as empty, -o/--output with "-" for stdout, --json, one spelling per format, limits where 0
// means all, exit codes (0 ok, 1 failed, 2 usage, documented others), "did you mean", ktune info
// without a GPU, and --dry-run failing specs that cannot run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/cuda/driver.hpp"
#include "run_ktune.hpp"

namespace ktune::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Every subcommand, each with its own subcommands: a command added without being listed here fails
// EveryCommandIsCovered, so the conventions below are checked for it too.
const std::vector<std::string> kCommands = {"info",         "calibrate",    "profile",
                                            "report",       "export",       "fleet top",
                                            "fleet diff",   "replay",       "cache ls",
                                            "cache get",    "cache put",    "cache rm",
                                            "cache export", "cache import", "cache invalidate",
                                            "cache stats",  "bench",        "tune",
                                            "queue add",    "queue ls",     "queue from-backlog",
                                            "gate record",  "gate check",   "gate history",
                                            "gate cache",   "ingest",       "worker",
                                            "run"};

// The commands whose output a program reads: each takes --json.
const std::vector<std::string> kJsonCommands = {
    "info",        "calibrate",    "report",       "export",           "fleet top",
    "fleet diff",  "replay",       "cache ls",     "cache get",        "cache put",
    "cache rm",    "cache export", "cache import", "cache invalidate", "cache stats",
    "bench",       "tune",         "queue add",    "queue ls",         "queue from-backlog",
    "gate record", "gate check",   "gate history", "gate cache",       "ingest"};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A scratch folder, a fresh KTUNE_HOME in it, and the recorded trace fixture.
class Conventions : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    fs::copy_file(fs::path(KTUNE_SOURCE_DIR) / "tests/fixtures/traces/torch_layer_h200.ktrace",
                  trace_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string home_env() const { return "KTUNE_HOME=" + (dir_ / "home").string(); }
  RunResult run(const std::string& args) const { return run_ktune(args, home_env()); }

  fs::path dir_ = fs::temp_directory_path() / ("ktune_conventions_" + std::to_string(::getpid()));
  fs::path trace_ = dir_ / "t.ktrace";
  std::string spec_ = std::string(KTUNE_SOURCE_DIR) + "/kernels/gemv/gemv.json";
};

TEST(CliConventions, EveryCommandIsCovered) {
  const RunResult top = run_ktune("--help");
  ASSERT_EQ(top.exit_code, 0);
  std::set<std::string> listed;
  for (const auto& c : kCommands) listed.insert(c.substr(0, c.find(' ')));
  // Each command line of --help's "Subcommands:" block starts with two spaces and the name.
  std::istringstream lines(top.out.substr(top.out.find("Subcommands:")));
  std::string line;
  std::getline(lines, line);
  while (std::getline(lines, line)) {
    if (line.size() < 3 || line[0] != ' ') break;
    const std::string name = line.substr(2, line.find(' ', 2) - 2);
    EXPECT_TRUE(listed.count(name)) << name << " is not in kCommands";
  }
  for (const auto& c : kCommands) {
    const RunResult r = run_ktune(c + " --help");
    EXPECT_EQ(r.exit_code, 0) << c << ": " << r.err;
  }
}

// 1. Global options are read before or after the subcommand.
TEST_F(Conventions, GlobalOptionsAnywhereOnTheLine) {
  const std::string db = (dir_ / "s.db").string();
  for (const std::string& c : {"cache ls", "cache stats", "queue ls", "fleet top"}) {
    for (const std::string& line :
         {c + " --json --db " + db, "--db " + db + " " + c + " --json",
          c + " --db=" + db + " --json",
          c + " --json --device 0 --db " + db + " --allow-path " + dir_.string()}) {
      const RunResult r = run(line);
      EXPECT_EQ(r.exit_code, 0) << line << ": " << r.err;
      const json j = json::parse(r.out, nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << line << ": " << r.out;
      if (j.contains("store")) EXPECT_EQ(j["store"], db) << line;
    }
  }
  // Every command takes them after its name (they are usage errors nowhere).
  for (const auto& c : kCommands) {
    const RunResult r = run(c + " --db " + db + " --device 0 --help");
    EXPECT_EQ(r.exit_code, 0) << c << ": " << r.err;
  }
  // A report reads its ceilings from the store --db names, wherever --db stands.
  const RunResult r = run("report " + trace_.string() + " --db " + db + " --top 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(db)) << "reading made a store";
}

// 2. A store that does not exist yet is an empty listing: exit 0, an empty table or JSON with its
// schema_version, and no store file made by looking.
TEST_F(Conventions, AFreshStoreListsEmpty) {
  for (const std::string& args : {std::string(), " --db " + (dir_ / "new.db").string()}) {
    for (const std::string& c : {"cache ls", "cache stats", "queue ls", "fleet top"}) {
      const RunResult text = run(c + args);
      EXPECT_EQ(text.exit_code, 0) << c << args << ": " << text.err;
      EXPECT_TRUE(text.err.empty()) << c << ": " << text.err;
      EXPECT_FALSE(text.out.empty()) << c;
      const RunResult r = run(c + args + " --json");
      EXPECT_EQ(r.exit_code, 0) << c << args << ": " << r.err;
      const json j = json::parse(r.out, nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << c << ": " << r.out;
      EXPECT_TRUE(j.contains("schema_version")) << c << ": " << r.out;
    }
    EXPECT_EQ(json::parse(run("cache ls --json" + args).out)["entries"], json::array());
    EXPECT_EQ(json::parse(run("cache stats --json" + args).out)["entries"], 0);
    EXPECT_EQ(json::parse(run("queue ls --json" + args).out)["jobs"], json::array());
    EXPECT_EQ(json::parse(run("fleet top --json" + args).out)["rows"], json::array());
    EXPECT_NE(run("cache ls" + args).out.find("0 entries"), std::string::npos);
  }
  EXPECT_FALSE(fs::exists(dir_ / "new.db"));
  EXPECT_FALSE(fs::exists(dir_ / "home" / "ktune.db"));
}

// 3a. One output flag, -o/--output, where "-" is stdout.
TEST_F(Conventions, OutputIsDashOForEveryWriterAndDashIsStdout) {
  for (const std::string& c : {"report", "profile", "export", "cache export", "tune"}) {
    const RunResult r = run_ktune(c + " --help");
    EXPECT_NE(r.out.find("-o,--output"), std::string::npos) << c << ": " << r.out;
  }
  const fs::path cwd = fs::current_path();
  fs::current_path(dir_);
  RunResult r = run("report " + trace_.string() + " -o - --top 1");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("GPU"), std::string::npos) << r.out;
  r = run("export " + trace_.string() + " --chrome -o -");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(json::parse(r.out, nullptr, false).is_discarded());
  EXPECT_NE(r.err.find("wrote stdout"), std::string::npos) << r.err;
  r = run("export " + trace_.string() + " --chrome");  // stdout is the default
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(json::parse(r.out, nullptr, false).is_discarded());
  EXPECT_FALSE(fs::exists(dir_ / "-"));
  fs::current_path(cwd);
  // The old spelling of tune's folder still works, with a warning.
  r = run("tune " + spec_ + " --dry-run --out " + (dir_ / "x").string());
  EXPECT_NE(r.err.find("--out is deprecated; write -o/--output"), std::string::npos) << r.err;
}

// 3b. "-" as an input is stdin wherever a command reads a JSON document.
TEST_F(Conventions, DashIsStdinForInputs) {
  const std::string db = " --db " + (dir_ / "s.db").string();
  std::ofstream(dir_ / "entry.json") << R"({"op": "gemm_tn", "dtype": "f16", "bucket": "",
      "arch": "sm_90", "device_name": "NVIDIA H100 80GB HBM3", "toolkit": "13.0",
      "driver_major": 580, "shape": [4096, 2048, 4096, 1],
      "config": {"library": "cublaslt", "algo_id": 66, "layout": "TN"},
      "median_ns": 150000, "noise_ns": 100, "samples": 20, "throughput": 0,
      "throughput_unit": "flop/s", "verification": "passed",
      "provenance": {"ktune_version": "0.1.0", "ktune_commit": "x", "host": "h",
                     "created_at": "2026-11-23T00:00:00Z", "strategy": "cublaslt-search"}})";
  RunResult r = run_ktune_with_stdin("cache put -" + db, (dir_ / "entry.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run("cache export -o -" + db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["entries"].size(), 1u);
  r = run("cache export -o " + (dir_ / "pack.json").string() + " --json" + db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["entries"], 1);
  const std::string other = " --db " + (dir_ / "other.db").string();
  r = run_ktune_with_stdin("cache import - --json" + other, (dir_ / "pack.json").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["winners"], 1);
  EXPECT_EQ(json::parse(run("cache ls --json" + other).out)["entries"].size(), 1u);
  // Everything else is read by its path: "-" there is a usage error saying so, never a file "-".
  for (const std::string& args :
       {"report -", "export - --chrome", "ingest -", "replay -", "tune - --dry-run", "bench -",
        "queue add -", "gate check -", "gate record -"}) {
    const RunResult bad = run(args + db);
    EXPECT_EQ(bad.exit_code, 2) << args << ": " << bad.err;
    EXPECT_NE(bad.err.find("'-' (stdin) is read only where"), std::string::npos)
        << args << ": " << bad.err;
  }
}

// 3c. --json on every command a program reads; where --format picks JSON, --json is the same.
TEST_F(Conventions, JsonEverywhereAndTheSameAsFormatJson) {
  for (const auto& c : kJsonCommands) {
    const RunResult r = run_ktune(c + " --help");
    EXPECT_NE(r.out.find("--json"), std::string::npos) << c;
    EXPECT_NE(r.out.find("schema_version"), std::string::npos) << c << ": " << r.out;
  }
  const RunResult a = run("report " + trace_.string() + " --json");
  const RunResult b = run("report " + trace_.string() + " --format json");
  EXPECT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_TRUE(json::parse(a.out).contains("schema_version"));
  const RunResult e =
      run("export " + trace_.string() + " --chrome -o " + (dir_ / "c.json").string() + " --json");
  EXPECT_EQ(e.exit_code, 0) << e.err;
  const json j = json::parse(e.out);
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["format"], "chrome");
  EXPECT_GT(j["kernels"].get<int>(), 0);
  // The export itself on stdout leaves no room for the summary: a usage error.
  EXPECT_EQ(run("export " + trace_.string() + " --chrome --json").exit_code, 2);
  EXPECT_NE(run_ktune("gate check --help").out.find("the same as --format json"),
            std::string::npos);
}

// 3d. One spelling per format (md, markdown accepted), 0 = all for --top and --limit, --all and
// --prefetch with one meaning each.
TEST_F(Conventions, FormatsLimitsAndFlagNamesMeanOneThing) {
  const RunResult md = run("report " + trace_.string() + " --format md");
  const RunResult markdown = run("report " + trace_.string() + " --format markdown");
  EXPECT_EQ(md.exit_code, 0) << md.err;
  EXPECT_EQ(md.out, markdown.out);
  EXPECT_NE(run_ktune("gate check --help").out.find("md (or markdown)"), std::string::npos);
  // gate check reads its format before the suite: a bad one is a usage error naming md.
  const RunResult g = run("gate check nosuite.toml --format xml");
  EXPECT_EQ(g.exit_code, 2);
  EXPECT_NE(g.err.find("table, md, json"), std::string::npos) << g.err;

  const json all = json::parse(run("report " + trace_.string() + " --json").out);
  const std::size_t kernels = all["kernels"].size();
  ASSERT_GT(kernels, 1u);
  const RunResult top0 = run("report " + trace_.string() + " --top 0");
  const RunResult top1 = run("report " + trace_.string() + " --top 1");
  EXPECT_EQ(top0.exit_code, 0) << top0.err;
  EXPECT_GT(top0.out.size(), top1.out.size());
  EXPECT_EQ(top0.out.find("--format json lists them all"), std::string::npos) << top0.out;
  for (const std::string& c : {"report", "fleet top", "queue from-backlog", "gate cache"}) {
    const RunResult r = run_ktune(c + " --help");
    EXPECT_NE(r.out.find("0: all"), std::string::npos) << c << ": " << r.out;
  }
  // --all: every entry with no filter (rm, invalidate); ls names its own flag.
  for (const std::string& c : {"cache rm", "cache invalidate"})
    EXPECT_NE(run_ktune(c + " --help").out.find("Every entry, with no filter needed"),
              std::string::npos)
        << c;
  EXPECT_EQ(run("cache ls --all").exit_code, 2);
  EXPECT_EQ(run("cache ls --include-invalidated").exit_code, 0);
  // --window is profile's capture window; the proposal look-ahead is --prefetch in tune and replay.
  for (const std::string& c : {"tune", "replay"}) {
    const RunResult r = run_ktune(c + " --help");
    EXPECT_NE(r.out.find("--prefetch"), std::string::npos) << c;
    EXPECT_EQ(r.out.find("--window"), std::string::npos) << c;
  }
  EXPECT_NE(run_ktune("profile --help").out.find("--window"), std::string::npos);
}

// 4a. Exit codes: a bad flag or value, or a missing argument, is 2, before anything runs.
TEST_F(Conventions, UsageErrorsExitTwo) {
  const std::string t = trace_.string();
  for (const std::string& args : std::vector<std::string>{"report " + t + " --format xml",
                                                          "report " + t + " --names bogus",
                                                          "report " + t + " --by foo",
                                                          "report " + t + " --top -1",
                                                          "report",
                                                          "report " + t + " --bogus",
                                                          "bench " + spec_ + " --mode warm",
                                                          "bench " + spec_ + " --grid sideways",
                                                          "tune",
                                                          "tune " + spec_ + " --strategy nope",
                                                          "tune " + spec_ + " --budget 0",
                                                          "replay x.json --strategy nope",
                                                          "replay x.json --prefetch 0",
                                                          "cache get --op x",
                                                          "cache rm",
                                                          "cache invalidate",
                                                          "cache",
                                                          "queue add",
                                                          "fleet diff",
                                                          "export",
                                                          "export " + t,
                                                          "gate",
                                                          "fleet",
                                                          "queue",
                                                          "ingest",
                                                          "cache ls --limit 2"}) {
    const RunResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.out << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
    EXPECT_EQ(r.err.rfind("ktune: ", 0), 0u) << args << ": " << r.err;
  }
  // A failure of the thing itself is 1.
  EXPECT_EQ(run("report " + (dir_ / "missing.ktrace").string()).exit_code, 1);
  // cache get's miss is 3, and its --help says so.
  EXPECT_NE(run_ktune("cache get --help").out.find("exit code 3"), std::string::npos);
  const RunResult miss =
      run("cache get --op gemm --dtype f16 --shape m=1,n=1,k=1 --arch sm_90 "
          "--device-name X --toolkit 13.0 --db " +
          (dir_ / "s.db").string());
  EXPECT_EQ(miss.exit_code, 3) << miss.err;
}

// 4b. "Did you mean" for a mistyped command, subcommand or flag.
TEST_F(Conventions, MistypesGetASuggestion) {
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"reprot x.ktrace", "(did you mean 'report'?)"},
           {"cache lss", "did you mean 'ls'?"},
           {"fleet tpo", "did you mean 'top'?"},
           {"report " + trace_.string() + " --fromat md", "did you mean --format?"},
           {"cache ls --jsn", "did you mean --json?"},
           {"tune --dry-runn " + spec_, "did you mean --dry-run?"},
           {"cache ls --dbb x.db", "did you mean --db?"}}) {
    const RunResult r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_NE(r.err.find(says), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  const RunResult far = run("frobnicate");
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;
}

// 4c. A trace given where a spec belongs is named by its content.
TEST_F(Conventions, ATraceIsNotASpec) {
  fs::copy_file(trace_, dir_ / "t.json");  // the name does not decide
  for (const std::string& c : {"tune --dry-run ", "tune ", "bench "}) {
    const RunResult r = run(c + (dir_ / "t.json").string());
    EXPECT_EQ(r.exit_code, 1) << c;
    EXPECT_NE(r.err.find("is a ktune trace (.ktrace), not a tuning spec"), std::string::npos)
        << c << ": " << r.err;
    EXPECT_EQ(r.err.find("syntax"), std::string::npos) << r.err;
  }
}

// 5. ktune info reports what it finds without a GPU, and exits 0.
TEST_F(Conventions, InfoWithoutAGpuReportsEverythingElse) {
  RunResult r = run("info");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* line :
       {"ktune ", "host ", "driver ", "NVRTC ", "cuBLASLt ", "CUPTI ", "store ", "python "})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << " in " << r.out;
  if (!cuda::gpu_available()) {
    EXPECT_NE(r.out.find("GPU         none: "), std::string::npos);
  }
  r = run("info --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["schema_version"], 2);
  EXPECT_FALSE(j["build"]["version"].get<std::string>().empty());
  EXPECT_FALSE(j["build"]["build_type"].get<std::string>().empty());
  EXPECT_GT(j["memory_bytes"].get<std::int64_t>(), 0);
  EXPECT_TRUE(j["libraries"]["nvrtc"]["found"].get<bool>());
  EXPECT_FALSE(j["libraries"]["nvrtc"]["version"].get<std::string>().empty());
  for (const char* lib : {"driver", "cublaslt", "cupti", "tracer", "nvml"})
    EXPECT_TRUE(j["libraries"][lib].contains("found")) << lib;
  EXPECT_EQ(j["store"]["exists"], false);
  EXPECT_EQ(j["store"]["backend"], "sqlite");
  EXPECT_TRUE(j["python"].contains("found"));
  EXPECT_FALSE(j["host"]["os"].get<std::string>().empty());
  if (!cuda::gpu_available()) {
    EXPECT_EQ(j["gpu"]["count"], 0);
    EXPECT_TRUE(j["gpu"]["error"].is_string());
  }
  EXPECT_FALSE(fs::exists(dir_ / "home" / "ktune.db"));
}

// 6. A tune that fails leaves no session folder behind.
TEST_F(Conventions, AFailedTuneLeavesNoFolder) {
  if (cuda::gpu_available()) GTEST_SKIP() << "a GPU is present: the tune would run";
  const fs::path out = dir_ / "session";
  const RunResult r = run("tune " + spec_ + " --budget 2 -o " + out.string() + " --no-cache");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_FALSE(fs::exists(out)) << r.err;
  const fs::path cwd = fs::current_path();
  fs::current_path(dir_);
  const RunResult d = run("tune " + spec_ + " --budget 2 --no-cache");
  fs::current_path(cwd);
  EXPECT_EQ(d.exit_code, 1);
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().rfind("ktune-tune-", 0), std::string::npos) << e.path();
}

// 7. docs/report.md's sample output is what the binary prints for the fixture it names.
TEST_F(Conventions, ReportDocSampleIsTheReportOfItsFixture) {
  const std::string readme = slurp(fs::path(KTUNE_SOURCE_DIR) / "docs" / "report.md");
  const auto begin = readme.find("```text\n");
  ASSERT_NE(begin, std::string::npos);
  const auto end = readme.find("```", begin + 8);
  const std::string sample = readme.substr(begin + 8, end - begin - 8);
  const RunResult r = run("report " + trace_.string() + " --top 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, sample.size()), sample);
}

}  // namespace
}  // namespace ktune::test

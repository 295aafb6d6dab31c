#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "ktune/cuda/driver.hpp"
#include "run_ktune.hpp"

namespace ktune::test {
namespace {

namespace fs = std::filesystem;

TEST(Cli, HelpListsTheSubcommands) {
  const RunResult r = run_ktune("--help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* cmd : {"info", "calibrate"})
    EXPECT_NE(r.out.find(cmd), std::string::npos) << cmd;
}

// The checkout's commit, not the one of the last configure: the build bakes it in every time (the
// gate keys baselines by it; a build configured before later commits named the old one).
TEST(Cli, VersionNamesTheCommit) {
  const RunResult r = run_ktune("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("ktune "), std::string::npos);
  std::string head;
  if (FILE* git =
          ::popen("git -C " KTUNE_SOURCE_DIR " rev-parse --short=12 HEAD 2>/dev/null", "r")) {
    char buf[64] = {};
    if (std::fgets(buf, sizeof buf, git)) head = buf;
    ::pclose(git);
  }
  while (!head.empty() && std::isspace(static_cast<unsigned char>(head.back()))) head.pop_back();
  if (head.empty()) GTEST_SKIP() << "the source is not a git checkout";
  EXPECT_NE(r.out.find("(" + head), std::string::npos) << r.out << " vs HEAD " << head;
}

TEST(Cli, UnknownSubcommandIsAUsageError) {
  const RunResult r = run_ktune("frobnicate");
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("frobnicate"), std::string::npos) << r.err;
}

// Without a GPU every GPU command fails with exactly one line naming the missing driver/GPU.
class GpuCommandWithoutGpu : public ::testing::TestWithParam<const char*> {};

TEST_P(GpuCommandWithoutGpu, FailsWithOneSentence) {
  if (cuda::gpu_available()) GTEST_SKIP() << "a GPU is present; the GPU tier covers this command";
  const RunResult r = run_ktune(GetParam());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("NVIDIA"), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(Commands, GpuCommandWithoutGpu,
                         ::testing::Values("calibrate", "calibrate --json", "run -- true",
                                           "run --write-table /tmp/ktune-cli-table.json"));

TEST(Cli, RunWithNothingToRunIsAUsageError) {
  const RunResult r = run_ktune("run");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("put it after '--', e.g. ktune run -- python3 train.py"), std::string::npos)
      << r.err;
}

// A scratch copy of a recorded trace, so a test may try to damage it.
class TraceCli : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_);
    fs::copy_file(
        fs::path(KTUNE_SOURCE_DIR) / "tests" / "fixtures" / "traces" / "torch_layer_h200.ktrace",
        trace_);
    bytes_ = slurp(trace_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  static std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  fs::path dir_ = fs::temp_directory_path() / ("ktune_trace_cli_" + std::to_string(::getpid()));
  fs::path trace_ = dir_ / "t.ktrace";
  std::string bytes_;
};

TEST_F(TraceCli, OutputsNeverReplaceTheirTrace) {
  const std::string t = trace_.string();
  for (const std::string& cmd :
       {"report " + t + " -o " + t,
        "report " + t + " --format json -o " + (dir_ / "." / "t.ktrace").string(),
        "export " + t + " --chrome -o " + t}) {
    const RunResult r = run_ktune(cmd);
    EXPECT_EQ(r.exit_code, 1) << cmd;
    EXPECT_NE(r.err.find("it is the input " + t + " itself"), std::string::npos) << r.err;
  }
  EXPECT_EQ(slurp(trace_), bytes_);
  // Not a regular file: a pipe stands in for /dev/null, which a rename as root would replace.
  ASSERT_EQ(::mkfifo((dir_ / "pipe").c_str(), 0600), 0);
  for (const std::string& cmd : {"report " + t + " -o " + (dir_ / "pipe").string(),
                                 "export " + t + " --chrome -o " + (dir_ / "pipe").string(),
                                 "report " + t + " -o " + dir_.string()}) {
    const RunResult r = run_ktune(cmd);
    EXPECT_EQ(r.exit_code, 1) << cmd;
    EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
  }
  EXPECT_TRUE(fs::is_fifo(dir_ / "pipe"));
  const RunResult ok = run_ktune("report " + t + " -o " + (dir_ / "r.txt").string());
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST_F(TraceCli, TopMustBeACount) {
  for (const char* top : {"-1", "1.5", "x"}) {
    const RunResult r = run_ktune("report " + trace_.string() + " --top " + top);
    EXPECT_EQ(r.exit_code, 2) << top << ": " << r.out;
    EXPECT_NE(r.err.find("--top"), std::string::npos) << r.err;
  }
}

TEST_F(TraceCli, StringSchemaVersionNamesTheFileAndField) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(trace_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE metadata SET value = '\"1\"' WHERE key = 'schema_version'",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const RunResult r = run_ktune("report " + trace_.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(trace_.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("schema_version"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

// `--db ""` (or KTUNE_DB= from an unset variable) silently wrote the default store.
TEST(Cli, AnEmptyStoreIsAUsageError) {
  const std::string home =
      (fs::temp_directory_path() / ("ktune_empty_db_" + std::to_string(::getpid()))).string();
  for (const auto& [args, env] : std::vector<std::pair<std::string, std::string>>{
           {"--db '' cache ls", ""}, {"cache ls", "KTUNE_DB="}}) {
    const RunResult r = run_ktune(args, "KTUNE_HOME=" + home + " " + env);
    EXPECT_EQ(r.exit_code, 2) << args << " " << env << ": " << r.out;
    EXPECT_NE(r.err.find("is empty; give the store's path"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(fs::path(home) / "ktune.db"));
  fs::remove_all(home);
}

// `fleet top --since 2026-13-45` was accepted and matched nothing; 99999999999999d overflowed to
// the year 1726.
TEST(Cli, SinceIsACalendarTimeOrASpanThatFits) {
  const std::string db =
      (fs::temp_directory_path() / ("ktune_since_" + std::to_string(::getpid()) + ".db")).string();
  for (const char* since : {"2026-13-45", "2026-02-30", "2026-11-20T25:00:00Z", "2026-11-20x",
                            "99999999999999d", "99999999999999999999999h"}) {
    const RunResult r = run_ktune("--db " + db + " fleet top --since " + since);
    EXPECT_NE(r.exit_code, 0) << since;
    EXPECT_NE(r.err.find("--since '" + std::string(since) + "'"), std::string::npos) << r.err;
  }
  for (const char* since : {"2024-02-29", "2026-11-20T08:00:00Z", "2026-11-20T08:00", "36500d"}) {
    const RunResult r = run_ktune("--db " + db + " fleet top --since " + since);
    EXPECT_EQ(r.err.find("--since"), std::string::npos) << since << ": " << r.err;
  }
  fs::remove(db);
}

// fleet top cut kernel names at 45 characters, so seven rows of a PyTorch program read
// "void at::native::vectorized_elementwise_kerne...". They show the middle form, whole.
TEST(Cli, FleetNamesKernelsAsTheReportDoes) {
  const fs::path dir =
      fs::temp_directory_path() / ("ktune_fleet_names_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string db = "--db " + (dir / "s.db").string() + " ";
  const std::string trace =
      (fs::path(KTUNE_SOURCE_DIR) / "tests/fixtures/traces/torch_layer_h200.ktrace").string();
  ASSERT_EQ(run_ktune(db + "ingest " + trace + " --tag build=A").exit_code, 0);
  RunResult r = run_ktune(db + "fleet top");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name :
       {"vectorized_elementwise_kernel<MulFunctor>", "vectorized_elementwise_kernel<silu_kernel>",
        "elementwise_kernel<gpu_kernel_impl_nocast<CUDAFunctor_add>>",
        "vectorized_elementwise_kernel<FillFunctor, Half>",
        "vectorized_elementwise_kernel<FillFunctor, float>", "vectorized_layer_norm_kernel<Half>",
        "nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_bias_TNT"})
    EXPECT_NE(r.out.find(name), std::string::npos) << name << "\n" << r.out;
  EXPECT_EQ(r.out.find("..."), std::string::npos) << r.out;
  r = run_ktune(db + "fleet top --names full");
  EXPECT_NE(r.out.find("void at::native::vectorized_elementwise_kernel<8, "
                       "at::native::FillFunctor<c10::Half>, std::array<char*, 1ul> >"),
            std::string::npos)
      << r.out;
  r = run_ktune(db + "fleet top --names short");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("--names 'short' is not a name style"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

// Paths given on the command line: a special file is refused at once, never read without end.
TEST(Cli, SpecialFilesAsInputsAreOneSentence) {
  const fs::path dir = fs::temp_directory_path() / ("ktune_special_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  const std::string db = "--db " + (dir / "s.db").string() + " ";
  for (const std::string& args : std::vector<std::string>{
           "cache put /dev/zero", "cache import /dev/zero",
           "cache import " + (dir / "fifo").string(), "tune --dry-run /dev/zero",
           "tune --dry-run " + (dir / "fifo").string(), "queue add " + (dir / "fifo").string()}) {
    const RunResult r = run_ktune(db + args, "timeout 20");
    EXPECT_EQ(r.exit_code, 1) << args << ": " << r.out << r.err;
    EXPECT_TRUE(r.err.find("character device") != std::string::npos ||
                r.err.find("named pipe") != std::string::npos)
        << args << ": " << r.err;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ktune::test

#include "ktune/gate/suite.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"

namespace ktune::gate {
namespace {

using ::testing::HasSubstr;

const std::filesystem::path kFile = "/suites/ci.toml";

std::string error_of(const std::string& text) {
  try {
    parse_suite(text, kFile);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Suite, MoreBaselineRunsThanTheDefaultMaximumRaiseTheMaximum) {
  const Suite s =
      parse_suite("[gate]\nbaseline_runs = 30\n[[benchmark]]\nname = \"a\"\nspec = \"x\"\n", kFile);
  EXPECT_EQ(s.rule.baseline_runs, 30);
  EXPECT_EQ(s.rule.max_baseline_runs, 30);
}

TEST(Suite, ReadsSpecsProgramsAndSettings) {
  const Suite s = parse_suite(R"(
schema_version = 1
[gate]
threshold = 0.03
baseline_runs = 6
stop = "min_gpu_time_s=0.2"
nvrtc_options = ["-lineinfo"]

[[benchmark]]
name = "gemv"
spec = "../kernels/gemv/gemv.json"
config = "BLOCK=128"
shape = { n = 7168, k = 16384 }

[[benchmark]]
name = "copy_cached"
spec = "/abs/copy.json"
config = "cached"
mode = "hot"

[[benchmark]]
name = "blas"
command = ["./bench", "--benchmark_format=json"]
format = "gbench"
select = "BM_Gemm/4096"
)",
                              kFile);
  EXPECT_DOUBLE_EQ(s.rule.threshold, 0.03);
  EXPECT_EQ(s.rule.baseline_runs, 6);
  EXPECT_EQ(s.rule.max_baseline_runs, 20);  // the default, above baseline_runs
  EXPECT_EQ(s.stop, "min_gpu_time_s=0.2");
  EXPECT_EQ(s.nvrtc_options, std::vector<std::string>{"-lineinfo"});
  ASSERT_EQ(s.benchmarks.size(), 3u);
  EXPECT_EQ(s.benchmarks[0].spec, std::filesystem::path("/suites/../kernels/gemv/gemv.json"));
  EXPECT_EQ(s.benchmarks[0].shape_key(), "k=16384,n=7168");
  EXPECT_FALSE(s.benchmarks[0].cached_winner);
  EXPECT_TRUE(s.benchmarks[1].cached_winner);
  EXPECT_EQ(s.benchmarks[1].mode, bench::TimingMode::hot);
  EXPECT_TRUE(s.benchmarks[2].is_program());
  EXPECT_EQ(s.benchmarks[2].format, ProgramFormat::gbench);
}

TEST(Suite, BadFilesGetOneSentenceNamingFileKeyAndFix) {
  EXPECT_THAT(error_of("[[benchmark]]\nname = \"a\"\nspec = \"x.json\"\nconfg = \"B=1\"\n"),
              HasSubstr("/suites/ci.toml: benchmark 1 (\"a\"): unknown key \"confg\""));
  EXPECT_THAT(error_of("[[benchmark]]\nname = \"a\"\n"), HasSubstr("give exactly one of \"spec\""));
  EXPECT_THAT(error_of("[[benchmark]]\nname = \"a\"\nspec = \"x\"\n[[benchmark]]\nname = "
                       "\"a\"\nspec = \"y\"\n"),
              HasSubstr("benchmark 2 (\"a\"): the name is used twice"));
  EXPECT_THAT(error_of("[gate]\nthreshold = 5\n[[benchmark]]\nname = \"a\"\nspec = \"x\"\n"),
              HasSubstr("[gate]: \"threshold\" must be a number from 0.001 to 1"));
  EXPECT_THAT(error_of("[[benchmark]]\nname = \"a\"\ncommand = [\"x\"]\nformat = \"csv\"\n"),
              HasSubstr("format \"csv\" is not one ktune reads"));
  EXPECT_THAT(error_of("[gate]\nbaseline_runs = 6\nmax_baseline_runs = 4\n[[benchmark]]\nname = "
                       "\"a\"\nspec = \"x\"\n"),
              HasSubstr("\"max_baseline_runs\" must be a number from 6 to 100"));
  EXPECT_THAT(error_of("[[benchmark]\n"), HasSubstr("/suites/ci.toml:1:"));
  EXPECT_THAT(error_of("schema_version = 1\n"), HasSubstr("lists no benchmarks"));
  EXPECT_THAT(error_of("[[benchmark]]\nname = \"a\"\nspec = \"x\"\nshape = { n = \"big\" }\n"),
              HasSubstr("shape variable \"n\" must be an integer"));
  EXPECT_THAT(error_of("[[benchmark]]\nname = \"a\"\nspec = \"x\"\ntimeout_s = 5\n"),
              HasSubstr("\"timeout_s\" applies to a command"));
  EXPECT_THAT(error_of("[[benchmark]]\nname = \"a\"\ncommand = [\"x\"]\ntimeout_s = 0\n"),
              HasSubstr("\"timeout_s\" must be a number from 0.1 to 86400"));
}

std::string load_error(const std::filesystem::path& file) {
  try {
    load_suite(file);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// Issue 44: the suite was read whole before anything else, so /dev/zero or a large sparse file
// ended in bad_alloc and a FIFO blocked for ever.
TEST(Suite, OnlyARegularFileOfBoundedSizeIsRead) {
  EXPECT_THAT(load_error("/dev/zero"), HasSubstr("give the path of a regular file"));
  const auto dir =
      std::filesystem::temp_directory_path() / ("ktune_suite_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto fifo = dir / "suite.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THAT(load_error(fifo), HasSubstr("give the path of a regular file"));  // returns at once
  const auto sparse = dir / "sparse.toml";
  { std::ofstream(sparse) << "schema_version = 1\n"; }
  std::filesystem::resize_file(sparse, std::uintmax_t{8} << 30);
  EXPECT_THAT(load_error(sparse), HasSubstr("more than the"));
  EXPECT_THAT(load_error(dir / "missing.toml"), HasSubstr("cannot read"));
  std::filesystem::remove_all(dir);
}

TEST(ProgramSamples, AnNvbenchValueThatIsNoNumberIsOneSentence) {
  const auto nv = nlohmann::json::parse(R"({"benchmarks": [{"name": "gemm", "states": [
    {"name": "Device=0", "summaries": [{"tag": "nv/cold/time/gpu/mean",
      "data": [{"name": "value", "type": "float64", "value": "fast"}]}]}]}]})");
  try {
    program_samples(nv, ProgramFormat::nvbench, "", "benchmark \"g\"");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("benchmark \"g\": nvbench's \"value\" is 'fast'"));
  }
}

TEST(ProgramSamples, ReadsKtuneGoogleBenchmarkAndNvbench) {
  EXPECT_EQ(
      program_samples(nlohmann::json{{"samples_ns", {1.0, 2.0}}}, ProgramFormat::ktune, "", "x"),
      (std::vector<double>{1, 2}));
  const auto gb = nlohmann::json::parse(R"({"benchmarks": [
    {"name": "BM_A/1", "run_name": "BM_A/1", "run_type": "iteration", "real_time": 2.5, "time_unit": "us"},
    {"name": "BM_A/1", "run_name": "BM_A/1", "run_type": "iteration", "real_time": 2.7, "time_unit": "us"},
    {"name": "BM_A/1_mean", "run_name": "BM_A/1", "run_type": "aggregate", "real_time": 2.6, "time_unit": "us"},
    {"name": "BM_B/1", "run_name": "BM_B/1", "run_type": "iteration", "real_time": 9, "time_unit": "ms"}]})");
  EXPECT_EQ(program_samples(gb, ProgramFormat::gbench, "", "x"), (std::vector<double>{2500, 2700}));
  EXPECT_EQ(program_samples(gb, ProgramFormat::gbench, "BM_B/1", "x"), (std::vector<double>{9e6}));
  const auto nv = nlohmann::json::parse(R"({"benchmarks": [{"name": "gemm", "states": [
    {"name": "Device=0", "summaries": [{"tag": "nv/cold/time/gpu/mean",
      "data": [{"name": "value", "type": "float64", "value": "1.5e-05"}]}]}]}]})");
  const auto v = program_samples(nv, ProgramFormat::nvbench, "", "x");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NEAR(v[0], 15000, 1e-6);
  try {
    program_samples(gb, ProgramFormat::gbench, "BM_C", "bench.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("bench.json: the output holds no timing for \"BM_C\""));
  }
}

// A zero or negative time used to pass here and stop the gate later with "a run's median time is
// not positive", naming no benchmark.
TEST(ProgramSamples, ATimeThatIsNotPositiveIsRefusedNamingTheBenchmark) {
  for (const auto& bad :
       {nlohmann::json{{"samples_ns", {5.0, 0.0}}}, nlohmann::json{{"samples_ns", {-3.0}}}}) {
    try {
      program_samples(bad, ProgramFormat::ktune, "", "benchmark \"lt\"");
      ADD_FAILURE() << bad.dump();
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr("benchmark \"lt\": the output holds a time of"));
      EXPECT_THAT(e.what(), HasSubstr("every time must be positive"));
    }
  }
}

// The clock is extra: an output without one, or with one of another shape, gives 0, never an error.
TEST(ProgramClock, ReadsTheMedianOfKtuneJsonAndNothingElse) {
  using J = nlohmann::json;
  EXPECT_EQ(
      program_clock_mhz(J::parse(R"({"sm_clock_mhz": {"median": 1755}})"), ProgramFormat::ktune),
      1755);
  EXPECT_EQ(
      program_clock_mhz(J::parse(R"({"sm_clock_mhz": {"median": 1755}})"), ProgramFormat::gbench),
      0);
  for (const char* other : {R"({})", R"({"sm_clock_mhz": 1980})", R"({"sm_clock_mhz": null})",
                            R"({"sm_clock_mhz": {"median": "fast"}})", R"([1, 2])"})
    EXPECT_EQ(program_clock_mhz(J::parse(other), ProgramFormat::ktune), 0) << other;
}

}  // namespace
}  // namespace ktune::gate

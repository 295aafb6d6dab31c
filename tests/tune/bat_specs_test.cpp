// BAT's benchmark specs (tests/fixtures/bat), tried as a new user would: every well-formed T1 one
// dry-runs, with the input kinds they use (generated inputs, CUDA vector types, a scalar
// ProblemSize, a 21-parameter space of 8.1e11 products), and each of the others is refused in one
// sentence that names the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "ktune/bench/problem.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/cuda/nvrtc.hpp"
#include "ktune/spec/space.hpp"
#include "ktune/spec/spec.hpp"
#include "ktune/tune/spec_problem.hpp"
#include "run_ktune.hpp"

namespace ktune::tune {
namespace {

namespace fs = std::filesystem;

fs::path bat(const std::string& name) {
  return fs::path(KTUNE_SOURCE_DIR) / "tests" / "fixtures" / "bat" / name;
}

const char* const kWellFormed[] = {"FFT-CAFF.json",
                                   "GEMM-CAFF.json",
                                   "MD5Hash-CAFF.json",
                                   "TRIAD-CAFF.json",
                                   "builtin_vectors-CAFF.json",
                                   "convolution-CAFF.json",
                                   "hotspot-CAFF.json",
                                   "nbody-CAFF.json"};

TEST(BatSpecs, EveryWellFormedSpecDryRuns) {
  for (const char* name : kWellFormed) {
    SCOPED_TRACE(name);
    const auto r = test::run_ktune("tune " + bat(name).string() + " --dry-run --json");
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    const auto j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
    EXPECT_EQ(j["ok"], true) << j["problems"].dump();
    EXPECT_GT(j["space_size"].get<std::uint64_t>(), 0u);
    EXPECT_EQ(j["space_size_exact"], true);
    // Only FFT's valid set is past what an index keeps.
    EXPECT_EQ(j["sampled"].is_null(), std::string(name) != "FFT-CAFF.json") << j["sampled"];
  }
}

TEST(BatSpecs, TheFftSpaceOfEightHundredBillionIsSampled) {
  const auto r = test::run_ktune("tune " + bat("FFT-CAFF.json").string() + " --dry-run --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cartesian_size"], 806'215'680'000u);
  EXPECT_EQ(j["space_size"], 806'215'680'000u);  // no conditions: every configuration is valid
  EXPECT_EQ(j["space_size_exact"], true);
  EXPECT_EQ(j["sampled"], kSampledConfigurations);
}

TEST(BatSpecs, GeneratedInputsFollowTheirExpression) {
  const ProblemSpec s = ProblemSpec::load(bat("TRIAD-CAFF.json"));
  const bench::Problem p = make_problem(s, default_config(s));
  ASSERT_GE(p.args.size(), 2u);
  for (int a = 0; a < 2; ++a) {
    EXPECT_EQ(p.args[a].fill, bench::KernelArg::Fill::values);
    ASSERT_TRUE(p.args[a].values);
    ASSERT_EQ(p.args[a].values->size(), 4096u);
    EXPECT_EQ((*p.args[a].values)[0], 0.0);
    EXPECT_EQ((*p.args[a].values)[4095], 4095.0);  // DataSource "i": the element index
  }
}

TEST(BatSpecs, VectorTypesHoldTheirWidthOfElements) {
  const ProblemSpec v = ProblemSpec::load(bat("builtin_vectors-CAFF.json"));
  EXPECT_EQ(v.kernel.arguments[0].width, 3);
  EXPECT_EQ(v.ktune.dtype, "f64");
  const bench::Problem p = make_problem(v, default_config(v));
  EXPECT_EQ(p.args[0].dtype, DType::f64);
  EXPECT_EQ(p.args[0].count, 4096u * 3);  // double3: 24 bytes an entry
  EXPECT_EQ(p.args[0].bytes(), 4096u * 24);
  const ProblemSpec fft = ProblemSpec::load(bat("FFT-CAFF.json"));
  EXPECT_EQ(make_problem(fft, default_config(fft)).args[0].count, 262144u * 2);  // float2
}

TEST(BatSpecs, AScalarProblemSizeIsAListOfOne) {
  const ProblemSpec s = ProblemSpec::load(bat("pnpoly-CAFF.json"));
  ASSERT_EQ(s.kernel.problem_size.size(), 1u);
  const MapScope constants = s.constants();
  EXPECT_EQ(constants.find("ProblemSize")->as_list()[0].as_int(), 20'000'000);
}

// pnpoly's spec lists a fourth argument (vertex_xy, meant for the kernel's __constant__ vertices)
// that cn_pnpoly does not take, so the kernel would read its `int n` from a pointer: the dry run
// says so instead of timing a kernel that runs on garbage.
TEST(BatSpecs, PnpolysArgumentsDisagreeWithItsKernel) {
  const auto r = test::run_ktune("tune " + bat("pnpoly-CAFF.json").string() + " --dry-run");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("problem: kernel cn_pnpoly takes 3 parameters, the spec's Arguments give 4"),
            std::string::npos)
      << r.out;
}

// Whether `launch` compiles for sm_90 with `claim` appended to its source: asks the compiler what
// the configuration's macros mean, on a machine with no GPU.
bool compiles_with(const bench::KernelLaunch& launch, const std::string& claim) {
  try {
    cuda::compile(launch.source + "\n" + claim + "\n", launch.program_name,
                  bench::compile_options(launch, "sm_90"));
    return true;
  } catch (const cuda::CompileError&) {
    return false;
  }
}

// fft.cu picks float2 or double2 with `#if PRECISION == 32`, and FFT's spec sets PRECISION in
// its BenchmarkConfig, which BAT's runner defines for the compiler. Left undefined, the kernel
// read double2 over the spec's float2 buffer and faulted on the H200
// (logs/2026-11-28-gpu-bat-h200.md).
TEST(BatSpecs, FftsKernelComputesInTheBuffersPrecision) {
  const ProblemSpec s = ProblemSpec::load(bat("FFT-CAFF.json"));
  const bench::Problem p = make_problem(s, default_config(s));
  const auto& flags = p.launch.flags;
  EXPECT_NE(std::find(flags.begin(), flags.end(), "-DPRECISION=32"), flags.end());
  // Entries the kernel never names are left out, as parameters are.
  EXPECT_EQ(std::find(flags.begin(), flags.end(), "-Dnffts=256"), flags.end());
  EXPECT_EQ(p.args[0].dtype, DType::f32);
  EXPECT_TRUE(compiles_with(p.launch, "static_assert(sizeof(T2) == sizeof(float2), \"\");"));
  EXPECT_FALSE(compiles_with(p.launch, "static_assert(sizeof(T2) == sizeof(double2), \"\");"));
}

// TRIAD's spec gives every argument as double; its BenchmarkConfig sets PRECISION 32, so the
// kernel takes floats. The scalar follows the kernel's parameter (bench::scalar_type_for).
TEST(BatSpecs, TriadsDoubleScalarIsPassedAsTheKernelsFloat) {
  const ProblemSpec s = ProblemSpec::load(bat("TRIAD-CAFF.json"));
  const bench::Problem p = make_problem(s, default_config(s));
  EXPECT_TRUE(compiles_with(p.launch, "static_assert(sizeof(DATA_TYPE) == 4, \"\");"));
  ASSERT_EQ(p.args.size(), 5u);
  EXPECT_EQ(p.args[3].kind, bench::KernelArg::Kind::scalar);
  EXPECT_EQ(p.args[3].dtype, DType::f64);
  EXPECT_EQ(bench::scalar_type_for(p.args[3].dtype, sizeof(float)), DType::f32);
  // The entries are names an expression may read, too.
  EXPECT_EQ(s.constants().find("dataSize")->as_int(), 4096);
}

TEST(BatSpecs, AMalformedBenchmarkConfigIsRefusedInOneSentence) {
  const nlohmann::json triad =
      nlohmann::json::parse(read_file(bat("TRIAD-CAFF.json")), nullptr, false);
  for (const auto& [config, says] : std::vector<std::pair<nlohmann::json, std::string>>{
           {nlohmann::json::array({32}), "field BenchmarkConfig: must be an object of NAME: value"},
           {{{"PRECISION", nlohmann::json::array({32, 64})}},
            "field BenchmarkConfig.PRECISION: must be a number, a boolean or a string"},
           {{{"-DX=1 -I/etc", 1}},
            "field BenchmarkConfig.-DX=1 -I/etc: is not a valid identifier"}}) {
    SCOPED_TRACE(says);
    nlohmann::json j = triad;
    j["BenchmarkConfig"] = config;
    try {
      ProblemSpec::parse(j, "TRIAD-CAFF.json", bat(""));
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("TRIAD-CAFF.json: " + says, 0), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

TEST(BatSpecs, EachMalformedSpecIsRefusedInOneSentence) {
  for (const auto& [name, says] : std::vector<std::pair<std::string, std::string>>{
           {"Scan-CAFF.json", "not valid JSON at line 78, column 9"},
           {"Sort-CAFF.json", "not valid JSON at line"},
           {"MD-CAFF.json",
            "field KernelSpecification: is missing; the file has 'kernelSpecification'"},
           {"Reduction-CAFF.json", "field KernelSpecification: is missing; the file has"},
           {"SPMV-CAFF.json",
            "field ConfigurationSpace: is missing; the file has 'configuration_space'"}}) {
    SCOPED_TRACE(name);
    const auto r = test::run_ktune("tune " + bat(name).string() + " --dry-run");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_TRUE(r.out.empty()) << r.out;
    // One sentence on one line, naming the file and what to fix.
    std::string err = r.err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    EXPECT_EQ(err.find('\n'), std::string::npos) << r.err;
    EXPECT_NE(err.find(name), std::string::npos) << r.err;
    EXPECT_NE(err.find(says), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace ktune::tune

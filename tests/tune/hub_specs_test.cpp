// The benchmark hub's T1 files (shared/kernels beside the clone), read as Kernel Tuner's T1 reader
// reads them: Python-style Values, parameters as value lists in argument sizes, the grid from
// ProblemSize and GridDiv, constant-memory arguments, an ignored Default. The space sizes are what
// Python's eval of the same Values and Conditions gives.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "datasets.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/spec/space.hpp"
#include "ktune/spec/spec.hpp"
#include "ktune/tune/spec_problem.hpp"
#include "run_ktune.hpp"

namespace ktune::tune {
namespace {

namespace fs = std::filesystem;

fs::path hub(const std::string& name) {
  return test::datasets_dir() / ".." / "kernels" / name;
}

#define KTUNE_REQUIRE_HUB()                                                           \
  do {                                                                                \
    if (!fs::exists(hub("convolution_milo.json"))) {                                  \
      if (std::getenv("CI")) FAIL() << "hub kernels missing at " << hub("");          \
      GTEST_SKIP() << "hub kernels missing at " << hub("") << "; set KTUNE_DATASETS"; \
    }                                                                                 \
  } while (0)

std::uint64_t space_size(const ProblemSpec& spec) {
  const MapScope constants = spec.constants();
  return SearchSpace::from_spec(spec, &constants).count();
}

TEST(HubSpecs, EverySpaceEnumeratesAsPythonEvaluatesIt) {
  KTUNE_REQUIRE_HUB();
  EXPECT_EQ(space_size(ProblemSpec::load(hub("convolution_milo.json"))), 4362u);
  EXPECT_EQ(space_size(ProblemSpec::load(hub("hotspot_milo.json"))), 82984u);
  EXPECT_EQ(space_size(ProblemSpec::load(hub("dedispersion_milo.json"))), 11130u);
  EXPECT_EQ(space_size(ProblemSpec::load(hub("gemm_milo.json"))), 116928u);
}

// The space built from its restrictions is exactly the Cartesian product filtered by every
// condition (what the enumeration gave before it was built group by group), on every spec the
// project has: the hub's, the recorded dedispersion space's and ktune's own kernels.
TEST(HubSpecs, EverySharedSpaceIsItsFilteredProduct) {
  KTUNE_REQUIRE_HUB();
  std::vector<fs::path> specs = {hub("convolution_milo.json"), hub("hotspot_milo.json"),
                                 hub("dedispersion_milo.json"), hub("gemm_milo.json"),
                                 test::dedispersion_dir() / "T1.json"};
  for (const auto& entry : fs::recursive_directory_iterator(fs::path(KTUNE_SOURCE_DIR) / "kernels"))
    if (entry.path().extension() == ".json") specs.push_back(entry.path());
  for (const fs::path& path : specs) {
    if (!fs::exists(path)) continue;
    SCOPED_TRACE(path.string());
    const ProblemSpec spec = ProblemSpec::load(path);
    const MapScope constants = spec.constants();
    const SearchSpace space = SearchSpace::from_spec(spec, &constants);
    const IndexedSpace index(space);
    EXPECT_FALSE(index.sampled());
    std::size_t next = 0;
    bool same = true;
    for (std::uint64_t r = 0; r < space.cartesian_size() && same; ++r) {
      const Configuration c = space.unrank(r);
      if (!space.valid(c)) continue;
      same = next < index.size() && index.at(next) == c;
      ++next;
    }
    EXPECT_TRUE(same) << "differs at valid configuration " << next;
    EXPECT_EQ(next, index.size());
  }
}

TEST(HubSpecs, HotspotValuesArePythonListBuilders) {
  KTUNE_REQUIRE_HUB();
  const ProblemSpec s = ProblemSpec::load(hub("hotspot_milo.json"));
  const auto& bx = s.parameters[2];
  ASSERT_EQ(bx.name, "block_size_x");
  ASSERT_EQ(bx.values.size(), 5u + 32u);  // [1..16] + range(32, 1025, 32)
  EXPECT_EQ(bx.values.back().as_int(), 1024);
  EXPECT_EQ(s.parameters[3].values.back().as_int(), 32);  // [2**i for i in range(0, 6)]
  // max_tfactor's Default 1 is not among its Values [10]: a note, and 10 is the default.
  EXPECT_FALSE(s.parameters[7].default_value);
  ASSERT_FALSE(s.notes.empty());
  EXPECT_NE(s.notes.front().find("max_tfactor"), std::string::npos) << s.notes.front();
}

TEST(HubSpecs, ConvolutionSizesGridAndConstantMemoryFollowTheReference) {
  KTUNE_REQUIRE_HUB();
  const ProblemSpec s = ProblemSpec::load(hub("convolution_milo.json"));
  EXPECT_EQ(s.ktune.op, "convolution_milo");  // no ktune section: the BenchmarkName
  EXPECT_EQ(s.ktune.dtype, "f32");            // the output argument's type
  EXPECT_EQ(s.kernel.grid_source, GridSource::grid_div);
  const bench::Problem p = make_problem(s, default_config(s));
  ASSERT_EQ(p.args.size(), 3u);
  EXPECT_EQ(p.args[1].count, 4110u * 4110u);  // (4096 + max(filter_width) - 1)^2
  EXPECT_EQ(p.args[2].count, 225u);           // max(filter_height) * max(filter_width)
  EXPECT_EQ(p.args[2].kind, bench::KernelArg::Kind::constant_memory);
  // Default block 16x16, tiles 1: ProblemSize over GridDiv, not GlobalSize's 262144 / 16.
  EXPECT_EQ(p.launch.grid, (std::array<unsigned, 3>{256, 256, 1}));
  const MapScope constants = s.constants();
  MapScope config(&constants);
  for (const auto& [k, v] : default_config(s)) config.set(k, v);
  const auto note = s.grid_disagreement(config);
  ASSERT_TRUE(note);
  EXPECT_NE(note->find("--grid global-size"), std::string::npos) << *note;
  ProblemSpec global = s;
  global.kernel.grid_source = GridSource::global_size;
  EXPECT_EQ(make_problem(global, default_config(s)).launch.grid[0], 16384u);
}

TEST(HubSpecs, DryRunIsCleanForEveryRunnableSpec) {
  KTUNE_REQUIRE_HUB();
  for (const char* name : {"convolution_milo.json", "hotspot_milo.json"}) {
    const auto r = test::run_ktune("tune " + hub(name).string() + " --dry-run --json");
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.out << r.err;
    const auto j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << name << ": " << r.out;
    EXPECT_EQ(j["schema_version"], 2);
    EXPECT_EQ(j["ok"], true) << name << ": " << j["problems"].dump();
    EXPECT_GT(j["space_size"].get<std::uint64_t>(), 0u);
  }
}

// dedispersion sizes its input and shifts as one element (every candidate faults on the GPU), and
// gemm is OpenCL: both said "ok" and exited 0.
TEST(HubSpecs, DryRunFailsSpecsThatCannotRun) {
  KTUNE_REQUIRE_HUB();
  for (const auto& [name, says] : std::vector<std::pair<std::string, std::string>>{
           {"dedispersion_milo.json", "argument 'input_samples' is an array of 1 element"},
           {"gemm_milo.json", "the kernel is OpenCL, and ktune compiles and runs CUDA kernels"}}) {
    auto r = test::run_ktune("tune " + hub(name).string() + " --dry-run --json");
    EXPECT_EQ(r.exit_code, 1) << name << ": " << r.out << r.err;
    const auto j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << name << ": " << r.out;
    EXPECT_EQ(j["ok"], false);
    EXPECT_GT(j["space_size"].get<std::uint64_t>(), 0u);  // the space itself is fine
    EXPECT_NE(j["problems"].dump().find(says), std::string::npos) << j["problems"].dump();
    r = test::run_ktune("tune " + hub(name).string() + " --dry-run");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.out.find("problem: " + says), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("dry run: FAILED"), std::string::npos) << r.out;
  }
}

// A Scalar where the kernel takes a pointer is found from the kernel's parameter list.
TEST(HubSpecs, DryRunFailsAScalarWhereTheKernelTakesAPointer) {
  KTUNE_REQUIRE_HUB();
  nlohmann::json j = nlohmann::json::parse(read_file(hub("convolution_milo.json")));
  auto& args = j["KernelSpecification"]["Arguments"];
  const std::string name = args[1]["Name"].get<std::string>();
  args[1] = {{"Name", name}, {"Type", "float"}, {"MemoryType", "Scalar"}, {"FillValue", 1.0}};
  const fs::path dir = fs::temp_directory_path() / fmt::format("ktune-hub-scalar-{}", ::getpid());
  fs::create_directories(dir);
  fs::copy_file(hub("convolution_milo.cu"), dir / "convolution_milo.cu",
                fs::copy_options::overwrite_existing);
  write_file_atomic(dir / "scalar.json", j.dump());
  const auto r = test::run_ktune("tune " + (dir / "scalar.json").string() + " --dry-run");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("argument '" + name + "' is a Scalar, but parameter 2 of"),
            std::string::npos)
      << r.out;
  fs::remove_all(dir);
}

TEST(HubSpecs, DryRunNamesABrokenSpecAndFails) {
  KTUNE_REQUIRE_HUB();
  nlohmann::json j = nlohmann::json::parse(read_file(hub("convolution_milo.json")));
  // A GridDiv that divides by zero for some configurations of the space.
  j["KernelSpecification"]["GridDivX"] = {"block_size_x", "tile_size_x - 1"};
  const fs::path dir = fs::temp_directory_path() / fmt::format("ktune-hub-{}", ::getpid());
  fs::create_directories(dir);
  fs::copy_file(hub("convolution_milo.cu"), dir / "convolution_milo.cu",
                fs::copy_options::overwrite_existing);
  write_file_atomic(dir / "bad.json", j.dump());
  const auto r = test::run_ktune("tune " + (dir / "bad.json").string() + " --dry-run");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("GridDivX[1]"), std::string::npos) << r.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ktune::tune

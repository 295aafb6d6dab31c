// Every built-in kernel under kernels/ compiles with NVRTC (no GPU needed) across its space: every
// value of every parameter at least once, plus a deterministic sample, on parallel threads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "ktune/cuda/nvrtc.hpp"
#include "ktune/spec/space.hpp"
#include "ktune/tune/spec_problem.hpp"

namespace fs = std::filesystem;

namespace ktune::tune {

using bench::compile_options;
using bench::KernelArg;
using bench::KernelLaunch;
using bench::Problem;
namespace {

std::vector<fs::path> builtin_specs() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(KTUNE_SOURCE_DIR) / "kernels"))
    if (e.path().extension() == ".json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// Configurations covering each value of each parameter, plus up to `extra` random valid ones.
std::vector<Configuration> covering_sample(const SearchSpace& space, std::size_t extra) {
  std::vector<Configuration> all;
  space.for_each([&](const Configuration& c) {
    all.push_back(c);
    return true;
  });
  std::set<std::uint64_t> picked;
  for (std::size_t p = 0; p < space.parameters().size(); ++p)
    for (std::uint32_t v = 0; v < space.parameters()[p].values.size(); ++v)
      for (const auto& c : all)
        if (c[p] == v && !picked.count(space.rank(c))) {
          picked.insert(space.rank(c));
          break;
        }
  std::mt19937_64 rng(42);
  for (std::size_t i = 0; i < extra && !all.empty(); ++i)
    picked.insert(space.rank(all[rng() % all.size()]));
  std::vector<Configuration> out;
  for (auto r : picked) out.push_back(space.unrank(r));
  return out;
}

TEST(BuiltinKernels, EveryVariantCompilesWithNvrtc) {
  const auto specs = builtin_specs();
  ASSERT_GE(specs.size(), 3u) << "copy, l2_axpy and gemv are expected under kernels/";
  std::vector<std::pair<std::string, KernelLaunch>> jobs;
  for (const auto& path : specs) {
    const ProblemSpec spec = ProblemSpec::load(path);
    const MapScope constants = spec.constants();
    const SearchSpace space = SearchSpace::from_spec(spec, &constants);
    ASSERT_GT(space.count(), 0u) << path;
    for (const auto& c : covering_sample(space, 16)) {
      ConfigMap values;
      for (std::size_t p = 0; p < c.size(); ++p)
        values[space.parameters()[p].name] = space.parameters()[p].values[c[p]];
      const Problem prob = make_problem(spec, values);
      jobs.emplace_back(space.describe(c), prob.launch);
      if (prob.reference) jobs.emplace_back("reference of " + spec.name, *prob.reference);
    }
  }
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  std::vector<std::string> failures;
  const auto work = [&] {
    for (std::size_t i; (i = next++) < jobs.size();) {
      try {
        const auto prog = cuda::compile(jobs[i].second.source, jobs[i].second.program_name,
                                        compile_options(jobs[i].second, "sm_90"));
        if (prog.cubin.size() < 100) throw std::runtime_error("empty cubin");
      } catch (const cuda::CompileError& e) {
        std::lock_guard lock(mu);
        failures.push_back(jobs[i].first + ": " + e.what() + "\n" + e.log());
      } catch (const std::exception& e) {
        std::lock_guard lock(mu);
        failures.push_back(jobs[i].first + ": " + e.what());
      }
    }
  };
  std::vector<std::thread> threads(std::max(2u, std::thread::hardware_concurrency()));
  for (auto& t : threads) t = std::thread(work);
  for (auto& t : threads) t.join();
  EXPECT_TRUE(failures.empty()) << failures.size() << " of " << jobs.size()
                                << " failed; first: " << (failures.empty() ? "" : failures.front());
  EXPECT_GT(jobs.size(), 30u);
}

TEST(SpecProblem, GemvDefaultBindsGeometryArgumentsAndCounts) {
  const auto spec = ProblemSpec::load(fs::path(KTUNE_SOURCE_DIR) / "kernels/gemv/gemv.json");
  const Problem p = make_problem(spec, parse_config(spec, "TPR=64,RPB=2,X_SHARED=1"));
  EXPECT_EQ(p.launch.block[0], 64u);
  EXPECT_EQ(p.launch.block[1], 2u);
  EXPECT_EQ(p.launch.grid[0], 3584u);
  EXPECT_EQ(p.launch.dynamic_shared_bytes, 32768u);
  ASSERT_EQ(p.args.size(), 5u);
  EXPECT_EQ(p.args[0].count, 7168u * 16384u);
  EXPECT_EQ(p.args[0].dtype, cuda::DType::f16);
  EXPECT_TRUE(p.args[2].output);
  EXPECT_EQ(p.args[3].kind, KernelArg::Kind::scalar);
  EXPECT_EQ(p.args[4].value, 16384);
  EXPECT_DOUBLE_EQ(p.flop, 2.0 * 7168 * 16384);
  EXPECT_NE(std::find(p.launch.flags.begin(), p.launch.flags.end(), "-DTPR=64"),
            p.launch.flags.end());
  ASSERT_TRUE(p.reference);
  EXPECT_NE(std::find(p.reference->flags.begin(), p.reference->flags.end(), "-DVEC=2"),
            p.reference->flags.end());
  EXPECT_EQ(p.reference->grid[0], 7168u);  // RPB=1 in the reference configuration
}

// A parameter the code never names cannot change the binary: its define is left out, so the
// compile pool and disk cache (keyed by the options) compile such configurations once.
TEST(SpecProblem, ParametersTheCodeNeverNamesShareOneCompilation) {
  const fs::path dir = fs::temp_directory_path() / ("ktune-unused-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::copy_file(fs::path(KTUNE_SOURCE_DIR) / "benchmarks/tune/planted/planted.json",
                dir / "planted.json", fs::copy_options::overwrite_existing);
  const auto flags_for = [&](const std::string& code, const std::string& config) {
    std::ofstream(dir / "planted.cu") << code;
    const auto spec = ProblemSpec::load(dir / "planted.json");
    return make_problem(spec, parse_config(spec, config)).launch.flags;
  };
  const std::string no_fault =  // FAULT_RATE and BLOCKS name neither FAULT nor BLOCK
      "extern \"C\" __global__ void planted(float* out, const float* in, long long n) {\n"
      "  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;  // FAULT_RATE\n"
      "  if (i < n) out[i] = in[i] * SCALE; }\n";
  EXPECT_EQ(flags_for(no_fault, "BLOCK=128,FAULT=1"), flags_for(no_fault, "BLOCK=1024,FAULT=2"));
  const auto kept = flags_for(no_fault, "BLOCK=128");
  EXPECT_EQ(std::count_if(kept.begin(), kept.end(),
                          [](const std::string& f) { return f.rfind("-DSCALE=", 0) == 0; }),
            1);
  // Named in a comment still counts (cheap and safe); pasting keeps every define.
  std::string pasting = no_fault;
  pasting.insert(0, "#define CAT(a, b) a##b\n");
  EXPECT_NE(flags_for(pasting, "FAULT=1"), flags_for(pasting, "FAULT=2"));
  EXPECT_NE(flags_for(std::string(no_fault) + "// FAULT\n", "FAULT=1"),
            flags_for(std::string(no_fault) + "// FAULT\n", "FAULT=2"));
  fs::remove_all(dir);
}

TEST(SpecProblem, BadConfigIsOneSentenceNamingTheFix) {
  const auto spec = ProblemSpec::load(fs::path(KTUNE_SOURCE_DIR) / "kernels/copy/copy.json");
  try {
    parse_config(spec, "VEC=3");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("use one of 1, 2, 4"), std::string::npos) << e.what();
  }
  try {
    parse_config(spec, "WIDTH=3");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("BLOCK, VEC, ITEMS, SKIP_TAIL"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ktune::tune

// The harness on a real GPU (skipped without one): verification of built-in kernels, rejection of
// the planted wrong variant, and cold vs hot on an L2-resident kernel.
#include "ktune/bench/runner.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "ktune/bench/spec_problem.hpp"
#include "ktune/cuda/driver.hpp"

namespace ktune::bench {
namespace {

Problem builtin(const std::string& rel, const std::string& config) {
  const auto spec = tune::ProblemSpec::load(std::filesystem::path(KTUNE_SOURCE_DIR) / rel);
  return make_problem(spec, parse_config(spec, config));
}

StopSettings quick() {
  StopSettings s;
  s.min_gpu_time_s = 0.05;
  s.timeout_s = 3;
  return s;
}

TEST(BenchGpu, CopyVerifiesAndMeasuresInEveryMode) {
  if (!cuda::gpu_available()) GTEST_SKIP() << "no GPU";
  Bench bench;
  const Problem p = builtin("kernels/copy/copy.json", "");
  for (TimingMode mode : {TimingMode::cold, TimingMode::hot, TimingMode::graph}) {
    const BenchOutcome o = bench.run(p, mode, quick());
    ASSERT_EQ(o.status, BenchOutcome::Status::ok) << o.reason;
    EXPECT_TRUE(o.measurement.verification.passed);
    EXPECT_GE(o.measurement.time_ns.count, 10u);
    EXPECT_EQ(o.measurement.mode, mode);
    // 2 GiB moved: an H100 needs at least ~0.5 ms, and anything sane is under 50 ms.
    EXPECT_GT(o.measurement.time_ns.median, 0.5e6) << mode_name(mode);
    EXPECT_LT(o.measurement.time_ns.median, 50e6) << mode_name(mode);
    EXPECT_GT(o.measurement.bytes_per_s(), 1e12);
  }
}

TEST(BenchGpu, PlantedSkipTailIsRejectedBeforeItsTimeCounts) {
  if (!cuda::gpu_available()) GTEST_SKIP() << "no GPU";
  Bench bench;
  const BenchOutcome o =
      bench.run(builtin("kernels/copy/copy.json", "SKIP_TAIL=1"), TimingMode::cold, quick());
  EXPECT_EQ(o.status, BenchOutcome::Status::wrong_result);
  EXPECT_NE(o.reason.find("1 never written"), std::string::npos) << o.reason;
  EXPECT_EQ(o.measurement.time_ns.count, 0u);
}

TEST(BenchGpu, L2ResidentKernelIsFasterHotThanCold) {
  if (!cuda::gpu_available()) GTEST_SKIP() << "no GPU";
  Bench bench;
  const Problem p = builtin("kernels/l2_axpy/l2_axpy.json", "");
  const BenchOutcome cold = bench.run(p, TimingMode::cold, quick());
  const BenchOutcome hot = bench.run(p, TimingMode::hot, quick());
  ASSERT_EQ(cold.status, BenchOutcome::Status::ok) << cold.reason;
  ASSERT_EQ(hot.status, BenchOutcome::Status::ok) << hot.reason;
  EXPECT_GT(hot.measurement.launches_per_sample, 1u);
  EXPECT_GT(cold.measurement.time_ns.median, 1.2 * hot.measurement.time_ns.median);
}

TEST(BenchGpu, GemvConfigsAgreeWithTheReference) {
  if (!cuda::gpu_available()) GTEST_SKIP() << "no GPU";
  Bench bench;
  for (const char* cfg :
       {"", "TPR=256,RPB=1,X_SHARED=1,UNROLL=8", "TPR=8,RPB=16,VEC=4,LOAD_HINT=1"}) {
    const BenchOutcome o =
        bench.run(builtin("kernels/gemv/gemv.json", cfg), TimingMode::cold, quick());
    EXPECT_EQ(o.status, BenchOutcome::Status::ok) << cfg << ": " << o.reason;
  }
}

}  // namespace
}  // namespace ktune::bench

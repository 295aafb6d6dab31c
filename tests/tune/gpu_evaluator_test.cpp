// The tuning evaluator: its decisions on CPU (resources, contenders, lost contexts, the cache
// entry of a winner), and a real tuning session on the GPU (skipped without one).
#include "ktune/bench/evaluator.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>

#include "ktune/core/error.hpp"
#include "ktune/cuda/driver.hpp"
#include "ktune/cuda/nvrtc.hpp"
#include "ktune/store/store.hpp"

namespace ktune::bench {
namespace {

namespace fs = std::filesystem;

tune::ProblemSpec builtin(const std::string& rel) {
  return tune::ProblemSpec::load(fs::path(KTUNE_SOURCE_DIR) / rel);
}

KernelLaunch launch(unsigned bx, unsigned by, unsigned smem = 0) {
  KernelLaunch l;
  l.block = {bx, by, 1};
  l.grid = {100, 1, 1};
  l.dynamic_shared_bytes = smem;
  return l;
}

TEST(EvaluatorResources, AcceptsWhatFits) {
  const KernelAttributes k{1024, 32, 0};
  EXPECT_EQ(resource_problem(k, DeviceLimits{}, launch(256, 4, 48 * 1024)), std::nullopt);
}

TEST(EvaluatorResources, RejectsEachLimit) {
  const DeviceLimits d;
  // More threads than the device allows.
  auto why = resource_problem({1024, 32, 0}, d, launch(64, 32));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("2048 threads per block; the device allows at most 1024"), std::string::npos);
  // Register pressure lowered the kernel's own limit.
  why = resource_problem({512, 128, 0}, d, launch(1024, 1));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("128 registers per thread this kernel allows at most 512"),
            std::string::npos);
  // Registers per block over the device's file (a kernel attribute that claims more threads).
  why = resource_problem({1024, 255, 0}, d, launch(512, 1));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("registers per block"), std::string::npos);
  // Static plus dynamic shared memory.
  why = resource_problem({1024, 32, 16 * 1024}, d, launch(128, 1, 220 * 1024));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("bytes of shared memory per block; the device allows 232448"),
            std::string::npos);
  // Grid outside the limits.
  KernelLaunch g = launch(128, 1);
  g.grid = {1, 70000, 1};
  why = resource_problem({1024, 32, 0}, d, g);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("grid"), std::string::npos);
}

TEST(EvaluatorScreen, ContendersAreWithinTheMarginOfTheBest) {
  EXPECT_TRUE(is_contender(5000, std::nullopt, 0.03));  // nothing measured yet
  EXPECT_TRUE(is_contender(1020, 1000.0, 0.03));
  EXPECT_TRUE(is_contender(1030, 1000.0, 0.03));
  EXPECT_FALSE(is_contender(1031, 1000.0, 0.03));
  EXPECT_TRUE(is_contender(900, 1000.0, 0.03));  // faster than the best
  EXPECT_FALSE(is_contender(1001, 1000.0, 0.0));
}

TEST(EvaluatorScreen, TuningRulesAreShorterThanTheHarnessDefault) {
  const EvaluatorSettings s;
  EXPECT_GT(s.screen.screen_margin, 0);
  EXPECT_LT(s.screen.timeout_s, s.full.timeout_s);
  EXPECT_LT(s.full.min_gpu_time_s, StopSettings::full().min_gpu_time_s);
  EXPECT_EQ(s.full.screen_margin, 0);  // a contender is never cut short
}

TEST(EvaluatorContext, FaultsThatPoisonTheContextAreFatal) {
  EXPECT_TRUE(context_is_lost(CUDA_ERROR_ILLEGAL_ADDRESS));
  EXPECT_TRUE(context_is_lost(CUDA_ERROR_LAUNCH_FAILED));
  EXPECT_TRUE(context_is_lost(CUDA_ERROR_MISALIGNED_ADDRESS));
  EXPECT_FALSE(context_is_lost(CUDA_SUCCESS));
  EXPECT_FALSE(context_is_lost(CUDA_ERROR_INVALID_VALUE));
  EXPECT_FALSE(context_is_lost(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
}

tune::SessionSummary gemv_session() {
  tune::SessionSummary s;
  s.strategy = "model";
  s.budget = 60;
  s.evaluations = 60;
  s.seed = 3;
  tune::SessionRecord best;
  best.config = {{"TPR", 32},   {"RPB", 8},      {"VEC", 8},
                 {"UNROLL", 4}, {"X_SHARED", 0}, {"LOAD_HINT", 2}};
  best.result.status = tune::Status::Ok;
  best.result.full = true;
  best.result.time_ns = 80e3;
  best.result.noise_ns = 400;
  best.result.samples = 40;
  s.best = best;
  return s;
}

TEST(EvaluatorCache, WinnerEntryCarriesKeyShapeAndProvenance) {
  const tune::ProblemSpec spec = builtin("kernels/gemv/gemv.json");
  const store::Environment env{"sm_90", "NVIDIA H100 80GB HBM3", "13.0", 580};
  const store::CacheEntry e =
      winner_entry(spec, gemv_session(), env, HostIdentity{"gpu-1", "", ""});
  EXPECT_EQ(e.key.op, "gemv");
  EXPECT_EQ(e.key.dtype, "f16");
  EXPECT_EQ(e.key.arch, "sm_90");
  EXPECT_EQ(e.key.device_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(e.key.toolkit, "13.0");
  EXPECT_EQ(e.key.driver_major, 580);
  EXPECT_EQ(e.shape, (std::vector<std::int64_t>{7168, 16384}));  // ProblemSize: no shape vars
  EXPECT_EQ(e.config["TPR"], 32);
  EXPECT_EQ(e.config["LOAD_HINT"], 2);
  EXPECT_DOUBLE_EQ(e.median_ns, 80e3);
  EXPECT_DOUBLE_EQ(e.noise_ns, 400);
  EXPECT_EQ(e.samples, 40);
  EXPECT_EQ(e.throughput_unit, "flop/s");
  EXPECT_NEAR(e.throughput, 2.0 * 7168 * 16384 / 80e-6, 1);
  EXPECT_EQ(e.verification, "passed");
  EXPECT_EQ(e.provenance.strategy, "model");
  EXPECT_EQ(e.provenance.host, "gpu-1");
  EXPECT_EQ(e.provenance.budget["evaluations"], 60);
  EXPECT_FALSE(e.provenance.created_at.empty());
  EXPECT_NO_THROW(store::validate(e, "winner"));

  tune::SessionSummary none = gemv_session();
  none.best.reset();
  EXPECT_THROW(winner_entry(spec, none, env, {}), Error);
}

TEST(EvaluatorCache, EntryGoesIntoAStoreAndComesBack) {
  const tune::ProblemSpec spec = builtin("kernels/gemv/gemv.json");
  const fs::path db = fs::temp_directory_path() / fmt::format("ktune-eval-{}.db", ::getpid());
  fs::remove(db);
  {
    auto st = store::Store::open(db.string());
    st->put_op(op_spec(spec));
    const store::Environment env{"sm_90", "H100", "13.0", 580};
    const store::CacheEntry e = winner_entry(spec, gemv_session(), env, HostIdentity{"h", "", ""});
    const store::PutResult put = st->put_entry(e);
    EXPECT_TRUE(put.winner) << put.reason;
    const auto back = st->get_entry(
        store::CacheKey{e.key.op, e.key.dtype, put.bucket, "sm_90", "H100", "13.0", 580});
    ASSERT_TRUE(back);
    EXPECT_EQ(back->config, e.config);
    EXPECT_EQ(st->get_op("gemv")->default_config->at("TPR"), 32);
  }
  fs::remove(db);
}

// A real session on the GPU: the copy kernel (its planted wrong variant included), budget 20.
TEST(EvaluatorGpu, TunesCopyVerifiesAndStoresTheWinner) {
  if (!cuda::gpu_available()) GTEST_SKIP() << "no GPU";
  const tune::ProblemSpec spec = builtin("kernels/copy/copy.json");
  const fs::path dir = fs::temp_directory_path() / fmt::format("ktune-eval-gpu-{}", ::getpid());
  fs::remove_all(dir);
  GpuEvaluator ev(spec, {});
  tune::SessionOptions o;
  o.strategy = "random";
  o.seed = 5;
  o.budget = 20;
  o.out_dir = dir;
  const tune::SessionSummary s = tune::Session(spec, o, ev).run();
  EXPECT_EQ(s.evaluations, 20u);
  ASSERT_TRUE(s.best);
  EXPECT_EQ(s.best->config.at("SKIP_TAIL").as_int(), 0);  // the planted wrong variant never wins
  EXPECT_NE(s.best->result.detail.find("verified"), std::string::npos) << s.best->result.detail;
  EXPECT_GT(s.best->result.time_ns, 0.5e6);  // 2 GiB moved
  for (const auto& r : s.records)
    if (r.config.at("SKIP_TAIL").as_int() == 1)
      EXPECT_EQ(r.result.status, tune::Status::WrongResult);
  const auto [major, minor] = cuda::nvrtc_version();
  const store::Environment env{ev.device().arch(), ev.device().name,
                               fmt::format("{}.{}", major, minor), 0};
  auto st = store::Store::open((dir / "cache.db").string());
  const store::PutResult put = st->put_entry(winner_entry(spec, s, env, host_identity()));
  EXPECT_TRUE(put.winner) << put.reason;
  const auto back = st->list_entries({.op = "copy"});
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].verification, "passed");
  EXPECT_DOUBLE_EQ(back[0].median_ns, s.best->result.time_ns);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ktune::bench

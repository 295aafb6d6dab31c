// The tuning evaluator: the cache entry of a winner on CPU, and a real tuning session on the GPU
// (skipped without one).
#include "ktune/tune/gpu_evaluator.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"
#include "ktune/cuda/driver.hpp"
#include "ktune/cuda/nvrtc.hpp"
#include "ktune/store/store.hpp"

namespace ktune::tune {
namespace {

namespace fs = std::filesystem;

fs::path test_fixtures() {
  return fs::path(KTUNE_SOURCE_DIR) / "tests/fixtures/tuning";
}

ProblemSpec builtin(const std::string& rel) {
  return ProblemSpec::load(fs::path(KTUNE_SOURCE_DIR) / rel);
}

SessionSummary gemv_session() {
  SessionSummary s;
  s.strategy = "model";
  s.budget = 60;
  s.evaluations = 60;
  s.seed = 3;
  SessionRecord best;
  best.config = {{"TPR", 32},   {"RPB", 8},      {"VEC", 8},
                 {"UNROLL", 4}, {"X_SHARED", 0}, {"LOAD_HINT", 2}};
  best.result.status = Status::ok;
  best.result.full = true;
  best.result.set_time(80e3, 400, 40);
  s.best = best;
  return s;
}

TEST(EvaluatorCache, WinnerEntryCarriesKeyShapeAndProvenance) {
  const ProblemSpec spec = builtin("kernels/gemv/gemv.json");
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

  SessionSummary none = gemv_session();
  none.best.reset();
  EXPECT_THROW(winner_entry(spec, none, env, {}), Error);
}

// A community spec with GlobalSize and no ProblemSize (nor shape variables) tunes one fixed
// problem: its winner is cached under that extent (GlobalSize, when it reads no parameter) or the
// one bucket [1], and reaches the store. (Three held-out hub specs lost their result at this step:
// "the shape is empty".)
TEST(EvaluatorCache, ASpecWithoutProblemSizeCachesItsFixedProblem) {
  std::ifstream in(fs::path(KTUNE_SOURCE_DIR) / "tests/fixtures/tuning/matmul_T1.json");
  nlohmann::json j = nlohmann::json::parse(in);
  auto& k = j["KernelSpecification"];
  k.erase("ProblemSize");
  k.erase("GridDivX");
  k.erase("GridDivY");
  j["ktune"].erase("shape");
  for (auto& c : j["ConfigurationSpace"]["Conditions"])
    if (c["Expression"].get<std::string>().find('N') != std::string::npos)
      c["Expression"] = "block_x * tile <= 64";
  for (auto& a : k["Arguments"])
    if (a.contains("Size")) a["Size"] = "4096";
  j["ktune"].erase("flops");
  j["ktune"].erase("bytes");
  const store::Environment env{"sm_90", "NVIDIA H100 80GB HBM3", "13.0", 580};
  SessionSummary s = gemv_session();
  s.best->config = {{"block_x", 16}, {"block_y", 4}, {"tile", 1}, {"use_shared", 1}};

  k["GlobalSize"] = {{"X", "64"}, {"Y", "32"}, {"Z", "1"}};
  const ProblemSpec fixed = ProblemSpec::parse(j, "fixed.json", test_fixtures());
  const store::CacheEntry e = winner_entry(fixed, s, env, {});
  EXPECT_EQ(e.shape, (std::vector<std::int64_t>{64, 32, 1}));
  EXPECT_NO_THROW(store::validate(e, "winner"));

  k["GlobalSize"] = {{"X", "4096 // block_x"}, {"Y", "1"}, {"Z", "1"}};  // reads a parameter
  const ProblemSpec varying = ProblemSpec::parse(j, "varying.json", test_fixtures());
  const store::CacheEntry v = winner_entry(varying, s, env, {});
  EXPECT_EQ(v.shape, (std::vector<std::int64_t>{1}));
  const fs::path db = fs::temp_directory_path() / fmt::format("ktune-fixed-{}.db", ::getpid());
  fs::remove(db);
  {
    auto st = store::Store::open(db.string());
    EXPECT_TRUE(st->put_entry(v).winner);
    EXPECT_TRUE(st->put_entry(e).winner);  // the other spec's op: a key of its own
  }
  fs::remove(db);
}

TEST(EvaluatorCache, EntryGoesIntoAStoreAndComesBack) {
  const ProblemSpec spec = builtin("kernels/gemv/gemv.json");
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
  const ProblemSpec spec = builtin("kernels/copy/copy.json");
  const fs::path dir = fs::temp_directory_path() / fmt::format("ktune-eval-gpu-{}", ::getpid());
  fs::remove_all(dir);
  GpuEvaluator ev(spec, {});
  SessionOptions o;
  o.strategy = "random";
  o.seed = 5;
  o.budget = 20;
  o.out_dir = dir;
  const SessionSummary s = Session(spec, o, ev).run();
  EXPECT_EQ(s.evaluations, 20u);
  ASSERT_TRUE(s.best);
  EXPECT_EQ(s.best->config.at("SKIP_TAIL").as_int(), 0);  // the planted wrong variant never wins
  EXPECT_NE(s.best->result.detail.find("verified"), std::string::npos) << s.best->result.detail;
  EXPECT_GT(s.best->result.time_ns(), 0.5e6);  // 2 GiB moved
  for (const auto& r : s.records) {
    if (r.config.at("SKIP_TAIL").as_int() == 1) {
      EXPECT_EQ(r.result.status, Status::wrong_result);
    }
  }
  const auto [major, minor] = cuda::nvrtc_version();
  const store::Environment env{ev.device().arch(), ev.device().name,
                               fmt::format("{}.{}", major, minor), 0};
  auto st = store::Store::open((dir / "cache.db").string());
  const store::PutResult put = st->put_entry(winner_entry(spec, s, env, host_identity()));
  EXPECT_TRUE(put.winner) << put.reason;
  const auto back = st->list_entries({.op = "copy"});
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].verification, "passed");
  EXPECT_DOUBLE_EQ(back[0].median_ns, s.best->result.time_ns());
  fs::remove_all(dir);
}

// A configuration the spec gives no launchable grid (here BLOCK=1024: grid 0) is that candidate's
// outcome. Compiling it ahead threw out of prepare(), which ended the measuring process, and the
// session stopped on its next answer.
TEST(EvaluatorGpu, AConfigurationWithNoLaunchableGridIsItsOutcomeNotAnError) {
  if (!cuda::gpu_available()) GTEST_SKIP() << "no GPU";
  const fs::path file = fs::path(KTUNE_SOURCE_DIR) / "kernels/copy/copy.json";
  nlohmann::json j = nlohmann::json::parse(std::ifstream(file));
  j["KernelSpecification"]["GlobalSize"]["X"] =
      "((1 << 20) // (BLOCK * VEC * ITEMS)) * (1 - BLOCK // 1024)";
  j["KernelSpecification"]["ProblemSize"] = {1 << 20};
  j["KernelSpecification"]["Arguments"][2]["FillValue"] = 1 << 20;
  const ProblemSpec spec = ProblemSpec::parse(j, "copy-no-grid.json", file.parent_path());
  GpuEvaluator ev(spec, {});
  const ConfigMap bad = {{"BLOCK", 1024}, {"VEC", 1}, {"ITEMS", 1}, {"SKIP_TAIL", 0}};
  const ConfigMap good = {{"BLOCK", 256}, {"VEC", 1}, {"ITEMS", 1}, {"SKIP_TAIL", 0}};
  ASSERT_NO_THROW(ev.prepare({good, bad}));
  EXPECT_EQ(ev.next_ready({good, bad}), 1u);  // nothing to compile: ready at once
  const CandidateOutcome r = ev.evaluate(bad, std::nullopt);
  EXPECT_EQ(r.status, Status::resources_exceeded);
  EXPECT_NE(r.detail.find("launch geometry"), std::string::npos) << r.detail;
  EXPECT_EQ(ev.evaluate(good, std::nullopt).status, Status::ok);
}

}  // namespace
}  // namespace ktune::tune

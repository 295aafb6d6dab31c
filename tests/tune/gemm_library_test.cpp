// Library selection's host side: the enumeration of cuBLASLt configurations, the config's JSON
// form, and the TunableOp results file.
#include <gtest/gtest.h>

#include <set>

#include "ktune/core/error.hpp"
#include "ktune/cuda/driver.hpp"
#include "ktune/tune/gemm_library.hpp"
#include "ktune/tune/tunableop.hpp"

namespace ktune::tune {
namespace {

bench::LtAlgoCaps caps(int id, bool splitk, bool swizzle) {
  bench::LtAlgoCaps c;
  c.algo_id = id;
  c.tiles = {15, 18, 20};
  c.stages = {8, 17};
  c.splitk = splitk;
  c.reduction_mask = splitk ? 0b011u : 0u;  // in place, compute type
  c.swizzle = swizzle;
  c.custom_max = 0;
  return c;
}

TEST(GemmLibrary, EnumerationCoversEveryAlgorithmWithinTheLimit) {
  const std::vector<bench::LtAlgoCaps> all = {caps(6, false, false), caps(31, true, true),
                                              caps(66, true, false)};
  const auto configs = enumerate_configs(all, 9, 1);
  ASSERT_EQ(configs.size(), 9u);
  std::set<int> ids;
  for (const auto& c : configs) {
    ids.insert(c.algo_id);
    EXPECT_EQ(c.source, "enumerated");
    if (c.algo_id == 6) {
      EXPECT_EQ(c.splitk, 1u);  // no split-K where it is not supported
    }
    if (c.splitk > 1) {
      EXPECT_NE(c.reduction, 0u) << "split-K needs a reduction scheme";
    }
    if (c.algo_id != 31) {
      EXPECT_EQ(c.swizzle, 0u);
    }
  }
  EXPECT_EQ(ids, (std::set<int>{6, 31, 66}));  // round robin: each id gets a share
}

TEST(GemmLibrary, EnumerationIsSeededAndBounded) {
  const std::vector<bench::LtAlgoCaps> all = {caps(31, true, true)};
  const auto a = enumerate_configs(all, 1000, 7), b = enumerate_configs(all, 1000, 7);
  // 3 tiles x 2 stages x (1 + 3 split-K x 2 schemes) x 2 swizzles.
  ASSERT_EQ(a.size(), 3u * 2u * 7u * 2u);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(nlohmann::json(a[i]), nlohmann::json(b[i]));
  EXPECT_NE(nlohmann::json(enumerate_configs(all, 5, 8)),
            nlohmann::json(enumerate_configs(all, 5, 7)));
  EXPECT_TRUE(enumerate_configs({}, 10, 1).empty());
}

// For 16-bit outputs only the compute-type reduction is offered: split-K sums reduced in f16 or
// bf16 were 16 of 30 evaluations of an H100 search, every one a wrong result. (The search once
// enumerated without the problem's schemes, so this goes through split_k_reductions.)
TEST(GemmLibrary, EnumerationOffersOnlyTheAllowedReductionSchemes) {
  const std::vector<bench::LtAlgoCaps> all = {caps(31, true, false)};  // in place, compute type
  bench::GemmProblem bf16, f32;
  bf16.dtype = DType::bf16;
  f32.dtype = DType::f32;
  bench::GemmProblem f16 = bf16;
  f16.dtype = DType::f16;
  EXPECT_EQ(split_k_reductions(f16), split_k_reductions(bf16));
  const auto narrow = enumerate_configs(all, 1000, 1, split_k_reductions(bf16));
  ASSERT_FALSE(narrow.empty());
  for (const auto& c : narrow)
    if (c.splitk > 1) EXPECT_EQ(c.reduction, 2u);
  EXPECT_EQ(narrow.size(), 3u * 2u * (1 + 3));  // tiles x stages x (no split + 3 split-K counts)
  EXPECT_EQ(enumerate_configs(all, 1000, 1, split_k_reductions(f32)).size(), 3u * 2u * (1 + 3 * 2));
}

TEST(GemmLibrary, ConfigJsonRoundTripsAndNamesBadFields) {
  bench::LtAlgoConfig c;
  c.algo_id = 66;
  c.tile = 20;
  c.stages = 17;
  c.splitk = 4;
  c.reduction = 2;
  c.swizzle = 1;
  c.source = "heuristic";
  c.heuristic_rank = 3;
  c.workspace_bytes = 1 << 20;
  c.data = std::string(128, 'a');
  const nlohmann::json j = c;
  EXPECT_EQ(j["library"], "cublaslt");
  EXPECT_EQ(nlohmann::json(j.get<bench::LtAlgoConfig>()), j);
  EXPECT_THROW((void)nlohmann::json::object().get<bench::LtAlgoConfig>(), Error);
  try {
    (void)nlohmann::json{{"algo_id", 1}, {"tile", "big"}}.get<bench::LtAlgoConfig>();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"tile\""), std::string::npos) << e.what();
  }
}

store::CacheEntry gemm_entry(const std::string& op, const std::string& dtype,
                             std::vector<std::int64_t> shape, int algo, double median_ns) {
  store::CacheEntry e;
  e.key = {op, dtype, "", "sm_90", "NVIDIA H100 80GB HBM3", "13.0", 580};
  e.shape = std::move(shape);
  e.config = {{"library", "cublaslt"}, {"algo_id", algo}, {"layout", "TN"}};
  e.median_ns = median_ns;
  e.samples = 10;
  return e;
}

// A session over two candidates: cuBLASLt's first choice (the default) and an enumerated one, each
// measured at (time, noise).
SessionSummary two_candidate_session(const LibraryCandidates& c, double default_ns,
                                     double default_noise, double other_ns, double other_noise) {
  SessionSummary s;
  for (std::size_t i = 0; i < 2; ++i) {
    SessionRecord r;
    r.sequence = i;
    r.config = library_config(c.configs[i]);
    r.result.full = true;
    r.result.set_time(i == 0 ? default_ns : other_ns, i == 0 ? default_noise : other_noise, 10);
    s.records.push_back(r);
  }
  s.best = s.records[default_ns <= other_ns ? 0 : 1];
  return s;
}

// The router pays host time on every call it sends to another algorithm: a "winner" faster than
// cuBLASLt's default by less than the measurement's spread is the default, left to PyTorch.
TEST(GemmLibrary, AWinWithinTheNoiseKeepsCuBlasLtsDefault) {
  LibraryCandidates c;
  const std::vector<bench::LtAlgoCaps> algos = {caps(6, false, false), caps(31, true, true)};
  c.configs = enumerate_configs(algos, 2, 1);
  ASSERT_EQ(c.configs.size(), 2u);
  c.configs[0].source = "heuristic";
  c.configs[0].heuristic_rank = 1;
  c.heuristic = 1;

  const SessionSummary close = two_candidate_session(c, 100'000, 800, 99'500, 600);
  EXPECT_EQ(library_winner_record(c, close), &close.records[0]);
  bench::GemmProblem p;
  const store::CacheEntry kept = library_winner_entry(p, c, close, {}, {});
  EXPECT_EQ(kept.config.at("heuristic_rank"), 1);
  EXPECT_DOUBLE_EQ(kept.median_ns, 100'000);

  const SessionSummary clear = two_candidate_session(c, 100'000, 800, 95'000, 600);
  EXPECT_EQ(library_winner_record(c, clear), &*clear.best);
  EXPECT_EQ(library_winner_entry(p, c, clear, {}, {}).config.at("heuristic_rank"), 0);

  // Without a measured default, the best is all there is.
  SessionSummary no_default = clear;
  no_default.records.erase(no_default.records.begin());
  EXPECT_EQ(library_winner_record(c, no_default), &*no_default.best);
  EXPECT_EQ(library_winner_record(c, SessionSummary{}), nullptr);
}

// The library evaluator runs cuBLASLt's algorithms through the pipeline's one sequence
// (bench::run_candidate): the default verified and measured in full, a slower one screened out,
// a configuration cuBLASLt refuses ending before it runs.
TEST(LibraryGpu, AlgorithmsGoThroughThePipelinesSequence) {
  if (!cuda::gpu_available()) GTEST_SKIP() << "no GPU";
  const bench::GemmProblem p =
      library_problem("gemm_tn", {{"m", 512}, {"n", 512}, {"k", 512}}, "f16");
  LibrarySearchOptions o;
  o.enumerated = 16;
  LibraryEvaluator ev(p, o, 0);
  LibraryCandidates c;
  from_json(ev.describe(), c);
  ASSERT_GE(c.configs.size(), 1u);
  const ConfigMap first = library_config(c.configs.front());
  const CandidateOutcome d = ev.evaluate(first, std::nullopt);
  EXPECT_EQ(d.status, Status::ok) << d.detail;
  EXPECT_TRUE(d.full);
  EXPECT_EQ(d.detail.rfind("verified: agrees with cuBLASLt's first heuristic choice", 0), 0u)
      << d.detail;
  EXPECT_GT(d.time_ns(), 0);
  EXPECT_GE(d.samples(), 10u);
  EXPECT_GE(d.noise_ns(), 0);
  const CandidateOutcome s = ev.evaluate(first, d.time_ns() / 4);
  EXPECT_EQ(s.status, Status::slower) << s.detail;
  EXPECT_FALSE(s.full);
  ConfigMap refused = first;
  refused["tile"] = Value(std::int64_t{1} << 30);
  const CandidateOutcome r = ev.evaluate(refused, std::nullopt);
  EXPECT_EQ(r.status, Status::launch_failed) << r.detail;
  EXPECT_FALSE(r.context_lost);
}

TEST(TunableOp, ResultsFileHasValidatorsThenOneRowPerWinner) {
  std::vector<store::CacheEntry> entries = {
      gemm_entry("gemm_tn", "f16", {12288, 2048, 4096, 1}, 66, 412345.0),
      gemm_entry("gemm_nn", "bf16", {4096, 2048, 11008, 1}, 31, 250000.0),
  };
  auto other = gemm_entry("gemm_tn", "f16", {64, 64, 64, 1}, 1, 1000);
  other.config = {{"BLOCK", 64}};  // a ktune kernel's winner, not cuBLASLt's
  entries.push_back(other);
  // TunableOp's GEMM rows have no epilogue and no batch.
  entries.push_back(gemm_entry("gemm_tn_bias", "f16", {64, 64, 64, 1}, 1, 1000));
  entries.push_back(gemm_entry("gemm_nn", "f16", {64, 64, 64, 8}, 1, 1000));
  std::size_t skipped = 0;
  const std::string csv =
      tunableop_csv(entries, {{"PT_VERSION", "2.11.0"}, {"CUBLASLT_VERSION", "130100"}}, &skipped);
  EXPECT_EQ(csv,
            "Validator,PT_VERSION,2.11.0\n"
            "Validator,CUBLASLT_VERSION,130100\n"
            "GemmTunableOp_Half_TN,tn_12288_2048_4096,Gemm_Cublaslt_66,0.412345\n"
            "GemmTunableOp_BFloat16_NN,nn_4096_2048_11008,Gemm_Cublaslt_31,0.250000\n");
  EXPECT_EQ(skipped, 3u);
}

// Issue 44: one non-numeric algo_id aborted the whole export; a huge one was written as -1.
TEST(TunableOp, AnAlgoIdThatIsNoIntIsLeftOut) {
  std::vector<store::CacheEntry> entries;
  for (const nlohmann::json& bad : {nlohmann::json("66"), nlohmann::json(4294967296LL),
                                    nlohmann::json(1.5), nlohmann::json(-1), nlohmann::json()}) {
    auto e = gemm_entry("gemm_tn", "f16", {64, 64, 64, 1}, 1, 1000);
    e.config["algo_id"] = bad;
    entries.push_back(e);
  }
  auto missing = gemm_entry("gemm_tn", "f16", {64, 64, 64, 1}, 1, 1000);
  missing.config.erase("algo_id");
  entries.push_back(missing);
  entries.push_back(gemm_entry("gemm_nn", "bf16", {4096, 2048, 11008, 1}, 2147483647, 250000.0));
  std::size_t skipped = 0;
  EXPECT_EQ(tunableop_csv(entries, {}, &skipped),
            "GemmTunableOp_BFloat16_NN,nn_4096_2048_11008,Gemm_Cublaslt_2147483647,0.250000\n");
  EXPECT_EQ(skipped, 6u);
}

TEST(TunableOp, DtypesWithoutAGemmAreNamed) {
  EXPECT_EQ(tunableop_type("bf16"), "BFloat16");
  EXPECT_EQ(tunableop_type("f32"), "float");
  EXPECT_THROW((void)tunableop_type("i8"), Error);
  // An i8 entry is no GEMM the library search makes: left out, not an error.
  std::size_t skipped = 0;
  EXPECT_EQ(tunableop_csv({gemm_entry("gemm_tn", "i8", {8, 8, 8, 1}, 1, 1)}, {}, &skipped), "");
  EXPECT_EQ(skipped, 1u);
}

}  // namespace
}  // namespace ktune::tune

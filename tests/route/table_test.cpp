// The router's host side: a call's descriptor -> the search's problem (or why not), the table of
// winners from store entries and from its file, and exact matching.
#include "ktune/route/table.hpp"

#include <gtest/gtest.h>

#include <cublasLt.h>

#include "ktune/core/error.hpp"

namespace ktune::route {
namespace {

// PyTorch's nn.Linear forward in bf16 as cuBLASLt sees it: y[r, c] = x[r, k] W[c, k]^T is
// column-major D (c x r) = op(A = W, T) op(B = x, N): layout TN, m = c, n = r.
ktune_gemm_call linear_call(std::int64_t rows = 4096, std::int64_t cols = 2816,
                            std::int64_t k = 1024) {
  ktune_gemm_call c{};
  c.entry = KTUNE_GEMM_LT_MATMUL;
  c.m = cols;
  c.n = rows;
  c.k = k;
  c.batch = 1;
  c.lda = k;
  c.ldb = k;
  c.ldc = c.ldd = cols;
  c.a_type = c.b_type = c.c_type = c.d_type = CUDA_R_16BF;
  c.compute_type = CUBLAS_COMPUTE_32F;
  c.scale_type = CUDA_R_32F;
  c.transa = CUBLAS_OP_T;
  c.transb = CUBLAS_OP_N;
  c.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  c.aligned = 1;
  return c;
}

store::CacheEntry entry_for(const bench::GemmProblem& p, int heuristic_rank = 2) {
  store::CacheEntry e;
  e.key.op = bench::gemm_cache_op(p);
  e.key.dtype = bench::gemm_cache_dtype(p);
  e.key.arch = "sm_90";
  e.key.device_name = "NVIDIA H200";
  e.shape = bench::gemm_cache_shape(p);
  bench::LtAlgoConfig c;
  c.algo_id = 66;
  c.tile = 18;
  c.heuristic_rank = heuristic_rank;
  c.workspace_bytes = 1024;
  c.data = std::string(128, '0');
  e.config = c;
  e.config["problem"] = p;
  e.median_ns = 90000;
  e.noise_ns = 500;
  e.provenance.budget = {{"default_median_ns", 100000.0}};
  return e;
}

TEST(RouteProblem, ALinearCallIsTheSearchsTnProblem) {
  std::string why;
  const auto p = problem_of(linear_call(), &why);
  ASSERT_TRUE(p) << why;
  EXPECT_TRUE(p->trans_a);
  EXPECT_FALSE(p->trans_b);
  EXPECT_EQ(p->m, 2816);
  EXPECT_EQ(p->n, 4096);
  EXPECT_EQ(p->k, 1024);
  EXPECT_EQ(p->dtype, DType::bf16);
  EXPECT_EQ(p->compute, bench::GemmCompute::f32);
  EXPECT_EQ(bench::gemm_cache_op(*p), "gemm_tn");
}

TEST(RouteProblem, Tf32AndLegacySgemmAreTheTf32Problem) {
  auto c = linear_call();
  c.a_type = c.b_type = c.c_type = c.d_type = CUDA_R_32F;
  c.compute_type = CUBLAS_COMPUTE_32F_FAST_TF32;
  c.entry = KTUNE_GEMM_SGEMM;
  const auto p = problem_of(c, nullptr);
  ASSERT_TRUE(p);
  EXPECT_EQ(bench::gemm_cache_dtype(*p), "tf32");
}

TEST(RouteProblem, EachUnservableCallSaysWhy) {
  struct Case {
    void (*change)(ktune_gemm_call&);
    const char* why;
  };
  const Case cases[] = {
      {[](ktune_gemm_call& c) { c.d_type = CUDA_R_32F; }, "element types"},
      {[](ktune_gemm_call& c) { c.pointer_mode = 1; }, "on the device"},
      {[](ktune_gemm_call& c) { c.aligned = 0; }, "256-byte aligned"},
      {[](ktune_gemm_call& c) { c.order = 1; }, "column-major"},
      {[](ktune_gemm_call& c) { c.transa = CUBLAS_OP_C; }, "conjugate"},
      {[](ktune_gemm_call& c) { c.compute_type = CUBLAS_COMPUTE_32I; }, "compute type"},
      {[](ktune_gemm_call& c) { c.epilogue = -1; }, "epilogue"},
      {[](ktune_gemm_call& c) { c.lda = 5; }, "lda"},
  };
  for (const auto& k : cases) {
    auto c = linear_call();
    k.change(c);
    std::string why;
    EXPECT_FALSE(problem_of(c, &why));
    EXPECT_NE(why.find(k.why), std::string::npos) << why;
  }
}

TEST(RouteTable, AWinnerServesOnlyItsExactDescriptor) {
  const auto p = *problem_of(linear_call(), nullptr);
  const auto t = RouteTable::from_entries({entry_for(p)});
  ASSERT_EQ(t.winners().size(), 1u);
  EXPECT_TRUE(t.may_hold(p.m, p.n));
  EXPECT_TRUE(t.may_hold(p.m, p.n, true));
  EXPECT_FALSE(t.may_hold(p.n, p.m));
  const Winner* w = t.find(p);
  ASSERT_NE(w, nullptr);
  EXPECT_FALSE(w->kept);
  EXPECT_EQ(w->config.algo_id, 66);
  EXPECT_DOUBLE_EQ(w->default_median_ns, 100000.0);
  // The same sizes with a wider leading dimension (a view into a fused projection) are another
  // problem: the winner was never measured on it.
  auto strided = linear_call();
  strided.lda = 3 * 1024;
  EXPECT_EQ(t.find(*problem_of(strided, nullptr)), nullptr);
  auto other = linear_call();
  other.compute_type = CUBLAS_COMPUTE_32F_FAST_16BF;
  EXPECT_EQ(t.find(*problem_of(other, nullptr)), nullptr);
}

TEST(RouteTable, OnlyVerifiedLiveCublasltWinnersAreServed) {
  const auto p = *problem_of(linear_call(), nullptr);
  auto failed = entry_for(p);
  failed.verification = "failed";
  auto gone = entry_for(p);
  gone.invalidated_at = "2026-11-28T00:00:00Z";
  auto spec = entry_for(p);
  spec.config["library"] = "spec";
  auto broken = entry_for(p);
  broken.config["tile"] = "wide";
  EXPECT_TRUE(RouteTable::from_entries({failed, gone, spec, broken}).empty());
}

TEST(RouteTable, KeptAndDemotedWinnersKeepTheCallsOwnAlgorithm) {
  const auto p = *problem_of(linear_call(), nullptr);
  const auto kept = RouteTable::from_entries({entry_for(p, 1)});
  EXPECT_TRUE(kept.winners()[0].kept);
  EXPECT_TRUE(kept.may_hold(p.m, p.n));
  EXPECT_FALSE(kept.may_hold(p.m, p.n, true));  // nothing to route: legacy calls pass at once
  auto demoted = entry_for(p);
  demoted.config["field_verdict"] = "demoted";
  EXPECT_TRUE(RouteTable::from_entries({demoted}).winners()[0].kept);
}

TEST(RouteTable, AnEntryWithoutItsProblemServesThePackedOne) {
  const auto p = *problem_of(linear_call(), nullptr);
  auto e = entry_for(p);
  e.config.erase("problem");
  const auto t = RouteTable::from_entries({e});
  EXPECT_NE(t.find(p), nullptr);  // linear_call is packed
}

TEST(RouteTable, ItsFileRoundTripsAndABadOneIsOneSentence) {
  const auto p = *problem_of(linear_call(), nullptr);
  const auto t = RouteTable::from_entries({entry_for(p), entry_for(p, 1)});
  const auto j = t.to_json();
  EXPECT_EQ(j.at("schema_version"), kTableSchemaVersion);
  const auto back = RouteTable::from_json(j, "table.json");
  ASSERT_EQ(back.winners().size(), 1u);  // one winner per problem: the first
  EXPECT_EQ(back.to_json(), j);
  for (const char* bad : {R"({"schema_version": 99, "winners": []})", R"([1, 2])",
                          R"({"schema_version": 1, "winners": [{"problem": {}}]})"}) {
    try {
      RouteTable::from_json(nlohmann::json::parse(bad), "table.json");
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("table.json"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("ktune run --write-table"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace ktune::route

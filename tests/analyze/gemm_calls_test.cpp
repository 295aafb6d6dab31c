// GEMM calls as the report groups them: one shape per problem, the library search's problem and
// tune command for every form PyTorch runs, why not for the rest, and which kernels are
// cuBLASLt's.
#include "ktune/analyze/gemm_calls.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ktune/trace/cublaslt_log.hpp"

namespace ktune::analyze {
namespace {

trace::GemmCallRecord linear(std::int64_t m, std::uint64_t calls) {
  trace::GemmCallRecord r;
  r.m = m;
  r.n = 2048;
  r.k = 4096;
  r.lda = r.ldb = 4096;
  r.ldc = r.ldd = m;
  r.a_type = r.b_type = r.c_type = r.d_type = "R_16BF";
  r.compute_type = "COMPUTE_32F";
  r.scale_type = "R_32F";
  r.transa = "OP_T";
  r.algo_id = 66;
  r.tile = "MATMUL_TILE_256x128";
  r.calls = calls;
  return r;
}

TEST(GemmCalls, OneShapePerProblemWithItsAlgorithmsMerged) {
  trace::GemmCallRecord strided = linear(4096, 3);
  strided.ldb = 12288;  // a slice of a wider activation: another problem, tuned as it is stored
  trace::GemmCallRecord other_algo = linear(4096, 2);
  other_algo.tile = "MATMUL_TILE_128x128";
  const GemmCalls g =
      group_gemm_calls({linear(4096, 5), linear(12288, 9), strided, other_algo}, true);
  EXPECT_EQ(g.calls, 19u);
  ASSERT_EQ(g.shapes.size(), 3u);
  EXPECT_EQ(g.shapes[0].problem.m, 12288);  // most calls first
  EXPECT_EQ(g.shapes[1].problem.calls, 7u);
  EXPECT_EQ(g.shapes[1].problem.ldb, 4096);
  EXPECT_EQ(g.shapes[1].algorithms,
            (std::vector<std::string>{"algo 66 tile 256x128", "algo 66 tile 128x128"}));
  EXPECT_EQ(g.shapes[1].dtype, "bf16");
  EXPECT_EQ(g.shapes[1].tune_command,
            "ktune tune --library cublaslt --op gemm_tn --shape m=4096,n=2048,k=4096 --dtype bf16");
  EXPECT_EQ(g.shapes[2].problem.ldb, 12288);
  EXPECT_EQ(g.shapes[2].tune_command,
            "ktune tune --library cublaslt --op gemm_tn --shape m=4096,n=2048,k=4096,ldb=12288 "
            "--dtype bf16");
  EXPECT_EQ(bench::gemm_cache_shape(*g.shapes[2].tunable),
            (std::vector<std::int64_t>{4096, 2048, 4096, 1, 4096, 12288, 4096, 4096, 0, 0, 0, 0}));
  EXPECT_FALSE(group_gemm_calls({}, false).recorded);
  EXPECT_TRUE(group_gemm_calls({}, true).recorded);
}

// Every GEMM form PyTorch ran on the H100 (tests/fixtures/cublaslt/: one line per form, in the
// order below, as torch 2.11 logged them for bf16, f16, f32 and f32 with TF32) is a problem the
// library search takes, with its layout, batch and epilogue in the cache key.
struct Form {
  const char* torch;  // what the program called
  const char* op;
  std::vector<std::int64_t> shape;  // m, n, k, batch[, storage]
  bool tf32 = true;                 // runs in TF32 when torch allows it (its GEMV keeps full fp32)
};
const Form kForms[] = {
    {"x @ W", "gemm_nn", {384, 256, 512, 1}},
    {"F.linear(x, W)", "gemm_tn", {384, 256, 512, 1}},
    {"F.linear(x, W, b)", "gemm_tn_bias", {384, 256, 512, 1}},
    {"F.linear(x3d, W, b)", "gemm_tn_bias", {384, 256, 512, 1}},
    {"transposed views @ transposed views", "gemm_tt", {384, 256, 512, 1}},
    {"x^T view @ W", "gemm_nt", {384, 256, 512, 1}},
    {"x^T view @ W^T view", "gemm_tt", {384, 256, 512, 1}},
    {"torch.bmm(q, k^T)", "gemm_tn", {128, 128, 64, 8}},
    {"torch.bmm(q, v)", "gemm_nn", {128, 128, 64, 8}},
    {"torch.matmul 4-D, k^T", "gemm_tn", {128, 128, 64, 8}},
    {"torch.addmm(b, x, W)", "gemm_nn_bias", {384, 256, 512, 1}},
    {"torch.addmm(C, x, W)", "gemm_nn", {384, 256, 512, 1}},
    {"torch.addmm(C, x, W, beta, alpha)", "gemm_nn", {384, 256, 512, 1}},
    {"torch.baddbmm(C, q, k^T)", "gemm_tn", {128, 128, 64, 8}},
    {"torch._addmm_activation gelu", "gemm_nn_gelu_bias", {384, 256, 512, 1}},
    {"torch._addmm_activation relu", "gemm_nn_relu_bias", {384, 256, 512, 1}},
    {"torch.mv", "gemm_nn", {1, 384, 512, 1}, false},
    {"attention scores 4-D", "gemm_tn", {128, 128, 64, 16}},
    {"attention values 4-D", "gemm_nn", {64, 128, 128, 16}},
    {"F.gelu(F.linear(x, W, b))", "gemm_tn_bias", {384, 256, 512, 1}},
    // B is a 128-wide slice (ldb 128 for k = 64 rows): storage that is not packed enters the key.
    {"torch.bmm of a sliced view",
     "gemm_nn",
     {96, 128, 64, 8, 96, 128, 96, 96, 6144, 16384, 12288, 12288}},
};

TEST(GemmCalls, EveryFormTorchRanOnTheH100IsTunableWithItsLayoutBatchAndEpilogue) {
  for (const auto& [file, dtype] : {std::pair{"h100-bf16.log", "bf16"},
                                    {"h100-f16.log", "f16"},
                                    {"h100-f32.log", "f32"},
                                    {"h100-tf32.log", "tf32"}}) {
    const trace::CublasLtLog log = trace::read_cublaslt_log(
        std::filesystem::path(KTUNE_SOURCE_DIR) / "tests/fixtures/cublaslt" / file);
    ASSERT_EQ(log.matmul_calls, std::size(kForms)) << file;
    ASSERT_EQ(log.skipped_lines, 0u) << file;
    // Identical lines (the same problem and algorithm) were counted on one record: expand the
    // records back to the fixture's lines by reading them one at a time.
    std::ifstream in(std::filesystem::path(KTUNE_SOURCE_DIR) / "tests/fixtures/cublaslt" / file);
    std::string line;
    for (const Form& form : kForms) {
      ASSERT_TRUE(std::getline(in, line));
      const trace::CublasLtLog one = trace::parse_cublaslt_log(line);
      ASSERT_EQ(one.calls.size(), 1u) << file << ": " << form.torch;
      std::string why;
      const auto p = gemm_problem_of(one.calls[0], &why);
      ASSERT_TRUE(p) << file << ": " << form.torch << ": " << why;
      EXPECT_EQ(bench::gemm_cache_op(*p), form.op) << file << ": " << form.torch;
      const std::string want = dtype == std::string("tf32") && !form.tf32 ? "f32" : dtype;
      EXPECT_EQ(bench::gemm_cache_dtype(*p), want) << file << ": " << form.torch;
      EXPECT_EQ(bench::gemm_cache_shape(*p), form.shape) << file << ": " << form.torch;
      // The command the report prints names the same key.
      const std::string cmd = gemm_tune_command(one.calls[0], nullptr);
      EXPECT_NE(cmd.find("--op " + std::string(form.op) + " "), std::string::npos) << cmd;
      EXPECT_NE(cmd.find("--dtype " + want), std::string::npos) << cmd;
    }
  }
}

TEST(GemmCalls, BatchedProblemsKeepTheirLoggedStrides) {
  std::ifstream in(std::filesystem::path(KTUNE_SOURCE_DIR) /
                   "tests/fixtures/cublaslt/h100-bf16.log");
  std::string line;
  for (int i = 0; i < 21; ++i) std::getline(in, line);  // torch.bmm of a sliced view
  const auto p = gemm_problem_of(trace::parse_cublaslt_log(line).calls.at(0), nullptr);
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->trans_a);
  EXPECT_EQ(p->lda, 96);
  EXPECT_EQ(p->ldb, 128);  // k = 64 rows of a 128-wide slice
  EXPECT_EQ(p->stride_a, 6144);
  EXPECT_EQ(p->stride_b, 16384);
  EXPECT_EQ(p->stride_d, 12288);
  // A broadcast operand (torch's expand) is logged without its stride: 0, one matrix for all.
  trace::GemmCallRecord r = trace::parse_cublaslt_log(line).calls.at(0);
  r.stride_a = 0;
  EXPECT_EQ(gemm_problem_of(r, nullptr)->stride_a, 0);
}

TEST(GemmCalls, WhatTheSearchCannotRunSaysWhy) {
  auto why = [](trace::GemmCallRecord r) {
    std::string reason;
    EXPECT_EQ(gemm_tune_command(r, &reason), "");
    return reason;
  };
  trace::GemmCallRecord r = linear(4096, 1);
  r.a_type = r.b_type = "R_8I";
  r.c_type = r.d_type = "R_32I";
  EXPECT_NE(why(r).find("types i8*i8->i32"), std::string::npos);
  r = linear(4096, 1);
  r.d_type = r.c_type = "R_32F";
  EXPECT_NE(why(r).find("types bf16*bf16->f32"), std::string::npos);
  r = linear(4096, 1);
  r.compute_type = "COMPUTE_32F_PEDANTIC";
  EXPECT_NE(why(r).find("compute type COMPUTE_32F_PEDANTIC"), std::string::npos);
  r = linear(4096, 1);
  r.epilogue = "EPILOGUE_DGELU_BGRAD";
  EXPECT_NE(why(r).find("epilogue EPILOGUE_DGELU_BGRAD"), std::string::npos);
  r = linear(4096, 1);
  r.ldd = 100;  // below m: not a layout cuBLASLt could have run
  EXPECT_NE(why(r).find("ldd"), std::string::npos);
  r = linear(4096, 1);
  r.epilogue = "EPILOGUE_BIAS";
  r.a_type = r.b_type = r.c_type = r.d_type = "R_16F";
  EXPECT_EQ(
      gemm_tune_command(r, nullptr),
      "ktune tune --library cublaslt --op gemm_tn_bias --shape m=4096,n=2048,k=4096 --dtype f16");
}

TEST(GemmCalls, CuBlasLtKernelsByName) {
  for (const char* yes :
       {"nvjet_hsh_192x192_64x4_2x1_v_bz_coopA_TNN", "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n",
        "void cutlass::Kernel2<cutlass_80_tensorop_h16816gemm_128x128_32x4_nn_align8>(Params)",
        "cutlass3x_sm90_tensorop_gemm_f16_f16_f32",
        // Pre-Hopper GPUs name cuBLAS's GEMMs by architecture; split-K reductions are the
        // library's own.
        "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_tn",
        "volta_h884gemm_128x128_ldg8_nn", "turing_fp16_s1688gemm_fp16_256x128_ldg8_f2f_tn",
        "void cublasLt::splitKreduce_kernel<32, 16, int, float, __half, float>(int)",
        // Seen on the H100 under torch 2.11: cuBLAS's GEMV and cuBLASLt's epilogue kernel.
        "std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float, float, "
        "float, float, false, true, true, false, 7, false, cublasGemvParamsEx<int>>(...)",
        "void cublasLt::epilogue::impl::globalKernel<8, 32, float, float, float, true, false, 1>"})
    EXPECT_TRUE(is_cublaslt_kernel(yes)) << yes;
  for (const char* no : {"void at::native::vectorized_elementwise_kernel<4>(int)", "sm", "sm_xmma",
                         "triton_mm_0", "gemm_kernel", "ampere_elementwise", ""})
    EXPECT_FALSE(is_cublaslt_kernel(no)) << no;
}

}  // namespace
}  // namespace ktune::analyze

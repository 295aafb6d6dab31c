// GEMM calls as the report groups them: one shape per problem, the tune command only for what
// `ktune tune --library cublaslt` accepts, and which kernels are cuBLASLt's.
#include "ktune/analyze/gemm_calls.hpp"

#include <gtest/gtest.h>

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
  strided.ldb = 12288;  // a slice of a wider activation: same problem, same tune command
  strided.tile = "MATMUL_TILE_128x128";
  const GemmCalls g = group_gemm_calls({linear(4096, 5), linear(12288, 9), strided}, true);
  EXPECT_EQ(g.calls, 17u);
  ASSERT_EQ(g.shapes.size(), 2u);
  EXPECT_EQ(g.shapes[0].problem.m, 12288);  // most calls first
  EXPECT_EQ(g.shapes[1].problem.calls, 8u);
  EXPECT_EQ(g.shapes[1].problem.ldb, 4096);  // the most-called record's
  EXPECT_EQ(g.shapes[1].algorithms,
            (std::vector<std::string>{"algo 66 tile 256x128", "algo 66 tile 128x128"}));
  EXPECT_EQ(g.shapes[1].dtype, "bf16");
  EXPECT_EQ(g.shapes[1].tune_command,
            "ktune tune --library cublaslt --op gemm --shape m=4096,n=2048,k=4096 --dtype bf16");
  EXPECT_FALSE(group_gemm_calls({}, false).recorded);
  EXPECT_TRUE(group_gemm_calls({}, true).recorded);
}

TEST(GemmCalls, TuneCommandOnlyForWhatKtuneTunes) {
  auto why = [](trace::GemmCallRecord r) {
    std::string reason;
    EXPECT_EQ(gemm_tune_command(r, &reason), "");
    return reason;
  };
  trace::GemmCallRecord r = linear(4096, 1);
  r.batch = 2;
  EXPECT_EQ(why(r), "batched (batch 2)");
  r = linear(4096, 1);
  r.transa = "OP_N";
  EXPECT_EQ(why(r), "transposes NN (ktune tunes TN)");
  r = linear(4096, 1);
  r.a_type = r.b_type = r.c_type = r.d_type = "R_32F";
  EXPECT_EQ(why(r), "types f32*f32->f32 (ktune tunes f16 and bf16)");
  r = linear(4096, 1);
  r.d_type = r.c_type = "R_32F";
  EXPECT_EQ(why(r), "types bf16*bf16->f32 (ktune tunes f16 and bf16)");
  r = linear(4096, 1);
  r.compute_type = "COMPUTE_32F_FAST_TF32";
  EXPECT_EQ(why(r), "compute type COMPUTE_32F_FAST_TF32 (ktune tunes COMPUTE_32F)");
  r = linear(4096, 1);
  r.epilogue = "EPILOGUE_GELU_BIAS";
  EXPECT_EQ(why(r), "epilogue EPILOGUE_GELU_BIAS (ktune tunes none and bias)");
  r = linear(4096, 1);
  r.epilogue = "EPILOGUE_BIAS";
  r.a_type = r.b_type = r.c_type = r.d_type = "R_16F";
  EXPECT_EQ(
      gemm_tune_command(r, nullptr),
      "ktune tune --library cublaslt --op gemm_bias --shape m=4096,n=2048,k=4096 --dtype f16");
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
        "void cublasLt::splitKreduce_kernel<32, 16, int, float, __half, float>(int)"})
    EXPECT_TRUE(is_cublaslt_kernel(yes)) << yes;
  for (const char* no : {"void at::native::vectorized_elementwise_kernel<4>(int)", "sm", "sm_xmma",
                         "triton_mm_0", "gemm_kernel", "ampere_elementwise", ""})
    EXPECT_FALSE(is_cublaslt_kernel(no)) << no;
}

}  // namespace
}  // namespace ktune::analyze

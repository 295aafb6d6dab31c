#include "ktune/analyze/kernel_name.hpp"

#include <gtest/gtest.h>

#include "ktune/core/error.hpp"

namespace ktune::analyze::test {
namespace {

// Demangled names as the tracer records them from cuBLAS, cuBLASLt, CUTLASS, FlashAttention and
// PyTorch kernels, with the base name Nsight Compute's short form shows.
TEST(KernelName, BaseNamesOfRealLibraryKernels) {
  const std::pair<const char*, const char*> cases[] = {
      {"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
       "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
       "at::detail::Array<char*, 1>)",
       "vectorized_elementwise_kernel"},
      {"void at::native::elementwise_kernel<128, 2, "
       "at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, float, float, "
       "at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, "
       "at::native::BinaryFunctor<float, float, float, "
       "at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1}>(int, "
       "at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, float, float, "
       "at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, "
       "at::native::BinaryFunctor<float, float, float, "
       "at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1})",
       "elementwise_kernel"},
      {"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
       "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
       "cunn_SoftMaxForward"},
      {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, "
       "float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, "
       "float*, float*, c10::BFloat16*)",
       "vectorized_layer_norm_kernel"},
      {"void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, "
       "cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, "
       "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, "
       "float> >(cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, "
       "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, "
       "float>, float, float)",
       "gemv2T_kernel_val"},
      {"void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, "
       "__nv_bfloat16, float, __nv_bfloat16, true, false, false>(cublasLt::cublasSplitKParams<"
       "float>, float const*, __nv_bfloat16 const*, __nv_bfloat16*, float const*, float const*, "
       "__nv_bfloat16 const*, float const*, __nv_bfloat16*, void*, long, float*, int*, float*, "
       "float*, float const*, float const*, float const*, float const*, float const*)",
       "splitKreduce_kernel"},
      {"cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>("
       "cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)",
       "Kernel2"},
      {"void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, "
       "int, int>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::"
       "MainloopSm90TmaGmmaWarpSpecialized<4, cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, "
       "cutlass::gemm::KernelTmaWarpSpecializedCooperative> >, void, void> >(cutlass::gemm::"
       "kernel::GemmUniversal<cute::tuple<int, int, int, int>, void, void, void>::Params)",
       "device_kernel"},
      {"void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
       "cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, "
       "true, false, false, true, true, false, false>(flash::Flash_fwd_params)",
       "flash_fwd_kernel"},
      {"add(float*, int)", "add"},
      {"ktune::copy<float>(float const*, float*, unsigned long)", "copy"},
  };
  for (const auto& [full, base] : cases) EXPECT_EQ(base_name(full), base) << full;
}

TEST(KernelName, NamesThatAreNotSignaturesStayAsTheyAre) {
  for (const char* name :
       {"nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
        "segment_k_off_kernel__5x_cublas",
        "ampere_sgemm_128x64_tn", "triton_poi_fused_add_0", "_Z3addPfi", "", "unbalanced)(",
        "broken<(int)"})
    EXPECT_EQ(base_name(name), name);
}

TEST(KernelName, StyleChoosesTheBaseOrTheFullName) {
  EXPECT_EQ(shown_name("void k<1>(int)", parse_name_style("base")), "k");
  EXPECT_EQ(shown_name("void k<1>(int)", parse_name_style("full")), "void k<1>(int)");
  EXPECT_THROW(parse_name_style("short"), Error);
}

}  // namespace
}  // namespace ktune::analyze::test

#include "ktune/analyze/kernel_name.hpp"

#include <gtest/gtest.h>

#include <set>

#include "ktune/core/error.hpp"

namespace ktune::analyze::test {
namespace {

const char* const kFill =
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
    "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
    "at::detail::Array<char*, 1>)";
const char* const kElementwiseMul =
    "void at::native::elementwise_kernel<128, 2, "
    "at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, float, float, "
    "at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, "
    "at::native::BinaryFunctor<float, float, float, "
    "at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1}>(int, "
    "at::native::gpu_kernel_impl_nocast<at::native::BinaryFunctor<float, float, float, "
    "at::native::binary_internal::MulFunctor<float> > >(at::TensorIteratorBase&, "
    "at::native::BinaryFunctor<float, float, float, "
    "at::native::binary_internal::MulFunctor<float> > const&)::{lambda(int)#1})";

// Demangled names as the tracer records them from cuBLAS, cuBLASLt, CUTLASS, FlashAttention and
// PyTorch kernels, with the base name Nsight Compute's short form shows.
TEST(KernelName, BaseNamesOfRealLibraryKernels) {
  const std::pair<const char*, const char*> cases[] = {
      {kFill, "vectorized_elementwise_kernel"},
      {kElementwiseMul, "elementwise_kernel"},
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
  EXPECT_EQ(shown_name("void k<Op>(int)", parse_name_style("middle")), "k<Op>");
  EXPECT_THROW(parse_name_style("short"), Error);
}

// Kernel names of the shape PyTorch 2.x, CUTLASS, cuDNN, FlashAttention and the CUDA libraries
// emit (written for these tests), with the middle form a report shows.
const char* const kGeluBf16 =
    "void at::native::vectorized_elementwise_kernel<4, "
    "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::"
    "operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, "
    "at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() "
    "const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)";
const char* const kGeluF32 =
    "void at::native::vectorized_elementwise_kernel<4, "
    "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::"
    "operator()() const::{lambda()#1}::operator()() const::{lambda(float)#1}, "
    "at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#1}::operator()() "
    "const::{lambda(float)#1}, at::detail::Array<char*, 2>)";
const char* const kMulF32 =
    "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, "
    "float, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3> >(int, "
    "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> "
    ">, at::detail::Array<char*, 3>)";
const char* const kCopyToBf16 =
    "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda("
    "at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#11}::operator()() "
    "const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, "
    "unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, "
    "at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda("
    "at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#11}::operator()() "
    "const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>, TrivialOffsetCalculator<1, "
    "unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, "
    "at::native::memory::StoreWithCast<1>)";

TEST(KernelName, MiddleFormsOfRealLibraryKernels) {
  const std::pair<const char*, const char*> cases[] = {
      {kGeluBf16, "vectorized_elementwise_kernel<GeluCUDAKernelImpl>"},
      {kMulF32, "vectorized_elementwise_kernel<MulFunctor>"},
      {kCopyToBf16, "unrolled_elementwise_kernel<direct_copy_kernel_cuda>"},
      {kFill, "vectorized_elementwise_kernel<FillFunctor>"},
      // The lambda is defined in a function template: named by it and what it carries.
      {kElementwiseMul, "elementwise_kernel<gpu_kernel_impl_nocast<MulFunctor>>"},
      // ... or in a member of a class template: named by the class.
      {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
       "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, "
       "float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, "
       "4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
       "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda("
       "float, float)#1}>, unsigned int, float, 4, 4>)",
       "reduce_kernel<sum_functor>"},
      {"void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
       "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
       "cunn_SoftMaxForward<SoftMaxForwardEpilogue>"},
      // Only number types and constants: the first number type.
      {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, "
       "float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, "
       "float*, float*, c10::BFloat16*)",
       "vectorized_layer_norm_kernel<BFloat16>"},
      {"void (anonymous namespace)::softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, 10, "
       "false, false>(c10::BFloat16*, c10::BFloat16 const*, int, int, int, bool const*, int, "
       "bool)",
       "softmax_warp_forward<BFloat16>"},
      {"void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>(cudnnTensorStruct, "
       "float const*, cudnnTensorStruct, float*, float const*, float const*, float, float, float*, "
       "float*, float*, float*, float, float)",
       "bn_fw_tr_1C11_kernel_NCHW<float>"},
      // CUTLASS 2: the kernel class names its tile; CUTLASS 3: the largest integral shape.
      {"cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>("
       "cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)",
       "Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>"},
      {"void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, "
       "int, int>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::"
       "MainloopSm90TmaGmmaWarpSpecialized<4, cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, "
       "cutlass::gemm::KernelTmaWarpSpecializedCooperative>, cute::tuple<cute::C<128>, "
       "cute::C<256>, cute::C<64> >, cutlass::bfloat16_t, cute::tuple<long, cute::C<1>, long>, "
       "cutlass::bfloat16_t, cute::tuple<long, cute::C<1>, long> >, void, void> >(cutlass::gemm::"
       "kernel::GemmUniversal<cute::tuple<int, int, int, int>, void, void, void>::Params)",
       "device_kernel<KernelTmaWarpSpecializedCooperative 128x256x64>"},
      {"void cutlass::Kernel<cutlass::gemm::kernel::Gemm<cutlass::gemm::threadblock::MmaPipelined<"
       "cutlass::gemm::GemmShape<128, 128, 8>, float, float>, true> >(cutlass::gemm::kernel::Gemm<"
       "cutlass::gemm::threadblock::MmaPipelined<cutlass::gemm::GemmShape<128, 128, 8>, float, "
       "float>, true>::Params)",
       "Kernel<MmaPipelined 128x128x8>"},
      // A function as the template argument.
      {"void apply_kernel<&ktune::ops::relu_f32>(float*, int)", "apply_kernel<relu_f32>"},
      {"add(float*, int)", "add"},
      {"void ktune::copy<float>(float const*, float*, unsigned long)", "copy<float>"},
      {"void k<1, 2>(int)", "k"},
      {"distribution_elementwise_grid_stride_kernel<float, 4, "
       "at::native::templates::cuda::uniform_and_transform<c10::Half, float, "
       "at::CUDAGeneratorImpl*, "
       "at::native::templates::cuda::uniform_kernel<at::CUDAGeneratorImpl*>("
       "at::TensorIteratorBase&, double, double, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()"
       "() const::{lambda()#3}::operator()() const::{lambda(curandStatePhilox4_32_10*)#2}>(float4 "
       "curand_uniform4(curandStatePhilox4_32_10*))>(long, at::PhiloxCudaState, "
       "curandStatePhilox4_32_10*)",
       "distribution_elementwise_grid_stride_kernel<uniform_kernel<CUDAGeneratorImpl>>"},
  };
  for (const auto& [full, middle] : cases) EXPECT_EQ(middle_name(full), middle) << full;
  // What is not a C++ signature already carries its tile name, and stays.
  for (const char* name :
       {"nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
        "segment_k_off_kernel__5x_cublas",
        "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x128x128_4x1x1_"
        "kernel0_0",
        "triton_poi_fused_add_0", "_Z3addPfi", "", "unbalanced)(", "broken<(int)"})
    EXPECT_EQ(middle_name(name), name);
}

TEST(KernelName, HostileNamesComeBackBoundedAndQuickly) {
  const std::string deep =
      "void k<" + std::string(50'000, '<') + "int" + std::string(50'000, '>') + ">(int)";
  const std::string wide = "void k<" + std::string(100'000, 'a') + ">(int)";
  std::string nested = "void k<";
  for (int i = 0; i < 5000; ++i) nested += "ns::T<float, ";
  nested += "int";
  for (int i = 0; i < 5000; ++i) nested += ">";
  nested += ">(int)";
  const std::string plain(100'000, 'x');
  for (const std::string& name :
       {deep, wide, nested, plain, std::string(">>>><<<<(("), std::string("()"),
        std::string("void ()"), std::string(" "), std::string("k<>()"), std::string("::()"),
        std::string("void ::k<::>(::)"), std::string("void k<{lambda()#1}>()"),
        std::string("void k<(anonymous namespace)>()"), std::string(")("),
        std::string("operator()()")}) {
    const std::string m = middle_name(name);
    EXPECT_LE(m.size(), kMaxMiddleNameChars) << name.substr(0, 60);
    (void)base_name(name);
  }
  EXPECT_EQ(middle_name(wide), "k<" + std::string(kMaxMiddleNameChars - 5, 'a') + "...");
  EXPECT_EQ(middle_name("void k<T<float> >()"), "k<T>");
  const NameTable table({deep, wide, nested, plain, plain + "y"}, NameStyle::middle);
  EXPECT_NE(table(plain), table(plain + "y"));
}

TEST(KernelName, OneReportsNamesAreAlwaysDistinct) {
  // GELU on float and on bf16 read alike; the first reduced argument that differs tells them
  // apart: the innermost lambda's parameter type.
  const NameTable table({kGeluBf16, kGeluF32, kMulF32, kCopyToBf16}, NameStyle::middle);
  EXPECT_EQ(table(kGeluBf16), "vectorized_elementwise_kernel<GeluCUDAKernelImpl, BFloat16>");
  EXPECT_EQ(table(kGeluF32), "vectorized_elementwise_kernel<GeluCUDAKernelImpl, float>");
  EXPECT_EQ(table(kMulF32), "vectorized_elementwise_kernel<MulFunctor>");
  EXPECT_EQ(table(kCopyToBf16), "unrolled_elementwise_kernel<direct_copy_kernel_cuda>");
  // A name the table was not built with gets its own form.
  EXPECT_EQ(table("void k<Op>(int)"), "k<Op>");

  // A type that differs says more than a constant that differs (the vector width).
  const char* const fill_half =
      "void at::native::vectorized_elementwise_kernel<8, at::native::FillFunctor<c10::Half>, "
      "std::array<char*, 1ul> >(int, at::native::FillFunctor<c10::Half>, std::array<char*, 1ul>)";
  const char* const fill_float =
      "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
      "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)";
  const NameTable fills({fill_half, fill_float}, NameStyle::middle);
  EXPECT_EQ(fills(fill_half), "vectorized_elementwise_kernel<FillFunctor, Half>");
  EXPECT_EQ(fills(fill_float), "vectorized_elementwise_kernel<FillFunctor, float>");
  // Only a constant differs: it is the distinguishing argument.
  const NameTable sizes({"void k<Op, 128>(int)", "void k<Op, 256>(int)"}, NameStyle::middle);
  EXPECT_EQ(sizes("void k<Op, 128>(int)"), "k<Op, 128>");
  EXPECT_EQ(sizes("void k<Op, 256>(int)"), "k<Op, 256>");
  // Overloads: the parameters tell them apart.
  const NameTable overloads({"add(float*, int)", "add(double*, int)"}, NameStyle::middle);
  EXPECT_EQ(overloads("add(float*, int)"), "add<float>");
  EXPECT_EQ(overloads("add(double*, int)"), "add<double>");
  // Nothing the reduction keeps differs (only namespaces): numbered in full-name order.
  const NameTable same({"void a::k<a::Op>(int)", "void b::k<b::Op>(int)"}, NameStyle::middle);
  EXPECT_EQ(same("void a::k<a::Op>(int)"), "k<Op> #1");
  EXPECT_EQ(same("void b::k<b::Op>(int)"), "k<Op> #2");

  // Whatever the mix, no two full names read alike.
  std::vector<std::string> names = {kGeluBf16,
                                    kGeluF32,
                                    kMulF32,
                                    kCopyToBf16,
                                    "",
                                    "k",
                                    "k()",
                                    "void k<1>()",
                                    "void k<2>()",
                                    "void k<1>(int)",
                                    std::string(300, 'z'),
                                    std::string(300, 'z') + "1",
                                    std::string(300, 'z') + "2",
                                    "void ns::k<A>()",
                                    "void k<A>()"};
  const NameTable all(names, NameStyle::middle);
  std::set<std::string> shown;
  for (const std::string& n : names) shown.insert(all(n));
  EXPECT_EQ(shown.size(), names.size());
  // The base style keeps Nsight Compute's short form, alike or not.
  const NameTable base({kGeluBf16, kMulF32}, NameStyle::base);
  EXPECT_EQ(base(kGeluBf16), base(kMulF32));
}

}  // namespace
}  // namespace ktune::analyze::test

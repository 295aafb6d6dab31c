#include "ktune/cuda/device_utils.hpp"

#include <algorithm>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>

#include <fmt/format.h>

#include "ktune/core/enum_names.hpp"
#include "ktune/core/error.hpp"
#include "ktune/cuda/nvrtc.hpp"

namespace ktune::cuda {
namespace {

constexpr const char* kFillSource = R"(
#include <cuda_fp16.h>
#include <cuda_bf16.h>
__device__ unsigned long long mix(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
__device__ float unit(unsigned long long r) { return (float)(r >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f; }
template <class T> __device__ T make(unsigned long long r);
template <> __device__ double make<double>(unsigned long long r) { return (double)(r >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0; }
template <> __device__ float make<float>(unsigned long long r) { return unit(r); }
template <> __device__ __half make<__half>(unsigned long long r) { return __float2half(unit(r)); }
template <> __device__ __nv_bfloat16 make<__nv_bfloat16>(unsigned long long r) { return __float2bfloat16(unit(r)); }
template <> __device__ long long make<long long>(unsigned long long r) { return (long long)(r % 200) - 100; }
template <> __device__ int make<int>(unsigned long long r) { return (int)(r % 200) - 100; }
template <> __device__ short make<short>(unsigned long long r) { return (short)((int)(r % 200) - 100); }
template <> __device__ signed char make<signed char>(unsigned long long r) { return (signed char)((int)(r % 200) - 100); }
template <> __device__ unsigned long long make<unsigned long long>(unsigned long long r) { return r % 200; }
template <> __device__ unsigned int make<unsigned int>(unsigned long long r) { return (unsigned int)(r % 200); }
template <> __device__ unsigned short make<unsigned short>(unsigned long long r) { return (unsigned short)(r % 200); }
template <> __device__ unsigned char make<unsigned char>(unsigned long long r) { return (unsigned char)(r % 200); }
template <class T>
__global__ void ktune_fill(T* out, unsigned long long n, unsigned long long seed) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    out[i] = make<T>(mix(seed * 0x100000001b3ULL ^ i));
}
)";

constexpr EnumName<DType> kDeviceTypes[] = {
    {DType::f64, "double"},
    {DType::f32, "float"},
    {DType::f16, "__half"},
    {DType::bf16, "__nv_bfloat16"},
    {DType::i64, "long long"},
    {DType::i32, "int"},
    {DType::i16, "short"},
    {DType::i8, "signed char"},
    {DType::u64, "unsigned long long"},
    {DType::u32, "unsigned int"},
    {DType::u16, "unsigned short"},
    {DType::u8, "unsigned char"},
};

const char* device_type(DType t) {
  return name_of(kDeviceTypes, t, "float");
}

constexpr DType kAllTypes[] = {DType::f64, DType::f32, DType::f16, DType::bf16,
                               DType::i64, DType::i32, DType::i16, DType::i8,
                               DType::u64, DType::u32, DType::u16, DType::u8};

// One module per context is enough for ktune's single-context processes.
struct FillKernels {
  Module module;
  CUfunction fn[std::size(kAllTypes)] = {};
};

FillKernels& fill_kernels() {
  static std::once_flag once;
  static std::unique_ptr<FillKernels> k;
  std::call_once(once, [] {
    CUdevice dev = 0;
    CUcontext ctx = nullptr;
    KTUNE_CU(driver().cuCtxGetCurrent(&ctx));
    if (!ctx) throw Error("internal: fill_random needs a current CUDA context.");
    int major = 0, minor = 0;
    KTUNE_CU(driver().cuCtxGetDevice(&dev));
    KTUNE_CU(
        driver().cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    KTUNE_CU(
        driver().cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    CompileOptions opts;
    opts.arch = fmt::format("sm_{}{}", major, minor);
    opts.flags = {"-std=c++17"};
    for (DType t : kAllTypes)
      opts.name_expressions.push_back(fmt::format("ktune_fill<{}>", device_type(t)));
    const CompiledProgram prog = compile_cached(kFillSource, "ktune_fill.cu", opts);
    k = std::make_unique<FillKernels>(FillKernels{Module(prog.cubin), {}});
    for (std::size_t i = 0; i < std::size(kAllTypes); ++i)
      k->fn[i] = k->module.function(prog.lowered_names.at(opts.name_expressions[i]));
  });
  return *k;
}

}  // namespace

void fill_random(CUdeviceptr ptr, std::size_t count, DType type, std::uint64_t seed, CUstream s) {
  if (count == 0) return;
  FillKernels& k = fill_kernels();
  unsigned long long n = count, sd = seed;
  void* args[] = {&ptr, &n, &sd};
  const unsigned blocks = static_cast<unsigned>(std::min<std::size_t>((count + 255) / 256, 65535));
  const auto idx = static_cast<std::size_t>(
      std::find(std::begin(kAllTypes), std::end(kAllTypes), type) - std::begin(kAllTypes));
  KTUNE_CU(driver().cuLaunchKernel(k.fn[idx], blocks, 1, 1, 256, 1, 1, 0, s, args, nullptr));
}

void poison(CUdeviceptr ptr, std::size_t bytes, CUstream s) {
  KTUNE_CU(driver().cuMemsetD8Async(ptr, 0xFF, bytes, s));
}

L2Flusher::L2Flusher(std::size_t l2_bytes) : buffer_((2 * l2_bytes + 3) / 4 * 4) {}

void L2Flusher::flush(CUstream s) {
  // A changing value keeps the writes from being elided by any compression of repeated data.
  KTUNE_CU(driver().cuMemsetD32Async(buffer_.get(), ++value_, buffer_.bytes() / 4, s));
}

}  // namespace ktune::cuda

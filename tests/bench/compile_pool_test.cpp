// The compile pool on the CPU (NVRTC needs no GPU): which binary is ready first.
#include "ktune/bench/compile_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>

#include "ktune/core/paths.hpp"

namespace ktune::bench {
namespace {

// A kernel whose fully unrolled loop of N steps takes NVRTC longer the larger N is (N=100: about
// 1 s on this machine, N=1: 0.04 s). The source carries this run's start time, so that no binary
// comes from the disk cache.
KernelLaunch unrolled(int n) {
  static const std::string nonce =
      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  KernelLaunch l;
  l.source =
      "// " + nonce +
      "\n"
      "extern \"C\" __global__ void k(float* x) {\n"
      "  float acc[8] = {0};\n"
      "#pragma unroll\n"
      "  for (int i = 0; i < N; ++i)\n"
      "#pragma unroll\n"
      "    for (int j = 0; j < 8; ++j) acc[j] += x[threadIdx.x * 8 + j + i * 1024] * x[i + j];\n"
      "  for (int j = 0; j < 8; ++j) x[threadIdx.x * 8 + j] = acc[j];\n"
      "}\n";
  l.program_name = "unrolled.cu";
  l.kernel_name = "k";
  l.flags = {"-DN=" + std::to_string(n)};
  return l;
}

TEST(CompilePool, TheFirstFinishedCompileIsReadyFirst) {
  CompilePool pool("sm_90", 2);
  const KernelLaunch slow = unrolled(100), fast = unrolled(1);
  pool.enqueue(slow);
  pool.enqueue(fast);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(pool.first_done({slow, fast}), 1u);
  const Compiled f = pool.take(fast);
  ASSERT_TRUE(f.program) << f.error;
  // The slow one was still compiling when the fast one was handed out.
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const Compiled s = pool.take(slow);
  ASSERT_TRUE(s.program) << s.error;
  EXPECT_LT(waited, s.compile_s);
  // A launch never queued is ready at once: take() compiles it on the caller's thread.
  EXPECT_EQ(pool.first_done({slow, unrolled(2)}), 0u);
}

TEST(CompilePool, WithoutWorkersTheFirstIsReady) {
  CompilePool pool("sm_90", 0);
  pool.enqueue(unrolled(1));
  EXPECT_EQ(pool.first_done({unrolled(1), unrolled(2)}), 0u);
  EXPECT_EQ(pool.first_done({}), 0u);
}

}  // namespace
}  // namespace ktune::bench

namespace ktune::bench {
namespace {

bool minimal(const KernelLaunch& l) {
  const auto flags = compile_options(l, "sm_90").flags;
  return std::find(flags.begin(), flags.end(), "--minimal") != flags.end();
}

KernelLaunch launch_of(std::string source) {
  KernelLaunch l;
  l.source = std::move(source);
  l.program_name = "k.cu";
  l.kernel_name = "k";
  return l;
}

// NVRTC's --minimal mode leaves out the CUDA runtime's declarations, textures, surfaces and
// device-side launches: code that names any of them, or includes a header ktune cannot read,
// compiles without it.
TEST(CompileOptions, MinimalModeOnlyForCodeThatNamesNothingItLeavesOut) {
  EXPECT_TRUE(minimal(launch_of("extern \"C\" __global__ void k(float* x) { x[0] = __ldg(x); }")));
  EXPECT_FALSE(minimal(
      launch_of("extern \"C\" __global__ void k(cudaTextureObject_t t, float* x) { x[0] = 1; }")));
  EXPECT_FALSE(
      minimal(launch_of("__global__ void k(float* x) { x[0] = tex1Dfetch<float>(0, 0); }")));
  EXPECT_FALSE(minimal(launch_of("__global__ void c(); __global__ void k() { c<<<1, 1>>>(); }")));
  EXPECT_FALSE(minimal(launch_of("#include <cuda_fp16.h>\n__global__ void k() {}")));
  KernelLaunch with_header = launch_of("#  include \"common.h\"\n__global__ void k() {}");
  with_header.headers = {{"common.h", "#define N 4\n"}};
  EXPECT_TRUE(minimal(with_header));
  with_header.headers = {
      {"common.h", "__device__ void* p() { void* q; cudaMalloc(&q, 4); return q; }"}};
  EXPECT_FALSE(minimal(with_header));
}

// The binary is the same with and without it: the hub convolution, one configuration.
TEST(CompileOptions, MinimalModeGivesTheSameBinary) {
  KernelLaunch l = launch_of(read_file(std::filesystem::path(KTUNE_SOURCE_DIR) / "benchmarks" /
                                       "search" / "hub" / "convolution_milo.cu"));
  l.kernel_name = "convolution_kernel";
  l.flags = {"-std=c++11",      "-Dblock_size_x=32",  "-Dblock_size_y=4",
             "-Dtile_size_x=1", "-Dtile_size_y=2",    "-Dread_only=1",
             "-Duse_padding=0", "-Dfilter_height=15", "-Dfilter_width=15"};
  cuda::CompileOptions o = compile_options(l, "sm_90");
  ASSERT_EQ(o.flags.back(), "--minimal");
  const std::string with = cuda::compile(l.source, l.program_name, o).cubin;
  o.flags.pop_back();
  const std::string without = cuda::compile(l.source, l.program_name, o).cubin;
  EXPECT_FALSE(with.empty());
  EXPECT_EQ(with, without);
}

}  // namespace
}  // namespace ktune::bench

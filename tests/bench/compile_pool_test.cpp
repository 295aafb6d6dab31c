// The compile pool on the CPU (NVRTC needs no GPU): which binary is ready first.
#include "ktune/bench/compile_pool.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

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

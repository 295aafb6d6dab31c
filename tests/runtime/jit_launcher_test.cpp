// GPU tier: a tuned variant is compiled once, launched, and computes the right thing.
#include "ktune/runtime/jit_launcher.hpp"

#include <chrono>
#include <filesystem>

#include <gtest/gtest.h>

#include "ktune/cuda/driver.hpp"
#include "ktune/runtime/environment.hpp"

namespace ktune::runtime {
namespace {

constexpr const char* kScale = R"(
extern "C" __global__ void __launch_bounds__(BLOCK) scale(float* x, float a, unsigned n) {
  unsigned i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) x[i] *= a;
}
)";

TEST(JitLauncher, CompilesOnceLaunchesAndScales) {
  if (!cuda::gpu_available()) GTEST_SKIP() << "no GPU";
  cuda::PrimaryContext ctx(0);
  const auto env = detect_environment(0);
  const unsigned n = 1 << 20;
  std::vector<float> host(n);
  for (unsigned i = 0; i < n; ++i) host[i] = static_cast<float>(i % 1000);
  cuda::DeviceBuffer buf(n * sizeof(float));
  KTUNE_CU(cuda::driver().cuMemcpyHtoD(buf.get(), host.data(), n * sizeof(float)));
  cuda::Stream stream;
  JitLauncher launcher(kScale, "scale", env.arch);
  for (int block : {128, 256}) {
    const nlohmann::json config{{"block", block}};
    CUdeviceptr p = buf.get();
    float a = 2.0f;
    unsigned count = n;
    void* args[] = {&p, &a, &count};
    launcher.launch(config, {(n + block - 1) / block}, {static_cast<unsigned>(block)}, stream.get(),
                    args);
    EXPECT_EQ(&launcher.variant(config), &launcher.variant(config));  // compiled once
  }
  stream.synchronize();
  std::vector<float> out(n);
  KTUNE_CU(cuda::driver().cuMemcpyDtoH(out.data(), buf.get(), n * sizeof(float)));
  for (unsigned i = 0; i < n; i += 997) ASSERT_EQ(out[i], 4.0f * host[i]) << i;
  // A second launcher (a new process in effect) finds the binary on disk.
  JitLauncher again(kScale, "scale", env.arch);
  EXPECT_TRUE(again.variant({{"block", 128}}).binary_from_disk_cache);
}

}  // namespace
}  // namespace ktune::runtime

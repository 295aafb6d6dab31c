// The occupancy calculator against the driver's own answer
// (cuOccupancyMaxActiveBlocksPerMultiprocessor) on real kernels: NVRTC builds one kernel at several
// register caps and static shared sizes, and every (block size, dynamic shared memory) pair is
// asked of both. With KTUNE_RECORD_OCCUPANCY=DIR the driver's answers are also written to
// DIR/<arch>.driver.json in the format of tests/fixtures/occupancy/, so the CPU fixture can be
// re-recorded on a GPU (scripts/gpu-tier.sh).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/analyze/occupancy.hpp"
#include "ktune/cuda/driver.hpp"
#include "ktune/cuda/nvrtc.hpp"
#include "ktune/cuda/resources.hpp"

namespace ktune::analyze::test {
namespace {

// ACC (224) live accumulators keep more registers busy than any cap, so -maxrregcount decides the
// count (ptxas: 64 -> 64, 168 -> 168, 255 -> 231, spilling the rest); a static tile adds static
// shared memory.
constexpr const char* kSource = R"(
extern "C" __global__ void occupancy_probe(float* out, const float* in, int n) {
#if STATIC_BYTES > 0
  __shared__ float tile[STATIC_BYTES / 4];
  tile[threadIdx.x % (STATIC_BYTES / 4)] = in[threadIdx.x];
  __syncthreads();
#endif
  extern __shared__ float dynamic_tile[];
  float acc[ACC];
#pragma unroll
  for (int i = 0; i < ACC; ++i) acc[i] = in[threadIdx.x * ACC + i];
  for (int it = 0; it < n; ++it) {
#pragma unroll
    for (int i = 0; i < ACC; ++i) acc[i] = fmaf(acc[i], acc[(i + 7) % ACC], 1.0f);
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < ACC; ++i) s += acc[i];
#if STATIC_BYTES > 0
  s += tile[(threadIdx.x + 1) % (STATIC_BYTES / 4)];
#endif
  if (n < 0) dynamic_tile[threadIdx.x] = s;
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
)";

TEST(OccupancyGpu, CalculatorAgreesWithTheDriver) {
  if (!cuda::gpu_available()) GTEST_SKIP() << "no GPU";
  cuda::PrimaryContext ctx;
  const int major = ctx.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  const int minor = ctx.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  const std::string arch = fmt::format("sm_{}{}", major, minor);
  const auto table = sm_limits(arch);
  if (!table) GTEST_SKIP() << "no occupancy table for " << arch;
  const SmLimits& limits = *table;

  // The table's limits are the device's.
  EXPECT_EQ(ctx.attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR),
            limits.registers_per_sm);
  EXPECT_EQ(ctx.attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR),
            limits.shared_bytes_per_sm);
  EXPECT_EQ(ctx.attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
            limits.max_shared_bytes_per_block);
  EXPECT_EQ(ctx.attribute(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK),
            limits.reserved_shared_bytes_per_block);
  EXPECT_EQ(ctx.attribute(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR),
            limits.max_blocks_per_sm);
  EXPECT_EQ(ctx.attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR) / limits.warp_size,
            limits.max_warps_per_sm);

  const auto& drv = cuda::driver();
  nlohmann::json cases = nlohmann::json::array();
  std::size_t compared = 0;
  for (int max_registers : {32, 40, 64, 72, 96, 128, 168, 255}) {
    for (int static_bytes : {0, 4096}) {
      cuda::CompileOptions options;
      options.arch = arch;
      options.flags = {fmt::format("-maxrregcount={}", max_registers),
                       fmt::format("-DSTATIC_BYTES={}", static_bytes), "-DACC=224"};
      const cuda::CompiledProgram program = cuda::compile(kSource, "occupancy_probe.cu", options);
      cuda::Module module(program.cubin);
      CUfunction f = module.function("occupancy_probe");
      const auto attr = [&](CUfunction_attribute a) {
        int v = 0;
        KTUNE_CU(drv.cuFuncGetAttribute(&v, a, f));
        return v;
      };
      const int registers = attr(CU_FUNC_ATTRIBUTE_NUM_REGS);
      const int static_shared = attr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
      const int max_threads = attr(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
      const int max_dynamic = limits.max_shared_bytes_per_block - static_shared;
      KTUNE_CU(
          drv.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, max_dynamic));
      for (int block : {32, 64, 96, 128, 192, 256, 384, 512, 640, 768, 1024}) {
        if (block > max_threads) continue;  // the driver refuses to answer for such a launch
        for (int dynamic : {0, 1000, 16 * 1024, 48 * 1024, 100 * 1024, 113 * 1024, 200 * 1024}) {
          if (dynamic > max_dynamic) continue;
          int driver_blocks = -1;
          KTUNE_CU(drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(&driver_blocks, f, block,
                                                                   static_cast<size_t>(dynamic)));
          KernelResources k{block, registers, std::int64_t{static_shared} + dynamic};
          const Occupancy o = theoretical_occupancy(limits, k);
          EXPECT_EQ(o.blocks_per_sm, driver_blocks)
              << "block " << block << ", " << registers << " registers, " << k.shared_bytes
              << " shared bytes";
          ++compared;
          cases.push_back({{"block_size", block},
                           {"registers_per_thread", registers},
                           {"shared_bytes", k.shared_bytes},
                           {"blocks_per_sm", driver_blocks}});
        }
      }
    }
  }
  EXPECT_GT(compared, 100u);

  if (const char* dir = std::getenv("KTUNE_RECORD_OCCUPANCY"); dir && *dir) {
    char name[256] = {};
    drv.cuDeviceGetName(name, sizeof name, ctx.device());
    int driver_version = 0;
    drv.cuDriverGetVersion(&driver_version);
    nlohmann::json doc = {
        {"schema_version", 1},
        {"kind", "ktune.occupancy_fixture"},
        {"arch", arch},
        {"source", fmt::format("Recorded from cuOccupancyMaxActiveBlocksPerMultiprocessor on {} "
                               "(driver {}) by OccupancyGpu.CalculatorAgreesWithTheDriver.",
                               name, driver_version)},
        {"cases", cases}};
    std::filesystem::create_directories(dir);
    std::ofstream(std::filesystem::path(dir) / (arch + ".driver.json")) << doc.dump(1) << "\n";
  }
}

}  // namespace
}  // namespace ktune::analyze::test

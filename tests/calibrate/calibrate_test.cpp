#include "ktune/calibrate/calibrate.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ktune/cuda/driver.hpp"

namespace ktune::calibrate {
namespace {

// NVRTC needs no GPU: a bad option or a typo in the kernels fails here, not on the lent machine.
TEST(Calibrate, KernelsCompileForHopperAndAmpere) {
  for (const char* arch : {"sm_90", "sm_80"}) {
    const cuda::CompiledProgram p = compile_kernels(arch);
    EXPECT_GT(p.cubin.size(), 1000u) << arch;
  }
}

TEST(Calibrate, JsonShape) {
  Result r;
  Ceiling c;
  c.name = "dram_bandwidth";
  c.unit = "bytes/s";
  c.value = 3.0e12;
  c.work = 4.0e9;
  c.method = "copy";
  c.time_ms.count = 30;
  c.time_ms.median = 1.33;
  r.ceilings.push_back(c);
  const nlohmann::json j = r;
  EXPECT_EQ(j["schema_version"], kSchemaVersion);
  ASSERT_TRUE(j.contains("identity"));
  const auto& jc = j["ceilings"].at(0);
  for (const char* key :
       {"name", "unit", "value", "work", "method", "time_ms", "sm_clock_mhz", "throttled_samples"})
    EXPECT_TRUE(jc.contains(key)) << key;
  EXPECT_EQ(jc["time_ms"]["median"], 1.33);
  EXPECT_EQ(r.find("dram_bandwidth"), &r.ceilings[0]);
  EXPECT_EQ(r.find("fp32_fma"), nullptr);
}

// On a GPU machine (the GPU tier) a quick calibration must give plausible, positive ceilings.
TEST(Calibrate, QuickRunOnGpu) {
  if (!cuda::gpu_available()) GTEST_SKIP() << "no GPU";
  Options o;
  o.copy_bytes = std::size_t{256} << 20;
  o.gemm_size = 2048;
  o.samples = 5;
  const Result r = run(o);
  ASSERT_EQ(r.ceilings.size(), 4u);
  for (const auto& c : r.ceilings) {
    EXPECT_GT(c.value, 0) << c.name;
    EXPECT_EQ(c.time_ms.count, 5u) << c.name;
  }
  EXPECT_GT(r.find("dram_bandwidth")->value, 1e11);  // > 100 GB/s on any datacenter GPU
}

}  // namespace
}  // namespace ktune::calibrate

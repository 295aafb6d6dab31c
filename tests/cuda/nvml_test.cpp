#include "ktune/cuda/nvml.hpp"

#include <gtest/gtest.h>

namespace ktune::cuda {
namespace {

TEST(Nvml, ThrottleReasonNames) {
  EXPECT_TRUE(throttle_reason_names(0).empty());
  const auto names = throttle_reason_names(throttle::kSwPowerCap | throttle::kHwThermal | 0x10000);
  ASSERT_EQ(names.size(), 3u);
  EXPECT_EQ(names[0], "sw_power_cap");
  EXPECT_EQ(names[1], "hw_thermal");
  EXPECT_EQ(names[2], "0x10000");
}

TEST(Nvml, SlowdownMaskExcludesIdle) {
  EXPECT_FALSE(throttle::kSlowdownMask & throttle::kGpuIdle);
  EXPECT_TRUE(throttle::kSlowdownMask & throttle::kHwThermal);
}

}  // namespace
}  // namespace ktune::cuda

#include "ktune/core/identity.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace ktune {
namespace {

TEST(Identity, DeviceJsonShapeAndRoundTrip) {
  DeviceIdentity d;
  d.name = "NVIDIA H100 80GB HBM3";
  d.uuid = "GPU-0123";
  d.cc_major = 9;
  d.sm_count = 132;
  d.l2_bytes = 52428800;
  d.persistence_mode = true;
  const nlohmann::json j = d;
  for (const char* key :
       {"name", "uuid", "compute_capability", "arch", "sm_count", "l2_bytes", "memory_bytes",
        "memory_bus_width_bits", "sm_clock_mhz", "sm_clock_max_mhz", "mem_clock_mhz",
        "mem_clock_max_mhz", "throttle_reasons", "temperature_c", "power_draw_w", "power_limit_w",
        "persistence_mode", "ecc_enabled", "mig_enabled"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["arch"], "sm_90");
  EXPECT_TRUE(j["ecc_enabled"].is_null());  // unknown stays unknown, not "false"
  const DeviceIdentity back = j.get<DeviceIdentity>();
  EXPECT_EQ(back.arch(), "sm_90");
  EXPECT_EQ(back.persistence_mode, std::optional<bool>(true));
  EXPECT_FALSE(back.ecc_enabled.has_value());
}

TEST(Identity, HostIdentityNeedsNoGpu) {
  const HostIdentity h = host_identity();
  EXPECT_FALSE(h.hostname.empty());
  EXPECT_FALSE(h.os.empty());
}

TEST(Identity, TimestampIsIsoUtc) {
  const std::string t = utc_now_iso8601();
  ASSERT_EQ(t.size(), 20u);
  EXPECT_EQ(t.back(), 'Z');
  EXPECT_EQ(t[10], 'T');
}

}  // namespace
}  // namespace ktune

// Calibrations and schema handling on both backends.
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"
#include "ktune/store/store.hpp"
#include "store_fixture.hpp"

namespace ktune::store {
namespace {

using test::StoreTest;

CalibrationRecord record(const std::string& uuid, const std::string& at, double dram) {
  CalibrationRecord r;
  r.device_uuid = uuid;
  r.device_name = "NVIDIA H100 80GB HBM3";
  r.arch = "sm_90";
  r.sm_clock_mhz = 1980;
  r.mem_clock_mhz = 2619;
  r.dram_bytes_per_s = dram;
  r.fp32_flop_per_s = 5.1e13 + 0.125;  // needs more than 15 significant digits to round-trip
  r.bf16_flop_per_s = 7.3e14;
  r.fp16_flop_per_s = 7.4e14;
  r.measured_at = at;
  r.details = {{"dram", {{"median", 3.1e12}, {"count", 20}}}};
  return r;
}

class CalibrationTest : public StoreTest {};

TEST_P(CalibrationTest, RoundTripsEveryField) {
  auto store = Store::open(url());
  EXPECT_EQ(store->schema_version(), Store::kSchemaVersion);
  EXPECT_FALSE(store->latest_calibration("GPU-a").has_value());
  const auto in = record("GPU-a", "2025-01-02T03:04:05Z", 3.123456789012345e12);
  store->put_calibration(in);
  const auto out = store->latest_calibration("GPU-a");
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->device_uuid, in.device_uuid);
  EXPECT_EQ(out->device_name, in.device_name);
  EXPECT_EQ(out->arch, in.arch);
  EXPECT_EQ(out->sm_clock_mhz, in.sm_clock_mhz);
  EXPECT_EQ(out->mem_clock_mhz, in.mem_clock_mhz);
  EXPECT_EQ(out->dram_bytes_per_s, in.dram_bytes_per_s);  // exact: no precision lost
  EXPECT_EQ(out->fp32_flop_per_s, in.fp32_flop_per_s);
  EXPECT_EQ(out->bf16_flop_per_s, in.bf16_flop_per_s);
  EXPECT_EQ(out->fp16_flop_per_s, in.fp16_flop_per_s);
  EXPECT_EQ(out->measured_at, in.measured_at);
  EXPECT_EQ(out->details, in.details);
}

TEST_P(CalibrationTest, LatestIsNewestOfThatDeviceAndSurvivesReopen) {
  {
    auto store = Store::open(url());
    store->put_calibration(record("GPU-a", "2025-01-02T00:00:00Z", 1e12));
    store->put_calibration(record("GPU-a", "2025-03-01T00:00:00Z", 3e12));
    store->put_calibration(record("GPU-a", "2025-02-01T00:00:00Z", 2e12));
    store->put_calibration(record("GPU-b", "2026-01-01T00:00:00Z", 9e12));
    // Same device and time: replaces.
    store->put_calibration(record("GPU-a", "2025-03-01T00:00:00Z", 3.5e12));
  }
  auto store = Store::open(url());
  const auto a = store->latest_calibration("GPU-a");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->measured_at, "2025-03-01T00:00:00Z");
  EXPECT_EQ(a->dram_bytes_per_s, 3.5e12);
  EXPECT_EQ(store->latest_calibration("GPU-b")->dram_bytes_per_s, 9e12);
}

TEST_P(CalibrationTest, RecordWithoutUuidIsRefused) {
  auto store = Store::open(url());
  EXPECT_THROW(store->put_calibration(record("", "2025-01-01T00:00:00Z", 1)), Error);
}

KTUNE_BOTH_BACKENDS(CalibrationTest);

}  // namespace
}  // namespace ktune::store

// The datasheet ceilings a trace falls back to on a GPU that was never calibrated: each model is
// told apart by the name the driver gives it.
#include "ktune/calibrate/datasheet.hpp"

#include <gtest/gtest.h>

namespace ktune::calibrate {
namespace {

TEST(Datasheet, ModelsAreToldApartByTheDriversName) {
  const auto sxm = datasheet_ceilings("NVIDIA H100 80GB HBM3");
  ASSERT_TRUE(sxm);
  EXPECT_EQ(sxm->model, "NVIDIA H100 SXM5 80GB");
  EXPECT_DOUBLE_EQ(sxm->dram_bytes_per_s, 3.35e12);
  EXPECT_DOUBLE_EQ(sxm->bf16_flop_per_s, 989.4e12);
  EXPECT_EQ(datasheet_ceilings("NVIDIA H100 PCIe")->model, "NVIDIA H100 PCIe 80GB");
  EXPECT_EQ(datasheet_ceilings("NVIDIA H100 NVL")->model, "NVIDIA H100 NVL 94GB");
  EXPECT_DOUBLE_EQ(datasheet_ceilings("NVIDIA H200")->dram_bytes_per_s, 4.8e12);
  EXPECT_EQ(datasheet_ceilings("NVIDIA A100-SXM4-80GB")->model, "NVIDIA A100 SXM4 80GB");
  EXPECT_EQ(datasheet_ceilings("NVIDIA A100 80GB PCIe")->model, "NVIDIA A100 PCIe 80GB");
  EXPECT_EQ(datasheet_ceilings("NVIDIA A100-SXM4-40GB")->model, "NVIDIA A100 40GB");
  EXPECT_EQ(datasheet_ceilings("NVIDIA L40S")->model, "NVIDIA L40S");
  EXPECT_EQ(datasheet_ceilings("NVIDIA L4")->model, "NVIDIA L4");
  EXPECT_FALSE(datasheet_ceilings("NVIDIA GeForce RTX 4090"));
  EXPECT_FALSE(datasheet_ceilings(""));
}

}  // namespace
}  // namespace ktune::calibrate

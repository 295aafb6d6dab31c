// On a machine without a driver (CI) the driver layer must fail with one sentence, not crash.
// On a GPU machine these tests check the opposite: the driver loads and the identity is complete.
#include <gtest/gtest.h>

#include "ktune/core/error.hpp"
#include "ktune/cuda/driver.hpp"
#include "ktune/cuda/identity.hpp"

namespace ktune::cuda {
namespace {

TEST(Driver, EitherLoadsOrSaysWhyInOneSentence) {
  if (gpu_available()) {
    EXPECT_NO_THROW(driver());
    const Identity id = capture_identity();
    ASSERT_FALSE(id.devices.empty());
    EXPECT_FALSE(id.devices[0].uuid.empty());
    EXPECT_GT(id.devices[0].sm_count, 0);
    return;
  }
  try {
    driver();
    FAIL() << "expected NoGpuError";
  } catch (const NoGpuError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("NVIDIA"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "one sentence, one line: " << msg;
    EXPECT_EQ(msg.back(), '.');
  }
}

TEST(Driver, CheckedCallNamesFileLineCallAndError) {
  try {
    check_cu(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc(&p, n)", "/x/src/cuda/foo.cpp", 42);
    FAIL();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cuda/foo.cpp:42"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cuMemAlloc(&p, n) failed"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(2)"), std::string::npos) << msg;
  }
  EXPECT_FALSE(warn_cu(CUDA_ERROR_INVALID_VALUE, "cuFoo()", __FILE__, __LINE__));
  EXPECT_TRUE(warn_cu(CUDA_SUCCESS, "cuFoo()", __FILE__, __LINE__));
}

// A faulting candidate loses its context; freeing its events and module then fails with the same
// sticky error, which the H100 printed six times per candidate. Releases say nothing of it, and
// still warn of anything else.
TEST(Driver, ReleasingInALostContextIsQuiet) {
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(warn_release(CUDA_ERROR_ILLEGAL_ADDRESS, "cuEventDestroy(e)", __FILE__, __LINE__));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(warn_release(CUDA_ERROR_INVALID_VALUE, "cuEventDestroy(e)", __FILE__, __LINE__));
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("cuEventDestroy(e) failed"),
            std::string::npos);
}

}  // namespace
}  // namespace ktune::cuda

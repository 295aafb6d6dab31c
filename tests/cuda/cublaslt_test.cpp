// cuBLASLt is loaded on first use, and loads (and names its statuses) on a machine with no GPU.
#include "ktune/cuda/cublaslt.hpp"

#include <gtest/gtest.h>

#include <string>

#include "ktune/core/error.hpp"

namespace ktune::cuda {
namespace {

TEST(CublasLt, LoadsOnFirstUseWithoutAGpu) {
  const CublasLtApi& lt = cublaslt();
  EXPECT_STREQ(lt.cublasLtGetStatusName(CUBLAS_STATUS_NOT_INITIALIZED),
               "CUBLAS_STATUS_NOT_INITIALIZED");
  EXPECT_EQ(&lt, &cublaslt());  // loaded once
}

TEST(CublasLt, CheckedCallNamesTheStatus) {
  try {
    check_cublas(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmul(...)", "/x/src/calibrate/c.cpp", 7);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CUBLAS_STATUS_INVALID_VALUE"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("calibrate/c.cpp:7"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ktune::cuda

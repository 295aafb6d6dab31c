#pragma once
// Driver entry points the harness needs that cuda/driver.hpp does not list yet (cuModuleGetGlobal).
// Resolved from the already loaded libcuda.so.1. To move into KTUNE_DRIVER_FUNCTIONS.
#include <cuda.h>

namespace ktune::bench::detail {

struct DriverExtra {
  decltype(&::cuModuleGetGlobal) cuModuleGetGlobal = nullptr;
};

// Throws NoGpuError without a driver, ktune::Error when a symbol is missing.
const DriverExtra& driver_extra();

}  // namespace ktune::bench::detail

#pragma once
// Reads the identity block (core/identity.hpp) off the driver, NVML and NVRTC.
#include "ktune/core/identity.hpp"

namespace ktune::cuda {

// Every visible GPU; throws NoGpuError without a driver or GPU.
Identity capture_identity();

// One GPU, with a fresh clock and throttle reading.
DeviceIdentity capture_device(int ordinal);

}  // namespace ktune::cuda

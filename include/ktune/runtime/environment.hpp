#pragma once
// The environment cache entries are judged against: this GPU's arch and name, the NVRTC toolkit
// and the driver's major version.
#include "ktune/store/cache_entry.hpp"

namespace ktune::runtime {

// Reads device `ordinal` through the driver; throws ktune::NoGpuError without a GPU.
store::Environment detect_environment(int ordinal = 0);

// "580.159.04" -> 580; 0 when empty or unreadable.
int driver_major(const std::string& driver_version);

}  // namespace ktune::runtime

#include "ktune/runtime/environment.hpp"

#include <charconv>

#include "ktune/cuda/identity.hpp"
#include "ktune/cuda/nvrtc.hpp"

namespace ktune::runtime {

int driver_major(const std::string& v) {
  int major = 0;
  const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), major);
  return ec == std::errc() ? major : 0;
}

store::Environment detect_environment(int ordinal) {
  const DeviceIdentity dev = cuda::capture_device(ordinal);
  const Identity id = cuda::capture_identity();
  const auto [nvrtc_major, nvrtc_minor] = cuda::nvrtc_version();
  return {dev.arch(), dev.name, std::to_string(nvrtc_major) + "." + std::to_string(nvrtc_minor),
          driver_major(id.software.driver_version)};
}

}  // namespace ktune::runtime

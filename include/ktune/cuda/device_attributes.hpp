#pragma once
// The part of the identity block that comes from driver attributes, header-only so the injected
// tracer (which must not link the cuda layer) and cuda/identity.cpp read it the same way.
#include <cuda.h>

#include <cstdio>
#include <string>

#include "ktune/core/identity.hpp"

namespace ktune::cuda {

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it.
inline std::string format_gpu_uuid(const CUuuid& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  char buf[48];
  std::snprintf(buf, sizeof buf,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return buf;
}

// Fills compute capability, SM count, L2 size, bus width and the clock maxima; `attr(a)` returns
// the value of CUdevice_attribute `a` (the caller decides how a failed read is handled).
template <class Attr>
void fill_from_attributes(DeviceIdentity& d, Attr&& attr) {
  d.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  d.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  d.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  d.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  d.memory_bus_width_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  // The driver's clock attributes (kHz) stand in for NVML's maxima when NVML is missing.
  d.sm_clock_max_mhz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE) / 1000;
  d.mem_clock_max_mhz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE) / 1000;
}

}  // namespace ktune::cuda

#include "ktune/cuda/identity.hpp"

#include <cstdio>

#include "ktune/core/version.hpp"
#include "ktune/cuda/driver.hpp"
#include "ktune/cuda/nvml.hpp"
#include "ktune/cuda/nvrtc.hpp"

namespace ktune::cuda {

DeviceIdentity capture_device(int ordinal) {
  const auto& d = driver();
  DeviceIdentity out;
  out.ordinal = ordinal;
  CUdevice dev = 0;
  KTUNE_CU(d.cuDeviceGet(&dev, ordinal));
  char name[256] = {};
  KTUNE_CU(d.cuDeviceGetName(name, sizeof name, dev));
  out.name = name;
  CUuuid uuid{};
  KTUNE_CU(d.cuDeviceGetUuid(&uuid, dev));
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  char buf[64];
  std::snprintf(buf, sizeof buf,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  out.uuid = buf;
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    KTUNE_CU(d.cuDeviceGetAttribute(&v, a, dev));
    return v;
  };
  out.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  out.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  out.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  out.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  out.memory_bus_width_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  // The driver's own clock attributes (kHz) stand in for NVML's maxima when NVML is missing.
  out.sm_clock_max_mhz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE) / 1000;
  out.mem_clock_max_mhz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE) / 1000;
  std::size_t total = 0;
  KTUNE_CU(d.cuDeviceTotalMem(&total, dev));
  out.memory_bytes = static_cast<std::int64_t>(total);
  char pci[32] = {};
  KTUNE_CU(d.cuDeviceGetPCIBusId(pci, sizeof pci, dev));
  out.pci_bus_id = pci;
  if (const Nvml* nvml = Nvml::get()) nvml->fill(out);
  return out;
}

Identity capture_identity() {
  const auto& d = driver();
  Identity id;
  id.host = host_identity();
  id.captured_at = utc_now_iso8601();
  KTUNE_CU(d.cuDriverGetVersion(&id.software.cuda_driver_api));
  std::tie(id.software.nvrtc_major, id.software.nvrtc_minor) = nvrtc_version();
  id.software.ktune_version = version();
  id.software.ktune_commit = git_commit();
  if (const Nvml* nvml = Nvml::get()) id.software.driver_version = nvml->driver_version();
  int count = 0;
  KTUNE_CU(d.cuDeviceGetCount(&count));
  for (int i = 0; i < count; ++i) id.devices.push_back(capture_device(i));
  return id;
}

}  // namespace ktune::cuda

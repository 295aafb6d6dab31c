#include "ktune/cuda/identity.hpp"

#include <cstdio>

#include "ktune/core/version.hpp"
#include "ktune/cuda/device_attributes.hpp"
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
  out.uuid = format_gpu_uuid(uuid);
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    KTUNE_CU(d.cuDeviceGetAttribute(&v, a, dev));
    return v;
  };
  fill_from_attributes(out, attr);
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

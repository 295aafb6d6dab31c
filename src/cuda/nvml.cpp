#include "ktune/cuda/nvml.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

#include "ktune/cuda/check.hpp"

namespace ktune::cuda {
namespace {

// The slice of NVML's C ABI that ktune uses (nvml.h is not part of the CUDA toolkit).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr int NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_TEMPERATURE_GPU = 0;

}  // namespace

struct Nvml::Api {
  nvmlReturn_t (*init)() = nullptr;
  const char* (*error_string)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*system_driver_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*handle_by_pci)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*clock_info)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*max_clock_info)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*clock_event_reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*power_usage)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*persistence)(nvmlDevice_t, int*) = nullptr;
  nvmlReturn_t (*ecc_mode)(nvmlDevice_t, int*, int*) = nullptr;
  nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
};

namespace {

template <class F>
void bind(void* lib, F& fn, const char* name, const char* fallback = nullptr) {
  fn = reinterpret_cast<F>(::dlsym(lib, name));
  if (!fn && fallback) fn = reinterpret_cast<F>(::dlsym(lib, fallback));
}

const Nvml::Api* load_api() {
  void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return nullptr;
  static Nvml::Api api;
  bind(lib, api.init, "nvmlInit_v2");
  bind(lib, api.error_string, "nvmlErrorString");
  bind(lib, api.system_driver_version, "nvmlSystemGetDriverVersion");
  bind(lib, api.handle_by_pci, "nvmlDeviceGetHandleByPciBusId_v2");
  bind(lib, api.clock_info, "nvmlDeviceGetClockInfo");
  bind(lib, api.max_clock_info, "nvmlDeviceGetMaxClockInfo");
  bind(lib, api.clock_event_reasons, "nvmlDeviceGetCurrentClocksEventReasons",
       "nvmlDeviceGetCurrentClocksThrottleReasons");
  bind(lib, api.temperature, "nvmlDeviceGetTemperature");
  bind(lib, api.power_usage, "nvmlDeviceGetPowerUsage");
  bind(lib, api.power_limit, "nvmlDeviceGetEnforcedPowerLimit");
  bind(lib, api.persistence, "nvmlDeviceGetPersistenceMode");
  bind(lib, api.ecc_mode, "nvmlDeviceGetEccMode");
  bind(lib, api.mig_mode, "nvmlDeviceGetMigMode");
  if (!api.init || !api.handle_by_pci) return nullptr;
  if (nvmlReturn_t r = api.init(); r != NVML_SUCCESS) {
    warn_call_failed(__FILE__, __LINE__, "nvmlInit_v2()",
                     api.error_string ? api.error_string(r) : "NVML_ERROR", r);
    return nullptr;
  }
  return &api;
}

}  // namespace

std::vector<std::string> throttle_reason_names(std::uint64_t mask) {
  static constexpr std::pair<std::uint64_t, const char*> kNames[] = {
      {throttle::kGpuIdle, "gpu_idle"},
      {throttle::kApplicationsClocks, "applications_clocks"},
      {throttle::kSwPowerCap, "sw_power_cap"},
      {throttle::kHwSlowdown, "hw_slowdown"},
      {throttle::kSyncBoost, "sync_boost"},
      {throttle::kSwThermal, "sw_thermal"},
      {throttle::kHwThermal, "hw_thermal"},
      {throttle::kHwPowerBrake, "hw_power_brake"},
      {throttle::kDisplayClock, "display_clock"}};
  std::vector<std::string> names;
  for (auto [bit, name] : kNames) {
    if (mask & bit) names.emplace_back(name);
    mask &= ~bit;
  }
  if (mask) names.push_back(fmt::format("0x{:x}", mask));
  return names;
}

const Nvml* Nvml::get() {
  static const Nvml::Api* api = load_api();
  static const Nvml instance(api);
  return api ? &instance : nullptr;
}

void* Nvml::handle(const std::string& pci_bus_id) const {
  const std::lock_guard lock(handles_mutex_);
  if (auto it = handles_.find(pci_bus_id); it != handles_.end()) return it->second;
  nvmlDevice_t dev = nullptr;
  if (api_->handle_by_pci(pci_bus_id.c_str(), &dev) != NVML_SUCCESS) return nullptr;
  handles_.emplace(pci_bus_id, dev);
  return dev;
}

std::string Nvml::driver_version() const {
  char buf[96] = {};
  if (api_->system_driver_version && api_->system_driver_version(buf, sizeof buf) == NVML_SUCCESS)
    return buf;
  return {};
}

std::optional<ClockSample> Nvml::sample(const std::string& pci_bus_id) const {
  nvmlDevice_t dev = handle(pci_bus_id);
  if (!dev || !api_->clock_info) return std::nullopt;
  ClockSample s;
  unsigned v = 0;
  if (api_->clock_info(dev, NVML_CLOCK_SM, &v) == NVML_SUCCESS) s.sm_mhz = static_cast<int>(v);
  if (api_->clock_info(dev, NVML_CLOCK_MEM, &v) == NVML_SUCCESS) s.mem_mhz = static_cast<int>(v);
  unsigned long long reasons = 0;
  if (api_->clock_event_reasons && api_->clock_event_reasons(dev, &reasons) == NVML_SUCCESS)
    s.throttle_reasons = reasons;
  return s;
}

void Nvml::fill(DeviceIdentity& d) const {
  nvmlDevice_t dev = handle(d.pci_bus_id);
  if (!dev) return;
  d.nvml_available = true;
  if (auto s = sample(d.pci_bus_id)) {
    d.sm_clock_mhz = s->sm_mhz;
    d.mem_clock_mhz = s->mem_mhz;
    d.throttle_reasons = s->throttle_reasons;
    d.throttle_reason_names = throttle_reason_names(s->throttle_reasons);
  }
  unsigned v = 0;
  if (api_->max_clock_info && api_->max_clock_info(dev, NVML_CLOCK_SM, &v) == NVML_SUCCESS)
    d.sm_clock_max_mhz = static_cast<int>(v);
  if (api_->max_clock_info && api_->max_clock_info(dev, NVML_CLOCK_MEM, &v) == NVML_SUCCESS)
    d.mem_clock_max_mhz = static_cast<int>(v);
  if (api_->temperature && api_->temperature(dev, NVML_TEMPERATURE_GPU, &v) == NVML_SUCCESS)
    d.temperature_c = static_cast<int>(v);
  if (api_->power_usage && api_->power_usage(dev, &v) == NVML_SUCCESS) d.power_draw_w = v / 1000.0;
  if (api_->power_limit && api_->power_limit(dev, &v) == NVML_SUCCESS) d.power_limit_w = v / 1000.0;
  int mode = 0, pending = 0;
  if (api_->persistence && api_->persistence(dev, &mode) == NVML_SUCCESS)
    d.persistence_mode = mode != 0;
  if (api_->ecc_mode && api_->ecc_mode(dev, &mode, &pending) == NVML_SUCCESS)
    d.ecc_enabled = mode != 0;
  unsigned mig = 0, mig_pending = 0;
  if (api_->mig_mode && api_->mig_mode(dev, &mig, &mig_pending) == NVML_SUCCESS)
    d.mig_enabled = mig != 0;
}

}  // namespace ktune::cuda

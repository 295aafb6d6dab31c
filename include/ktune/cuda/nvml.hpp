#pragma once
// NVML, loaded at run time from libnvidia-ml.so.1 (it ships with the driver, not the toolkit).
// Everything here degrades: without NVML, clocks and power read as unknown instead of failing.
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ktune/core/identity.hpp"

namespace ktune::cuda {

struct ClockSample {
  int sm_mhz = 0;
  int mem_mhz = 0;
  std::uint64_t throttle_reasons = 0;  // NVML clocks-event reasons bit mask
};

// Clocks-event reason bits, as NVML defines them.
namespace throttle {
inline constexpr std::uint64_t kGpuIdle = 0x1, kApplicationsClocks = 0x2, kSwPowerCap = 0x4,
                               kHwSlowdown = 0x8, kSyncBoost = 0x10, kSwThermal = 0x20,
                               kHwThermal = 0x40, kHwPowerBrake = 0x80, kDisplayClock = 0x100;
// Reasons that mean the SM clock is held down by something other than the workload itself
// (heat, a hardware brake): samples under them are dropped. The software power cap is not one: a
// kernel that draws the card to its power limit (a full-rate GEMM, a full-bandwidth copy on the
// H100) runs capped as its steady state, so its capped samples are its true time; they are kept
// and counted (Measurement::power_capped).
inline constexpr std::uint64_t kSlowdownMask =
    kHwSlowdown | kSwThermal | kHwThermal | kHwPowerBrake;
}  // namespace throttle

// "sw_power_cap", "hw_thermal", ...; one name per set bit, unknown bits as hex.
std::vector<std::string> throttle_reason_names(std::uint64_t mask);

class Nvml {
 public:
  // The process-wide instance, or nullptr when libnvidia-ml.so.1 is absent or fails to initialise.
  static const Nvml* get();

  std::string driver_version() const;
  // Fills clocks, throttle state, temperature, power, persistence, ECC and MIG of `dev`, matched
  // by PCI bus id. Fields NVML cannot read stay unknown.
  void fill(DeviceIdentity& dev) const;
  // Cheap read of clocks and throttle reasons, for every measurement sample.
  std::optional<ClockSample> sample(const std::string& pci_bus_id) const;

  struct Api;
  explicit Nvml(const Api* api) : api_(api) {}

 private:
  // NVML's lookup by PCI bus id walks every device; a sample must stay cheap, so handles are
  // looked up once per bus id.
  void* handle(const std::string& pci_bus_id) const;
  const Api* api_;
  mutable std::mutex handles_mutex_;
  mutable std::map<std::string, void*> handles_;
};

}  // namespace ktune::cuda

#pragma once
// The identity block: everything that makes a number reproducible. Every artifact ktune writes
// (trace, tuning result, cache entry, baseline, calibration) carries one. Plain data; the cuda
// layer fills it (cuda/identity.hpp), everything else only reads and serialises it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ktune {

struct DeviceIdentity {
  int ordinal = 0;
  std::string name;                // "NVIDIA H100 80GB HBM3"
  std::string uuid;                // "GPU-xxxxxxxx-..."
  int cc_major = 0, cc_minor = 0;  // compute capability
  int sm_count = 0;
  std::int64_t l2_bytes = 0;
  std::int64_t memory_bytes = 0;
  int memory_bus_width_bits = 0;
  std::string pci_bus_id;
  // Clocks (MHz) as read at capture time; max is what the board allows, current what it runs at.
  int sm_clock_mhz = 0, sm_clock_max_mhz = 0;
  int mem_clock_mhz = 0, mem_clock_max_mhz = 0;
  std::uint64_t throttle_reasons = 0;              // NVML clocks-event bit mask
  std::vector<std::string> throttle_reason_names;  // decoded mask, empty when not throttled
  int temperature_c = -1;
  double power_draw_w = -1, power_limit_w = -1;
  std::optional<bool> persistence_mode, ecc_enabled, mig_enabled;  // empty where NVML cannot say
  bool nvml_available = false;

  std::string arch() const { return "sm_" + std::to_string(cc_major * 10 + cc_minor); }
};

struct SoftwareIdentity {
  std::string driver_version;  // "580.159.04" (NVML), empty without NVML
  int cuda_driver_api = 0;     // cuDriverGetVersion, e.g. 13000
  int nvrtc_major = 0, nvrtc_minor = 0;
  std::string toolkit() const {
    return std::to_string(nvrtc_major) + "." + std::to_string(nvrtc_minor);
  }
  std::string ktune_version, ktune_commit;
};

struct HostIdentity {
  std::string hostname;
  std::string cpu;  // model name from /proc/cpuinfo
  std::string os;   // uname sysname + release
};

struct Identity {
  HostIdentity host;
  SoftwareIdentity software;
  std::vector<DeviceIdentity> devices;
  std::string captured_at;  // ISO-8601 UTC
};

// Host facts that need no GPU (hostname, CPU model, OS, ktune version and commit).
HostIdentity host_identity();
std::string utc_now_iso8601();

void to_json(nlohmann::json& j, const DeviceIdentity& d);
void from_json(const nlohmann::json& j, DeviceIdentity& d);
void to_json(nlohmann::json& j, const SoftwareIdentity& s);
void from_json(const nlohmann::json& j, SoftwareIdentity& s);
void to_json(nlohmann::json& j, const HostIdentity& h);
void from_json(const nlohmann::json& j, HostIdentity& h);
void to_json(nlohmann::json& j, const Identity& id);
void from_json(const nlohmann::json& j, Identity& id);

}  // namespace ktune

#include "ktune/core/identity.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ktune {
namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

template <class T>
void put_optional(nlohmann::json& j, const char* key, const std::optional<T>& v) {
  j[key] = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

template <class T>
void get_optional(const nlohmann::json& j, const char* key, std::optional<T>& v) {
  if (j.contains(key) && !j.at(key).is_null())
    v = j.at(key).get<T>();
  else
    v.reset();
}

}  // namespace

HostIdentity host_identity() {
  HostIdentity h;
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) == 0) h.hostname = buf;
  h.cpu = cpu_model();
  struct utsname u {};
  if (::uname(&u) == 0) h.os = std::string(u.sysname) + " " + u.release;
  return h;
}

std::string utc_now_iso8601() {
  auto now = std::chrono::system_clock::now();
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}",
                     fmt::gmtime(std::chrono::system_clock::to_time_t(now)));
}

void to_json(nlohmann::json& j, const DeviceIdentity& d) {
  j = {{"ordinal", d.ordinal},
       {"name", d.name},
       {"uuid", d.uuid},
       {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
       {"arch", d.arch()},
       {"sm_count", d.sm_count},
       {"l2_bytes", d.l2_bytes},
       {"memory_bytes", d.memory_bytes},
       {"memory_bus_width_bits", d.memory_bus_width_bits},
       {"pci_bus_id", d.pci_bus_id},
       {"sm_clock_mhz", d.sm_clock_mhz},
       {"sm_clock_max_mhz", d.sm_clock_max_mhz},
       {"mem_clock_mhz", d.mem_clock_mhz},
       {"mem_clock_max_mhz", d.mem_clock_max_mhz},
       {"throttle_reasons", d.throttle_reasons},
       {"throttle_reason_names", d.throttle_reason_names},
       {"temperature_c", d.temperature_c},
       {"power_draw_w", d.power_draw_w},
       {"power_limit_w", d.power_limit_w},
       {"nvml_available", d.nvml_available}};
  put_optional(j, "persistence_mode", d.persistence_mode);
  put_optional(j, "ecc_enabled", d.ecc_enabled);
  put_optional(j, "mig_enabled", d.mig_enabled);
}

void from_json(const nlohmann::json& j, DeviceIdentity& d) {
  d.ordinal = j.value("ordinal", 0);
  d.name = j.value("name", "");
  d.uuid = j.value("uuid", "");
  const std::string cc = j.value("compute_capability", "0.0");
  std::sscanf(cc.c_str(), "%d.%d", &d.cc_major, &d.cc_minor);
  d.sm_count = j.value("sm_count", 0);
  d.l2_bytes = j.value("l2_bytes", std::int64_t{0});
  d.memory_bytes = j.value("memory_bytes", std::int64_t{0});
  d.memory_bus_width_bits = j.value("memory_bus_width_bits", 0);
  d.pci_bus_id = j.value("pci_bus_id", "");
  d.sm_clock_mhz = j.value("sm_clock_mhz", 0);
  d.sm_clock_max_mhz = j.value("sm_clock_max_mhz", 0);
  d.mem_clock_mhz = j.value("mem_clock_mhz", 0);
  d.mem_clock_max_mhz = j.value("mem_clock_max_mhz", 0);
  d.throttle_reasons = j.value("throttle_reasons", std::uint64_t{0});
  d.throttle_reason_names = j.value("throttle_reason_names", std::vector<std::string>{});
  d.temperature_c = j.value("temperature_c", -1);
  d.power_draw_w = j.value("power_draw_w", -1.0);
  d.power_limit_w = j.value("power_limit_w", -1.0);
  d.nvml_available = j.value("nvml_available", false);
  get_optional(j, "persistence_mode", d.persistence_mode);
  get_optional(j, "ecc_enabled", d.ecc_enabled);
  get_optional(j, "mig_enabled", d.mig_enabled);
}

void to_json(nlohmann::json& j, const SoftwareIdentity& s) {
  j = {{"driver_version", s.driver_version},
       {"cuda_driver_api", s.cuda_driver_api},
       {"toolkit", s.toolkit()},
       {"ktune_version", s.ktune_version},
       {"ktune_commit", s.ktune_commit}};
}

void from_json(const nlohmann::json& j, SoftwareIdentity& s) {
  s.driver_version = j.value("driver_version", "");
  s.cuda_driver_api = j.value("cuda_driver_api", 0);
  std::sscanf(j.value("toolkit", "0.0").c_str(), "%d.%d", &s.nvrtc_major, &s.nvrtc_minor);
  s.ktune_version = j.value("ktune_version", "");
  s.ktune_commit = j.value("ktune_commit", "");
}

void to_json(nlohmann::json& j, const HostIdentity& h) {
  j = {{"hostname", h.hostname}, {"cpu", h.cpu}, {"os", h.os}};
}

void from_json(const nlohmann::json& j, HostIdentity& h) {
  h.hostname = j.value("hostname", "");
  h.cpu = j.value("cpu", "");
  h.os = j.value("os", "");
}

void to_json(nlohmann::json& j, const Identity& id) {
  j = {{"host", id.host},
       {"software", id.software},
       {"devices", id.devices},
       {"captured_at", id.captured_at}};
}

void from_json(const nlohmann::json& j, Identity& id) {
  j.at("host").get_to(id.host);
  j.at("software").get_to(id.software);
  j.at("devices").get_to(id.devices);
  id.captured_at = j.value("captured_at", "");
}

}  // namespace ktune

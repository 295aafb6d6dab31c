#pragma once
// The store: one interface over SQLite (embedded default) and PostgreSQL (shared by a fleet).
// Holds calibrated ceilings, the tuning cache and gate baselines, with versioned schema migrations.
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace ktune::store {

// One `ktune calibrate` result: this GPU's measured ceilings at the clocks it ran at.
struct CalibrationRecord {
  std::string device_uuid;
  std::string device_name;
  std::string arch;      // "sm_90"
  int sm_clock_mhz = 0;  // median SM clock over the measurements
  int mem_clock_mhz = 0;
  double dram_bytes_per_s = 0;  // bytes read + written per second
  double fp32_flop_per_s = 0;   // FMA = 2 FLOP
  double bf16_flop_per_s = 0;   // tensor cores, dense
  double fp16_flop_per_s = 0;
  std::string measured_at;  // ISO-8601 UTC
  nlohmann::json details;   // per-ceiling sample summaries and the identity block
};

class Store {
 public:
  // "" -> the embedded SQLite store at default_db_path(); a path or sqlite:PATH -> SQLite;
  // postgresql://... or postgres://... -> PostgreSQL. Throws ktune::Error with one sentence (URL
  // printed with its password hidden) when the store cannot be opened or has a newer schema.
  static std::unique_ptr<Store> open(const std::string& url);
  virtual ~Store() = default;

  virtual std::string describe() const = 0;  // path, or URL without password
  virtual int schema_version() const = 0;

  virtual void put_calibration(const CalibrationRecord& record) = 0;
  // The newest calibration of a device, if any.
  virtual std::optional<CalibrationRecord> latest_calibration(const std::string& device_uuid) = 0;
};

}  // namespace ktune::store

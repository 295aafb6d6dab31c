#pragma once
// The store: one interface over SQLite (embedded default) and PostgreSQL (shared by a fleet).
// Holds calibrated ceilings, the tuning cache and its op specs, with versioned schema migrations.
// Store is one concrete class; a backend (src/store/backend.hpp) only runs SQL, so both backends
// share every rule (winner, fallback, staleness) and the same tests prove both.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

namespace detail {
class Backend;
}

class Store {
 public:
  // "" -> the embedded SQLite store at default_db_path(); a path or sqlite:PATH -> SQLite;
  // postgresql://... or postgres://... -> PostgreSQL. Throws ktune::Error with one sentence (URL
  // printed with its password hidden) when the store cannot be opened or has a newer schema.
  static std::unique_ptr<Store> open(const std::string& url);
  explicit Store(std::unique_ptr<detail::Backend> backend);  // migrates the schema to the latest
  virtual ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  std::string describe() const;  // path, or URL without password
  int schema_version() const;    // the schema this store now has (always kSchemaVersion)
  static constexpr int kSchemaVersion = 2;

  // Calibrations: a second record of the same device and measured_at replaces the first.
  void put_calibration(const CalibrationRecord& record);
  // The newest calibration of a device, if any.
  std::optional<CalibrationRecord> latest_calibration(const std::string& device_uuid);

 private:
  std::unique_ptr<detail::Backend> db_;
};

}  // namespace ktune::store

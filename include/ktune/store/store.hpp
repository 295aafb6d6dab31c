#pragma once
// The store: one interface over SQLite (embedded default) and PostgreSQL (shared by a fleet).
// Holds calibrated ceilings, the tuning cache and its op specs, with versioned schema migrations.
// Store is one concrete class; a backend (src/store/backend.hpp) only runs SQL, so both backends
// share every rule (winner, fallback, staleness) and the same tests prove both.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"
#include "ktune/store/cache_entry.hpp"
#include "ktune/store/pack.hpp"

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
class Baselines;  // gate baselines (baselines.hpp), stored through this store's backend

// The store could not be reached: the server refused or dropped the connection, or did not
// answer in time (a frozen host, a lost network). The Store that threw it is unusable; a new
// Store::open may succeed once the server is back (a worker waits and reconnects).
class StoreUnavailable : public Error {
 public:
  using Error::Error;
};

// A read_only open found no store there yet (no file, or no ktune tables): a listing shows it as
// empty rather than failing.
class NoStoreYet : public Error {
 public:
  using Error::Error;
};

// read_write creates the store (and a SQLite file's directories) and migrates its schema.
// read_only creates and changes nothing: the store must exist, may be on read-only media, and
// every write through it fails.
enum class Access { read_write, read_only };

// Where a store is, as --db, KTUNE_DB or the Python package's db= name it. The one parser of that
// syntax: every caller that needs to know what a locator means asks it.
struct Locator {
  enum class Kind { sqlite, postgresql };
  Kind kind = Kind::sqlite;
  // sqlite: the file's path (the default store's when the text was ""); postgresql: the URL with
  // its scheme in lower case, as libpq wants it.
  std::string location;
  bool is_default = false;  // "" named the embedded default store
};
// Schemes are case-insensitive ("POSTGRESQL://..." is PostgreSQL, "SQLite:x.db" a file). Throws
// ktune::Error with one sentence (password hidden) for an unknown scheme, a blank locator, a
// libpq key=value string, and a SQLite name that would not persist (":memory:", a "file:" URI,
// which SQLite reads as options such as mode=memory).
Locator parse_locator(const std::string& text);
// What Store::describe() would say of the store `text` names, without opening it: the file's path,
// or the URL with its password hidden (also for a locator parse_locator refuses).
std::string describe_locator(const std::string& text);

class Store {
 public:
  // "" -> the embedded SQLite store at default_db_path(); a path or sqlite:PATH -> SQLite;
  // postgresql://... or postgres://... -> PostgreSQL (parse_locator). Throws ktune::Error with one
  // sentence (URL printed with its password hidden) when the store cannot be opened, does not exist
  // (read_only) or has a newer schema.
  static std::unique_ptr<Store> open(const std::string& url, Access access = Access::read_write);
  // read_write migrates the schema to the latest; read_only only checks it is readable.
  explicit Store(std::unique_ptr<detail::Backend> backend, Access access = Access::read_write);
  virtual ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  std::string describe() const;  // path, or URL without password
  // The SQLite file behind the store, so a command can refuse to write its output over it;
  // nullopt for a server.
  std::optional<std::filesystem::path> file() const;
  int schema_version() const;  // the schema this store now has (always kSchemaVersion)
  static constexpr int kSchemaVersion = 5;

  // Calibrations: a second record of the same device and measured_at replaces the first.
  void put_calibration(const CalibrationRecord& record);
  // The newest calibration of a device, if any.
  std::optional<CalibrationRecord> latest_calibration(const std::string& device_uuid);

  // --- the tuning cache ---
  // Declares (or replaces) an op's bucket policy and default config; lookups of the op use them.
  void put_op(const OpSpec& spec);
  std::optional<OpSpec> get_op(const std::string& op);
  std::vector<OpSpec> ops();

  // Offers a tuning result. It becomes the winner of its key when the key is empty, when it is
  // faster beyond both results' noise, when the stored winner was invalidated, or when forced.
  // The entry's bucket is (re)computed from its shape and the op's policy (exact if none).
  PutResult put_entry(const CacheEntry& entry, bool force = false);

  // Exact key (all of CacheKey), invalidated entries included.
  std::optional<CacheEntry> get_entry(const CacheKey& key);
  std::vector<CacheEntry> list_entries(const EntryFilter& filter = {});
  // Removes the matching entries; returns how many.
  std::int64_t remove_entries(const EntryFilter& filter);
  // Marks matching entries invalid (never handed out again until a new winner replaces them);
  // with only_stale, only those stale relative to `current`. Returns how many were marked.
  std::int64_t invalidate(const EntryFilter& filter, const Environment& current, bool only_stale,
                          const std::string& reason);

  // exact bucket on this device -> nearest bucket of the op on this arch -> the op's default.
  LookupResult lookup(const LookupQuery& query);

  // Writes every entry and op spec of `pack` in one transaction after validating all of it;
  // entries go through the winner rule unless forced. Nothing is written if any part is bad.
  ImportResult import_pack(const Pack& pack, bool force = false);
  Pack export_pack(const EntryFilter& filter);

 private:
  friend class Baselines;
  friend class FleetStore;  // the fleet's tables (store/fleet.hpp) share this connection
  std::unique_ptr<detail::Backend> db_;
};

}  // namespace ktune::store

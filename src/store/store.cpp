// Opening a store, its schema migrations, and calibrations. The cache lives in cache.cpp.
#include "ktune/store/store.hpp"

#include <charconv>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "backend.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/paths.hpp"

namespace ktune::store {
namespace detail {

const std::string& Row::text(std::size_t i) const {
  static const std::string empty;
  const auto& c = cells.at(i);
  return c ? *c : empty;
}

std::int64_t Row::i64(std::size_t i) const {
  const std::string& s = text(i);
  std::int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

double Row::f64(std::size_t i) const {
  const std::string& s = text(i);
  return s.empty() ? 0.0 : std::stod(s);
}

std::string redact_url(const std::string& url) {
  std::string out = url;
  // user:PASSWORD@host
  if (auto scheme = out.find("://"); scheme != std::string::npos) {
    const auto start = scheme + 3;
    const auto at = out.find('@', start);
    const auto slash = out.find('/', start);
    if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
      const auto colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  // ?password=PASSWORD&...
  for (std::size_t pos = out.find("password="); pos != std::string::npos;
       pos = out.find("password=", pos + 1)) {
    const auto begin = pos + 9;
    auto end = out.find_first_of("& ", begin);
    if (end == std::string::npos) end = out.size();
    out.replace(begin, end - begin, "***");
  }
  return out;
}

void in_write_transaction(Backend& db, const std::function<void()>& fn) {
  constexpr int kAttempts = 8;
  for (int attempt = 1;; ++attempt) {
    db.begin_write();
    try {
      fn();
      db.commit();
      return;
    } catch (const RetryableConflict&) {
      db.rollback();
      if (attempt == kAttempts) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(5 * attempt));
    } catch (...) {
      db.rollback();
      throw;
    }
  }
}

}  // namespace detail

namespace {

using detail::Backend;

// Schema migrations: migration N takes a store from version N-1 to N. Append only; never edit a
// released one. SQL is the subset SQLite and PostgreSQL share.
const char* const kMigrations[] = {
    // 1: meta, calibrations, op specs, cache entries
    R"sql(
CREATE TABLE IF NOT EXISTS ktune_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE calibrations (
  device_uuid TEXT NOT NULL,
  measured_at TEXT NOT NULL,
  device_name TEXT NOT NULL,
  arch TEXT NOT NULL,
  sm_clock_mhz INTEGER NOT NULL,
  mem_clock_mhz INTEGER NOT NULL,
  dram_bytes_per_s DOUBLE PRECISION NOT NULL,
  fp32_flop_per_s DOUBLE PRECISION NOT NULL,
  bf16_flop_per_s DOUBLE PRECISION NOT NULL,
  fp16_flop_per_s DOUBLE PRECISION NOT NULL,
  details TEXT NOT NULL,
  PRIMARY KEY (device_uuid, measured_at));
CREATE TABLE cache_ops (
  op TEXT PRIMARY KEY,
  buckets TEXT NOT NULL,
  default_config TEXT,
  updated_at TEXT NOT NULL);
CREATE TABLE cache_entries (
  op TEXT NOT NULL,
  dtype TEXT NOT NULL,
  bucket TEXT NOT NULL,
  arch TEXT NOT NULL,
  device_name TEXT NOT NULL,
  toolkit TEXT NOT NULL,
  driver_major INTEGER NOT NULL,
  shape TEXT NOT NULL,
  config TEXT NOT NULL,
  median_ns DOUBLE PRECISION NOT NULL,
  noise_ns DOUBLE PRECISION NOT NULL,
  samples INTEGER NOT NULL,
  throughput DOUBLE PRECISION NOT NULL,
  throughput_unit TEXT NOT NULL,
  verification TEXT NOT NULL,
  ktune_version TEXT NOT NULL,
  ktune_commit TEXT NOT NULL,
  host TEXT NOT NULL,
  strategy TEXT NOT NULL,
  budget TEXT NOT NULL,
  created_at TEXT NOT NULL,
  invalidated_at TEXT,
  invalid_reason TEXT,
  PRIMARY KEY (op, dtype, bucket, arch, device_name, toolkit, driver_major));
)sql",
    // 2: the fallback query scans one op on one arch
    R"sql(
CREATE INDEX cache_entries_by_arch ON cache_entries (op, dtype, arch);
)sql",
};
static_assert(std::size(kMigrations) == Store::kSchemaVersion);

int stored_schema_version(Backend& db) {
  if (!db.table_exists("ktune_meta")) return 0;
  const auto rows = db.query("SELECT value FROM ktune_meta WHERE key = 'schema_version'");
  return rows.empty() ? 0 : static_cast<int>(rows[0].i64(0));
}

void refuse_newer(const Backend& db, int found) {
  throw Error(fmt::format(
      "the store {} has schema version {}, newer than this ktune understands ({}); upgrade "
      "ktune, or pass another --db (the store is left untouched).",
      db.describe(), found, Store::kSchemaVersion));
}

void migrate(Backend& db) {
  if (const int v = stored_schema_version(db); v > Store::kSchemaVersion)
    refuse_newer(db, v);
  else if (v == Store::kSchemaVersion)
    return;
  detail::in_write_transaction(db, [&] {
    db.lock_schema();
    const int v = stored_schema_version(db);  // another process may have migrated meanwhile
    if (v > Store::kSchemaVersion) refuse_newer(db, v);
    for (int next = v + 1; next <= Store::kSchemaVersion; ++next) db.script(kMigrations[next - 1]);
    db.exec(
        "INSERT INTO ktune_meta (key, value) VALUES ('schema_version', $1) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        {std::to_string(Store::kSchemaVersion)});
  });
}

using Opener = std::unique_ptr<Backend> (*)(const std::string&);

struct Scheme {
  Opener open;
  bool pass_whole_url;  // PostgreSQL parses the URL itself; SQLite wants the path after "sqlite:"
};

// Backends by URL scheme; a path with no scheme is a SQLite file.
const std::map<std::string, Scheme>& schemes() {
  static const std::map<std::string, Scheme> table = {
      {"sqlite", {&detail::open_sqlite, false}},
#ifdef KTUNE_WITH_POSTGRES
      {"postgresql", {&detail::open_postgres, true}},
      {"postgres", {&detail::open_postgres, true}},
#endif
  };
  return table;
}

}  // namespace

std::unique_ptr<Store> Store::open(const std::string& url) {
  if (url.empty()) return std::make_unique<Store>(detail::open_sqlite(default_db_path().string()));
  const auto colon = url.find(':');
  // "C:" style or a plain path: no scheme. A scheme is at least two letters before ':'.
  if (colon != std::string::npos && colon >= 2 &&
      url.find_first_not_of("abcdefghijklmnopqrstuvwxyz") == colon) {
    const std::string scheme = url.substr(0, colon);
    const auto it = schemes().find(scheme);
    if (it == schemes().end())
      throw Error(fmt::format(
          "unknown store scheme '{}' in --db {}; use a file path, sqlite:PATH or "
          "postgresql://user@host/db{}.",
          scheme, detail::redact_url(url),
#ifdef KTUNE_WITH_POSTGRES
          ""
#else
          " (this ktune was built without PostgreSQL support)"
#endif
          ));
    std::string location = url;
    if (!it->second.pass_whole_url) {
      location = url.substr(colon + 1);
      if (location.rfind("//", 0) == 0) location = location.substr(2);  // sqlite://PATH
    }
    return std::make_unique<Store>(it->second.open(location));
  }
  return std::make_unique<Store>(detail::open_sqlite(url));
}

Store::Store(std::unique_ptr<detail::Backend> backend) : db_(std::move(backend)) {
  migrate(*db_);
}

Store::~Store() = default;

std::string Store::describe() const {
  return db_->describe();
}

int Store::schema_version() const {
  return stored_schema_version(*db_);
}

void Store::put_calibration(const CalibrationRecord& r) {
  if (r.device_uuid.empty())
    throw Error("a calibration record needs the device UUID (CalibrationRecord::device_uuid).");
  detail::in_write_transaction(*db_, [&] {
    db_->exec(
        "INSERT INTO calibrations (device_uuid, measured_at, device_name, arch, sm_clock_mhz, "
        "mem_clock_mhz, dram_bytes_per_s, fp32_flop_per_s, bf16_flop_per_s, fp16_flop_per_s, "
        "details) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) "
        "ON CONFLICT (device_uuid, measured_at) DO UPDATE SET device_name = excluded.device_name, "
        "arch = excluded.arch, sm_clock_mhz = excluded.sm_clock_mhz, "
        "mem_clock_mhz = excluded.mem_clock_mhz, dram_bytes_per_s = excluded.dram_bytes_per_s, "
        "fp32_flop_per_s = excluded.fp32_flop_per_s, bf16_flop_per_s = excluded.bf16_flop_per_s, "
        "fp16_flop_per_s = excluded.fp16_flop_per_s, details = excluded.details",
        {r.device_uuid, r.measured_at, r.device_name, r.arch, std::int64_t{r.sm_clock_mhz},
         std::int64_t{r.mem_clock_mhz}, r.dram_bytes_per_s, r.fp32_flop_per_s, r.bf16_flop_per_s,
         r.fp16_flop_per_s, r.details.is_null() ? std::string("null") : r.details.dump()});
  });
}

std::optional<CalibrationRecord> Store::latest_calibration(const std::string& device_uuid) {
  const auto rows = db_->query(
      "SELECT device_uuid, device_name, arch, sm_clock_mhz, mem_clock_mhz, dram_bytes_per_s, "
      "fp32_flop_per_s, bf16_flop_per_s, fp16_flop_per_s, measured_at, details "
      "FROM calibrations WHERE device_uuid = $1 ORDER BY measured_at DESC LIMIT 1",
      {device_uuid});
  if (rows.empty()) return std::nullopt;
  const auto& row = rows[0];
  CalibrationRecord r;
  r.device_uuid = row.text(0);
  r.device_name = row.text(1);
  r.arch = row.text(2);
  r.sm_clock_mhz = static_cast<int>(row.i64(3));
  r.mem_clock_mhz = static_cast<int>(row.i64(4));
  r.dram_bytes_per_s = row.f64(5);
  r.fp32_flop_per_s = row.f64(6);
  r.bf16_flop_per_s = row.f64(7);
  r.fp16_flop_per_s = row.f64(8);
  r.measured_at = row.text(9);
  r.details = nlohmann::json::parse(row.text(10), nullptr, /*allow_exceptions=*/false);
  if (r.details.is_discarded())
    throw Error(
        fmt::format("the calibration of {} in the store {} has unreadable details JSON; "
                    "run `ktune calibrate` again to replace it.",
                    device_uuid, db_->describe()));
  return r;
}

}  // namespace ktune::store

// Opening a store, its schema migrations, and calibrations. The cache lives in cache.cpp.
#include "ktune/store/store.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <thread>
#include <type_traits>

#include <fmt/format.h>

#include "backend.hpp"
#include "columns.hpp"
#include "ktune/core/dtype.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/paths.hpp"

namespace ktune::store {
namespace detail {

const std::string& Row::text(std::size_t i) const {
  static const std::string empty;
  const auto& c = cells.at(i);
  return c ? *c : empty;
}

namespace {

// A number column holds what ktune wrote: the backends give doubles in their shortest round-trip
// form, subnormals included (std::stod refused 5e-324 as out of range). Anything else is damage,
// named, never read as 0.
template <typename T>
T number_cell(const std::string& s, std::size_t column) {
  T v{};
  if (s.empty()) return v;  // NULL
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() ||
      (std::is_floating_point_v<T> && !std::isfinite(static_cast<double>(v))))
    throw Error(fmt::format(
        "the store holds '{}' in number column {} of a row, which ktune never writes; the store "
        "was edited or damaged, so restore it from a backup or a tuning pack.",
        s.size() > 40 ? s.substr(0, 40) + "..." : s, column));
  return v;
}

}  // namespace

std::int64_t Row::i64(std::size_t i) const {
  return number_cell<std::int64_t>(text(i), i);
}

double Row::f64(std::size_t i) const {
  return number_cell<double>(text(i), i);
}

namespace {

struct Span {
  std::size_t begin, end;
};

// Where passwords sit in `t`: the userinfo of each URL, and each password=VALUE.
std::vector<Span> password_spans(std::string_view t) {
  std::vector<Span> spans;
  for (auto pos = t.find("://"); pos != std::string_view::npos; pos = t.find("://", pos + 3)) {
    const auto start = pos + 3;
    auto end = t.find_first_of(" \t\r\n", start);
    if (end == std::string_view::npos) end = t.size();
    // The userinfo ends at the URL's last '@': a password may hold '@', '/' or '?' typed raw, and
    // hiding a little too much of an odd URL is better than showing a password's tail.
    const auto at = t.substr(0, end).rfind('@');
    if (at == std::string_view::npos || at < start) continue;
    const auto colon = t.find(':', start);
    if (colon < at) spans.push_back({colon + 1, at});
  }
  std::string lower(t);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (auto pos = lower.find("password"); pos != std::string::npos;
       pos = lower.find("password", pos + 1)) {
    auto i = pos + 8;
    while (i < t.size() && std::isspace(static_cast<unsigned char>(t[i]))) ++i;
    if (i >= t.size() || t[i] != '=') continue;
    ++i;
    while (i < t.size() && std::isspace(static_cast<unsigned char>(t[i]))) ++i;
    auto end = i;
    if (end < t.size() && t[end] == '\'') {  // conninfo's quoted value, \' and \\ escaped
      for (++end; end < t.size() && t[end] != '\''; ++end)
        if (t[end] == '\\') ++end;
      end = std::min(end + 1, t.size());
    } else {
      end = std::min(t.find_first_of("& \t\r\n", i), t.size());
    }
    if (end > i) spans.push_back({i, end});
  }
  return spans;
}

void replace_all(std::string& s, std::string_view what, std::string_view with) {
  for (auto pos = s.find(what); pos != std::string::npos; pos = s.find(what, pos + with.size()))
    s.replace(pos, what.size(), with);
}

std::string percent_decoded(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

std::string redact_url(std::string_view text, std::string_view conninfo) {
  auto spans = password_spans(text);
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.begin > b.begin; });
  std::string out(text);
  std::size_t limit = out.size();  // spans are replaced back to front; overlaps merge
  for (const Span& sp : spans) {
    if (sp.begin >= limit) continue;
    const auto end = std::min(sp.end, limit);
    out.replace(sp.begin, end - sp.begin, "***");
    limit = sp.begin;
  }
  if (conninfo.empty()) return out;
  // The passwords of `conninfo`, and their pieces between URL delimiters: libpq names what it
  // misparsed ("retPW@host" as a host, "pa" as a port), and each piece is part of the secret.
  std::vector<std::string> secrets;
  for (const Span& sp : password_spans(conninfo)) {
    const std::string raw(conninfo.substr(sp.begin, sp.end - sp.begin));
    for (const std::string& whole : {raw, percent_decoded(raw)}) {
      secrets.push_back(whole);
      std::size_t from = 0;
      for (std::size_t i = 0; i <= whole.size(); ++i)
        if (i == whole.size() ||
            std::string_view("@/:?&#=;,'\\ ").find(whole[i]) != std::string_view::npos) {
          if (i > from) secrets.push_back(whole.substr(from, i - from));
          from = i + 1;
        }
    }
  }
  // A quoted token of the message that is any part of a password goes, however short.
  for (auto q = out.find('"'); q != std::string::npos;) {
    const auto close = out.find('"', q + 1);
    if (close == std::string::npos) break;
    const std::string token = out.substr(q + 1, close - q - 1);
    bool secret = false;
    for (const auto& s : secrets) secret |= !token.empty() && s.find(token) != std::string::npos;
    if (secret) {
      out.replace(q + 1, token.size(), "***");
      q = out.find('"', q + 5);
    } else {
      q = out.find('"', close + 1);
    }
  }
  // Elsewhere, pieces of three characters or more: shorter ones would hide ordinary words.
  std::sort(secrets.begin(), secrets.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const auto& s : secrets)
    if (s.size() >= 3 && s != "***") replace_all(out, s, "***");
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
    // 3: gate baselines, every sample of every run (baselines.cpp)
    R"sql(
CREATE TABLE gate_runs (
  run_id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  suite TEXT NOT NULL,
  benchmark TEXT NOT NULL,
  shape TEXT NOT NULL,
  device_name TEXT NOT NULL,
  arch TEXT NOT NULL,
  driver TEXT NOT NULL,
  toolkit TEXT NOT NULL,
  ktune_build TEXT NOT NULL,
  code_commit TEXT NOT NULL,
  label TEXT NOT NULL,
  config TEXT NOT NULL,
  recorded_at TEXT NOT NULL,
  sm_clock_mhz INTEGER NOT NULL,
  p50_ns DOUBLE PRECISION NOT NULL,
  sample_count INTEGER NOT NULL,
  samples TEXT NOT NULL);
CREATE INDEX gate_runs_by_benchmark ON gate_runs (benchmark, arch, device_name, recorded_at);
)sql",
    // 4: the fleet: ingested runs, their per-kernel aggregates, the tuning queue (store/fleet.hpp)
    R"sql(
CREATE TABLE fleet_runs (
  run_id TEXT PRIMARY KEY,
  location TEXT NOT NULL,
  host TEXT NOT NULL,
  pid BIGINT NOT NULL,
  started_at TEXT NOT NULL,
  job TEXT NOT NULL,
  build TEXT NOT NULL,
  rank TEXT NOT NULL,
  tags TEXT NOT NULL,
  complete INTEGER NOT NULL,
  launches BIGINT NOT NULL,
  ingested_at TEXT NOT NULL);
CREATE TABLE fleet_aggregates (
  run_id TEXT NOT NULL,
  kernel TEXT NOT NULL,
  grid TEXT NOT NULL,
  block TEXT NOT NULL,
  gpu TEXT NOT NULL,
  arch TEXT NOT NULL,
  driver TEXT NOT NULL,
  toolkit TEXT NOT NULL,
  build TEXT NOT NULL,
  job TEXT NOT NULL,
  started_at TEXT NOT NULL,
  calls BIGINT NOT NULL,
  total_ns BIGINT NOT NULL,
  min_ns BIGINT NOT NULL,
  max_ns BIGINT NOT NULL,
  sketch TEXT NOT NULL,
  PRIMARY KEY (run_id, kernel, grid, block, gpu, arch, driver, toolkit));
CREATE INDEX fleet_aggregates_by_kernel ON fleet_aggregates (kernel, build);
CREATE TABLE fleet_jobs (
  id TEXT PRIMARY KEY,
  spec TEXT NOT NULL,
  op TEXT NOT NULL,
  dtype TEXT NOT NULL,
  bucket TEXT NOT NULL,
  arch TEXT NOT NULL,
  toolkit TEXT NOT NULL,
  shape TEXT NOT NULL,
  budget BIGINT NOT NULL,
  priority DOUBLE PRECISION NOT NULL,
  state TEXT NOT NULL,
  worker TEXT NOT NULL,
  attempt BIGINT NOT NULL,
  lease_until_ms BIGINT NOT NULL,
  evaluations BIGINT NOT NULL,
  created_at TEXT NOT NULL,
  created_ms BIGINT NOT NULL,
  started_ms BIGINT NOT NULL,
  finished_ms BIGINT NOT NULL,
  result TEXT,
  error TEXT NOT NULL,
  UNIQUE (op, dtype, bucket, arch, toolkit));
CREATE INDEX fleet_jobs_by_state ON fleet_jobs (state, priority);
)sql",
    // 5: GEMM problems per run (ingest of --gemm-shapes traces), library jobs in the queue
    // (fleet_jobs.library; such a job's shape is its GEMM problem), and every cache dtype in its
    // one spelling (canonicalize_dtypes, after this script)
    R"sql(
CREATE TABLE fleet_gemms (
  run_id TEXT NOT NULL,
  op TEXT NOT NULL,
  dtype TEXT NOT NULL,
  shape TEXT NOT NULL,
  problem TEXT NOT NULL,
  gpu TEXT NOT NULL,
  arch TEXT NOT NULL,
  driver TEXT NOT NULL,
  toolkit TEXT NOT NULL,
  build TEXT NOT NULL,
  job TEXT NOT NULL,
  started_at TEXT NOT NULL,
  calls BIGINT NOT NULL,
  gpu_ns BIGINT NOT NULL,
  PRIMARY KEY (run_id, op, dtype, shape, gpu));
ALTER TABLE fleet_jobs ADD COLUMN library TEXT NOT NULL DEFAULT '';
)sql",
};

// Migration 5's data step: cache entries written under another spelling of a dtype ("bfloat16",
// "torch.float16,torch.float16") take its one name (core/dtype.hpp), so lookups, which now
// canonicalize, find them. Where both spellings hold an entry of one key, the faster one stays.
void canonicalize_dtypes(Backend& db) {
  const char* const same_key =
      "c.op = cache_entries.op AND c.bucket = cache_entries.bucket AND c.arch = "
      "cache_entries.arch AND c.device_name = cache_entries.device_name AND c.toolkit = "
      "cache_entries.toolkit AND c.driver_major = cache_entries.driver_major";
  for (const auto& row : db.query("SELECT DISTINCT dtype FROM cache_entries")) {
    const std::string given = row.text(0), canonical = canonical_dtype_key(given);
    if (canonical == given) continue;
    db.exec(fmt::format("DELETE FROM cache_entries WHERE dtype = $1 AND EXISTS (SELECT 1 FROM "
                        "cache_entries c WHERE c.dtype = $2 AND {} AND c.median_ns <= "
                        "cache_entries.median_ns)",
                        same_key),
            {given, canonical});
    db.exec(fmt::format("DELETE FROM cache_entries WHERE dtype = $2 AND EXISTS (SELECT 1 FROM "
                        "cache_entries c WHERE c.dtype = $1 AND {} AND c.median_ns < "
                        "cache_entries.median_ns)",
                        same_key),
            {given, canonical});
    db.exec("UPDATE cache_entries SET dtype = $2 WHERE dtype = $1", {given, canonical});
  }
}
static_assert(std::size(kMigrations) == Store::kSchemaVersion);

// 0: no store yet (no ktune_meta table, or one a migration created but never stamped). Any other
// stored value must be a version ktune wrote, 1 or more in decimal: a negative one indexed the
// migrations out of bounds, 4294967297 read as 1, and 'abc' as "no store", which would have run
// every migration again over the tables there.
int stored_schema_version(Backend& db) {
  if (!db.table_exists("ktune_meta")) return 0;
  const auto rows = db.query("SELECT value FROM ktune_meta WHERE key = 'schema_version'");
  if (rows.empty()) return 0;
  const std::string text = rows[0].text(0);
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 1)
    throw Error(fmt::format(
        "the store {} has schema version '{}', which no ktune writes (ktune_meta.schema_version "
        "must be a whole number from 1); the store was edited or damaged, so restore it from a "
        "backup or a tuning pack, or pass another --db (ktune leaves it untouched).",
        db.describe(), text.size() > 40 ? text.substr(0, 40) + "..." : text));
  return v;
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
    // Every process that found the schema old queues here; the version is read again after the
    // lock, so only the first one migrates and the others see its committed tables.
    db.lock_schema();
    const int v = stored_schema_version(db);
    if (v > Store::kSchemaVersion) refuse_newer(db, v);
    for (int next = v + 1; next <= Store::kSchemaVersion; ++next) {
      db.script(kMigrations[next - 1]);
      if (next == 5) canonicalize_dtypes(db);
    }
    db.exec(
        "INSERT INTO ktune_meta (key, value) VALUES ('schema_version', $1) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        {std::to_string(Store::kSchemaVersion)});
  });
}

// A reader neither creates nor migrates. Every migration so far only adds tables and indexes,
// so a store of any released schema can be read; one that changes what readers query must say so
// here.
void check_readable(Backend& db) {
  const int v = stored_schema_version(db);
  if (v > Store::kSchemaVersion) refuse_newer(db, v);
  if (v == 0)
    throw NoStoreYet(fmt::format(
        "there is no ktune store at {} yet; check --db, or store something first (ktune cache "
        "put or import, ktune tune).",
        db.describe()));
}

// "host=h user=u password=p": a PostgreSQL conninfo, not a path (it would become a SQLite file
// named after the password).
bool looks_like_conninfo(const std::string& text) {
  static const char* const kKeys[] = {"host",    "hostaddr",       "port",    "dbname",
                                      "user",    "password",       "sslmode", "options",
                                      "service", "connect_timeout"};
  const auto eq = text.find('=');
  if (eq == std::string::npos || text.find('/') < eq) return false;
  auto key = text.substr(0, eq);
  while (!key.empty() && key.back() == ' ') key.pop_back();
  for (const char* k : kKeys)
    if (key == k) return true;
  return false;
}

std::string lower_ascii(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Schemes ktune knows, in lower case; a path with no scheme is a SQLite file.
constexpr std::pair<std::string_view, Locator::Kind> kSchemes[] = {
    {"sqlite", Locator::Kind::sqlite},
    {"postgresql", Locator::Kind::postgresql},
    {"postgres", Locator::Kind::postgresql},
};

// A SQLite file name that would keep what is written: SQLite reads "" and ":memory:" as a private
// temporary database, and (built with URI names, as Debian's is) "file:..." in any case as a URI
// whose options (mode=memory, vfs=memdb) may store nothing, so each reported success and kept
// nothing.
void check_persists(const std::string& path, const std::string& given) {
  const bool uri = lower_ascii(std::string_view(path).substr(0, 5)) == "file:";
  if (path.empty() || path == ":memory:" || uri)
    throw Error(fmt::format(
        "--db {} names no file{}; give the store's path (sqlite:PATH or PATH), or leave "
        "--db out for the default store.",
        detail::redact_url(given),
        uri ? " (SQLite would read it as a URI, which may keep nothing on disk)" : ""));
}

}  // namespace

Locator parse_locator(const std::string& text) {
  if (text.empty()) return {Locator::Kind::sqlite, default_db_path().string(), true};
  if (text.find_first_not_of(" \t\r\n\v\f") == std::string::npos)
    throw Error(fmt::format(
        "--db '{}' is blank; give the store's path or postgresql:// URL, or leave --db out for "
        "the default store.",
        text));
  const auto colon = text.find(':');
  // A scheme is two letters or more before ':' ("C:" style or a plain path has none).
  const bool has_scheme = colon != std::string::npos && colon >= 2 &&
                          std::all_of(text.begin(), text.begin() + colon, [](char c) {
                            return std::isalpha(static_cast<unsigned char>(c)) != 0;
                          });
  if (has_scheme) {
    const std::string scheme = lower_ascii(std::string_view(text).substr(0, colon));
    const auto it = std::find_if(std::begin(kSchemes), std::end(kSchemes),
                                 [&](const auto& s) { return s.first == scheme; });
    if (it == std::end(kSchemes))
      throw Error(
          fmt::format("unknown store scheme '{}' in --db {}; use a file path, sqlite:PATH or "
                      "postgresql://user@host/db.",
                      scheme, detail::redact_url(text)));
    if (it->second == Locator::Kind::postgresql)
      return {Locator::Kind::postgresql, scheme + text.substr(colon)};
    std::string path = text.substr(colon + 1);
    if (path.rfind("//", 0) == 0) path = path.substr(2);  // sqlite://PATH
    check_persists(path, text);
    return {Locator::Kind::sqlite, path};
  }
  if (looks_like_conninfo(text))
    throw Error(fmt::format(
        "--db {} is a libpq key=value connection string, which ktune would take for a file name; "
        "write it as a URL: postgresql://user@host:port/db?sslmode=...",
        detail::redact_url(text)));
  check_persists(text, text);
  return {Locator::Kind::sqlite, text};
}

std::string describe_locator(const std::string& text) {
  try {
    const Locator where = parse_locator(text);
    return where.kind == Locator::Kind::sqlite ? where.location
                                               : detail::redact_url(where.location);
  } catch (const Error&) {
    return detail::redact_url(text);
  }
}

std::unique_ptr<Store> Store::open(const std::string& url, Access access) {
  const bool read_only = access == Access::read_only;
  const Locator where = parse_locator(url);
  if (where.kind == Locator::Kind::sqlite)
    return std::make_unique<Store>(detail::open_sqlite(where.location, read_only), access);
#ifdef KTUNE_WITH_POSTGRES
  return std::make_unique<Store>(detail::open_postgres(where.location, read_only), access);
#else
  throw Error(fmt::format(
      "--db {} names a PostgreSQL store, but this ktune was built without PostgreSQL support; "
      "use a SQLite file, or a ktune built with libpq.",
      detail::redact_url(url)));
#endif
}

Store::Store(std::unique_ptr<detail::Backend> backend, Access access) : db_(std::move(backend)) {
  if (access == Access::read_only)
    check_readable(*db_);
  else
    migrate(*db_);
}

Store::~Store() = default;

std::string Store::describe() const {
  return db_->describe();
}

std::optional<std::filesystem::path> Store::file() const {
  if (auto f = db_->file()) return std::filesystem::path(*f);
  return std::nullopt;
}

int Store::schema_version() const {
  return stored_schema_version(*db_);
}

namespace {

// calibrations; a device's records are keyed by when they were measured.
constexpr auto kCalibrations = detail::columns(
    "device_uuid", "measured_at", "device_name", "arch", "sm_clock_mhz", "mem_clock_mhz",
    "dram_bytes_per_s", "fp32_flop_per_s", "bf16_flop_per_s", "fp16_flop_per_s", "details");
constexpr std::size_t kCalibrationKey = kCalibrations["measured_at"] + 1;

}  // namespace

void Store::put_calibration(const CalibrationRecord& r) {
  if (r.device_uuid.empty())
    throw Error("a calibration record needs the device UUID (CalibrationRecord::device_uuid).");
  constexpr auto c = kCalibrations;
  detail::Params p(c.size());
  p[c["device_uuid"]] = r.device_uuid;
  p[c["measured_at"]] = r.measured_at;
  p[c["device_name"]] = r.device_name;
  p[c["arch"]] = r.arch;
  p[c["sm_clock_mhz"]] = std::int64_t{r.sm_clock_mhz};
  p[c["mem_clock_mhz"]] = std::int64_t{r.mem_clock_mhz};
  p[c["dram_bytes_per_s"]] = r.dram_bytes_per_s;
  p[c["fp32_flop_per_s"]] = r.fp32_flop_per_s;
  p[c["bf16_flop_per_s"]] = r.bf16_flop_per_s;
  p[c["fp16_flop_per_s"]] = r.fp16_flop_per_s;
  p[c["details"]] = r.details.is_null() ? std::string("null") : r.details.dump();
  std::string update;  // every column but the key takes the new record's value
  for (std::size_t i = kCalibrationKey; i < c.size(); ++i)
    update +=
        fmt::format("{}{} = excluded.{}", i > kCalibrationKey ? ", " : "", c.names[i], c.names[i]);
  detail::in_write_transaction(*db_, [&] {
    db_->exec(fmt::format("INSERT INTO calibrations ({}) VALUES ({}) ON CONFLICT (device_uuid, "
                          "measured_at) DO UPDATE SET {}",
                          c.list(), c.placeholders(), update),
              p);
  });
}

std::optional<CalibrationRecord> Store::latest_calibration(const std::string& device_uuid) {
  constexpr auto c = kCalibrations;
  const auto rows = db_->query(
      fmt::format("SELECT {} FROM calibrations WHERE device_uuid = $1 ORDER BY measured_at DESC "
                  "LIMIT 1",
                  c.list()),
      {device_uuid});
  if (rows.empty()) return std::nullopt;
  const auto& row = rows[0];
  CalibrationRecord r;
  r.device_uuid = row.text(c["device_uuid"]);
  r.device_name = row.text(c["device_name"]);
  r.arch = row.text(c["arch"]);
  r.sm_clock_mhz = static_cast<int>(row.i64(c["sm_clock_mhz"]));
  r.mem_clock_mhz = static_cast<int>(row.i64(c["mem_clock_mhz"]));
  r.dram_bytes_per_s = row.f64(c["dram_bytes_per_s"]);
  r.fp32_flop_per_s = row.f64(c["fp32_flop_per_s"]);
  r.bf16_flop_per_s = row.f64(c["bf16_flop_per_s"]);
  r.fp16_flop_per_s = row.f64(c["fp16_flop_per_s"]);
  r.measured_at = row.text(c["measured_at"]);
  r.details = nlohmann::json::parse(row.text(c["details"]), nullptr, /*allow_exceptions=*/false);
  if (r.details.is_discarded())
    throw Error(
        fmt::format("the calibration of {} in the store {} has unreadable details JSON; "
                    "run `ktune calibrate` again to replace it.",
                    device_uuid, db_->describe()));
  return r;
}

}  // namespace ktune::store

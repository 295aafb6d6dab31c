// The embedded backend: one SQLite file in WAL mode. Writers serialise with BEGIN IMMEDIATE and
// wait on each other through the busy timeout, so concurrent processes neither lose updates nor
// see SQLITE_BUSY in normal use.
#include <sqlite3.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "backend.hpp"
#include "ktune/store/sqlite.hpp"
#include "ktune/store/store.hpp"

namespace ktune::store::detail {
namespace {

constexpr int kBusyTimeoutMs = 60'000;  // a writer waits this long for another one to finish

// "$12" -> "?12": SQLite's numbered parameter, so one SQL text serves both backends.
std::string to_sqlite_placeholders(std::string_view sql) {
  std::string out;
  out.reserve(sql.size());
  for (std::size_t i = 0; i < sql.size(); ++i) {
    if (sql[i] == '$' && i + 1 < sql.size() && std::isdigit(static_cast<unsigned char>(sql[i + 1])))
      out += '?';
    else
      out += sql[i];
  }
  return out;
}

class SqliteBackend final : public Backend {
 public:
  SqliteBackend(std::string path, bool read_only) : path_(std::move(path)) {
    namespace fs = std::filesystem;
    // The path is one parse_locator accepted: it names a file SQLite keeps.
    const fs::path p(path_);
    std::error_code ec;
    if (read_only) {
      if (!fs::exists(p, ec))
        throw NoStoreYet(fmt::format(
            "there is no ktune store at {} yet; check --db, or store something first (ktune "
            "cache put or import, ktune tune).",
            path_));
    } else if (p.has_parent_path() && !fs::is_directory(p.parent_path(), ec)) {
      fs::create_directories(p.parent_path(), ec);
      if (ec)
        throw Error(
            fmt::format("cannot create the directory {} for the store {}: {}; pass another "
                        "--db.",
                        p.parent_path().string(), path_, ec.message()));
    }
    open(read_only ? open_flags_for_reading() : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    try {
      check_is_store();
    } catch (const Error&) {
      // A WAL database in a directory this user cannot write: SQLite cannot make the -wal and
      // -shm files beside it, so read it as immutable (no writer can change it there either).
      const int primary = db_.last_error_code() & 0xff;
      if (!read_only || (primary != SQLITE_CANTOPEN && primary != SQLITE_READONLY)) throw;
      open(SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, "file:" + uri_escaped(path_) + "?immutable=1");
      check_is_store();
    }
    try {
      if (read_only)
        script("PRAGMA query_only = ON; PRAGMA foreign_keys = ON;");
      else {
        enter_wal();
        script("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;");
      }
    } catch (...) {
      db_.close();
      throw;
    }
  }
  std::string describe() const override { return path_; }
  std::optional<std::string> file() const override { return path_; }

  std::int64_t exec(std::string_view sql, const Params& params) override {
    Statement st(*this, sql, params);
    while (st.step()) {
    }
    return sqlite3_changes64(db_.get());
  }

  std::vector<Row> query(std::string_view sql, const Params& params) override {
    Statement st(*this, sql, params);
    std::vector<Row> rows;
    while (st.step()) {
      Row row;
      const int n = sqlite3_column_count(st.get());
      row.cells.reserve(n);
      for (int i = 0; i < n; ++i) {
        switch (sqlite3_column_type(st.get(), i)) {
          case SQLITE_NULL:
            row.cells.emplace_back(std::nullopt);
            break;
          case SQLITE_FLOAT:  // SQLite's own text form keeps only 15 digits
            row.cells.emplace_back(fmt::format("{}", sqlite3_column_double(st.get(), i)));
            break;
          default: {
            const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(st.get(), i));
            row.cells.emplace_back(std::string(t ? t : "", sqlite3_column_bytes(st.get(), i)));
          }
        }
      }
      rows.push_back(std::move(row));
    }
    return rows;
  }

  void script(std::string_view sql) override { db_.exec(std::string(sql)); }

  void begin_write() override { script("BEGIN IMMEDIATE"); }
  void commit() override { script("COMMIT"); }
  void rollback() noexcept override {
    if (!sqlite3_get_autocommit(db_.get()))
      sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
  }
  std::string_view for_update() const override { return ""; }  // BEGIN IMMEDIATE locked it all
  void lock_schema() override {}
  bool table_exists(const std::string& name) override {
    return !query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = $1", {name}).empty();
  }

 private:
  // A reader that may write the file opens it read-write (no create) with query_only set, so the
  // last connection still checkpoints and removes the -wal and -shm files it used.
  int open_flags_for_reading() const {
    const bool writable = ::access(path_.c_str(), W_OK) == 0 &&
                          ::access(std::filesystem::path(path_).parent_path().empty()
                                       ? "."
                                       : std::filesystem::path(path_).parent_path().c_str(),
                                   W_OK) == 0;
    return writable ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY;
  }

  static std::string uri_escaped(const std::string& path) {
    std::string out;
    for (const char c : path) {
      if (c == '%' || c == '?' || c == '#')
        out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
      else
        out += c;
    }
    return out;
  }

  void open(int flags, const std::string& name = {}) {
    db_ = sqlite::Connection(
        name.empty() ? path_ : name, flags | SQLITE_OPEN_NOMUTEX,
        [&](std::string_view msg, int) {
          return fmt::format(
              "cannot open the store {}: {}; check the path exists and is writable, or pass "
              "another --db.",
              path_, msg);
        },
        [this](std::string_view msg, int code) { return failure(msg, code); });
    sqlite3_busy_timeout(db_.get(), kBusyTimeoutMs);
    sqlite3_extended_result_codes(db_.get(), 1);
  }

  // Turning a file into WAL mode takes an exclusive lock for which SQLite does not call the busy
  // handler: when several processes open a fresh store at once, all but one used to fail at once
  // with "database is locked". Retry until the busy timeout, as every other write waits.
  void enter_wal() {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
    for (;;) {
      try {
        script("PRAGMA journal_mode = WAL");
        return;
      } catch (const Error&) {
        if ((db_.last_error_code() & 0xff) != SQLITE_BUSY ||
            std::chrono::steady_clock::now() >= deadline)
          throw;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  // Read before writing anything: a file that is not a database, or a database that is not a
  // ktune store, is refused untouched.
  void check_is_store() {
    try {
      const auto tables = query("SELECT name FROM sqlite_master WHERE type = 'table'", {});
      bool has_meta = false;
      for (const auto& r : tables) has_meta |= r.text(0) == "ktune_meta";
      if (!tables.empty() && !has_meta)
        throw Error(fmt::format(
            "{} is a SQLite database but not a ktune store (it has no ktune_meta table); pass "
            "another --db path, ktune leaves this file untouched.",
            path_));
    } catch (...) {
      db_.close();
      throw;
    }
  }

  // The sentence for a failed call, by SQLite's (extended) result code.
  std::string failure(std::string_view msg, int code) const {
    const int primary = code & 0xff;
    if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT)
      return fmt::format(
          "the store {} is not a readable SQLite database ({}); ktune leaves it untouched: move "
          "it aside and re-import a tuning pack, or pass another --db.",
          path_, msg);
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
      return fmt::format(
          "the store {} stayed locked by another writer for {} s ({}); retry when that process "
          "ends.",
          path_, kBusyTimeoutMs / 1000, msg);
    if (primary == SQLITE_READONLY || primary == SQLITE_CANTOPEN || primary == SQLITE_IOERR)
      return fmt::format(
          "the store {} cannot be written ({}); check its permissions and free disk space, or "
          "pass another --db.",
          path_, msg);
    return fmt::format("the store {} failed: {} (SQLite code {}).", path_, msg, code);
  }

  // One statement with its parameters bound ($N placeholders, as backend.hpp writes SQL).
  class Statement : public sqlite::Statement {
   public:
    Statement(SqliteBackend& b, std::string_view sql, const Params& params)
        : sqlite::Statement(b.db_, to_sqlite_placeholders(sql)) {
      for (std::size_t i = 0; i < params.size(); ++i) {
        const int idx = static_cast<int>(i) + 1;
        if (auto* v = std::get_if<std::int64_t>(&params[i]))
          bind(idx, *v);
        else if (auto* d = std::get_if<double>(&params[i]))
          bind(idx, *d);
        else if (auto* s = std::get_if<std::string>(&params[i]))
          bind(idx, std::string_view(*s));
        else
          bind_null(idx);
      }
    }
  };

  std::string path_;
  sqlite::Connection db_;
};

}  // namespace

std::unique_ptr<Backend> open_sqlite(const std::string& location, bool read_only) {
  return std::make_unique<SqliteBackend>(location, read_only);
}

}  // namespace ktune::store::detail

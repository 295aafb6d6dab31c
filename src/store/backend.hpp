#pragma once
// What a store backend does: run SQL. Every rule of the store (schema, winner, fallback,
// staleness, packs) lives once in store.cpp on top of these few calls, so SQLite and PostgreSQL
// cannot drift apart. SQL is written once in the dialect both accept, with $1..$N placeholders.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ktune/core/error.hpp"

namespace ktune::store::detail {

using Param = std::variant<std::nullptr_t, std::int64_t, double, std::string>;
using Params = std::vector<Param>;

struct Row {
  std::vector<std::optional<std::string>> cells;  // text form of each column; nullopt = NULL
  bool is_null(std::size_t i) const { return !cells.at(i).has_value(); }
  const std::string& text(std::size_t i) const;  // "" for NULL
  std::int64_t i64(std::size_t i) const;
  double f64(std::size_t i) const;
};

// Thrown by a backend when a write transaction lost a race it may win on a retry
// (PostgreSQL deadlock or serialization failure); the store re-runs the transaction.
class RetryableConflict : public Error {
 public:
  using Error::Error;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string describe() const = 0;  // path or URL with the password hidden
  virtual std::optional<std::string> file() const { return std::nullopt; }  // SQLite's path

  // One statement; returns the number of rows it changed.
  virtual std::int64_t exec(std::string_view sql, const Params& params = {}) = 0;
  virtual std::vector<Row> query(std::string_view sql, const Params& params = {}) = 0;
  // Several statements without parameters (schema migrations).
  virtual void script(std::string_view sql) = 0;

  // A transaction that serialises with every other writer of the store from its first statement
  // (SQLite: BEGIN IMMEDIATE; PostgreSQL: BEGIN, plus row locks taken with for_update()).
  virtual void begin_write() = 0;
  virtual void commit() = 0;
  virtual void rollback() noexcept = 0;
  // Suffix for a SELECT whose rows the transaction is about to update: "" or " FOR UPDATE".
  virtual std::string_view for_update() const = 0;
  // Inside begin_write: keeps two processes from migrating the schema at the same moment.
  virtual void lock_schema() = 0;
  virtual bool table_exists(const std::string& name) = 0;
};

// `location` is what follows the scheme: a file path for SQLite, the whole URL for PostgreSQL.
// read_only: open an existing store without creating anything, every write refused.
std::unique_ptr<Backend> open_sqlite(const std::string& location, bool read_only = false);
std::unique_ptr<Backend> open_postgres(const std::string& url, bool read_only = false);

// The one redaction of secrets, for every form a store location or a message about it takes:
// URL userinfo (user:PASS@host, PASS may itself hold '@', '/' or ':'), password=PASS in a URL
// query or a key=value conninfo string (any letter case, quoted or not). With `conninfo`, the
// passwords it holds are also hidden wherever they, or pieces of them, appear in `text`: libpq
// repeats a misparsed password as a host name or port in its messages.
std::string redact_url(std::string_view text, std::string_view conninfo = {});

// Runs fn inside begin_write/commit, rolling back on any exception and re-running it (a few
// times) when the backend reports a RetryableConflict.
void in_write_transaction(Backend& db, const std::function<void()>& fn);

}  // namespace ktune::store::detail

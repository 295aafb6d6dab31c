#pragma once
// The one RAII owner of a SQLite connection and of a prepared statement, shared by the store's
// SQLite backend (src/store/sqlite_backend.cpp) and the .ktrace file (src/trace/ktrace.cpp). Not
// an API for ktune's users: each owner words SQLite's failures as its own one sentence (a store
// and a trace file need different fixes), so a connection carries that wording and every failed
// call throws ktune::Error with it. Header-only: the injected tracer links the .ktrace writer and
// must not pull in the rest of the store (libpq).
#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "ktune/core/error.hpp"

namespace ktune::store::sqlite {

// Builds the owner's sentence from SQLite's message and (extended) result code.
using Sentence = std::function<std::string(std::string_view message, int code)>;

class Connection {
 public:
  Connection() = default;
  // Opens `name` (a path, or a file: URI with SQLITE_OPEN_URI) with `flags`. A failure throws
  // ktune::Error(cannot_open(message, code)); every later failure is worded by `failed`.
  Connection(const std::string& name, int flags, const Sentence& cannot_open, Sentence failed)
      : failed_(std::move(failed)) {
    const int rc = sqlite3_open_v2(name.c_str(), &db_, flags, nullptr);
    if (rc != SQLITE_OK) {
      const std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      close();
      throw Error(cannot_open(msg, rc));
    }
  }
  ~Connection() { close(); }
  Connection(Connection&& o) noexcept { *this = std::move(o); }
  Connection& operator=(Connection&& o) noexcept {
    if (this != &o) {
      close();
      db_ = std::exchange(o.db_, nullptr);
      failed_ = std::move(o.failed_);
      last_error_code_ = o.last_error_code_;
    }
    return *this;
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* get() const { return db_; }
  // From now on, failures are worded by `failed` (an owner that probes a file before it knows
  // what the file is words the probe's failures itself).
  void reword(Sentence failed) { failed_ = std::move(failed); }
  explicit operator bool() const { return db_ != nullptr; }
  // Closes now (statements must be gone first); last_error_code() stays readable.
  void close() noexcept {
    if (db_) sqlite3_close_v2(db_);
    db_ = nullptr;
  }

  // Runs `sql`: any number of statements, no parameters.
  void exec(const std::string& sql) const {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      const std::string msg = err ? err : sqlite3_errmsg(db_);
      sqlite3_free(err);
      fail(msg, sqlite3_extended_errcode(db_));
    }
  }

  // Throws the owner's sentence for SQLite's latest error on this connection, or for `message`.
  [[noreturn]] void fail() const { fail(sqlite3_errmsg(db_), sqlite3_extended_errcode(db_)); }
  [[noreturn]] void fail(std::string_view message, int code) const {
    last_error_code_ = code;
    throw Error(failed_ ? failed_(message, code) : std::string(message));
  }
  // The code of the last failure thrown (SQLITE_OK: none), e.g. to tell "cannot open" apart.
  int last_error_code() const { return last_error_code_; }

 private:
  sqlite3* db_ = nullptr;
  Sentence failed_;
  mutable int last_error_code_ = SQLITE_OK;
};

class Statement {
 public:
  Statement() = default;
  // `prepare_flags`: SQLITE_PREPARE_PERSISTENT for a statement run many times.
  Statement(const Connection& db, std::string_view sql, unsigned prepare_flags = 0) : db_(&db) {
    if (sqlite3_prepare_v3(db.get(), sql.data(), static_cast<int>(sql.size()), prepare_flags,
                           &stmt_, nullptr) != SQLITE_OK)
      db.fail();
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(Statement&& o) noexcept { *this = std::move(o); }
  Statement& operator=(Statement&& o) noexcept {
    std::swap(db_, o.db_);
    std::swap(stmt_, o.stmt_);
    return *this;
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters count from 1, as in SQL's ?1. Text is copied.
  void bind(int index, std::int64_t v) { check(sqlite3_bind_int64(stmt_, index, v)); }
  void bind(int index, double v) { check(sqlite3_bind_double(stmt_, index, v)); }
  void bind(int index, std::string_view v) {
    check(sqlite3_bind_text(stmt_, index, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  void bind_null(int index) { check(sqlite3_bind_null(stmt_, index)); }

  // true: a row is ready; false: done. Anything else throws the connection's sentence.
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) db_->fail();
    return false;
  }
  // Runs a statement that returns no rows, then makes it ready to run again (bindings kept).
  void run() {
    while (step()) {
    }
    reset();
  }
  void reset() { sqlite3_reset(stmt_); }

  std::int64_t i64(int col) const { return sqlite3_column_int64(stmt_, col); }
  double f64(int col) const { return sqlite3_column_double(stmt_, col); }
  std::string text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col))) : "";
  }
  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  sqlite3_stmt* get() const { return stmt_; }

 private:
  void check(int rc) const {
    if (rc != SQLITE_OK) db_->fail(sqlite3_errmsg(db_->get()), rc);
  }

  const Connection* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace ktune::store::sqlite

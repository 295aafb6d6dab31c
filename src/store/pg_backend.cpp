// The shared backend: PostgreSQL through libpq. Writers take row locks (SELECT ... FOR UPDATE)
// inside READ COMMITTED transactions; a deadlock or serialization failure is retried by the store.
#include <libpq-fe.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend.hpp"

namespace ktune::store::detail {
namespace {

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

std::string first_line(const char* msg) {
  std::string s = msg ? msg : "";
  if (auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  while (!s.empty() && (s.back() == ' ' || s.back() == '.')) s.pop_back();
  return s;
}

// Defaults that keep a silent server from hanging ktune for ever; the URL's own values win.
constexpr const char* kConnectTimeoutS = "10";     // libpq's connect_timeout: the whole handshake
constexpr const char* kStatementTimeout = "120s";  // long enough to queue behind a big import

class PgBackend final : public Backend {
 public:
  PgBackend(const std::string& url, bool read_only) : url_(url), shown_(redact_url(url)) {
    // Keywords before "dbname" are overridden by what the expanded URL itself says.
    std::vector<const char*> keys, values;
    if (!std::getenv("PGCONNECT_TIMEOUT")) {
      keys.push_back("connect_timeout");
      values.push_back(kConnectTimeoutS);
    }
    keys.push_back("dbname");
    values.push_back(url.c_str());
    keys.push_back(nullptr);
    values.push_back(nullptr);
    conn_ = PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1);
    if (!conn_ || PQstatus(conn_) != CONNECTION_OK) {
      const std::string why = message(conn_ ? PQerrorMessage(conn_) : "out of memory");
      PQfinish(conn_);
      conn_ = nullptr;
      throw Error(fmt::format(
          "cannot connect to the PostgreSQL store {}: {}; check that the server is running and "
          "the URL (user, host, port, database) is right.",
          shown_, why));
    }
    // Quiet NOTICEs ("relation already exists, skipping") that would otherwise go to stderr.
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
    try {
      if (!options_set("statement_timeout"))
        script(fmt::format("SET statement_timeout = '{}'", kStatementTimeout));
      if (read_only) script("SET default_transaction_read_only = on");
    } catch (...) {
      PQfinish(conn_);
      conn_ = nullptr;
      throw;
    }
  }
  ~PgBackend() override { PQfinish(conn_); }

  std::string describe() const override { return shown_; }

  std::int64_t exec(std::string_view sql, const Params& params) override {
    Result r = run(sql, params);
    const char* n = PQcmdTuples(r.get());
    return (n && *n) ? std::stoll(n) : 0;
  }

  std::vector<Row> query(std::string_view sql, const Params& params) override {
    Result r = run(sql, params);
    const int rows = PQntuples(r.get()), cols = PQnfields(r.get());
    std::vector<Row> out(rows);
    for (int i = 0; i < rows; ++i) {
      out[i].cells.reserve(cols);
      for (int c = 0; c < cols; ++c) {
        if (PQgetisnull(r.get(), i, c))
          out[i].cells.emplace_back(std::nullopt);
        else
          out[i].cells.emplace_back(
              std::string(PQgetvalue(r.get(), i, c), PQgetlength(r.get(), i, c)));
      }
    }
    return out;
  }

  void script(std::string_view sql) override {
    Result r(PQexec(conn_, std::string(sql).c_str()));
    check(r.get(), sql);
  }

  void begin_write() override { script("BEGIN"); }
  void commit() override { script("COMMIT"); }
  void rollback() noexcept override {
    if (PQtransactionStatus(conn_) != PQTRANS_IDLE) PQclear(PQexec(conn_, "ROLLBACK"));
  }
  std::string_view for_update() const override { return " FOR UPDATE"; }
  void lock_schema() override {
    // One number for "ktune schema migration" (ASCII "ktun"); released at COMMIT/ROLLBACK.
    script("SELECT pg_advisory_xact_lock(1802794094)");
  }
  bool table_exists(const std::string& name) override {
    // A catalog query, not to_regclass(): that one answers from this session's catalog cache,
    // which still says "no such table" after another session's migration committed while this
    // one waited for the schema lock.
    return !query(
                "SELECT 1 FROM pg_catalog.pg_tables WHERE schemaname = current_schema() AND "
                "tablename = $1",
                {name})
                .empty();
  }

 private:
  // A libpq message, first line, with every trace of the URL's password removed.
  std::string message(const char* msg) const { return redact_url(first_line(msg), url_); }

  // Whether the connection's "options" (from the URL or PGOPTIONS) set this server setting.
  bool options_set(std::string_view setting) const {
    PQconninfoOption* info = PQconninfo(conn_);
    bool found = false;
    for (auto* o = info; o && o->keyword; ++o)
      if (std::strcmp(o->keyword, "options") == 0 && o->val)
        found = std::string_view(o->val).find(setting) != std::string_view::npos;
    PQconninfoFree(info);
    return found;
  }

  Result run(std::string_view sql, const Params& params) {
    std::vector<std::string> text(params.size());
    std::vector<const char*> values(params.size(), nullptr);
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (auto* v = std::get_if<std::int64_t>(&params[i]))
        text[i] = std::to_string(*v);
      else if (auto* d = std::get_if<double>(&params[i]))
        text[i] = fmt::format("{}", *d);  // shortest form that reads back to the same double
      else if (auto* s = std::get_if<std::string>(&params[i]))
        text[i] = *s;
      else
        continue;
      values[i] = text[i].c_str();
    }
    Result r(PQexecParams(conn_, std::string(sql).c_str(), static_cast<int>(params.size()), nullptr,
                          values.data(), nullptr, nullptr, 0));
    check(r.get(), sql);
    return r;
  }

  void check(PGresult* r, std::string_view sql) {
    const auto status = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return;
    const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    const std::string why = message(r ? PQresultErrorMessage(r) : PQerrorMessage(conn_));
    if (state && (std::strcmp(state, "40001") == 0 || std::strcmp(state, "40P01") == 0))
      throw RetryableConflict(
          fmt::format("the PostgreSQL store {} reported a conflict: {}.", shown_, why));
    if (PQstatus(conn_) != CONNECTION_OK)
      throw Error(fmt::format(
          "lost the connection to the PostgreSQL store {}: {}; check the server and retry.", shown_,
          why));
    throw Error(fmt::format("the PostgreSQL store {} failed: {} (statement: {}).", shown_, why,
                            first_line(std::string(sql).c_str())));
  }

  std::string url_;  // kept to hide its password in libpq's messages; never shown
  std::string shown_;
  PGconn* conn_ = nullptr;
};

}  // namespace

std::unique_ptr<Backend> open_postgres(const std::string& url, bool read_only) {
  return std::make_unique<PgBackend>(url, read_only);
}

}  // namespace ktune::store::detail

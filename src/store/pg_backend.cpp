// The shared backend: PostgreSQL through libpq. Writers take row locks (SELECT ... FOR UPDATE)
// inside READ COMMITTED transactions; a deadlock, serialization failure or a lost race to insert
// the same key is retried by the store. Every call is bounded in time on this side too: a server
// that froze or a network that dropped never answers, and the server's statement_timeout cannot
// help then, so each statement runs on a non-blocking connection with a client-side deadline.
#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend.hpp"
#include "ktune/core/text.hpp"
#include "ktune/store/store.hpp"

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

// The start of a statement for a message: its first line, at most 100 characters (a multi-row
// INSERT is one line of thousands of placeholders).
std::string statement_head(std::string_view sql) {
  std::string s = first_line(std::string(sql).c_str());
  if (s.size() > 100) s = s.substr(0, 100) + "...";
  return s;
}

// SQLSTATEs after which the same transaction may succeed when run again: serialization failure,
// deadlock, and unique violation (two writers that both found a key absent and both inserted it,
// as two `ingest` runs of the same trace do; on the retry the loser finds the winner's row).
bool retryable_state(std::string_view state) {
  return state == "40001" || state == "40P01" || state == "23505";
}

// Connection exceptions (class 08) and the server shutting down or starting (57P01..57P03):
// the store is not reachable now, and may be again.
bool unavailable_state(std::string_view state) {
  return state.substr(0, 2) == "08" || state == "57P01" || state == "57P02" || state == "57P03";
}

// Defaults that keep a silent server from hanging ktune for ever; the URL's own values win.
constexpr const char* kConnectTimeoutS = "10";  // libpq's connect_timeout: the whole handshake
// TCP keepalives find a dead peer of an idle connection; tcp_user_timeout bounds how long sent
// data may stay unacknowledged (a dropped network) before the kernel gives the connection up.
constexpr std::pair<const char*, const char*> kConnectionDefaults[] = {
    {"keepalives", "1"},       {"keepalives_idle", "15"},     {"keepalives_interval", "5"},
    {"keepalives_count", "3"}, {"tcp_user_timeout", "30000"},
};
constexpr const char* kStatementTimeout = "120s";  // long enough to queue behind a big import
constexpr std::int64_t kStatementTimeoutMs = 120'000;

// How long this side waits for a statement's answer: the server's own statement_timeout, plus a
// quarter of it (at least 2 s) for the answer to travel. 0: the user turned the timeout off.
std::chrono::milliseconds client_deadline(std::int64_t statement_timeout_ms) {
  if (statement_timeout_ms <= 0) return std::chrono::milliseconds(0);
  return std::chrono::milliseconds(statement_timeout_ms +
                                   std::max<std::int64_t>(2000, statement_timeout_ms / 4));
}

class PgBackend final : public Backend {
 public:
  PgBackend(const std::string& url, bool read_only) : url_(url), shown_(redact_url(url)) {
    // Keywords before "dbname" are overridden by what the expanded URL itself says.
    std::vector<const char*> keys, values;
    if (!std::getenv("PGCONNECT_TIMEOUT")) {
      keys.push_back("connect_timeout");
      values.push_back(kConnectTimeoutS);
    }
    for (const auto& [key, value] : kConnectionDefaults) {
      keys.push_back(key);
      values.push_back(value);
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
      throw StoreUnavailable(fmt::format(
          "cannot connect to the PostgreSQL store {}: {}; check that the server is running and "
          "the URL (user, host, port, database) is right.",
          shown_, why));
    }
    // Quiet NOTICEs ("relation already exists, skipping") that would otherwise go to stderr.
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
    // From here every statement waits through poll() with a deadline (execute()).
    PQsetnonblocking(conn_, 1);
    try {
      // The handshake's own answer is bounded by connect_timeout; until the server's timeout is
      // known, the default's deadline bounds the first statements.
      deadline_ = client_deadline(kStatementTimeoutMs);
      if (!options_set("statement_timeout"))
        script(fmt::format("SET statement_timeout = '{}'", kStatementTimeout));
      else
        deadline_ = client_deadline(
            query("SELECT setting FROM pg_catalog.pg_settings WHERE name = 'statement_timeout'", {})
                .at(0)
                .i64(0));
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
    const std::string text(sql);
    Result r = execute([&] { return PQsendQuery(conn_, text.c_str()); }, sql);
    check(r.get(), sql);
  }

  void begin_write() override { script("BEGIN"); }
  void commit() override { script("COMMIT"); }
  void rollback() noexcept override {
    if (!conn_ || PQtransactionStatus(conn_) == PQTRANS_IDLE) return;
    try {
      script("ROLLBACK");
    } catch (...) {
      // The connection is gone or broken: the server rolls the transaction back itself.
    }
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
        text[i] = valid_utf8(*s);  // text from traced programs need not be UTF-8; the server's is
      else
        continue;
      values[i] = text[i].c_str();
    }
    const std::string statement(sql);
    Result r = execute(
        [&] {
          return PQsendQueryParams(conn_, statement.c_str(), static_cast<int>(params.size()),
                                   nullptr, values.data(), nullptr, nullptr, 0);
        },
        sql);
    check(r.get(), sql);
    return r;
  }

  // Sends a query with `send` and collects its results, waiting at most deadline_ in all. Of
  // several results (a script), the first error or else the last one. The connection is closed,
  // and StoreUnavailable thrown, when it breaks or the deadline passes: what the server did with
  // the statement is then unknown, so the connection cannot be used for another.
  template <class Send>
  Result execute(const Send& send, std::string_view sql) {
    if (!conn_)
      throw StoreUnavailable(fmt::format(
          "the connection to the PostgreSQL store {} was closed after an earlier failure; open "
          "the store again.",
          shown_));
    const auto start = std::chrono::steady_clock::now();
    if (!send()) lost(PQerrorMessage(conn_));
    for (;;) {  // the whole query out, reading whatever the server says meanwhile
      const int flushed = PQflush(conn_);
      if (flushed == 0) break;
      if (flushed < 0) lost(PQerrorMessage(conn_));
      if (wait(POLLIN | POLLOUT, start, sql) & POLLIN) consume();
    }
    Result kept;
    for (;;) {
      while (PQisBusy(conn_)) {
        wait(POLLIN, start, sql);
        consume();
      }
      Result r(PQgetResult(conn_));
      if (!r) break;
      const auto status = PQresultStatus(r.get());
      const bool failed = status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK;
      if (!kept || (failed && (PQresultStatus(kept.get()) == PGRES_COMMAND_OK ||
                               PQresultStatus(kept.get()) == PGRES_TUPLES_OK)))
        kept = std::move(r);
    }
    return kept;
  }

  // Waits until the socket is ready for `events`; returns the events seen.
  short wait(short events, std::chrono::steady_clock::time_point start, std::string_view sql) {
    for (;;) {
      int timeout_ms = -1;
      if (deadline_.count() > 0) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            start + deadline_ - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
          PQfinish(conn_);
          conn_ = nullptr;
          throw StoreUnavailable(fmt::format(
              "the PostgreSQL store {} did not answer within {:.0f} s (statement: {}); the "
              "server or the network to it is down or frozen: check them, then retry.",
              shown_, deadline_.count() / 1000.0, statement_head(sql)));
        }
        timeout_ms = static_cast<int>(std::min<std::int64_t>(left.count(), 1 << 30));
      }
      pollfd p{PQsocket(conn_), events, 0};
      const int n = ::poll(&p, 1, timeout_ms);
      if (n > 0)
        return static_cast<short>(p.revents | ((p.revents & (POLLERR | POLLHUP)) ? POLLIN : 0));
      if (n < 0 && errno != EINTR) lost(std::strerror(errno));
    }
  }

  void consume() {
    if (!PQconsumeInput(conn_)) lost(PQerrorMessage(conn_));
  }

  [[noreturn]] void lost(const char* why) {
    const std::string text = message(why);
    PQfinish(conn_);
    conn_ = nullptr;
    throw StoreUnavailable(fmt::format(
        "lost the connection to the PostgreSQL store {}: {}; check the server and retry.", shown_,
        text));
  }

  void check(PGresult* r, std::string_view sql) {
    const auto status = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return;
    const char* state_text = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
    const std::string_view state = state_text ? state_text : "";
    const std::string why = message(r ? PQresultErrorMessage(r) : PQerrorMessage(conn_));
    if (retryable_state(state))
      throw RetryableConflict(
          fmt::format("the PostgreSQL store {} reported a conflict: {}.", shown_, why));
    if (PQstatus(conn_) != CONNECTION_OK || unavailable_state(state)) lost(why.c_str());
    throw Error(fmt::format("the PostgreSQL store {} failed: {} (statement: {}).", shown_, why,
                            statement_head(sql)));
  }

  std::string url_;  // kept to hide its password in libpq's messages; never shown
  std::string shown_;
  PGconn* conn_ = nullptr;
  std::chrono::milliseconds deadline_{0};  // per statement, this side; 0: none
};

}  // namespace

std::unique_ptr<Backend> open_postgres(const std::string& url, bool read_only) {
  return std::make_unique<PgBackend>(url, read_only);
}

}  // namespace ktune::store::detail

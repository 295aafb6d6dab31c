#include "store_fixture.hpp"

#ifdef KTUNE_WITH_POSTGRES
#include <libpq-fe.h>
#endif
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>

#include <fmt/format.h>

namespace ktune::test {
namespace {

std::string unique_name(const char* prefix) {
  static std::atomic<int> counter{0};
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return fmt::format("{}_{}_{}_{}", prefix, ::getpid(), counter++, now % 1000000007);
}

void pg_run(const std::string& url, const std::string& sql) {
#ifdef KTUNE_WITH_POSTGRES
  PGconn* c = PQconnectdb(url.c_str());
  if (PQstatus(c) != CONNECTION_OK) {
    const std::string why = PQerrorMessage(c);
    PQfinish(c);
    FAIL() << "cannot connect to KTUNE_TEST_PG_URL " << url << ": " << why;
  }
  PQsetNoticeProcessor(
      c, [](void*, const char*) {}, nullptr);  // "drop cascades to ..."
  PGresult* r = PQexec(c, sql.c_str());
  const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
  const std::string why = PQresultErrorMessage(r);
  PQclear(r);
  PQfinish(c);
  ASSERT_TRUE(ok) << sql << ": " << why;
#else
  FAIL() << "this build has no PostgreSQL backend (KTUNE_WITH_POSTGRES=OFF); cannot run " << sql
         << " on " << url;
#endif
}

}  // namespace

std::string backend_name(const ::testing::TestParamInfo<BackendKind>& info) {
  return info.param == BackendKind::sqlite ? "SQLite" : "PostgreSQL";
}

void StoreTest::SetUp() {
  dir_ = std::filesystem::temp_directory_path() / unique_name("ktune_store_test");
  std::filesystem::create_directories(dir_);
  if (GetParam() == BackendKind::sqlite) {
    url_ = (dir_ / "store.db").string();
    return;
  }
  const char* pg = std::getenv("KTUNE_TEST_PG_URL");
#ifndef KTUNE_WITH_POSTGRES
  GTEST_SKIP() << "built with KTUNE_WITH_POSTGRES=OFF";
#endif
  if (!pg || !*pg) {
    if (std::getenv("CI"))
      FAIL() << "KTUNE_TEST_PG_URL is not set but CI is: the PostgreSQL backend must be tested "
                "in CI (scripts/test.sh starts a server).";
    GTEST_SKIP() << "KTUNE_TEST_PG_URL not set; run scripts/test.sh for the PostgreSQL tests";
  }
  schema_ = unique_name("kt");
  ASSERT_NO_FATAL_FAILURE(pg_run(pg, "CREATE SCHEMA " + schema_));
  const std::string base = pg;
  url_ = base + (base.find('?') == std::string::npos ? "?" : "&") + "options=-csearch_path%3D" +
         schema_;
}

void StoreTest::TearDown() {
  if (!schema_.empty())
    if (const char* pg = std::getenv("KTUNE_TEST_PG_URL"))
      pg_run(pg, "DROP SCHEMA " + schema_ + " CASCADE");
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace ktune::test

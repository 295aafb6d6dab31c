// Opening stores: migrations, newer schemas, corrupt or foreign files, unreachable servers.
#include <sqlite3.h>

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "../../src/store/backend.hpp"
#include "ktune/core/error.hpp"
#include "ktune/store/store.hpp"
#include "store_fixture.hpp"

namespace ktune::store {
namespace {

using test::StoreTest;

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string error_of(const std::string& url) {
  try {
    Store::open(url);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class SchemaTest : public StoreTest {};

TEST_P(SchemaTest, NewerSchemaIsRefusedAndLeftAlone) {
  {
    auto store = Store::open(url());
    EXPECT_EQ(store->schema_version(), Store::kSchemaVersion);
  }
  {
    // Reopening an up-to-date store changes nothing.
    auto store = Store::open(url());
    EXPECT_EQ(store->schema_version(), Store::kSchemaVersion);
  }
  // Pretend a newer ktune migrated it.
  auto db = GetParam() == test::BackendKind::sqlite ? detail::open_sqlite(url())
                                                    : detail::open_postgres(url());
  db->exec("UPDATE ktune_meta SET value = '99' WHERE key = 'schema_version'", {});
  const std::string why = error_of(url());
  EXPECT_NE(why.find("schema version 99"), std::string::npos) << why;
  EXPECT_NE(why.find("upgrade ktune"), std::string::npos) << why;
  EXPECT_EQ(db->query("SELECT value FROM ktune_meta WHERE key = 'schema_version'", {})[0].text(0),
            "99");
}

KTUNE_BOTH_BACKENDS(SchemaTest);

TEST(SqliteFile, CorruptFileIsRefusedUntouched) {
  const auto path = std::filesystem::temp_directory_path() / "ktune_corrupt_store_test.db";
  const std::string garbage = "this is not a database, just some bytes\n" + std::string(5000, 'x');
  std::ofstream(path, std::ios::binary) << garbage;
  const std::string why = error_of(path.string());
  EXPECT_NE(why.find(path.string()), std::string::npos) << why;
  EXPECT_NE(why.find("not a readable SQLite database"), std::string::npos) << why;
  EXPECT_EQ(slurp(path), garbage);
  EXPECT_FALSE(std::filesystem::exists(path.string() + "-wal"));
  std::filesystem::remove(path);
}

TEST(SqliteFile, ForeignDatabaseIsRefusedUntouched) {
  const auto path = std::filesystem::temp_directory_path() / "ktune_foreign_store_test.db";
  std::filesystem::remove(path);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE photos (id INTEGER); INSERT INTO photos VALUES (1);",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const std::string before = slurp(path);
  const std::string why = error_of("sqlite:" + path.string());
  EXPECT_NE(why.find("not a ktune store"), std::string::npos) << why;
  EXPECT_EQ(slurp(path), before);
  std::filesystem::remove(path);
}

TEST(StoreUrl, PasswordIsHiddenWhenTheServerIsUnreachable) {
#ifndef KTUNE_WITH_POSTGRES
  GTEST_SKIP() << "built without PostgreSQL";
#endif
  // Port 1 on loopback: nothing listens there.
  const std::string why = error_of("postgresql://alice:s3cret@127.0.0.1:1/ktune?connect_timeout=2");
  EXPECT_NE(why.find("cannot connect to the PostgreSQL store "
                     "postgresql://alice:***@127.0.0.1:1/ktune"),
            std::string::npos)
      << why;
  EXPECT_EQ(why.find("s3cret"), std::string::npos) << why;
  EXPECT_EQ(detail::redact_url("postgresql://h/db?user=a&password=pw&sslmode=off"),
            "postgresql://h/db?user=a&password=***&sslmode=off");
  EXPECT_EQ(detail::redact_url("postgresql://bob@h:5432/db"), "postgresql://bob@h:5432/db");
}

TEST(StoreUrl, UnknownSchemeIsOneSentence) {
  const std::string why = error_of("mysql://root@h/db");
  EXPECT_NE(why.find("unknown store scheme 'mysql'"), std::string::npos) << why;
}

}  // namespace
}  // namespace ktune::store

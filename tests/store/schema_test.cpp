// Opening stores: migrations, newer schemas, corrupt or foreign files, unreachable servers.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "../../src/store/backend.hpp"
#include "ktune/core/error.hpp"
#include "ktune/store/store.hpp"
#include "store_fixture.hpp"
#include "tcp_proxy.hpp"

namespace ktune::store {
namespace {

using test::StoreTest;

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The backend under a test's store, for what Store does not expose. A build without PostgreSQL
// skips the PostgreSQL cases in StoreTest::SetUp, so its opener is named only where it exists.
std::unique_ptr<detail::Backend> open_backend(test::BackendKind kind, const std::string& url) {
#ifdef KTUNE_WITH_POSTGRES
  if (kind == test::BackendKind::postgres) return detail::open_postgres(url);
#endif
  EXPECT_EQ(kind, test::BackendKind::sqlite);
  return detail::open_sqlite(url);
}

std::string error_of(const std::string& url, Access access = Access::read_write) {
  try {
    Store::open(url, access);
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
  auto db = open_backend(GetParam(), url());
  db->exec("UPDATE ktune_meta SET value = '99' WHERE key = 'schema_version'", {});
  const std::string why = error_of(url());
  EXPECT_NE(why.find("schema version 99"), std::string::npos) << why;
  EXPECT_NE(why.find("upgrade ktune"), std::string::npos) << why;
  EXPECT_EQ(db->query("SELECT value FROM ktune_meta WHERE key = 'schema_version'", {})[0].text(0),
            "99");
}

// Schema 5 gives every cache dtype its one spelling: entries another producer wrote as "bfloat16"
// or "torch.float16,torch.float16" are found by lookups, which now canonicalize; where two
// spellings held an entry of one key, the faster stays.
TEST_P(SchemaTest, MigrationFiveGivesEveryCacheDtypeItsOneSpelling) {
  auto entry = [](const std::string& op, const std::string& dtype, double median_ns) {
    CacheEntry e;
    e.key = {op, dtype, "", "sm_90", "H100", "13.0", 0};
    e.shape = {64};
    e.config = {{"x", median_ns}};
    e.median_ns = median_ns;
    e.samples = 1;
    return e;
  };
  {
    auto st = Store::open(url());
    st->put_entry(entry("a", "bf16", 10));
    st->put_entry(entry("b", "bf16", 20));
    st->put_entry(entry("c", "f16", 30));
  }
  // As a store of schema 4 held them (put_entry canonicalizes now, so the old spellings are set
  // by hand), with one key held under two spellings: a's faster copy is the old one.
  auto db = open_backend(GetParam(), url());
  db->exec("UPDATE cache_entries SET dtype = 'torch.bfloat16' WHERE op = 'b'", {});
  db->exec("UPDATE cache_entries SET dtype = 'torch.float16,torch.float16' WHERE op = 'c'", {});
  db->exec(
      "INSERT INTO cache_entries SELECT op, 'bfloat16', bucket, arch, device_name, toolkit, "
      "driver_major, shape, '{\"x\":5}', 5, noise_ns, samples, throughput, throughput_unit, "
      "verification, ktune_version, ktune_commit, host, strategy, budget, created_at, "
      "invalidated_at, invalid_reason FROM cache_entries WHERE op = 'a'",
      {});
  db->exec("DROP TABLE fleet_gemms", {});
  db->exec("ALTER TABLE fleet_jobs DROP COLUMN library", {});
  db->exec("UPDATE ktune_meta SET value = '4' WHERE key = 'schema_version'", {});
  auto st = Store::open(url());
  EXPECT_EQ(st->schema_version(), Store::kSchemaVersion);
  std::map<std::string, std::pair<std::string, double>> got;
  for (const auto& e : st->list_entries()) got[e.key.op] = {e.key.dtype, e.median_ns};
  EXPECT_EQ(got["a"], std::pair(std::string("bf16"), 5.0));  // the faster of the two
  EXPECT_EQ(got["b"], std::pair(std::string("bf16"), 20.0));
  EXPECT_EQ(got["c"], std::pair(std::string("f16,f16"), 30.0));
  EXPECT_EQ(st->list_entries({.op = "a"}).size(), 1u);
  // Lookups in any spelling find them.
  EXPECT_EQ(st->lookup({"b", "bfloat16", {64}, {"sm_90", "H100", "13.0", 0}}).match, Match::exact);
}

// A negative version indexed the migrations array out of bounds (SIGSEGV in every writer);
// 4294967297 was read as 1 and 'abc' or 0 as "no store". Each is one sentence, for writers and
// readers alike, and the store is left as it was.
TEST_P(SchemaTest, DamagedSchemaVersionIsOneSentenceAndLeftAlone) {
  Store::open(url());
  auto db = open_backend(GetParam(), url());
  for (const char* bad : {"-1", "-2147483648", "2147483648", "4294967297", "abc", "0", "", " 3",
                          "3.0", "99999999999999999999999"}) {
    db->exec("UPDATE ktune_meta SET value = $1 WHERE key = 'schema_version'", {std::string(bad)});
    for (Access access : {Access::read_write, Access::read_only}) {
      const std::string why = error_of(url(), access);
      EXPECT_NE(why.find("which no ktune writes"), std::string::npos) << bad << ": " << why;
    }
    EXPECT_EQ(db->query("SELECT value FROM ktune_meta WHERE key = 'schema_version'", {})[0].text(0),
              bad);
  }
}

TEST_P(SchemaTest, ReadersCreateNothingAndCannotWrite) {
  if (GetParam() == test::BackendKind::sqlite) {
    // A mistyped --db of `cache ls` made the directories and an empty store.
    const auto typo = dir() / "typo" / "dir" / "x.db";
    const std::string why = error_of(typo.string(), Access::read_only);
    EXPECT_NE(why.find("there is no ktune store at " + typo.string()), std::string::npos) << why;
    EXPECT_FALSE(std::filesystem::exists(dir() / "typo"));
  } else {
    const std::string why = error_of(url(), Access::read_only);
    EXPECT_NE(why.find("there is no ktune store at"), std::string::npos) << why;
    EXPECT_FALSE(open_backend(GetParam(), url())->table_exists("ktune_meta"));
  }
  Store::open(url());  // now it exists
  auto reader = Store::open(url(), Access::read_only);
  EXPECT_EQ(reader->schema_version(), Store::kSchemaVersion);
  EXPECT_TRUE(reader->list_entries().empty());
  OpSpec spec;
  spec.op = "gemm";
  EXPECT_THROW(reader->put_op(spec), Error);
  EXPECT_TRUE(Store::open(url())->ops().empty());
}

TEST_P(SchemaTest, ServerStatementTimeoutHasADefaultTheUrlOverrides) {
  if (GetParam() == test::BackendKind::sqlite) GTEST_SKIP() << "a PostgreSQL setting";
  // url() already carries options (search_path): the default must survive them.
  EXPECT_EQ(open_backend(GetParam(), url())->query("SHOW statement_timeout")[0].text(0), "2min");
  std::string own = url();
  own.replace(own.find("options="), 8, "options=-cstatement_timeout%3D5s%20");
  EXPECT_EQ(open_backend(GetParam(), own)->query("SHOW statement_timeout")[0].text(0), "5s");
}

// A server that froze (a dead host, a dropped network) answers nothing and refuses nothing, so
// neither TCP nor the server's statement_timeout ends the wait: `cache import` waited over 5
// minutes. Each statement now has a deadline on this side (statement_timeout and a margin), and
// the store says it is unavailable.
TEST_P(SchemaTest, AFrozenServerIsUnavailableWithinTheDeadline) {
  if (GetParam() == test::BackendKind::sqlite) GTEST_SKIP() << "a server's failure";
  const auto [host, port] = test::pg_host_port(url());
  test::TcpProxy proxy(host, port);
  std::string own = proxy.url_through(url());
  own.replace(own.find("options="), 8, "options=-cstatement_timeout%3D1s%20");
  auto store = Store::open(own);
  EXPECT_TRUE(store->list_entries().empty());
  proxy.freeze();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(store->list_entries(), StoreUnavailable);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GT(waited, 1.0);
  EXPECT_LT(waited, 6.0);
  // The connection is closed: later calls say so at once instead of waiting again.
  OpSpec op;
  op.op = "gemm";
  try {
    store->put_op(op);
    ADD_FAILURE() << "a write through a closed connection succeeded";
  } catch (const StoreUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find("open the store again"), std::string::npos) << e.what();
  }
  // Connecting to it is bounded by connect_timeout.
  const auto connect_start = std::chrono::steady_clock::now();
  EXPECT_THROW(Store::open(own + "&connect_timeout=2"), StoreUnavailable);
  EXPECT_LT(std::chrono::steady_clock::now() - connect_start, std::chrono::seconds(8));
}

KTUNE_BOTH_BACKENDS(SchemaTest);

TEST(StoreUrl, SqliteWithoutAPathIsRefused) {
  // SQLite reads "" and ":memory:" as a temporary database: the put "succeeded" into nothing.
  for (const char* url : {"sqlite:", "sqlite://", ":memory:", "sqlite::memory:"}) {
    const std::string why = error_of(url);
    EXPECT_NE(why.find("names no file"), std::string::npos) << url << ": " << why;
  }
}

// Issue 44: 'sqlite:file:x.db?mode=memory' reported "1 new winners" and kept nothing; SQLite takes
// "file:" in any case as a URI. A blank --db made a file named " ".
TEST(StoreUrl, LocatorsThatWouldNotPersistAreRefused) {
  for (const char* url :
       {"sqlite:file:x.db?mode=memory", "sqlite://File:x.db", "sqlite:FILE:x.db?vfs=memdb"}) {
    const std::string why = error_of(url);
    EXPECT_NE(why.find("names no file"), std::string::npos) << url << ": " << why;
    EXPECT_FALSE(std::filesystem::exists("x.db")) << url;
  }
  for (const char* url : {"file:x.db?mode=memory", "FILE:x.db?vfs=memdb"}) {
    const std::string why = error_of(url);
    EXPECT_NE(why.find("unknown store scheme 'file'"), std::string::npos) << url << ": " << why;
  }
  for (const char* url : {" ", "\t", "  \n"}) {
    const std::string why = error_of(url);
    EXPECT_NE(why.find("is blank"), std::string::npos) << why;
  }
}

// Issue 44: "POSTGRESQL://user:pw@host/db" became a SQLite file under folders named after the URL
// and printed its password. The scheme is case-insensitive, and libpq gets it in lower case.
TEST(StoreUrl, SchemesAreCaseInsensitive) {
  const Locator pg = parse_locator("POSTGRESQL://alice:s3cret@127.0.0.1:1/ktune");
  EXPECT_EQ(pg.kind, Locator::Kind::postgresql);
  EXPECT_EQ(pg.location, "postgresql://alice:s3cret@127.0.0.1:1/ktune");
  EXPECT_EQ(parse_locator("Postgres://h/db").location, "postgres://h/db");
  const Locator file = parse_locator("SQLite:some/store.db");
  EXPECT_EQ(file.kind, Locator::Kind::sqlite);
  EXPECT_EQ(file.location, "some/store.db");
  EXPECT_TRUE(parse_locator("").is_default);
  EXPECT_EQ(parse_locator("x.db").location, "x.db");
  const std::string why = error_of("MySQL://root:s3cret@h/db");
  EXPECT_NE(why.find("unknown store scheme 'mysql'"), std::string::npos) << why;
  EXPECT_EQ(why.find("s3cret"), std::string::npos) << why;
  EXPECT_FALSE(std::filesystem::exists("POSTGRESQL:"));
}

TEST(StoreUrl, OneRedactionForEveryFormOfPassword) {
  using detail::redact_url;
  EXPECT_EQ(redact_url("postgresql://alice:s3c@retPW@host/db"), "postgresql://alice:***@host/db");
  EXPECT_EQ(redact_url("postgresql://alice:pa/ss:w?d@host:5432/db"),
            "postgresql://alice:***@host:5432/db");
  EXPECT_EQ(redact_url("postgresql://h/db?user=a&PASSWORD=pw&sslmode=off"),
            "postgresql://h/db?user=a&PASSWORD=***&sslmode=off");
  EXPECT_EQ(redact_url("postgresql://h/db?PassWord=pw"), "postgresql://h/db?PassWord=***");
  EXPECT_EQ(redact_url("host=h user=a password=pw dbname=x"),
            "host=h user=a password=*** dbname=x");
  EXPECT_EQ(redact_url("host=h password = 'p w\\' x' dbname=x"), "host=h password = *** dbname=x");
  EXPECT_EQ(redact_url("postgresql://bob@h:5432/db"), "postgresql://bob@h:5432/db");
  EXPECT_EQ(redact_url("postgresql://h:5432/db"), "postgresql://h:5432/db");
  // libpq's messages repeat what it misparsed; with the URL, its password's pieces go too.
  const std::string url = "postgresql://alice:s3c@retPW@host/db";
  EXPECT_EQ(redact_url("could not translate host name \"retPW@host\" to address", url),
            "could not translate host name \"***@host\" to address");
  EXPECT_EQ(redact_url("invalid integer value \"pa\" for connection option \"port\"",
                       "postgresql://alice:pa/ssword@host/db"),
            "invalid integer value \"***\" for connection option \"port\"");
}

TEST(StoreUrl, KeyValueConninfoIsRefusedWithItsPasswordHidden) {
  // It used to become a SQLite file named after the password, printed in every message.
  const std::string why = error_of("host=h user=alice password=s3cret dbname=x");
  EXPECT_NE(why.find("libpq key=value connection string"), std::string::npos) << why;
  EXPECT_EQ(why.find("s3cret"), std::string::npos) << why;
  EXPECT_FALSE(std::filesystem::exists("host=h user=alice password=s3cret dbname=x"));
}

TEST(StoreUrl, PasswordNeverAppearsInConnectionErrors) {
#ifndef KTUNE_WITH_POSTGRES
  GTEST_SKIP() << "built without PostgreSQL";
#endif
  struct Case {
    const char* url;
    std::vector<std::string> secrets;
  };
  for (const Case& c :
       {Case{"postgresql://alice:s3c@retPW@host/db", {"s3c", "retPW"}},
        Case{"postgresql://alice:pa/ssword@host/db", {"ssword", "\"pa\""}},
        Case{"postgresql://alice@127.0.0.1:1/db?PASSWORD=topsecret", {"topsecret"}}}) {
    const std::string why = error_of(c.url);
    EXPECT_NE(why.find("cannot connect to the PostgreSQL store"), std::string::npos) << why;
    for (const auto& s : c.secrets) EXPECT_EQ(why.find(s), std::string::npos) << s << ": " << why;
  }
}

// A port that accepts connections and never answers: the kernel completes the handshake for a
// listening socket nobody accept()s, which is what a hung server or a wrong service looks like.
TEST(StoreUrl, SilentServerTimesOutInsteadOfHanging) {
#ifndef KTUNE_WITH_POSTGRES
  GTEST_SKIP() << "built without PostgreSQL";
#endif
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(::listen(fd, 16), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string base = fmt::format("postgresql://u@127.0.0.1:{}/db", ntohs(addr.sin_port));
  // Returns the seconds Store::open took, or -1 when it had not returned after 40 s (the
  // thread is then left behind: the test has failed anyway).
  auto seconds_to_fail = [](std::string url) {
    auto done = std::make_shared<std::promise<double>>();
    auto result = done->get_future();
    std::thread([url, done] {
      const auto t0 = std::chrono::steady_clock::now();
      const std::string why = error_of(url);
      const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
      done->set_value(why.find("cannot connect") != std::string::npos ? dt.count() : -2);
    }).detach();
    if (result.wait_for(std::chrono::seconds(40)) != std::future_status::ready) return -1.0;
    return result.get();
  };
  const double by_default = seconds_to_fail(base);
  EXPECT_GE(by_default, 9.0);  // the 10 s default
  EXPECT_LE(by_default, 25.0);
  const double own = seconds_to_fail(base + "?connect_timeout=2");  // the URL's value wins
  EXPECT_GE(own, 1.0);
  EXPECT_LE(own, 6.0);
  ::close(fd);
}

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

// Turning a fresh file into WAL mode needs an exclusive lock, and SQLite does not wait for it: the
// CI run with eight processes opening one new store failed "locked for 60 s" after 37 ms.
TEST(SqliteFile, AFreshStoreWaitsForAnotherWriterOfTheFileInsteadOfFailing) {
  const auto path = std::filesystem::temp_directory_path() / "ktune_fresh_locked_store_test.db";
  std::filesystem::remove(path);
  sqlite3* writer = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &writer), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(writer, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr),
      SQLITE_OK);  // holds the file's write lock, as another opener does while it turns it to WAL
  const auto start = std::chrono::steady_clock::now();  // before the lock can be released
  auto release = std::async(std::launch::async, [writer] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    sqlite3_exec(writer, "COMMIT", nullptr, nullptr, nullptr);
  });
  EXPECT_NO_THROW(Store::open("sqlite:" + path.string()));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(250));
  release.get();
  sqlite3_close(writer);
  auto store = Store::open("sqlite:" + path.string());
  EXPECT_EQ(store->schema_version(), Store::kSchemaVersion);
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
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

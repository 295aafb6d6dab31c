// 16 processes write one store at once: no update is lost and the fastest offer wins.
#include <spawn.h>
#include <sys/wait.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ktune/store/store.hpp"
#include "store_fixture.hpp"

extern char** environ;

namespace ktune::store {
namespace {

class ConcurrencyTest : public test::StoreTest {
 protected:
  // Starts `writers` store_writer processes at once, each offering `count` entries to url(), and
  // expects every one of them to exit 0.
  void run_writers(int writers, int count) {
    std::vector<pid_t> pids;
    const std::string per_writer = std::to_string(count);
    for (int i = 0; i < writers; ++i) {
      const std::string id = std::to_string(i);
      const char* argv[] = {KTUNE_STORE_WRITER, url().c_str(), id.c_str(), per_writer.c_str(),
                            nullptr};
      pid_t pid = 0;
      ASSERT_EQ(posix_spawn(&pid, KTUNE_STORE_WRITER, nullptr, nullptr,
                            const_cast<char* const*>(argv), environ),
                0);
      pids.push_back(pid);
    }
    for (pid_t pid : pids) {
      int status = 0;
      ASSERT_EQ(waitpid(pid, &status, 0), pid);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
          << "writer " << pid << " ended with status " << status;
    }
  }
};

TEST_P(ConcurrencyTest, SixteenWriterProcessesLoseNothing) {
  constexpr int kWriters = 16, kCount = 25;
  Store::open(url());  // create the schema first so the writers contend on data, not DDL
  ASSERT_NO_FATAL_FAILURE(run_writers(kWriters, kCount));
  auto store = Store::open(url());
  EntryFilter f;
  f.op = "contended";
  const auto all = store->list_entries(f);
  EXPECT_EQ(all.size(), static_cast<std::size_t>(kWriters * kCount + 1));
  CacheKey k{"contended", "f32", "7", "sm_90", "NVIDIA H100 80GB HBM3", "13.0", 0};
  const auto winner = store->get_entry(k);
  ASSERT_TRUE(winner.has_value());
  EXPECT_EQ(winner->median_ns, 100000 - (kWriters - 1) * 100 - (kCount - 1));
  EXPECT_EQ(winner->config["writer"], kWriters - 1);
}

// The first commands on a fresh store all migrate it at once. Eight `cache put`s on a new
// PostgreSQL database used to end with 5-7 of them failing on "relation already exists".
TEST_P(ConcurrencyTest, EightProcessesMigrateAFreshStoreTogether) {
  constexpr int kWriters = 8;
  ASSERT_NO_FATAL_FAILURE(run_writers(kWriters, 1));
  auto store = Store::open(url());
  EXPECT_EQ(store->schema_version(), Store::kSchemaVersion);
  EntryFilter f;
  f.op = "contended";
  EXPECT_EQ(store->list_entries(f).size(), static_cast<std::size_t>(kWriters + 1));
}

KTUNE_BOTH_BACKENDS(ConcurrencyTest);

}  // namespace
}  // namespace ktune::store

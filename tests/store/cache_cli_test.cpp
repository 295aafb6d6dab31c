// `ktune cache` as a user runs it: JSON shapes pinned, bad input gets one sentence.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../cli/run_ktune.hpp"

namespace {

using ktune::test::run_ktune;

class CacheCli : public ::testing::Test {
 protected:
  std::filesystem::path dir_ =
      std::filesystem::temp_directory_path() / ("ktune_cache_cli_" + std::to_string(::getpid()));
  std::string db() const { return "--db " + (dir_ / "c.db").string() + " "; }
  void SetUp() override {
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "e.json") << R"({"op":"scale","dtype":"f32","arch":"sm_90",
      "device_name":"H100","toolkit":"13.0","driver_major":0,"shape":[4096],
      "config":{"block":256},"median_ns":5000,"noise_ns":10,"samples":20,"throughput":1e12,
      "throughput_unit":"bytes/s","verification":"passed","provenance":{"strategy":"grid"}})";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
};

TEST_F(CacheCli, PutGetLsExportImportWithJsonShapes) {
  auto put = run_ktune(db() + "cache put --json " + (dir_ / "e.json").string());
  ASSERT_EQ(put.exit_code, 0) << put.err;
  const auto pj = nlohmann::json::parse(put.out);
  EXPECT_EQ(pj["schema_version"], 1);
  EXPECT_EQ(pj["winner"], true);
  EXPECT_EQ(pj["reason"], "new key");

  auto get = run_ktune(db() +
                       "cache get --json --op scale --dtype f32 --shape 4096 --arch sm_90 "
                       "--device-name H100 --toolkit 13.1");
  ASSERT_EQ(get.exit_code, 0) << get.err;
  const auto gj = nlohmann::json::parse(get.out);
  for (const char* k :
       {"schema_version", "match", "bucket", "config", "stale", "stale_reason", "entry"})
    EXPECT_TRUE(gj.contains(k)) << k;
  EXPECT_EQ(gj["match"], "exact");
  EXPECT_EQ(gj["stale"], true);
  EXPECT_EQ(gj["config"]["block"], 256);

  auto ls = run_ktune(db() + "cache ls --json");
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  const auto lj = nlohmann::json::parse(ls.out);
  EXPECT_EQ(lj["schema_version"], 1);
  ASSERT_EQ(lj["entries"].size(), 1u);
  EXPECT_EQ(lj["entries"][0]["provenance"]["strategy"], "grid");

  const auto pack = (dir_ / "p.json").string();
  ASSERT_EQ(run_ktune(db() + "cache export -o " + pack).exit_code, 0);
  const auto other = "--db " + (dir_ / "d.db").string() + " ";
  auto im = run_ktune(other + "cache import --json " + pack);
  ASSERT_EQ(im.exit_code, 0) << im.err;
  EXPECT_EQ(nlohmann::json::parse(im.out)["winners"], 1);
  auto stats = run_ktune(other + "cache stats --json --toolkit 13.1");
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  const auto sj = nlohmann::json::parse(stats.out);
  EXPECT_EQ(sj["entries"], 1);
  EXPECT_EQ(sj["stale"], 1);
  EXPECT_EQ(sj["store_schema_version"], 2);
}

TEST_F(CacheCli, BadInputGetsOneSentenceAndNonZeroExit) {
  std::ofstream(dir_ / "junk.db") << "not a database";
  auto corrupt = run_ktune("--db " + (dir_ / "junk.db").string() + " cache ls");
  EXPECT_EQ(corrupt.exit_code, 1);
  EXPECT_NE(corrupt.err.find("not a readable SQLite database"), std::string::npos) << corrupt.err;

  std::ofstream(dir_ / "pack.json") << R"({"format":"ktune-tuning-pack","schema_version":1,
    "ops":[],"entries":[{"op":"x"}]})";
  auto pack = run_ktune(db() + "cache import " + (dir_ / "pack.json").string());
  EXPECT_EQ(pack.exit_code, 1);
  EXPECT_NE(pack.err.find("entries[0]"), std::string::npos) << pack.err;

  auto shape = run_ktune(db() +
                         "cache get --op a --dtype f32 --shape 12xq --arch sm_90 "
                         "--device-name H --toolkit 1");
  EXPECT_EQ(shape.exit_code, 1);
  EXPECT_NE(shape.err.find("--shape '12xq'"), std::string::npos) << shape.err;

  auto pg = run_ktune("--db 'postgresql://u:hunter2@127.0.0.1:1/x' cache ls");
  EXPECT_EQ(pg.exit_code, 1);
  EXPECT_EQ(pg.err.find("hunter2"), std::string::npos) << pg.err;
  EXPECT_NE(pg.err.find("u:***@"), std::string::npos) << pg.err;
}

}  // namespace

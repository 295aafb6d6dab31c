// `ktune cache` as a user runs it: JSON shapes pinned, bad input gets one sentence.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

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
                       "cache get --json --op scale --dtype f32 --shape n=4096 --arch sm_90 "
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
  EXPECT_EQ(sj["store_schema_version"], 5);  // Store::kSchemaVersion
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
  EXPECT_EQ(shape.exit_code, 2);  // a bad value: a usage error
  EXPECT_NE(shape.err.find("--shape item '12xq' is not NAME=VALUE"), std::string::npos)
      << shape.err;

  auto pg = run_ktune("--db 'postgresql://u:hunter2@127.0.0.1:1/x' cache ls");
  EXPECT_EQ(pg.exit_code, 1);
  EXPECT_EQ(pg.err.find("hunter2"), std::string::npos) << pg.err;
  EXPECT_NE(pg.err.find("u:***@"), std::string::npos) << pg.err;
}

// One --shape syntax, tune's: sizes by the op's dimension names, in any order; the old form gets
// one sentence saying how to write it.
TEST_F(CacheCli, ShapeIsGivenByTheOpsDimensionNames) {
  std::ofstream(dir_ / "pack.json") << R"({"format":"ktune-tuning-pack","schema_version":1,
    "ops":[{"op":"gemm","buckets":{"dims":[{"kind":"exact","name":"m"},
      {"kind":"exact","name":"n"},{"kind":"exact","name":"k"}]},"default_config":null}],
    "entries":[{"op":"gemm","dtype":"f16","arch":"sm_90","device_name":"H100","toolkit":"13.0",
      "driver_major":0,"shape":[64,128,256],"config":{"tile":64},"median_ns":5000,
      "noise_ns":10,"samples":20,"throughput":1e12,"throughput_unit":"flop/s",
      "verification":"passed","provenance":{"strategy":"grid"}}]})";
  ASSERT_EQ(run_ktune(db() + "cache import " + (dir_ / "pack.json").string()).exit_code, 0);
  const std::string get = db() +
                          "cache get --json --op gemm --dtype f16 --arch sm_90 "
                          "--device-name H100 --toolkit 13.0 --shape ";
  auto named = run_ktune(get + "k=256,m=64,n=128");
  ASSERT_EQ(named.exit_code, 0) << named.err;
  const auto j = nlohmann::json::parse(named.out);
  EXPECT_EQ(j["match"], "exact");
  EXPECT_EQ(j["bucket"], "64x128x256");

  auto missing = run_ktune(get + "m=64,n=128");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("--shape gives no size for 'k'; op gemm has the dimensions m, n, k: "
                             "write e.g. --shape m=4096,n=4096,k=4096."),
            std::string::npos)
      << missing.err;
  auto unknown = run_ktune(get + "m=64,n=128,x=256");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("--shape names 'x'"), std::string::npos) << unknown.err;

  auto old = run_ktune(get + "64x128x256");
  EXPECT_EQ(old.exit_code, 2);
  EXPECT_NE(old.err.find("--shape 64x128x256 is the old form, sizes joined by 'x'; name each "
                         "size instead, e.g. --shape m=4096,n=4096,k=1024."),
            std::string::npos)
      << old.err;
}

TEST_F(CacheCli, ExportNeverWritesOverItsOwnStore) {
  ASSERT_EQ(run_ktune(db() + "cache put " + (dir_ / "e.json").string()).exit_code, 0);
  const auto store = (dir_ / "c.db").string();
  auto ex = run_ktune(db() + "cache export -o " + store);
  EXPECT_EQ(ex.exit_code, 1);
  EXPECT_NE(ex.err.find("refusing to write " + store + ": it is the input"), std::string::npos)
      << ex.err;
  auto ls = run_ktune(db() + "cache ls --json");
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_EQ(nlohmann::json::parse(ls.out)["entries"].size(), 1u);
  std::filesystem::create_directories(dir_ / "packs");
  auto to_dir = run_ktune(db() + "cache export -o " + (dir_ / "packs").string());
  EXPECT_EQ(to_dir.exit_code, 1);
  EXPECT_NE(to_dir.err.find("is a directory, not a regular file"), std::string::npos) << to_dir.err;
  EXPECT_EQ(to_dir.err.find("Success"), std::string::npos) << to_dir.err;
}

TEST_F(CacheCli, SqliteWithoutAPathIsRefused) {
  // It stored into a temporary database and reported success.
  auto put = run_ktune("--db sqlite: cache put " + (dir_ / "e.json").string());
  EXPECT_EQ(put.exit_code, 1);
  EXPECT_NE(put.err.find("--db sqlite: names no file"), std::string::npos) << put.err;
  EXPECT_EQ(put.out.find("stored"), std::string::npos) << put.out;
}

TEST_F(CacheCli, WrongTypesAndFractionsNameTheFileAndField) {
  const auto e = (dir_ / "e.json").string();
  nlohmann::json good;
  std::ifstream(dir_ / "e.json") >> good;
  struct Case {
    const char* field;
    nlohmann::json value;
  };
  for (const Case& c : {Case{"bucket", 7}, Case{"driver_major", 3.7}, Case{"shape", {4096.7}},
                        Case{"samples", -1}}) {
    nlohmann::json j = good;
    j[c.field] = c.value;
    std::ofstream(dir_ / "e.json") << j.dump();
    auto put = run_ktune(db() + "cache put " + e);
    EXPECT_EQ(put.exit_code, 1) << c.field;
    EXPECT_NE(put.err.find(e + ": the field \"" + c.field + "\""), std::string::npos) << put.err;
    EXPECT_EQ(put.err.find("internal error"), std::string::npos) << put.err;
  }
  std::ofstream(dir_ / "pack.json") << R"({"format":7,"schema_version":1,"ops":[],"entries":[]})";
  auto im = run_ktune(db() + "cache import " + (dir_ / "pack.json").string());
  EXPECT_EQ(im.exit_code, 1);
  EXPECT_NE(
      im.err.find((dir_ / "pack.json").string() + " is not a ktune tuning pack (its \"format\""),
      std::string::npos)
      << im.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "c.db"));  // nothing was stored
}

TEST_F(CacheCli, DeeplyNestedConfigIsRefusedNotACrash) {
  const int depth = 100'000;
  std::ofstream out(dir_ / "deep.json");
  out << R"({"op":"scale","dtype":"f32","arch":"sm_90","device_name":"H100","toolkit":"13.0",
      "driver_major":0,"shape":[4096],"median_ns":5000,"noise_ns":10,"samples":20,
      "throughput":1e12,"throughput_unit":"bytes/s","verification":"passed","provenance":{},
      "config":)";
  // Objects, not arrays: a deep array config was refused by validation after parsing, but a
  // deep object reached nlohmann's recursive copy and dump and crashed ktune (SIGSEGV).
  for (int i = 0; i < depth; ++i) out << R"({"a":)";
  out << 1 << std::string(depth + 1, '}');
  out.close();
  auto put = run_ktune(db() + "cache put " + (dir_ / "deep.json").string());
  EXPECT_EQ(put.exit_code, 1);
  EXPECT_NE(put.err.find("deep.json nests JSON deeper than 64 levels"), std::string::npos)
      << put.err;
}

// A store that is not there yet lists as empty (exit 0), misses every lookup (exit 3), has no
// pack to export (exit 1, naming the path), and none of them creates it.
// Issue 44: `cache ls` printed an op name's control characters, which can rewrite the terminal.
TEST_F(CacheCli, NamesReachTheTerminalEscaped) {
  std::ofstream(dir_ / "evil.json") << R"({"op":"x\u001b]0;owned\u0007\u009b2J","dtype":"f32",
    "arch":"sm_90","device_name":"H100\u001b[2J","toolkit":"13.0","driver_major":0,
    "shape":[4096],"config":{"block":256},"median_ns":5000,"noise_ns":10,"samples":20,
    "throughput":1e12,"throughput_unit":"bytes/s","verification":"passed",
    "provenance":{"strategy":"grid"}})";
  ASSERT_EQ(run_ktune(db() + "cache put " + (dir_ / "evil.json").string()).exit_code, 0);
  for (const char* cmd : {"cache ls", "cache stats"}) {
    const auto r = run_ktune(db() + cmd);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << cmd << ": " << r.out;
    EXPECT_EQ(r.out.find('\x07'), std::string::npos) << cmd;
    EXPECT_EQ(r.out.find("\xC2\x9B"), std::string::npos) << cmd;
  }
  EXPECT_NE(run_ktune(db() + "cache ls").out.find("x\\x1b]0;owned\\x07\\u009b2J"),
            std::string::npos);
}

TEST_F(CacheCli, ReadingCommandsCreateNothing) {
  const auto typo = dir_ / "typo" / "dir" / "x.db";
  for (const auto& [cmd, code] : std::vector<std::pair<std::string, int>>{
           {"cache ls", 0},
           {"cache stats --toolkit 13.0", 0},
           {"cache export", 1},
           {"cache get --op scale --dtype f32 --shape n=4096 --arch sm_90 --device-name H100 "
            "--toolkit 13.0",
            3}}) {
    auto r = run_ktune("--db " + typo.string() + " " + cmd);
    EXPECT_EQ(r.exit_code, code) << cmd << ": " << r.err;
    if (code == 1)
      EXPECT_NE(r.err.find("there is no ktune store at " + typo.string()), std::string::npos)
          << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "typo"));
}

TEST_F(CacheCli, ReadOnlyStoreCanBeRead) {
  ASSERT_EQ(run_ktune(db() + "cache put " + (dir_ / "e.json").string()).exit_code, 0);
  // Neither the file nor its directory is writable by the reader: as root, read as nobody.
  namespace fs = std::filesystem;
  std::string as_reader;
  if (::geteuid() == 0)
    as_reader = "setpriv --reuid=65534 --regid=65534 --clear-groups";
  else
    fs::permissions(dir_ / "c.db", fs::perms::owner_write, fs::perm_options::remove);
  fs::permissions(dir_, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                  fs::perm_options::remove);
  const auto before = fs::last_write_time(dir_ / "c.db");
  auto ls = run_ktune(db() + "cache ls --json", as_reader);
  EXPECT_EQ(ls.exit_code, 0) << ls.err;
  if (ls.exit_code == 0) EXPECT_EQ(nlohmann::json::parse(ls.out)["entries"].size(), 1u);
  auto ex = run_ktune(db() + "cache export", as_reader);
  EXPECT_EQ(ex.exit_code, 0) << ex.err;
  auto put = run_ktune(db() + "cache put --force " + (dir_ / "e.json").string(), as_reader);
  EXPECT_EQ(put.exit_code, 1);
  EXPECT_NE(put.err.find("cannot be written"), std::string::npos) << put.err;
  fs::permissions(dir_, fs::perms::owner_write, fs::perm_options::add);
  fs::permissions(dir_ / "c.db", fs::perms::owner_write, fs::perm_options::add);
  EXPECT_EQ(fs::last_write_time(dir_ / "c.db"), before);
}

}  // namespace

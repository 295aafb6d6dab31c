// The runtime index answers exactly as the store does, from many threads at once.
#include "ktune/runtime/tuned_configs.hpp"

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "ktune/core/error.hpp"
#include "ktune/runtime/environment.hpp"
#include "ktune/runtime/jit_launcher.hpp"
#include "ktune/store/store.hpp"

namespace ktune::runtime {
namespace {

using store::Environment;
using store::Match;

const Environment kH100{"sm_90", "NVIDIA H100 80GB HBM3", "13.0", 580};

store::CacheEntry entry(std::string op, std::vector<std::int64_t> shape, int block,
                        Environment env = kH100) {
  store::CacheEntry e;
  e.key = {std::move(op), "f32", "", env.arch, env.device_name, env.toolkit, env.driver_major};
  e.shape = std::move(shape);
  e.config = {{"block", block}};
  e.median_ns = 1000;
  e.samples = 10;
  return e;
}

store::Pack sample_pack(const std::filesystem::path& db) {
  auto s = store::Store::open(db.string());
  s->put_op({"scale", {{store::DimRule{store::BucketKind::pow2}}}, nlohmann::json{{"block", 1}}});
  s->put_op({"gemm", {{store::DimRule{store::BucketKind::multiple, 128}}}, std::nullopt});
  s->put_entry(entry("scale", {1 << 20}, 128));
  s->put_entry(entry("scale", {1 << 10}, 64));
  s->put_entry(entry("scale", {1 << 16}, 32, {"sm_90", "NVIDIA H100 80GB HBM3", "12.4", 550}));
  s->put_entry(entry("scale", {1 << 14}, 16, {"sm_90", "NVIDIA H100 PCIe", "13.0", 580}));
  s->put_entry(entry("scale", {1 << 14}, 8, {"sm_80", "NVIDIA A100", "13.0", 580}));
  s->put_entry(entry("gemm", {4096, 4096, 4096}, 256));
  auto pack = s->export_pack({});
  pack.ops = s->ops();
  return pack;
}

class TunedConfigsTest : public ::testing::Test {
 protected:
  std::filesystem::path dir_ =
      std::filesystem::temp_directory_path() / ("ktune_runtime_test_" + std::to_string(::getpid()));
  void SetUp() override { std::filesystem::create_directories(dir_); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
};

TEST_F(TunedConfigsTest, AnswersLikeTheStoreForEveryKindOfQuery) {
  const auto db = dir_ / "s.db";
  const store::Pack pack = sample_pack(db);
  const TunedConfigs tc(pack, kH100);
  EXPECT_EQ(tc.size(), 5u);  // the sm_80 entry is not for this GPU
  auto s = store::Store::open(db.string());
  const std::vector<std::pair<std::string, std::vector<std::int64_t>>> queries = {
      {"scale", {1 << 20}},
      {"scale", {1000000}},
      {"scale", {1 << 10}},
      {"scale", {1 << 16}},
      {"scale", {1 << 14}},
      {"scale", {3}},
      {"scale", {5, 5}},
      {"gemm", {4000, 4000, 4000}},
      {"gemm", {4097, 4096, 4096}},
      {"gemm", {1, 2, 3, 4, 5, 6, 7, 8, 9}},
      {"unknown", {1}}};
  for (const auto& [op, shape] : queries) {
    SCOPED_TRACE(op + " " + store::shape_name(shape));
    const auto want = s->lookup({op, "f32", shape, kH100});
    const Answer got = tc.lookup(op, "f32", shape);
    EXPECT_EQ(got.match, want.match);
    EXPECT_EQ(got.stale, want.stale);
    if (want.match == Match::none)
      EXPECT_EQ(got.config, nullptr);
    else
      EXPECT_EQ(*got.config, want.config);
  }
  EXPECT_EQ(tc.lookup("scale", "f32", std::vector<std::int64_t>{1 << 16}).stale, true);
  EXPECT_EQ(tc.lookup("scale", "f16", std::vector<std::int64_t>{1 << 20}).match,
            Match::default_config);
}

TEST_F(TunedConfigsTest, PackFileAndStoreLoadAgree) {
  const auto db = dir_ / "s.db";
  store::write_pack(dir_ / "pack.json", sample_pack(db));
  const auto from_file = TunedConfigs::from_pack_file(dir_ / "pack.json", kH100);
  const auto from_store = TunedConfigs::from_store(db.string(), kH100);
  EXPECT_EQ(from_file.size(), from_store.size());
  const std::vector<std::int64_t> q{777};
  EXPECT_EQ(*from_file.lookup("scale", "f32", q).config,
            *from_store.lookup("scale", "f32", q).config);
  std::ofstream(dir_ / "bad.json") << "{\"format\": \"ktune-tuning-pack\", \"schema_version\": 1}";
  EXPECT_THROW(TunedConfigs::from_pack_file(dir_ / "bad.json", kH100), Error);
}

TEST_F(TunedConfigsTest, LoadingReadsOnlyAndStrictly) {
  // An application that names a missing store gets one sentence, and no store is made for it.
  const auto missing = dir_ / "nowhere" / "s.db";
  try {
    TunedConfigs::from_store(missing.string(), kH100);
    FAIL() << "a missing store loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("there is no ktune store at"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "nowhere"));
  // A pack whose numbers are not what they claim is refused, not truncated.
  const auto db = dir_ / "s.db";
  auto j = store::pack_to_json(sample_pack(db));
  j["entries"][0]["shape"][0] = 4096.7;
  std::ofstream(dir_ / "frac.json") << j.dump();
  try {
    TunedConfigs::from_pack_file(dir_ / "frac.json", kH100);
    FAIL() << "a fractional shape loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"shape\"[0] must be a whole number"), std::string::npos)
        << e.what();
  }
}

TEST_F(TunedConfigsTest, ConcurrentLookupsSeeTheSameAnswers) {
  const TunedConfigs tc(sample_pack(dir_ / "s.db"), kH100);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        const std::vector<std::int64_t> big{(1 << 19) + 1 + i}, small{1 << 11};
        const Answer a = tc.lookup("scale", "f32", big);
        const Answer b = tc.lookup("scale", "f32", small);
        if (a.match != Match::exact || (*a.config)["block"] != 128) ++wrong;
        if (b.match != Match::nearest || (*b.config)["block"] != 64) ++wrong;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(ConfigDefines, UpperCasesNamesAndRejectsNonScalars) {
  EXPECT_EQ(config_defines({{"block", 256}, {"use_ldg", true}, {"tile", "T32"}}),
            (std::vector<std::string>{"-DBLOCK=256", "-DTILE=T32", "-DUSE_LDG=1"}));
  EXPECT_THROW(config_defines({{"block", {1, 2}}}), Error);
  EXPECT_THROW(config_defines({{"bad name", 1}}), Error);
  EXPECT_THROW(config_defines(nlohmann::json::array()), Error);
}

TEST(Environment, DriverMajorParses) {
  EXPECT_EQ(driver_major("580.159.04"), 580);
  EXPECT_EQ(driver_major(""), 0);
  EXPECT_EQ(driver_major("n/a"), 0);
}

}  // namespace
}  // namespace ktune::runtime

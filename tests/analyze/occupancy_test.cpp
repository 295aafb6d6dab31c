#include "ktune/analyze/occupancy.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ktune/core/json.hpp"

namespace ktune::analyze::test {
namespace {

nlohmann::json read_fixture(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return parse_json(text.str(), path.string(), "give an occupancy fixture");
}

void check_fixture(const nlohmann::json& fixture, const std::string& file) {
  const auto table = sm_limits(fixture.at("arch").get<std::string>());
  ASSERT_TRUE(table.has_value()) << file;
  const SmLimits& limits = *table;
  ASSERT_GT(fixture.at("cases").size(), 10u) << file;
  for (const auto& c : fixture.at("cases")) {
    KernelResources k;
    k.block_size = c.at("block_size").get<int>();
    k.registers_per_thread = c.at("registers_per_thread").get<int>();
    k.shared_bytes = c.at("shared_bytes").get<std::int64_t>();
    const Occupancy o = theoretical_occupancy(limits, k);
    const std::string where = file + ": " + c.dump();
    EXPECT_EQ(o.blocks_per_sm, c.at("blocks_per_sm").get<int>()) << where;
    if (c.contains("limiter")) {
      EXPECT_EQ(to_string(o.limiter), c.at("limiter")) << where;
    }
  }
}

// Every case of every fixture: sm_90.json is hand-derived from NVIDIA's documented rules;
// <arch>.driver.json files are recorded from cuOccupancyMaxActiveBlocksPerMultiprocessor by
// OccupancyGpu.CalculatorAgreesWithTheDriver (KTUNE_RECORD_OCCUPANCY) on a GPU.
TEST(Occupancy, MatchesEveryRecordedFixture) {
  const std::filesystem::path dir =
      std::filesystem::path(KTUNE_SOURCE_DIR) / "tests" / "fixtures" / "occupancy";
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    check_fixture(read_fixture(entry.path()), entry.path().filename().string());
  }
  EXPECT_GE(files, 1u);
}

TEST(Occupancy, ReportsWarpsPercentAndEachLimit) {
  const SmLimits limits = *sm_limits("sm_90");
  const Occupancy o = theoretical_occupancy(limits, {256, 64, 0});
  EXPECT_EQ(o.blocks_per_sm, 4);
  EXPECT_EQ(o.warps_per_block, 8);
  EXPECT_EQ(o.active_warps_per_sm, 32);
  EXPECT_DOUBLE_EQ(o.occupancy_pct, 50.0);
  EXPECT_EQ(o.limiter, OccupancyLimiter::registers);
  EXPECT_EQ(o.blocks_by_warps, 8);
  EXPECT_EQ(o.blocks_by_registers, 4);
  EXPECT_EQ(o.blocks_by_max, 32);
  EXPECT_EQ(o.blocks_by_shared, 228);  // 1 KB reserved per block
}

TEST(Occupancy, ZeroRegistersSetNoLimit) {
  const Occupancy o = theoretical_occupancy(*sm_limits("sm_90"), {128, 0, 0});
  EXPECT_EQ(o.blocks_per_sm, 16);
  EXPECT_EQ(o.limiter, OccupancyLimiter::none);
}

TEST(Occupancy, AdaLovelaceHasFewerWarpsAndBlocks) {
  const SmLimits sm89 = *sm_limits("sm_89");
  // 48 warps, 24 blocks, 100 KB per SM.
  EXPECT_EQ(theoretical_occupancy(sm89, {32, 32, 0}).blocks_per_sm, 24);
  const Occupancy full = theoretical_occupancy(sm89, {256, 32, 0});
  EXPECT_EQ(full.blocks_per_sm, 6);
  EXPECT_DOUBLE_EQ(full.occupancy_pct, 100.0);
  EXPECT_EQ(theoretical_occupancy(sm89, {128, 32, 48 * 1024}).blocks_per_sm, 2);
  EXPECT_EQ(theoretical_occupancy(sm89, {128, 32, 100 * 1024}).blocks_per_sm, 0);
}

TEST(Occupancy, AmpereHas164KiBOfSharedMemory) {
  const SmLimits sm80 = *sm_limits("sm_80");
  EXPECT_EQ(theoretical_occupancy(sm80, {128, 32, 80 * 1024}).blocks_per_sm, 2);  // 2 x 81 KB
  EXPECT_EQ(theoretical_occupancy(sm80, {128, 32, 82 * 1024}).blocks_per_sm, 1);
}

TEST(Occupancy, ArchVariantsShareTheBaseTable) {
  ASSERT_TRUE(sm_limits("sm_90a").has_value());
  EXPECT_EQ(sm_limits("sm_90a")->arch, "sm_90");
  EXPECT_FALSE(sm_limits("sm_75").has_value());
  EXPECT_FALSE(sm_limits("").has_value());
  EXPECT_EQ(known_sm_limits().size(), 3u);
}

TEST(Occupancy, ImpossibleLaunchesHaveZeroBlocksAndTheirLimiter) {
  const SmLimits limits = *sm_limits("sm_90");
  EXPECT_EQ(theoretical_occupancy(limits, {0, 32, 0}).limiter, OccupancyLimiter::block_size);
  EXPECT_EQ(theoretical_occupancy(limits, {128, 256, 0}).limiter, OccupancyLimiter::registers);
  const Occupancy big = theoretical_occupancy(limits, {128, 32, 228 * 1024});
  EXPECT_EQ(big.blocks_per_sm, 0);
  EXPECT_EQ(big.limiter, OccupancyLimiter::shared_memory);
  EXPECT_DOUBLE_EQ(big.occupancy_pct, 0.0);
}

}  // namespace
}  // namespace ktune::analyze::test

// The harness's device writes, checked without a GPU: the bytes a constant fill writes, and that no
// harness source writes device memory outside its stream (the cause of the hot-mode "got 0" tails).
#include "constant_fill.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace ktune::bench::detail {
namespace {

template <class T>
std::vector<std::byte> bytes_of(T v) {
  std::vector<std::byte> out(sizeof v);
  std::memcpy(out.data(), &v, sizeof v);
  return out;
}

TEST(ConstantFill, ZeroOfAnyWidthIsAByteMemsetOverTheWholeBuffer) {
  for (const auto& zero : {bytes_of(0.0f), bytes_of(0.0), bytes_of(std::uint16_t{0})}) {
    const ConstantFill f = plan_constant_fill(zero, 1000);
    EXPECT_EQ(f.kind, ConstantFill::Kind::memset8);
    EXPECT_EQ(f.value, 0u);
    EXPECT_EQ(f.units, 1000 * zero.size());
  }
  const ConstantFill ones = plan_constant_fill(bytes_of(std::int32_t{-1}), 3);
  EXPECT_EQ(ones.kind, ConstantFill::Kind::memset8);
  EXPECT_EQ(ones.value, 0xFFu);
  EXPECT_EQ(ones.units, 12u);
}

TEST(ConstantFill, FourByteValuesAreAWordMemsetOfTheirBits) {
  const ConstantFill f = plan_constant_fill(bytes_of(1.5f), 1 << 20);
  EXPECT_EQ(f.kind, ConstantFill::Kind::memset32);
  EXPECT_EQ(f.value, 0x3FC00000u);  // 1.5f
  EXPECT_EQ(f.units, 1u << 20);
  EXPECT_TRUE(f.host.empty());
  const ConstantFill i = plan_constant_fill(bytes_of(std::int32_t{7}), 5);
  EXPECT_EQ(i.kind, ConstantFill::Kind::memset32);
  EXPECT_EQ(i.value, 7u);
}

TEST(ConstantFill, OtherWidthsAreStagedCopiesOfTheRepeatedElement) {
  const ConstantFill h = plan_constant_fill(bytes_of(std::uint16_t{0x3C00}), 3);  // f16 1.0
  ASSERT_EQ(h.kind, ConstantFill::Kind::copy);
  ASSERT_EQ(h.host.size(), 6u);
  for (std::size_t k = 0; k < 3; ++k) {
    std::uint16_t v;
    std::memcpy(&v, h.host.data() + 2 * k, 2);
    EXPECT_EQ(v, 0x3C00);
  }
  const ConstantFill d = plan_constant_fill(bytes_of(2.5), 2);
  ASSERT_EQ(d.kind, ConstantFill::Kind::copy);
  double back[2];
  std::memcpy(back, d.host.data(), sizeof back);
  EXPECT_EQ(back[0], 2.5);
  EXPECT_EQ(back[1], 2.5);
}

TEST(ConstantFill, NothingToWriteIsNoOperation) {
  EXPECT_EQ(plan_constant_fill(bytes_of(1.5f), 0).kind, ConstantFill::Kind::none);
  EXPECT_EQ(plan_constant_fill({}, 10).kind, ConstantFill::Kind::none);
}

// The harness's stream is non-blocking: a blocking copy into device memory or a blocking memset
// runs on the legacy stream and does not order with it (and from pageable memory the copy returns
// before its data lands). Every device write of the harness must name its stream.
TEST(HarnessSources, WriteDeviceMemoryOnlyOnTheirStream) {
  const std::filesystem::path dir = std::filesystem::path(KTUNE_SOURCE_DIR) / "src" / "bench";
  // cuMemcpy, cuMemcpyHtoD, cuMemcpyDtoD, cuMemcpyPeer, cuMemsetD8/16/32, cuMemsetD2D*, not *Async.
  const std::regex blocking_write(
      R"(\bcu(Memcpy(HtoD|DtoD|Peer)?|MemsetD(8|16|32|2D8|2D16|2D32))(_v2)?\s*\()");
  std::size_t scanned = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".cpp" && e.path().extension() != ".hpp") continue;
    std::ifstream in(e.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
      EXPECT_FALSE(std::regex_search(line.substr(0, line.find("//")), blocking_write))
          << e.path().filename().string() << ":" << n << ": " << line;
    ++scanned;
  }
  EXPECT_GE(scanned, 3u);
}

}  // namespace
}  // namespace ktune::bench::detail

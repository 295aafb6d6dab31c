// `ktune gate` as a user runs it, on a machine without a GPU: usage errors exit 2 with one
// sentence, never 1 (which means a regression).
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../cli/run_ktune.hpp"

namespace ktune::test {
namespace {

using ::testing::HasSubstr;

TEST(GateCli, BadSuiteIsAUsageErrorNamingFileAndKey) {
  const auto dir = std::filesystem::temp_directory_path() / "ktune_gate_cli_test";
  std::filesystem::create_directories(dir);
  const auto suite = dir / "bad.toml";
  std::ofstream(suite) << "[[benchmark]]\nname = \"a\"\nspec = \"x.json\"\nmode = \"warm\"\n";
  const RunResult r =
      run_ktune("--db " + (dir / "g.db").string() + " gate check " + suite.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("bad.toml: benchmark 1 (\"a\"): \"mode\" must be"));
  std::filesystem::remove_all(dir);
}

TEST(GateCli, SubcommandIsRequiredAndHistoryOfNothingSaysSo) {
  EXPECT_EQ(run_ktune("gate").exit_code, 2);
  const auto dir = std::filesystem::temp_directory_path() / "ktune_gate_cli_test2";
  const RunResult r = run_ktune("--db " + (dir / "none.db").string() + " gate history gemv");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("no ktune store"));
}

}  // namespace
}  // namespace ktune::test

#include <gtest/gtest.h>

#include <algorithm>

#include "ktune/cuda/driver.hpp"
#include "run_ktune.hpp"

namespace ktune::test {
namespace {

TEST(Cli, HelpListsTheSubcommands) {
  const RunResult r = run_ktune("--help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* cmd : {"info", "calibrate"})
    EXPECT_NE(r.out.find(cmd), std::string::npos) << cmd;
}

TEST(Cli, VersionNamesTheCommit) {
  const RunResult r = run_ktune("--version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("ktune "), std::string::npos);
}

TEST(Cli, UnknownSubcommandIsAUsageError) {
  const RunResult r = run_ktune("frobnicate");
  EXPECT_NE(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("frobnicate"), std::string::npos) << r.err;
}

// Without a GPU every GPU command fails with exactly one line naming the missing driver/GPU.
class GpuCommandWithoutGpu : public ::testing::TestWithParam<const char*> {};

TEST_P(GpuCommandWithoutGpu, FailsWithOneSentence) {
  if (cuda::gpu_available()) GTEST_SKIP() << "a GPU is present; the GPU tier covers this command";
  const RunResult r = run_ktune(GetParam());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("NVIDIA"), std::string::npos) << r.err;
}

INSTANTIATE_TEST_SUITE_P(Commands, GpuCommandWithoutGpu,
                         ::testing::Values("info", "info --json", "calibrate", "calibrate --json"));

}  // namespace
}  // namespace ktune::test

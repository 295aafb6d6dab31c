#include "ktune/core/paths.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "ktune/core/error.hpp"

namespace fs = std::filesystem;

namespace ktune {
namespace {

class PathsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ktune-paths-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    ::setenv("KTUNE_HOME", dir_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("KTUNE_HOME");
    fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_F(PathsTest, KtuneHomeWins) {
  EXPECT_EQ(data_dir(), dir_);
  EXPECT_EQ(default_db_path(), dir_ / "ktune.db");
  EXPECT_TRUE(fs::is_directory(dir_));
}

TEST_F(PathsTest, AtomicWriteReplacesWholeFileAndLeavesNoTemp) {
  const fs::path f = dir_ / "sub" / "a.json";
  write_file_atomic(f, "first");
  write_file_atomic(f, "second, longer");
  EXPECT_EQ(read_file(f), "second, longer");
  int entries = 0;
  for (auto& e : fs::directory_iterator(f.parent_path())) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
}

TEST_F(PathsTest, ReadingAMissingFileNamesIt) {
  try {
    read_file(dir_ / "nope.json");
    FAIL() << "expected ktune::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nope.json"), std::string::npos);
  }
}

}  // namespace
}  // namespace ktune

#include "ktune/core/paths.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

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

TEST_F(PathsTest, DefaultStorePathCreatesNothing) {
  // A command that only reads the store must leave a fresh machine as it found it.
  EXPECT_EQ(default_db_path(), dir_ / "ktune.db");
  EXPECT_FALSE(fs::exists(dir_));
}

TEST_F(PathsTest, OutputThatIsAnInputIsRefusedUnderAnyName) {
  fs::create_directories(dir_ / "sub");
  const fs::path trace = dir_ / "sub" / "t.ktrace";
  write_file_atomic(trace, "trace bytes");
  fs::create_hard_link(trace, dir_ / "link.ktrace");
  for (const fs::path& out :
       {trace, dir_ / "sub" / ".." / "sub" / "t.ktrace", dir_ / "link.ktrace"}) {
    try {
      check_output_path(out, {dir_ / "other", trace});
      FAIL() << "expected ktune::Error for " << out;
    } catch (const Error& e) {
      const std::string why = e.what();
      EXPECT_NE(why.find("refusing to write " + out.string()), std::string::npos) << why;
      EXPECT_NE(why.find(trace.string()), std::string::npos) << why;
    }
  }
  EXPECT_EQ(read_file(trace), "trace bytes");
  EXPECT_NO_THROW(check_output_path(dir_ / "sub" / "report.md", {trace}));  // new file
  write_file_atomic(dir_ / "sub" / "report.md", "old report");
  EXPECT_NO_THROW(check_output_path(dir_ / "sub" / "report.md", {trace}));  // replaced: fine
}

TEST_F(PathsTest, WritingOverADirectoryOrPipeIsRefusedAndSaysWhy) {
  fs::create_directories(dir_ / "out.json");
  try {
    write_file_atomic(dir_ / "out.json", "x");
    FAIL() << "expected ktune::Error";
  } catch (const Error& e) {
    const std::string why = e.what();
    EXPECT_NE(why.find("is a directory"), std::string::npos) << why;
    EXPECT_EQ(why.find("Success"), std::string::npos) << why;  // errno of a call that succeeded
  }
  EXPECT_TRUE(fs::is_directory(dir_ / "out.json"));
  // A named pipe stands in for /dev/null: as root, a rename would have replaced the device node.
  const fs::path fifo = dir_ / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    write_file_atomic(fifo, "x");
    FAIL() << "expected ktune::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a named pipe, not a regular file"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(fs::is_fifo(fifo));
  for (auto& entry : fs::directory_iterator(dir_))
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path();
}

}  // namespace
}  // namespace ktune

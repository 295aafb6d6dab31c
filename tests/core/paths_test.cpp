#include "ktune/core/paths.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <sstream>

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

// /dev/zero took 8 GB in 20 s, a FIFO blocked for ever: read_file reads regular files only,
// never blocks on opening, and stops at its bound with one sentence.
TEST_F(PathsTest, ReadingIsBoundedAndRefusesWhatIsNoFile) {
  fs::create_directories(dir_);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(read_file("/dev/zero"), Error);
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    read_file(fifo);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("it is a named pipe"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_file(dir_), Error);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  write_file_atomic(dir_ / "big", std::string(1000, 'x'));
  EXPECT_EQ(read_file(dir_ / "big", 1000).size(), 1000u);
  try {
    read_file(dir_ / "big", 999);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds 1000 bytes, more than the 999 bytes"),
              std::string::npos)
        << e.what();
  }
  std::istringstream in(std::string(2000, 'y'));
  EXPECT_THROW(read_stream(in, "stdin", 1999), Error);
}

TEST_F(PathsTest, ConfinedPathsStayInsideTheirFolderOrAnAllowedOne) {
  fs::create_directories(dir_ / "spec" / "sub");
  fs::create_directories(dir_ / "shared");
  const fs::path root = dir_ / "spec";
  EXPECT_EQ(confined_path(root, root, "sub/k.cu", "f"), root / "sub/k.cu");
  EXPECT_EQ(confined_path(root, root, "missing.cu", "f"), root / "missing.cu");
  for (const char* out : {"../shared/k.cu", "/etc/shadow", "sub/../../x", ".."}) {
    try {
      confined_path(root, root, out, "spec.json: field KernelFile");
      FAIL() << out;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("spec.json: field KernelFile names"), std::string::npos)
          << e.what();
    }
  }
  fs::create_directory_symlink(dir_ / "shared", root / "out");
  EXPECT_THROW(confined_path(root, root, "out/k.cu", "f"), Error);
  set_allowed_folders({dir_ / "shared"});
  EXPECT_NO_THROW(confined_path(root, root, "../shared/k.cu", "f"));
  EXPECT_NO_THROW(confined_path(root, root, "out/k.cu", "f"));
  set_allowed_folders({});
  // A folder whose name begins like the root's is not inside it.
  fs::create_directories(dir_ / "spec2");
  EXPECT_THROW(confined_path(root, root, "../spec2/k.cu", "f"), Error);
}

// Ctrl-C, SIGTERM or `timeout` during a write left OUT.tmpPID files of up to 14 GB behind.
TEST_F(PathsTest, AWriteEndedByASignalLeavesNoTemporaryFile) {
  fs::create_directories(dir_);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::signal(sig, SIG_DFL);
      write_file_atomic(dir_ / "out.json", [&](std::ostream& out) {
        out << std::string(1 << 20, 'x') << std::flush;
        ::kill(::getpid(), sig);  // as if the user pressed Ctrl-C mid-write
        for (;;) ::pause();
      });
      ::_exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << sig;
    for (auto& entry : fs::directory_iterator(dir_))
      EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path();
  }
  // A handler the program installed (a session's graceful stop) still runs, and the write ends
  // through its normal path.
  static volatile sig_atomic_t seen = 0;
  ::signal(SIGTERM, [](int) { seen = 1; });
  write_file_atomic(dir_ / "out.json", [&](std::ostream& out) {
    out << "done";
    ::raise(SIGTERM);
  });
  ::signal(SIGTERM, SIG_DFL);
  EXPECT_EQ(seen, 1);
  EXPECT_EQ(read_file(dir_ / "out.json"), "done");
}

}  // namespace
}  // namespace ktune

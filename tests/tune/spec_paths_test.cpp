// What a spec names is read only inside its folder (or one the user allowed), never a special file,
// never without a bound: a worker runs specs that others queued. Also the other ways a hostile
// spec reached what it should not: compiler options, parameter names, sizes, huge spaces.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/spec/space.hpp"
#include "ktune/spec/spec.hpp"
#include "ktune/tune/spec_problem.hpp"

namespace ktune::tune {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::Not;

class SpecPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ktune-spec-paths-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "specs");
    const fs::path src = fs::path(KTUNE_SOURCE_DIR) / "kernels" / "copy";
    fs::copy_file(src / "copy.cu", dir_ / "specs" / "copy.cu");
    spec_ = json::parse(read_file(src / "copy.json"));
    std::ofstream(dir_ / "secret.txt") << "root:SECRET-HASH:19000:0:99999:7:::\n";
  }
  void TearDown() override {
    set_allowed_folders({});
    fs::remove_all(dir_);
  }
  json& kernel() { return spec_["KernelSpecification"]; }
  fs::path write() {
    const fs::path p = dir_ / "specs" / "spec.json";
    std::ofstream(p) << spec_.dump(2);
    return p;
  }
  // The sentence loading (and, when it loads, making the problem of) the spec throws.
  std::string error() {
    try {
      const ProblemSpec s = ProblemSpec::load(write());
      make_problem(s, default_config(s), {});
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
  json spec_;
};

TEST_F(SpecPaths, TheCopySpecLoadsAsIs) {
  EXPECT_EQ(error(), "");
}

// KernelFile "../../../etc/shadow" was read and its first line printed in NVRTC's error.
TEST_F(SpecPaths, AKernelFileOutsideTheFolderIsRefusedUnread) {
  for (const std::string& name :
       std::vector<std::string>{"../secret.txt", (dir_ / "secret.txt").string(),
                                "../../../../../../../../etc/shadow", "/etc/passwd"}) {
    kernel()["KernelFile"] = name;
    const std::string why = error();
    EXPECT_THAT(why, HasSubstr("outside the spec's folder")) << name;
    EXPECT_THAT(why, HasSubstr("--allow-path")) << name;
    EXPECT_THAT(why, Not(HasSubstr("SECRET"))) << name;
  }
  // A link beside the spec that leads out is outside too.
  fs::create_symlink(dir_ / "secret.txt", dir_ / "specs" / "link.cu");
  kernel()["KernelFile"] = "link.cu";
  EXPECT_THAT(error(), HasSubstr("outside the spec's folder"));
  // Unless the user allowed that folder.
  set_allowed_folders({dir_});
  kernel()["KernelFile"] = "../secret.txt";
  EXPECT_THAT(error(), Not(HasSubstr("outside")));
}

TEST_F(SpecPaths, DataSourceAndReferenceKernelStayInsideToo) {
  kernel()["Arguments"][0]["DataSource"] = "../secret.txt";
  EXPECT_THAT(error(), HasSubstr("DataSource names ../secret.txt, which is outside"));
  kernel()["Arguments"][0].erase("DataSource");
  spec_["ktune"]["reference"] = {{"kernel_name", "ref"}, {"kernel_file", "../secret.txt"}};
  EXPECT_THAT(error(), HasSubstr("kernel_file names ../secret.txt, which is outside"));
}

// /dev/zero as KernelFile took 8 GB in 20 s; a FIFO blocked for ever.
TEST_F(SpecPaths, SpecialFilesAreRefusedWithoutBlocking) {
  set_allowed_folders({"/dev"});
  const auto start = std::chrono::steady_clock::now();
  kernel()["KernelFile"] = "/dev/zero";
  EXPECT_THAT(error(), HasSubstr("/dev/zero: it is a character device"));
  ASSERT_EQ(::mkfifo((dir_ / "specs" / "fifo.cu").c_str(), 0600), 0);
  kernel()["KernelFile"] = "fifo.cu";
  EXPECT_THAT(error(), HasSubstr("fifo.cu: it is a named pipe"));
  fs::create_directories(dir_ / "specs" / "adir");
  kernel()["KernelFile"] = "adir";
  EXPECT_THAT(error(), HasSubstr("adir: it is a directory"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  // And the spec itself, as `tune`, `queue add` and the gate load it.
  EXPECT_THAT(
      [&] {
        try {
          ProblemSpec::load(dir_ / "specs" / "fifo.cu");
        } catch (const Error& e) {
          return std::string(e.what());
        }
        return std::string();
      }(),
      HasSubstr("named pipe"));
}

TEST_F(SpecPaths, IncludesThatLeaveTheFolderAreRefused) {
  for (const std::string line : {"#include \"../secret.txt\"", "#include </etc/shadow>",
                                 "#  include \"../../../../../../../etc/shadow\""}) {
    std::ofstream(dir_ / "specs" / "bad.cu") << line << "\n__global__ void copy_f32() {}\n";
    kernel()["KernelFile"] = "bad.cu";
    const std::string why = error();
    EXPECT_THAT(why, HasSubstr("outside the spec's folder")) << line;
    EXPECT_THAT(why, Not(HasSubstr("SECRET"))) << line;
  }
  // Headers beside the kernel, and the toolkit's, are what includes are for.
  std::ofstream(dir_ / "specs" / "util.h") << "#pragma once\n";
  std::ofstream(dir_ / "specs" / "good.cu")
      << "#include \"util.h\"\n#include <cuda_fp16.h>\n#include \"cuda_bf16.h\"\n";
  kernel()["KernelFile"] = "good.cu";
  EXPECT_EQ(error(), "");
}

// Issue 44: a first line including a 50 KB file name overflowed the stack of std::regex and
// segfaulted `tune --dry-run`. The name is no file (too long for the file system), so NVRTC would
// say it is missing; quoted and climbing out, it is refused, quoted in part.
TEST_F(SpecPaths, IncludesOfHugeNamesAreScannedWithoutRecursion) {
  const std::string huge(50'000, 'a');
  std::ofstream(dir_ / "specs" / "huge.cu")
      << "#include \"" << huge << ".h\"\n__global__ void copy_f32() {}\n";
  kernel()["KernelFile"] = "huge.cu";
  EXPECT_EQ(error(), "");
  std::ofstream(dir_ / "specs" / "huge.cu") << "#include \"../" << huge << "\"\n";
  const std::string why = error();
  EXPECT_THAT(why, HasSubstr("outside the spec's folder"));
  EXPECT_LT(why.size(), 1000u);
  std::ofstream(dir_ / "specs" / "huge.cu") << "#include <" << std::string(1'000'000, 'b');
  EXPECT_EQ(error(), "");  // never closed: no include
}

TEST_F(SpecPaths, CompilerOptionsThatReadOrWriteFilesOutsideAreRefused) {
  for (const json& opts :
       {json::array({"-include", "/etc/shadow"}), json::array({"--pre-include=../secret.txt"}),
        json::array({"-I/etc"}), json::array({"-I", ".."}), json::array({"--include-path=../.."}),
        json::array({"--fdevice-time-trace=/tmp/x"}), json::array({"--create-pch=x.pch"})}) {
    kernel()["CompilerOptions"] = opts;
    EXPECT_THAT(error(), AnyOf(HasSubstr("outside the spec's folder"), HasSubstr("remove it")))
        << opts.dump();
  }
  fs::create_directories(dir_ / "specs" / "inc");
  kernel()["CompilerOptions"] =
      json::array({"-std=c++17", "-Iinc", "-I", "inc", "-DX=1", "-lineinfo"});
  EXPECT_EQ(error(), "");
}

// Parameter names were checked on their first character only: "X -DEVIL=1 -I/etc" passed, and
// became compiler options.
TEST_F(SpecPaths, ParameterNamesAreWholeIdentifiers) {
  for (const std::string name : {"X -DEVIL=1 -I/etc", "A=1", "B-C", "9x", "x y", ""}) {
    spec_["ConfigurationSpace"]["TuningParameters"][0]["Name"] = name;
    EXPECT_THAT(error(), HasSubstr("is not a valid identifier")) << name;
  }
}

// An argument of 2**62+1 floats was "4 bytes" (the byte count wrapped), and the dry run passed.
TEST_F(SpecPaths, ArgumentSizesThatWrapAreRefused) {
  for (const std::string size : {"2**62+1", "2**61", "2**40"}) {
    kernel()["Arguments"][0]["Size"] = size;
    EXPECT_THAT(error(), HasSubstr("more than the 1 TiB any GPU holds")) << size;
  }
}

// A space of 10^13 points enumerated for ever (--dry-run) or grew a worker until out of memory;
// then it was refused. Now it is counted at once and searched through a bounded random sample.
TEST_F(SpecPaths, AHugeSpaceIsSampledAtOnce) {
  std::vector<Parameter> params;
  for (int i = 0; i < 13; ++i) {
    Parameter p;
    p.name = "P" + std::to_string(i);
    for (int v = 0; v < 10; ++v) p.values.emplace_back(static_cast<std::int64_t>(v));
    params.push_back(p);
  }
  const SearchSpace space(params, {});
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(space.count(), 10'000'000'000'000u);
  const IndexedSpace index(space);
  EXPECT_TRUE(index.sampled());
  EXPECT_EQ(index.size(), kSampledConfigurations);
  EXPECT_EQ(index.valid_count(), 1e13);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace ktune::tune

// NVRTC needs no GPU: compilation, its error log and the on-disk binary cache are tested on CPU.
#include "ktune/cuda/nvrtc.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace ktune::cuda {
namespace {

constexpr const char* kSaxpy = R"(
#include <cuda_fp16.h>
template <int N>
__global__ void scale(__half* x, float a) { int i = blockIdx.x * N + threadIdx.x; x[i] = __float2half(a * __half2float(x[i])); }
)";

TEST(Nvrtc, CompilesTemplatedKernelToCubinWithLoweredName) {
  CompileOptions o;
  o.arch = "sm_90";
  o.name_expressions = {"scale<128>"};
  const CompiledProgram p = compile(kSaxpy, "scale.cu", o);
  EXPECT_GT(p.cubin.size(), 100u);
  EXPECT_EQ(p.cubin.substr(1, 3), "ELF");
  EXPECT_NE(p.lowered_names.at("scale<128>").find("scale"), std::string::npos);
}

TEST(Nvrtc, CompileErrorCarriesLog) {
  try {
    compile("__global__ void k() { undefined_thing(); }", "bad.cu", {});
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.cu"), std::string::npos);
    EXPECT_NE(e.log().find("undefined_thing"), std::string::npos) << e.log();
  }
}

TEST(Nvrtc, DiskCacheHitsAndSurvivesCorruption) {
  const fs::path dir = fs::temp_directory_path() / ("ktune-kcache-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  CompileOptions o;
  o.name_expressions = {"scale<64>"};
  const auto first = compile_cached(kSaxpy, "scale.cu", o, dir);
  EXPECT_FALSE(first.from_cache);
  const auto second = compile_cached(kSaxpy, "scale.cu", o, dir);
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(first.cubin, second.cubin);
  EXPECT_EQ(second.lowered_names, first.lowered_names);

  // A different option is a different key.
  CompileOptions o2 = o;
  o2.flags = {"-DEXTRA=1"};
  EXPECT_NE(compile_cache_key(kSaxpy, o), compile_cache_key(kSaxpy, o2));

  // A truncated entry is ignored and rewritten, never loaded.
  for (auto& e : fs::directory_iterator(dir)) fs::resize_file(e.path(), 20);
  const auto third = compile_cached(kSaxpy, "scale.cu", o, dir);
  EXPECT_FALSE(third.from_cache);
  EXPECT_EQ(third.cubin, first.cubin);

  // A header claiming more bytes than the file holds (2^63), or sizes of another type, is a miss
  // too, not an allocation of what it claims.
  for (const char* header : {R"({"cubin_bytes": 9223372036854775808})", R"({"cubin_bytes": -1})",
                             R"({"cubin_bytes": 4, "log": 7})"}) {
    for (auto& e : fs::directory_iterator(dir))
      std::ofstream(e.path(), std::ios::binary) << "KTUNE-CUBIN-1\n" << header << "\nabcd";
    const auto again = compile_cached(kSaxpy, "scale.cu", o, dir);
    EXPECT_FALSE(again.from_cache) << header;
    EXPECT_EQ(again.cubin, first.cubin) << header;
  }
  fs::remove_all(dir);
}

// A configuration that cannot compile (the hub convolution's shared array past 48 KiB when
// use_shmem is 0) cost a whole compile in every session; NVRTC's rejection is now kept.
TEST(Nvrtc, DiskCacheKeepsARejection) {
  const fs::path dir =
      fs::temp_directory_path() / ("ktune-kcache-reject-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const char* bad = "__global__ void k() { undefined_thing(); }";
  std::string what, log;
  try {
    compile_cached(bad, "bad.cu", {}, dir);
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_TRUE(e.rejected());
    what = e.what();
    log = e.log();
  }
  ASSERT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  // The second time the error comes from the entry: the log it holds is what is thrown.
  const fs::path entry = fs::directory_iterator(dir)->path();
  std::ofstream(entry, std::ios::binary)
      << "KTUNE-REJECT-1\n"
      << R"({"cubin_bytes": 0, "rejected": ")" << what << R"(", "log": "from the cache"})"
      << "\n";
  try {
    compile_cached(bad, "bad.cu", {}, dir);
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_EQ(e.what(), what);
    EXPECT_EQ(e.log(), "from the cache");
  }
  // A binary's entry without a binary, or a rejection's without its sentence, is a miss: NVRTC
  // runs and says it again.
  for (const char* damaged : {"KTUNE-CUBIN-1\n{\"cubin_bytes\": 0}\n",
                              "KTUNE-REJECT-1\n{\"cubin_bytes\": 0, \"log\": \"x\"}\n"}) {
    std::ofstream(entry, std::ios::binary) << damaged;
    try {
      compile_cached(bad, "bad.cu", {}, dir);
      FAIL();
    } catch (const CompileError& e) {
      EXPECT_EQ(e.log(), log) << damaged;
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ktune::cuda

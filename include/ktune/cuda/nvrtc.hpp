#pragma once
// Run-time compilation of CUDA C++ with NVRTC (linked; it needs no GPU), and an on-disk cache of
// compiled binaries keyed by source, options, target arch and NVRTC version.
#include <nvrtc.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ktune/core/error.hpp"
#include "ktune/cuda/check.hpp"

namespace ktune::cuda {

inline void check_nvrtc(nvrtcResult r, const char* call, const char* file, int line) {
  if (r != NVRTC_SUCCESS) throw_call_failed(file, line, call, nvrtcGetErrorString(r), r);
}
inline bool warn_nvrtc(nvrtcResult r, const char* call, const char* file, int line) {
  if (r != NVRTC_SUCCESS) warn_call_failed(file, line, call, nvrtcGetErrorString(r), r);
  return r == NVRTC_SUCCESS;
}

// A compilation that NVRTC rejected; what() names the program, log() is NVRTC's full log.
// rejected(): the code itself was refused (NVRTC_ERROR_COMPILATION), so the same source, options
// and NVRTC refuse it again; other failures (out of memory) may not recur.
class CompileError : public Error {
 public:
  CompileError(const std::string& what, std::string log, bool rejected = true)
      : Error(what), log_(std::move(log)), rejected_(rejected) {}
  const std::string& log() const { return log_; }
  bool rejected() const { return rejected_; }

 private:
  std::string log_;
  bool rejected_;
};

struct CompileOptions {
  std::string arch = "sm_90";      // "sm_90", "sm_90a", ...: a real arch, so we get a cubin
  std::vector<std::string> flags;  // extra NVRTC options ("-DBLOCK=128", "-std=c++17")
  std::vector<std::string> name_expressions;  // templated kernels to instantiate and name
  // Headers the source includes by name, given in memory (name as written in #include, content):
  // they are part of the cache key, so editing one recompiles.
  std::vector<std::pair<std::string, std::string>> headers;
};

struct CompiledProgram {
  std::string cubin;
  std::string log;                                   // warnings, possibly empty
  std::map<std::string, std::string> lowered_names;  // name expression -> mangled symbol
  bool from_cache = false;
};

// Throws CompileError with NVRTC's log when the source does not compile.
CompiledProgram compile(std::string_view source, std::string_view program_name,
                        const CompileOptions& options);

// compile() through a cache directory (default: cache_dir()/kernels). Concurrent processes may
// share it: entries are written atomically. A corrupt entry is ignored and rewritten. A rejection
// is kept too, and thrown again from the cache: a configuration that cannot compile (a shared
// array past the limit) costs its compile once.
CompiledProgram compile_cached(std::string_view source, std::string_view program_name,
                               const CompileOptions& options,
                               std::optional<std::filesystem::path> cache_directory = std::nullopt);

// Stable key of (source, options, arch, NVRTC version): 32 hex digits.
std::string compile_cache_key(std::string_view source, const CompileOptions& options);

std::pair<int, int> nvrtc_version();

// Where the toolkit's headers are (for cuda_fp16.h and friends): $CUDA_HOME/include, else the
// toolkit ktune was built against.
std::string toolkit_include_dir();

}  // namespace ktune::cuda

#define KTUNE_NVRTC(call) ::ktune::cuda::check_nvrtc((call), #call, __FILE__, __LINE__)
#define KTUNE_NVRTC_WARN(call) ::ktune::cuda::warn_nvrtc((call), #call, __FILE__, __LINE__)

#pragma once
// Compiles a kernel's variants at run time and launches them: each distinct config is compiled
// with NVRTC once per process (and once per machine through compile_cached's disk cache), then
// launched through the driver API. Needs a current context (cuda::PrimaryContext).
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/cuda/resources.hpp"

namespace ktune::runtime {

// {"block": 256, "unroll": 4} -> {"-DBLOCK=256", "-DUNROLL=4"}: parameter names upper-cased.
// Throws ktune::Error for a value that is not a number, bool or identifier-like string.
std::vector<std::string> config_defines(const nlohmann::json& config);

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

class JitLauncher {
 public:
  // `arch` e.g. "sm_90" (store::Environment::arch); `flags` are added to every variant.
  JitLauncher(std::string source, std::string kernel_name, std::string arch,
              std::vector<std::string> flags = {});

  struct Variant {
    cuda::Module module;
    CUfunction function = nullptr;
    bool binary_from_disk_cache = false;
  };
  // The variant of `config`, compiled (or read from the disk cache) and loaded on first use.
  // Thread-safe.
  const Variant& variant(const nlohmann::json& config);
  // Launches `config`'s variant; `args` as for cuLaunchKernel.
  void launch(const nlohmann::json& config, Dim3 grid, Dim3 block, CUstream stream, void** args,
              unsigned shared_bytes = 0);

 private:
  std::string source_, kernel_name_, arch_;
  std::vector<std::string> flags_;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Variant>> variants_;  // config dump -> loaded variant
};

}  // namespace ktune::runtime

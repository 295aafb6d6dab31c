#include "ktune/runtime/jit_launcher.hpp"

#include <cctype>

#include <fmt/format.h>

#include "ktune/core/error.hpp"
#include "ktune/cuda/nvrtc.hpp"

namespace ktune::runtime {

std::vector<std::string> config_defines(const nlohmann::json& config) {
  if (!config.is_object())
    throw Error(fmt::format("a kernel config must be a JSON object, not {}.", config.type_name()));
  std::vector<std::string> out;
  for (const auto& [name, value] : config.items()) {
    std::string macro;
    for (char c : name) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
        throw Error(fmt::format("config parameter '{}' is not an identifier; rename it.", name));
      macro += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    std::string text;
    if (value.is_boolean())
      text = value.get<bool>() ? "1" : "0";
    else if (value.is_number())
      text = value.dump();
    else if (value.is_string())
      text = value.get<std::string>();
    else
      throw Error(fmt::format("config parameter '{}' is {}; use a number, bool or string.", name,
                              value.type_name()));
    out.push_back(fmt::format("-D{}={}", macro, text));
  }
  return out;
}

JitLauncher::JitLauncher(std::string source, std::string kernel_name, std::string arch,
                         std::vector<std::string> flags)
    : source_(std::move(source)),
      kernel_name_(std::move(kernel_name)),
      arch_(std::move(arch)),
      flags_(std::move(flags)) {}

const JitLauncher::Variant& JitLauncher::variant(const nlohmann::json& config) {
  const std::string key = config.dump();
  std::lock_guard lock(mutex_);
  if (auto it = variants_.find(key); it != variants_.end()) return *it->second;
  cuda::CompileOptions opts;
  opts.arch = arch_;
  opts.flags = flags_;
  for (auto& d : config_defines(config)) opts.flags.push_back(std::move(d));
  const cuda::CompiledProgram prog = cuda::compile_cached(source_, kernel_name_, opts);
  auto v = std::make_unique<Variant>(Variant{cuda::Module(prog.cubin), nullptr, prog.from_cache});
  v->function = v->module.function(kernel_name_);
  return *variants_.emplace(key, std::move(v)).first->second;
}

void JitLauncher::launch(const nlohmann::json& config, Dim3 grid, Dim3 block, CUstream stream,
                         void** args, unsigned shared_bytes) {
  const Variant& v = variant(config);
  KTUNE_CU(cuda::driver().cuLaunchKernel(v.function, grid.x, grid.y, grid.z, block.x, block.y,
                                         block.z, shared_bytes, stream, args, nullptr));
}

}  // namespace ktune::runtime

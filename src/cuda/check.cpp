#include "ktune/cuda/check.hpp"

#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "ktune/core/error.hpp"

namespace ktune::cuda {
namespace {

std::string describe(const char* file, int line, std::string_view call, std::string_view name,
                     long long code) {
  std::string_view base(file);
  if (auto slash = base.rfind("/src/"); slash != std::string_view::npos)
    base = base.substr(slash + 1);
  return fmt::format("{}:{}: {} failed: {} ({})", base, line, call, name, code);
}

}  // namespace

void throw_call_failed(const char* file, int line, std::string_view call,
                       std::string_view error_name, long long code, std::string_view detail) {
  std::string msg = describe(file, line, call, error_name, code);
  if (!detail.empty()) msg += fmt::format(":\n{}", detail);
  throw Error(msg);
}

void warn_call_failed(const char* file, int line, std::string_view call,
                      std::string_view error_name, long long code) {
  std::fprintf(stderr, "ktune: warning: %s\n",
               describe(file, line, call, error_name, code).c_str());
}

}  // namespace ktune::cuda

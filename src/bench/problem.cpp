#include "ktune/bench/problem.hpp"

#include <algorithm>
#include <cctype>
#include <initializer_list>

namespace ktune::bench {

std::optional<cuda::DType> scalar_type_for(cuda::DType spec_type, std::size_t param_bytes) {
  using cuda::DType;
  if (cuda::dtype_bytes(spec_type) == param_bytes) return spec_type;
  const auto pick = [&](std::initializer_list<DType> kind) -> std::optional<DType> {
    for (const DType t : kind)
      if (cuda::dtype_bytes(t) == param_bytes) return t;
    return std::nullopt;
  };
  if (ktune::is_floating(spec_type)) return pick({DType::f64, DType::f32, DType::f16});
  switch (spec_type) {
    case DType::u64:
    case DType::u32:
    case DType::u16:
    case DType::u8:
      return pick({DType::u64, DType::u32, DType::u16, DType::u8});
    default:
      return pick({DType::i64, DType::i32, DType::i16, DType::i8});
  }
}

namespace {

// Whether `text` names a CUDA runtime entity NVRTC's --minimal mode leaves out (cudaMalloc,
// cudaTextureObject_t, tex1Dfetch, surf2Dwrite: identifiers starting with cuda, tex or surf) or
// launches a kernel from the device (<<<).
bool names_runtime(const std::string& text) {
  if (text.find("<<<") != std::string::npos) return true;
  const auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (const char* prefix : {"cuda", "tex", "surf"})
    for (std::size_t at = text.find(prefix); at != std::string::npos;
         at = text.find(prefix, at + 1))
      if (at == 0 || !ident(text[at - 1])) return true;
  return false;
}

// Whether every #include in `text` names one of the headers given in memory.
bool includes_only(const std::string& text,
                   const std::vector<std::pair<std::string, std::string>>& headers) {
  for (std::size_t at = text.find("include"); at != std::string::npos;
       at = text.find("include", at + 1)) {
    std::size_t hash = at;
    while (hash > 0 && (text[hash - 1] == ' ' || text[hash - 1] == '\t')) --hash;
    if (hash == 0 || text[hash - 1] != '#') continue;
    const std::size_t open = text.find_first_of("<\"\n", at);
    if (open == std::string::npos || text[open] == '\n') return false;  // a macro-built include
    const std::size_t close = text.find_first_of(">\"\n", open + 1);
    if (close == std::string::npos) return false;
    const std::string name = text.substr(open + 1, close - open - 1);
    if (std::none_of(headers.begin(), headers.end(),
                     [&](const auto& h) { return h.first == name; }))
      return false;
  }
  return true;
}

// NVRTC's --minimal mode skips parsing the CUDA runtime's declarations (0.03-0.13 s of a 0.4-9 s
// compile of the hub convolution, logs/2026-11-28-compile-cpu.md) and gives the same binary for
// code that uses none of what it leaves out. Used only where the code, and every header it
// includes (all given in memory), names none of it.
bool minimal_suffices(const KernelLaunch& l) {
  if (names_runtime(l.source) || !includes_only(l.source, l.headers)) return false;
  return std::none_of(l.headers.begin(), l.headers.end(), [&](const auto& h) {
    return names_runtime(h.second) || !includes_only(h.second, l.headers);
  });
}

}  // namespace

cuda::CompileOptions compile_options(const KernelLaunch& launch, const std::string& arch) {
  cuda::CompileOptions o;
  o.arch = arch;
  o.flags = launch.flags;
  if (minimal_suffices(launch)) o.flags.push_back("--minimal");
  o.name_expressions = {launch.kernel_name};
  o.headers = launch.headers;
  return o;
}

}  // namespace ktune::bench

#include "ktune/cuda/nvrtc.hpp"

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/paths.hpp"

namespace fs = std::filesystem;

namespace ktune::cuda {
namespace {

struct ProgramDeleter {
  void operator()(nvrtcProgram p) const { KTUNE_NVRTC_WARN(nvrtcDestroyProgram(&p)); }
};

std::uint64_t fnv1a(std::string_view s, std::uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

// Magic + JSON header line + cubin bytes: a truncated or foreign file fails the size check. A
// rejection has a magic of its own, so a ktune that predates it finds no binary there.
constexpr std::string_view kCacheMagic = "KTUNE-CUBIN-1\n";
constexpr std::string_view kRejectionMagic = "KTUNE-REJECT-1\n";

// A cache entry: a binary, or NVRTC's rejection of the code (what() and log, no cubin).
struct CacheEntry {
  CompiledProgram program;
  std::optional<std::string> rejection;
};

std::optional<CacheEntry> read_cache_entry(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::string magic;
  if (!std::getline(in, magic)) return std::nullopt;
  magic += '\n';
  const bool rejection = magic == kRejectionMagic;
  if (!rejection && magic != kCacheMagic) return std::nullopt;
  std::string header;
  if (!std::getline(in, header)) return std::nullopt;
  auto meta = nlohmann::json::parse(header, nullptr, false);
  if (meta.is_discarded() || !meta.is_object() || !meta.contains("cubin_bytes") ||
      !meta["cubin_bytes"].is_number_unsigned())
    return std::nullopt;
  // The size the header claims is checked against the file before it is allocated: a damaged
  // entry claiming 2^63 bytes is a miss, not bad_alloc.
  std::error_code ec;
  const auto file_bytes = fs::file_size(file, ec);
  const auto cubin_bytes = meta["cubin_bytes"].get<std::uint64_t>();
  if (ec || cubin_bytes > file_bytes) return std::nullopt;
  CacheEntry e;
  CompiledProgram& p = e.program;
  p.cubin.resize(static_cast<std::size_t>(cubin_bytes));
  if (!in.read(p.cubin.data(), static_cast<std::streamsize>(p.cubin.size()))) return std::nullopt;
  try {
    p.lowered_names = meta.value("lowered_names", std::map<std::string, std::string>{});
    p.log = meta.value("log", "");
    if (rejection) e.rejection = meta.at("rejected").get<std::string>();
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // a header of other types: a foreign file
  }
  if (!rejection && p.cubin.empty()) return std::nullopt;
  p.from_cache = true;
  return e;
}

void write_cache_entry(const fs::path& file, std::string_view magic, const nlohmann::json& meta,
                       const std::string& cubin) {
  std::string blob(magic);
  blob += meta.dump() + "\n" + cubin;
  try {
    write_file_atomic(file, blob);
  } catch (const Error& e) {
    // A read-only cache directory costs speed, not correctness.
    std::fprintf(stderr, "ktune: warning: kernel cache not written: %s\n", e.what());
  }
}

}  // namespace

std::pair<int, int> nvrtc_version() {
  int major = 0, minor = 0;
  KTUNE_NVRTC(nvrtcVersion(&major, &minor));
  return {major, minor};
}

std::string toolkit_include_dir() {
  if (const char* home = std::getenv("CUDA_HOME"); home && *home)
    return std::string(home) + "/include";
  return KTUNE_CUDA_INCLUDE_DIR;
}

CompiledProgram compile(std::string_view source, std::string_view program_name,
                        const CompileOptions& options) {
  const std::string src(source), name(program_name);
  nvrtcProgram raw = nullptr;
  std::vector<const char*> header_sources, header_names;
  for (const auto& [header_name, content] : options.headers) {
    header_names.push_back(header_name.c_str());
    header_sources.push_back(content.c_str());
  }
  KTUNE_NVRTC(nvrtcCreateProgram(&raw, src.c_str(), name.c_str(),
                                 static_cast<int>(options.headers.size()), header_sources.data(),
                                 header_names.data()));
  std::unique_ptr<_nvrtcProgram, ProgramDeleter> prog(raw);
  for (const auto& expr : options.name_expressions)
    KTUNE_NVRTC(nvrtcAddNameExpression(raw, expr.c_str()));

  std::vector<std::string> opts = {"--gpu-architecture=" + options.arch,
                                   "--include-path=" + toolkit_include_dir(), "-default-device"};
  opts.insert(opts.end(), options.flags.begin(), options.flags.end());
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());

  const nvrtcResult rc = nvrtcCompileProgram(raw, static_cast<int>(argv.size()), argv.data());
  CompiledProgram out;
  std::size_t log_size = 0;
  KTUNE_NVRTC(nvrtcGetProgramLogSize(raw, &log_size));
  out.log.resize(log_size);
  KTUNE_NVRTC(nvrtcGetProgramLog(raw, out.log.data()));
  while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  if (rc != NVRTC_SUCCESS)
    throw CompileError(fmt::format("NVRTC could not compile {}: {}", name, nvrtcGetErrorString(rc)),
                       out.log, rc == NVRTC_ERROR_COMPILATION);

  std::size_t cubin_size = 0;
  KTUNE_NVRTC(nvrtcGetCUBINSize(raw, &cubin_size));
  out.cubin.resize(cubin_size);
  KTUNE_NVRTC(nvrtcGetCUBIN(raw, out.cubin.data()));
  for (const auto& expr : options.name_expressions) {
    const char* lowered = nullptr;
    KTUNE_NVRTC(nvrtcGetLoweredName(raw, expr.c_str(), &lowered));
    out.lowered_names[expr] = lowered;
  }
  return out;
}

std::string compile_cache_key(std::string_view source, const CompileOptions& options) {
  const auto [major, minor] = nvrtc_version();
  std::string material = fmt::format("nvrtc {}.{}\narch {}\n", major, minor, options.arch);
  for (const auto& f : options.flags) material += "flag " + f + "\n";
  for (const auto& e : options.name_expressions) material += "expr " + e + "\n";
  for (const auto& [name, content] : options.headers)
    material += fmt::format("header {} {}\n{}\n", name, content.size(), content);
  material += source;
  return fmt::format("{:016x}{:016x}", fnv1a(material, 0xcbf29ce484222325ULL),
                     fnv1a(material, 0x84222325cbf29ce4ULL));
}

CompiledProgram compile_cached(std::string_view source, std::string_view program_name,
                               const CompileOptions& options,
                               std::optional<fs::path> cache_directory) {
  const fs::path dir = cache_directory ? *cache_directory : cache_dir() / "kernels";
  const fs::path file = dir / (compile_cache_key(source, options) + ".cubin");
  if (auto hit = read_cache_entry(file)) {
    if (hit->rejection) throw CompileError(*hit->rejection, hit->program.log);
    return hit->program;
  }
  CompiledProgram fresh;
  try {
    fresh = compile(source, program_name, options);
  } catch (const CompileError& e) {
    if (e.rejected())
      write_cache_entry(file, kRejectionMagic,
                        {{"cubin_bytes", 0}, {"rejected", e.what()}, {"log", e.log()}}, "");
    throw;
  }
  write_cache_entry(file, kCacheMagic,
                    {{"cubin_bytes", fresh.cubin.size()},
                     {"lowered_names", fresh.lowered_names},
                     {"log", fresh.log}},
                    fresh.cubin);
  return fresh;
}

}  // namespace ktune::cuda

#include "inductor_scan.hpp"

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/analyze/triton_kernels.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/core/subprocess.hpp"
#include "ktune/tune/inductor_kernel.hpp"

namespace ktune::cli {

namespace fs = std::filesystem;

namespace {

fs::path inductor_cache_dir(const fs::path& trace_output) {
  if (const char* dir = std::getenv("TORCHINDUCTOR_CACHE_DIR"); dir && *dir) return dir;
  return fs::absolute(trace_output).parent_path() / "inductor";
}

fs::path scan_path(const fs::path& trace_output) {
  std::string name = trace_output.filename().string();
  if (name.size() > 7 && name.ends_with(".ktrace")) name.resize(name.size() - 7);
  return fs::absolute(trace_output).parent_path() / (name + ".inductor.json");
}

}  // namespace

bool is_python_command(const std::vector<std::string>& cmd) {
  if (cmd.empty()) return false;
  const std::string name = fs::path(cmd[0]).filename().string();
  return name.starts_with("python") || name.ends_with(".py") || name == "torchrun";
}

std::vector<std::pair<std::string, std::string>> inductor_profile_env(
    const fs::path& trace_output) {
  std::vector<std::pair<std::string, std::string>> env;
  if (const char* dir = std::getenv("TORCHINDUCTOR_CACHE_DIR"); !dir || !*dir)
    env.emplace_back("TORCHINDUCTOR_CACHE_DIR", inductor_cache_dir(trace_output).string());
  if (const char* bench = std::getenv("TORCHINDUCTOR_BENCHMARK_KERNEL"); !bench || !*bench)
    env.emplace_back("TORCHINDUCTOR_BENCHMARK_KERNEL", "1");
  return env;
}

std::string scan_inductor_cache(const fs::path& trace_output, double timeout_s) {
  const fs::path dir = inductor_cache_dir(trace_output);
  std::error_code ec;
  if (!fs::is_directory(dir, ec) || fs::is_empty(dir, ec)) return "";  // no torch.compile
  const fs::path out = scan_path(trace_output);
  const tune::ChildProgram scan = tune::ktune_inductor_program({"scan", dir.string()});
  subprocess::Options bounds;
  bounds.timeout_s = timeout_s;
  bounds.env = scan.env;
  const subprocess::Result r = subprocess::run(scan.argv, bounds);
  std::string why;
  if (!r.exit.ok()) {
    why = fmt::format("{} {}", scan.argv.front(), r.exit.describe());
    if (!r.err_tail.empty()) {
      std::string tail = r.err_tail;
      while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
      why += ": " + tail.substr(tail.rfind('\n') == std::string::npos ? 0 : tail.rfind('\n') + 1);
    }
  } else {
    try {  // the report reads it: it must be what the report can read
      const auto j = nlohmann::json::parse(r.out);
      (void)analyze::parse_inductor_scan(j, out.string());
      write_file_atomic(out, j.dump(1) + "\n");
      return out.string();
    } catch (const std::exception& e) {
      why = e.what();
    }
  }
  std::fprintf(stderr,
               "ktune: warning: the Triton kernels in %s were not listed (%s); the trace is "
               "complete, and `python3 -m ktune.inductor scan %s > %s` lists them later.\n",
               dir.c_str(), why.c_str(), dir.c_str(), out.c_str());
  return "";
}

}  // namespace ktune::cli

#include "fleet_options.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "ktune/core/error.hpp"

namespace ktune::cli {
namespace fs = std::filesystem;

void add_specs_option(CLI::App& app, std::vector<std::string>& dirs) {
  app.add_option("--specs", dirs,
                 "Folders of T1 specs whose kernels can be tuned (besides the built-in ones)")
      ->envname("KTUNE_SPEC_DIRS")
      ->delimiter(':');
}

std::vector<fs::path> spec_dirs(const std::vector<std::string>& given) {
  std::vector<fs::path> dirs(given.begin(), given.end());
  // The built-in specs: beside the build tree's binary (build/src/cli/ktune -> kernels/) or the
  // installed one (bin/ktune -> share/ktune/kernels).
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (const fs::path& p :
         {exe.parent_path() / "../../../kernels", exe.parent_path() / "../share/ktune/kernels"})
      if (fs::is_directory(p, ec)) dirs.push_back(fs::weakly_canonical(p, ec));
  return dirs;
}

std::string since_timestamp(const std::string& text) {
  if (text.empty()) return "";
  const char unit = text.back();
  const std::string number = text.substr(0, text.size() - 1);
  if ((unit == 'm' || unit == 'h' || unit == 'd') && !number.empty() &&
      number.find_first_not_of("0123456789") == std::string::npos) {
    const long n = std::stol(number);
    const long seconds = n * (unit == 'm' ? 60 : unit == 'h' ? 3600 : 86400);
    const auto t = std::chrono::system_clock::now() - std::chrono::seconds(seconds);
    return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}",
                       fmt::gmtime(std::chrono::system_clock::to_time_t(t)));
  }
  if (text.size() >= 10 && text[4] == '-' && text[7] == '-') return text;
  throw Error(
      fmt::format("--since '{}' is not a time; write a date (2026-11-20), an ISO-8601 UTC time "
                  "(2026-11-20T08:00:00Z) or a span back from now (30m, 24h, 7d).",
                  text));
}

}  // namespace ktune::cli

#include "fleet_options.hpp"

#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdint>
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

namespace {

// Whether `t` is "YYYY-MM-DD[THH:MM[:SS]][Z]" with each field in its calendar range.
bool valid_utc_time(const std::string& t) {
  const auto digits = [&](std::size_t at, std::size_t n, int lo, int hi, int& out) {
    if (at + n > t.size()) return false;
    out = 0;
    for (std::size_t i = at; i < at + n; ++i) {
      if (t[i] < '0' || t[i] > '9') return false;
      out = out * 10 + (t[i] - '0');
    }
    return out >= lo && out <= hi;
  };
  int y, mo, d, h, mi, sec;
  if (!digits(0, 4, 1970, 9999, y) || t.size() < 10 || t[4] != '-' || t[7] != '-' ||
      !digits(5, 2, 1, 12, mo))
    return false;
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  const int days[] = {31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (!digits(8, 2, 1, days[mo - 1], d)) return false;
  std::size_t at = 10;
  if (at < t.size() && t[at] == 'T') {
    if (!digits(at + 1, 2, 0, 23, h) || at + 3 >= t.size() || t[at + 3] != ':' ||
        !digits(at + 4, 2, 0, 59, mi))
      return false;
    at += 6;
    if (at < t.size() && t[at] == ':') {
      if (!digits(at + 1, 2, 0, 60, sec)) return false;
      at += 3;
    }
  }
  if (at < t.size() && t[at] == 'Z') ++at;
  return at == t.size();
}

}  // namespace

std::string since_timestamp(const std::string& text) {
  if (text.empty()) return "";
  const char unit = text.back();
  const std::string number = text.substr(0, text.size() - 1);
  if ((unit == 'm' || unit == 'h' || unit == 'd') && !number.empty() &&
      number.find_first_not_of("0123456789") == std::string::npos) {
    // Back to 1970 at most: 99999999999999d overflowed the seconds and read as the year 1726.
    constexpr std::uint64_t kMaxDays = 365ull * 100;
    const std::uint64_t per = unit == 'm' ? 60 : unit == 'h' ? 3600 : 86400;
    std::uint64_t n = 0;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), n);
    if (ec != std::errc() || end != number.data() + number.size() || n > kMaxDays * 86400 / per)
      throw Error(fmt::format(
          "--since '{}' reaches back further than 100 years; give a span up to {}d, or a date.",
          text, kMaxDays));
    const auto t = std::chrono::system_clock::now() - std::chrono::seconds(n * per);
    return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}",
                       fmt::gmtime(std::chrono::system_clock::to_time_t(t)));
  }
  if (valid_utc_time(text)) return text;
  throw Error(
      fmt::format("--since '{}' is not a time; write a date (2026-11-20), an ISO-8601 UTC time "
                  "(2026-11-20T08:00:00Z) or a span back from now (30m, 24h, 7d).",
                  text));
}

}  // namespace ktune::cli

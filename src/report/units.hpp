#pragma once
// Shared by the people-facing renderers: durations, percentages, bytes and launch shapes as text.
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "ktune/analyze/analysis.hpp"
#include "ktune/core/text.hpp"

namespace ktune::report::detail {

// 450 ns, 12.3 us, 4.567 ms, 1.234 s: three or four significant figures.
inline std::string duration(double ns) {
  return duration_text(ns);
}

inline std::string percent(double fraction) {
  return fmt::format("{:.1f} %", 100.0 * fraction);
}

inline double fraction(std::int64_t part, std::int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// "1.23 TB/s", "456 GFLOP/s": three significant figures with an SI prefix.
inline std::string rate(double v, std::string_view unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P", "E"};
  int i = 0;
  while (std::abs(v) >= 999.5 && i < 6) {
    v /= 1000;
    ++i;
  }
  return fmt::format("{:.3g} {}{}", v, prefixes[i], unit);
}

inline std::string bytes(std::uint64_t b) {
  if (b < 1024) return fmt::format("{} B", b);
  if (b < 1024 * 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  if (b < 1024ull * 1024 * 1024) return fmt::format("{:.1f} MiB", b / 1048576.0);
  return fmt::format("{:.2f} GiB", b / 1073741824.0);
}

inline std::string dim3(const analyze::Dim3& d) {
  return fmt::format("{}x{}x{}", d.x, d.y, d.z);
}

// "grid 128x1x1 block 256x1x1", or "N shapes" when a --by name group saw several.
inline std::string shape_text(const analyze::KernelGroup& g) {
  if (g.distinct_shapes > 1) return fmt::format("{} shapes", g.distinct_shapes);
  return fmt::format("{} {}", dim3(g.shape.grid), dim3(g.shape.block));
}

inline std::string cause_text(analyze::GapCause c) {
  switch (c) {
    case analyze::GapCause::launch_bound:
      return "launch-bound host (launching back to back)";
    case analyze::GapCause::synchronization:
      return "host synchronization";
    case analyze::GapCause::copies:
      return "memory copies";
    case analyze::GapCause::counter_replay:
      return "ktune's counter replay";
    case analyze::GapCause::setup:
      return "first-call set-up (library, module load)";
    case analyze::GapCause::allocation:
      return "memory allocation";
    case analyze::GapCause::host:
      return "host work between launches (Python, CPU)";
    case analyze::GapCause::unattributed:
      return "unattributed";
  }
  return "unattributed";
}

}  // namespace ktune::report::detail

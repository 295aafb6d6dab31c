#include "ktune/core/progress.hpp"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

namespace ktune {

Progress::Progress(std::string label, std::size_t total)
    : label_(std::move(label)),
      total_(total),
      enabled_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_() {}

Progress::~Progress() {
  finish();
}

void Progress::update(std::size_t done, const std::string& detail) {
  if (!enabled_ || finished_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100) && done != total_) return;
  last_draw_ = now;
  const double elapsed_s = std::chrono::duration<double>(now - start_).count();
  std::string line = fmt::format("\r\033[K{}: {}", label_, done);
  if (total_ > 0) {
    line += fmt::format("/{} ({:.0f}%)", total_,
                        100.0 * static_cast<double>(done) / static_cast<double>(total_));
    if (done > 0 && done < total_) {
      const double eta_s =
          elapsed_s / static_cast<double>(done) * static_cast<double>(total_ - done);
      line += fmt::format(" eta {:.0f}s", eta_s);
    }
  }
  line += fmt::format(" {:.1f}s", elapsed_s);
  if (!detail.empty()) line += "  " + detail;
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

void Progress::finish() {
  if (!enabled_ || finished_) return;
  finished_ = true;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
}

}  // namespace ktune

#pragma once
// One status line for long work (tuning, replays, counter collection). Draws on stderr only when
// stderr is a terminal, so piped and CI output stays clean; finish() ends the line.
#include <chrono>
#include <cstddef>
#include <string>

namespace ktune {

class Progress {
 public:
  Progress(std::string label, std::size_t total);  // total 0: unknown, no ETA
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Sets done and an optional detail ("best 1.23 ms"); redraws at most ~10 times a second.
  void update(std::size_t done, const std::string& detail = {});
  void finish();
  bool enabled() const { return enabled_; }

 private:
  std::string label_;
  std::size_t total_;
  bool enabled_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace ktune

#pragma once
// When the tracer captures, from the time-based settings of a TraceWindow: --delay, --duration and
// the periodic windows (--period, --window). Plain host logic, so the tests drive it with made-up
// times; the tracer's writer thread asks it what should hold now and when that changes next. A
// --range capture is the program's to open and close, so it is not scheduled here.
#include <cstdint>
#include <limits>

#include "ktune/trace/ktrace.hpp"

namespace ktune::trace {

class CaptureSchedule {
 public:
  // `window` must have passed check_schedule.
  explicit CaptureSchedule(const TraceWindow& window);

  struct State {
    bool capturing = false;
    // Periodic: the window open now, or else the last one that opened (0 before the first).
    std::uint64_t window = 0;
    // Seconds since the start when `capturing` or `window` changes next; infinity: never.
    double next_change_s = std::numeric_limits<double>::infinity();
  };

  // What holds `t_s` seconds after the tracer started. Windows open at delay + K * period and
  // close `window` later (or at delay + duration, when that comes first); a window as long as
  // its period closes as the next opens.
  State at(double t_s) const;
  bool periodic() const { return period_s_ > 0; }

 private:
  double delay_s_, end_s_, period_s_, window_s_;  // end_s_: delay + duration, or infinity
};

}  // namespace ktune::trace

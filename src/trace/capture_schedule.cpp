#include "capture_schedule.hpp"

#include <algorithm>
#include <cmath>

namespace ktune::trace {

CaptureSchedule::CaptureSchedule(const TraceWindow& w)
    : delay_s_(w.delay_s),
      end_s_(w.duration_s > 0 ? w.delay_s + w.duration_s : std::numeric_limits<double>::infinity()),
      period_s_(w.period_s),
      window_s_(w.window_s) {}

CaptureSchedule::State CaptureSchedule::at(double t_s) const {
  State s;
  if (t_s < delay_s_) {
    s.next_change_s = delay_s_;
    return s;
  }
  if (t_s >= end_s_) {
    if (periodic())
      s.window = static_cast<std::uint64_t>(std::floor((end_s_ - delay_s_) / period_s_ - 1e-9));
    return s;
  }
  if (!periodic()) {
    s.capturing = true;
    s.next_change_s = end_s_;
    return s;
  }
  const auto k = static_cast<std::uint64_t>(std::floor((t_s - delay_s_) / period_s_));
  const double open_s = delay_s_ + static_cast<double>(k) * period_s_;
  const double close_s = std::min(open_s + window_s_, end_s_);
  const double next_open_s = open_s + period_s_;
  s.window = k;
  s.capturing = t_s < close_s;
  s.next_change_s = s.capturing ? close_s : (next_open_s < end_s_ ? next_open_s : s.next_change_s);
  return s;
}

}  // namespace ktune::trace

#include "ktune/route/field_trial.hpp"

#include <algorithm>
#include <cmath>

namespace ktune::route {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

// The median absolute deviation: a spread one stray sample (a preempted call) cannot inflate.
double mad(const std::vector<double>& v, double m) {
  std::vector<double> d;
  d.reserve(v.size());
  for (const double x : v) d.push_back(std::abs(x - m));
  return median(std::move(d));
}

}  // namespace

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::trying:
      return "trying";
    case Verdict::routed:
      return "routed";
    case Verdict::demoted:
      return "demoted";
  }
  return "trying";
}

Arm FieldTrial::next_arm() {
  return calls_++ % 2 == 0 ? Arm::winner : Arm::fallback;
}

void FieldTrial::add(Arm arm, double duration_ns) {
  if (verdict_ != Verdict::trying || !(duration_ns > 0) || !std::isfinite(duration_ns)) return;
  auto& v = arm == Arm::winner ? winner_ : fallback_;
  if (static_cast<int>(v.size()) < per_arm_) v.push_back(duration_ns);
  if (static_cast<int>(winner_.size()) == per_arm_ &&
      static_cast<int>(fallback_.size()) == per_arm_)
    decide();
}

void FieldTrial::decide() {
  winner_ns_ = median(winner_);
  fallback_ns_ = median(fallback_);
  spread_ns_ = std::max(mad(winner_, winner_ns_), mad(fallback_, fallback_ns_));
  // The winner stays only when it is faster beyond the spread: a tie costs the program nothing
  // either way, so it goes to the call's own algorithm.
  verdict_ = fallback_ns_ - winner_ns_ > spread_ns_ ? Verdict::routed : Verdict::demoted;
}

}  // namespace ktune::route

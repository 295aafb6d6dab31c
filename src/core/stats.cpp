#include "ktune/core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <nlohmann/json.hpp>

namespace ktune {

double quantile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0.0;
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Summary summarize(std::span<const double> samples) {
  Summary s;
  s.count = samples.size();
  if (samples.empty()) return s;
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  s.min = sorted.front();
  s.max = sorted.back();
  s.median = quantile_sorted(sorted, 0.5);
  s.p5 = quantile_sorted(sorted, 0.05);
  s.p95 = quantile_sorted(sorted, 0.95);
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(s.count);
  if (s.count > 1) {
    double ss = 0;
    for (double x : sorted) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / static_cast<double>(s.count - 1));
  }
  return s;
}

void to_json(nlohmann::json& j, const Summary& s) {
  j = {{"count", s.count},   {"median", s.median}, {"mean", s.mean},
       {"stddev", s.stddev}, {"min", s.min},       {"max", s.max},
       {"p5", s.p5},         {"p95", s.p95},       {"relative_stddev", s.relative_stddev()}};
}

void from_json(const nlohmann::json& j, Summary& s) {
  j.at("count").get_to(s.count);
  j.at("median").get_to(s.median);
  j.at("mean").get_to(s.mean);
  j.at("stddev").get_to(s.stddev);
  j.at("min").get_to(s.min);
  j.at("max").get_to(s.max);
  j.at("p5").get_to(s.p5);
  j.at("p95").get_to(s.p95);
}

}  // namespace ktune

#pragma once
// Order statistics over a sample of measurements (any unit; the caller names it).
#include <span>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ktune {

struct Summary {
  std::size_t count = 0;
  double median = 0, mean = 0, stddev = 0, min = 0, max = 0, p5 = 0, p95 = 0;
  // stddev / mean; 0 for fewer than two samples.
  double relative_stddev() const { return mean != 0 ? stddev / mean : 0.0; }
};

// Linear interpolation between closest ranks (numpy's default); q in [0, 1]. Needs a sorted span.
double quantile_sorted(std::span<const double> sorted, double q);

// Summary of the samples (sample stddev, n-1). An empty input gives a zero Summary.
Summary summarize(std::span<const double> samples);

void to_json(nlohmann::json& j, const Summary& s);
void from_json(const nlohmann::json& j, Summary& s);

}  // namespace ktune

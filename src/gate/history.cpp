#include "ktune/gate/history.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "ktune/core/stats.hpp"

namespace ktune::gate {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return quantile_sorted(v, 0.5);
}

// max over k of |mean(v[a,k)) - mean(v[k,b))| * sqrt((k-a)(b-k)/(b-a)), and its k.
std::pair<double, std::size_t> best_split(const std::vector<double>& v, std::size_t a,
                                          std::size_t b, std::size_t min_segment) {
  double total = 0;
  for (std::size_t i = a; i < b; ++i) total += v[i];
  double left = 0, best = -1;
  std::size_t best_k = a;
  const double n = static_cast<double>(b - a);
  for (std::size_t k = a + 1; k < b; ++k) {
    left += v[k - 1];
    if (k - a < min_segment || b - k < min_segment) continue;
    const double nl = static_cast<double>(k - a), nr = n - nl;
    const double stat = std::fabs(left / nl - (total - left) / nr) * std::sqrt(nl * nr / n);
    if (stat > best) best = stat, best_k = k;
  }
  return {best, best_k};
}

}  // namespace

std::vector<SeriesPoint> series(const std::vector<store::GateRun>& runs) {
  std::vector<SeriesPoint> out;
  std::vector<std::vector<double>> medians;
  for (const auto& r : runs) {
    if (out.empty() || out.back().session != r.session_id) {
      out.push_back({r.session_id, r.recorded_at, r.code_commit, r.label, r.kind, r.env, 0, 0});
      medians.emplace_back();
    }
    medians.back().push_back(r.p50_ns);
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].p50_ns = median(medians[i]);
    out[i].runs = medians[i].size();
  }
  return out;
}

std::vector<std::pair<std::size_t, double>> change_points(const std::vector<double>& values,
                                                          const ChangePointSettings& s) {
  std::vector<std::pair<std::size_t, double>> found;
  Rng rng(s.seed);
  std::function<void(std::size_t, std::size_t)> segment = [&](std::size_t a, std::size_t b) {
    if (b - a < 2 * s.min_segment) return;
    const auto [stat, k] = best_split(values, a, b, s.min_segment);
    if (stat <= 0) return;
    std::vector<double> perm(values.begin() + static_cast<std::ptrdiff_t>(a),
                             values.begin() + static_cast<std::ptrdiff_t>(b));
    int reached = 0;
    for (int p = 0; p < s.permutations; ++p) {
      for (std::size_t i = perm.size() - 1; i > 0; --i) std::swap(perm[i], perm[rng.index(i + 1)]);
      reached += best_split(perm, 0, perm.size(), s.min_segment).first >= stat;
    }
    const double p_value = (1.0 + reached) / (1.0 + s.permutations);
    if (p_value >= s.alpha) return;
    found.emplace_back(k, p_value);
    segment(a, k);
    segment(k, b);
  };
  segment(0, values.size());
  std::sort(found.begin(), found.end());
  return found;
}

std::vector<ChangePoint> history_change_points(const std::vector<SeriesPoint>& points,
                                               const ChangePointSettings& s) {
  std::vector<double> logs;
  for (const auto& p : points) logs.push_back(std::log(std::max(p.p50_ns, 1e-9)));
  const auto found = change_points(logs, s);
  std::vector<ChangePoint> out;
  for (std::size_t c = 0; c < found.size(); ++c) {
    const std::size_t k = found[c].first;
    const std::size_t lo = c == 0 ? 0 : found[c - 1].first;
    const std::size_t hi = c + 1 < found.size() ? found[c + 1].first : points.size();
    std::vector<double> before, after;
    for (std::size_t i = lo; i < k; ++i) before.push_back(points[i].p50_ns);
    for (std::size_t i = k; i < hi; ++i) after.push_back(points[i].p50_ns);
    ChangePoint cp;
    cp.index = k;
    cp.before_p50_ns = median(before);
    cp.after_p50_ns = median(after);
    cp.p_value = found[c].second;
    cp.first_commit = points[k].commit;
    const auto& a = points[k - 1].env;
    const auto& b = points[k].env;
    const auto diff = [&](const char* what, const std::string& x, const std::string& y) {
      if (x != y) cp.environment_changes.push_back(fmt::format("{} {} -> {}", what, x, y));
    };
    diff("GPU", a.device_name, b.device_name);
    diff("driver", a.driver, b.driver);
    diff("toolkit", a.toolkit, b.toolkit);
    diff("ktune build", a.ktune_build, b.ktune_build);
    out.push_back(std::move(cp));
  }
  return out;
}

std::string render_history(const std::string& benchmark, const std::vector<SeriesPoint>& points,
                           const std::vector<ChangePoint>& changes) {
  std::string out =
      fmt::format("{}: {} points\n{:<22} {:<10} {:<12} {:>12} {:>5}  {}\n", benchmark,
                  points.size(), "recorded", "kind", "commit", "p50 us", "runs", "environment");
  std::size_t c = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (c < changes.size() && changes[c].index == i) {
      const auto& cp = changes[c++];
      out += fmt::format(
          "---- change point: {:.3f} -> {:.3f} us ({:+.2f} %), p {:.3g}, first commit "
          "after it {}{}\n",
          cp.before_p50_ns / 1e3, cp.after_p50_ns / 1e3,
          100 * (cp.after_p50_ns / cp.before_p50_ns - 1), cp.p_value,
          cp.first_commit.empty() ? "(unknown)" : cp.first_commit,
          cp.environment_changes.empty()
              ? std::string()
              : "; environment: " + fmt::format("{}", fmt::join(cp.environment_changes, ", ")));
    }
    const auto& p = points[i];
    out += fmt::format("{:<22} {:<10} {:<12} {:>12.3f} {:>5}  {} {} driver {} toolkit {}\n",
                       p.recorded_at.substr(0, 20), p.kind, p.commit.substr(0, 12), p.p50_ns / 1e3,
                       p.runs, p.env.device_name, p.env.arch, p.env.driver, p.env.toolkit);
  }
  if (changes.empty()) out += "no change points\n";
  return out;
}

nlohmann::json history_json(const std::string& benchmark, const std::vector<SeriesPoint>& points,
                            const std::vector<ChangePoint>& changes) {
  nlohmann::json pts = nlohmann::json::array(), cps = nlohmann::json::array();
  for (const auto& p : points)
    pts.push_back({{"session", p.session},
                   {"recorded_at", p.recorded_at},
                   {"commit", p.commit},
                   {"label", p.label},
                   {"kind", p.kind},
                   {"environment", p.env},
                   {"p50_ns", p.p50_ns},
                   {"runs", p.runs}});
  for (const auto& c : changes)
    cps.push_back({{"index", c.index},
                   {"before_p50_ns", c.before_p50_ns},
                   {"after_p50_ns", c.after_p50_ns},
                   {"p_value", c.p_value},
                   {"first_commit", c.first_commit},
                   {"environment_changes", c.environment_changes}});
  return {{"schema_version", kHistorySchemaVersion},
          {"benchmark", benchmark},
          {"points", pts},
          {"change_points", cps}};
}

}  // namespace ktune::gate

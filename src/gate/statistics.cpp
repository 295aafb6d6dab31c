#include "ktune/gate/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ktune/core/enum_names.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/stats.hpp"

namespace ktune::gate {

std::uint64_t Rng::next() {
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

double Rng::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

std::size_t Rng::index(std::size_t n) {
  return static_cast<std::size_t>(uniform() * n);
}

double Rng::normal() {
  // Box-Muller; 1 - uniform() is in (0, 1], so the log is finite.
  const double u1 = 1.0 - uniform(), u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

namespace {

// Exact samples are small enough that every count of arrangements fits a double without loss.
constexpr std::size_t kExactMaxPerSide = 20;

double normal_two_sided_p(double z) {
  return std::erfc(std::fabs(z) / std::sqrt(2.0));
}

// Upper quantile z with P(Z > z) = tail, by bisection on erfc (called once per estimate).
double normal_upper_quantile(double tail) {
  double lo = 0, hi = 10;
  for (int i = 0; i < 80; ++i) {
    const double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(mid / std::sqrt(2.0)) > tail ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// Student's t upper quantile from z by the Cornish-Fisher expansion (good to ~1 % for df >= 3).
double t_upper_quantile(double tail, double df) {
  const double z = normal_upper_quantile(tail), z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z;
  return z + (z3 + z) / (4 * df) + (5 * z5 + 16 * z3 + 3 * z) / (96 * df * df) +
         (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * df * df * df);
}

// Two-sided p of U for sizes (na, nb) from the exact null distribution. The count of orderings
// with U = u obeys f(i, j, u) = f(i-1, j, u) + f(i, j-1, u-i): the largest element is from a
// (above every b, adding no pair), or from b (above all i of a).
double exact_p(std::size_t na, std::size_t nb, double u) {
  std::vector<std::vector<std::vector<double>>> f(na + 1, std::vector<std::vector<double>>(nb + 1));
  for (std::size_t i = 0; i <= na; ++i)
    for (std::size_t j = 0; j <= nb; ++j) {
      auto& cell = f[i][j];
      cell.assign(i * j + 1, 0.0);
      if (i == 0 || j == 0) {
        cell[0] = 1.0;
        continue;
      }
      for (std::size_t v = 0; v < f[i - 1][j].size(); ++v) cell[v] += f[i - 1][j][v];
      for (std::size_t v = 0; v < f[i][j - 1].size(); ++v) cell[v + i] += f[i][j - 1][v];
    }
  const auto& dist = f[na][nb];
  const double total = std::accumulate(dist.begin(), dist.end(), 0.0);
  double below = 0, above = 0;  // P(U <= u), P(U >= u)
  for (std::size_t v = 0; v < dist.size(); ++v) {
    if (static_cast<double>(v) <= u) below += dist[v];
    if (static_cast<double>(v) >= u) above += dist[v];
  }
  return std::min(1.0, 2.0 * std::min(below, above) / total);
}

double median_of(std::vector<double>& v) {
  const std::size_t n = v.size(), mid = n / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (n % 2) return hi;
  return 0.5 * (hi + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)));
}

// hodges_lehmann with a caller's scratch buffer, for the bootstrap's many small calls.
double hl_into(std::span<const double> a, std::span<const double> b, std::vector<double>& diffs) {
  diffs.clear();
  for (double y : b)
    for (double x : a) diffs.push_back(y - x);
  return median_of(diffs);
}

}  // namespace

MannWhitney mann_whitney(std::span<const double> a, std::span<const double> b) {
  MannWhitney r;
  const std::size_t na = a.size(), nb = b.size(), n = na + nb;
  if (na == 0 || nb == 0) return r;
  struct Item {
    double x;
    bool from_b;
  };
  std::vector<Item> all;
  all.reserve(n);
  for (double x : a) all.push_back({x, false});
  for (double x : b) all.push_back({x, true});
  std::sort(all.begin(), all.end(), [](const Item& p, const Item& q) { return p.x < q.x; });
  double rank_sum_b = 0, tie_term = 0;  // tie_term: sum of t^3 - t over tie groups
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && all[j].x == all[i].x) ++j;
    const double t = static_cast<double>(j - i);
    const double mid_rank = 0.5 * static_cast<double>(i + 1 + j);  // ranks are 1-based
    for (std::size_t k = i; k < j; ++k)
      if (all[k].from_b) rank_sum_b += mid_rank;
    tie_term += t * t * t - t;
    i = j;
  }
  const double dna = static_cast<double>(na), dnb = static_cast<double>(nb);
  const double dn = static_cast<double>(n);
  r.u = rank_sum_b - dnb * (dnb + 1) / 2;
  if (tie_term == 0 && na <= kExactMaxPerSide && nb <= kExactMaxPerSide) {
    r.exact = true;
    r.p_value = exact_p(na, nb, r.u);
    return r;
  }
  const double mean = dna * dnb / 2;
  const double var = dna * dnb / 12 * ((dn + 1) - tie_term / (dn * (dn - 1)));
  if (var <= 0) return r;  // every value equal: no evidence of a shift
  const double dev = std::max(0.0, std::fabs(r.u - mean) - 0.5);
  r.z = std::copysign(dev / std::sqrt(var), r.u - mean);
  r.p_value = std::min(1.0, normal_two_sided_p(r.z));
  return r;
}

double hodges_lehmann(std::span<const double> a, std::span<const double> b) {
  if (a.empty() || b.empty()) return 0;
  std::vector<double> diffs;
  diffs.reserve(a.size() * b.size());
  return hl_into(a, b, diffs);
}

std::vector<double> holm(std::span<const double> p_values) {
  const std::size_t m = p_values.size();
  std::vector<std::size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t i, std::size_t j) { return p_values[i] < p_values[j]; });
  std::vector<double> adjusted(m);
  double running = 0;  // adjusted p-values never fall with rank
  for (std::size_t k = 0; k < m; ++k) {
    running = std::max(running, std::min(1.0, static_cast<double>(m - k) * p_values[order[k]]));
    adjusted[order[k]] = running;
  }
  return adjusted;
}

namespace {

// Each non-empty run's log median (log scale: shifts become ratios, and a run's offset multiplies
// every sample of it); the runs' samples are appended to `pooled` when given.
std::vector<double> log_medians(const Runs& runs, std::vector<double>* pooled = nullptr) {
  std::vector<double> meds;
  for (const auto& run : runs) {
    if (run.empty()) continue;
    std::vector<double> sorted(run.begin(), run.end());
    std::sort(sorted.begin(), sorted.end());
    const double med = quantile_sorted(sorted, 0.5);
    if (!(med > 0)) throw Error("gate: a run's median time is not positive; samples must be ns.");
    meds.push_back(std::log(med));
    if (pooled) pooled->insert(pooled->end(), run.begin(), run.end());
  }
  return meds;
}

double mean_of(const std::vector<double>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

}  // namespace

Shift estimate_shift(const Runs& base, const Runs& cand, const Rule& rule, Rng& rng) {
  Shift s;
  std::vector<double> base_pooled, cand_pooled;
  const std::vector<double> bm = log_medians(base, &base_pooled);
  const std::vector<double> cm = log_medians(cand, &cand_pooled);
  if (bm.empty() || cm.empty())
    throw Error("gate: a comparison needs at least one run with samples on each side.");
  s.base_runs = bm.size();
  s.cand_runs = cm.size();
  s.base_samples = base_pooled.size();
  s.cand_samples = cand_pooled.size();
  {
    std::vector<double> tmp = bm;
    s.base_p50_ns = std::exp(median_of(tmp));
    tmp = cm;
    s.cand_p50_ns = std::exp(median_of(tmp));
  }
  s.p_value = mann_whitney(base_pooled, cand_pooled).p_value;
  std::vector<double> diffs;
  const double change_log = hl_into(bm, cm, diffs);
  s.change = s.ci_low = s.ci_high = std::expm1(change_log);

  // Residuals of run medians around their side's mean, pooled: two fitted means leave N - 2
  // degrees of freedom, so they are scaled up to estimate the run-to-run spread without bias. A
  // percentile bootstrap from so few runs is too narrow (it acts as if the spread were known), so
  // residuals are widened further by t(N - 2) / z at the interval's level, as a t-interval would
  // be.
  const std::size_t n = bm.size() + cm.size();
  if (n < 3) return s;
  s.interval_known = true;
  const double tail = (1 - rule.confidence) / 2;
  const double df = static_cast<double>(n - 2);
  const double scale = std::sqrt(static_cast<double>(n) / df) * t_upper_quantile(tail, df) /
                       normal_upper_quantile(tail);
  std::vector<double> residuals;
  for (double x : bm) residuals.push_back((x - mean_of(bm)) * scale);
  for (double x : cm) residuals.push_back((x - mean_of(cm)) * scale);

  std::vector<double> rb(bm.size()), rc(cm.size()), replicates;
  replicates.reserve(static_cast<std::size_t>(rule.bootstrap));
  for (int r = 0; r < rule.bootstrap; ++r) {
    for (double& x : rb) x = residuals[rng.index(residuals.size())];
    for (double& x : rc) x = change_log + residuals[rng.index(residuals.size())];
    replicates.push_back(hl_into(rb, rc, diffs));
  }
  std::sort(replicates.begin(), replicates.end());
  s.ci_low = std::expm1(quantile_sorted(replicates, tail));
  s.ci_high = std::expm1(quantile_sorted(replicates, 1 - tail));
  return s;
}

bool baseline_settled(const Runs& base, const Rule& rule) {
  const auto n = static_cast<int>(base.size());
  if (n >= rule.max_baseline_runs) return true;
  if (n < rule.baseline_runs) return false;
  const std::vector<double> meds = log_medians(base);
  if (meds.size() < 2) return false;
  const double mean = mean_of(meds);
  double ss = 0;
  for (double m : meds) ss += (m - mean) * (m - mean);
  const double df = static_cast<double>(meds.size() - 1);
  const double half = t_upper_quantile((1 - rule.confidence) / 2, df) * std::sqrt(ss / df) /
                      std::sqrt(static_cast<double>(meds.size()));
  return half <= std::log1p(rule.threshold) / 5;
}

namespace {
constexpr EnumName<Verdict> kVerdictNames[] = {
    {Verdict::faster, "faster"},
    {Verdict::unchanged, "unchanged"},
    {Verdict::slower, "slower"},
    {Verdict::noisy, "noisy"},
};
}  // namespace

const char* to_string(Verdict v) {
  return name_of(kVerdictNames, v);
}

namespace {

// The interval's width as a ratio of its ends, (1 + high) / (1 + low) - 1. Its width in change
// grows with the change itself: runs within 1 % of each other give an interval 0.15 wide at a 15x
// slowdown, which a width in change called noisy.
double relative_width(const Shift& s) {
  return (1 + s.ci_high) / (1 + s.ci_low) - 1;
}

// The whole interval lies beyond the threshold, on either side: however wide, it cannot hold 0.
bool wholly_past(const Shift& s, double t) {
  return s.ci_low >= t || s.ci_high <= -t;
}

}  // namespace

Verdict decide(const Shift& s, double p_adjusted, const Rule& rule) {
  if (!s.interval_known) return Verdict::noisy;
  const bool significant = p_adjusted < rule.alpha;
  if (!(significant && wholly_past(s, rule.threshold)) && relative_width(s) > rule.threshold)
    return Verdict::noisy;
  if (significant && s.ci_low > 0 && s.ci_high >= rule.threshold) return Verdict::slower;
  if (significant && s.ci_high < 0 && s.ci_low <= -rule.threshold) return Verdict::faster;
  return Verdict::unchanged;
}

bool unclear(const Shift& s, const Rule& rule) {
  const double t = rule.threshold;
  if (!s.interval_known) return true;
  if (wholly_past(s, t)) return false;
  return relative_width(s) > t || (s.ci_low < t && s.ci_high >= t) ||
         (s.ci_low <= -t && s.ci_high > -t);
}

std::vector<Comparison> compare_suite(const std::vector<Runs>& base, std::vector<Runs>& cand,
                                      const Rule& rule, const Remeasure& remeasure) {
  if (base.size() != cand.size())
    throw Error("gate: baseline and candidate suites differ in their number of benchmarks.");
  const std::size_t m = base.size();
  std::vector<Comparison> out(m);
  // Each benchmark's bootstrap has its own stream, so adding one to a suite changes no other's.
  const auto estimate = [&](std::size_t i) {
    Rng rng(rule.seed + 0x9E3779B97F4A7C15ULL * (i + 1));
    out[i].shift = estimate_shift(base[i], cand[i], rule, rng);
  };
  for (std::size_t i = 0; i < m; ++i) estimate(i);
  for (int round = 0; remeasure && round < rule.max_remeasure; ++round) {
    bool any = false;
    for (std::size_t i = 0; i < m; ++i) {
      if (!unclear(out[i].shift, rule)) continue;
      std::vector<double> run = remeasure(i);
      if (run.empty()) continue;
      cand[i].push_back(std::move(run));
      ++out[i].remeasured;
      estimate(i);
      any = true;
    }
    if (!any) break;
  }
  std::vector<double> p(m);
  for (std::size_t i = 0; i < m; ++i) p[i] = out[i].shift.p_value;
  const std::vector<double> adjusted = holm(p);
  for (std::size_t i = 0; i < m; ++i) {
    out[i].p_adjusted = adjusted[i];
    out[i].verdict = decide(out[i].shift, adjusted[i], rule);
  }
  return out;
}

bool suite_fails(const std::vector<Comparison>& results) {
  return std::any_of(results.begin(), results.end(),
                     [](const Comparison& c) { return c.verdict == Verdict::slower; });
}

}  // namespace ktune::gate

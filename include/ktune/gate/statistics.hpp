#pragma once
// The gate's statistics: is a candidate's timing distribution shifted from its baseline's, by how
// much, how sure, and what verdict follows. Plain C++ on samples (ns); no GPU, no store.
//
// The unit of replication is the run: GPU timings within one run share clocks, placement and L2
// state, so run-to-run offsets dominate and pooled samples alone overstate certainty. Hence two
// views: Mann-Whitney U over pooled samples (is there any shift in the distribution) and a
// run-level Hodges-Lehmann shift with a bootstrap interval (how big, counting run-to-run spread).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ktune::gate {

// A small, portable generator (splitmix64): the same seed gives the same stream on every
// platform and standard library, so fixed-seed tests and bootstrap intervals are reproducible.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  double uniform();                  // [0, 1)
  std::size_t index(std::size_t n);  // [0, n)
  double normal();                   // standard normal (Box-Muller)
 private:
  std::uint64_t state_;
};

struct MannWhitney {
  double u = 0;        // U of the second sample (count of pairs where it is larger, ties 1/2)
  double z = 0;        // normal approximation, continuity and tie corrected; 0 when exact
  double p_value = 1;  // two-sided
  bool exact = false;  // exact null distribution (small samples without ties)
};

// Two-sided test of "a and b come from the same distribution" against a location shift.
MannWhitney mann_whitney(std::span<const double> a, std::span<const double> b);

// Median of all pairwise differences b_j - a_i: the shift of b relative to a.
double hodges_lehmann(std::span<const double> a, std::span<const double> b);

// Holm-Bonferroni adjusted p-values, in the input's order (each in [0, 1], monotone in rank).
std::vector<double> holm(std::span<const double> p_values);

// Every sample of every run of one side of a comparison (ns per launch).
using Runs = std::vector<std::vector<double>>;

// The p50 change of a candidate against its baseline, as a ratio minus one (+0.05 = 5 % slower).
struct Shift {
  double change = 0;               // Hodges-Lehmann estimate over run medians, relative
  double ci_low = 0, ci_high = 0;  // bootstrap interval of `change` at the rule's confidence
  double p_value = 1;              // Mann-Whitney over pooled samples, before correction
  double base_p50_ns = 0, cand_p50_ns = 0;
  std::size_t base_runs = 0, cand_runs = 0, base_samples = 0, cand_samples = 0;
  bool interval_known = false;  // false: fewer than three runs in all, run-to-run spread unknown
};

// The decision's knobs, declared once here.
struct Rule {
  double threshold = 0.05;  // relative p50 change that matters (5 %)
  double alpha = 0.05;      // family-wise error rate over the suite (Holm)
  // Of the shift's interval. The slower rule asks whether its upper end reaches the threshold
  // (can a slowdown of the threshold be ruled out?): 98 % two-sided is a 99 % one-sided bound,
  // which keeps a slowdown at the threshold caught even when few runs understate the spread.
  double confidence = 0.98;
  int bootstrap = 1000;   // replicates
  int max_remeasure = 8;  // extra candidate runs for an unclear benchmark
  // Runs `gate record` stores per benchmark: at least baseline_runs, more while the baseline is
  // not settled (baseline_settled), at most max_baseline_runs.
  int baseline_runs = 5;
  int max_baseline_runs = 20;
  int candidate_runs = 2;   // runs `gate check` takes before deciding
  std::uint64_t seed = 12;  // of the bootstrap's generator
};

// Log-scale run-level shift: each run's median; HL over pairs of run medians; interval from a
// residual bootstrap of run medians around their side's mean (both sides' residuals pooled, so a
// single candidate run still gets the baseline's run-to-run spread).
Shift estimate_shift(const Runs& base, const Runs& cand, const Rule& rule, Rng& rng);

// Whether `gate record` has run a benchmark enough: rule.max_baseline_runs runs, or at least
// rule.baseline_runs and its mean log run median known to within a fifth of the threshold (the
// half-width of a t-interval at the rule's confidence). A check's interval is never narrower than
// its baseline's: with five baseline runs 2 % apart, a 5 % slowdown came out noisy.
bool baseline_settled(const Runs& base, const Rule& rule);

enum class Verdict { faster, unchanged, slower, noisy };
const char* to_string(Verdict v);

// slower: significant after correction (adjusted p < alpha and the interval above 0) and a
// slowdown of the threshold or more is within the interval; faster mirrors it; noisy: the
// interval is unknown, or wider than the threshold as a ratio of its ends ((1 + high) / (1 + low)
// - 1: cannot tell 0 from the threshold) unless all of it lies past the threshold; otherwise
// unchanged.
Verdict decide(const Shift& s, double p_adjusted, const Rule& rule);
// Whether one more candidate run could change the verdict: the interval is unknown, too wide (as
// decide() measures it) or straddles +-threshold.
bool unclear(const Shift& s, const Rule& rule);

struct Comparison {
  Shift shift;
  double p_adjusted = 1;
  Verdict verdict = Verdict::unchanged;
  int remeasured = 0;  // extra candidate runs taken
};

// One more candidate run of benchmark i (empty: cannot re-measure).
using Remeasure = std::function<std::vector<double>(std::size_t i)>;

// The suite: estimates every benchmark, corrects over all of them, re-measures the unclear ones
// (appending to cand[i]) up to rule.max_remeasure times, then decides.
std::vector<Comparison> compare_suite(const std::vector<Runs>& base, std::vector<Runs>& cand,
                                      const Rule& rule, const Remeasure& remeasure = {});

// A suite fails when any benchmark is slower.
bool suite_fails(const std::vector<Comparison>& results);

}  // namespace ktune::gate

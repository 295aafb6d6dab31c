// The acceptance figures for the statistics, on suites simulated from the recorded noise in
// tests/fixtures/gate/h100-noise.json (recorded on an H100 by scripts/gpu-gate.sh; a later
// recording replaces it). Fixed seeds; a few seconds.
#include <cmath>
#include <fstream>
#include <iostream>
#include <numeric>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ktune/gate/statistics.hpp"

namespace ktune::gate {
namespace {

// One benchmark's recorded noise, on a log scale: run medians and each run's residuals.
struct Noise {
  std::string name;
  double center = 0;                           // mean log run median
  std::vector<double> offsets;                 // log run median - center, per recorded run
  std::vector<std::vector<double>> residuals;  // log sample - log run median, per run
  double bandwidth = 0, shrink = 1;            // smoothed bootstrap of run offsets
};

std::vector<Noise> load_noise() {
  std::ifstream in(KTUNE_SOURCE_DIR "/tests/fixtures/gate/h100-noise.json");
  const nlohmann::json doc = nlohmann::json::parse(in);
  std::vector<Noise> out;
  for (const auto& b : doc.at("benchmarks")) {
    Noise n;
    n.name = b.at("name").get<std::string>();
    std::vector<double> meds;
    for (const auto& run : b.at("runs")) {
      std::vector<double> s = run.at("samples_ns").get<std::vector<double>>();
      if (s.empty()) continue;
      std::vector<double> sorted = s;
      std::sort(sorted.begin(), sorted.end());
      const double med = std::log(sorted[sorted.size() / 2]);
      meds.push_back(med);
      std::vector<double> r;
      for (double x : s) r.push_back(std::log(x) - med);
      n.residuals.push_back(std::move(r));
    }
    if (meds.size() < 2) continue;
    n.center = std::accumulate(meds.begin(), meds.end(), 0.0) / meds.size();
    double ss = 0;
    for (double m : meds) n.offsets.push_back(m - n.center), ss += (m - n.center) * (m - n.center);
    const double sd = std::sqrt(ss / (meds.size() - 1));
    // Silverman's bandwidth, then shrunk so the smoothed offsets keep the recorded variance:
    // simulated suites are not limited to the few recorded offsets, nor noisier than recorded.
    n.bandwidth = 1.06 * sd * std::pow(static_cast<double>(meds.size()), -0.2);
    n.shrink = sd > 0 ? 1 / std::sqrt(1 + n.bandwidth * n.bandwidth / (sd * sd)) : 1;
    out.push_back(std::move(n));
  }
  return out;
}

// Simulated runs are shorter than recorded ones so 3,000 suites take seconds; the decision rests
// on run medians, whose spread comes mostly from run offsets.
constexpr std::size_t kSamplesPerRun = 100;

// A simulated run: a recorded run's residuals resampled, at a smoothed recorded run offset.
std::vector<double> simulate_run(const Noise& n, double factor, Rng& rng) {
  const std::size_t r = rng.index(n.offsets.size());
  const double offset = (n.offsets[r] + n.bandwidth * rng.normal()) * n.shrink;
  const auto& res = n.residuals[r];
  const std::size_t count = std::min<std::size_t>(res.size(), kSamplesPerRun);
  std::vector<double> run(count);
  for (double& x : run) x = factor * std::exp(n.center + offset + res[rng.index(res.size())]);
  return run;
}

struct Outcome {
  int suites_failed = 0;  // any benchmark slower
  int planted_slower = 0;
};

// `trials` suites of 10; benchmark trial % 10 slowed by `slowdown` (0: A/A).
Outcome simulate(const std::vector<Noise>& noise, double slowdown, int trials, std::uint64_t seed) {
  const Rule rule;
  Rng rng(seed);
  Outcome o;
  constexpr std::size_t kSuite = 10;
  for (int t = 0; t < trials; ++t) {
    const std::size_t planted = static_cast<std::size_t>(t) % kSuite;
    std::vector<Runs> base(kSuite), cand(kSuite);
    const auto factor = [&](std::size_t i) { return i == planted ? 1 + slowdown : 1.0; };
    for (std::size_t i = 0; i < kSuite; ++i) {
      const Noise& n = noise[i % noise.size()];
      while (!baseline_settled(base[i], rule)) base[i].push_back(simulate_run(n, 1.0, rng));
      for (int r = 0; r < rule.candidate_runs; ++r)
        cand[i].push_back(simulate_run(n, factor(i), rng));
    }
    const auto results = compare_suite(base, cand, rule, [&](std::size_t i) {
      return simulate_run(noise[i % noise.size()], factor(i), rng);
    });
    o.suites_failed += suite_fails(results);
    o.planted_slower += results[planted].verdict == Verdict::slower;
  }
  return o;
}

class NoiseAcceptance : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { noise_ = load_noise(); }
  static inline std::vector<Noise> noise_;
  static constexpr int kTrials = 1000;
  void note(const char* what, int count) {
    std::cout << what << ": " << count << " of " << kTrials << "\n";
  }
};

TEST_F(NoiseAcceptance, AaSuitesRarelyFail) {
  ASSERT_GE(noise_.size(), 8u);
  const Outcome o = simulate(noise_, 0.0, kTrials, 101);
  note("A/A suites failing", o.suites_failed);
  EXPECT_LE(o.suites_failed, kTrials / 100);  // <= 1 % of suites
}

TEST_F(NoiseAcceptance, FivePercentSlowdownIsCaught) {
  const Outcome o = simulate(noise_, 0.05, kTrials, 202);
  note("5 % slowdown flagged", o.planted_slower);
  EXPECT_GE(o.planted_slower, kTrials * 95 / 100);
}

TEST_F(NoiseAcceptance, TwoPercentSlowdownIsRarelyFlagged) {
  const Outcome o = simulate(noise_, 0.02, kTrials, 303);
  note("2 % slowdown flagged", o.planted_slower);
  EXPECT_LE(o.planted_slower, kTrials * 5 / 100);
}

}  // namespace
}  // namespace ktune::gate

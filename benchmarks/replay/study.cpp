// The replay study behind logs/*-replay-cpu.md: every strategy on every recorded space, one
// process, one thread pool (ktune replay does the same per file). Host only; links ktune_tune.
//   study STRATEGIES BUDGETS SEEDS THREADS FAMILY=FILE[@T1] ...
// prints one JSON object per (space, strategy, budget): {"schema_version": 1, "family", "space",
// "strategy", "default" (whether it is ktune's default), "window", "budget", "seeds",
// "mean_fraction_of_optimum", "worst_seed", "fractions" (one per seed, seeds 0.. in order)}.
//   study warm BUDGET SEEDS THREADS FAMILY=FILE[@T1] ...
// leave-one-GPU-out within each family: per target, the default strategy cold and warm-started
// from the family's other files, the warm ordering alone (its first BUDGET), and each single
// other GPU's own top BUDGET (mean over them).
// STUDY_WINDOW=N: proposals made N ahead of their results, as a tuning session compiles ahead
// (its --prefetch, twice the compile threads); 1 (default) proposes after each result.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "ktune/tune/replay.hpp"
#include "ktune/tune/warm_start.hpp"

using namespace ktune::tune;

namespace {
std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const auto end = s.find(sep, start);
    out.push_back(s.substr(start, end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}
}  // namespace

// best_time_ns() / best among the first `n` of `order` (0 if none succeeded).
double order_score(const RecordedSpace& s, const std::vector<std::size_t>& order, std::size_t n) {
  double best = INFINITY;
  for (std::size_t k = 0; k < std::min(n, order.size()); ++k) {
    const auto e = s.evaluate(order[k]);
    if (e.status == Status::ok) best = std::min(best, e.time_ns);
  }
  return std::isfinite(best) ? s.best_time_ns() / best : 0.0;
}

int main(int argc, char** argv) {
  const bool warm = argc > 1 && std::string(argv[1]) == "warm";
  if (warm) ++argv, --argc;
  if (argc < 6 && !(warm && argc >= 5)) {
    fmt::print(stderr, "usage: study STRATEGIES BUDGETS SEEDS THREADS FAMILY=FILE[@T1] ...\n");
    return 2;
  }
  if (warm) {  // shift so that argv[1] is the budget list for both modes
    --argv, ++argc;
  }
  const auto strategies =
      warm ? std::vector<std::string>{default_strategy_name()} : split(argv[1], ',');
  std::vector<std::size_t> budgets;
  for (const auto& b : split(argv[2], ',')) budgets.push_back(std::stoul(b));
  const std::size_t seeds = std::stoul(argv[3]);
  const unsigned threads = static_cast<unsigned>(std::stoul(argv[4]));
  const char* window_env = std::getenv("STUDY_WINDOW");
  const std::size_t window = window_env ? std::stoul(window_env) : 1;
  struct Space {
    std::string family, name;
    std::unique_ptr<RecordedSpace> space;
  };
  std::vector<Space> spaces;
  for (int a = 5; a < argc; ++a) {
    const std::string arg = argv[a];
    const auto eq = arg.find('=');
    const auto at = arg.find('@');
    const std::string file =
        arg.substr(eq + 1, at == std::string::npos ? std::string::npos : at - eq - 1);
    std::optional<std::filesystem::path> t1;
    if (at != std::string::npos) t1 = arg.substr(at + 1);
    std::string name = std::filesystem::path(file).filename().string();
    name = name.substr(0, name.find('.'));
    spaces.push_back({arg.substr(0, eq), name, RecordedSpace::load(file, t1)});
  }
  if (warm) {
    const std::size_t budget = budgets.at(0);
    std::vector<std::vector<std::size_t>> order(spaces.size());
    std::vector<double> single(spaces.size(), 0);
    for (std::size_t t = 0; t < spaces.size(); ++t) {
      WarmStartSources src;
      std::size_t others = 0;
      for (std::size_t o = 0; o < spaces.size(); ++o) {
        if (o == t || spaces[o].family != spaces[t].family) continue;
        src.spaces.push_back(spaces[o].space.get());
        WarmStartSources one;
        one.spaces.push_back(spaces[o].space.get());
        single[t] += order_score(*spaces[t].space,
                                 warm_start_order(spaces[t].space->index(), one, budget), budget);
        ++others;
      }
      single[t] /= static_cast<double>(others);
      order[t] = warm_start_order(spaces[t].space->index(), src, budget);
    }
    std::vector<double> cold(spaces.size() * seeds), hot(spaces.size() * seeds);
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
      for (std::size_t j; (j = next++) < cold.size();) {
        const std::size_t t = j / seeds, seed = j % seeds;
        auto a = make_strategy(default_strategy_name());
        cold[j] = replay_once(*spaces[t].space, *a, seed, budget).fraction_of_optimum;
        std::vector<std::size_t> first(
            order[t].begin(), order[t].begin() + static_cast<std::ptrdiff_t>(std::min(
                                                     order[t].size(), warm_start_count(budget))));
        hot[j] = replay_once(*spaces[t].space, *a, seed, budget, first).fraction_of_optimum;
      }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
    for (std::size_t t = 0; t < spaces.size(); ++t) {
      double c = 0, h = 0;
      for (std::size_t k = 0; k < seeds; ++k) c += cold[t * seeds + k], h += hot[t * seeds + k];
      fmt::print(
          "{{\"family\": \"{}\", \"space\": \"{}\", \"budget\": {}, \"seeds\": {}, "
          "\"cold\": {:.5f}, \"warm\": {:.5f}, \"order_only\": {:.5f}, "
          "\"single_other_top\": {:.5f}}}\n",
          spaces[t].family, spaces[t].name, budget, seeds, c / static_cast<double>(seeds),
          h / static_cast<double>(seeds), order_score(*spaces[t].space, order[t], budget),
          single[t]);
    }
    return 0;
  }
  struct Job {
    std::size_t space, strategy, budget, seed;
  };
  std::vector<Job> jobs;
  for (std::size_t s = 0; s < spaces.size(); ++s)
    for (std::size_t k = 0; k < strategies.size(); ++k)
      for (std::size_t b = 0; b < budgets.size(); ++b)
        for (std::size_t seed = 0; seed < seeds; ++seed) jobs.push_back({s, k, b, seed});
  std::vector<double> score(jobs.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t j; (j = next++) < jobs.size();) {
      auto st = make_strategy(strategies[jobs[j].strategy]);
      score[j] = replay_once(*spaces[jobs[j].space].space, *st, jobs[j].seed,
                             budgets[jobs[j].budget], {}, window)
                     .fraction_of_optimum;
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  for (std::size_t j = 0; j < jobs.size(); j += seeds) {
    double sum = 0, worst = 1;
    std::string fractions;  // per seed, in seed order: lets a comparison pair the seeds
    for (std::size_t k = j; k < j + seeds; ++k) {
      sum += score[k], worst = std::min(worst, score[k]);
      fractions += fmt::format("{}{:.5f}", k == j ? "" : ", ", score[k]);
    }
    const auto& job = jobs[j];
    const std::string& strategy = strategies[job.strategy];
    fmt::print(
        "{{\"schema_version\": 1, \"family\": \"{}\", \"space\": \"{}\", \"strategy\": "
        "\"{}\", \"default\": {}, \"window\": {}, \"budget\": {}, \"seeds\": {}, "
        "\"mean_fraction_of_optimum\": {:.5f}, \"worst_seed\": {:.5f}, \"fractions\": [{}]}}\n",
        spaces[job.space].family, spaces[job.space].name, strategy,
        strategy == default_strategy_name(), window, budgets[job.budget], seeds,
        sum / static_cast<double>(seeds), worst, fractions);
  }
  return 0;
}

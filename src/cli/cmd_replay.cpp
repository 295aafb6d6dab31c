// ktune replay: scores a search strategy on a recorded tuning space (T4), no GPU needed.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/progress.hpp"
#include "ktune/tune/replay.hpp"
#include "ktune/tune/warm_start.hpp"
#include "print_json.hpp"

namespace ktune::cli {
namespace {

struct ReplayOptions {
  std::string t4, t1, strategy = tune::default_strategy_name(), budgets = "100,200,400";
  std::string seeds = "50", threads = "0", prefetch = "1";
  std::vector<std::string> warm_from;
  bool json = false;
};

// Limits that keep a typo from allocating until the machine runs out of memory.
constexpr std::uint64_t kMaxSeeds = 100000;
constexpr std::uint64_t kMaxBudget = 100000000;
constexpr std::uint64_t kMaxThreads = 1024;

// Digits only (no sign, no spaces, no suffix), within [lo, hi].
std::optional<std::uint64_t> parse_count(std::string_view text, std::uint64_t lo,
                                         std::uint64_t hi) {
  std::uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || v < lo || v > hi)
    return std::nullopt;
  return v;
}

std::vector<std::size_t> parse_budgets(const std::string& text) {
  std::vector<std::size_t> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    const auto v = parse_count(item, 1, kMaxBudget);
    if (!v)
      throw UsageError(
          fmt::format("--budget {}: '{}' is not a positive integer up to {}; give a "
                      "comma-separated list such as 100,200,400.",
                      text, item, kMaxBudget));
    out.push_back(static_cast<std::size_t>(*v));
    start = end + 1;
  }
  return out;
}

int run(const ReplayOptions& o) {
  refuse_stdin(o.t4, "a recorded space (T4 or Kernel Tuner cache)");
  const std::vector<std::size_t> budgets = parse_budgets(o.budgets);
  const auto window = parse_count(o.prefetch, 1, kMaxBudget);
  if (!window)
    throw UsageError(fmt::format(
        "--prefetch {}: give a whole number of proposals from 1 to {}, as ktune tune takes it.",
        o.prefetch, kMaxBudget));
  const auto seeds = parse_count(o.seeds, 1, kMaxSeeds);
  if (!seeds)
    throw UsageError(
        fmt::format("--seeds {}: give a whole number of seeds from 1 to {}.", o.seeds, kMaxSeeds));
  const auto threads_asked = parse_count(o.threads, 0, kMaxThreads);
  if (!threads_asked)
    throw UsageError(fmt::format(
        "--threads {}: give a whole number of worker threads from 1 to {} (0: all cores).",
        o.threads, kMaxThreads));
  std::vector<std::string> strategies;
  if (o.strategy == "all") {
    for (const auto& s : tune::registered_strategies())
      if (s.name != "random" && s.name != "exhaustive") strategies.push_back(s.name);
  } else {
    strategies.push_back(o.strategy);
  }
  const auto space = tune::RecordedSpace::load(
      o.t4, o.t1.empty() ? std::nullopt : std::optional<std::filesystem::path>(o.t1));
  if (space->unrecorded() > 0)
    fmt::print(stderr,
               "note: {} configurations of the T1 space are not in {}; they count as "
               "failed evaluations.\n",
               space->unrecorded(), o.t4);
  // A budget past the space's size only repeats the exhaustive search (10^8 was accepted, and the
  // run never ended).
  for (const std::size_t b : budgets)
    if (b > space->index().size())
      throw UsageError(fmt::format(
          "--budget {}: {} is more than the {} configurations of the recorded space, so the "
          "search would end there; give budgets up to {}.",
          o.budgets, b, space->index().size(), space->index().size()));
  // Other GPUs' or shapes' recordings of the same op order the first proposals.
  std::vector<std::unique_ptr<tune::RecordedSpace>> warm_spaces;
  tune::WarmStartSources sources;
  for (const auto& f : o.warm_from) {
    warm_spaces.push_back(tune::RecordedSpace::load(
        f, o.t1.empty() ? std::nullopt : std::optional<std::filesystem::path>(o.t1)));
    sources.spaces.push_back(warm_spaces.back().get());
  }
  const std::vector<std::size_t> warm_order =
      sources.spaces.empty()
          ? std::vector<std::size_t>{}
          : tune::warm_start_order(
                space->index(), sources,
                tune::warm_start_count(*std::max_element(budgets.begin(), budgets.end())));
  if (!sources.spaces.empty() && warm_order.empty())
    fmt::print(stderr,
               "note: no configuration of the --warm-from files is in {}'s space (parameter "
               "names or values differ); the search starts cold.\n",
               o.t4);
  const unsigned threads = *threads_asked ? static_cast<unsigned>(*threads_asked)
                                          : std::max(1u, std::thread::hardware_concurrency());

  nlohmann::json all = nlohmann::json::array();
  for (const auto& name : strategies) {
    Progress progress("replay " + name, budgets.size() * *seeds * 2);
    const auto results = tune::replay(
        *space, name, budgets, *seeds, threads,
        [&](std::size_t done, std::size_t) { progress.update(done); }, warm_order, *window);
    progress.finish();
    all.push_back(tune::replay_json(name, o.t4, *seeds, *window, results));
    if (!o.warm_from.empty()) all.back()["warm_from"] = o.warm_from;
  }
  if (o.json) {
    if (all.size() == 1) {
      print_json(all[0]);
    } else {
      nlohmann::json j;
      j["strategy"] = "all";
      j["space"] = o.t4;
      j["seeds"] = *seeds;
      j["prefetch"] = *window;
      j["comparisons"] = all;
      print_json(j, tune::kReplaySchemaVersion);
    }
    return 0;
  }
  fmt::print("{}: {} configurations, best {:.4f} ms; {} seeds; fraction of the optimum\n", o.t4,
             space->index().size(), space->best_time_ns() / 1e6, *seeds);
  if (*window > 1)
    fmt::print("proposals made {} ahead of their results, as a session with --prefetch {}\n",
               *window, *window);
  if (!o.warm_from.empty())
    fmt::print("warm start from {} (random search stays cold)\n", fmt::join(o.warm_from, ", "));
  fmt::print("{:<12}", "budget");
  for (const auto& r : all) fmt::print("{:>12}", r["strategy"].get<std::string>());
  fmt::print("{:>12}\n", "random");
  for (std::size_t b = 0; b < budgets.size(); ++b) {
    fmt::print("{:<12}", budgets[b]);
    for (const auto& r : all)
      fmt::print("{:>12.4f}", r["results"][b]["mean_fraction_of_optimum"].get<double>());
    fmt::print("{:>12.4f}\n",
               all[0]["results"][b]["random_mean_fraction_of_optimum"].get<double>());
  }
  return 0;
}

const bool registered = register_command(
    {"replay",
     "Score a search strategy on a recorded tuning space (T4 or Kernel Tuner cache), no GPU needed",
     35, [](CLI::App& app, const GlobalOptions&) -> Runner {
       auto o = std::make_shared<ReplayOptions>();
       app.add_option("T4FILE", o->t4,
                      "Recorded results: T4 or Kernel Tuner cache (.json, .json.gz)")
           ->required();
       app.add_option("--space", o->t1, "T1 spec whose space the strategy searches");
       std::string names;
       for (const auto& s : tune::registered_strategies()) names += s.name + ", ";
       app.add_option("--strategy", o->strategy,
                      "Strategy: " + names + "or all (default " + o->strategy + ")")
           ->check(parsed_by([](const std::string& v) {
             if (v != "all") tune::make_strategy(v);  // an unknown name lists the known ones
           }));
       app.add_option("--budget", o->budgets, "Comma-separated evaluation budgets")
           ->default_str(o->budgets);
       app.add_option("--seeds", o->seeds, "Searches per budget")->default_str(o->seeds);
       app.add_option("--threads", o->threads, "Worker threads (default 0: all cores)");
       app.add_option("--prefetch", o->prefetch,
                      "Proposals made this many ahead of their results, as `ktune tune "
                      "--prefetch` compiles ahead (default 1: each after the previous result)");
       app.add_option("--warm-from", o->warm_from,
                      "Recorded results of the same op on other GPUs or shapes (T4 or Kernel "
                      "Tuner cache); the first half of each budget follows their best")
           ->expected(1, -1);
       app.add_flag("--json", o->json,
                    fmt::format("Print JSON (schema_version {})", tune::kReplaySchemaVersion));
       return [o] { return run(*o); };
     }});

}  // namespace
}  // namespace ktune::cli

// ktune replay: scores a search strategy on a recorded tuning space (T4), no GPU needed.
#include <algorithm>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/progress.hpp"
#include "ktune/tune/replay.hpp"

namespace ktune::cli {
namespace {

struct ReplayOptions {
  std::string t4, t1, strategy = tune::default_strategy_name(), budgets = "100,200,400";
  std::size_t seeds = 50;
  unsigned threads = 0;
  bool json = false;
};

std::vector<std::size_t> parse_budgets(const std::string& text) {
  std::vector<std::size_t> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    char* stop = nullptr;
    const long long v = std::strtoll(item.c_str(), &stop, 10);
    if (item.empty() || *stop || v <= 0)
      throw Error(
          fmt::format("--budget {}: '{}' is not a positive integer; give a comma-separated "
                      "list such as 100,200,400.",
                      text, item));
    out.push_back(static_cast<std::size_t>(v));
    start = end + 1;
  }
  return out;
}

int run(const ReplayOptions& o) {
  const std::vector<std::size_t> budgets = parse_budgets(o.budgets);
  if (o.seeds == 0) throw Error("--seeds 0: give at least one seed.");
  std::vector<std::string> strategies;
  if (o.strategy == "all") {
    for (const auto& s : tune::registered_strategies())
      if (s.name != "random" && s.name != "exhaustive") strategies.push_back(s.name);
  } else {
    tune::make_strategy(o.strategy);  // an unknown name fails here, listing the known ones
    strategies.push_back(o.strategy);
  }
  const auto space = tune::RecordedSpace::load(
      o.t4, o.t1.empty() ? std::nullopt : std::optional<std::filesystem::path>(o.t1));
  if (space->unrecorded() > 0)
    fmt::print(stderr,
               "note: {} configurations of the T1 space are not in {}; they count as "
               "failed evaluations.\n",
               space->unrecorded(), o.t4);
  const unsigned threads =
      o.threads ? o.threads : std::max(1u, std::thread::hardware_concurrency());

  nlohmann::json all = nlohmann::json::array();
  for (const auto& name : strategies) {
    Progress progress("replay " + name, budgets.size() * o.seeds * 2);
    const auto results =
        tune::replay(*space, name, budgets, o.seeds, threads,
                     [&](std::size_t done, std::size_t) { progress.update(done); });
    progress.finish();
    all.push_back(tune::replay_json(name, o.t4, o.seeds, results));
  }
  if (o.json) {
    if (all.size() == 1) {
      fmt::print("{}\n", all[0].dump(2));
    } else {
      nlohmann::json j;
      j["schema_version"] = tune::kReplaySchemaVersion;
      j["strategy"] = "all";
      j["space"] = o.t4;
      j["seeds"] = o.seeds;
      j["comparisons"] = all;
      fmt::print("{}\n", j.dump(2));
    }
    return 0;
  }
  fmt::print("{}: {} configurations, best {:.4f} ms; {} seeds; fraction of the optimum\n", o.t4,
             space->index().size(), space->best_time_ns() / 1e6, o.seeds);
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
    {"replay", "Score a search strategy on a recorded tuning space (T4), no GPU needed", 35,
     [](CLI::App& app, const GlobalOptions&) -> Runner {
       auto o = std::make_shared<ReplayOptions>();
       app.add_option("T4FILE", o->t4, "Recorded results (.json or .json.gz)")->required();
       app.add_option("--space", o->t1, "T1 spec whose space the strategy searches");
       std::string names;
       for (const auto& s : tune::registered_strategies()) names += s.name + ", ";
       app.add_option("--strategy", o->strategy,
                      "Strategy: " + names + "or all (default " + o->strategy + ")");
       app.add_option("--budget", o->budgets, "Comma-separated evaluation budgets")
           ->default_str(o->budgets);
       app.add_option("--seeds", o->seeds, "Searches per budget")->default_val(o->seeds);
       app.add_option("--threads", o->threads, "Worker threads (default: all cores)");
       app.add_flag("--json", o->json,
                    fmt::format("Print JSON (schema_version {})", tune::kReplaySchemaVersion));
       return [o] { return run(*o); };
     }});

}  // namespace
}  // namespace ktune::cli

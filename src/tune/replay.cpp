#include "ktune/tune/replay.hpp"

#include <algorithm>
#include <atomic>
#include <limits>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"

namespace ktune::tune {

std::unique_ptr<RecordedSpace> RecordedSpace::load(const std::filesystem::path& t4,
                                                   const std::optional<std::filesystem::path>& t1) {
  std::optional<ProblemSpec> spec;
  if (t1) spec = ProblemSpec::load(*t1);
  return from_records(read_t4(t4), std::move(spec));
}

std::unique_ptr<RecordedSpace> RecordedSpace::from_records(T4File file,
                                                           std::optional<ProblemSpec> spec) {
  std::unique_ptr<RecordedSpace> r(new RecordedSpace());
  r->source_ = file.source;
  if (file.results.empty())
    throw Error(fmt::format("{}: the file holds no results; nothing to replay.", file.source));
  if (spec) {
    r->constants_ = std::make_unique<MapScope>(spec->constants());
    r->space_ = std::make_unique<SearchSpace>(SearchSpace::from_spec(*spec, r->constants_.get()));
    r->index_ = std::make_unique<IndexedSpace>(*r->space_);
  } else {
    // The parameters and their values are those the records use, sorted.
    std::map<std::string, std::set<Value>> values;
    for (const auto& rec : file.results)
      for (const auto& [name, v] : rec.configuration) values[name].insert(v);
    std::vector<Parameter> params;
    for (auto& [name, vs] : values) {
      Parameter p;
      p.name = name;
      p.values.assign(vs.begin(), vs.end());
      params.push_back(std::move(p));
    }
    r->space_ = std::make_unique<SearchSpace>(std::move(params), std::vector<Constraint>{});
    std::vector<std::uint64_t> ranks;
    for (std::size_t i = 0; i < file.results.size(); ++i) {
      const auto c = r->space_->from_values(file.results[i].configuration);
      if (!c)
        throw Error(
            fmt::format("{}: field results[{}].configuration: it lacks a parameter other "
                        "records have; every record must set the same parameters.",
                        file.source, i));
      ranks.push_back(r->space_->rank(*c));
    }
    r->index_ = std::make_unique<IndexedSpace>(*r->space_, std::move(ranks));
  }
  Evaluation missing;
  missing.status = Status::launch_failed;
  r->outcome_.assign(r->index_->size(), missing);
  std::vector<bool> seen(r->index_->size(), false);
  r->best_time_ns_ = std::numeric_limits<double>::infinity();
  for (const auto& rec : file.results) {
    const auto c = r->space_->from_values(rec.configuration);
    const auto pos = c ? r->index_->find(*c) : std::nullopt;
    if (!pos) continue;  // outside the T1 space: never proposed
    Evaluation e;
    e.index = *pos;
    e.status = rec.status;
    e.time_ns = rec.time_ns;
    // A configuration recorded twice keeps its best successful outcome.
    if (!seen[*pos] || (e.status == Status::ok && (r->outcome_[*pos].status != Status::ok ||
                                                   e.time_ns < r->outcome_[*pos].time_ns)))
      r->outcome_[*pos] = e;
    seen[*pos] = true;
    if (e.status == Status::ok) r->best_time_ns_ = std::min(r->best_time_ns_, e.time_ns);
  }
  for (std::size_t i = 0; i < seen.size(); ++i) {
    r->outcome_[i].index = i;
    if (!seen[i]) ++r->unrecorded_;
  }
  if (!std::isfinite(r->best_time_ns_))
    throw Error(
        fmt::format("{}: no record has a valid time, so there is no optimum to compare "
                    "against; replay needs at least one successful result.",
                    file.source));
  return r;
}

Evaluation RecordedSpace::evaluate(std::size_t index) const {
  return outcome_.at(index);
}

double replay_once(const RecordedSpace& space, Strategy& strategy, std::uint64_t seed,
                   std::size_t budget) {
  strategy.begin(space.index(), seed, budget);
  const StopCondition stop{budget};
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t n = 0; !stop.done(n); ++n) {
    const auto i = strategy.propose();
    if (!i) break;  // space exhausted
    const Evaluation e = space.evaluate(*i);
    if (e.status == Status::ok) best = std::min(best, e.time_ns);
    strategy.observe(e);
  }
  return std::isfinite(best) ? space.best_time_ns() / best : 0.0;
}

std::vector<ReplayResult> replay(const RecordedSpace& space, const std::string& strategy,
                                 const std::vector<std::size_t>& budgets, std::size_t seeds,
                                 unsigned threads,
                                 const std::function<void(std::size_t, std::size_t)>& progress) {
  make_strategy(strategy);  // fail on an unknown name before starting threads
  struct Job {
    std::size_t budget_index, seed;
    bool random;
  };
  std::vector<Job> jobs;
  for (std::size_t b = 0; b < budgets.size(); ++b)
    for (std::size_t s = 0; s < seeds; ++s) {
      jobs.push_back({b, s, false});
      jobs.push_back({b, s, true});
    }
  std::vector<double> score(jobs.size());
  std::atomic<std::size_t> next{0}, done{0};
  std::mutex progress_mutex;
  std::exception_ptr error;
  auto worker = [&] {
    try {
      for (std::size_t j; (j = next++) < jobs.size();) {
        auto s = make_strategy(jobs[j].random ? "random" : strategy);
        score[j] = replay_once(space, *s, jobs[j].seed, budgets[jobs[j].budget_index]);
        const std::size_t d = ++done;
        if (progress) {
          std::lock_guard lock(progress_mutex);
          progress(d, jobs.size());
        }
      }
    } catch (...) {
      std::lock_guard lock(progress_mutex);
      if (!error) error = std::current_exception();
      next = jobs.size();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < std::max(1u, threads); ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);

  std::vector<ReplayResult> out(budgets.size());
  for (std::size_t b = 0; b < budgets.size(); ++b) out[b].budget = budgets[b];
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    auto& r = out[jobs[j].budget_index];
    (jobs[j].random ? r.random_mean_fraction_of_optimum : r.mean_fraction_of_optimum) +=
        score[j] / static_cast<double>(seeds);
  }
  return out;
}

nlohmann::json replay_json(const std::string& strategy, const std::string& space, std::size_t seeds,
                           const std::vector<ReplayResult>& results) {
  nlohmann::json j;
  j["schema_version"] = kReplaySchemaVersion;
  j["strategy"] = strategy;
  j["space"] = space;
  j["seeds"] = seeds;
  j["results"] = nlohmann::json::array();
  for (const auto& r : results)
    j["results"].push_back(
        {{"budget", r.budget},
         {"mean_fraction_of_optimum", r.mean_fraction_of_optimum},
         {"random_mean_fraction_of_optimum", r.random_mean_fraction_of_optimum}});
  return j;
}

}  // namespace ktune::tune

#include "ktune/tune/replay.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"
#include "ktune/tune/kt_cache.hpp"
#include "ktune/tune/warm_start.hpp"

namespace ktune::tune {

namespace {
const double kNotRecorded = std::nan("");  // a compile time the recording lacks
}  // namespace

// Gathers records one at a time in a compact form (value indices, status, time) and lays them
// over a space at the end: what keeps a file of millions of records cheap to load.
class RecordedSpace::Builder {
 public:
  Builder(std::string source, std::optional<ProblemSpec> spec) : r_(new RecordedSpace()) {
    r_->source_ = std::move(source);
    if (spec) {
      r_->constants_ = std::make_unique<MapScope>(spec->constants());
      r_->space_ =
          std::make_unique<SearchSpace>(SearchSpace::from_spec(*spec, r_->constants_.get()));
      r_->index_ = std::make_unique<IndexedSpace>(*r_->space_);
      start_outcomes();
    }
  }

  // A space given up front by its parameters (a Kernel Tuner cache's tune_params); the records
  // then name value indices, and only the recorded configurations form the space.
  void set_parameters(std::vector<Parameter> params) {
    for (const auto& p : params) {
      names_.push_back(p.name);
      values_.emplace_back();
      for (std::uint32_t k = 0; k < p.values.size(); ++k) values_.back().emplace(p.values[k], k);
    }
    fixed_params_ = std::move(params);
  }

  void add_codes(const Configuration& c, Status status, double time_ns,
                 std::optional<double> compile_ns) {
    codes_.insert(codes_.end(), c.begin(), c.end());
    status_.push_back(status);
    time_ns_.push_back(time_ns);
    compile_ns_.push_back(compile_ns.value_or(kNotRecorded));
  }

  void add(const std::map<std::string, Value>& config, Status status, double time_ns,
           std::optional<double> compile_ns, std::size_t i) {
    if (r_->index_) {  // a T1 space: place the record at once
      const auto c = r_->space_->from_values(config);
      if (const auto pos = c ? r_->index_->find(*c) : std::nullopt)
        place(*pos, status, time_ns,
              compile_ns.value_or(kNotRecorded));  // else outside the T1 space: never proposed
      ++records_;
      return;
    }
    if (records_ == 0)
      for (const auto& [name, _] : config) {
        names_.push_back(name);
        values_.emplace_back();
      }
    if (config.size() != names_.size())
      throw Error(
          fmt::format("{}: field results[{}].configuration: it sets {} parameters where the first "
                      "record sets {}; every record must set the same parameters.",
                      r_->source_, i, config.size(), names_.size()));
    std::size_t p = 0;
    for (const auto& [name, v] : config) {
      if (name != names_[p])
        throw Error(
            fmt::format("{}: field results[{}].configuration: parameter '{}' is not among the "
                        "first record's; every record must set the same parameters.",
                        r_->source_, i, name));
      // First-seen codes for now; finish() sorts each parameter's values.
      auto [it, _] = values_[p].emplace(v, static_cast<std::uint32_t>(values_[p].size()));
      codes_.push_back(it->second);
      ++p;
    }
    status_.push_back(status);
    time_ns_.push_back(time_ns);
    compile_ns_.push_back(compile_ns.value_or(kNotRecorded));
    ++records_;
  }

  std::unique_ptr<RecordedSpace> finish(double rescale) {
    if (records_ == 0 && status_.empty())
      throw Error(fmt::format("{}: the file holds no results; nothing to replay.", r_->source_));
    if (!r_->index_) {
      std::vector<Parameter> params;
      if (fixed_params_) {
        params = std::move(*fixed_params_);
      } else {
        // Values sorted; remap the first-seen codes to sorted positions.
        std::vector<std::vector<std::uint32_t>> remap(names_.size());
        for (std::size_t p = 0; p < names_.size(); ++p) {
          Parameter param;
          param.name = names_[p];
          remap[p].resize(values_[p].size());
          for (const auto& [v, code] : values_[p]) {  // std::map iterates in sorted order
            remap[p][code] = static_cast<std::uint32_t>(param.values.size());
            param.values.push_back(v);
          }
          params.push_back(std::move(param));
        }
        for (std::size_t k = 0; k < codes_.size(); ++k)
          codes_[k] = remap[k % names_.size()][codes_[k]];
      }
      values_.clear();
      r_->space_ = std::make_unique<SearchSpace>(std::move(params), std::vector<Constraint>{});
      r_->index_ = std::make_unique<IndexedSpace>(IndexedSpace::from_flat(*r_->space_, codes_));
      start_outcomes();
      const std::size_t d = r_->space_->parameters().size();
      Configuration c(d);
      for (std::size_t i = 0; i < status_.size(); ++i) {
        std::copy_n(codes_.begin() + static_cast<std::ptrdiff_t>(i * d), d, c.begin());
        place(*r_->index_->find(c), status_[i], time_ns_[i], compile_ns_[i]);
      }
    }
    for (std::size_t i = 0; i < seen_.size(); ++i) {
      r_->outcome_[i].index = i;
      r_->outcome_[i].time_ns *= rescale;
      r_->compile_ns_[i] *= rescale;
      if (!seen_[i]) ++r_->unrecorded_;
    }
    r_->best_time_ns_ *= rescale;
    if (!std::isfinite(r_->best_time_ns_))
      throw Error(
          fmt::format("{}: no record has a valid time, so there is no optimum to compare "
                      "against; replay needs at least one successful result.",
                      r_->source_));
    return std::move(r_);
  }

 private:
  void start_outcomes() {
    Evaluation missing;
    missing.status = Status::launch_failed;
    r_->outcome_.assign(r_->index_->size(), missing);
    r_->compile_ns_.assign(r_->index_->size(), kNotRecorded);
    seen_.assign(r_->index_->size(), false);
    r_->best_time_ns_ = std::numeric_limits<double>::infinity();
  }

  void place(std::size_t pos, Status status, double time_ns, double compile_ns) {
    auto& o = r_->outcome_[pos];
    if (std::isnan(r_->compile_ns_[pos])) r_->compile_ns_[pos] = compile_ns;
    // A configuration recorded twice keeps its best timed outcome. A screened-out one ("slower")
    // ran correctly and carries the screen's time: a space ktune recorded is mostly such records
    // (each slower than the best found before it), and without their times a replay in another
    // order could only find the few measured in full.
    if (!seen_[pos] || (has_time(status) && (!has_time(o.status) || time_ns < o.time_ns))) {
      o.status = status;
      o.time_ns = has_time(status) ? time_ns : 0;
    }
    seen_[pos] = true;
    if (has_time(status)) r_->best_time_ns_ = std::min(r_->best_time_ns_, time_ns);
  }

  std::unique_ptr<RecordedSpace> r_;
  std::optional<std::vector<Parameter>> fixed_params_;
  std::vector<std::string> names_;
  std::vector<std::map<Value, std::uint32_t>> values_;
  std::vector<std::uint32_t> codes_;  // names_.size() per record
  std::vector<Status> status_;
  std::vector<double> time_ns_;
  std::vector<double> compile_ns_;  // kNotRecorded where the record has none
  std::vector<bool> seen_;
  std::size_t records_ = 0;
};

std::unique_ptr<RecordedSpace> RecordedSpace::load(const std::filesystem::path& file,
                                                   const std::optional<std::filesystem::path>& t1) {
  std::optional<ProblemSpec> spec;
  if (t1) spec = ProblemSpec::load(*t1);
  try {
    Builder b(file.string(), std::move(spec));
    const double rescale = for_each_t4_record(file, [&](T4Record&& r, std::size_t i) {
      b.add(r.configuration, r.status, r.time_ns, r.compile_ns, i);
    });
    return b.finish(rescale);
  } catch (const NotT4&) {
    return from_kt_cache(read_kt_cache(file),
                         t1 ? std::optional(ProblemSpec::load(*t1)) : std::nullopt);
  }
}

std::unique_ptr<RecordedSpace> RecordedSpace::from_records(T4File file,
                                                           std::optional<ProblemSpec> spec) {
  Builder b(file.source, std::move(spec));
  for (std::size_t i = 0; i < file.results.size(); ++i) {
    const T4Record& r = file.results[i];
    b.add(r.configuration, r.status, r.time_ns, r.compile_ns, i);
  }
  return b.finish(1.0);
}

std::unique_ptr<RecordedSpace> RecordedSpace::from_kt_cache(const KtCache& cache,
                                                            std::optional<ProblemSpec> spec) {
  if (spec) {
    // Lay the cache over the T1 space by parameter values, as a T4 file's records are.
    Builder b(cache.source, std::move(spec));
    std::map<std::string, Value> values;
    for (std::size_t i = 0; i < cache.records.size(); ++i) {
      for (std::size_t p = 0; p < cache.parameters.size(); ++p)
        values[cache.parameters[p].name] =
            cache.parameters[p].values[cache.records[i].configuration[p]];
      b.add(values, cache.records[i].status, cache.records[i].time_ns, cache.records[i].compile_ns,
            i);
    }
    return b.finish(1.0);
  }
  Builder b(cache.source, std::nullopt);
  b.set_parameters(cache.parameters);
  for (const auto& r : cache.records)
    b.add_codes(r.configuration, r.status, r.time_ns, r.compile_ns);
  return b.finish(1.0);
}

Evaluation RecordedSpace::evaluate(std::size_t index) const {
  return outcome_.at(index);
}

std::optional<double> RecordedSpace::compile_s(std::size_t index) const {
  const double ns = compile_ns_.at(index);
  return std::isnan(ns) ? std::nullopt : std::optional<double>(ns * 1e-9);
}

// -----------------------------------------------------------------------------------------------
namespace {

// What a sample costs beyond the kernel itself: the L2 flush, the event pair, the host's wait.
constexpr double kSampleOverheadS = 20e-6;

// Wall time `rule` spends on a kernel of `time_ns`: its warm-up and the samples it needs for its
// minimum count and GPU time; only the minimum screen samples when `clearly_slower`.
double measure_s(const bench::StopSettings& rule, double time_ns, bool clearly_slower) {
  const double t = time_ns * 1e-9;
  const double counted = clearly_slower ? static_cast<double>(rule.min_screen_samples)
                                        : std::max(static_cast<double>(rule.min_samples),
                                                   std::ceil(rule.min_gpu_time_s / t));
  const double n = static_cast<double>(rule.warmup_samples) + counted;
  return std::min(n * (t + kSampleOverheadS), rule.timeout_s);
}

// A uniform draw in [0, 1) that depends only on (seed, position): SplitMix64's finaliser.
double unit_draw(std::uint64_t seed, std::size_t position) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + position + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

}  // namespace

bench::PipelineSettings RecordedEvaluator::tuning_settings() {
  bench::PipelineSettings s;
  s.full = bench::PipelineSettings::tuning_full();
  return s;
}

RecordedEvaluator::RecordedEvaluator(const RecordedSpace& space, std::uint64_t seed,
                                     unsigned compile_threads, bench::PipelineSettings settings)
    : space_(space),
      seed_(seed),
      settings_(settings),
      worker_free_s_(std::max(1u, compile_threads), 0.0) {
  std::vector<double> recorded;
  for (std::size_t i = 0; i < space.index().size(); ++i)
    if (const auto c = space.compile_s(i)) recorded.push_back(*c);
  if (!recorded.empty()) {
    const auto mid = recorded.begin() + static_cast<std::ptrdiff_t>(recorded.size() / 2);
    std::nth_element(recorded.begin(), mid, recorded.end());
    median_compile_s_ = *mid;
  }
}

std::size_t RecordedEvaluator::position(const ConfigMap& config) const {
  const auto c = space_.space().from_values(config);
  if (const auto pos = c ? space_.index().find(*c) : std::nullopt) return *pos;
  throw Error(fmt::format(
      "{}: a session asked for a configuration the recorded space does not hold", space_.source()));
}

double RecordedEvaluator::compile_s(std::size_t position) const {
  if (const auto c = space_.compile_s(position)) return *c;
  return median_compile_s_ * std::exp2(2 * unit_draw(seed_, position) - 1);
}

double RecordedEvaluator::ready_s(std::size_t position) {
  if (const auto it = compiled_at_s_.find(position); it != compiled_at_s_.end()) return it->second;
  // The pool's queue is first in, first out: the next compile starts on the first idle worker.
  const auto worker = std::min_element(worker_free_s_.begin(), worker_free_s_.end());
  *worker = std::max(*worker, now_s_) + compile_s(position);
  return compiled_at_s_[position] = *worker;
}

void RecordedEvaluator::prepare(const std::vector<ConfigMap>& upcoming) {
  for (const ConfigMap& c : upcoming) ready_s(position(c));
}

std::size_t RecordedEvaluator::next_ready(const std::vector<ConfigMap>& candidates) {
  // The first (in proposal order) whose compile has finished; else the first to finish.
  std::size_t first = 0;
  double first_s = INFINITY;
  for (std::size_t k = 0; k < candidates.size(); ++k) {
    const double at = ready_s(position(candidates[k]));
    if (at <= now_s_) return k;
    if (at < first_s) first_s = at, first = k;
  }
  return first;
}

CandidateOutcome RecordedEvaluator::evaluate(const ConfigMap& config,
                                             std::optional<double> best_ns) {
  const std::size_t pos = position(config);
  now_s_ = std::max(now_s_, ready_s(pos));  // waits for its compile
  compiled_at_s_.erase(pos);
  const Evaluation e = space_.evaluate(pos);
  CandidateOutcome r;
  r.status = e.status;
  r.compile_s = compile_s(pos);
  if (!has_time(e.status)) {
    r.detail = fmt::format("recorded as {}", to_string(e.status));
    return r;
  }
  r.set_time(e.time_ns, 0, 0);
  if (best_ns) {  // the pipeline's screen
    const bool clearly_slower = settings_.screen.screen_margin > 0 &&
                                e.time_ns > *best_ns * (1 + settings_.screen.screen_margin);
    now_s_ += measure_s(settings_.screen, e.time_ns, clearly_slower);
    if (!bench::is_contender(e.time_ns, best_ns, settings_.contender_margin)) {
      r.status = Status::slower;
      return r;
    }
  }
  now_s_ += measure_s(settings_.full, e.time_ns, false);
  r.status = Status::ok;
  r.full = true;
  return r;
}

ReplayRun replay_once(const RecordedSpace& space, Strategy& strategy, std::uint64_t seed,
                      std::size_t budget, const std::vector<std::size_t>& first,
                      std::size_t window) {
  RecordedEvaluator evaluator(space, seed, static_cast<unsigned>(window / 2));
  SearchTarget target;
  target.source = space.source();
  target.space = &space.index();
  target.first = first;
  SessionOptions options;
  options.seed = seed;
  options.budget = budget;
  options.prefetch = window;
  options.clock_s = [&evaluator] { return evaluator.clock_s(); };
  const SessionSummary s = Session(target, options, evaluator, strategy).run();
  ReplayRun run;
  run.seed = seed;
  if (!s.best || s.to_solution.size() < 2) return run;
  run.fraction_of_optimum = space.best_time_ns() / s.best->result.time_ns();
  run.evaluations_to_1pct = s.to_solution[0].evaluations;
  run.evaluations_to_2pct = s.to_solution[1].evaluations;
  return run;
}

std::vector<ReplayResult> replay(const RecordedSpace& space, const std::string& strategy,
                                 const std::vector<std::size_t>& budgets, std::size_t seeds,
                                 unsigned threads,
                                 const std::function<void(std::size_t, std::size_t)>& progress,
                                 const std::vector<std::size_t>& warm_order, std::size_t window) {
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
  std::vector<ReplayRun> score(jobs.size());
  std::atomic<std::size_t> next{0}, done{0};
  std::mutex progress_mutex;
  std::exception_ptr error;
  auto worker = [&] {
    try {
      for (std::size_t j; (j = next++) < jobs.size();) {
        auto s = make_strategy(jobs[j].random ? "random" : strategy);
        const std::size_t budget = budgets[jobs[j].budget_index];
        std::vector<std::size_t> first;
        if (!jobs[j].random && !warm_order.empty())
          first.assign(warm_order.begin(),
                       warm_order.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                warm_order.size(), warm_start_count(budget))));
        score[j] = replay_once(space, *s, jobs[j].seed, budget, first, window);
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
  // More threads than jobs would idle; and when the system refuses a thread, the ones already
  // started (and this one) share the work rather than the process aborting.
  const std::size_t want = std::min<std::size_t>(std::max(1u, threads), jobs.size());
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < want; ++t) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error&) {
      break;
    }
  }
  worker();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);

  std::vector<ReplayResult> out(budgets.size());
  for (std::size_t b = 0; b < budgets.size(); ++b) out[b].budget = budgets[b];
  for (std::size_t j = 0; j < jobs.size(); ++j) {  // jobs are in seed order per budget
    auto& r = out[jobs[j].budget_index];
    (jobs[j].random ? r.random_mean_fraction_of_optimum : r.mean_fraction_of_optimum) +=
        score[j].fraction_of_optimum / static_cast<double>(seeds);
    if (!jobs[j].random) r.runs.push_back(score[j]);
  }
  return out;
}

nlohmann::json replay_json(const std::string& strategy, const std::string& space, std::size_t seeds,
                           std::size_t window, const std::vector<ReplayResult>& results) {
  nlohmann::json j;
  j["schema_version"] = kReplaySchemaVersion;
  j["strategy"] = strategy;
  j["space"] = space;
  j["seeds"] = seeds;
  j["prefetch"] = window;
  j["results"] = nlohmann::json::array();
  for (const auto& r : results) {
    nlohmann::json runs = nlohmann::json::array();
    double to1 = 0, to2 = 0;
    for (const auto& run : r.runs) {
      runs.push_back({{"seed", run.seed},
                      {"fraction_of_optimum", run.fraction_of_optimum},
                      {"evaluations_to_1pct", run.evaluations_to_1pct},
                      {"evaluations_to_2pct", run.evaluations_to_2pct}});
      to1 += static_cast<double>(run.evaluations_to_1pct);
      to2 += static_cast<double>(run.evaluations_to_2pct);
    }
    const double n = std::max<double>(1, static_cast<double>(r.runs.size()));
    j["results"].push_back({{"budget", r.budget},
                            {"mean_fraction_of_optimum", r.mean_fraction_of_optimum},
                            {"random_mean_fraction_of_optimum", r.random_mean_fraction_of_optimum},
                            {"mean_evaluations_to_1pct", to1 / n},
                            {"mean_evaluations_to_2pct", to2 / n},
                            {"runs", std::move(runs)}});
  }
  return j;
}

}  // namespace ktune::tune

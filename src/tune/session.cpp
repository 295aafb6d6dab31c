#include "ktune/tune/session.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/enum_names.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/identity.hpp"
#include "ktune/core/json.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/core/version.hpp"
#include "ktune/spec/space.hpp"
#include "ktune/tune/strategy.hpp"
#include "ktune/tune/t4.hpp"

namespace ktune::tune {

namespace {
constexpr EnumName<StopCause> kStopCauseNames[] = {
    {StopCause::budget, "budget"},       {StopCause::time, "time"},
    {StopCause::exhausted, "exhausted"}, {StopCause::interrupted, "interrupted"},
    {StopCause::fatal, "fatal"},
};
}  // namespace

const char* to_string(StopCause c) {
  return name_of(kStopCauseNames, c);
}

std::filesystem::path Session::results_path(const std::filesystem::path& dir) {
  return dir / "results.jsonl";
}

namespace {

nlohmann::json config_json(const ConfigMap& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, v] : c) j[name] = v;
  return j;
}

// The identity of a configuration across processes: its values as canonical JSON.
std::string config_key(const ConfigMap& c) {
  return config_json(c).dump();
}

ConfigMap config_of(const SearchSpace& space, const Configuration& c) {
  ConfigMap out;
  const auto& params = space.parameters();
  for (std::size_t i = 0; i < params.size(); ++i) out[params[i].name] = params[i].values[c[i]];
  return out;
}

// What a failed write says: both ways a session goes on (`ktune tune`, and a queued job, which
// its workers retry) keep the lines already written.
constexpr const char* kResumeAfter =
    "cannot {} {} ({}); free disk space there, then continue the session: ktune tune --resume {} "
    "(a queued job is retried by its workers)";

// Appends lines to results.jsonl, each one on disk (fsync) before the strategy learns of it.
class ResultsLog {
 public:
  explicit ResultsLog(const std::filesystem::path& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw EnvironmentError(
          fmt::format("cannot open {} for appending ({}); check the --output folder.",
                      path.string(), std::strerror(errno)));
  }
  ~ResultsLog() { ::close(fd_); }
  ResultsLog(const ResultsLog&) = delete;
  ResultsLog& operator=(const ResultsLog&) = delete;
  void append(const nlohmann::json& j) {
    const std::string line = j.dump() + "\n";
    std::size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0)
        throw EnvironmentError(fmt::format(kResumeAfter, "append to", path_.string(),
                                           std::strerror(errno), path_.parent_path().string()));
      done += static_cast<std::size_t>(n);
    }
    if (::fsync(fd_) != 0)
      throw EnvironmentError(fmt::format(kResumeAfter, "sync", path_.string(), std::strerror(errno),
                                         path_.parent_path().string()));
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

void write_outputs(const std::filesystem::path& dir, const SessionSummary& s) {
  write_file_atomic(dir / "t4.json", session_t4_json(s).dump(2) + "\n");
  write_file_atomic(dir / "summary.json", session_summary_json(s).dump(2) + "\n");
  write_file_atomic(dir / "curve.svg", best_so_far_svg(s));
}

}  // namespace

nlohmann::json Evaluator::describe() {
  return nullptr;
}

std::vector<TimeToSolution> time_to_solution(const std::vector<SessionRecord>& records) {
  std::vector<double> times;  // what can be the best: fully measured, verified; else NaN
  for (const SessionRecord& r : records)
    times.push_back(r.result.status == Status::ok && r.result.full ? r.result.time_ns()
                                                                   : std::nan(""));
  std::vector<TimeToSolution> out;
  for (double within : {0.01, 0.02})
    if (const auto k = first_within(times, within))
      out.push_back({within, *k + 1, records[*k].elapsed_s});
  return out;
}

// -----------------------------------------------------------------------------------------------
nlohmann::json record_json(const SessionRecord& r) {
  const CandidateOutcome& x = r.result;
  return {{"schema_version", kSessionSchemaVersion},
          {"sequence", r.sequence},
          {"config", config_json(r.config)},
          {"status", to_string(x.status)},
          {"time_ns", x.time_ns()},
          {"noise_ns", x.noise_ns()},
          {"samples", x.samples()},
          {"measurement", x.full ? "full" : (x.time_ns() > 0 ? "screen" : "none")},
          {"detail", x.detail},
          {"compile_s", x.compile_s},
          {"fatal", x.context_lost},
          {"elapsed_s", r.elapsed_s},
          {"timestamp", r.timestamp}};
}

namespace {

// A results line that opens a claim's part of the file (SessionOptions::claim): {"schema_version",
// "claim"}, no "sequence".
nlohmann::json claim_json(std::int64_t claim) {
  return {{"schema_version", kSessionSchemaVersion}, {"claim", claim}};
}

// What bounds a results file: about 300 bytes a line, far fewer lines than this allows.
constexpr std::size_t kMaxResultsBytes = std::size_t{1} << 30;

}  // namespace

SessionRecord record_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw Error("a results line must be a JSON object");
  if (j.value("schema_version", 0) != kSessionSchemaVersion)
    throw Error(fmt::format("schema_version {} is not {}, the one this ktune writes",
                            j.value("schema_version", nlohmann::json()).dump(),
                            kSessionSchemaVersion));
  SessionRecord r;
  r.sequence = j.at("sequence").get<std::size_t>();
  for (const auto& [name, v] : j.at("config").items()) r.config[name] = v.get<Value>();
  const auto status = status_from_string(j.at("status").get<std::string>());
  if (!status) throw Error(fmt::format("unknown status '{}'", j.at("status").dump()));
  r.result.status = *status;
  r.result.set_time(j.at("time_ns").get<double>(), j.value("noise_ns", 0.0),
                    j.value("samples", std::size_t{0}));
  r.result.full = j.value("measurement", "") == "full";
  r.result.detail = j.value("detail", "");
  r.result.context_lost = j.value("fatal", false);
  r.result.compile_s = j.value("compile_s", 0.0);
  r.elapsed_s = j.value("elapsed_s", 0.0);
  r.timestamp = j.value("timestamp", "");
  return r;
}

std::vector<SessionRecord> read_results(const std::filesystem::path& path) {
  std::vector<SessionRecord> out;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return out;
  const std::string text = read_file(path, kMaxResultsBytes);
  std::vector<std::string_view> lines;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t nl = std::min(text.find('\n', at), text.size());
    lines.push_back(std::string_view(text).substr(at, nl - at));
    at = nl + 1;
  }
  std::int64_t fence = 0;  // the latest claim that opened its part of the file
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    try {
      const nlohmann::json j = nlohmann::json::parse(lines[i]);
      if (j.is_object() && j.contains("claim") && !j.contains("sequence")) {
        fence = std::max(fence, json_integer(j["claim"], "\"claim\"", 0));
        continue;
      }
      // Appended by a claim that had lost the job (frozen past its lease): not the job's.
      if (j.is_object() && j.value("claim", std::int64_t{0}) < fence) continue;
      out.push_back(record_from_json(j));
    } catch (const std::exception& e) {
      if (i + 1 == lines.size()) break;  // torn by a crash mid-write: that evaluation is redone
      throw Error(fmt::format("{}:{}: {}; restore the line or start a new session with --output.",
                              path.string(), i + 1, e.what()));
    }
  }
  return out;
}

// -----------------------------------------------------------------------------------------------
Session::Session(const ProblemSpec& spec, SessionOptions options, Evaluator& evaluator)
    : Session(SearchTarget{}, std::move(options), evaluator) {
  spec_ = &spec;
}

Session::Session(SearchTarget target, SessionOptions options, Evaluator& evaluator,
                 Strategy& strategy)
    : Session(std::move(target), std::move(options), evaluator) {
  strategy_ = &strategy;
}

Session::Session(SearchTarget target, SessionOptions options, Evaluator& evaluator)
    : target_(std::move(target)), opt_(std::move(options)), evaluator_(evaluator) {
  if (opt_.strategy.empty()) opt_.strategy = default_strategy_name();
  if (opt_.resume && opt_.out_dir.empty())
    throw Error("a session resumes from its output folder; name it with --resume DIR.");
  if (opt_.prefetch == 0) opt_.prefetch = 1;
  if (!opt_.clock_s) {
    opt_.clock_s = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
          .count();
    };
  }
}

namespace {

// Creates the output directory; a fresh session refuses one that already holds results. No
// directory: a session that writes nothing.
void open_out_dir(const std::filesystem::path& dir, bool resume) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw EnvironmentError(
        fmt::format("cannot create the output directory {} ({}); pick another --output.",
                    dir.string(), ec.message()));
  const std::filesystem::path results = Session::results_path(dir);
  if (!resume && std::filesystem::exists(results))
    throw Error(
        fmt::format("{} already holds a session; continue it with --resume {} or pick "
                    "another --output.",
                    results.string(), dir.string()));
}

// A spec's space, built for one run: the constants its constraints read, the space, its index.
struct SpecSpace {
  SpecSpace(const ProblemSpec& spec, const std::map<std::string, std::int64_t>& shape)
      : constants(spec.constants(shape)),
        space(SearchSpace::from_spec(spec, &constants)),
        index(space) {}
  const MapScope constants;
  const SearchSpace space;
  const IndexedSpace index;
};

SearchTarget spec_target(const ProblemSpec& spec, const SessionOptions& opt,
                         const IndexedSpace& index) {
  SearchTarget t;
  t.source = spec.source;
  t.op = spec.ktune.op.empty() ? spec.name : spec.ktune.op;
  t.shape = opt.shape;
  for (const auto& p : spec.ktune.shape)
    if (!t.shape.count(p.name) && p.default_value) t.shape[p.name] = *p.default_value;
  t.space = &index;
  return t;
}

// One run of a session, in its steps: the strategy started over the space (warm-started), what an
// earlier run recorded read back, then proposals evaluated (or taken from the record) until the
// stop condition or the space ends the search.
class SessionRun {
 public:
  SessionRun(const SearchTarget& target, const SessionOptions& opt, Evaluator& evaluator,
             Strategy* strategy)
      : target_(target),
        opt_(opt),
        evaluator_(evaluator),
        results_(Session::results_path(opt.out_dir)),
        index_(*target.space),
        space_(index_.space()),
        owned_(strategy ? nullptr : make_strategy(opt.strategy)),
        strategy_(strategy ? *strategy : *owned_),
        stop_{opt.budget, opt.time_limit_s, opt.interrupt} {}

  SessionSummary run() {
    start_strategy();
    if (opt_.resume)
      for (SessionRecord& r : read_results(results_))
        recorded_[config_key(r.config)] = std::move(r);
    s_ = summary_header();
    if (!opt_.out_dir.empty()) {
      log_.emplace(results_);
      if (opt_.claim > 0) log_->append(claim_json(opt_.claim));
    }
    t0_ = opt_.clock_s();
    std::optional<StopCause> stop;
    while (!(stop = step())) {
    }
    s_.stop = *stop;
    finish();
    if (*stop != StopCause::fatal) return std::move(s_);
    // A fatal candidate is recorded and the files written; the user is told to --resume.
    const SessionRecord& last = s_.records.back();
    throw Error(fmt::format(
        "configuration {} broke the GPU context ({}); it is recorded in {}, so run the same "
        "command with --resume {} to continue without it.",
        config_key(last.config), last.result.detail, results_.string(), opt_.out_dir.string()));
  }

 private:
  void start_strategy() {
    strategy_.begin(index_, opt_.seed, opt_.budget);
    std::vector<std::size_t> first = target_.first;
    if (!opt_.warm.spaces.empty() || !opt_.warm.winners.empty())
      for (std::size_t p :
           warm_start_order(index_, opt_.warm,
                            warm_start_count(std::min<std::size_t>(opt_.budget, index_.size()))))
        first.push_back(p);
    if (!first.empty()) strategy_.propose_first(std::move(first));
  }

  SessionSummary summary_header() const {
    SessionSummary s;
    s.spec = target_.source;
    s.op = target_.op;
    s.strategy = opt_.strategy;
    s.seed = opt_.seed;
    s.budget = opt_.budget;
    s.time_limit_s = opt_.time_limit_s;
    s.shape = target_.shape;
    s.space_size = index_.size();
    if (index_.sampled()) s.sampled_from = index_.valid_count();
    return s;
  }

  double elapsed() const { return opt_.clock_s() - t0_; }

  // Whether an earlier run recorded `config` (resuming); cheap when it is not resuming.
  bool recorded(const ConfigMap& config) const {
    return !recorded_.empty() && recorded_.count(config_key(config)) != 0;
  }

  // A sliding window of proposals: after each evaluation one more is proposed and handed to the
  // evaluator to compile ahead, so compiling never drains while the GPU measures.
  void refill() {
    const std::size_t room = std::min(opt_.prefetch, opt_.budget - s_.records.size());
    std::vector<ConfigMap> fresh;
    while (pending_.size() < room) {
      const auto p = strategy_.propose();
      if (!p) break;
      pending_.emplace_back(*p, config_of(space_, index_.at(*p)));
      if (!recorded(pending_.back().second)) fresh.push_back(pending_.back().second);
    }
    if (!fresh.empty()) evaluator_.prepare(fresh);
  }

  // Which pending proposal comes next: a recorded one (resuming), else the one the evaluator
  // has ready, so that one slow compile does not idle the GPU and the cores behind it.
  std::size_t pick() {
    std::vector<ConfigMap> fresh;
    std::vector<std::size_t> at;
    for (std::size_t k = 0; k < pending_.size(); ++k) {
      if (recorded(pending_[k].second)) return k;
      fresh.push_back(pending_[k].second);
      at.push_back(k);
    }
    const std::size_t k = evaluator_.next_ready(fresh);
    return k < at.size() ? at[k] : 0;
  }

  // One proposal taken from the record or evaluated and logged; nullopt while the search goes on.
  std::optional<StopCause> step() {
    if (stop_.done(s_.records.size())) return StopCause::budget;
    refill();
    if (pending_.empty()) return StopCause::exhausted;
    const auto next = pending_.begin() + static_cast<std::ptrdiff_t>(pick());
    const auto [position, config] = std::move(*next);
    pending_.erase(next);
    SessionRecord rec;
    const bool resumed = recorded(config);
    if (resumed) {
      rec = recorded_.at(config_key(config));
      ++s_.resumed;
    } else {
      if (stop_.out_of_time(elapsed())) return StopCause::time;
      if (stop_.interrupted()) return StopCause::interrupted;
      rec = evaluate(config);
    }
    observe(position, rec);
    const bool fatal = rec.result.context_lost && !resumed;
    s_.records.push_back(std::move(rec));
    if (fatal) return StopCause::fatal;
    return std::nullopt;
  }

  SessionRecord evaluate(const ConfigMap& config) {
    SessionRecord rec;
    rec.result = evaluator_.evaluate(config, best_ns_);
    rec.config = config;
    rec.sequence = s_.records.size();
    rec.elapsed_s = elapsed();
    rec.timestamp = utc_now_iso8601();
    if (log_) {
      nlohmann::json line = record_json(rec);
      if (opt_.claim > 0) line["claim"] = opt_.claim;
      log_->append(line);
    }
    ++s_.evaluated_now;
    if (rec.result.compile_s > 0)
      s_.compile_s_mean += (rec.result.compile_s - s_.compile_s_mean) / double(++s_.compiled);
    return rec;
  }

  void observe(std::size_t position, const SessionRecord& rec) {
    const CandidateOutcome& r = rec.result;
    ++s_.counts[r.status];
    // The record keeps the outcome "slower"; the strategy learns from its time (observe()).
    strategy_.observe({position, r.status, r.time_ns()});
    if (r.status == Status::ok && r.full && (!best_ns_ || r.time_ns() < *best_ns_)) {
      best_ns_ = r.time_ns();
      s_.best = rec;
    }
  }

  void finish() {
    s_.evaluations = s_.records.size();
    s_.to_solution = time_to_solution(s_.records);
    s_.elapsed_s = elapsed();
    s_.evaluations_per_s =
        s_.elapsed_s > 0 ? static_cast<double>(s_.evaluated_now) / s_.elapsed_s : 0;
    // A claim stopped early (its lease lost, or given back) leaves the folder's outputs to the
    // claim that finishes the job: a stale one must not replace them.
    if (opt_.claim > 0 && s_.stop == StopCause::interrupted) return;
    if (!opt_.out_dir.empty()) write_outputs(opt_.out_dir, s_);
  }

  const SearchTarget& target_;
  const SessionOptions& opt_;
  Evaluator& evaluator_;
  const std::filesystem::path results_;
  const IndexedSpace& index_;
  const SearchSpace& space_;
  std::unique_ptr<Strategy> owned_;
  Strategy& strategy_;
  const StopCondition stop_;
  std::unordered_map<std::string, SessionRecord> recorded_;  // by config_key, when resuming
  SessionSummary s_;
  std::optional<ResultsLog> log_;
  double t0_ = 0;
  std::optional<double> best_ns_;
  std::deque<std::pair<std::size_t, ConfigMap>> pending_;  // (position, configuration)
};

}  // namespace

SessionSummary Session::run() {
  open_out_dir(opt_.out_dir, opt_.resume);
  if (!spec_) return SessionRun(target_, opt_, evaluator_, strategy_).run();
  const SpecSpace space(*spec_, opt_.shape);
  return SessionRun(spec_target(*spec_, opt_, space.index), opt_, evaluator_, strategy_).run();
}

// -----------------------------------------------------------------------------------------------
nlohmann::json session_t4_json(const SessionSummary& s) {
  nlohmann::json results = nlohmann::json::array();
  for (const SessionRecord& r : s.records) {
    T4Record t;
    t.configuration = r.config;
    t.status = r.result.status;
    t.time_ns = r.result.time_ns();
    t.detail = r.result.detail;
    t.compile_ns = r.result.compile_s * 1e9;
    results.push_back(t4_result_json(t, r.timestamp));
  }
  return {{"schema_version", kT4SchemaVersion},
          {"metadata",
           {{"timeunit", "milliseconds"},
            {"name", s.op},
            {"spec", s.spec},
            {"tuner", "ktune"},
            {"tuner_version", version()},
            {"strategy", s.strategy},
            {"seed", s.seed}}},
          {"results", std::move(results)}};
}

std::string common_failure(const SessionSummary& s) {
  const auto most =
      std::max_element(s.counts.begin(), s.counts.end(),
                       [](const auto& a, const auto& b) { return a.second < b.second; });
  if (most == s.counts.end() || most->second == 0) return "";
  std::string first;
  for (const auto& r : s.records)
    if (r.result.status == most->first) {
      first = r.result.detail;
      break;
    }
  constexpr std::size_t kShown = 200;
  if (first.size() > kShown) first = first.substr(0, kShown) + "...";
  return fmt::format(": {} of {} {}{}", most->second, s.evaluations, to_string(most->first),
                     first.empty() ? "" : " (first: " + first + ")");
}

nlohmann::json session_summary_json(const SessionSummary& s) {
  nlohmann::json counts = nlohmann::json::object();
  for (Status st : kAllStatuses) {
    const auto it = s.counts.find(st);
    counts[to_string(st)] = it == s.counts.end() ? 0 : it->second;
  }
  nlohmann::json best = nlohmann::json(nullptr);
  if (s.best)
    best = {{"sequence", s.best->sequence},        {"config", config_json(s.best->config)},
            {"time_ns", s.best->result.time_ns()}, {"noise_ns", s.best->result.noise_ns()},
            {"samples", s.best->result.samples()}, {"detail", s.best->result.detail}};
  nlohmann::json to_solution = nlohmann::json::array();
  for (const TimeToSolution& t : s.to_solution)
    to_solution.push_back(
        {{"within", t.within}, {"evaluations", t.evaluations}, {"elapsed_s", t.elapsed_s}});
  return {{"schema_version", kSessionSummarySchemaVersion},
          {"spec", s.spec},
          {"op", s.op},
          {"strategy", s.strategy},
          {"seed", s.seed},
          {"budget", s.budget},
          {"time_limit_s", s.time_limit_s},
          {"shape", s.shape},
          {"space_size", s.space_size},
          {"space_sampled_from",
           s.sampled_from ? nlohmann::json(*s.sampled_from) : nlohmann::json(nullptr)},
          {"evaluations", s.evaluations},
          {"evaluated_now", s.evaluated_now},
          {"resumed", s.resumed},
          {"elapsed_s", s.elapsed_s},
          {"evaluations_per_s", s.evaluations_per_s},
          {"compiled", s.compiled},
          {"compile_s_mean", s.compile_s_mean},
          {"stop", to_string(s.stop)},
          {"status_counts", std::move(counts)},
          {"best", std::move(best)},
          {"time_to_solution", std::move(to_solution)}};
}

const SessionRecord* kept_winner(const SessionSummary& session, const SessionRecord* d) {
  if (!session.best) return nullptr;
  if (!d) return &*session.best;
  const double spread = std::max(d->result.noise_ns(), session.best->result.noise_ns());
  return d->result.time_ns() - session.best->result.time_ns() > spread ? &*session.best : d;
}

}  // namespace ktune::tune

#include "ktune/gate/gate.hpp"

#include <unistd.h>

#include <chrono>
#include <map>

#include <fmt/format.h>

#include "ktune/core/enum_names.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/identity.hpp"
#include "ktune/spec/spec.hpp"

namespace ktune::gate {
namespace {

std::string new_session_id() {
  Rng rng(static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) ^
          (static_cast<std::uint64_t>(::getpid()) << 32));
  return fmt::format("{}-{:08x}", utc_now_iso8601(), rng.next() & 0xffffffffu);
}

store::GateRun make_run(const Suite& suite, const SuiteBenchmark& b, const std::string& session,
                        std::size_t run, const store::GateEnvironment& env, const Provenance& p,
                        const nlohmann::json& config, RunSamples samples, const std::string& kind) {
  store::GateRun g;
  g.session_id = session;
  g.run_id = fmt::format("{}/{}/{}", session, b.name, run);
  g.kind = kind;
  g.suite = suite.file.filename().string();
  g.benchmark = b.name;
  g.shape = b.shape_key();
  g.env = env;
  g.code_commit = p.code_commit;
  g.label = p.label;
  g.config = config.is_null() ? nlohmann::json::object() : config;
  g.recorded_at = utc_now_iso8601();
  g.samples_ns = std::move(samples.samples_ns);
  g.sm_clock_mhz = samples.sm_clock_mhz;
  return g;
}

std::vector<std::string> environment_changes(const store::GateEnvironment& a,
                                             const store::GateEnvironment& b) {
  std::vector<std::string> out;
  const auto diff = [&](const char* what, const std::string& x, const std::string& y) {
    if (x != y) out.push_back(fmt::format("{} {} -> {}", what, x.empty() ? "?" : x, y));
  };
  diff("GPU", a.device_name, b.device_name);
  diff("arch", a.arch, b.arch);
  diff("driver", a.driver, b.driver);
  diff("toolkit", a.toolkit, b.toolkit);
  diff("ktune build", a.ktune_build, b.ktune_build);
  return out;
}

Runs runs_of(const std::vector<store::GateRun>& stored) {
  Runs out;
  for (const auto& g : stored) out.push_back(g.samples_ns);
  return out;
}

std::string shell_word(const std::string& s) {
  if (!s.empty() && s.find_first_of(" \t\"'$\\;&|<>()*?`") == std::string::npos) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// A run that the GPU's slowdowns left without a sample is taken again, up to this many times:
// on the H100 two checks of 83 lost one run so, and the next check ran clean.
constexpr int kThrottledRetries = 2;

RunSamples run_once(Measurer& m, const SuiteBenchmark& b) {
  for (int attempt = 0;; ++attempt) {
    try {
      return m.run(b);
    } catch (const ThrottledRun& e) {
      if (attempt == kThrottledRetries)
        throw Error(
            fmt::format("{}, in {} runs in a row; let the GPU cool down or look at its power limit "
                        "(nvidia-smi -q -d PERFORMANCE), then run the gate again.",
                        e.what(), kThrottledRetries + 1));
    }
  }
}

}  // namespace

namespace {
constexpr EnumName<Blame> kBlameNames[] = {
    {Blame::none, ""},
    {Blame::code, "code"},
    {Blame::environment, "environment"},
    {Blame::code_or_environment, "code or environment"},
};
}  // namespace

const char* to_string(Blame b) {
  return name_of(kBlameNames, b);
}

std::vector<store::GateRun> record(const Suite& suite, Measurer& m, store::Baselines& baselines,
                                   const Provenance& p) {
  const store::GateEnvironment env = m.environment();
  const std::string session = new_session_id();
  std::vector<store::GateRun> runs;
  std::vector<Runs> taken(suite.benchmarks.size());
  // Round robin over the suite: a slow drift (clocks, temperature) spreads over every benchmark
  // instead of landing on the last ones. Rounds go on for the benchmarks not yet settled.
  for (int r = 0; r < suite.rule.max_baseline_runs; ++r) {
    bool any = false;
    for (std::size_t i = 0; i < suite.benchmarks.size(); ++i) {
      if (baseline_settled(taken[i], suite.rule)) continue;
      const auto& b = suite.benchmarks[i];
      RunSamples one = run_once(m, b);
      taken[i].push_back(one.samples_ns);
      runs.push_back(make_run(suite, b, session, static_cast<std::size_t>(r), env, p, m.config(b),
                              std::move(one), "baseline"));
      any = true;
    }
    if (!any) break;
  }
  baselines.put_runs(runs);
  return runs;
}

std::vector<std::string> explain_commands(const SuiteBenchmark& b, const std::string& base_commit,
                                          const std::string& code_commit) {
  std::string inner, kernel;
  if (b.is_program()) {
    for (const auto& w : b.command) inner += (inner.empty() ? "" : " ") + shell_word(w);
  } else {
    try {
      kernel = tune::ProblemSpec::load(b.spec).kernel.kernel_name;
    } catch (const Error&) {
      kernel = b.name;  // the spec is unreadable here; the command still shows its shape
    }
    inner = "ktune bench " + shell_word(b.spec.string());
    if (b.cached_winner)
      inner += " --config <the cached winner>";
    else if (!b.config.empty())
      inner += " --config " + shell_word(b.config);
    if (b.mode != bench::TimingMode::cold)
      inner += std::string(" --mode ") + bench::to_string(b.mode);
  }
  const std::string cmd = "ktune profile --metrics roofline" +
                          (kernel.empty() ? std::string() : " --kernel " + shell_word(kernel)) +
                          " -- " + inner;
  return {
      fmt::format("baseline ({}): {}", base_commit.empty() ? "its checkout" : base_commit, cmd),
      fmt::format("candidate ({}): {}", code_commit.empty() ? "this checkout" : code_commit, cmd)};
}

CheckReport check(const Suite& suite, Measurer& m, store::Baselines& baselines, const Provenance& p,
                  const CheckOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  CheckReport report;
  report.suite = suite.file.string();
  report.env = m.environment();
  report.code_commit = p.code_commit;
  report.against = options.against;
  report.rule = suite.rule;
  const std::string session = new_session_id();

  const std::size_t n = suite.benchmarks.size();
  std::vector<std::vector<store::GateRun>> base(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& b = suite.benchmarks[i];
    store::GateRunFilter f{.benchmark = b.name,
                           .shape = b.shape_key(),
                           .device_name = report.env.device_name,
                           .arch = report.env.arch,
                           .kind = "baseline",
                           .ref = options.against};
    base[i] = baselines.latest_session(f);
    if (base[i].empty()) {  // another GPU's baseline still says what changed
      f.device_name.clear();
      f.arch.clear();
      base[i] = baselines.latest_session(f);
    }
  }
  std::vector<Runs> cand(n);
  std::vector<std::vector<int>> clocks(n);  // of each candidate run, in cand's order
  std::vector<nlohmann::json> configs(n);
  // Wall time per benchmark, preparation (build, load) and every run, re-measurements included.
  std::vector<double> spent_s(n, 0.0);
  const auto timed = [&](std::size_t i, auto&& step) {
    const auto t0 = std::chrono::steady_clock::now();
    auto out = step(suite.benchmarks[i]);
    spent_s[i] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
  };
  const auto run = [&](std::size_t i) {
    RunSamples one = timed(i, [&](const SuiteBenchmark& b) { return run_once(m, b); });
    clocks[i].push_back(one.sm_clock_mhz);
    return std::move(one.samples_ns);
  };
  for (std::size_t i = 0; i < n; ++i)
    configs[i] = timed(i, [&](const SuiteBenchmark& b) { return m.config(b); });
  for (int r = 0; r < suite.rule.candidate_runs; ++r)
    for (std::size_t i = 0; i < n; ++i) cand[i].push_back(run(i));

  // The statistics over the benchmarks that have a baseline; Holm counts only those.
  std::vector<std::size_t> compared;
  std::vector<Runs> base_runs, cand_runs;
  for (std::size_t i = 0; i < n; ++i)
    if (!base[i].empty()) {
      compared.push_back(i);
      base_runs.push_back(runs_of(base[i]));
      cand_runs.push_back(cand[i]);
    }
  const auto comparisons = compare_suite(base_runs, cand_runs, suite.rule,
                                         [&](std::size_t k) { return run(compared[k]); });
  for (std::size_t k = 0; k < compared.size(); ++k) cand[compared[k]] = cand_runs[k];

  report.results.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto& res = report.results[i];
    res.name = suite.benchmarks[i].name;
    res.shape = suite.benchmarks[i].shape_key();
    res.measure_s = spent_s[i];
  }
  for (std::size_t k = 0; k < compared.size(); ++k) {
    const std::size_t i = compared[k];
    auto& res = report.results[i];
    const auto& b0 = base[i].front();
    res.has_baseline = true;
    res.comparison = comparisons[k];
    res.baseline_env = b0.env;
    res.baseline_commit = b0.code_commit;
    res.baseline_session = b0.session_id;
    res.baseline_recorded_at = b0.recorded_at;
    res.environment_changes = environment_changes(b0.env, report.env);
    const Verdict v = res.comparison.verdict;
    if (v == Verdict::slower || v == Verdict::faster) {
      const bool code_changed =
          !b0.code_commit.empty() && !p.code_commit.empty() && b0.code_commit != p.code_commit;
      if (res.environment_changes.empty()) {
        res.blame = Blame::code;
      } else if (!code_changed) {
        res.blame = Blame::environment;
      } else {
        // Both changed: a baseline of older code under this very environment separates them.
        // Unchanged against it means the code did not move; the environment did.
        res.blame = Blame::code_or_environment;
        const auto& b = suite.benchmarks[i];
        auto same_env = baselines.runs({.benchmark = b.name,
                                        .shape = b.shape_key(),
                                        .device_name = report.env.device_name,
                                        .arch = report.env.arch,
                                        .kind = "baseline"});
        std::erase_if(same_env, [&](const store::GateRun& g) { return !(g.env == report.env); });
        if (!same_env.empty()) {
          const std::string s = same_env.back().session_id;
          std::erase_if(same_env, [&](const store::GateRun& g) { return g.session_id != s; });
          Rng rng(suite.rule.seed);
          const Shift shift = estimate_shift(runs_of(same_env), cand[i], suite.rule, rng);
          res.blame =
              decide(shift, shift.p_value, suite.rule) == v ? Blame::code : Blame::environment;
        }
      }
    }
    if (v == Verdict::slower)
      res.explain = explain_commands(suite.benchmarks[i], b0.code_commit, p.code_commit);
  }

  if (options.store_candidate) {
    std::vector<store::GateRun> runs;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t r = 0; r < cand[i].size(); ++r)
        runs.push_back(make_run(suite, suite.benchmarks[i], session, r, report.env, p, configs[i],
                                {cand[i][r], clocks[i][r]}, "candidate"));
    baselines.put_runs(runs);
  }
  report.duration_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

bool CheckReport::regressed() const {
  for (const auto& r : results)
    if (r.has_baseline && r.comparison.verdict == Verdict::slower) return true;
  return false;
}

}  // namespace ktune::gate

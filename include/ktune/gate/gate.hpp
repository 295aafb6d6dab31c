#pragma once
// `ktune gate record` and `ktune gate check` as library calls: measure a suite through a
// Measurer, store runs as baselines, compare with the stored distributions, attribute each change
// to the code or to the environment, and render the verdicts (terminal, markdown, JUnit, JSON).
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"
#include "ktune/gate/statistics.hpp"
#include "ktune/gate/suite.hpp"
#include "ktune/store/baselines.hpp"

namespace ktune::gate {

// 2: "measure_s" per benchmark.
inline constexpr int kCheckSchemaVersion = 2;

// A run that kept no sample: the GPU slowed down (thermal, power) through all of it. The gate
// runs it again, a bounded number of times, before giving up.
class ThrottledRun : public Error {
 public:
  using Error::Error;
};

// One run of a benchmark: every counted sample, ns per launch, and the median SM clock while they
// were taken (0 where unknown: a program that does not print it).
struct RunSamples {
  std::vector<double> samples_ns;
  int sm_clock_mhz = 0;
};

// Measures one run of a benchmark. The GPU implementation (gpu_measurer.hpp) uses bench's one
// candidate pipeline and runs programs; tests hand in synthetic runs.
class Measurer {
 public:
  virtual ~Measurer() = default;
  // ktune::Error when the benchmark cannot run; ThrottledRun when it ran but every sample was
  // taken under a slowdown.
  virtual RunSamples run(const SuiteBenchmark& b) = 0;
  // The configuration measured (parameter -> value); null for a program.
  virtual nlohmann::json config(const SuiteBenchmark& b) = 0;
  virtual store::GateEnvironment environment() = 0;
};

struct Provenance {
  std::string code_commit;  // of the measured code; "" when unknown
  std::string label;        // record only: a name for the baseline ("main")
};

// Measures every benchmark until its baseline is settled (rule.baseline_runs to
// rule.max_baseline_runs runs, baseline_settled) and stores the runs as one session.
// Returns the runs stored.
std::vector<store::GateRun> record(const Suite& suite, Measurer& m, store::Baselines& baselines,
                                   const Provenance& p);

// What a slower or faster verdict is attributed to: the code alone changed, the environment alone
// did, or both did and no baseline of the old code in the new environment tells them apart.
enum class Blame { none, code, environment, code_or_environment };
const char* to_string(Blame b);  // "", "code", "environment", "code or environment"

struct BenchmarkResult {
  std::string name, shape;
  bool has_baseline = false;  // false: nothing stored to compare with (verdict "new")
  Comparison comparison;
  store::GateEnvironment baseline_env;
  std::string baseline_commit, baseline_session, baseline_recorded_at;
  // Environment fields that differ from the baseline's: "GPU", "arch", "driver", "toolkit",
  // "ktune build", each with "old -> new".
  std::vector<std::string> environment_changes;
  // For a slower or faster verdict, what moved the time; none for the other verdicts.
  Blame blame = Blame::none;
  std::vector<std::string> explain;  // ktune profile commands that would explain a regression
  double measure_s = 0;              // wall time this check spent on it: preparation and every run
};

struct CheckReport {
  std::string suite;
  store::GateEnvironment env;
  std::string code_commit, against;
  Rule rule;
  std::vector<BenchmarkResult> results;
  double duration_s = 0;
  bool regressed() const;  // any benchmark slower
};

struct CheckOptions {
  std::string against;          // label or commit prefix of the baseline; "": the newest
  bool store_candidate = true;  // keep the check's runs (kind "candidate") for history
};

CheckReport check(const Suite& suite, Measurer& m, store::Baselines& baselines, const Provenance& p,
                  const CheckOptions& options);

// The two `ktune profile --metrics roofline` commands (baseline, candidate) for a benchmark.
std::vector<std::string> explain_commands(const SuiteBenchmark& b, const std::string& base_commit,
                                          const std::string& code_commit);

std::string render_table(const CheckReport& r);
std::string render_markdown(const CheckReport& r);
std::string render_junit(const CheckReport& r);
void to_json(nlohmann::json& j, const CheckReport& r);

}  // namespace ktune::gate

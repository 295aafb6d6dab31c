#pragma once
// A gate suite: the benchmarks a check measures, read from a TOML file. A benchmark is a ktune
// spec at a shape with a pinned configuration (or the cache's winner), or an external program
// whose JSON output ktune reads (`ktune bench --json`, Google Benchmark, nvbench).
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ktune/bench/measurement.hpp"
#include "ktune/gate/statistics.hpp"

namespace ktune::gate {

inline constexpr int kSuiteSchemaVersion = 1;

enum class ProgramFormat { ktune, gbench, nvbench };

// A benchmark program's run that does not end within this is stopped with an error naming it
// (suite key timeout_s), so a program that hangs cannot hold `ktune gate record` and its CI job
// until the job's own timeout.
inline constexpr double kProgramTimeoutS = 600;

struct SuiteBenchmark {
  std::string name;  // unique in the suite; the key of its baselines
  // A spec benchmark (spec not empty):
  std::filesystem::path spec;  // absolute, resolved against the suite file's folder
  std::string config;          // "NAME=VALUE,..."; empty: the spec's defaults
  bool cached_winner = false;  // config = "cached": the store's winner for this GPU and shape
  std::map<std::string, std::int64_t> shape;  // shape variables; empty: the spec's own
  bench::TimingMode mode = bench::TimingMode::cold;
  // An external program (command not empty): run once per run, its stdout parsed.
  std::vector<std::string> command;
  ProgramFormat format = ProgramFormat::ktune;
  std::string select;  // gbench/nvbench: the benchmark's name in the output; empty: the first
  double timeout_s = kProgramTimeoutS;  // a run that takes longer is stopped and is an error

  bool is_program() const { return !command.empty(); }
  // The shape as stored with baselines ("k=4096,n=7168"; "" for the spec's own).
  std::string shape_key() const;
};

struct Suite {
  std::filesystem::path file;
  Rule rule;                               // threshold, alpha, runs ... overridden by [gate]
  std::string stop;                        // stop-rule overrides for spec benchmarks
  std::vector<std::string> nvrtc_options;  // added to every spec's options; part of the toolkit
  std::vector<SuiteBenchmark> benchmarks;
};

// Parses a suite; ktune::Error with one sentence naming the file, the key and the fix.
Suite load_suite(const std::filesystem::path& file);
Suite parse_suite(const std::string& text, const std::filesystem::path& file);

// Samples (ns per iteration) from one run's output of an external program. ktune::Error naming
// `where` when the output is not of the format, holds no such benchmark, or a time that is not
// positive.
std::vector<double> program_samples(const nlohmann::json& output, ProgramFormat format,
                                    const std::string& select, const std::string& where);
// The run's median SM clock from `ktune bench --json` output (sm_clock_mhz.median); 0 for the
// other formats and for an output without a numeric one (never an error: the clock is extra).
int program_clock_mhz(const nlohmann::json& output, ProgramFormat format);

}  // namespace ktune::gate

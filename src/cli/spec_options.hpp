#pragma once
// What `ktune bench`, `ktune tune` and `ktune queue` share about a spec on the command line: the
// --grid choice, loading the spec with its notes (an ignored Default, which grid is used) shown
// first, and --shape.
#include <cstdint>
#include <map>
#include <string>

#include <CLI/CLI.hpp>

#include "ktune/bench/stop_rule.hpp"
#include "ktune/spec/spec.hpp"

namespace ktune::cli {

// --grid griddiv|global-size into `grid` (empty: the spec's own choice).
void add_grid_option(CLI::App& app, std::string& grid);

// Loads the spec, applies `grid`, and prints its notes and any GridDiv/GlobalSize disagreement to
// stderr, one sentence each. ktune::Error for a bad spec or an unknown --grid word.
tune::ProblemSpec load_spec(const std::string& path, const std::string& grid);

// --shape "n=4096,k=8192" -> {n: 4096, k: 8192}, the spec's shape variables to override (each at
// least `least`; a library GEMM's batch strides may be 0); ktune::Error (one sentence) for
// anything else, the old "4096x8192" form included.
std::map<std::string, std::int64_t> parse_shape_variables(const std::string& text,
                                                          std::int64_t least = 1);

// "defaults: 10 samples, 0.5 s GPU time, 0.5 % noise, 15 s timeout": the --stop help of bench and
// tune, read from the stop rule they use.
std::string stop_rule_defaults(const bench::StopSettings& s);

}  // namespace ktune::cli

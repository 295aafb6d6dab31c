#pragma once
// What `ktune bench` and `ktune tune` share about a spec on the command line: the --grid choice,
// and loading the spec with its notes (an ignored Default, which grid is used) shown first.
#include <string>

#include <CLI/CLI.hpp>

#include "ktune/tune/spec.hpp"

namespace ktune::cli {

// --grid griddiv|global-size into `grid` (empty: the spec's own choice).
void add_grid_option(CLI::App& app, std::string& grid);

// Loads the spec, applies `grid`, and prints its notes and any GridDiv/GlobalSize disagreement to
// stderr, one sentence each. ktune::Error for a bad spec or an unknown --grid word.
tune::ProblemSpec load_spec(const std::string& path, const std::string& grid);

}  // namespace ktune::cli

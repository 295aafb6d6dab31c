#include "spec_options.hpp"

#include <cstdio>

#include <fmt/format.h>

#include "ktune/core/assignments.hpp"
#include "ktune/core/error.hpp"
#include "ktune/tune/spec_problem.hpp"

namespace ktune::cli {

void add_grid_option(CLI::App& app, std::string& grid) {
  app.add_option("--grid", grid,
                 "Where the grid comes from when the spec gives both: griddiv (ProblemSize over "
                 "GridDivX/Y/Z, as Kernel Tuner does; the default) or global-size (GlobalSize)");
}

tune::ProblemSpec load_spec(const std::string& path, const std::string& grid) {
  tune::ProblemSpec spec = tune::ProblemSpec::load(path);
  if (!grid.empty()) {
    const auto source = tune::grid_source_from_string(grid);
    if (!source) throw Error(fmt::format("--grid {}: use griddiv or global-size.", grid));
    spec.kernel.grid_source = *source;
  }
  for (const auto& note : spec.notes) std::fprintf(stderr, "note: %s\n", note.c_str());
  if (grid.empty()) {
    try {
      const tune::MapScope constants = spec.constants();
      tune::MapScope config(&constants);
      for (const auto& [name, v] : tune::default_config(spec)) config.set(name, v);
      if (auto why = spec.grid_disagreement(config))
        std::fprintf(stderr, "note: %s\n", why->c_str());
    } catch (const Error&) {
      // The default configuration cannot be laid out; the run itself reports that properly.
    }
  }
  return spec;
}

std::map<std::string, std::int64_t> parse_shape_variables(const std::string& text) {
  std::map<std::string, std::int64_t> out;
  for (const NamedSize& s : parse_named_sizes(text, "--shape", "n=4096,k=8192"))
    out[s.name] = s.value;
  return out;
}

std::string stop_rule_defaults(const bench::StopSettings& s) {
  const std::string error = s.max_relative_error > 0 ? fmt::format(" (or the mean within {:g} %)",
                                                                   100 * s.max_relative_error)
                                                     : "";
  return fmt::format("defaults: {} samples, {:g} s GPU time, {:g} % noise{}, {:g} s timeout",
                     s.min_samples, s.min_gpu_time_s, 100 * s.max_relative_stddev, error,
                     s.timeout_s);
}

}  // namespace ktune::cli

#include "spec_options.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string_view>

#include <fmt/format.h>

#include "command.hpp"
#include "ktune/core/assignments.hpp"
#include "ktune/core/error.hpp"
#include "ktune/trace/ktrace.hpp"
#include "ktune/tune/spec_problem.hpp"

namespace ktune::cli {

void add_grid_option(CLI::App& app, std::string& grid) {
  app.add_option("--grid", grid,
                 "Where the grid comes from when the spec gives both: griddiv (ProblemSize over "
                 "GridDivX/Y/Z, as Kernel Tuner does; the default) or global-size (GlobalSize)")
      ->check(parsed_by([](const std::string& v) {
        if (!tune::grid_source_from_string(v))
          throw Error(fmt::format("'{}' is not a grid source; use griddiv or global-size", v));
      }));
}

namespace {

// A spec is JSON; an SQLite file given in its place (a .ktrace, a store) is named for what it is,
// by its content, instead of being parsed as JSON and reported as a syntax error.
void check_is_spec_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[16] = {};
  if (!in.read(head, sizeof head)) return;  // short or unreadable: the spec reader says why
  if (std::string_view(head, sizeof head) != std::string_view("SQLite format 3\0", 16)) return;
  bool trace = false;
  try {
    trace::read_ktrace_counts(path);
    trace = true;
  } catch (const Error&) {
  }
  if (trace)
    throw Error(fmt::format(
        "{} is a ktune trace (.ktrace), not a tuning spec; read it with ktune report {}, and "
        "give ktune tune a T1 JSON spec.",
        path, path));
  throw Error(fmt::format(
      "{} is an SQLite database (a ktune store?), not a tuning spec; give a T1 JSON spec, and "
      "name a store with --db.",
      path));
}

}  // namespace

tune::ProblemSpec load_spec(const std::string& path, const std::string& grid) {
  refuse_stdin(path, "a tuning spec (its kernel files are found beside it)");
  if (!std::filesystem::is_fifo(path) && std::filesystem::is_regular_file(path))
    check_is_spec_file(path);
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

std::map<std::string, std::int64_t> parse_shape_variables(const std::string& text,
                                                          std::int64_t least) {
  std::map<std::string, std::int64_t> out;
  try {
    for (const NamedSize& s : parse_named_sizes(text, "--shape", "n=4096,k=8192", least))
      out[s.name] = s.value;
  } catch (const Error& e) {
    throw UsageError(e.what());  // a value that cannot be read
  }
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

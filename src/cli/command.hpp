#pragma once
// The subcommand registry. Each cmd_<name>.cpp registers itself at static-init time, so adding a
// subcommand touches no shared file; main.cpp builds the CLI11 app from the registry.
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ktune/trace/options.hpp"

namespace ktune::cli {

// Options every subcommand sees; each also reads an environment variable (docs/configuration.md).
struct GlobalOptions {
  std::string db;  // --db / KTUNE_DB: store path or postgresql:// URL; empty = embedded default
  int device = 0;  // --device / KTUNE_DEVICE: CUDA device ordinal
  // --allow-path / KTUNE_ALLOW_PATH: folders beside a spec's own whose files a spec may name
  std::vector<std::string> allow_paths;
};

// Returns the process exit code. Throws ktune::Error for a user-facing failure.
using Runner = std::function<int()>;

struct CommandSpec {
  std::string name;
  std::string summary;
  int order;  // position in --help: the profile -> tune -> cache -> guard loop, tools after
  // Declares the subcommand's options on `app` and returns what runs it once they are parsed.
  std::function<Runner(CLI::App& app, const GlobalOptions& globals)> setup;
};

bool register_command(CommandSpec spec);
const std::vector<CommandSpec>& registered_commands();

// ktune profile's run: `cmd` with the tracer injected and `opts` handed over; prints the traces it
// left, files into each the ceilings of its GPUs (the calibration in store `db`, else the
// datasheet) and returns the command's exit code (cmd_profile.cpp). ktune bench --metrics uses it
// too. `on_traces`, when given, gets every trace once: each finished one (a closed capture window,
// a child process that exited) while the command runs, the rest when it has ended.
using TraceHandler = std::function<void(const std::vector<std::string>& traces)>;
int run_profile(trace::TracerOptions opts, const std::vector<std::string>& cmd,
                const std::string& db, const TraceHandler& on_traces = {});

// ktune ingest's options and run (cmd_ingest.cpp); ktune profile --ingest runs it on the traces
// its command left.
struct IngestOptions {
  std::vector<std::string> tags;
  unsigned jobs = 0;  // 0: one per CPU
  bool json = false;
};
void add_ingest_options(CLI::App& app, IngestOptions& o);  // --tag and --jobs
int run_ingest(const std::vector<std::string>& traces, const IngestOptions& o,
               const GlobalOptions& g);

}  // namespace ktune::cli

#pragma once
// The subcommand registry. Each cmd_<name>.cpp registers itself at static-init time, so adding a
// subcommand touches no shared file; main.cpp builds the CLI11 app from the registry.
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "ktune/core/error.hpp"
#include "ktune/core/text.hpp"
#include "ktune/trace/options.hpp"

namespace ktune::store {
class Store;
}

namespace ktune::cli {

// Options every subcommand sees; each also reads an environment variable (docs/configuration.md).
struct GlobalOptions {
  std::string db;  // --db / KTUNE_DB: store path or postgresql:// URL; empty = embedded default
  int device = 0;  // --device / KTUNE_DEVICE: CUDA device ordinal
  // --allow-path / KTUNE_ALLOW_PATH: folders beside a spec's own whose files a spec may name
  std::vector<std::string> allow_paths;
};

// Exit codes every command keeps (docs/configuration.md, "Command-line conventions"): 0 ok, 1 the
// thing failed, 2 usage (a bad flag, a bad value, a missing argument); a command documents any
// other code it uses in its --help (cache get: 3 on a miss; tune: 130 when interrupted).
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

// Text output that quotes names from traces and stores (kernels, ops, devices, workers, errors):
// printed as fmt::print would, its control characters escaped (terminal_safe), so a hostile name
// cannot rewrite the user's terminal.
template <typename... Args>
void print_text(fmt::format_string<Args...> format, Args&&... args) {
  std::fputs(terminal_safe(fmt::format(format, std::forward<Args>(args)...), /*keep_newlines=*/true)
                 .c_str(),
             stdout);
}

// A command line that cannot be run as written: main prints it and exits kExitUsage.
class UsageError : public Error {
 public:
  using Error::Error;
};

// Returns the process exit code. Throws ktune::Error for a user-facing failure (exit 1), UsageError
// for a command line that cannot be run (exit 2).
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

// --- The conventions every command follows (docs/configuration.md) ---

// A flag's value checked by the parser that reads it (one list of names: the parser's), so a bad
// value is a usage error at parse time: `check` throws ktune::Error naming the choices.
CLI::Validator parsed_by(std::function<void(const std::string&)> check);

// -o,--output FILE: where a command writes what it makes; "-" is stdout.
CLI::Option* add_output_option(CLI::App& app, std::string& output, const std::string& what);
bool is_stdout(const std::string& output);
// "-" names stdin only where a command reads a JSON document (cache put, cache import); a trace,
// spec, suite or recorded space is read by its path: a UsageError naming `what` otherwise.
void refuse_stdin(const std::string& path, const std::string& what);
// Writes `text` to `output` (stdout for "" or "-"), a file atomically.
void emit(const std::string& text, const std::string& output);

// A flag kept under an old spelling: hidden from --help, and a warning names the new one.
void add_deprecated_alias(CLI::App& app, const std::string& old_name, const std::string& new_name,
                          std::string& target);
void add_deprecated_flag_alias(CLI::App& app, const std::string& old_name,
                               const std::string& new_name, bool& target);

// --format with a `--json` flag that means `--format json`.
void add_json_flag_for_format(CLI::App& app, std::string& format, const std::string& help);

// The store for a listing command: null when it does not exist yet (an empty listing, not an
// error, and no file is created by looking).
std::unique_ptr<store::Store> open_for_listing(const std::string& db);
// What a listing names as its store when there is none yet: the path or URL --db gives.
std::string store_location(const std::string& db);

// The closest of `candidates` to `word` by edit distance, when it is close enough to be a typo.
std::optional<std::string> closest_match(const std::string& word,
                                         const std::vector<std::string>& candidates);

// ktune profile's run: `cmd` with the tracer injected and `opts` handed over; prints the traces it
// left, files into each the ceilings of its GPUs (the calibration in store `db`, else the
// datasheet) and returns the command's exit code (cmd_profile.cpp). ktune bench --metrics uses it
// too. `on_traces`, when given, gets every trace once: each finished one (a closed capture window,
// a child process that exited) while the command runs, the rest when it has ended.
using TraceHandler = std::function<void(const std::vector<std::string>& traces)>;
int run_profile(trace::TracerOptions opts, const std::vector<std::string>& cmd,
                const std::string& db, const TraceHandler& on_traces = {});

// A library ktune loads into a program: the variable `env` names it, else it is beside the binary
// (build tree) or in ../lib (install); ktune::Error naming where it looked (cmd_profile.cpp).
std::filesystem::path locate_library(const char* file, const char* env);
// libktune_tracer.so (KTUNE_TRACER) and the GEMM router libktune_route.so (KTUNE_ROUTER).
inline std::filesystem::path locate_tracer() {
  return locate_library("libktune_tracer.so", "KTUNE_TRACER");
}
inline std::filesystem::path locate_router() {
  return locate_library("libktune_route.so", "KTUNE_ROUTER");
}
// LD_PRELOAD with `library` first and the program's own after it.
std::string preload_with(const std::filesystem::path& library);
// The executable CMD names, as execvp would find it; ktune::Error with one sentence when there is
// none. And the exit code a shell reports for a wait() status.
void check_command(const std::string& cmd);
int exit_code_of(int status);

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

// ktune profile [options] -- CMD ARGS...: runs CMD with libktune_tracer.so injected through
// CUDA_INJECTION64_PATH, forwards SIGINT/SIGTERM to it, and lists the trace(s) it left: OUT.ktrace
// for CMD itself and OUT.<pid>.ktrace for each child process that used CUDA (with periodic
// windows, one per window: OUT.wK.ktrace, OUT.<pid>.wK.ktrace). With --ingest it then pushes them
// to the store as ktune ingest does. With --gemm-shapes the tracer records each process's
// cuBLASLt GEMM calls in its own trace. Exits with CMD's code.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "command.hpp"
#include "inductor_scan.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/subprocess.hpp"
#include "ktune/report/ceilings.hpp"
#include "ktune/trace/ktrace.hpp"
#include "ktune/trace/options.hpp"
#include "ktune/trace/watch.hpp"

namespace ktune::cli {
namespace {

namespace fs = std::filesystem;

volatile sig_atomic_t g_child = 0;

// How often a profile run with --ingest looks for traces the tracer has finished.
constexpr double kWatchEvery_s = 1.0;

// Ctrl-C in a terminal already reaches the child (same process group); forward only signals sent
// to ktune alone (kill, a job scheduler), so the child never sees one twice.
void forward(int sig, siginfo_t* info, void*) {
  if (g_child > 0 && info && info->si_code != SI_KERNEL) ::kill(g_child, sig);
}

fs::path self_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : exe.parent_path();
}

// The folder holding ktune's sitecustomize.py for --ops: beside the binary in a build tree, under
// share/ktune in an installed one.
fs::path locate_torch_ops_hook() {
  const fs::path dir = self_dir();
  for (const fs::path& p : {dir / "torch_ops", dir / "../share/ktune/torch_ops"})
    if (fs::is_regular_file(p / "sitecustomize.py")) return fs::canonical(p);
  throw Error(
      fmt::format("--ops needs ktune's torch_ops/sitecustomize.py, which is not beside the ktune "
                  "binary ({}) nor in ../share/ktune; reinstall ktune, or profile without --ops.",
                  dir.string()));
}

}  // namespace

std::filesystem::path locate_library(const char* file, const char* env_name) {
  if (const char* env = std::getenv(env_name); env && *env) {
    std::error_code ec;
    if (!fs::is_regular_file(env, ec))
      throw Error(
          fmt::format("{}={} is not a file; point it at {} or unset it.", env_name, env, file));
    return fs::absolute(env);
  }
  const fs::path dir = self_dir();
  for (const fs::path& p : {dir / file, dir / "../lib" / file})
    if (fs::is_regular_file(p)) return fs::canonical(p);
  throw Error(
      fmt::format("{} was not found next to the ktune binary ({}); build ktune again or "
                  "set {} to its path.",
                  file, dir.string(), env_name));
}

std::string preload_with(const fs::path& library) {
  const char* old = std::getenv("LD_PRELOAD");
  return old && *old ? library.string() + ":" + old : library.string();
}

// The executable CMD names, as execvp would find it; one sentence when there is none.
void check_command(const std::string& cmd) {
  auto runnable = [](const fs::path& p) {
    // access() alone says yes to root for any file; the mode bits say whether it is a program.
    std::error_code ec;
    const auto perms = fs::status(p, ec).permissions();
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0 &&
           (perms & (fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec)) !=
               fs::perms::none;
  };
  if (cmd.find('/') != std::string::npos) {
    std::error_code ec;
    if (!fs::exists(cmd, ec))
      throw Error(fmt::format("command '{}' does not exist; check the path after '--'.", cmd));
    if (!runnable(cmd))
      throw Error(
          fmt::format("command '{}' is not an executable file; check the path after "
                      "'--' or chmod +x it.",
                      cmd));
    return;
  }
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/bin:/bin";
  while (true) {
    const auto colon = dirs.find(':');
    const std::string dir(dirs.substr(0, colon));
    if (runnable(fs::path(dir.empty() ? "." : dir) / cmd)) return;
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  throw Error(
      fmt::format("command '{}' was not found on PATH; check its spelling or give its "
                  "full path after '--'.",
                  cmd));
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

namespace {

// Flags come from the one settings table (trace::tracer_settings()): flag, variable, help and
// default are written there once.
std::string help_of(const trace::TracerSetting& s) {
  std::string help = s.help;
  if (!help.empty()) help[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(help[0])));
  if (*s.fallback) help += fmt::format(" (default {})", s.fallback);
  return help;
}

// The settings of type "duration" take "60s", "100ms" or bare seconds, from the flag or the
// variable alike; the tracer reads them back with the same parser.
const CLI::Validator kDuration(
    [](std::string& value) {
      const auto seconds = trace::parse_duration_s(value);
      if (!seconds)
        return fmt::format("'{}' is not a duration; write e.g. 60s, 2s or 100ms", value);
      value = fmt::format("{}", *seconds);
      return std::string();
    },
    "DURATION");

template <class T>
CLI::Option* setting_option(CLI::App& app, const char* name, T& value) {
  const trace::TracerSetting& s = trace::tracer_setting(name);
  CLI::Option* o = app.add_option(s.flag, value, help_of(s))->envname(s.env);
  if (std::string_view(s.type) == "duration") o->transform(kDuration);
  return o;
}

CLI::Option* setting_flag(CLI::App& app, const char* name, bool& value) {
  const trace::TracerSetting& s = trace::tracer_setting(name);
  return app.add_flag(s.flag, value, help_of(s))->envname(s.env);
}

}  // namespace

namespace {
// Files into a finished trace the ceilings it was profiled under, so its roofline reads the same on
// every machine; returns their source ("" when none). A store that cannot be read costs the trace
// its ceilings, not the run.
std::string file_ceilings(const fs::path& path, const std::string& db) {
  try {
    const auto ceilings = report::resolve_ceilings(trace::read_ktrace_counts(path).metadata, db);
    trace::write_ktrace_ceilings(path, ceilings);
    return ceilings.empty() ? std::string() : ceilings.front().source;
  } catch (const Error& e) {
    std::fprintf(stderr, "ktune: trace %s has no ceilings: %s\n", path.c_str(), e.what());
    return {};
  }
}
}  // namespace

int run_profile(trace::TracerOptions opts, const std::vector<std::string>& cmd,
                const std::string& db, const TraceHandler& on_traces) {
  if (cmd.empty())
    throw UsageError(
        "no command to profile; put it after '--', e.g. ktune profile -- python3 train.py.");
  // Settings that cannot work together, from flags or variables alike: a usage error.
  try {
    trace::check_range(opts.window.range);
    trace::check_schedule(opts.window);
    trace::check_counter_options(opts);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  if (opts.torch_ops && opts.kernels_only)
    throw UsageError(
        "--ops needs NVTX records, which --kernels-only leaves out; drop one of the two.");
  check_command(cmd[0]);
  const fs::path tracer = locate_tracer();
  // --gemm-shapes: the router sees every GEMM call with its descriptor (a table-less router routes
  // nothing; it only reports calls to the tracer).
  const fs::path router = opts.gemm_shapes ? locate_router() : fs::path();
  const fs::path ops_hook = opts.torch_ops ? locate_torch_ops_hook() : fs::path();
  if (const char* other = std::getenv("CUDA_INJECTION64_PATH"); other && *other)
    std::fprintf(stderr,
                 "ktune: CUDA_INJECTION64_PATH was set to %s (another tool?); ktune's tracer "
                 "replaces it for this run.\n",
                 other);
  opts.output = fs::absolute(opts.output);
  std::error_code ec;
  if (!opts.output.parent_path().empty()) fs::create_directories(opts.output.parent_path(), ec);
  const auto since = fs::file_time_type::clock::now() - std::chrono::seconds(1);

  // The program shares ktune's process group (a terminal's Ctrl-C reaches both) and outlives a
  // killed ktune, as it would run without it; its environment names its own pid.
  subprocess::Spawn spawn;
  spawn.own_group = false;
  spawn.die_with_ktune = false;
  // torch.compile's kernels: Inductor's cache beside the trace, scanned after the program.
  const bool python = is_python_command(cmd);
  if (python) spawn.env = inductor_profile_env(opts.output);
  spawn.prepare = [&opts, &tracer, &router, &ops_hook] {
    opts.root_pid = ::getpid();  // exec keeps the pid: this process writes OUT.ktrace
    for (const auto& [name, value] : trace::options_to_env(opts))
      ::setenv(name.c_str(), value.c_str(), 1);
    ::setenv("CUDA_INJECTION64_PATH", tracer.c_str(), 1);
    if (!router.empty()) {
      ::setenv("LD_PRELOAD", preload_with(router).c_str(), 1);
      ::unsetenv("KTUNE_ROUTE_TABLE");
    }
    if (!ops_hook.empty()) {
      // First on the path, so Python imports ktune's sitecustomize, which runs the user's own.
      const char* old = std::getenv("PYTHONPATH");
      const std::string path = old && *old ? ops_hook.string() + ":" + old : ops_hook.string();
      ::setenv("PYTHONPATH", path.c_str(), 1);
    }
  };
  subprocess::Child child;
  try {
    child = subprocess::Child::exec(cmd, spawn);
  } catch (const subprocess::StartError& e) {
    throw Error(fmt::format("cannot run '{}': {}; check the command after '--'.", cmd[0],
                            std::strerror(e.error)));
  }
  g_child = child.pid();
  struct sigaction sa {
  }, old_int{}, old_term{};
  sa.sa_sigaction = forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &old_int);
  ::sigaction(SIGTERM, &sa, &old_term);

  int status = 0;
  // Traces the tracer has finished go to `on_traces` while the command still runs.
  trace::TraceWatch watch(opts.output, since, kWatchEvery_s);
  // Each trace gets its ceilings once: when handed over mid-run, else after the command.
  std::map<fs::path, std::string> ceilings_of;
  const auto filed = [&](const fs::path& p) -> const std::string& {
    auto it = ceilings_of.find(p);
    if (it == ceilings_of.end()) it = ceilings_of.emplace(p, file_ceilings(p, db)).first;
    return it->second;
  };
  const auto started = std::chrono::steady_clock::now();
  const auto hand_over = [&](const std::vector<fs::path>& paths) {
    if (!on_traces || paths.empty()) return;
    std::vector<std::string> names;
    for (const fs::path& p : paths) {
      filed(p);  // before the handler reads it (ingest)
      names.push_back(p.string());
    }
    on_traces(names);
  };
  if (!on_traces) {
    status = child.wait();
  } else {
    while (!child.poll()) {
      const std::chrono::duration<double> now = std::chrono::steady_clock::now() - started;
      hand_over(watch.closed(now.count()));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    status = *child.poll();
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  g_child = 0;

  const int code = exit_code_of(status);
  if (python)
    if (const std::string scan = scan_inductor_cache(opts.output); !scan.empty())
      std::fprintf(stderr,
                   "ktune: torch.compile's Triton kernels listed in %s (ktune report reads it)\n",
                   scan.c_str());
  const auto traces = trace::traces_written(opts.output, since);
  if (traces.empty()) {
    std::fprintf(stderr, "ktune: no trace written: '%s' made no CUDA calls%s (exit code %d).\n",
                 cmd[0].c_str(), opts.window.sample_one_in > 1 ? " or was not sampled" : "", code);
    return code;
  }
  for (const auto& p : traces) {
    try {
      const trace::TraceCounts c = trace::read_ktrace_counts(p);
      std::fprintf(
          stderr,
          "ktune: trace %s (pid %lld): %llu kernels, %llu memcpy, %llu memset, %llu API "
          "calls, %llu counter values, %llu dropped%s\n",
          p.c_str(), static_cast<long long>(c.metadata.pid),
          static_cast<unsigned long long>(c.kernels), static_cast<unsigned long long>(c.memcpys),
          static_cast<unsigned long long>(c.memsets), static_cast<unsigned long long>(c.api_calls),
          static_cast<unsigned long long>(c.counters),
          static_cast<unsigned long long>(c.metadata.dropped_records),
          c.metadata.complete ? "" : " (cut short: holds what was recorded)");
      if (const std::string& source = filed(p); !source.empty())
        std::fprintf(stderr, "ktune: roofline ceilings filed into the trace: %s\n", source.c_str());
    } catch (const Error& e) {
      std::fprintf(stderr, "ktune: trace %s is unreadable: %s\n", p.c_str(), e.what());
    }
  }
  hand_over(watch.rest());
  return code;
}

namespace {

const bool registered = register_command(
    {"profile", "Run a CUDA program under the injected tracer and write a .ktrace", 20,
     [](CLI::App& app, const GlobalOptions& globals) -> Runner {
       auto opts = std::make_shared<trace::TracerOptions>();
       auto cmd = std::make_shared<std::vector<std::string>>();
       auto kernels_only = std::make_shared<bool>(false);
       auto full = std::make_shared<bool>(false);
       auto output = std::make_shared<std::string>("ktune.ktrace");
       auto& w = opts->window;
       auto& c = opts->counters;
       setting_option(app, "output", *output);
       auto* lightest =
           app.add_flag("--kernels-only", *kernels_only, "Record kernels only (the lightest mode)");
       app.add_flag("--full", *full,
                    "Record every kind the tracer knows: default mode, plus GPU memsets, "
                    "synchronization and overhead records, queued/submitted times")
           ->excludes(lightest);
       setting_option(app, "delay", w.delay_s)->check(CLI::NonNegativeNumber);
       setting_option(app, "duration", w.duration_s)->check(CLI::NonNegativeNumber);
       setting_option(app, "period", w.period_s)->check(CLI::NonNegativeNumber);
       setting_option(app, "window", w.window_s)->check(CLI::NonNegativeNumber);
       setting_option(app, "range", w.range);
       setting_option(app, "sample", w.sample_one_in)->check(CLI::PositiveNumber);
       setting_option(app, "job-id", w.job_id);
       setting_option(app, "max-records", w.max_records);
       setting_option(app, "flush-ms", opts->flush_period_ms)->check(CLI::Range(10u, 3600000u));
       setting_option(app, "buffer-mb", opts->buffer_mib)->check(CLI::Range(1u, 1024u));
       // Record kinds whose cost per launch is measured in docs/tracing.md.
       setting_option(app, "driver-api", opts->driver_api);
       // Costly and opt-in on its own: --full does not turn it on (docs/profiling.md).
       setting_flag(app, "gemm-shapes", opts->gemm_shapes);
       setting_flag(app, "ops", opts->torch_ops);
       // The opt-in kinds, which --full turns on unless one was given (flag or variable).
       const std::vector<std::pair<CLI::Option*, bool*>> opt_in = {
           {setting_flag(app, "memsets", opts->memset_records), &opts->memset_records},
           {setting_flag(app, "sync-records", opts->sync_records), &opts->sync_records},
           {setting_flag(app, "latency", opts->latency_timestamps), &opts->latency_timestamps},
           {setting_flag(app, "overhead", opts->overhead_records), &opts->overhead_records}};
       // The counter tier (docs/profiling.md).
       setting_option(app, "metrics", opts->metrics);
       setting_option(app, "kernel", c.kernel_regex);
       setting_option(app, "launch-skip", c.launch_skip);
       setting_option(app, "launch-count", c.launch_count);
       setting_option(app, "launch-shapes", c.launch_shapes)->check(CLI::PositiveNumber);
       setting_option(app, "every", c.every)->check(CLI::PositiveNumber);
       setting_option(app, "max-kernels", c.max_kernels);
       setting_option(app, "time-box", c.time_box_s)->check(CLI::NonNegativeNumber);
       // Finished traces go to the store (--db) as `ktune ingest` pushes them.
       auto ingest = std::make_shared<bool>(false);
       auto ingest_opts = std::make_shared<IngestOptions>();
       app.add_flag("--ingest", *ingest,
                    "Push each trace's per-kernel aggregates to the store (--db) as ktune ingest "
                    "does, as soon as the tracer has finished it: with --period, window by "
                    "window while the command runs");
       add_ingest_options(app, *ingest_opts);
       app.add_option("command", *cmd, "The command to run, after '--'")->expected(-1);
       return [opts, cmd, kernels_only, full, output, opt_in, ingest, ingest_opts, &globals] {
         if (const char* env = std::getenv("KTUNE_TRACE_MODE"); env && *env) {
           trace::TraceMode mode;
           try {
             mode = trace::parse_trace_mode(env);
           } catch (const Error& e) {
             throw UsageError(e.what());  // a bad value, as a flag's would be
           }
           if (!*kernels_only && !*full) {
             *kernels_only = mode == trace::TraceMode::kernels;
             *full = mode == trace::TraceMode::full;
           }
         }
         opts->kernels_only = *kernels_only;
         if (*full)
           for (const auto& [option, on] : opt_in)
             if (option->count() == 0) *on = true;
         opts->output = *output;
         if (opts->window.job_id.empty())
           if (const char* s = std::getenv("SLURM_JOB_ID"); s && *s) opts->window.job_id = s;
         if (!*ingest) return run_profile(*opts, *cmd, globals.db);
         // Each trace is ingested as soon as it is finished: with --period, window by window
         // while the command runs. The command's exit code stands; a failed ingest makes a clean
         // exit a failure.
         bool failed = false;
         const int code =
             run_profile(*opts, *cmd, globals.db, [&](const std::vector<std::string>& traces) {
               try {
                 run_ingest(traces, *ingest_opts, globals);
               } catch (const Error& e) {
                 std::fprintf(stderr, "ktune: the traces were not ingested: %s\n", e.what());
                 failed = true;
               }
             });
         if (failed && code == 0) return 1;
         return code;
       };
     }});

}  // namespace
}  // namespace ktune::cli

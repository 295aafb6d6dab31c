#include "ktune/trace/options.hpp"

#include <unistd.h>

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "ktune/core/enum_names.hpp"
#include "ktune/core/error.hpp"
#include "ktune/trace/metrics.hpp"
#include "launch_selector.hpp"

namespace ktune::trace {
namespace {

// clang-format off
const std::vector<TracerSetting> kSettings = {
    {"output", "-o,--output", "KTUNE_TRACE_OUTPUT", "path", "ktune.ktrace", "trace of the root process; every other traced process writes OUT.<pid>.ktrace"},
    {"mode", "", "KTUNE_TRACE_MODE", "mode", "default", "'default' (kernels, copies, launch/copy/memset/sync API calls, NVTX), 'kernels' (--kernels-only) or 'full' (--full: default and every opt-in record kind below)"},
    {"delay", "--delay", "KTUNE_TRACE_DELAY_S", "duration", "0", "time after start-up before capture begins"},
    {"duration", "--duration", "KTUNE_TRACE_DURATION_S", "duration", "0", "time of capture, then stop; 0: until exit"},
    {"period", "--period", "KTUNE_TRACE_PERIOD", "duration", "0", "periodic capture: a window opens this often (e.g. 60s), each window a trace of its own (OUT.w<K>.ktrace), nothing recorded between windows; 0: one capture"},
    {"window", "--window", "KTUNE_TRACE_WINDOW", "duration", "0", "length of each periodic window (e.g. 2s), at most the period"},
    {"range", "--range", "KTUNE_TRACE_RANGE", "text", "", "capture only inside cudaProfilerStart/Stop ('profiler') or NVTX push/pop ranges named NAME ('nvtx:NAME')"},
    {"sample", "--sample", "KTUNE_TRACE_SAMPLE", "count", "1", "trace 1 in N processes, chosen by job id and rank"},
    {"job-id", "--job-id", "KTUNE_TRACE_JOB_ID", "text", "$SLURM_JOB_ID", "sampling key shared by a job's processes: same job id and rank, same choice"},
    {"max-records", "--max-records", "KTUNE_TRACE_MAX_RECORDS", "count", "0", "stop writing after this many records, counting the rest in capped_records; 0: no cap"},
    {"flush-ms", "--flush-ms", "KTUNE_TRACE_FLUSH_MS", "ms", "1000", "period of CUPTI buffer flushes and trace commits (10 to 3600000)"},
    {"buffer-mb", "--buffer-mb", "KTUNE_TRACE_BUFFER_MB", "MiB", "8", "size of each CUPTI activity buffer (1 to 1024)"},
    {"driver-api", "--driver-api", "KTUNE_TRACE_DRIVER_API", "0 or 1", "1", "driver-API records: launches, copies and syncs made through the driver API (cuBLASLt, Triton); 0 to skip"},
    {"memsets", "--memsets", "KTUNE_TRACE_MEMSET", "0 or 1", "0", "memsets as GPU activity with bytes and GPU time (1.3-1.7 us of GPU time each); else only the memset API calls"},
    {"sync-records", "--sync-records", "KTUNE_TRACE_SYNC", "0 or 1", "0", "CUPTI synchronization records too (+0.2-0.3 us per launch); else only the sync API calls"},
    {"latency", "--latency", "KTUNE_TRACE_LATENCY", "0 or 1", "0", "kernels' queued and submitted timestamps"},
    {"overhead", "--overhead", "KTUNE_TRACE_OVERHEAD", "0 or 1", "0", "CUPTI's own overhead records"},
    {"gemm-shapes", "--gemm-shapes", "KTUNE_TRACE_GEMM_SHAPES", "0 or 1", "0", "cuBLASLt's GEMM calls (shape, layout, batch, types, epilogue, algorithm), each with its thread and time, so the report gives every GEMM problem its GPU time and tune command; each GEMM call costs a few microseconds more (docs/profiling.md)"},
    {"ops", "--ops", "KTUNE_TRACE_OPS", "0 or 1", "0", "PyTorch ops: a Python program gets PyTorch's NVTX op ranges turned on (ktune's sitecustomize.py on PYTHONPATH, no shapes), so each kernel names the op that launched it (docs/profiling.md)"},
    {"metrics", "--metrics", "KTUNE_TRACE_METRICS", "set or list", "", "hardware counters for selected launches: a set (triage, roofline, memory, stalls, compute, full) or comma-separated metric names; none: activity tier only"},
    {"kernel", "--kernel", "KTUNE_TRACE_KERNEL", "regex", "", "counters only for kernels whose mangled or demangled name matches; none: every kernel"},
    {"launch-skip", "--launch-skip", "KTUNE_TRACE_LAUNCH_SKIP", "count", "0", "skip this many matching launches of each kernel first"},
    {"launch-count", "--launch-count", "KTUNE_TRACE_LAUNCH_COUNT", "count", "1", "profile at most this many launches of each kernel; 0: no limit"},
    {"launch-shapes", "--launch-shapes", "KTUNE_TRACE_LAUNCH_SHAPES", "count", "4", "also profile a later launch of a kernel whose threads are at least twice, or at most half, those of each of its profiled launches, up to this many sizes per kernel (the report reads the size that owns the kernel's time); 1: only the launches above"},
    {"every", "--every", "KTUNE_TRACE_EVERY", "count", "1", "profile every K-th matching launch after the skipped ones"},
    {"max-kernels", "--max-kernels", "KTUNE_TRACE_MAX_KERNELS", "count", "0", "profile at most this many distinct kernels; 0: no limit"},
    {"time-box", "--time-box", "KTUNE_TRACE_TIME_BOX_S", "seconds", "0", "stop collecting counters once this much time went into them; 0: no limit"},
    {"root-pid", "", "KTUNE_TRACE_ROOT_PID", "pid", "", "set by ktune profile: the pid that writes OUT.ktrace"},
    {"debug", "", "KTUNE_TRACE_DEBUG", "0 or 1", "0", "the tracer prints its own start-up, exit and writer times on stderr, and a crash's thread and backtrace"},
    {"experiment", "", "KTUNE_TRACE_EXPERIMENT", "text", "", "overhead experiments only (benchmarks/tracer/variants.sh): comma-separated CUPTI settings to restore, or no_runtime"},
};
// clang-format on

const char* env(std::string_view name) {
  return tracer_setting(name).env;
}

// "--period (KTUNE_TRACE_PERIOD)": how a sentence names a setting that has a flag and a variable.
std::string flag_and_env(std::string_view name) {
  const TracerSetting& s = tracer_setting(name);
  std::string flag(s.flag);
  if (const auto comma = flag.find(','); comma != std::string::npos) flag.erase(0, comma + 1);
  return fmt::format("{} ({})", flag, s.env);
}

double parse_duration_env(const GetEnv& get, const char* name) {
  const char* v = get(name);
  if (!v || !*v) return 0;
  const auto s = parse_duration_s(v);
  if (!s)
    throw Error(fmt::format(
        "{}='{}' is not a duration; set it to a time like 60s, 2s or 100ms, or unset it.", name,
        v));
  return *s;
}

template <class T>
T parse_number(const GetEnv& get, const char* name, T fallback, T min, const char* what) {
  const char* v = get(name);
  if (!v || !*v) return fallback;
  T out{};
  const std::string_view s(v);
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || ptr != s.data() + s.size() || out < min ||
      (std::is_floating_point_v<T> && !std::isfinite(static_cast<double>(out))))
    throw Error(fmt::format("{}='{}' is not {}; set it to {} or unset it.", name, v, what,
                            std::is_floating_point_v<T> ? "a number like 2.5" : "a whole number"));
  return out;
}

bool parse_flag(const GetEnv& get, const char* name, bool fallback) {
  const char* v = get(name);
  if (!v || !*v) return fallback;
  const std::string_view s(v);
  if (s == "1") return true;
  if (s == "0") return false;
  throw Error(
      fmt::format("{}='{}' is not 0 or 1; set it to 1 (on) or 0 (off), or unset it.", name, v));
}

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

const std::vector<TracerSetting>& tracer_settings() {
  return kSettings;
}

const TracerSetting& tracer_setting(std::string_view name) {
  for (const TracerSetting& s : kSettings)
    if (name == s.name) return s;
  throw std::logic_error(fmt::format("no tracer setting named '{}'", name));
}

std::string tracer_settings_markdown() {
  std::string out =
      "| variable | flag | type | default | meaning |\n| --- | --- | --- | --- | --- |\n";
  for (const TracerSetting& s : kSettings) {
    std::string flag(s.flag);
    if (const auto comma = flag.find(','); comma != std::string::npos) flag.insert(comma + 1, " ");
    auto code = [](std::string_view v) {
      return v.empty() ? std::string() : fmt::format("`{}`", v);
    };
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", s.env, code(flag), s.type,
                       code(s.fallback), s.help);
  }
  return out;
}

std::optional<double> parse_duration_s(std::string_view text) {
  // Longest suffix first: "ms" before "s" and "m".
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"ms", 1e-3}, {"s", 1}, {"m", 60}, {"h", 3600}};
  double scale = 1;
  for (const auto& [suffix, factor] : kUnits)
    if (text.size() > suffix.size() && text.substr(text.size() - suffix.size()) == suffix) {
      text.remove_suffix(suffix.size());
      scale = factor;
      break;
    }
  double value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() ||
      !std::isfinite(value) || value < 0)
    return std::nullopt;
  return value * scale;
}

void check_schedule(const TraceWindow& w) {
  if (w.period_s <= 0 && w.window_s <= 0) return;
  if (w.period_s <= 0)
    throw Error(fmt::format("{} needs {} too, how often a window opens; add e.g. --period 60s.",
                            flag_and_env("window"), flag_and_env("period")));
  if (w.window_s <= 0)
    throw Error(fmt::format("{} needs {} too, the length of each window; add e.g. --window 2s.",
                            flag_and_env("period"), flag_and_env("window")));
  if (w.window_s > w.period_s)
    throw Error(
        fmt::format("{} of {} s is longer than {} of {} s; a window must fit in its "
                    "period.",
                    flag_and_env("window"), w.window_s, flag_and_env("period"), w.period_s));
  if (!w.range.empty())
    throw Error(fmt::format("{} and --range ({}) both decide when to capture; use one of them.",
                            flag_and_env("period"), tracer_setting("range").env));
}

void check_range(const std::string& range) {
  if (range.empty() || range == "profiler") return;
  if (range.rfind("nvtx:", 0) == 0 && range.size() > 5) return;
  throw Error(
      fmt::format("capture range '{}' is not understood; use 'profiler' "
                  "(cudaProfilerStart/Stop) or 'nvtx:NAME' (an NVTX range's name).",
                  range));
}

void check_gemm_shapes(const TracerOptions& o, const GetEnv& get) {
  if (!o.gemm_shapes) return;
  // The tracer takes over cuBLASLt's logger (level, file, callback); a logger the user set up
  // would be silently redirected, so it is refused instead.
  for (const char* name : {"CUBLASLT_LOG_LEVEL", "CUBLASLT_LOG_MASK", "CUBLASLT_LOG_FILE"})
    if (const char* v = get(name); v && *v)
      throw Error(fmt::format(
          "{} takes over cuBLASLt's logger, but {}={} configures it already; unset {} or drop "
          "--gemm-shapes.",
          flag_and_env("gemm-shapes"), name, v, name));
}

void check_counter_options(const TracerOptions& o) {
  if (o.metrics.empty()) return;
  metric::resolve_metrics(o.metrics);
  LaunchSelector selector(o.counters);  // compiles --kernel
}

TracerOptions options_from_env(const GetEnv& get) {
  TracerOptions o;
  if (const char* v = get(env("output")); v && *v) o.output = v;
  TracerOptions defaults;  // the record kinds' defaults: the mode's, before their own variables
  if (const char* v = get(env("mode")); v && *v) {
    const TraceMode mode = parse_trace_mode(v);
    if (mode == TraceMode::kernels)
      o.kernels_only = true;
    else if (mode == TraceMode::full)
      defaults.set_full();
  }
  o.window.delay_s = parse_duration_env(get, env("delay"));
  o.window.duration_s = parse_duration_env(get, env("duration"));
  o.window.period_s = parse_duration_env(get, env("period"));
  o.window.window_s = parse_duration_env(get, env("window"));
  if (const char* v = get(env("range")); v && *v) {
    o.window.range = v;
    try {
      check_range(o.window.range);
    } catch (const Error& e) {
      throw Error(std::string("KTUNE_TRACE_RANGE: ") + e.what());
    }
  }
  check_schedule(o.window);
  o.window.sample_one_in =
      parse_number(get, env("sample"), 1u, 1u, "a sampling rate N >= 1 (1 in N)");
  if (const char* v = get(env("job-id")); v && *v)
    o.window.job_id = v;
  else if (const char* s = get("SLURM_JOB_ID"); s && *s)
    o.window.job_id = s;
  o.window.max_records =
      parse_number(get, env("max-records"), std::uint64_t{0}, std::uint64_t{0}, "a record count");
  o.flush_period_ms =
      parse_number(get, env("flush-ms"), 1000u, 10u, "a period in ms (at least 10)");
  o.buffer_mib = parse_number(get, env("buffer-mb"), 8u, 1u, "a size in MiB (at least 1)");
  o.driver_api = parse_flag(get, env("driver-api"), defaults.driver_api);
  o.memset_records = parse_flag(get, env("memsets"), defaults.memset_records);
  o.sync_records = parse_flag(get, env("sync-records"), defaults.sync_records);
  o.latency_timestamps = parse_flag(get, env("latency"), defaults.latency_timestamps);
  o.overhead_records = parse_flag(get, env("overhead"), defaults.overhead_records);
  o.gemm_shapes = parse_flag(get, env("gemm-shapes"), false);
  o.torch_ops = parse_flag(get, env("ops"), false);
  o.root_pid = parse_number(get, env("root-pid"), std::int64_t{0}, std::int64_t{0}, "a process id");
  if (const char* v = get(env("metrics")); v && *v) o.metrics = v;
  if (const char* v = get(env("kernel")); v && *v) o.counters.kernel_regex = v;
  CounterSelection& c = o.counters;
  c.launch_skip =
      parse_number(get, env("launch-skip"), c.launch_skip, std::uint64_t{0}, "a launch count");
  c.launch_count =
      parse_number(get, env("launch-count"), c.launch_count, std::uint64_t{0}, "a launch count");
  c.launch_shapes = parse_number(get, env("launch-shapes"), c.launch_shapes, std::uint64_t{1},
                                 "a count of launch sizes >= 1");
  c.every = parse_number(get, env("every"), c.every, std::uint64_t{1},
                         "a sampling step K >= 1 (every K-th launch)");
  c.max_kernels =
      parse_number(get, env("max-kernels"), c.max_kernels, std::uint64_t{0}, "a kernel count");
  c.time_box_s = parse_number(get, env("time-box"), c.time_box_s, 0.0, "a duration in seconds");
  return o;
}

std::vector<std::pair<std::string, std::string>> options_to_env(const TracerOptions& o) {
  std::vector<std::pair<std::string, std::string>> out = {
      {env("output"), o.output.string()},
      {env("mode"), o.kernels_only ? "kernels" : "default"},
      {env("delay"), fmt::format("{}", o.window.delay_s)},
      {env("duration"), fmt::format("{}", o.window.duration_s)},
      {env("period"), fmt::format("{}", o.window.period_s)},
      {env("window"), fmt::format("{}", o.window.window_s)},
      {env("range"), o.window.range},
      {env("sample"), std::to_string(o.window.sample_one_in)},
      {env("job-id"), o.window.job_id},
      {env("max-records"), std::to_string(o.window.max_records)},
      {env("flush-ms"), std::to_string(o.flush_period_ms)},
      {env("buffer-mb"), std::to_string(o.buffer_mib)},
      {env("root-pid"), std::to_string(o.root_pid)},
      {env("metrics"), o.metrics},
      {env("kernel"), o.counters.kernel_regex},
      {env("launch-skip"), std::to_string(o.counters.launch_skip)},
      {env("launch-count"), std::to_string(o.counters.launch_count)},
      {env("launch-shapes"), std::to_string(o.counters.launch_shapes)},
      {env("every"), std::to_string(o.counters.every)},
      {env("max-kernels"), std::to_string(o.counters.max_kernels)},
      {env("time-box"), fmt::format("{}", o.counters.time_box_s)}};
  const TracerOptions defaults;
  auto flag = [&](const char* name, bool value, bool fallback) {
    if (value != fallback) out.emplace_back(name, value ? "1" : "0");
  };
  flag(env("driver-api"), o.driver_api, defaults.driver_api);
  flag(env("memsets"), o.memset_records, defaults.memset_records);
  flag(env("sync-records"), o.sync_records, defaults.sync_records);
  flag(env("latency"), o.latency_timestamps, defaults.latency_timestamps);
  flag(env("overhead"), o.overhead_records, defaults.overhead_records);
  flag(env("gemm-shapes"), o.gemm_shapes, defaults.gemm_shapes);
  flag(env("ops"), o.torch_ops, defaults.torch_ops);
  return out;
}

namespace {
constexpr EnumName<TraceMode> kTraceModeNames[] = {
    {TraceMode::standard, "default"},
    {TraceMode::kernels, "kernels"},
    {TraceMode::full, "full"},
};
}  // namespace

const char* to_string(TraceMode m) {
  return name_of(kTraceModeNames, m);
}

TraceMode parse_trace_mode(std::string_view name) {
  if (const auto m = value_of(kTraceModeNames, name)) return *m;
  throw Error(fmt::format(
      "KTUNE_TRACE_MODE='{}' is not a mode; set it to 'default', 'kernels' or 'full', or unset it.",
      name));
}

TraceMode mode_of(const TracerOptions& o) {
  if (o.kernels_only) return TraceMode::kernels;
  const bool all = o.driver_api && o.memset_records && o.sync_records && o.latency_timestamps &&
                   o.overhead_records;
  return all ? TraceMode::full : TraceMode::standard;
}

std::vector<std::string> record_kinds(const TracerOptions& o) {
  std::vector<std::string> kinds = {"kernel"};
  if (!o.kernels_only) {
    kinds.insert(kinds.end(), {"memcpy", "runtime_api", "nvtx"});
    if (o.driver_api) kinds.push_back("driver_api");
    if (o.memset_records) kinds.push_back("memset");
    if (o.sync_records) kinds.push_back("sync");
    if (o.overhead_records) kinds.push_back("overhead");
  }
  if (o.latency_timestamps) kinds.push_back("latency");
  if (!o.metrics.empty()) kinds.push_back("counter");
  if (o.gemm_shapes) {
    kinds.push_back("gemm_call");
    kinds.push_back("gemm_event");
  }
  return kinds;
}

bool sampled_in(const TraceWindow& window, std::string_view process_key) {
  if (window.sample_one_in <= 1) return true;
  const std::string key = window.job_id + "\x1f" + std::string(process_key);
  return fnv1a(key) % window.sample_one_in == 0;
}

std::string process_key(const GetEnv& get) {
  for (const char* name : {"RANK", "LOCAL_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"})
    if (const char* v = get(name); v && *v) return std::string("rank:") + v;
  return "pid:" + std::to_string(::getpid());
}

std::filesystem::path trace_path(const std::filesystem::path& output, std::int64_t root_pid,
                                 std::int64_t pid, std::optional<std::uint64_t> window) {
  const bool root = root_pid == 0 || root_pid == pid;
  if (root && !window) return output;
  std::filesystem::path stem = output;
  if (stem.extension() == ".ktrace") stem.replace_extension();
  std::string name = stem.string();
  if (!root) name += "." + std::to_string(pid);
  if (window) name += ".w" + std::to_string(*window);
  return name + ".ktrace";
}

bool is_trace_of(const std::filesystem::path& output, const std::filesystem::path& file) {
  if (file == output) return true;
  std::filesystem::path stem = output;
  if (stem.extension() == ".ktrace") stem.replace_extension();
  if (file.parent_path() != stem.parent_path()) return false;
  const std::string name = file.filename().string(), prefix = stem.filename().string() + ".";
  constexpr std::string_view kExt = ".ktrace";
  if (name.size() <= prefix.size() + kExt.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - kExt.size(), kExt.size(), kExt) != 0)
    return false;
  // What trace_path puts between them: PID, wK or PID.wK.
  std::string_view mid(name);
  mid = mid.substr(prefix.size(), mid.size() - prefix.size() - kExt.size());
  auto digits = [](std::string_view d) {
    return !d.empty() && d.find_first_not_of("0123456789") == std::string_view::npos;
  };
  const auto dot = mid.find('.');
  const std::string_view first = mid.substr(0, dot);
  if (dot == std::string_view::npos)
    return digits(first) || (first.size() > 1 && first[0] == 'w' && digits(first.substr(1)));
  const std::string_view second = mid.substr(dot + 1);
  return digits(first) && second.size() > 1 && second[0] == 'w' && digits(second.substr(1));
}

bool is_traced_api(std::string_view name) {
  auto starts = [&](std::string_view p) { return name.substr(0, p.size()) == p; };
  auto has = [&](std::string_view p) { return name.find(p) != std::string_view::npos; };
  // Graph construction and node-parameter calls mention Memcpy/Memset/Launch but do no work.
  if (starts("cudaGraphAdd") || starts("cuGraphAdd") || has("NodeSetParams") ||
      has("NodeGetParams") || has("Occupancy") || has("GetAttribute"))
    return false;
  return has("Launch") || starts("cudaMemcpy") || starts("cuMemcpy") || starts("cudaMemset") ||
         starts("cuMemset") || has("Synchronize") || has("StreamWaitEvent") ||
         has("ProfilerStart") || has("ProfilerStop");
}

}  // namespace ktune::trace

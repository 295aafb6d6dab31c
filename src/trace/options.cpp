#include "ktune/trace/options.hpp"

#include <unistd.h>

#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "ktune/core/error.hpp"
#include "ktune/trace/metrics.hpp"
#include "launch_selector.hpp"

namespace ktune::trace {
namespace {

// clang-format off
const std::vector<EnvVar> kEnvVars = {
    {"KTUNE_TRACE_OUTPUT", "--output", "path of the root process's trace; children write OUT.<pid>.ktrace (default ktune.ktrace)"},
    {"KTUNE_TRACE_MODE", "--kernels-only, --full", "'default' (kernels, copies, launch/copy/memset/sync API calls, NVTX), 'kernels' or 'full' (default and every record kind below)"},
    {"KTUNE_TRACE_DELAY_S", "--delay", "seconds after start-up before capture begins (default 0)"},
    {"KTUNE_TRACE_DURATION_S", "--duration", "seconds of capture, then stop; 0: until exit (default 0)"},
    {"KTUNE_TRACE_RANGE", "--range", "capture only inside cudaProfilerStart/Stop ('profiler') or an NVTX range ('nvtx:NAME')"},
    {"KTUNE_TRACE_SAMPLE", "--sample", "trace 1 in N processes, chosen by job id and rank (default 1)"},
    {"KTUNE_TRACE_JOB_ID", "--job-id", "sampling key shared by a job's processes (default: SLURM_JOB_ID, else none)"},
    {"KTUNE_TRACE_MAX_RECORDS", "--max-records", "stop writing after this many records, counting the rest (default 0: no cap)"},
    {"KTUNE_TRACE_FLUSH_MS", "--flush-ms", "period of CUPTI buffer flushes and trace commits in ms (default 1000)"},
    {"KTUNE_TRACE_BUFFER_MB", "--buffer-mb", "size of each CUPTI activity buffer in MiB (default 8)"},
    {"KTUNE_TRACE_DRIVER_API", "--driver-api", "0: no driver-API records (default 1: launches, copies, syncs made through the driver API, e.g. by cuBLASLt)"},
    {"KTUNE_TRACE_MEMSET", "--memsets", "1: memsets as GPU activity, with bytes and GPU time (default 0: the memset API calls are recorded)"},
    {"KTUNE_TRACE_SYNC", "--sync-records", "1: CUPTI synchronization records too (default 0: the sync API calls are recorded)"},
    {"KTUNE_TRACE_LATENCY", "--latency", "1: record kernels' queued/submitted timestamps (default 0)"},
    {"KTUNE_TRACE_OVERHEAD", "--overhead", "1: record CUPTI's own overhead (default 0)"},
    {"KTUNE_TRACE_METRICS", "--metrics", "counter tier: a metric set (roofline, memory, stalls, compute, full) or comma-separated metric names; unset: activity tier only"},
    {"KTUNE_TRACE_KERNEL", "--kernel", "counter tier: profile only kernels whose mangled or demangled name matches this regex (default: all)"},
    {"KTUNE_TRACE_LAUNCH_SKIP", "--launch-skip", "counter tier: skip this many matching launches of each kernel first (default 0)"},
    {"KTUNE_TRACE_LAUNCH_COUNT", "--launch-count", "counter tier: profile at most this many launches of each kernel; 0: no limit (default 1)"},
    {"KTUNE_TRACE_EVERY", "--every", "counter tier: profile every K-th matching launch after the skipped ones (default 1)"},
    {"KTUNE_TRACE_MAX_KERNELS", "--max-kernels", "counter tier: profile at most this many distinct kernels; 0: no limit (default 0)"},
    {"KTUNE_TRACE_TIME_BOX_S", "--time-box", "counter tier: stop collecting counters after this many seconds spent on it; 0: no limit (default 0)"},
    {"KTUNE_TRACE_ROOT_PID", "", "set by ktune profile: the pid whose trace is OUT.ktrace"},
    {"KTUNE_TRACE_DEBUG", "", "1: the tracer prints its own start-up, exit and writer times on stderr"},
    {"KTUNE_TRACE_EXPERIMENT", "", "overhead experiments only: comma-separated CUPTI settings to restore (benchmarks/tracer/variants.sh)"},
};
// clang-format on

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

const std::vector<EnvVar>& tracer_env_vars() {
  return kEnvVars;
}

void check_range(const std::string& range) {
  if (range.empty() || range == "profiler") return;
  if (range.rfind("nvtx:", 0) == 0 && range.size() > 5) return;
  throw Error(
      fmt::format("capture range '{}' is not understood; use 'profiler' "
                  "(cudaProfilerStart/Stop) or 'nvtx:NAME' (an NVTX range's name).",
                  range));
}

void check_counter_options(const TracerOptions& o) {
  if (o.metrics.empty()) return;
  metric::resolve_metrics(o.metrics);
  LaunchSelector selector(o.counters);  // compiles --kernel
}

TracerOptions options_from_env(const GetEnv& get) {
  TracerOptions o;
  if (const char* v = get("KTUNE_TRACE_OUTPUT"); v && *v) o.output = v;
  TracerOptions defaults;  // the record kinds' defaults: the mode's, before their own variables
  if (const char* v = get("KTUNE_TRACE_MODE"); v && *v) {
    const std::string_view mode(v);
    if (mode == "kernels")
      o.kernels_only = true;
    else if (mode == "full")
      defaults.set_full();
    else if (mode != "default")
      throw Error(
          fmt::format("KTUNE_TRACE_MODE='{}' is not a mode; set it to 'default', 'kernels' "
                      "or 'full'.",
                      v));
  }
  o.window.delay_s = parse_number(get, "KTUNE_TRACE_DELAY_S", 0.0, 0.0, "a delay in seconds");
  o.window.duration_s =
      parse_number(get, "KTUNE_TRACE_DURATION_S", 0.0, 0.0, "a duration in seconds");
  if (const char* v = get("KTUNE_TRACE_RANGE"); v && *v) {
    o.window.range = v;
    try {
      check_range(o.window.range);
    } catch (const Error& e) {
      throw Error(std::string("KTUNE_TRACE_RANGE: ") + e.what());
    }
  }
  o.window.sample_one_in =
      parse_number(get, "KTUNE_TRACE_SAMPLE", 1u, 1u, "a sampling rate N >= 1 (1 in N)");
  if (const char* v = get("KTUNE_TRACE_JOB_ID"); v && *v)
    o.window.job_id = v;
  else if (const char* s = get("SLURM_JOB_ID"); s && *s)
    o.window.job_id = s;
  o.window.max_records = parse_number(get, "KTUNE_TRACE_MAX_RECORDS", std::uint64_t{0},
                                      std::uint64_t{0}, "a record count");
  o.flush_period_ms =
      parse_number(get, "KTUNE_TRACE_FLUSH_MS", 1000u, 10u, "a period in ms (at least 10)");
  o.buffer_mib = parse_number(get, "KTUNE_TRACE_BUFFER_MB", 8u, 1u, "a size in MiB (at least 1)");
  o.driver_api = parse_flag(get, "KTUNE_TRACE_DRIVER_API", defaults.driver_api);
  o.memset_records = parse_flag(get, "KTUNE_TRACE_MEMSET", defaults.memset_records);
  o.sync_records = parse_flag(get, "KTUNE_TRACE_SYNC", defaults.sync_records);
  o.latency_timestamps = parse_flag(get, "KTUNE_TRACE_LATENCY", defaults.latency_timestamps);
  o.overhead_records = parse_flag(get, "KTUNE_TRACE_OVERHEAD", defaults.overhead_records);
  o.root_pid =
      parse_number(get, "KTUNE_TRACE_ROOT_PID", std::int64_t{0}, std::int64_t{0}, "a process id");
  if (const char* v = get("KTUNE_TRACE_METRICS"); v && *v) o.metrics = v;
  if (const char* v = get("KTUNE_TRACE_KERNEL"); v && *v) o.counters.kernel_regex = v;
  CounterSelection& c = o.counters;
  c.launch_skip = parse_number(get, "KTUNE_TRACE_LAUNCH_SKIP", c.launch_skip, std::uint64_t{0},
                               "a launch count");
  c.launch_count = parse_number(get, "KTUNE_TRACE_LAUNCH_COUNT", c.launch_count, std::uint64_t{0},
                                "a launch count");
  c.every = parse_number(get, "KTUNE_TRACE_EVERY", c.every, std::uint64_t{1},
                         "a sampling step K >= 1 (every K-th launch)");
  c.max_kernels = parse_number(get, "KTUNE_TRACE_MAX_KERNELS", c.max_kernels, std::uint64_t{0},
                               "a kernel count");
  c.time_box_s =
      parse_number(get, "KTUNE_TRACE_TIME_BOX_S", c.time_box_s, 0.0, "a duration in seconds");
  return o;
}

std::vector<std::pair<std::string, std::string>> options_to_env(const TracerOptions& o) {
  std::vector<std::pair<std::string, std::string>> out = {
      {"KTUNE_TRACE_OUTPUT", o.output.string()},
      {"KTUNE_TRACE_MODE", o.kernels_only ? "kernels" : "default"},
      {"KTUNE_TRACE_DELAY_S", fmt::format("{}", o.window.delay_s)},
      {"KTUNE_TRACE_DURATION_S", fmt::format("{}", o.window.duration_s)},
      {"KTUNE_TRACE_RANGE", o.window.range},
      {"KTUNE_TRACE_SAMPLE", std::to_string(o.window.sample_one_in)},
      {"KTUNE_TRACE_JOB_ID", o.window.job_id},
      {"KTUNE_TRACE_MAX_RECORDS", std::to_string(o.window.max_records)},
      {"KTUNE_TRACE_FLUSH_MS", std::to_string(o.flush_period_ms)},
      {"KTUNE_TRACE_BUFFER_MB", std::to_string(o.buffer_mib)},
      {"KTUNE_TRACE_ROOT_PID", std::to_string(o.root_pid)},
      {"KTUNE_TRACE_METRICS", o.metrics},
      {"KTUNE_TRACE_KERNEL", o.counters.kernel_regex},
      {"KTUNE_TRACE_LAUNCH_SKIP", std::to_string(o.counters.launch_skip)},
      {"KTUNE_TRACE_LAUNCH_COUNT", std::to_string(o.counters.launch_count)},
      {"KTUNE_TRACE_EVERY", std::to_string(o.counters.every)},
      {"KTUNE_TRACE_MAX_KERNELS", std::to_string(o.counters.max_kernels)},
      {"KTUNE_TRACE_TIME_BOX_S", fmt::format("{}", o.counters.time_box_s)}};
  const TracerOptions defaults;
  auto flag = [&](const char* name, bool value, bool fallback) {
    if (value != fallback) out.emplace_back(name, value ? "1" : "0");
  };
  flag("KTUNE_TRACE_DRIVER_API", o.driver_api, defaults.driver_api);
  flag("KTUNE_TRACE_MEMSET", o.memset_records, defaults.memset_records);
  flag("KTUNE_TRACE_SYNC", o.sync_records, defaults.sync_records);
  flag("KTUNE_TRACE_LATENCY", o.latency_timestamps, defaults.latency_timestamps);
  flag("KTUNE_TRACE_OVERHEAD", o.overhead_records, defaults.overhead_records);
  return out;
}

std::string mode_name(const TracerOptions& o) {
  if (o.kernels_only) return "kernels";
  const bool all = o.driver_api && o.memset_records && o.sync_records && o.latency_timestamps &&
                   o.overhead_records;
  return all ? "full" : "default";
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
                                 std::int64_t pid) {
  if (root_pid == 0 || root_pid == pid) return output;
  std::filesystem::path stem = output;
  if (stem.extension() == ".ktrace") stem.replace_extension();
  return stem.string() + "." + std::to_string(pid) + ".ktrace";
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

#include "ktune/report/chrome_trace.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/analyze/analysis.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/version.hpp"

namespace ktune::report {
namespace {

// GPU tracks live in pseudo-processes numbered far above real pids.
constexpr std::int64_t kGpuPidBase = 1'000'000'000;

std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

class EventWriter {
 public:
  EventWriter(std::ostream& out, std::uint64_t origin_ns) : out_(out), origin_(origin_ns) {
    buf_.reserve(1 << 20);
  }

  // Relative microseconds with nanosecond digits, exact (no double rounding).
  std::string ts(std::uint64_t t) const {
    const std::int64_t rel = static_cast<std::int64_t>(t - origin_);
    return fmt::format("{}{}.{:03}", rel < 0 ? "-" : "", std::abs(rel) / 1000,
                       std::abs(rel) % 1000);
  }
  std::string dur(std::uint64_t start, std::uint64_t end) const {
    const std::uint64_t d = end > start ? end - start : 0;
    return fmt::format("{}.{:03}", d / 1000, d % 1000);
  }

  void event(const std::string& body) {
    buf_ += first_ ? "\n" : ",\n";
    first_ = false;
    buf_ += body;
    if (buf_.size() > (1 << 20)) flush();
  }
  void raw(std::string_view s) { buf_ += s; }
  void flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }

 private:
  std::ostream& out_;
  std::uint64_t origin_;
  std::string buf_;
  bool first_ = true;
};

void sort_unique(std::vector<std::uint32_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

ChromeTraceCounts write_chrome_trace(analyze::TraceSource& source, std::ostream& out) {
  ChromeTraceCounts counts;
  const std::uint64_t origin = source.origin_ns().value_or(0);
  EventWriter w(out, origin);
  w.raw("{\"traceEvents\":[");

  // Pass 1: which correlation ids have a host launch or copy call, so flows start only where they
  // can end and the "s"/"f" counts always match.
  std::vector<std::uint32_t> launched;
  source.api_calls([&](const trace::ApiRecord& a) {
    const auto role = analyze::api_role(a.name);
    if (a.correlation_id != 0 &&
        (role == analyze::ApiRole::launch || role == analyze::ApiRole::copy))
      launched.push_back(a.correlation_id);
  });
  sort_unique(launched);

  std::set<std::pair<std::uint32_t, std::uint32_t>> gpu_tracks;   // (device, stream)
  std::set<std::pair<std::uint32_t, std::uint32_t>> host_tracks;  // (pid, tid)
  // flowed[i]: an "f" was written for launched[i]. A graph launch starts many kernels under one
  // correlation id; the arrow goes to the first of them.
  std::vector<bool> flowed(launched.size(), false);
  auto launch_index = [&](std::uint32_t corr) -> std::ptrdiff_t {
    auto it = std::lower_bound(launched.begin(), launched.end(), corr);
    return corr != 0 && it != launched.end() && *it == corr ? it - launched.begin() : -1;
  };
  auto gpu_event = [&](const char* cat, const std::string& name, std::uint32_t device,
                       std::uint32_t stream, std::uint32_t corr, std::uint64_t start,
                       std::uint64_t end, const std::string& args) {
    const std::int64_t pid = kGpuPidBase + device;
    gpu_tracks.insert({device, stream});
    w.event(fmt::format(
        R"({{"ph":"X","cat":"{}","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{"correlation_id":{}{}}}}})",
        cat, quoted(name), pid, stream, w.ts(start), w.dur(start, end), corr, args));
    if (const auto i = launch_index(corr); i >= 0 && !flowed[i]) {
      w.event(fmt::format(
          R"({{"ph":"f","bp":"e","cat":"launch","name":"launch","id":{},"pid":{},"tid":{},"ts":{}}})",
          corr, pid, stream, w.ts(start)));
      flowed[i] = true;
      ++counts.flows;
    }
  };

  source.kernels([&](const trace::KernelRecord& k) {
    if (k.start_ns == 0) return;
    ++counts.kernels;
    const analyze::LaunchShape s = analyze::launch_shape(k);
    gpu_event("kernel", analyze::display_name(k), k.device_id, k.stream_id, k.correlation_id,
              k.start_ns, k.end_ns,
              fmt::format(R"(,"grid":[{},{},{}],"block":[{},{},{}],"shared_mem_bytes":{},)"
                          R"("registers_per_thread":{})",
                          s.grid.x, s.grid.y, s.grid.z, s.block.x, s.block.y, s.block.z,
                          s.shared_mem_bytes, s.registers_per_thread));
  });
  source.memcpys([&](const trace::MemcpyRecord& m) {
    if (m.start_ns == 0) return;
    ++counts.memcpys;
    gpu_event("memcpy", "memcpy " + m.kind, m.device_id, m.stream_id, m.correlation_id, m.start_ns,
              m.end_ns, fmt::format(R"(,"bytes":{},"kind":{})", m.bytes, quoted(m.kind)));
  });
  source.memsets([&](const trace::MemsetRecord& m) {
    if (m.start_ns == 0) return;
    ++counts.memsets;
    gpu_event("memset", "memset", m.device_id, m.stream_id, m.correlation_id, m.start_ns, m.end_ns,
              fmt::format(R"(,"bytes":{})", m.bytes));
  });

  source.api_calls([&](const trace::ApiRecord& a) {
    if (a.start_ns == 0) return;
    ++counts.api_calls;
    host_tracks.insert({a.process_id, a.thread_id});
    w.event(fmt::format(
        R"({{"ph":"X","cat":"cuda_api","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{"correlation_id":{}}}}})",
        quoted(a.name), a.process_id, a.thread_id, w.ts(a.start_ns), w.dur(a.start_ns, a.end_ns),
        a.correlation_id));
    // flowed[i] is cleared once its "s" is written: one start per id, even if a damaged trace
    // repeats a correlation id.
    if (const auto i = launch_index(a.correlation_id); i >= 0 && flowed[i]) {
      w.event(fmt::format(
          R"({{"ph":"s","cat":"launch","name":"launch","id":{},"pid":{},"tid":{},"ts":{}}})",
          a.correlation_id, a.process_id, a.thread_id, w.ts(a.start_ns)));
      flowed[i] = false;
    }
  });
  source.nvtx_ranges([&](const trace::NvtxRangeRecord& r) {
    if (r.start_ns == 0) return;
    ++counts.nvtx_ranges;
    host_tracks.insert({r.process_id, r.thread_id});
    w.event(fmt::format(
        R"({{"ph":"X","cat":"nvtx","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{"domain":{}}}}})",
        quoted(r.name), r.process_id, r.thread_id, w.ts(r.start_ns), w.dur(r.start_ns, r.end_ns),
        quoted(r.domain)));
  });

  std::set<std::uint32_t> gpus;
  for (auto [device, stream] : gpu_tracks) {
    gpus.insert(device);
    w.event(fmt::format(
        R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"stream {}"}}}})",
        kGpuPidBase + device, stream, stream));
  }
  for (std::uint32_t device : gpus)
    w.event(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"GPU {}"}}}})",
                        kGpuPidBase + device, device));
  std::set<std::uint32_t> pids;
  for (auto [pid, tid] : host_tracks) {
    pids.insert(pid);
    w.event(fmt::format(
        R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"thread {}"}}}})", pid,
        tid, tid));
  }
  for (std::uint32_t pid : pids)
    w.event(fmt::format(
        R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"process {}"}}}})", pid, pid));

  const nlohmann::json other = {
      {"schema_version", kChromeTraceSchemaVersion},
      {"generator", fmt::format("ktune {} ({})", version(), git_commit())},
      {"origin_ns", origin},
      {"ktrace_schema_version", source.metadata().schema_version}};
  w.raw(fmt::format("\n],\"displayTimeUnit\":\"ns\",\"otherData\":{}}}\n", other.dump()));
  w.flush();
  return counts;
}

ChromeTraceCounts export_chrome_trace(analyze::TraceSource& source,
                                      const std::filesystem::path& path) {
  if (path.has_parent_path() && !std::filesystem::is_directory(path.parent_path()))
    throw Error(fmt::format("cannot write {}: its directory does not exist; create it first.",
                            path.string()));
  const std::filesystem::path tmp = path.string() + fmt::format(".tmp{}", ::getpid());
  ChromeTraceCounts counts;
  try {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw Error(fmt::format("cannot write {}: {}; check the directory is writable.",
                              path.string(), std::strerror(errno)));
    counts = write_chrome_trace(source, out);
    out.flush();
    if (!out)
      throw Error(fmt::format("cannot write {}: {}; check free disk space.", path.string(),
                              std::strerror(errno)));
  } catch (...) {
    std::error_code ignore;
    std::filesystem::remove(tmp, ignore);
    throw;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw Error(fmt::format("cannot replace {}: {}.", path.string(), ec.message()));
  }
  return counts;
}

}  // namespace ktune::report

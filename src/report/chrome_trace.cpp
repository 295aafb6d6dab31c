#include "ktune/report/chrome_trace.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/analyze/analysis.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/paths.hpp"
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

// One export, in its steps: the launch ids first (a pass over the API calls), then GPU records,
// host records, the tracks' names and the trailer.
class ChromeTrace {
 public:
  ChromeTrace(analyze::TraceSource& source, std::ostream& out)
      : source_(source), origin_(source.origin_ns().value_or(0)), w_(out, origin_) {}

  ChromeTraceCounts write() {
    w_.raw("{\"traceEvents\":[");
    collect_launches();
    gpu_records();
    host_records();
    track_names();
    const nlohmann::json other = {
        {"schema_version", kChromeTraceSchemaVersion},
        {"generator", fmt::format("ktune {} ({})", version(), git_commit())},
        {"origin_ns", origin_},
        {"ktrace_schema_version", source_.metadata().schema_version}};
    w_.raw(fmt::format("\n],\"displayTimeUnit\":\"ns\",\"otherData\":{}}}\n", other.dump()));
    w_.flush();
    return counts_;
  }

 private:
  // Which correlation ids have a host launch or copy call, so flows start only where they can end
  // and the "s"/"f" counts always match.
  void collect_launches() {
    source_.api_calls([&](const trace::ApiRecord& a) {
      const auto role = analyze::api_role(a.name);
      if (a.correlation_id != 0 &&
          (role == analyze::ApiRole::launch || role == analyze::ApiRole::copy))
        launched_.push_back(a.correlation_id);
    });
    sort_unique(launched_);
    flowed_.assign(launched_.size(), false);
  }

  std::ptrdiff_t launch_index(std::uint32_t corr) const {
    auto it = std::lower_bound(launched_.begin(), launched_.end(), corr);
    return corr != 0 && it != launched_.end() && *it == corr ? it - launched_.begin() : -1;
  }

  void gpu_event(const char* cat, const std::string& name, std::uint32_t device,
                 std::uint32_t stream, std::uint32_t corr, std::uint64_t start, std::uint64_t end,
                 const std::string& args) {
    const std::int64_t pid = kGpuPidBase + device;
    gpu_tracks_.insert({device, stream});
    w_.event(fmt::format(
        R"({{"ph":"X","cat":"{}","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{"correlation_id":{}{}}}}})",
        cat, quoted(name), pid, stream, w_.ts(start), w_.dur(start, end), corr, args));
    if (const auto i = launch_index(corr); i >= 0 && !flowed_[i]) {
      w_.event(fmt::format(
          R"({{"ph":"f","bp":"e","cat":"launch","name":"launch","id":{},"pid":{},"tid":{},"ts":{}}})",
          corr, pid, stream, w_.ts(start)));
      flowed_[i] = true;
      ++counts_.flows;
    }
  }

  void gpu_records() {
    source_.kernels([&](const trace::KernelRecord& k) {
      if (k.start_ns == 0) return;
      ++counts_.kernels;
      const analyze::LaunchShape s = analyze::launch_shape(k);
      gpu_event("kernel", analyze::display_name(k), k.device_id, k.stream_id, k.correlation_id,
                k.start_ns, k.end_ns,
                fmt::format(R"(,"grid":[{},{},{}],"block":[{},{},{}],"shared_mem_bytes":{},)"
                            R"("registers_per_thread":{})",
                            s.grid.x, s.grid.y, s.grid.z, s.block.x, s.block.y, s.block.z,
                            s.shared_mem_bytes, s.registers_per_thread));
    });
    source_.memcpys([&](const trace::MemcpyRecord& m) {
      if (m.start_ns == 0) return;
      ++counts_.memcpys;
      gpu_event("memcpy", "memcpy " + m.kind, m.device_id, m.stream_id, m.correlation_id,
                m.start_ns, m.end_ns,
                fmt::format(R"(,"bytes":{},"kind":{})", m.bytes, quoted(m.kind)));
    });
    source_.memsets([&](const trace::MemsetRecord& m) {
      if (m.start_ns == 0) return;
      ++counts_.memsets;
      gpu_event("memset", "memset", m.device_id, m.stream_id, m.correlation_id, m.start_ns,
                m.end_ns, fmt::format(R"(,"bytes":{})", m.bytes));
    });
  }

  void host_event(const char* cat, const std::string& name, std::uint32_t pid, std::uint32_t tid,
                  std::uint64_t start, std::uint64_t end, const std::string& args) {
    host_tracks_.insert({pid, tid});
    w_.event(fmt::format(
        R"({{"ph":"X","cat":"{}","name":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{{}}}}})",
        cat, quoted(name), pid, tid, w_.ts(start), w_.dur(start, end), args));
  }

  void host_records() {
    source_.api_calls([&](const trace::ApiRecord& a) {
      if (a.start_ns == 0) return;
      ++counts_.api_calls;
      host_event("cuda_api", a.name, a.process_id, a.thread_id, a.start_ns, a.end_ns,
                 fmt::format(R"("correlation_id":{})", a.correlation_id));
      // A graph launch starts many kernels under one correlation id; the arrow goes to the first
      // of them. flowed_[i] is cleared once its "s" is written: one start per id, even if a
      // damaged trace repeats a correlation id.
      if (const auto i = launch_index(a.correlation_id); i >= 0 && flowed_[i]) {
        w_.event(fmt::format(
            R"({{"ph":"s","cat":"launch","name":"launch","id":{},"pid":{},"tid":{},"ts":{}}})",
            a.correlation_id, a.process_id, a.thread_id, w_.ts(a.start_ns)));
        flowed_[i] = false;
      }
    });
    source_.nvtx_ranges([&](const trace::NvtxRangeRecord& r) {
      if (r.start_ns == 0) return;
      ++counts_.nvtx_ranges;
      host_event("nvtx", r.name, r.process_id, r.thread_id, r.start_ns, r.end_ns,
                 fmt::format(R"("domain":{})", quoted(r.domain)));
    });
  }

  // One metadata event per track and per process, so viewers show "GPU 0 / stream 7".
  void track_names() {
    const auto name = [&](const char* what, std::int64_t pid, std::optional<std::uint32_t> tid,
                          const std::string& shown) {
      w_.event(
          tid ? fmt::format(R"({{"ph":"M","name":"{}","pid":{},"tid":{},"args":{{"name":"{}"}}}})",
                            what, pid, *tid, shown)
              : fmt::format(R"({{"ph":"M","name":"{}","pid":{},"args":{{"name":"{}"}}}})", what,
                            pid, shown));
    };
    std::set<std::uint32_t> gpus, pids;
    for (auto [device, stream] : gpu_tracks_) {
      gpus.insert(device);
      name("thread_name", kGpuPidBase + device, stream, fmt::format("stream {}", stream));
    }
    for (std::uint32_t device : gpus)
      name("process_name", kGpuPidBase + device, std::nullopt, fmt::format("GPU {}", device));
    for (auto [pid, tid] : host_tracks_) {
      pids.insert(pid);
      name("thread_name", pid, tid, fmt::format("thread {}", tid));
    }
    for (std::uint32_t pid : pids)
      name("process_name", pid, std::nullopt, fmt::format("process {}", pid));
  }

  analyze::TraceSource& source_;
  std::uint64_t origin_;
  EventWriter w_;
  ChromeTraceCounts counts_;
  std::vector<std::uint32_t> launched_;
  std::vector<bool> flowed_;  // flowed_[i]: an "f" was written for launched_[i]
  std::set<std::pair<std::uint32_t, std::uint32_t>> gpu_tracks_;   // (device, stream)
  std::set<std::pair<std::uint32_t, std::uint32_t>> host_tracks_;  // (pid, tid)
};

}  // namespace

ChromeTraceCounts write_chrome_trace(analyze::TraceSource& source, std::ostream& out) {
  return ChromeTrace(source, out).write();
}

ChromeTraceCounts export_chrome_trace(analyze::TraceSource& source,
                                      const std::filesystem::path& path) {
  // A mistyped directory is refused rather than made (write_file_atomic would create it).
  if (path.has_parent_path() && !std::filesystem::is_directory(path.parent_path()))
    throw Error(fmt::format("cannot write {}: its directory does not exist; create it first.",
                            path.string()));
  ChromeTraceCounts counts;
  write_file_atomic(path, [&](std::ostream& out) { counts = write_chrome_trace(source, out); });
  return counts;
}

}  // namespace ktune::report

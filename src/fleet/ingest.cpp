#include "ktune/fleet/ingest.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "ktune/analyze/gemm_calls.hpp"
#include "ktune/analyze/source.hpp"
#include "ktune/bench/gemm_problem.hpp"
#include "ktune/core/enum_names.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/identity.hpp"
#include "ktune/fleet/sketch.hpp"

namespace ktune::fleet {
namespace {

// Two FNV-1a 64-bit hashes with different bases: 128 bits, so a fleet's billions of runs do not
// collide by chance (this names runs; it is not a defence against forged traces).
struct Hash128 {
  std::uint64_t a = 14695981039346656037ull, b = 0x6c62272e07bb0142ull;
  void add(std::string_view s) {
    for (unsigned char c : s) {
      a = (a ^ c) * 1099511628211ull;
      b = (b ^ c) * 1099511628211ull;
      b ^= b >> 29;
    }
    a = (a ^ 0xff) * 1099511628211ull;  // field separator: ("ab","c") != ("a","bc")
  }
  std::string hex() const { return fmt::format("{:016x}{:016x}", a, b); }
};

std::string file_hash(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw Error(fmt::format("cannot read {} to name its run; check the path and permissions.",
                            file.string()));
  Hash128 h;
  std::string buf(1 << 20, '\0');
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h.add(std::string_view(buf.data(), static_cast<std::size_t>(in.gcount())));
  }
  return h.hex();
}

std::string dims(std::int32_t x, std::int32_t y, std::int32_t z) {
  return fmt::format("{},{},{}", x, y, z);
}

struct Accumulator {
  std::int64_t calls = 0, total_ns = 0, min_ns = INT64_MAX, max_ns = 0;
  QuantileSketch sketch;
};

}  // namespace

// Keyed first by name (one hash of the long demangled name per record), then by the few launch
// shapes and devices a kernel has, searched linearly.
struct RunAggregator::Impl {
  struct Shape {
    std::int32_t grid[3], block[3];
    std::uint32_t device;
    Accumulator acc;
  };
  std::unordered_map<std::string, std::vector<Shape>> by_name;
  std::uint64_t records = 0;
};

RunAggregator::RunAggregator() : impl_(std::make_unique<Impl>()) {}
RunAggregator::~RunAggregator() = default;

void RunAggregator::add(const trace::KernelRecord& k) {
  auto& shapes = impl_->by_name[k.display_name()];
  Impl::Shape* s = nullptr;
  for (auto& c : shapes)
    if (c.device == k.device_id && c.grid[0] == k.grid_x && c.grid[1] == k.grid_y &&
        c.grid[2] == k.grid_z && c.block[0] == k.block_x && c.block[1] == k.block_y &&
        c.block[2] == k.block_z) {
      s = &c;
      break;
    }
  if (!s) {
    shapes.push_back(
        {{k.grid_x, k.grid_y, k.grid_z}, {k.block_x, k.block_y, k.block_z}, k.device_id, {}});
    s = &shapes.back();
  }
  const auto d = static_cast<std::int64_t>(k.duration_ns());
  Accumulator& a = s->acc;
  ++a.calls;
  a.total_ns += d;
  a.min_ns = std::min(a.min_ns, d);
  a.max_ns = std::max(a.max_ns, d);
  a.sketch.add(static_cast<double>(d));
  ++impl_->records;
}

namespace {
constexpr EnumName<store::PushOutcome> kPushOutcomeNames[] = {
    {store::PushOutcome::added, "added"},
    {store::PushOutcome::replaced, "replaced"},
    {store::PushOutcome::already_ingested, "already ingested"},
};
}  // namespace

const char* to_string(store::PushOutcome o) {
  return name_of(kPushOutcomeNames, o);
}

Tags parse_tags(const std::vector<std::string>& items) {
  Tags t;
  for (const auto& text : items) {
    std::size_t pos = 0;
    while (pos <= text.size()) {
      auto end = text.find(',', pos);
      if (end == std::string::npos) end = text.size();
      const std::string item = text.substr(pos, end - pos);
      pos = end + 1;
      if (item.empty()) continue;
      const auto eq = item.find('=');
      if (eq == std::string::npos || eq == 0)
        throw Error(fmt::format(
            "--tag item '{}' is not KEY=VALUE; write e.g. --tag job=train-42,build=abc123,rank=0.",
            item));
      const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
      t.all[key] = value;
      if (key == "job") t.job = value;
      if (key == "build") t.build = value;
      if (key == "rank") t.rank = value;
    }
  }
  return t;
}

std::string run_identity(const trace::TraceMetadata& m, const std::filesystem::path& file) {
  const std::string host = m.identity ? m.identity->host.hostname : "";
  if (m.pid == 0 && m.started_at.empty()) {
    if (file.empty())
      throw Error(
          "a trace without pid and started_at needs its file to be named (ingest it from a "
          "file).");
    return "f" + file_hash(file);
  }
  Hash128 h;
  h.add(host);
  h.add(std::to_string(m.pid));
  h.add(std::to_string(m.ppid));
  h.add(m.started_at);
  for (const auto& arg : m.command_line) h.add(arg);
  // Each periodic window of a process is a trace, and a run, of its own.
  if (m.window.period_s > 0) h.add("window " + std::to_string(m.window.index));
  return "m" + h.hex();
}

RunAggregates RunAggregator::finish(const trace::TraceMetadata& m, const std::string& location,
                                    const Tags& tags, const std::filesystem::path& file) const {
  RunAggregates out;
  store::FleetRun& run = out.run;
  run.run_id = run_identity(m, file);
  run.location = location;
  run.host = m.identity ? m.identity->host.hostname : "";
  run.pid = m.pid;
  run.started_at = m.started_at;
  run.job = tags.job;
  run.build = tags.build;
  run.rank = tags.rank;
  run.tags = tags.all;
  run.complete = m.complete;
  out.kernel_records = impl_->records;
  run.launches = static_cast<std::int64_t>(out.kernel_records);

  std::string driver, toolkit;
  if (m.identity) {
    driver = m.identity->software.driver_version;
    toolkit = m.identity->software.nvrtc_major ? m.identity->software.toolkit() : "";
  }
  // Records are kept per device ordinal, rows per GPU model (the store's key): one process on two
  // GPUs of one model gives one row of both, not two rows of one key.
  std::map<std::tuple<std::string, std::string, std::string, std::string, std::string>, Accumulator>
      rows;
  for (const auto& [name, shapes] : impl_->by_name)
    for (const auto& s : shapes) {
      std::string gpu = "unknown", arch = "unknown";
      if (m.identity)
        for (const auto& d : m.identity->devices)
          if (d.ordinal == static_cast<int>(s.device)) {
            gpu = d.name;
            arch = d.arch();
          }
      Accumulator& a = rows[{name, dims(s.grid[0], s.grid[1], s.grid[2]),
                             dims(s.block[0], s.block[1], s.block[2]), gpu, arch}];
      a.calls += s.acc.calls;
      a.total_ns += s.acc.total_ns;
      a.min_ns = std::min(a.min_ns, s.acc.min_ns);
      a.max_ns = std::max(a.max_ns, s.acc.max_ns);
      a.sketch.merge(s.acc.sketch);
    }
  for (auto& [key, acc] : rows) {
    store::FleetAggregate a;
    std::tie(a.kernel, a.grid, a.block, a.gpu, a.arch) = key;
    a.driver = driver;
    a.toolkit = toolkit;
    a.calls = acc.calls;
    a.total_ns = acc.total_ns;
    a.min_ns = acc.min_ns;
    a.max_ns = acc.max_ns;
    a.sketch = acc.sketch.to_hex();
    out.aggregates.push_back(std::move(a));
  }
  return out;
}

std::vector<store::FleetGemm> gemm_rows(const std::filesystem::path& trace,
                                        const trace::TraceMetadata& m) {
  const auto& kinds = m.records;
  if (std::find(kinds.begin(), kinds.end(), "gemm_call") == kinds.end()) return {};
  analyze::KtraceSource source(trace);
  const analyze::GemmCalls calls = analyze::read_gemm_calls(source);
  std::vector<store::FleetGemm> out;
  for (const analyze::GemmShape& s : calls.shapes) {
    if (!s.tunable) continue;  // no cache key: nothing the queue could tune
    store::FleetGemm g;
    g.op = bench::gemm_cache_op(*s.tunable);
    g.dtype = bench::gemm_cache_dtype(*s.tunable);
    g.shape = bench::gemm_cache_shape(*s.tunable);
    g.problem = *s.tunable;
    // A call names no device: the process's first GPU stands for its GEMMs.
    g.gpu = g.arch = "unknown";
    if (m.identity && !m.identity->devices.empty()) {
      g.gpu = m.identity->devices.front().name;
      g.arch = m.identity->devices.front().arch();
    }
    if (m.identity) {
      g.driver = m.identity->software.driver_version;
      g.toolkit = m.identity->software.nvrtc_major ? m.identity->software.toolkit() : "";
    }
    g.calls = static_cast<std::int64_t>(s.problem.calls);
    g.gpu_ns = s.gpu_ns;
    out.push_back(std::move(g));
  }
  return out;
}

namespace {

using Clock = std::chrono::steady_clock;

RunAggregates read_file(const std::filesystem::path& path, const Tags& tags, IngestResult& out) {
  const auto t0 = Clock::now();
  const auto source = analyze::open_trace(path);  // a .ktrace or a PyTorch profiler trace
  const trace::KtraceReader& reader = source->reader();
  RunAggregator aggregator;
  reader.kernels([&](const trace::KernelRecord& k) { aggregator.add(k); },
                 trace::VisitOrder::stored, trace::KernelColumns::launch);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::error_code ec;
  const auto absolute = std::filesystem::absolute(path, ec);
  RunAggregates r = aggregator.finish(
      reader.metadata(), fmt::format("{}:{}", host, (ec ? path : absolute).string()), tags, path);
  r.gemms = gemm_rows(path, reader.metadata());
  out.path = path.string();
  out.run_id = r.run.run_id;
  out.kernel_records = r.kernel_records;
  out.aggregates = r.aggregates.size();
  out.gemms = r.gemms.size();
  out.read_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

void push(store::FleetStore& fleet, const RunAggregates& r, IngestResult& out) {
  const auto t0 = Clock::now();
  out.outcome = fleet.push_run(r.run, r.aggregates, r.gemms);
  out.push_s = std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

IngestResult ingest_file(store::FleetStore& fleet, const std::filesystem::path& path,
                         const Tags& tags) {
  IngestResult out;
  const RunAggregates r = read_file(path, tags, out);
  push(fleet, r, out);
  return out;
}

std::vector<IngestResult> ingest_files(store::FleetStore& fleet,
                                       const std::vector<std::filesystem::path>& paths,
                                       const Tags& tags, unsigned threads,
                                       const std::function<void(const IngestResult&)>& done) {
  std::vector<IngestResult> results(paths.size());
  std::atomic<std::size_t> next{0};
  std::mutex store_mutex;  // one store connection: pushes take turns
  auto work = [&] {
    for (std::size_t i; (i = next++) < paths.size();) {
      IngestResult& out = results[i];
      std::optional<RunAggregates> r;
      try {
        r = read_file(paths[i], tags, out);
      } catch (const std::exception& e) {
        out.error = e.what();
      }
      std::lock_guard lock(store_mutex);
      if (r) {
        try {
          push(fleet, *r, out);
        } catch (const std::exception& e) {
          out.error = e.what();
        }
      }
      out.path = paths[i].string();
      if (done) done(out);
    }
  };
  std::vector<std::thread> pool;
  const unsigned n = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(paths.size())));
  for (unsigned t = 1; t < n; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return results;
}

}  // namespace ktune::fleet

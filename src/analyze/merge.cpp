#include "ktune/analyze/merge.hpp"

#include <algorithm>
#include <map>

#include "ktune/core/error.hpp"

namespace ktune::analyze {
namespace {

// CUPTI's "none" for an id: a context synchronization names no stream (and no event). It is no id
// a rank uses, so it is neither counted nor shifted (once it overflowed the shift, and every
// trace with a context synchronization, the repository's own fixture included, was refused).
constexpr std::uint32_t kNoId = UINT32_MAX;

std::uint32_t shifted(std::uint32_t id, std::uint32_t by) {
  return id == kNoId ? id : id + by;
}
std::uint32_t max_id(std::uint32_t a, std::uint32_t id) {
  return id == kNoId ? a : std::max(a, id);
}

}  // namespace

struct MergedSource::Rank {
  std::unique_ptr<TraceSource> source;
  std::map<std::uint32_t, std::uint32_t> device;  // rank's device id -> merged id
  std::uint32_t correlation = 0, context = 0, stream = 0, process = 0;
  std::uint64_t gemm_call = 0;  // GEMM call rows of the ranks before

  std::uint32_t dev(std::uint32_t d) const {
    const auto it = device.find(d);
    return it == device.end() ? d : it->second;
  }
  std::uint32_t corr(std::uint32_t c) const { return c == 0 ? 0 : c + correlation; }
  template <typename Record>
  Record gpu_side(Record r) const {
    r.device_id = dev(r.device_id);
    r.context_id = shifted(r.context_id, context);
    r.stream_id = shifted(r.stream_id, stream);
    r.correlation_id = corr(r.correlation_id);
    return r;
  }
};

namespace {

// The largest id of each kind one rank uses, and every device id it mentions.
struct Used {
  std::vector<std::uint32_t> devices;
  std::uint32_t correlation = 0, context = 0, stream = 0, process = 0;
  std::uint64_t gemm_calls = 0;

  template <typename Record>
  void gpu_side(const Record& r) {
    devices.push_back(r.device_id);
    correlation = std::max(correlation, r.correlation_id);
    context = max_id(context, r.context_id);
    stream = max_id(stream, r.stream_id);
  }
};

Used scan(TraceSource& s) {
  Used u;
  s.kernels([&](const trace::KernelRecord& r) { u.gpu_side(r); });
  s.memcpys([&](const trace::MemcpyRecord& r) { u.gpu_side(r); });
  s.memsets([&](const trace::MemsetRecord& r) { u.gpu_side(r); });
  s.api_calls([&](const trace::ApiRecord& r) {
    u.correlation = std::max(u.correlation, r.correlation_id);
    u.process = std::max(u.process, r.process_id);
  });
  s.syncs([&](const trace::SyncRecord& r) {
    u.correlation = std::max(u.correlation, r.correlation_id);
    u.context = max_id(u.context, r.context_id);
    u.stream = max_id(u.stream, r.stream_id);
  });
  s.nvtx_ranges(
      [&](const trace::NvtxRangeRecord& r) { u.process = std::max(u.process, r.process_id); });
  s.counters([&](const trace::CounterRecord& r) {
    u.devices.push_back(r.device_id);
    u.correlation = std::max(u.correlation, r.correlation_id);
  });
  s.gemm_events(
      [&](const trace::GemmEventRecord& r) { u.process = std::max(u.process, r.process_id); });
  s.gemm_calls([&](const trace::GemmCallRecord&) { ++u.gemm_calls; });
  if (const auto& id = s.metadata().identity)
    for (const auto& d : id->devices) u.devices.push_back(std::uint32_t(d.ordinal));
  std::sort(u.devices.begin(), u.devices.end());
  u.devices.erase(std::unique(u.devices.begin(), u.devices.end()), u.devices.end());
  return u;
}

// Adds one to an id maximum without wrapping: the next rank's ids start after it.
std::uint32_t after(std::uint32_t base, std::uint32_t used) {
  const std::uint64_t next = std::uint64_t(base) + used + 1;
  if (next > UINT32_MAX)
    throw Error(
        "the ranks given to --merge use more ids than one merged trace can hold; report fewer "
        "ranks at once.");
  return std::uint32_t(next);
}

}  // namespace

MergedSource::MergedSource(std::vector<std::unique_ptr<TraceSource>> ranks) {
  metadata_.complete = true;
  std::uint32_t devices = 0;
  // The first free id of each kind.
  std::uint32_t correlation = 0, context = 0, stream = 0, process = 0;
  std::uint64_t gemm_call = 0;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    Rank r;
    r.source = std::move(ranks[i]);
    r.correlation = correlation;
    r.context = context;
    r.stream = stream;
    r.process = process;
    r.gemm_call = gemm_call;
    const Used u = scan(*r.source);
    for (std::uint32_t d : u.devices) r.device[d] = devices++;

    const trace::TraceMetadata& m = r.source->metadata();
    if (i == 0) {
      metadata_ = m;
      metadata_.command_line.clear();
      metadata_.records.clear();
      metadata_.complete = true;
      metadata_.dropped_records = metadata_.capped_records = 0;
      if (metadata_.identity) metadata_.identity->devices.clear();
    }
    if (m.identity) {
      if (!metadata_.identity) metadata_.identity = Identity{};
      for (DeviceIdentity d : m.identity->devices) {
        d.ordinal = int(r.dev(std::uint32_t(d.ordinal)));
        metadata_.identity->devices.push_back(d);
      }
    }
    if (!metadata_.command_line.empty()) metadata_.command_line.push_back("+");
    metadata_.command_line.insert(metadata_.command_line.end(), m.command_line.begin(),
                                  m.command_line.end());
    for (const std::string& kind : m.records)
      if (std::find(metadata_.records.begin(), metadata_.records.end(), kind) ==
          metadata_.records.end())
        metadata_.records.push_back(kind);
    metadata_.complete = metadata_.complete && m.complete;
    metadata_.dropped_records += m.dropped_records;
    metadata_.capped_records += m.capped_records;

    correlation = after(r.correlation, u.correlation);
    context = after(r.context, u.context);
    stream = after(r.stream, u.stream);
    process = after(r.process, u.process);
    gemm_call = r.gemm_call + u.gemm_calls;
    ranks_.push_back(std::move(r));
  }
}

MergedSource::~MergedSource() = default;

void MergedSource::kernels(const Visitor<trace::KernelRecord>& visit) {
  for (const Rank& r : ranks_) r.source->kernels([&](const auto& k) { visit(r.gpu_side(k)); });
}
void MergedSource::memcpys(const Visitor<trace::MemcpyRecord>& visit) {
  for (const Rank& r : ranks_) r.source->memcpys([&](const auto& m) { visit(r.gpu_side(m)); });
}
void MergedSource::memsets(const Visitor<trace::MemsetRecord>& visit) {
  for (const Rank& r : ranks_) r.source->memsets([&](const auto& m) { visit(r.gpu_side(m)); });
}

void MergedSource::api_calls(const Visitor<trace::ApiRecord>& visit) {
  for (const Rank& r : ranks_)
    r.source->api_calls([&](trace::ApiRecord a) {
      a.correlation_id = r.corr(a.correlation_id);
      a.process_id += r.process;
      visit(a);
    });
}

void MergedSource::syncs(const Visitor<trace::SyncRecord>& visit) {
  for (const Rank& r : ranks_)
    r.source->syncs([&](trace::SyncRecord s) {
      s.context_id = shifted(s.context_id, r.context);
      s.stream_id = shifted(s.stream_id, r.stream);
      s.correlation_id = r.corr(s.correlation_id);
      visit(s);
    });
}

void MergedSource::nvtx_ranges(const Visitor<trace::NvtxRangeRecord>& visit) {
  for (const Rank& r : ranks_)
    r.source->nvtx_ranges([&](trace::NvtxRangeRecord n) {
      n.process_id += r.process;
      visit(n);
    });
}

void MergedSource::counters(const Visitor<trace::CounterRecord>& visit) {
  for (const Rank& r : ranks_)
    r.source->counters([&](trace::CounterRecord c) {
      c.device_id = r.dev(c.device_id);
      c.correlation_id = r.corr(c.correlation_id);
      visit(c);
    });
}

void MergedSource::gemm_calls(const Visitor<trace::GemmCallRecord>& visit) {
  for (const Rank& r : ranks_) r.source->gemm_calls(visit);
}

void MergedSource::gemm_events(const Visitor<trace::GemmEventRecord>& visit) {
  for (const Rank& r : ranks_)
    r.source->gemm_events([&](trace::GemmEventRecord e) {
      e.process_id += r.process;
      e.call += r.gemm_call;
      visit(e);
    });
}

std::optional<std::uint64_t> MergedSource::origin_ns() {
  std::optional<std::uint64_t> origin;
  for (const Rank& r : ranks_)
    if (const auto o = r.source->origin_ns(); o && (!origin || *o < *origin)) origin = o;
  return origin;
}

trace::SkippedRecords MergedSource::skipped() const {
  trace::SkippedRecords all;
  for (const Rank& r : ranks_) {
    const trace::SkippedRecords s = r.source->skipped();
    if (all.first.empty()) all.first = s.first;
    all.count += s.count;
  }
  return all;
}

}  // namespace ktune::analyze

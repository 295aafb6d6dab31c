#include "ktune/analyze/merge.hpp"

#include <algorithm>
#include <map>

namespace ktune::analyze {
namespace {

// Offsets that make one rank's process-local ids unique in the merged trace.
struct Shift {
  std::map<std::uint32_t, std::uint32_t> device;  // rank's device id -> merged id
  std::uint32_t correlation = 0, context = 0, stream = 0, process = 0;
  std::uint32_t dev(std::uint32_t d) const {
    const auto it = device.find(d);
    return it == device.end() ? d : it->second;
  }
};

template <typename Record>
void shift_common(Record& r, const Shift& s) {
  r.device_id = s.dev(r.device_id);
  r.context_id += s.context;
  r.stream_id += s.stream;
  if (r.correlation_id != 0) r.correlation_id += s.correlation;
}

template <typename Record>
void append(std::vector<Record>& to, std::vector<Record>& from) {
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

}  // namespace

trace::Trace merge_ranks(std::vector<trace::Trace> ranks) {
  trace::Trace out;
  if (ranks.empty()) return out;
  out.metadata = ranks.front().metadata;
  out.metadata.complete = true;
  out.metadata.dropped_records = out.metadata.capped_records = 0;
  out.metadata.command_line.clear();
  if (out.metadata.identity) out.metadata.identity->devices.clear();

  Shift next;                        // the first free id of each kind (its device map unused)
  std::uint32_t merged_devices = 0;  // devices of the ranks merged so far
  for (trace::Trace& t : ranks) {
    Shift s = next;
    // Devices: every id the rank mentions, in order, gets the next merged id.
    std::vector<std::uint32_t> ids;
    const auto note = [&](std::uint32_t d) { ids.push_back(d); };
    for (const auto& k : t.kernels) note(k.device_id);
    for (const auto& m : t.memcpys) note(m.device_id);
    for (const auto& m : t.memsets) note(m.device_id);
    for (const auto& c : t.counters) note(c.device_id);
    if (t.metadata.identity)
      for (const auto& d : t.metadata.identity->devices) note(std::uint32_t(d.ordinal));
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    for (std::uint32_t id : ids) s.device[id] = merged_devices++;

    std::uint32_t max_corr = 0, max_ctx = 0, max_stream = 0, max_pid = 0;
    // Kernels, copies and memsets: the GPU-side records, with the same ids to shift.
    const auto gpu_side = [&](auto& records) {
      for (auto& r : records) {
        max_corr = std::max(max_corr, r.correlation_id);
        max_ctx = std::max(max_ctx, r.context_id);
        max_stream = std::max(max_stream, r.stream_id);
        shift_common(r, s);
      }
    };
    gpu_side(t.kernels);
    gpu_side(t.memcpys);
    gpu_side(t.memsets);
    for (auto& a : t.api_calls) {
      max_corr = std::max(max_corr, a.correlation_id);
      max_pid = std::max(max_pid, a.process_id);
      if (a.correlation_id != 0) a.correlation_id += s.correlation;
      a.process_id += s.process;
    }
    for (auto& y : t.syncs) {
      max_corr = std::max(max_corr, y.correlation_id);
      max_ctx = std::max(max_ctx, y.context_id);
      max_stream = std::max(max_stream, y.stream_id);
      y.context_id += s.context;
      y.stream_id += s.stream;
      if (y.correlation_id != 0) y.correlation_id += s.correlation;
    }
    for (auto& n : t.nvtx_ranges) {
      max_pid = std::max(max_pid, n.process_id);
      n.process_id += s.process;
    }
    for (auto& o : t.overheads)
      if (o.correlation_id != 0) o.correlation_id += s.correlation;
    for (auto& d : t.drops) {
      d.context_id += s.context;
      d.stream_id += s.stream;
    }
    for (auto& c : t.counters) {
      max_corr = std::max(max_corr, c.correlation_id);
      c.device_id = s.dev(c.device_id);
      if (c.correlation_id != 0) c.correlation_id += s.correlation;
    }

    if (t.metadata.identity) {
      if (!out.metadata.identity) out.metadata.identity = Identity{};
      for (DeviceIdentity d : t.metadata.identity->devices) {
        d.ordinal = int(s.dev(std::uint32_t(d.ordinal)));
        out.metadata.identity->devices.push_back(d);
      }
    }
    if (!out.metadata.command_line.empty()) out.metadata.command_line.push_back("+");
    append(out.metadata.command_line, t.metadata.command_line);
    out.metadata.complete = out.metadata.complete && t.metadata.complete;
    out.metadata.dropped_records += t.metadata.dropped_records;
    out.metadata.capped_records += t.metadata.capped_records;

    append(out.kernels, t.kernels);
    append(out.memcpys, t.memcpys);
    append(out.memsets, t.memsets);
    append(out.api_calls, t.api_calls);
    append(out.syncs, t.syncs);
    append(out.nvtx_ranges, t.nvtx_ranges);
    append(out.overheads, t.overheads);
    append(out.drops, t.drops);
    append(out.counters, t.counters);

    next.correlation = s.correlation + max_corr + 1;
    next.context = s.context + max_ctx + 1;
    next.stream = s.stream + max_stream + 1;
    next.process = s.process + max_pid + 1;
  }
  return out;
}

}  // namespace ktune::analyze

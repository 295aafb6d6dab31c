#include "ktune/analyze/analysis.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <queue>
#include <unordered_map>

#include <fmt/format.h>

#include "ktune/core/enum_names.hpp"
#include "ktune/core/error.hpp"

namespace ktune::analyze {

LaunchShape launch_shape(const trace::KernelRecord& k) {
  return {{k.grid_x, k.grid_y, k.grid_z},
          {k.block_x, k.block_y, k.block_z},
          // Summed in 64 bits and clamped: a damaged trace may hold any two int32 values.
          static_cast<std::int32_t>(std::clamp<std::int64_t>(
              std::int64_t{k.static_shared_bytes} + k.dynamic_shared_bytes,
              std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max())),
          k.registers_per_thread};
}

ApiRole api_role(std::string_view name) {
  auto has = [&](std::string_view part) { return name.find(part) != std::string_view::npos; };
  // Stream-ordered waits (cudaStreamWaitEvent) stall the GPU, not the host, so they are not here.
  if (has("Synchronize")) return ApiRole::synchronize;
  if (has("Launch")) return ApiRole::launch;  // kernels, cooperative kernels, graphs
  if (has("Memcpy") || has("Memset") || has("memcpy") || has("memset")) return ApiRole::copy;
  return ApiRole::other;
}

GroupBy parse_group_by(const std::string& text) {
  if (text == "name") return GroupBy::name;
  if (text == "name+launch") return GroupBy::name_and_launch;
  if (text == "op") return GroupBy::op;
  throw Error(fmt::format(
      "--by '{}' is not a grouping; use --by name, --by name+launch or --by op.", text));
}

namespace {
constexpr EnumName<GroupBy> kGroupByNames[] = {
    {GroupBy::name, "name"},
    {GroupBy::name_and_launch, "name+launch"},
    {GroupBy::op, "op"},
};
}  // namespace

const char* to_string(GroupBy by) {
  return name_of(kGroupByNames, by);
}

namespace {
constexpr EnumName<GapCause> kGapCauseNames[] = {
    {GapCause::launch_bound, "launch_bound"},
    {GapCause::synchronization, "synchronization"},
    {GapCause::copies, "copies"},
    {GapCause::unattributed, "unattributed"},
};
}  // namespace

const char* to_string(GapCause cause) {
  return name_of(kGapCauseNames, cause);
}

namespace {
// What emit_nvtx appends to an op's name, in the order it appends them.
constexpr std::string_view kTorchDecorations[] = {
    ", seq = ", ", op_id = ", ", sizes = ", ", input_op_ids = "};
}  // namespace

bool is_op_range(const trace::NvtxRangeRecord& r) {
  if (r.domain == kTorchOpDomain) return true;
  return r.domain.empty() && (r.name.find(kTorchDecorations[0]) != std::string::npos ||
                              r.name.find(kTorchDecorations[1]) != std::string::npos);
}

std::string range_name(const trace::NvtxRangeRecord& r) {
  if (r.domain == kTorchOpDomain) return r.name;
  std::string name = r.name;
  if (r.domain.empty()) {
    std::size_t cut = std::string::npos;
    for (std::string_view d : kTorchDecorations) cut = std::min(cut, name.find(d));
    if (cut != std::string::npos) name.resize(cut);
    return name;
  }
  return r.domain + ":" + name;
}

double DeviceUtilization::busy_fraction() const {
  return window_ns() > 0 ? static_cast<double>(busy_ns) / static_cast<double>(window_ns()) : 0.0;
}

namespace {

// Totals of many durations saturate instead of overflowing: a damaged trace may hold kernels that
// each run for centuries, and signed overflow would be undefined behaviour, not a wrong number.
void add_to(std::int64_t& total, std::int64_t d) {
  if (__builtin_add_overflow(total, d, &total))
    total =
        d > 0 ? std::numeric_limits<std::int64_t>::max() : std::numeric_limits<std::int64_t>::min();
}

}  // namespace

std::int64_t Analysis::busy_ns() const {
  std::int64_t sum = 0;
  for (const auto& d : devices) add_to(sum, d.busy_ns);
  return sum;
}

std::int64_t Analysis::window_ns() const {
  std::int64_t sum = 0;
  for (const auto& d : devices) add_to(sum, d.window_ns());
  return sum;
}

namespace {

constexpr std::size_t kMaxShapesCounted = 100;
// --by op: the row of the kernels no PyTorch op launched (or all of them, in a trace without the
// op ranges of ktune profile --ops).
constexpr const char* kNoOp = "(no PyTorch op; profile with --ops)";
constexpr std::int64_t kFirstBinNs = 1000;

// Times are stored unsigned by the tracer; differences need a sign. No clock reaches 2^63 ns (292
// years), so larger values, which only a damaged trace holds, are clamped: every time is then in
// [0, INT64_MAX] and every difference of two times fits in an int64.
std::int64_t ns(std::uint64_t t) {
  return static_cast<std::int64_t>(
      std::min<std::uint64_t>(t, std::numeric_limits<std::int64_t>::max()));
}

struct Interval {
  std::int64_t start_ns, end_ns;
};

// Sorts and merges, so an overlap query is one binary search.
std::vector<Interval> merge(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.start_ns < b.start_ns; });
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.start_ns <= out.back().end_ns)
      out.back().end_ns = std::max(out.back().end_ns, i.end_ns);
    else
      out.push_back(i);
  }
  return out;
}

// The parts of [a, b) that merged intervals cover, clipped to it, in time order.
std::vector<Interval> covered(const std::vector<Interval>& merged, std::int64_t a, std::int64_t b) {
  std::vector<Interval> out;
  auto it = std::upper_bound(merged.begin(), merged.end(), a,
                             [](std::int64_t t, const Interval& i) { return t < i.end_ns; });
  for (; it != merged.end() && it->start_ns < b; ++it) {
    const Interval c{std::max(a, it->start_ns), std::min(b, it->end_ns)};
    if (c.start_ns < c.end_ns) out.push_back(c);
  }
  return out;
}

// One stretch of a gap and the cause it is credited to.
struct GapPiece {
  GapCause cause;
  std::int64_t start_ns, end_ns;
};

// The host side of a kernel or copy, found by correlation id.
struct Launch {
  std::uint32_t correlation_id;
  std::int64_t start_ns, end_ns;
  int nvtx_group;  // innermost NVTX range around the call, -1: none
  int op;          // innermost PyTorch op around the call (Analyzer::op_names_), -1: none
  // The cuBLASLt GEMM call (GemmTimer's event) this launch followed on its thread, -1: none.
  std::int64_t gemm_event = -1;
};

struct ThreadKey {
  std::uint32_t pid;
  std::uint64_t tid;
  bool operator<(const ThreadKey& o) const { return pid != o.pid ? pid < o.pid : tid < o.tid; }
};

// Finds the innermost NVTX range open at each API call of one thread; calls arrive in time order.
struct NvtxThread {
  struct Range {
    std::int64_t start_ns, end_ns;
    int group;
  };
  std::vector<Range> ranges;  // by start; an enclosing range before a range it encloses
  std::size_t next = 0;
  std::vector<Range> open;

  int innermost(std::int64_t t) {
    while (next < ranges.size() && ranges[next].start_ns <= t) open.push_back(ranges[next++]);
    while (!open.empty() && open.back().end_ns < t) open.pop_back();
    return open.empty() ? -1 : open.back().group;
  }
};

struct GroupState {
  KernelGroup group;
  std::unordered_map<int, std::size_t> ops;  // op index -> kernels it launched
  std::vector<double> durations_ns;
  std::vector<LaunchShape> shapes;  // distinct, up to kMaxShapesCounted
};

// Adds [a, b) to fixed-count bins that double their width when time runs past the last bin.
class Timeline {
 public:
  Timeline(std::int64_t origin, std::size_t bins)
      : origin_(origin),
        busy_(bins, 0),
        idle_(std::size(kGapCauses), std::vector<std::int64_t>(bins, 0)) {}

  void add_busy(std::int64_t a, std::int64_t b) { add(busy_, a, b); }
  void add_idle(GapCause cause, std::int64_t a, std::int64_t b) {
    add(idle_[static_cast<int>(cause)], a, b);
  }
  void store(DeviceUtilization& d) {
    d.bin_ns = bin_ns_;
    d.bin_busy_ns = std::move(busy_);
    d.bin_idle_ns = std::move(idle_);
  }

 private:
  // Times are ns() values, so b - origin_ fits; the bins' span is computed in 128 bits because
  // bin_ns_ * bins passes INT64_MAX for a trace that ends near it (that overflow once made this
  // loop widen forever).
  void add(std::vector<std::int64_t>& bins, std::int64_t a, std::int64_t b) {
    if (bins.empty()) return;
    a = std::max(a, origin_);
    if (a >= b) return;
    const auto span = [&](std::size_t n) {
      return static_cast<__int128>(bin_ns_) * static_cast<__int128>(n);
    };
    while (span(bins.size()) < b - origin_) widen();
    for (std::int64_t t = a; t < b;) {
      const auto index =
          std::min(static_cast<std::size_t>((t - origin_) / bin_ns_), bins.size() - 1);
      const __int128 bin_end = origin_ + span(index + 1);
      const std::int64_t upto = bin_end < b ? static_cast<std::int64_t>(bin_end) : b;
      bins[index] += upto - t;
      t = upto;
    }
  }
  void widen() {
    auto halve = [](std::vector<std::int64_t>& v) {
      const std::size_t n = v.size();
      for (std::size_t i = 0; i < n; ++i)
        v[i] = (2 * i < n ? v[2 * i] : 0) + (2 * i + 1 < n ? v[2 * i + 1] : 0);
    };
    halve(busy_);
    for (auto& v : idle_) halve(v);
    bin_ns_ = bin_ns_ > std::numeric_limits<std::int64_t>::max() / 2
                  ? std::numeric_limits<std::int64_t>::max()
                  : 2 * bin_ns_;
  }
  std::int64_t origin_;
  std::int64_t bin_ns_ = kFirstBinNs;
  std::vector<std::int64_t> busy_;
  std::vector<std::vector<std::int64_t>> idle_;
};

struct DeviceState {
  DeviceUtilization util;
  std::int64_t busy_start = 0, busy_end = 0;
  std::int64_t last_start = INT64_MIN;  // kernels arrive in start order on each device
  Timeline timeline;
  std::vector<Interval> copies;  // merged
  // The storm being watched: consecutive kernels shorter than their launch overhead.
  Storm run;
  std::unordered_map<int, std::size_t> run_names;  // group index -> count

  DeviceState(int device, std::int64_t first_start, std::size_t bins)
      : timeline(first_start, bins) {
    util.device = device;
    util.window_start_ns = first_start;
    busy_start = busy_end = first_start;
    for (GapCause c : kGapCauses) util.idle_by_cause.push_back({c, 0, 0});
  }
};

class Analyzer {
 public:
  Analyzer(TraceSource& source, const AnalysisOptions& options) : src_(source), opt_(options) {
    out_.group_by = options.group_by;
    out_.backlog_share = options.backlog_share;
    for (GapCause c : kGapCauses) out_.idle_by_cause.push_back({c, 0, 0});
  }

  Analysis run() {
    out_.metadata = src_.metadata();
    out_.origin_ns = ns(src_.origin_ns().value_or(0));
    out_.notes = src_.notes();
    read_nvtx();
    read_gemm_events();
    read_api_calls();
    read_syncs();
    read_copies();
    src_.kernels([this](const trace::KernelRecord& k) { on_kernel(k); });
    finish();
    out_.gemm = gemm_.calls(src_);
    out_.skipped = src_.skipped();
    return std::move(out_);
  }

 private:
  void read_nvtx() {
    std::unordered_map<std::string, int> index;
    std::unordered_map<std::string, int> ops;
    std::vector<std::vector<double>> durations;
    src_.nvtx_ranges([&](const trace::NvtxRangeRecord& r) {
      std::string name = range_name(r);
      if (is_op_range(r)) {
        auto [op, fresh] = ops.emplace(name, static_cast<int>(op_names_.size()));
        if (fresh) op_names_.push_back(name);
        op_threads_[{r.process_id, r.thread_id}].ranges.push_back(
            {ns(r.start_ns), ns(r.end_ns), op->second});
      }
      auto [it, fresh] = index.emplace(std::move(name), static_cast<int>(out_.nvtx.size()));
      if (fresh) {
        out_.nvtx.push_back({it->first});
        durations.emplace_back();
      }
      const std::int64_t d = ns(r.end_ns) - ns(r.start_ns);
      add_to(out_.nvtx[it->second].total_ns, std::max<std::int64_t>(0, d));
      durations[it->second].push_back(static_cast<double>(std::max<std::int64_t>(0, d)));
      nvtx_threads_[{r.process_id, r.thread_id}].ranges.push_back(
          {ns(r.start_ns), ns(r.end_ns), it->second});
    });
    for (std::size_t i = 0; i < out_.nvtx.size(); ++i)
      out_.nvtx[i].duration_ns = summarize(durations[i]);
    // Ops that start together (a profiler trace's microseconds): the longer one encloses.
    for (auto& [key, thread] : op_threads_)
      std::stable_sort(thread.ranges.begin(), thread.ranges.end(), [](auto& a, auto& b) {
        return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
      });
  }

  // The GEMM calls, for read_api_calls to tie launches to.
  void read_gemm_events() {
    src_.gemm_events([&](const trace::GemmEventRecord& e) { gemm_.add_event(e); });
  }

  void read_api_calls() {
    struct Function {
      ApiRole role;
      std::size_t group;
    };
    std::unordered_map<std::string, Function> functions;
    std::vector<std::vector<double>> durations;
    std::vector<Interval> sync;
    std::int64_t api_ns = 0;
    src_.api_calls([&](const trace::ApiRecord& a) {
      ++out_.api_call_count;
      auto it = functions.find(a.name);
      if (it == functions.end()) {
        it = functions.emplace(a.name, Function{api_role(a.name), out_.api.size()}).first;
        out_.api.push_back({a.name, a.api});
        durations.emplace_back();
      }
      const ApiRole role = it->second.role;
      const std::int64_t d = std::max<std::int64_t>(0, ns(a.end_ns) - ns(a.start_ns));
      add_to(out_.api[it->second.group].total_ns, d);
      add_to(api_ns, d);
      durations[it->second.group].push_back(static_cast<double>(d));
      if (role == ApiRole::synchronize) sync.push_back({ns(a.start_ns), ns(a.end_ns)});
      if ((role == ApiRole::launch || role == ApiRole::copy) && a.correlation_id != 0) {
        int nvtx = -1, op = -1;
        if (auto t = nvtx_threads_.find({a.process_id, a.thread_id}); t != nvtx_threads_.end())
          nvtx = t->second.innermost(ns(a.start_ns));
        if (auto t = op_threads_.find({a.process_id, a.thread_id}); t != op_threads_.end())
          op = t->second.innermost(ns(a.start_ns));
        launches_.push_back({a.correlation_id, ns(a.start_ns), ns(a.end_ns), nvtx, op,
                             role == ApiRole::launch && !gemm_.empty()
                                 ? gemm_.on_launch(a.process_id, a.thread_id, a.start_ns)
                                 : -1});
      }
    });
    // Correlation ids grow with call order in CUPTI, so this is usually already sorted.
    auto by_id = [](const Launch& x, const Launch& y) {
      return x.correlation_id < y.correlation_id;
    };
    if (!std::is_sorted(launches_.begin(), launches_.end(), by_id))
      std::sort(launches_.begin(), launches_.end(), by_id);
    sync_ = std::move(sync);
    for (std::size_t i = 0; i < out_.api.size(); ++i) {
      out_.api[i].duration_ns = summarize(durations[i]);
      out_.api[i].share =
          api_ns > 0 ? static_cast<double>(out_.api[i].total_ns) / static_cast<double>(api_ns)
                     : 0.0;
    }
    std::stable_sort(out_.api.begin(), out_.api.end(),
                     [](auto& a, auto& b) { return a.total_ns > b.total_ns; });
  }

  void read_syncs() {
    src_.syncs([&](const trace::SyncRecord& s) {
      if (s.type != "stream_wait_event") sync_.push_back({ns(s.start_ns), ns(s.end_ns)});
    });
    sync_ = merge(std::move(sync_));
  }

  void read_copies() {
    std::map<int, std::vector<Interval>> per_device;
    std::map<std::string, CopyGroup> groups;
    auto add = [&](const std::string& kind, std::uint32_t device, std::uint32_t stream,
                   std::uint64_t bytes, std::uint64_t start, std::uint64_t end) {
      per_device[static_cast<int>(device)].push_back({ns(start), ns(end)});
      StreamState& st = stream_state(static_cast<int>(device), stream);
      ++st.usage.copies;
      st.usage.copy_bytes += bytes;
      add_to(st.usage.copy_ns, std::max<std::int64_t>(0, ns(end) - ns(start)));
      CopyGroup& g = groups.try_emplace(kind, CopyGroup{kind}).first->second;
      ++g.count;
      g.bytes += bytes;
      add_to(g.total_ns, std::max<std::int64_t>(0, ns(end) - ns(start)));
    };
    src_.memcpys([&](const trace::MemcpyRecord& c) {
      add(c.kind, c.device_id, c.stream_id, c.bytes, c.start_ns, c.end_ns);
    });
    const std::string memset = "memset";
    src_.memsets([&](const trace::MemsetRecord& c) {
      add(memset, c.device_id, c.stream_id, c.bytes, c.start_ns, c.end_ns);
    });
    for (auto& [device, v] : per_device) copies_by_device_[device] = merge(std::move(v));
    for (auto& [kind, g] : groups) out_.copies.push_back(g);
    std::sort(out_.copies.begin(), out_.copies.end(),
              [](auto& a, auto& b) { return a.total_ns > b.total_ns; });
  }

  const Launch* find_launch(std::uint32_t correlation_id) const {
    if (correlation_id == 0) return nullptr;
    auto it =
        std::lower_bound(launches_.begin(), launches_.end(), correlation_id,
                         [](const Launch& l, std::uint32_t id) { return l.correlation_id < id; });
    return it != launches_.end() && it->correlation_id == correlation_id ? &*it : nullptr;
  }

  int group_index(const trace::KernelRecord& k, const LaunchShape& s, const Launch* launch) {
    std::string key = display_name(k);
    if (opt_.group_by == GroupBy::op)
      key = launch && launch->op >= 0 ? op_names_[launch->op] : kNoOp;
    if (opt_.group_by == GroupBy::name_and_launch) {
      key += fmt::format("\x1f{},{},{}/{},{},{}/{}/{}", s.grid.x, s.grid.y, s.grid.z, s.block.x,
                         s.block.y, s.block.z, s.shared_mem_bytes, s.registers_per_thread);
    }
    auto [it, fresh] = group_index_.emplace(std::move(key), static_cast<int>(groups_.size()));
    if (fresh) {
      groups_.emplace_back();
      groups_.back().group.name = opt_.group_by == GroupBy::op ? it->first : display_name(k);
      groups_.back().group.shape = s;
      groups_.back().shapes.push_back(s);
    }
    GroupState& g = groups_[it->second];
    if (!fresh && opt_.group_by == GroupBy::name && g.shapes.size() < kMaxShapesCounted &&
        std::find(g.shapes.begin(), g.shapes.end(), s) == g.shapes.end())
      g.shapes.push_back(s);
    return it->second;
  }

  struct StreamState {
    StreamUsage usage;
    std::int64_t busy_start = 0, busy_end = INT64_MIN;
  };
  StreamState& stream_state(int device, std::uint32_t stream) {
    auto [it, fresh] = streams_.try_emplace({device, stream});
    if (fresh) {
      it->second.usage.device = device;
      it->second.usage.stream = stream;
    }
    return it->second;
  }

  DeviceState& device(int id, std::int64_t start) {
    auto it = devices_.find(id);
    if (it == devices_.end()) it = devices_.try_emplace(id, id, start, opt_.timeline_bins).first;
    return it->second;
  }

  // Splits the gap [a, b) by time, so a cause is credited only with the idle time it explains:
  // what a copy on this device covers is copies; of the rest, what a host sync call covers is
  // synchronization; what remains is launch-bound when the next kernel's launch call was still
  // running as the GPU ran dry (the queue was empty), else unattributed. The pieces tile the gap.
  std::vector<GapPiece> split_gap(int device, std::int64_t a, std::int64_t b,
                                  const Launch* launch) const {
    const GapCause rest =
        launch && launch->end_ns > a ? GapCause::launch_bound : GapCause::unattributed;
    std::vector<GapPiece> pieces;
    auto without_copies = [&](std::int64_t x, std::int64_t y) {
      std::int64_t t = x;
      for (const Interval& s : covered(sync_, x, y)) {
        if (t < s.start_ns) pieces.push_back({rest, t, s.start_ns});
        pieces.push_back({GapCause::synchronization, s.start_ns, s.end_ns});
        t = s.end_ns;
      }
      if (t < y) pieces.push_back({rest, t, y});
    };
    std::int64_t t = a;
    if (auto c = copies_by_device_.find(device); c != copies_by_device_.end())
      for (const Interval& copy : covered(c->second, a, b)) {
        if (t < copy.start_ns) without_copies(t, copy.start_ns);
        pieces.push_back({GapCause::copies, copy.start_ns, copy.end_ns});
        t = copy.end_ns;
      }
    if (t < b) without_copies(t, b);
    return pieces;
  }

  // A gap's time goes to each cause by its pieces; the gap counts once under every cause that got
  // some of it, and Gap::cause names the one with the largest share (ties: kGapCauses order).
  void record_gap(DeviceState& d, Gap gap, const std::vector<GapPiece>& pieces) {
    std::int64_t by_cause[std::size(kGapCauses)] = {};
    for (const GapPiece& p : pieces) {
      add_to(by_cause[static_cast<std::size_t>(p.cause)], p.end_ns - p.start_ns);
      d.timeline.add_idle(p.cause, p.start_ns, p.end_ns);
    }
    for (std::size_t c = 0; c < std::size(kGapCauses); ++c) {
      if (by_cause[c] == 0) continue;
      ++d.util.idle_by_cause[c].count;
      add_to(d.util.idle_by_cause[c].total_ns, by_cause[c]);
      ++out_.idle_by_cause[c].count;
      add_to(out_.idle_by_cause[c].total_ns, by_cause[c]);
    }
    gap.cause = kGapCauses[std::max_element(std::begin(by_cause), std::end(by_cause)) -
                           std::begin(by_cause)];
    ++out_.gap_count;
    if (opt_.top_gaps == 0) return;
    largest_gaps_.push(gap);
    if (largest_gaps_.size() > opt_.top_gaps) largest_gaps_.pop();
  }

  void close_storm(DeviceState& d) {
    Storm& run = d.run;
    if (run.kernels >= opt_.storm_min_kernels && run.kernels > 0) {
      ++out_.storm_count;
      auto top = std::max_element(d.run_names.begin(), d.run_names.end(),
                                  [](auto& a, auto& b) { return a.second < b.second; });
      run.top_kernel = groups_[top->first].group.name;
      run.device = d.util.device;
      storms_.push_back(run);
      // Keep the list short as we go: a pathological trace may have many storms.
      if (storms_.size() > 4 * opt_.top_storms + 16) trim_storms();
    }
    run = Storm{};
    d.run_names.clear();
  }

  void trim_storms() {
    std::sort(storms_.begin(), storms_.end(),
              [](auto& a, auto& b) { return a.kernels > b.kernels; });
    if (storms_.size() > opt_.top_storms) storms_.resize(opt_.top_storms);
  }

  void on_kernel(const trace::KernelRecord& k) {
    const std::int64_t start = ns(k.start_ns), end = std::max(start, ns(k.end_ns));
    const int dev = static_cast<int>(k.device_id);
    DeviceState& d = device(dev, start);
    if (start < d.last_start)
      throw Error(fmt::format(
          "kernel '{}' starts before the kernel read before it on device {}, so the trace is not "
          "in start order; re-record it with this ktune.",
          display_name(k), dev));
    d.last_start = start;
    const std::int64_t duration = end - start;
    ++out_.kernel_count;
    add_to(out_.kernel_total_ns, duration);

    const Launch* launch = find_launch(k.correlation_id);
    const int gi = group_index(k, launch_shape(k), launch);
    GroupState& g = groups_[gi];
    add_to(g.group.total_ns, duration);
    g.durations_ns.push_back(static_cast<double>(duration));

    if (launch && launch->nvtx_group >= 0) {
      ++out_.nvtx[launch->nvtx_group].kernels;
      add_to(out_.nvtx[launch->nvtx_group].kernel_gpu_ns, duration);
    }
    if (launch && launch->gemm_event >= 0) gemm_.on_kernel(launch->gemm_event, k, duration);
    if (launch && launch->op >= 0 && opt_.group_by != GroupBy::op) ++g.ops[launch->op];

    StreamState& st = stream_state(static_cast<int>(k.device_id), k.stream_id);
    ++st.usage.kernels;
    add_to(st.usage.kernel_ns, duration);
    if (start > st.busy_end) {
      if (st.busy_end > st.busy_start) add_to(st.usage.busy_ns, st.busy_end - st.busy_start);
      st.busy_start = start;
      st.busy_end = end;
    } else {
      st.busy_end = std::max(st.busy_end, end);
    }

    ++d.util.kernels;
    if (start > d.busy_end) {
      add_to(d.util.busy_ns, d.busy_end - d.busy_start);
      d.timeline.add_busy(d.busy_start, d.busy_end);
      record_gap(d, {dev, d.busy_end, start, GapCause::unattributed, g.group.name},
                 split_gap(dev, d.busy_end, start, launch));
      d.busy_start = start;
      d.busy_end = end;
    } else {
      d.busy_end = std::max(d.busy_end, end);
    }

    const std::int64_t overhead =
        launch ? launch->end_ns - launch->start_ns : opt_.default_launch_overhead_ns;
    if (duration < overhead) {
      if (d.run.kernels == 0) d.run.start_ns = start;
      ++d.run.kernels;
      d.run.end_ns = std::max(d.run.end_ns, end);
      add_to(d.run.kernel_ns, duration);
      add_to(d.run.launch_overhead_ns, overhead);
      ++d.run_names[gi];
    } else {
      close_storm(d);
    }
  }

  void finish() {
    for (auto& [id, d] : devices_) {
      add_to(d.util.busy_ns, d.busy_end - d.busy_start);
      d.timeline.add_busy(d.busy_start, d.busy_end);
      d.util.window_end_ns = d.busy_end;
      d.util.idle_ns = d.util.window_ns() - d.util.busy_ns;
      d.timeline.store(d.util);
      close_storm(d);
      out_.devices.push_back(std::move(d.util));
    }
    trim_storms();
    out_.storms = std::move(storms_);

    for (auto& [key, st] : streams_) {
      if (st.busy_end > st.busy_start) add_to(st.usage.busy_ns, st.busy_end - st.busy_start);
      st.usage.share = out_.kernel_total_ns > 0 ? static_cast<double>(st.usage.kernel_ns) /
                                                      static_cast<double>(out_.kernel_total_ns)
                                                : 0.0;
      out_.streams.push_back(st.usage);
    }

    for (GroupState& g : groups_) {
      // The op that launched most of the group's kernels; a tie goes to the first name in
      // alphabetical order, so the choice never depends on hash order.
      for (const auto& [op, count] : g.ops)
        if (count > g.group.op_kernels ||
            (count == g.group.op_kernels && op_names_[op] < g.group.op)) {
          g.group.op = op_names_[op];
          g.group.op_kernels = count;
        }
      g.group.ops = g.ops.size();
      g.group.duration_ns = summarize(g.durations_ns);
      std::sort(g.durations_ns.begin(), g.durations_ns.end());
      if (!g.durations_ns.empty()) {
        g.group.q1_ns = quantile_sorted(g.durations_ns, 0.25);
        g.group.q3_ns = quantile_sorted(g.durations_ns, 0.75);
      }
      g.group.distinct_shapes = g.shapes.size();
      g.group.share = out_.kernel_total_ns > 0 ? static_cast<double>(g.group.total_ns) /
                                                     static_cast<double>(out_.kernel_total_ns)
                                               : 0.0;
      std::vector<double>().swap(g.durations_ns);
      out_.kernels.push_back(std::move(g.group));
    }
    std::stable_sort(out_.kernels.begin(), out_.kernels.end(),
                     [](auto& a, auto& b) { return a.total_ns > b.total_ns; });
    double cumulative = 0;
    for (const KernelGroup& g : out_.kernels) {
      if (out_.backlog_size > 0 && cumulative >= opt_.backlog_share - 1e-12) break;
      cumulative += g.share;
      ++out_.backlog_size;
    }

    while (!largest_gaps_.empty()) {
      out_.largest_gaps.push_back(largest_gaps_.top());
      largest_gaps_.pop();
    }
    std::reverse(out_.largest_gaps.begin(), out_.largest_gaps.end());
    std::stable_sort(out_.nvtx.begin(), out_.nvtx.end(),
                     [](auto& a, auto& b) { return a.total_ns > b.total_ns; });
  }

  struct LongerGap {
    bool operator()(const Gap& a, const Gap& b) const { return a.duration_ns() > b.duration_ns(); }
  };

  TraceSource& src_;
  const AnalysisOptions& opt_;
  Analysis out_;
  std::map<ThreadKey, NvtxThread> nvtx_threads_;
  std::map<ThreadKey, NvtxThread> op_threads_;  // PyTorch ops only (is_op_range)
  std::vector<std::string> op_names_;
  std::map<std::pair<int, std::uint32_t>, StreamState> streams_;
  std::vector<Launch> launches_;
  std::vector<Interval> sync_;
  std::map<int, std::vector<Interval>> copies_by_device_;
  std::unordered_map<std::string, int> group_index_;
  std::vector<GroupState> groups_;
  std::map<int, DeviceState> devices_;
  std::priority_queue<Gap, std::vector<Gap>, LongerGap> largest_gaps_;  // shortest on top
  std::vector<Storm> storms_;
  GemmTimer gemm_;  // --gemm-shapes: each call and the kernels it launched
};

}  // namespace

Analysis analyze(TraceSource& source, const AnalysisOptions& options) {
  Analysis a = Analyzer(source, options).run();
  // The trace's own ceilings first: the report then reads the same on every machine.
  a.counters = analyze_counters(source, trace_ceilings(a.metadata).value_or(options.ceilings));
  attach_gemm_problems(a.counters, a.gemm);
  a.timeline = analyze_timeline(source);
  return a;
}

}  // namespace ktune::analyze

#include "ktune/analyze/analysis.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "ktune/analyze/kernel_name.hpp"
#include "ktune/analyze/window.hpp"
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
  if (has("Malloc") || has("MemAlloc") || has("Free") || has("HostAlloc") || has("MemCreate") ||
      has("MemMap") || has("MemRelease") || has("HostRegister"))
    return ApiRole::allocation;
  if (has("Module") || has("Library") || has("cuInit") || has("CtxCreate") || has("PrimaryCtx") ||
      has("GetDeviceProperties") || has("FuncGetAttributes") || has("FuncSetAttribute") ||
      has("GetFunction") || has("GetKernel") || has("SetDevice"))
    return ApiRole::setup;
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
    {GapCause::counter_replay, "counter_replay"},
    {GapCause::setup, "setup"},
    {GapCause::allocation, "allocation"},
    {GapCause::host, "host"},
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
  // Host time on its thread since the thread's previous launch or copy call ended (INT64_MAX:
  // none before): short when the host launches back to back.
  std::int64_t host_gap_ns = std::numeric_limits<std::int64_t>::max();
};

// What the full trace says about its warm-up: the set-up gaps that ended at a kernel's first
// launch, and the program's repeated steps (a non-op range name seen at least kMinSteps times).
struct WarmupEvidence {
  struct FirstCall {
    std::int64_t at_ns;  // the first launch's start
    std::string kernel;
    std::size_t kernels_before = 0;  // kernels read before it
  };
  std::vector<FirstCall> first_calls;  // in time order per device
  struct Step {
    std::string name;
    std::size_t count = 0;
    std::int64_t first_ns = std::numeric_limits<std::int64_t>::max();
    std::int64_t second_ns = std::numeric_limits<std::int64_t>::max();
  };
  std::optional<Step> step;             // the name repeated most (at least kMinSteps times)
  std::size_t kernels_before_step = 0;  // kernels starting before its second instance
  std::size_t kernels = 0;
};
constexpr std::size_t kMinSteps = 3;
constexpr std::size_t kMinKernelsToCut = 20;

// "ProfilerStep#12" -> "ProfilerStep": torch.profiler numbers its steps.
std::string step_name(std::string name) {
  const std::size_t hash = name.rfind('#');
  if (hash != std::string::npos && hash + 1 < name.size() &&
      name.find_first_not_of("0123456789", hash + 1) == std::string::npos)
    name.resize(hash);
  return name;
}

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
    src_.counters([&](const trace::CounterRecord& c) { profiled_.insert(c.correlation_id); });
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

  // After run(): what the trace says about its warm-up.
  WarmupEvidence evidence() && {
    evidence_.kernels = out_.kernel_count;
    return std::move(evidence_);
  }

 private:
  void read_nvtx() {
    std::unordered_map<std::string, int> index;
    std::unordered_map<std::string, int> ops;
    std::vector<std::vector<double>> durations;
    src_.nvtx_ranges([&](const trace::NvtxRangeRecord& r) {
      std::string name = range_name(r);
      if (!is_op_range(r)) {
        auto& step = steps_[step_name(name)];
        step.name = step_name(name);
        ++step.count;
        const std::int64_t at = ns(r.start_ns);
        if (at < step.first_ns) {
          step.second_ns = step.first_ns;
          step.first_ns = at;
        } else if (at < step.second_ns) {
          step.second_ns = at;
        }
      }
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
    // The steps: the name repeated most (then the latest second start: a GPU-side annotation
    // starts after the host's range of the same step).
    for (const auto& [name, step] : steps_) {
      const auto& best = evidence_.step;
      if (step.count >= kMinSteps &&
          (!best || step.count > best->count ||
           (step.count == best->count && step.second_ns > best->second_ns)))
        evidence_.step = step;
    }
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
    std::vector<Interval> sync, setup, allocation;
    std::map<ThreadKey, std::int64_t>
        last_submit;  // per thread: its last launch or copy call's end
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
      if (role == ApiRole::setup) setup.push_back({ns(a.start_ns), ns(a.end_ns)});
      if (role == ApiRole::allocation) allocation.push_back({ns(a.start_ns), ns(a.end_ns)});
      std::int64_t host_gap = std::numeric_limits<std::int64_t>::max();
      if (role == ApiRole::launch || role == ApiRole::copy) {
        auto [last, fresh] = last_submit.try_emplace({a.process_id, a.thread_id}, ns(a.end_ns));
        if (!fresh) {
          host_gap = std::max<std::int64_t>(0, ns(a.start_ns) - last->second);
          last->second = std::max(last->second, ns(a.end_ns));
        }
      }
      if ((role == ApiRole::launch || role == ApiRole::copy) && a.correlation_id != 0) {
        int nvtx = -1, op = -1;
        if (auto t = nvtx_threads_.find({a.process_id, a.thread_id}); t != nvtx_threads_.end())
          nvtx = t->second.innermost(ns(a.start_ns));
        if (auto t = op_threads_.find({a.process_id, a.thread_id}); t != op_threads_.end())
          op = t->second.innermost(ns(a.start_ns));
        launches_.push_back({a.correlation_id, ns(a.start_ns), ns(a.end_ns), nvtx, op,
                             role == ApiRole::launch && !gemm_.empty()
                                 ? gemm_.on_launch(a.process_id, a.thread_id, a.start_ns)
                                 : -1,
                             host_gap});
      }
    });
    // Correlation ids grow with call order in CUPTI, so this is usually already sorted.
    auto by_id = [](const Launch& x, const Launch& y) {
      return x.correlation_id < y.correlation_id;
    };
    if (!std::is_sorted(launches_.begin(), launches_.end(), by_id))
      std::sort(launches_.begin(), launches_.end(), by_id);
    sync_ = std::move(sync);
    setup_ = merge(std::move(setup));
    allocation_ = merge(std::move(allocation));
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

  // Splits the gap [a, b) by time, so a cause is credited only with the idle time it explains,
  // in this order: what a copy on this device covers is copies; of the rest, what a host
  // synchronize call covers is synchronization, a set-up call set-up, an allocation call
  // allocation. What remains is read from the next kernel's launch call:
  // - from the call's start to the gap's end, the host was submitting the kernel: ktune's counter
  //   replay when the launch was profiled, set-up when a first launch's call took kLazyLoadNs or
  //   more (lazy module loading), else launch-bound;
  // - before the call, the host did other work: set-up when it was kFirstCallNs or more before a
  //   kernel's first launch, launch-bound when the thread launched back to back (kBackToBackNs),
  //   else host work;
  // - unattributed when there is no launch call, or the kernel was queued before the GPU ran dry.
  // The pieces tile the gap.
  std::vector<GapPiece> split_gap(int device, std::int64_t a, std::int64_t b, const Launch* launch,
                                  bool first_launch, bool profiled) const {
    const bool late = launch && launch->end_ns > a;
    const std::int64_t call_start = late ? std::max(a, launch->start_ns) : b;
    const GapCause call =
        profiled ? GapCause::counter_replay
        : first_launch && launch && launch->end_ns - launch->start_ns >= kLazyLoadNs
            ? GapCause::setup
            : GapCause::launch_bound;
    const GapCause before = !late ? GapCause::unattributed
                            : first_launch && call_start - a >= kFirstCallNs ? GapCause::setup
                            : launch->host_gap_ns <= kBackToBackNs ? GapCause::launch_bound
                                                                   : GapCause::host;
    std::vector<GapPiece> pieces;
    const auto rest = [&](std::int64_t x, std::int64_t y) {
      if (x < std::min(y, call_start)) pieces.push_back({before, x, std::min(y, call_start)});
      if (std::max(x, call_start) < y) pieces.push_back({call, std::max(x, call_start), y});
    };
    // Each layer credits what its intervals cover and hands the uncovered stretches down.
    using Uncovered = std::function<void(std::int64_t, std::int64_t)>;
    const auto layer = [&](const std::vector<Interval>& cover, GapCause cause,
                           const Uncovered& next) -> Uncovered {
      return [&cover, cause, next, &pieces](std::int64_t x, std::int64_t y) {
        std::int64_t t = x;
        for (const Interval& c : covered(cover, x, y)) {
          if (t < c.start_ns) next(t, c.start_ns);
          pieces.push_back({cause, c.start_ns, c.end_ns});
          t = c.end_ns;
        }
        if (t < y) next(t, y);
      };
    };
    static const std::vector<Interval> kNone;
    const auto c = copies_by_device_.find(device);
    const Uncovered after_allocation = rest;
    const Uncovered after_setup = layer(allocation_, GapCause::allocation, after_allocation);
    const Uncovered after_sync = layer(setup_, GapCause::setup, after_setup);
    const Uncovered after_copies = layer(sync_, GapCause::synchronization, after_sync);
    layer(c == copies_by_device_.end() ? kNone : c->second, GapCause::copies, after_copies)(a, b);
    return pieces;
  }

  // A gap's time goes to each cause by its pieces; the gap counts once under every cause that got
  // some of it, and Gap::cause names the one with the largest share (ties: kGapCauses order).
  void record_gap(DeviceState& d, Gap gap, const std::vector<GapPiece>& pieces, bool first_launch) {
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
    if (gap.cause == GapCause::setup && first_launch)
      evidence_.first_calls.push_back({gap.end_ns, gap.next_kernel, out_.kernel_count - 1});
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
    if (evidence_.step && start < evidence_.step->second_ns) ++evidence_.kernels_before_step;
    const std::int64_t duration = end - start;
    ++out_.kernel_count;
    add_to(out_.kernel_total_ns, duration);

    const Launch* launch = find_launch(k.correlation_id);
    const bool first_launch = seen_.insert(display_name(k)).second;
    const LaunchShape shape = launch_shape(k);
    const int gi = group_index(k, shape, launch);
    GroupState& g = groups_[gi];
    add_to(g.group.total_ns, duration);
    g.durations_ns.push_back(static_cast<double>(duration));

    if (launch && launch->nvtx_group >= 0) {
      ++out_.nvtx[launch->nvtx_group].kernels;
      add_to(out_.nvtx[launch->nvtx_group].kernel_gpu_ns, duration);
    }
    if (launch && launch->gemm_event >= 0) gemm_.on_kernel(launch->gemm_event, k, duration);
    if (launch && launch->op >= 0 && opt_.group_by != GroupBy::op) ++g.ops[launch->op];
    patterns_.on_kernel(
        k, shape,
        launch && launch->op >= 0 ? std::string_view(op_names_[launch->op]) : std::string_view(),
        duration);

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
                 split_gap(dev, d.busy_end, start, launch, first_launch,
                           profiled_.count(k.correlation_id) > 0),
                 first_launch);
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
    out_.ops = patterns_.ops(out_.kernel_total_ns);
    out_.op_advice = patterns_.advice(out_.kernel_total_ns);

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
  std::vector<Interval> sync_, setup_, allocation_;  // merged host intervals
  std::map<int, std::vector<Interval>> copies_by_device_;
  std::unordered_set<std::uint32_t> profiled_;  // correlation ids with counters
  std::unordered_set<std::string> seen_;        // kernel names launched so far
  std::map<std::string, WarmupEvidence::Step> steps_;
  WarmupEvidence evidence_;
  std::unordered_map<std::string, int> group_index_;
  std::vector<GroupState> groups_;
  std::map<int, DeviceState> devices_;
  std::priority_queue<Gap, std::vector<Gap>, LongerGap> largest_gaps_;  // shortest on top
  std::vector<Storm> storms_;
  GemmTimer gemm_;  // --gemm-shapes: each call and the kernels it launched
  ProgramPatterns patterns_;
};

}  // namespace

namespace {

constexpr EnumName<Cut> kCutNames[] = {
    {Cut::none, "none"}, {Cut::detected, "detected"}, {Cut::from, "from"}, {Cut::skip, "skip"}};

struct CutChoice {
  Cut cut = Cut::none;
  std::int64_t start_ns = 0;
  std::string reason;
};

// The first kernel start and the last kernel end over every device; {0, 0} without kernels.
std::pair<std::int64_t, std::int64_t> kernel_window(const Analysis& a) {
  std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = 0;
  for (const DeviceUtilization& d : a.devices) {
    first = std::min(first, d.window_start_ns);
    last = std::max(last, d.window_end_ns);
  }
  return a.devices.empty() ? std::pair<std::int64_t, std::int64_t>{0, 0} : std::pair{first, last};
}

// The user's cut (--from, --skip), else the detected warm-up: the later of the last first-call
// set-up gap and the start of the program's second step, within the first half of the kernels'
// window (first-call work later than that stays in the steady state, as a set-up gap).
CutChoice choose_cut(TraceSource& source, const Analysis& full, const WarmupEvidence& e,
                     const AnalysisOptions& o) {
  const auto [first, last] = kernel_window(full);  // NOLINT: last is --from's bound
  if (full.kernel_count == 0) return {};
  if (o.from_ns) {
    if (*o.from_ns <= 0) return {};
    const std::int64_t at = full.origin_ns + *o.from_ns;
    if (at >= last)
      throw Error(fmt::format(
          "--from {:.6g} s is past the trace's last kernel ({:.6g} s after its first record); "
          "give an earlier time, or --from 0 for the whole trace.",
          double(*o.from_ns) * 1e-9, double(last - full.origin_ns) * 1e-9));
    return {Cut::from, at,
            fmt::format("--from {:.6g} s: the report starts that long after the trace's first "
                        "record",
                        double(*o.from_ns) * 1e-9)};
  }
  if (o.skip_kernels) {
    if (*o.skip_kernels == 0) return {};
    if (*o.skip_kernels >= full.kernel_count)
      throw Error(fmt::format(
          "--skip {} leaves no kernel: the trace has {}; give a smaller count, or --skip 0 for "
          "the whole trace.",
          *o.skip_kernels, full.kernel_count));
    std::vector<std::int64_t> starts;
    starts.reserve(full.kernel_count);
    source.kernels([&](const trace::KernelRecord& k) { starts.push_back(ns(k.start_ns)); });
    const auto nth = starts.begin() + static_cast<std::ptrdiff_t>(*o.skip_kernels);
    std::nth_element(starts.begin(), nth, starts.end());
    return {Cut::skip, *nth,
            fmt::format("--skip {}: the first {} kernels launched are left out", *o.skip_kernels,
                        *o.skip_kernels)};
  }
  // The steady state keeps at least half of the kernels: first-call work later than that (an
  // evaluation at the end) stays in it, as a set-up gap. A trace of a few kernels is read whole.
  if (e.kernels < kMinKernelsToCut) return {};
  const std::size_t cap = e.kernels / 2;
  CutChoice c;
  c.start_ns = first;
  for (const WarmupEvidence::FirstCall& f : e.first_calls)
    if (f.kernels_before <= cap && f.at_ns > c.start_ns) {
      c.start_ns = f.at_ns;
      c.reason = fmt::format("first-call set-up ended at the first launch of {}",
                             shown_name(f.kernel, NameStyle::middle));
    }
  if (e.step && e.kernels_before_step <= cap && e.step->second_ns > c.start_ns) {
    c.start_ns = e.step->second_ns;
    c.reason = fmt::format("{}the first of {} '{}' steps is warm-up",
                           c.reason.empty() ? "" : c.reason + "; ", e.step->count, e.step->name);
  }
  if (c.start_ns <= first) return {};
  c.cut = Cut::detected;
  return c;
}

constexpr std::size_t kWarmupGaps = 5;

SteadyState steady_state(const CutChoice& cut, const Analysis& warm) {
  SteadyState s;
  s.cut = cut.cut;
  s.start_ns = cut.start_ns;
  s.reason = cut.reason;
  s.warmup_kernels = warm.kernel_count;
  s.warmup_kernel_ns = warm.kernel_total_ns;
  s.warmup_window_ns = warm.window_ns();
  s.warmup_busy_ns = warm.busy_ns();
  s.warmup_idle_by_cause = warm.idle_by_cause;
  s.warmup_gaps.assign(warm.largest_gaps.begin(),
                       warm.largest_gaps.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                       kWarmupGaps, warm.largest_gaps.size())));
  return s;
}

}  // namespace

const char* to_string(Cut cut) {
  return name_of(kCutNames, cut);
}

Analysis analyze(TraceSource& source, const AnalysisOptions& options) {
  Analyzer whole(source, options);
  Analysis a = whole.run();
  const CutChoice cut = choose_cut(source, a, std::move(whole).evidence(), options);
  std::optional<WindowSource> steady;
  if (cut.cut != Cut::none) {
    const auto at = static_cast<std::uint64_t>(std::max<std::int64_t>(0, cut.start_ns));
    WindowSource warm(source, 0, at);
    const Analysis warm_analysis = Analyzer(warm, options).run();
    steady.emplace(source, at);
    a = Analyzer(*steady, options).run();
    a.steady = steady_state(cut, warm_analysis);
  }
  TraceSource& timed = steady ? static_cast<TraceSource&>(*steady) : source;
  // The trace's own ceilings first: the report then reads the same on every machine. Counters
  // are joined over the whole trace (the first launch, in the warm-up, is the one usually
  // profiled); the time each profiled shape owns is the steady state's.
  a.counters =
      analyze_counters(source, trace_ceilings(a.metadata).value_or(options.ceilings), &timed);
  attach_gemm_problems(a.counters, a.gemm);
  a.timeline = analyze_timeline(timed);
  return a;
}

}  // namespace ktune::analyze

#include "ktune/analyze/timeline.hpp"

#include <algorithm>
#include <climits>
#include <map>

#include "ktune/analyze/launch_shape.hpp"

namespace ktune::analyze {
namespace {

struct Interval {
  std::int64_t start, end;
};

// Sorted, non-overlapping union of `v`.
std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.start <= out.back().end)
      out.back().end = std::max(out.back().end, i.end);
    else
      out.push_back(i);
  }
  return out;
}

std::int64_t length(const std::vector<Interval>& v) {
  std::int64_t sum = 0;
  for (const Interval& i : v) sum += i.end - i.start;
  return sum;
}

// Length of the intersection of two merged lists.
std::int64_t overlap(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::int64_t sum = 0;
  for (std::size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    const std::int64_t lo = std::max(a[i].start, b[j].start), hi = std::min(a[i].end, b[j].end);
    if (hi > lo) sum += hi - lo;
    (a[i].end < b[j].end) ? ++i : ++j;
  }
  return sum;
}

// A run of partial-wave kernels being followed on one device, while kernels stream by in start
// order; only a run's first kernel name is kept, so a large trace holds no name per kernel.
// Two kernels on one stream this close were both queued on the GPU: the second waited only for
// the first (a kernel's own start-up on the GPU takes about a microsecond).
constexpr std::int64_t kBackToBackNs = 2000;

struct RunState {
  SerializedRun run;
  std::int64_t running_until = INT64_MIN;  // latest end of any kernel started so far
};

}  // namespace

bool is_collective(std::string_view name) {
  return name.find("nccl") != std::string_view::npos || name.find("NCCL") != std::string_view::npos;
}

TimelineFindings analyze_timeline(TraceSource& source, std::size_t min_run_kernels,
                                  std::size_t top_runs) {
  TimelineFindings out;
  std::map<int, int> sm_count;
  if (const auto& id = source.metadata().identity)
    for (const auto& d : id->devices)
      if (d.sm_count > 0) sm_count[d.ordinal] = d.sm_count;
  out.sm_count_known = !sm_count.empty();

  std::map<int, DeviceOverlap> devices;
  std::map<int, std::vector<Interval>> copies, compute, comm;
  source.memcpys([&](const trace::MemcpyRecord& m) {
    // Times past INT64_MAX are no CUPTI clock (a damaged record); they would overflow below.
    if (m.end_ns <= m.start_ns || m.end_ns > std::uint64_t(INT64_MAX)) return;
    devices[int(m.device_id)].device = int(m.device_id);
    copies[int(m.device_id)].push_back({std::int64_t(m.start_ns), std::int64_t(m.end_ns)});
  });

  std::map<int, RunState> runs;
  const auto close = [&](DeviceOverlap& d, SerializedRun& run) {
    if (run.kernels >= min_run_kernels) {
      ++d.serialized_runs;
      d.serialized_saving_ns += run.kernel_ns - run.longest_kernel_ns;
      out.runs.push_back(run);
    }
    run = SerializedRun{};
  };
  source.kernels([&](const trace::KernelRecord& k) {
    if (k.end_ns <= k.start_ns || k.end_ns > std::uint64_t(INT64_MAX)) return;
    const int device = int(k.device_id);
    const std::int64_t start = std::int64_t(k.start_ns), end = std::int64_t(k.end_ns);
    const bool collective = is_collective(display_name(k));
    DeviceOverlap& d = devices[device];
    d.device = device;
    (collective ? comm : compute)[device].push_back({start, end});

    // Serialized runs: one stream, each kernel a partial wave, nothing else running.
    const auto sms = sm_count.find(device);
    if (sms == sm_count.end()) return;
    RunState& state = runs[device];
    SerializedRun& run = state.run;
    const std::int64_t blocks = std::int64_t(k.grid_x) * k.grid_y * k.grid_z;
    const bool small = blocks > 0 && blocks < sms->second && !collective;
    const bool alone = start >= state.running_until;
    state.running_until = std::max(state.running_until, end);
    // Back to back: queued on the GPU before the previous one ended. A longer gap means the host
    // was late, and more streams would not help (the storm and gap analysis report that case).
    const bool back_to_back = run.kernels > 0 && start - run.end_ns <= kBackToBackNs;
    if (!(back_to_back && small && alone && k.stream_id == run.stream)) {
      close(d, run);
      if (!(small && alone)) return;
      run.device = device;
      run.stream = k.stream_id;
      run.start_ns = start;
      run.first_kernel = display_name(k);
    }
    ++run.kernels;
    run.end_ns = end;
    run.kernel_ns += end - start;
    run.longest_kernel_ns = std::max(run.longest_kernel_ns, end - start);
  });
  for (auto& [device, state] : runs) close(devices[device], state.run);

  for (auto& [device, d] : devices) {
    std::vector<Interval> all = compute[device];
    all.insert(all.end(), comm[device].begin(), comm[device].end());
    // Where collectives start and end, to find the idle gaps next to them.
    std::vector<std::int64_t> comm_starts, comm_ends;
    for (const Interval& c : comm[device]) {
      comm_starts.push_back(c.start);
      comm_ends.push_back(c.end);
    }
    std::sort(comm_starts.begin(), comm_starts.end());
    std::sort(comm_ends.begin(), comm_ends.end());
    all = merged(std::move(all));
    const std::vector<Interval> busy_compute = merged(std::move(compute[device]));
    const std::vector<Interval> busy_comm = merged(std::move(comm[device]));
    const std::vector<Interval> copy = merged(std::move(copies[device]));
    d.copy_ns = length(copy);
    d.copy_under_kernel_ns = overlap(copy, all);
    d.collective_ns = length(busy_comm);
    d.collective_exposed_ns = d.collective_ns - overlap(busy_comm, busy_compute);
    for (std::size_t i = 1; i < all.size(); ++i) {
      const std::int64_t gap_start = all[i - 1].end, gap_end = all[i].start;
      if (std::binary_search(comm_ends.begin(), comm_ends.end(), gap_start) ||
          std::binary_search(comm_starts.begin(), comm_starts.end(), gap_end))
        d.idle_next_to_collective_ns += gap_end - gap_start;
    }
    out.devices.push_back(d);
  }
  std::stable_sort(out.runs.begin(), out.runs.end(), [](const auto& a, const auto& b) {
    return a.kernel_ns - a.longest_kernel_ns > b.kernel_ns - b.longest_kernel_ns;
  });
  if (out.runs.size() > top_runs) out.runs.resize(top_runs);
  return out;
}

}  // namespace ktune::analyze

// The analysis and the reports on records decoded from the fuzzer's bytes, with times anywhere in
// the 64-bit range (a trace KtraceReader would reject included: MemorySource checks nothing), so
// the time arithmetic meets its edges faster than through SQLite pages. Any exception but
// ktune::Error, a hang or a sanitizer report is a finding.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <limits>
#include <string>

#include "ktune/analyze/analysis.hpp"
#include "ktune/core/error.hpp"
#include "ktune/report/report.hpp"

namespace {

using namespace ktune;

constexpr std::uint64_t kClock = 1'700'000'000'000'000'000ull;  // a CUPTI-like timestamp

std::uint64_t time_ns(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0:
      return in.ConsumeIntegral<std::uint64_t>();  // anything: 0, past INT64_MAX, ...
    case 1:
      return static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) -
             in.ConsumeIntegral<std::uint16_t>();
    default:
      return kClock + in.ConsumeIntegral<std::uint32_t>();
  }
}

std::string name(FuzzedDataProvider& in) {
  static const char* const kNames[] = {"gemm", "_Z3addPfi", "tiny", "relu<float>", "a|b", ""};
  return kNames[in.ConsumeIntegralInRange<std::size_t>(0, std::size(kNames) - 1)];
}

std::string api_name(FuzzedDataProvider& in) {
  static const char* const kApis[] = {"cudaLaunchKernel", "cudaDeviceSynchronize", "cudaMemcpy",
                                      "cuLaunchKernel",   "cudaStreamSynchronize", "cudaFree"};
  return kApis[in.ConsumeIntegralInRange<std::size_t>(0, std::size(kApis) - 1)];
}

trace::Trace decode(FuzzedDataProvider& in) {
  trace::Trace t;
  for (int n = 0; n < 256 && in.remaining_bytes() > 0; ++n) {
    const std::uint64_t start = time_ns(in), end = time_ns(in);
    const auto corr = in.ConsumeIntegralInRange<std::uint32_t>(0, 16);
    switch (in.ConsumeIntegralInRange<int>(0, 5)) {
      case 0: {
        trace::KernelRecord k;
        k.name = k.demangled_name = name(in);
        k.start_ns = start, k.end_ns = end, k.correlation_id = corr;
        k.device_id = in.ConsumeIntegralInRange<std::uint32_t>(0, 2);
        k.stream_id = in.ConsumeIntegralInRange<std::uint32_t>(0, 3);
        k.grid_x = in.ConsumeIntegral<std::int32_t>();
        k.block_x = in.ConsumeIntegral<std::int32_t>();
        k.dynamic_shared_bytes = in.ConsumeIntegral<std::int32_t>();
        k.static_shared_bytes = in.ConsumeIntegral<std::int32_t>();
        t.kernels.push_back(k);
        break;
      }
      case 1: {
        trace::ApiRecord a;
        a.api = "runtime";
        a.name = api_name(in);
        a.start_ns = start, a.end_ns = end, a.correlation_id = corr;
        a.thread_id = in.ConsumeIntegralInRange<std::uint32_t>(0, 2);
        t.api_calls.push_back(a);
        break;
      }
      case 2: {
        trace::MemcpyRecord m;
        m.kind = "DtoH";
        m.bytes = in.ConsumeIntegral<std::uint64_t>();
        m.start_ns = start, m.end_ns = end, m.correlation_id = corr;
        m.device_id = in.ConsumeIntegralInRange<std::uint32_t>(0, 2);
        t.memcpys.push_back(m);
        break;
      }
      case 3: {
        trace::MemsetRecord m;
        m.bytes = in.ConsumeIntegral<std::uint64_t>();
        m.start_ns = start, m.end_ns = end, m.correlation_id = corr;
        t.memsets.push_back(m);
        break;
      }
      case 4: {
        trace::SyncRecord s;
        s.type = in.ConsumeBool() ? "context_synchronize" : "stream_wait_event";
        s.start_ns = start, s.end_ns = end;
        t.syncs.push_back(s);
        break;
      }
      default: {
        trace::NvtxRangeRecord r;
        r.name = name(in);
        r.start_ns = start, r.end_ns = end;
        r.thread_id = in.ConsumeIntegralInRange<std::uint32_t>(0, 2);
        t.nvtx_ranges.push_back(r);
        break;
      }
    }
  }
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  analyze::AnalysisOptions options;
  options.group_by = in.ConsumeBool() ? analyze::GroupBy::name : analyze::GroupBy::name_and_launch;
  options.timeline_bins = in.ConsumeIntegralInRange<std::size_t>(0, 1000);
  options.top_gaps = in.ConsumeIntegralInRange<std::size_t>(0, 30);
  options.top_storms = in.ConsumeIntegralInRange<std::size_t>(0, 30);
  options.storm_min_kernels = in.ConsumeIntegralInRange<std::size_t>(0, 30);
  options.default_launch_overhead_ns = in.ConsumeIntegral<std::int64_t>();
  options.backlog_share = in.ConsumeProbability<double>();
  try {
    analyze::MemorySource source(decode(in));
    const analyze::Analysis a = analyze::analyze(source, options);
    for (const auto& format : report::formats()) (void)format.render(a, {5});
  } catch (const Error&) {
  }
  return 0;
}

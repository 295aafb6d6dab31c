#include "ktune/bench/interleave.hpp"

#include <chrono>

#include <nlohmann/json.hpp>

#include "ktune/cuda/nvml.hpp"

namespace ktune::bench {

InterleavedResult interleave(Sampler& a, Sampler& b, const StopSettings& stop) {
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  for (std::size_t i = 0; i < stop.warmup_samples; ++i) {
    a.warmup();
    b.warmup();
  }
  // The stop rule watches the per-pair ratio: its noise is what a decision depends on.
  StopSettings ratio_stop = stop;
  ratio_stop.screen_margin = 0;
  ratio_stop.min_gpu_time_s = 0;  // GPU time is accounted below, over both sides
  StopRule rule(ratio_stop);
  std::vector<double> ta, tb;
  double gpu_ns = 0;
  InterleavedResult r;
  while (true) {
    const Sample sa = a.sample();
    const Sample sb = b.sample();
    Sample ratio;
    ratio.time_ns = sa.time_ns > 0 ? sb.time_ns / sa.time_ns : 0;
    ratio.throttle_reasons = sa.throttle_reasons | sb.throttle_reasons;
    ratio.sm_clock_mhz = sa.sm_clock_mhz;
    if (!(ratio.throttle_reasons & cuda::throttle::kSlowdownMask)) {
      ta.push_back(sa.time_ns);
      tb.push_back(sb.time_ns);
      gpu_ns += sa.time_ns + sb.time_ns;
    }
    const bool done = rule.add(ratio, elapsed());
    const bool enough_time = gpu_ns * 1e-9 >= stop.min_gpu_time_s;
    if (done && (enough_time || rule.reason() != StopReason::converged)) break;
  }
  r.a_ns = summarize(ta);
  r.b_ns = summarize(tb);
  r.ratio = summarize(rule.times_ns());
  r.pairs = ta.size();
  r.dropped_throttled = rule.dropped_throttled();
  r.stop_reason = rule.reason();
  return r;
}

void to_json(nlohmann::json& j, const InterleavedResult& r) {
  j = {{"a_ns", r.a_ns},
       {"b_ns", r.b_ns},
       {"ratio_b_over_a", r.ratio},
       {"speedup_of_b", r.speedup_of_b()},
       {"pairs", r.pairs},
       {"dropped_throttled", r.dropped_throttled},
       {"stop_reason", to_string(r.stop_reason)}};
}

}  // namespace ktune::bench

#pragma once
// Interleaved comparison of two configurations (A B A B ...): both see the same clock and thermal
// drift, so their ratio is trustworthy even when each alone drifts. Plain C++ over two Samplers.
#include <nlohmann/json_fwd.hpp>

#include "ktune/bench/stop_rule.hpp"
#include "ktune/core/stats.hpp"

namespace ktune::bench {

struct InterleavedResult {
  Summary a_ns, b_ns;     // per-launch time of each side
  Summary ratio;          // per-pair b / a (each pair taken back to back)
  std::size_t pairs = 0;  // pairs counted (a pair with a throttled side is dropped)
  std::size_t dropped_throttled = 0;
  StopReason stop_reason = StopReason::timeout;
  // B is faster when ratio.median < 1; the spread of per-pair ratios says how sure that is.
  double speedup_of_b() const { return ratio.median > 0 ? 1.0 / ratio.median : 0; }
};

// Alternates a.sample() and b.sample() (each warmed up first) until the stop rule, applied to the
// per-pair ratios, stops. Throttled pairs are dropped whole.
InterleavedResult interleave(Sampler& a, Sampler& b, const StopSettings& stop);

void to_json(nlohmann::json& j, const InterleavedResult& r);

}  // namespace ktune::bench

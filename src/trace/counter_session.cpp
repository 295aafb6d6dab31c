#include "counter_session.hpp"

#include <algorithm>

#include "ktune/trace/metrics.hpp"

namespace ktune::trace {
namespace {

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

CounterSession::CounterSession(RangeProfilerApi& api, std::vector<std::string> metrics, Say say)
    : api_(api), metrics_(std::move(metrics)), say_(std::move(say)) {}

void CounterSession::turn_off(const std::string& why) {
  if (off_) return;
  off_ = true;
  say_("hardware counters are off for the rest of this run: " + why +
       "; the activity trace is recorded as usual.");
}

std::size_t CounterSession::passes() const {
  std::size_t most = 0;
  for (const auto& [chip, passes] : chips_) most = std::max(most, passes);
  return most;
}

bool CounterSession::open(RangeProfilerApi::Context ctx) {
  if (auto it = contexts_.find(ctx); it != contexts_.end()) return it->second.ready;
  ContextState& state = contexts_[ctx];  // not ready until every step below succeeds
  const auto t0 = Clock::now();
  auto fail = [&](const std::string& why) {
    turn_off(why);
    times_.setup_s += seconds(Clock::now() - t0);
    return false;
  };
  if (!initialized_) {
    if (std::string why = api_.initialize(); !why.empty()) return fail(why);
    initialized_ = true;
  }
  std::string chip;
  if (std::string why = api_.device_of(ctx, state.device, chip); !why.empty()) return fail(why);
  if (!chips_.count(chip)) {
    std::size_t passes = 0;
    if (std::string why = api_.configure(chip, ctx, passes); !why.empty()) return fail(why);
    chips_[chip] = passes;
  }
  if (std::string why = api_.enable(ctx, chip); !why.empty()) return fail(why);
  times_.setup_s += seconds(Clock::now() - t0);
  return state.ready = true;
}

bool CounterSession::begin(RangeProfilerApi::Context ctx) {
  if (off_ || !open(ctx)) return false;
  started_ = Clock::now();
  if (std::string why = api_.arm(ctx); !why.empty()) {
    turn_off(why);
    return false;
  }
  armed_ = Clock::now();
  const double arm = seconds(armed_ - started_);
  times_.arm_s += arm;
  if (armed_launches_++ == 0) times_.first_arm_s = arm;
  return true;
}

std::vector<CounterRecord> CounterSession::end(RangeProfilerApi::Context ctx,
                                               std::uint32_t correlation_id,
                                               std::uint64_t& duration_ns) {
  duration_ns = 0;
  const auto launched = Clock::now();
  times_.replay_s += seconds(launched - armed_);
  std::vector<double> values(metrics_.size());
  bool ran = false;
  std::vector<CounterRecord> out;
  if (std::string why = api_.collect(ctx, values, ran); !why.empty()) {
    turn_off(why);
  } else if (ran) {
    const std::uint32_t device = contexts_[ctx].device;
    out.reserve(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      out.push_back({device, correlation_id, metrics_[i], values[i]});
      if (metrics_[i] == metric::kDuration && values[i] > 0)
        duration_ns = static_cast<std::uint64_t>(values[i]);
    }
    ++collected_;
  }
  const auto done = Clock::now();
  times_.collect_s += seconds(done - launched);
  last_launch_s_ = seconds(done - started_);
  if (times_.first_s == 0) times_.first_s = last_launch_s_;
  return out;
}

}  // namespace ktune::trace

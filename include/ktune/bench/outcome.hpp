#pragma once
// How one tried configuration ended: the one status type and the one outcome type of the
// candidate pipeline, used by `ktune bench`, tuning sessions (whatever evaluates for them: the
// pipeline, a library's algorithms, a recording in replay), their results files and T4. Failures
// are data (KTT's contract): every evaluation ends in one of these and counts as spent.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "ktune/bench/measurement.hpp"

namespace ktune::bench {

enum class Status {
  ok,                  // ran, verified, fully measured; its time counts
  compile_failed,      // NVRTC rejected the source or options
  launch_failed,       // the launch or the run returned an error, or the measuring process died
  resources_exceeded,  // threads, registers or shared memory over the device's limits
  wrong_result,        // outputs differ from the reference beyond the tolerance
  slower,              // ran and verified; its screening time is clearly above the best so far
  timeout,             // did not finish within the candidate's time limit
};

inline constexpr Status kAllStatuses[] = {
    Status::ok,           Status::compile_failed, Status::launch_failed, Status::resources_exceeded,
    Status::wrong_result, Status::slower,         Status::timeout};

// The enumerator's name: "ok", "compile_failed", ..., "slower", "timeout".
const char* to_string(Status s);
std::optional<Status> status_from_string(std::string_view s);

// Ran correctly, so its time (full or screened) says something about the configuration.
inline bool has_time(Status s) {
  return s == Status::ok || s == Status::slower;
}

struct CandidateOutcome {
  Status status = Status::ok;
  std::string detail;  // the verification summary, or why it failed (one sentence)
  // Full (ok) or screen (slower) statistics. An outcome read back from a results line or another
  // process keeps what the line holds: the median, the spread and the count (set_time).
  Measurement measurement;
  bool full = false;  // measured with the full stop rule (a contender)
  // The GPU context is unusable (illegal address, launch failure): this process can measure no
  // more. A tuning session records the candidate, writes its files and stops.
  bool context_lost = false;
  double compile_s = 0;  // NVRTC wall time for this binary; 0 when it was cached or none compiles

  // Median per launch: of the full measurement (ok) or the screen's (slower).
  double time_ns() const { return measurement.time_ns.median; }
  // The spread of that median: half the p5..p95 width.
  double noise_ns() const { return (measurement.time_ns.p95 - measurement.time_ns.p5) / 2; }
  std::size_t samples() const { return measurement.time_ns.count; }
  // Sets the three figures above (p5 and p95 as the median -/+ the noise).
  void set_time(double median_ns, double noise_ns, std::size_t samples);
  // A candidate that ended before it was measured.
  static CandidateOutcome failed(Status status, std::string detail, bool context_lost = false);
};

}  // namespace ktune::bench

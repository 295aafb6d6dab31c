#pragma once
// How one tried configuration ended: the one status type of the candidate pipeline, used by
// `ktune bench`, tuning sessions, their results files and T4. Failures are data (KTT's contract):
// every evaluation ends in one of these and counts as spent.
#include <optional>
#include <string_view>

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

}  // namespace ktune::bench

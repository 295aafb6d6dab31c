#pragma once
// How one tried configuration ended. Every evaluation records one of these (KTT's contract):
// failures are data, and they count as spent evaluations.
#include <optional>
#include <string>
#include <string_view>

namespace ktune::tune {

enum class Status {
  Ok,                 // ran, verified; its time counts
  CompileFailed,      // NVRTC rejected the source or options
  LaunchFailed,       // the launch or the run returned an error
  ResourcesExceeded,  // registers, shared memory or threads per block over the device's limits
  WrongResult,        // outputs differ from the reference beyond the tolerance
  Timeout,            // slower than the cut-off, or did not finish in time
};

inline constexpr Status kAllStatuses[] = {Status::Ok,           Status::CompileFailed,
                                          Status::LaunchFailed, Status::ResourcesExceeded,
                                          Status::WrongResult,  Status::Timeout};

// "ok", "compile_failed", "launch_failed", "resources_exceeded", "wrong_result", "timeout".
const char* to_string(Status s);
std::optional<Status> status_from_string(std::string_view s);

// T4's "invalidity" field: "correct", "compile", "runtime", "constraints", "correctness",
// "timeout". Unknown words give nullopt.
const char* to_t4_invalidity(Status s);
std::optional<Status> status_from_t4_invalidity(std::string_view s);

}  // namespace ktune::tune

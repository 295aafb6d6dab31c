#pragma once
// How one tried configuration ended, as tuning records it: the candidate pipeline's status and
// outcome (bench/outcome.hpp), and the status's spelling in T4's "invalidity" field.
#include <optional>
#include <string_view>

#include "ktune/bench/outcome.hpp"

namespace ktune::tune {

using bench::CandidateOutcome;
using bench::has_time;
using bench::kAllStatuses;
using bench::Status;
using bench::status_from_string;
using bench::to_string;

// T4's "invalidity" field: "correct" (ok and slower), "compile", "runtime", "constraints",
// "correctness", "timeout". Unknown words give nullopt; "correct" reads back as ok.
const char* to_t4_invalidity(Status s);
std::optional<Status> status_from_t4_invalidity(std::string_view s);

}  // namespace ktune::tune

#pragma once
// ktune tune SPEC --dry-run: everything that can be checked about a spec without a GPU.
#include <cstdint>
#include <map>
#include <string>

#include "ktune/spec/spec.hpp"

namespace ktune::cli {

// 2: "problem_elements", and a spec ktune cannot run (OpenCL, arguments that cannot fit the
// kernel) is a problem, not ok.
inline constexpr int kDryRunSchemaVersion = 2;

// Enumerates the space, lays out every valid configuration (grid, block, shared memory: every
// expression is evaluated), sizes the arguments, and compiles the default configuration (the first
// valid one when the default breaks a condition) with NVRTC for `arch`. Prints a report (JSON with
// `json`); returns 0 when all of it passed, 1 otherwise. ktune::Error for a spec that cannot be
// read at all.
int dry_run(const tune::ProblemSpec& spec, const std::map<std::string, std::int64_t>& shape,
            const std::string& arch, bool json);

}  // namespace ktune::cli

#pragma once
// ktune profile of a Python program and torch.compile: Inductor's cache goes to a folder beside
// the trace, with the modules that let a kernel be run alone (TORCHINDUCTOR_BENCHMARK_KERNEL=1),
// and after the program ends `python3 -m ktune.inductor scan` lists its Triton kernels into
// OUT.inductor.json, which `ktune report` reads beside the trace.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace ktune::cli {

// Whether the profiled command is a Python program: python, python3, python3.12, ... or a .py
// script, or torchrun.
bool is_python_command(const std::vector<std::string>& cmd);

// The variables the program gets for Inductor, those the user set left out:
// TORCHINDUCTOR_CACHE_DIR=<trace folder>/inductor and TORCHINDUCTOR_BENCHMARK_KERNEL=1.
std::vector<std::pair<std::string, std::string>> inductor_profile_env(
    const std::filesystem::path& trace_output);

// After the program: scans the Inductor cache it used (TORCHINDUCTOR_CACHE_DIR, the user's or
// ours) into OUT.inductor.json beside `trace_output` (OUT.ktrace). Bounded in time; a failure is a
// warning sentence on stderr, the trace untouched. The scan's path, or "" when none was written.
std::string scan_inductor_cache(const std::filesystem::path& trace_output, double timeout_s = 300);

}  // namespace ktune::cli

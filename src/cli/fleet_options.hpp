#pragma once
// What `ktune fleet` and `ktune queue` share: where the known tuning specs are, and --since.
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace ktune::cli {

// --specs DIR (repeatable; KTUNE_SPEC_DIRS, ':'-separated): folders of T1 specs that map fleet
// kernels to tunable ops. The built-in kernels/ folder is always searched.
void add_specs_option(CLI::App& app, std::vector<std::string>& dirs);
std::vector<std::filesystem::path> spec_dirs(const std::vector<std::string>& given);

// "2026-11-20", "2026-11-20T08:00:00Z", or a span back from now: "30m", "24h", "7d".
// ktune::Error naming the text otherwise.
std::string since_timestamp(const std::string& text);

}  // namespace ktune::cli

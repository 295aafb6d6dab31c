#pragma once
// Kernel Tuner cache files (what Kernel Tuner writes with cache=...): the space's parameters in
// "tune_params" (names ordered by "tune_params_keys") and, in "cache", one record per evaluated
// configuration keyed by its comma-joined values. A record's "time" is in milliseconds, or a string
// naming why the configuration failed ("InvalidConfig", "CompilationFailedConfig",
// "RuntimeFailedConfig"). The cache lists no constraints: the recorded configurations are the
// space.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ktune/spec/space.hpp"
#include "ktune/spec/spec.hpp"
#include "ktune/tune/outcome.hpp"

namespace ktune::tune {

struct KtRecord {
  Configuration configuration;  // value indices into KtCache::parameters
  Status status = Status::ok;
  double time_ns = 0;                // meaningful only when status is Ok
  std::string detail;                // the failure string, when it failed
  std::optional<double> compile_ns;  // "compile_time", when recorded
};

struct KtCache {
  std::string source;  // path, for messages
  std::string device_name, kernel_name;
  std::vector<Parameter> parameters;  // tune_params_keys order, values as tune_params lists them
  std::vector<KtRecord> records;      // in the file's order
};

// Reads a cache (".json" or ".json.gz"). Throws ktune::Error naming the file and field for a
// malformed one. Records' values come from their own fields, or from the key when those are absent.
KtCache read_kt_cache(const std::filesystem::path& path);
KtCache parse_kt_cache(const nlohmann::json& j, const std::string& source);

// Kernel Tuner's failure strings as statuses: "CompilationFailedConfig" -> CompileFailed,
// "RuntimeFailedConfig" -> LaunchFailed, "InvalidConfig" (over the device's limits, or refused by
// a restriction) -> ResourcesExceeded; another string gives nullopt.
std::optional<Status> status_from_kt_failure(std::string_view s);

}  // namespace ktune::tune

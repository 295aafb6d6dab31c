#pragma once
// T4, the community's tuning-results format: one record per evaluated configuration, failures
// included. Read for replay (plain or zlib/gzip-compressed), written by tuning sessions.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ktune/core/error.hpp"
#include "ktune/spec/expression.hpp"
#include "ktune/tune/outcome.hpp"

namespace ktune::tune {

struct T4Record {
  std::map<std::string, Value> configuration;
  Status status = Status::ok;
  double time_ns = 0;  // the "time" measurement; meaningful only when status is Ok
  std::string detail;  // why it failed, when it did
  // times.compilation: the wall time that built this configuration's binary (0: it was cached);
  // nullopt when the file does not record it. Replay models the order compiles finish from it.
  std::optional<double> compile_ns;
};

struct T4File {
  std::string source;  // path, for messages
  std::vector<T4Record> results;
  std::string time_unit;  // as the file's metadata.timeunit says; times are converted to ns
};

// Reads a T4 file (".json" or ".json.gz"). Unknown fields are ignored. A record whose time is
// missing or not a finite number counts as a failure (LaunchFailed, unless its invalidity says
// otherwise). Throws ktune::Error naming the file and the record for a malformed file.
T4File read_t4(const std::filesystem::path& path);
T4File parse_t4(const nlohmann::json& j, const std::string& source);

// Streams a T4 file record by record: neither the whole text nor a JSON tree of the file is held,
// so a file of millions of records costs memory for one record at a time. `visit(record, i)` gets
// each record with its time converted by the time unit known when the record is read (the file's
// metadata normally precedes its results). Returns the factor by which times already visited must
// still be multiplied: 1 unless metadata.timeunit came after the results. Errors as read_t4.
double for_each_t4_record(const std::filesystem::path& path,
                          const std::function<void(T4Record&&, std::size_t)>& visit);

// The file's top-level object names Kernel Tuner cache fields (tune_params, cache) rather than T4's
// results; for_each_t4_record throws this so that a caller may read it as a cache instead.
struct NotT4 : Error {
  using Error::Error;
};

// T4's own version, a string as the community format writes it; every file that is ktune's own
// format (session.json, results.jsonl lines, summary.json) carries an integer schema_version.
constexpr const char* kT4SchemaVersion = "1.0.0";

// One T4 result object for a record, as ktune writes it (times in the T4 file's milliseconds).
nlohmann::json t4_result_json(const T4Record& r, const std::string& timestamp);

}  // namespace ktune::tune

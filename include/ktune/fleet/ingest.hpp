#pragma once
// Ingest: a trace becomes per-kernel aggregates (count, total, min, max and a quantile sketch per
// kernel, launch shape and GPU) pushed to the store as one run. Traces are read through
// analyze::TraceSource (KtraceSource for .ktrace files: trace::KtraceReader, the one decoder).
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "ktune/analyze/source.hpp"
#include "ktune/store/fleet.hpp"

namespace ktune::fleet {

// --tag job=J,build=B,rank=R (any other key is kept in the run's tags too).
struct Tags {
  std::string job, build, rank;
  nlohmann::json all = nlohmann::json::object();
};
// Parses "k=v,k=v" items (several --tag flags add up). ktune::Error naming the bad item.
Tags parse_tags(const std::vector<std::string>& items);

// The run's content identity. A traced process is one run: its host, pid, parent pid, start time
// and command line name it wherever the file is copied or however often it is ingested, and cost
// nothing to read. A trace without them (hand-built) is named by a hash of its file instead.
std::string run_identity(const trace::TraceMetadata& metadata,
                         const std::filesystem::path& file = {});

struct RunAggregates {
  store::FleetRun run;
  std::vector<store::FleetAggregate> aggregates;
  std::uint64_t kernel_records = 0;
};

// Reads every kernel record of `source` once. `location` is recorded as where the trace was.
RunAggregates aggregate(analyze::TraceSource& source, const std::string& location, const Tags& tags,
                        const std::filesystem::path& file = {});

struct IngestResult {
  std::string path, run_id;
  store::PushOutcome outcome = store::PushOutcome::added;
  std::uint64_t kernel_records = 0, aggregates = 0;
  double read_s = 0, push_s = 0;
};

// Reads the .ktrace at `path` and pushes it. ktune::Error for an unreadable trace.
IngestResult ingest_file(store::FleetStore& fleet, const std::filesystem::path& path,
                         const Tags& tags);

// Several traces: `threads` read and aggregate them at once (each its own reader; reading is
// where ingest spends its time), and pushes go through `fleet` one at a time. `done` sees each
// result as it is pushed, in completion order. The first error stops the rest and is rethrown;
// traces already pushed stay pushed.
std::vector<IngestResult> ingest_files(store::FleetStore& fleet,
                                       const std::vector<std::filesystem::path>& paths,
                                       const Tags& tags, unsigned threads,
                                       const std::function<void(const IngestResult&)>& done = {});

const char* to_string(store::PushOutcome o);  // "added", "replaced", "already ingested"

}  // namespace ktune::fleet

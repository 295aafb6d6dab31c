#pragma once
// Ingest: a trace becomes per-kernel aggregates (count, total, min, max and a quantile sketch per
// kernel, launch shape and GPU) pushed to the store as one run. A .ktrace is read through
// trace::KtraceReader, the one decoder of the format, in stored order: aggregates do not depend
// on the order of the records, and skipping the reader's sort is most of ingest's speed.
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <memory>

#include "ktune/store/fleet.hpp"
#include "ktune/trace/ktrace.hpp"

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
// nothing to read; a periodic capture window (trace::TraceWindow::index) is a run of its own. A
// trace without them (hand-built) is named by a hash of its file instead.
std::string run_identity(const trace::TraceMetadata& metadata,
                         const std::filesystem::path& file = {});

struct RunAggregates {
  store::FleetRun run;
  std::vector<store::FleetAggregate> aggregates;
  std::vector<store::FleetGemm> gemms;  // a --gemm-shapes trace's problems with their GPU time
  std::uint64_t kernel_records = 0;
};

// The GEMM problems of a trace the library search can tune (analyze::read_gemm_calls), as fleet
// rows; none for a trace taken without --gemm-shapes.
std::vector<store::FleetGemm> gemm_rows(const std::filesystem::path& trace,
                                        const trace::TraceMetadata& metadata);

// One run's aggregates, built one kernel record at a time, in any order (a trace on disk, or
// records held in memory).
class RunAggregator {
 public:
  RunAggregator();
  ~RunAggregator();
  RunAggregator(const RunAggregator&) = delete;
  RunAggregator& operator=(const RunAggregator&) = delete;

  void add(const trace::KernelRecord& k);
  // The run of `metadata` with the aggregates added so far. `location` is recorded as where the
  // trace was; `file` names a trace that has no pid and start time (run_identity).
  RunAggregates finish(const trace::TraceMetadata& metadata, const std::string& location,
                       const Tags& tags, const std::filesystem::path& file = {}) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct IngestResult {
  std::string path, run_id;
  store::PushOutcome outcome = store::PushOutcome::added;
  std::uint64_t kernel_records = 0, aggregates = 0, gemms = 0;
  double read_s = 0, push_s = 0;
  std::string error;  // not empty: the trace was not ingested, and this sentence says why
};

// Reads the .ktrace at `path` and pushes it. ktune::Error for an unreadable trace.
IngestResult ingest_file(store::FleetStore& fleet, const std::filesystem::path& path,
                         const Tags& tags);

// Several traces: `threads` read and aggregate them at once (each its own reader; reading is
// where ingest spends its time), and pushes go through `fleet` one at a time. `done` sees each
// result as it is pushed, in completion order. A trace that cannot be read or pushed is a result
// with its error, and the others go on: one bad file in a list never costs the valid ones.
std::vector<IngestResult> ingest_files(store::FleetStore& fleet,
                                       const std::vector<std::filesystem::path>& paths,
                                       const Tags& tags, unsigned threads,
                                       const std::function<void(const IngestResult&)>& done = {});

const char* to_string(store::PushOutcome o);  // "added", "replaced", "already ingested"

}  // namespace ktune::fleet

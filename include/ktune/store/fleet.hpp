#pragma once
// The fleet's tables in the store: per-run kernel aggregates pushed by `ktune ingest`, and the
// tuning queue that `ktune worker`s drain. The store keeps rows and runs the SQL; what a sketch
// means, how traces become aggregates and how a job is tuned live in the fleet module above it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ktune/store/store.hpp"

namespace ktune::store {

// One ingested trace. run_id is its content identity (fleet/ingest.hpp says how it is made), so the
// same trace pushed twice, from any path or node, is one run.
struct FleetRun {
  std::string run_id;
  std::string location;  // where the trace was read from (host:path)
  std::string host, started_at;
  std::int64_t pid = 0;
  std::string job, build, rank;  // from --tag; "" when not given
  nlohmann::json tags = nlohmann::json::object();
  bool complete = true;  // the tracer closed the trace (false: cut short)
  std::int64_t launches = 0;
};

// Per (kernel, launch shape, GPU, driver, toolkit) of one run; build and job come from the run.
struct FleetAggregate {
  std::string kernel;       // demangled where the tracer could
  std::string grid, block;  // "x,y,z"
  std::string gpu, arch, driver, toolkit;
  std::int64_t calls = 0, total_ns = 0, min_ns = 0, max_ns = 0;
  std::string sketch;  // fleet::QuantileSketch::to_hex of the launch durations
};

// One GEMM problem of one run (a --gemm-shapes trace): its cache key (op, dtype, shape as
// bench::gemm_cache_* make them), the problem itself, and the calls and GPU time it took.
struct FleetGemm {
  std::string op, dtype;
  nlohmann::json shape = nlohmann::json::array();     // [m, n, k, batch]
  nlohmann::json problem = nlohmann::json::object();  // bench::GemmProblem
  std::string gpu, arch, driver, toolkit;
  std::int64_t calls = 0, gpu_ns = 0;
};

enum class PushOutcome {
  added,            // a new run
  replaced,         // the stored copy was cut short and this one is complete: it replaces it
  already_ingested  // nothing written: the same run is there
};

// Empty fields match everything. since: runs started at or after this ISO-8601 UTC time. gpu:
// a device name or an arch ("sm_90").
struct FleetFilter {
  std::string since, gpu, build, job;
};

// No run count here: COUNT(DISTINCT run_id) made the ranking query four times slower on
// PostgreSQL; runs are counted from the sketch rows of the kernels shown.
struct FleetKernelTotal {
  std::string kernel;
  std::int64_t calls = 0, total_ns = 0, min_ns = 0, max_ns = 0;
};

struct FleetSketchRow {
  std::string kernel, build, run_id, sketch;
};

// One launch shape of a kernel: its GPU time under a filter.
struct FleetLaunchTotal {
  std::string kernel, grid, block;  // "x,y,z"
  std::int64_t calls = 0, total_ns = 0;
};

// A GEMM problem's totals under a filter, over every run and GPU of its arch.
struct FleetGemmTotal {
  std::string op, dtype;
  nlohmann::json shape, problem;
  std::string arch;
  std::int64_t calls = 0, gpu_ns = 0, runs = 0;
};

// A tuning job. The dedup key is (op, dtype, bucket, arch, toolkit): queued once. arch or toolkit
// "" means any worker may take it. A spec job names its T1 file and its shape variables; a library
// job (library "cublaslt") names no spec, and its shape is the GEMM problem (bench::GemmProblem).
struct FleetJob {
  std::string id;  // hash of the dedup key
  std::string spec, library, op, dtype, bucket, arch, toolkit;
  nlohmann::json shape = nlohmann::json::object();  // shape variable -> value, or the problem
  std::int64_t budget = 0;
  double priority = 0;       // higher first (from-backlog: the kernel's fleet time in s)
  std::string state;         // queued | running | done | failed
  std::string worker;        // who holds (or last held) it
  std::int64_t attempt = 0;  // claims so far, less those given back (release); a claim's token
  std::int64_t lease_until_ms = 0, evaluations = 0;
  std::int64_t created_ms = 0, started_ms = 0, finished_ms = 0;
  std::string created_at;
  nlohmann::json result;  // null until done
  std::string error;
};

class FleetStore {
 public:
  explicit FleetStore(Store& store);

  // One transaction: the run, all its aggregates and GEMM problems, or nothing. A run id already
  // stored is skipped unless the stored run is incomplete and this one complete.
  PushOutcome push_run(const FleetRun& run, const std::vector<FleetAggregate>& aggregates,
                       const std::vector<FleetGemm>& gemms = {});
  std::int64_t run_count();

  // Every kernel's totals under the filter, largest total first.
  std::vector<FleetKernelTotal> kernel_totals(const FleetFilter& filter);
  // The sketches of these kernels (all when `kernels` is empty) under the filter.
  std::vector<FleetSketchRow> sketches(const FleetFilter& filter,
                                       const std::vector<std::string>& kernels);

  // The launch shapes of these kernels under the filter, most GPU time first.
  std::vector<FleetLaunchTotal> launch_totals(const FleetFilter& filter,
                                              const std::vector<std::string>& kernels);

  // Every GEMM problem's totals under the filter, most GPU time first.
  std::vector<FleetGemmTotal> gemm_totals(const FleetFilter& filter);

  // --- the tuning queue; times are the caller's clock in ms since the epoch ---
  enum class AddOutcome { added, exists, requeued };
  // exists: a job with the same key is already there; nothing changed. With retry_failed, one that
  // failed is queued again instead (requeued: its attempts, error and worker cleared; its folder's
  // results are resumed), as `ktune queue add` does when asked again for a failed job.
  AddOutcome add_job(const FleetJob& job, bool retry_failed = false);
  std::vector<FleetJob> jobs();
  // Jobs queued or running (whatever their lease): what a draining worker still waits for.
  std::int64_t pending_jobs();
  std::optional<FleetJob> job(const std::string& id);
  // Takes the first queued job, or a running one whose lease ran out, that this worker's arch and
  // toolkit can run; SKIP LOCKED on PostgreSQL, so workers never wait on each other's claims.
  // Jobs already claimed max_attempts times whose lease ran out are marked failed instead. Jobs
  // in `skip` (ones this worker refused: another machine's compiler versions) are left to others.
  std::optional<FleetJob> claim(const std::string& worker, const std::string& arch,
                                const std::string& toolkit, std::int64_t lease_ms,
                                std::int64_t now_ms, int max_attempts,
                                const std::vector<std::string>& skip = {});
  // Renews the lease of claim `attempt`; false when the job was taken by another claim.
  bool heartbeat(const std::string& id, std::int64_t attempt, std::int64_t lease_until_ms,
                 std::int64_t evaluations);
  // Gives claim `attempt` back unfinished (its worker was stopped gracefully): the job is queued
  // again and this claim does not count against max_attempts, so rolling restarts of workers
  // never fail a healthy job. The attempt number a later claim gets is this one again; that is
  // safe as a fencing token because only this claim's holder releases it, and it writes nothing
  // after. false when the job was taken by another claim.
  bool release(const std::string& id, std::int64_t attempt, std::int64_t evaluations);
  // Gives claim `attempt` back after the machine failed it (EnvironmentError: a full disk): the
  // job is queued again with this claim counted against max_attempts and `error` shown, so a
  // brief failure costs one attempt, not the job. false when the job was taken by another claim.
  bool retry(const std::string& id, std::int64_t attempt, std::int64_t evaluations,
             const std::string& error);
  // Ends claim `attempt` as done or failed; false when the job was taken by another claim.
  bool finish(const std::string& id, std::int64_t attempt, bool done, std::int64_t now_ms,
              std::int64_t evaluations, const nlohmann::json& result, const std::string& error);

 private:
  Store& store_;
};

}  // namespace ktune::store
